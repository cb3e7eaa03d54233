/* Strict JSON (RFC 8259 subset: no surrogate pairs beyond '?') into a flat
 * node array; see ring_json.h for the limits. */
#include "ring_json.h"
#include "../../../gguf/base/sl_internal.h"
#include "../../../gguf/base/sl_status.h"

#include <stdlib.h>
#include <string.h>

typedef struct jp {
    const char *s;
    size_t n, i;
    sl_json *j;
    size_t pool_len, pool_cap;
    int node_cap;
    const char *what;
} jp;

static int jp_err(jp *p, const char *msg)
{
    return sl_err_set(SL_EFORMAT, "%s: json: %s at byte %zu", p->what, msg, p->i);
}

static void ws(jp *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

static int new_node(jp *p, int kind)
{
    if (p->j->n_nodes >= SL_JSON_MAX_NODES) return jp_err(p, "too many values");
    if (p->j->n_nodes == p->node_cap) {
        int cap = p->node_cap ? p->node_cap * 2 : 64;
        sl_json_node *nn = realloc(p->j->nodes, sizeof *nn * (size_t)cap);
        if (!nn) return sl_err_set(SL_ENOMEM, "%s: json: out of memory", p->what);
        p->j->nodes = nn;
        p->node_cap = cap;
    }
    int id = p->j->n_nodes++;
    sl_json_node *x = &p->j->nodes[id];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->key = x->str = x->first = x->next = -1;
    return id;
}

static int pool_put(jp *p, char c)
{
    if (p->pool_len == p->pool_cap) {
        size_t cap = p->pool_cap ? p->pool_cap * 2 : 256;
        char *np = realloc(p->j->pool, cap);
        if (!np) return sl_err_set(SL_ENOMEM, "%s: json: out of memory", p->what);
        p->j->pool = np;
        p->pool_cap = cap;
    }
    p->j->pool[p->pool_len++] = c;
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string at p->i (on the quote); returns its pool offset or a negative status. */
static int parse_string(jp *p)
{
    p->i++;
    int off = (int)p->pool_len;
    for (;;) {
        if (p->i >= p->n) return jp_err(p, "unterminated string");
        unsigned char c = (unsigned char)p->s[p->i++];
        if (c == '"') break;
        if (c < 0x20) return jp_err(p, "control character in string");
        if (c == '\\') {
            if (p->i >= p->n) return jp_err(p, "unterminated escape");
            char e = p->s[p->i++];
            switch (e) {
            case '"': case '\\': case '/': c = (unsigned char)e; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u': {
                if (p->n - p->i < 4) return jp_err(p, "short \\u escape");
                int v = 0;
                for (int k = 0; k < 4; k++) {
                    int h = hexval(p->s[p->i + (size_t)k]);
                    if (h < 0) return jp_err(p, "bad \\u escape");
                    v = v * 16 + h;
                }
                p->i += 4;
                if (v == 0) return jp_err(p, "NUL in string");
                c = v < 0x80 ? (unsigned char)v : '?';   /* names only: non-ASCII escapes are not needed */
                break;
            }
            default: return jp_err(p, "bad escape");
            }
        }
        int rc = pool_put(p, (char)c);
        if (rc) return rc;
    }
    int rc = pool_put(p, 0);
    return rc ? rc : off;
}

static int parse_value(jp *p, int depth);

static int parse_container(jp *p, int depth, int obj)
{
    int id = new_node(p, obj ? SL_JSON_OBJ : SL_JSON_ARR);
    if (id < 0) return id;
    p->i++;
    ws(p);
    char close = obj ? '}' : ']';
    if (p->i < p->n && p->s[p->i] == close) { p->i++; return id; }
    int last = -1;
    for (;;) {
        int key = -1;
        ws(p);
        if (obj) {
            if (p->i >= p->n || p->s[p->i] != '"') return jp_err(p, "expected a member name");
            key = parse_string(p);
            if (key < 0) return key;
            ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') return jp_err(p, "expected ':'");
            p->i++;
        }
        int child = parse_value(p, depth + 1);
        if (child < 0) return child;
        p->j->nodes[child].key = key;
        if (last < 0) p->j->nodes[id].first = child;
        else p->j->nodes[last].next = child;
        last = child;
        p->j->nodes[id].n++;
        ws(p);
        if (p->i >= p->n) return jp_err(p, "unterminated container");
        if (p->s[p->i] == ',') { p->i++; continue; }
        if (p->s[p->i] == close) { p->i++; return id; }
        return jp_err(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int parse_value(jp *p, int depth)
{
    if (depth > SL_JSON_MAX_DEPTH) return jp_err(p, "nested too deeply");
    ws(p);
    if (p->i >= p->n) return jp_err(p, "expected a value");
    char c = p->s[p->i];
    if (c == '{' || c == '[') return parse_container(p, depth, c == '{');
    if (c == '"') {
        int id = new_node(p, SL_JSON_STR);
        if (id < 0) return id;
        int off = parse_string(p);
        if (off < 0) return off;
        p->j->nodes[id].str = off;
        return id;
    }
    static const struct { const char *w; int kind; double v; } lit[] = {
        { "true", SL_JSON_BOOL, 1 }, { "false", SL_JSON_BOOL, 0 }, { "null", SL_JSON_NULL, 0 } };
    for (int k = 0; k < 3; k++) {
        size_t l = strlen(lit[k].w);
        if (p->n - p->i >= l && !memcmp(p->s + p->i, lit[k].w, l)) {
            int id = new_node(p, lit[k].kind);
            if (id < 0) return id;
            p->j->nodes[id].num = lit[k].v;
            p->i += l;
            return id;
        }
    }
    /* number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? checked by hand, converted by strtod */
    size_t st = p->i, i = p->i;
    if (i < p->n && p->s[i] == '-') i++;
    size_t d0 = i;
    while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') i++;
    if (i == d0 || (p->s[d0] == '0' && i - d0 > 1)) return jp_err(p, "bad value");
    if (i < p->n && p->s[i] == '.') {
        size_t f = ++i;
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') i++;
        if (i == f) return jp_err(p, "bad number");
    }
    if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->n && (p->s[i] == '+' || p->s[i] == '-')) i++;
        size_t e = i;
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') i++;
        if (i == e) return jp_err(p, "bad number");
    }
    char buf[64];
    if (i - st >= sizeof buf) return jp_err(p, "number too long");
    memcpy(buf, p->s + st, i - st);
    buf[i - st] = 0;
    int id = new_node(p, SL_JSON_NUM);
    if (id < 0) return id;
    p->j->nodes[id].num = strtod(buf, NULL);
    p->i = i;
    return id;
}

int sl_json_parse(sl_json *j, const char *text, size_t len, const char *what)
{
    memset(j, 0, sizeof *j);
    jp p = { .s = text, .n = len, .j = j, .what = what ? what : "json" };
    if (len > SL_JSON_MAX_BYTES) return sl_err_set(SL_ERANGE, "%s: json: larger than %u bytes", p.what, SL_JSON_MAX_BYTES);
    int root = parse_value(&p, 0);
    if (root >= 0) {
        ws(&p);
        if (p.i != p.n) root = jp_err(&p, "text after the value");
    }
    if (root < 0) { sl_json_free(j); return root; }
    return 0;
}

void sl_json_free(sl_json *j)
{
    free(j->nodes);
    free(j->pool);
    memset(j, 0, sizeof *j);
}

int sl_json_get(const sl_json *j, int obj, const char *key)
{
    if (obj < 0 || obj >= j->n_nodes || j->nodes[obj].kind != SL_JSON_OBJ) return -1;
    for (int c = j->nodes[obj].first; c >= 0; c = j->nodes[c].next)
        if (!strcmp(j->pool + j->nodes[c].key, key)) return c;
    return -1;
}

const char *sl_json_key(const sl_json *j, int node)
{
    return node >= 0 && node < j->n_nodes && j->nodes[node].key >= 0 ? j->pool + j->nodes[node].key : "";
}

const char *sl_json_str(const sl_json *j, int node)
{
    return node >= 0 && node < j->n_nodes && j->nodes[node].kind == SL_JSON_STR ? j->pool + j->nodes[node].str : NULL;
}
