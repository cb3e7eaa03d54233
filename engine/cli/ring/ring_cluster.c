/* cluster.json -> sl_ring_cluster: every number checked (finite, in range),
 * unknown keys rejected (a typo must not silently become a default), and
 * every weight type of the model needs a matvec rate on the devices that run it
 * (f32, norms and biases, goes at memory bandwidth: ring_cost.c). */
#include "ring_plan.h"
#include "ring_json.h"
#include "../../../gguf/gguf_type.h"
#include "../../../gguf/base/sl_file.h"
#include "../../../gguf/base/sl_internal.h"
#include "../../../gguf/base/sl_status.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BYTES 1e15          /* 1 PB: anything larger is a typo or an attack */
#define MIN_RATE  1e3           /* bytes/s */
#define MAX_RATE  1e14

typedef struct ctx {
    const sl_json *j;
    const char *what;
} ctx;

static int bad(const ctx *x, const char *where, const char *msg)
{
    return sl_err_set(SL_EFORMAT, "%s: %s: %s", x->what, where, msg);
}

static int num(const ctx *x, int node, const char *where, double lo, double hi, double *out)
{
    if (node < 0 || x->j->nodes[node].kind != SL_JSON_NUM) return bad(x, where, "expected a number");
    double v = x->j->nodes[node].num;
    if (!isfinite(v) || v < lo || v > hi) {
        char m[96];
        snprintf(m, sizeof m, "%g is outside %g..%g", v, lo, hi);
        return bad(x, where, m);
    }
    *out = v;
    return 0;
}

static int type_id(const char *name)
{
    for (uint32_t t = 0; t < SL_RING_NTYPE; t++) {
        const char *n = sl_gguf_type_name(t);
        if (n && !strcmp(n, name)) return (int)t;
    }
    return -1;
}

/* {"q4_K": number, ...} into tab[type]. */
static int type_map(const ctx *x, int node, const char *where, double lo, double hi, double *tab)
{
    if (x->j->nodes[node].kind != SL_JSON_OBJ) return bad(x, where, "expected an object of {\"type\": number}");
    for (int c = x->j->nodes[node].first; c >= 0; c = x->j->nodes[c].next) {
        char w[160];
        snprintf(w, sizeof w, "%s.%s", where, sl_json_key(x->j, c));
        int t = type_id(sl_json_key(x->j, c));
        if (t < 0) return bad(x, w, "unknown ggml type name");
        int rc = num(x, c, w, lo, hi, &tab[t]);
        if (rc) return rc;
    }
    return 0;
}

/* A number in lo..hi as an int (a whole one when `whole`; else truncated).
 * *out is left alone on failure: the refused value may not fit an int. */
static int int_num(const ctx *x, int node, const char *where, double lo, double hi, bool whole, int *out)
{
    double v;
    int rc = num(x, node, where, lo, hi, &v);
    if (rc) return rc;
    if (whole && v != floor(v)) return bad(x, where, "not an integer");
    *out = (int)v;
    return 0;
}

static int name(const ctx *x, int node, const char *where, char *out)
{
    const char *s = sl_json_str(x->j, node);
    if (!s) return bad(x, where, "expected a string");
    if (strlen(s) >= SL_RING_NAME) return bad(x, where, "longer than 63 bytes");
    strcpy(out, s);
    return 0;
}

static int parse_model(const ctx *x, int node, sl_ring_model *m)
{
    if (node < 0 || x->j->nodes[node].kind != SL_JSON_OBJ) return bad(x, "model", "expected an object");
    int rc = 0;
    m->n_ctx = 4096;
    m->ctx = -1;
    for (int c = x->j->nodes[node].first; c >= 0 && !rc; c = x->j->nodes[c].next) {
        const char *k = sl_json_key(x->j, c);
        char w[96];
        snprintf(w, sizeof w, "model.%s", k);
        if (!strcmp(k, "name")) rc = name(x, c, w, m->name);
        else if (!strcmp(k, "n_layers")) rc = int_num(x, c, w, 1, SL_RING_MAX_LAYERS, true, &m->n_layers);
        else if (!strcmp(k, "n_embd")) rc = int_num(x, c, w, 1, 1 << 20, true, &m->n_embd);
        else if (!strcmp(k, "n_ctx")) rc = int_num(x, c, w, 1, 1 << 24, false, &m->n_ctx);
        else if (!strcmp(k, "ctx")) rc = int_num(x, c, w, 0, 1 << 24, false, &m->ctx);
        else if (!strcmp(k, "layer_bytes")) rc = type_map(x, c, w, 0, MAX_BYTES, m->layer_bytes);
        else if (!strcmp(k, "head_bytes")) rc = type_map(x, c, w, 0, MAX_BYTES, m->head_bytes);
        else if (!strcmp(k, "kv_bytes_per_token_layer")) rc = num(x, c, w, 0, 1 << 30, &m->kv_bytes_per_token_layer);
        else if (k[0] != '_') rc = bad(x, w, "unknown key");   /* "_comment": notes for people */
    }
    if (rc) return rc;
    if (!m->n_layers) return bad(x, "model", "n_layers is missing");
    if (!m->n_embd) return bad(x, "model", "n_embd is missing");
    if (m->ctx < 0) m->ctx = m->n_ctx / 2;
    if (m->ctx > m->n_ctx) return bad(x, "model.ctx", "larger than n_ctx");
    double lb = 0;
    for (int t = 0; t < SL_RING_NTYPE; t++) lb += m->layer_bytes[t];
    if (!(lb > 0)) return bad(x, "model.layer_bytes", "a layer has no weights");
    return 0;
}

static int load_text(const char *path, char **out, size_t *len)
{
    int rc = sl_file_read_data(path, "cluster file", SL_JSON_MAX_BYTES, out, len);
    /* a missing file: an I/O error naming the path, as the ring's messages have it */
    return rc == SL_ENOENT ? sl_err_set(SL_EIO, "%s: %s", path, strerror(ENOENT)) : rc;
}

/* A device's numbers from a `sluice profile` JSON at path (only those not set yet). */
static int profile_fill(const char *path, sl_ring_device *d)
{
    char *text;
    size_t len;
    int rc = load_text(path, &text, &len);
    if (rc) return rc;
    sl_json pj;
    rc = sl_json_parse(&pj, text, len, path);
    free(text);
    if (rc) return rc;
    ctx px = { &pj, path };
    int n;
    if (!d->disk_bps && (n = sl_json_get(&pj, 0, "disk_bytes_per_s")) >= 0)
        rc = num(&px, n, "disk_bytes_per_s", MIN_RATE, MAX_RATE, &d->disk_bps);
    if (!rc && !d->mem_bps && (n = sl_json_get(&pj, 0, "mem_bytes_per_s")) >= 0)
        rc = num(&px, n, "mem_bytes_per_s", MIN_RATE, MAX_RATE, &d->mem_bps);
    if (!rc && (n = sl_json_get(&pj, 0, "matvec")) >= 0) {
        double tab[SL_RING_NTYPE] = { 0 };
        rc = type_map(&px, n, "matvec", 0, MAX_RATE, tab);
        for (int t = 0; t < SL_RING_NTYPE && !rc; t++)
            if (!d->matvec_bps[t]) d->matvec_bps[t] = tab[t];
    }
    sl_json_free(&pj);
    if (!rc && !d->disk_bps) rc = sl_err_set(SL_EFORMAT, "%s: disk_bytes_per_s is missing", path);
    if (!rc && !d->mem_bps) rc = sl_err_set(SL_EFORMAT, "%s: mem_bytes_per_s is missing", path);
    return rc;
}

int sl_ring_device_read_profile(sl_ring_device *d, const char *path)
{
    return profile_fill(path, d);
}

static int read_profile(const ctx *x, const char *where, const char *file, const char *base, sl_ring_device *d)
{
    char path[4096];
    if (file[0] == '/' || !base || !base[0]) snprintf(path, sizeof path, "%s", file);
    else snprintf(path, sizeof path, "%s/%s", base, file);
    int rc = profile_fill(path, d);
    if (rc) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", sl_last_error());   /* not formatted into itself */
        return sl_err_set(rc, "%s: %s: %s", x->what, where, msg);
    }
    return 0;
}

static int parse_device(const ctx *x, int node, int i, const char *base, sl_ring_device *d, double reserve)
{
    char where[64];
    snprintf(where, sizeof where, "devices[%d]", i);
    if (x->j->nodes[node].kind != SL_JSON_OBJ) return bad(x, where, "expected an object");
    snprintf(d->name, sizeof d->name, "D%d", i + 1);
    int rc = 0, prof = -1;
    d->budget = -1;
    d->reserve = reserve;   /* the engine's reserve for the model file, unless the device says */
    for (int c = x->j->nodes[node].first; c >= 0 && !rc; c = x->j->nodes[c].next) {
        const char *k = sl_json_key(x->j, c);
        char w[128];
        snprintf(w, sizeof w, "%s.%s", where, k);
        if (!strcmp(k, "name")) rc = name(x, c, w, d->name);
        else if (!strcmp(k, "mem_budget_bytes")) rc = num(x, c, w, 0, MAX_BYTES, &d->budget);
        else if (!strcmp(k, "reserve_bytes")) rc = num(x, c, w, 0, MAX_BYTES, &d->reserve);
        else if (!strcmp(k, "disk_bytes_per_s")) rc = num(x, c, w, MIN_RATE, MAX_RATE, &d->disk_bps);
        else if (!strcmp(k, "mem_bytes_per_s")) rc = num(x, c, w, MIN_RATE, MAX_RATE, &d->mem_bps);
        else if (!strcmp(k, "matvec")) rc = type_map(x, c, w, 0, MAX_RATE, d->matvec_bps);
        else if (!strcmp(k, "profile")) { prof = c; if (!sl_json_str(x->j, c)) rc = bad(x, w, "expected a file name"); }
        else if (k[0] == '_') continue;   /* "_comment", "_source": notes for people */
        else rc = bad(x, w, "unknown key");
    }
    if (!rc && prof >= 0) rc = read_profile(x, where, sl_json_str(x->j, prof), base, d);
    if (rc) return rc;
    if (d->budget < 0) return bad(x, where, "mem_budget_bytes is missing");
    if (!d->disk_bps) return bad(x, where, "disk_bytes_per_s is missing (or give \"profile\")");
    if (!d->mem_bps) return bad(x, where, "mem_bytes_per_s is missing (or give \"profile\")");
    return 0;
}

int sl_ring_cluster_parse(sl_ring_cluster *c, const char *text, size_t len, const char *what, const char *base_dir,
                          const sl_ring_model *model, double model_reserve)
{
    memset(c, 0, sizeof *c);
    if (!what) what = "cluster.json";
    sl_json j;
    int rc = sl_json_parse(&j, text, len, what);
    if (rc) return rc;
    ctx x = { &j, what };
    int devs = -1;
    if (j.nodes[0].kind != SL_JSON_OBJ) rc = bad(&x, "top level", "expected an object");
    for (int n = j.nodes[0].kind == SL_JSON_OBJ ? j.nodes[0].first : -1; n >= 0 && !rc; n = j.nodes[n].next) {
        const char *k = sl_json_key(&j, n);
        if (!strcmp(k, "model")) { if (!model) rc = parse_model(&x, n, &c->model); }
        else if (!strcmp(k, "devices")) devs = n;
        else if (!strcmp(k, "link")) {
            if (j.nodes[n].kind != SL_JSON_OBJ) { rc = bad(&x, "link", "expected an object"); break; }
            for (int l = j.nodes[n].first; l >= 0 && !rc; l = j.nodes[l].next) {
                const char *lk = sl_json_key(&j, l);
                char w[96];
                snprintf(w, sizeof w, "link.%s", lk);
                if (!strcmp(lk, "latency_s")) rc = num(&x, l, w, 0, 10, &c->link_latency_s);
                else if (!strcmp(lk, "bytes_per_s")) rc = num(&x, l, w, MIN_RATE, MAX_RATE, &c->link_bps);
                else if (lk[0] != '_') rc = bad(&x, w, "unknown key");
            }
        } else if (k[0] != '_') rc = bad(&x, k, "unknown key");
    }
    if (model) c->model = *model;
    if (!rc && !c->model.n_layers) rc = bad(&x, "model", "missing (or give the model file)");
    if (!rc && devs < 0) rc = bad(&x, "devices", "missing");
    if (!rc && j.nodes[devs].kind != SL_JSON_ARR) rc = bad(&x, "devices", "expected an array");
    if (!rc && (j.nodes[devs].n < 1 || j.nodes[devs].n > SL_RING_MAX_DEV)) rc = bad(&x, "devices", "1..64 devices");
    if (!rc && j.nodes[devs].n > c->model.n_layers) rc = bad(&x, "devices", "more devices than layers");
    int i = 0;
    for (int d = rc ? -1 : j.nodes[devs].first; d >= 0 && !rc; d = j.nodes[d].next, i++)
        rc = parse_device(&x, d, i, base_dir, &c->dev[i], model_reserve);
    if (!rc) c->n_dev = i;
    if (!rc && c->n_dev > 1 && !c->link_bps) rc = bad(&x, "link", "bytes_per_s is needed for more than one device");
    int m_bad, t_bad;
    if (!rc && sl_ring_cluster_missing_rate(c, &m_bad, &t_bad)) {
        char w[128];
        snprintf(w, sizeof w, "devices[%d] (%s).matvec", m_bad, c->dev[m_bad].name);
        char msg[96];
        snprintf(msg, sizeof msg, "no rate for %s, which the model uses", sl_gguf_type_name((uint32_t)t_bad));
        rc = bad(&x, w, msg);
    }
    sl_json_free(&j);
    if (rc) memset(c, 0, sizeof *c);
    return rc;
}

/* Every type the model uses must have a matvec rate on the devices that run it
 * (device 0 also runs the head); f32 goes at memory bandwidth. */
bool sl_ring_cluster_missing_rate(const sl_ring_cluster *c, int *dev, int *type)
{
    for (int m = 0; m < c->n_dev; m++)
        for (int t = 0; t < SL_RING_NTYPE; t++) {
            bool need = t != SL_GGML_F32 && (c->model.layer_bytes[t] > 0 || (m == 0 && c->model.head_bytes[t] > 0));
            if (need && !(c->dev[m].matvec_bps[t] >= MIN_RATE)) {
                *dev = m;
                *type = t;
                return true;
            }
        }
    return false;
}

int sl_ring_cluster_load(sl_ring_cluster *c, const char *path, const sl_ring_model *model, double model_reserve)
{
    char *text;
    size_t len;
    int rc = load_text(path, &text, &len);
    if (rc) return rc;
    char base[4096];
    snprintf(base, sizeof base, "%s", path);
    char *slash = strrchr(base, '/');
    if (slash) *slash = 0; else strcpy(base, ".");
    rc = sl_ring_cluster_parse(c, text, len, path, base, model, model_reserve);
    free(text);
    return rc;
}

/* JSON text: "name": "..." with the characters JSON needs escaped. */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

static void put_types(FILE *f, const double *tab)
{
    int first = 1;
    fputc('{', f);
    for (int t = 0; t < SL_RING_NTYPE; t++)
        if (tab[t] > 0) {
            fprintf(f, "%s\"%s\": %.17g", first ? "" : ", ", sl_gguf_type_name((uint32_t)t), tab[t]);
            first = 0;
        }
    fputc('}', f);
}

int sl_ring_cluster_write(FILE *f, const sl_ring_cluster *c, const char *source)
{
    fprintf(f, "{\n  \"_source\": ");
    put_str(f, source ? source : "sluice");
    if (c->model.n_layers) {
        const sl_ring_model *m = &c->model;
        fprintf(f, ",\n  \"model\": {\"name\": ");
        put_str(f, m->name);
        fprintf(f, ", \"n_layers\": %d, \"n_embd\": %d, \"n_ctx\": %d, \"ctx\": %d,\n    \"layer_bytes\": ",
                m->n_layers, m->n_embd, m->n_ctx, m->ctx);
        put_types(f, m->layer_bytes);
        fprintf(f, ", \"head_bytes\": ");
        put_types(f, m->head_bytes);
        fprintf(f, ", \"kv_bytes_per_token_layer\": %.17g}", m->kv_bytes_per_token_layer);
    }
    if (c->link_bps > 0)
        fprintf(f, ",\n  \"link\": {\"latency_s\": %.17g, \"bytes_per_s\": %.17g}", c->link_latency_s, c->link_bps);
    fprintf(f, ",\n  \"devices\": [");
    for (int i = 0; i < c->n_dev; i++) {
        const sl_ring_device *d = &c->dev[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        put_str(f, d->name);
        fprintf(f, ", \"mem_budget_bytes\": %.17g,", d->budget);
        if (d->reserve > 0) fprintf(f, " \"reserve_bytes\": %.17g,", d->reserve);   /* else the model's */
        fprintf(f, "\n     \"disk_bytes_per_s\": %.17g, \"mem_bytes_per_s\": %.17g, \"matvec\": ", d->disk_bps, d->mem_bps);
        put_types(f, d->matvec_bps);
        fputc('}', f);
    }
    fprintf(f, "\n  ]\n}\n");
    return ferror(f) ? sl_err_set(SL_EIO, "cluster.json: write error") : 0;
}
