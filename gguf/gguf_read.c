/* GGUF v2/v3 parser: header, metadata, tensor infos, data-section layout.
 *
 * Bytes come through the caller's pread-style callback into a 64 KiB window;
 * the file is never mapped or read whole. Every number from the file is
 * checked against what the rest of the file can hold before it sizes an
 * allocation, so a hostile count costs at most a few times the file size. */
#include "gguf_internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WINDOW (64u * 1024)

typedef struct {
    sl_gguf *g;
    uint8_t *buf;
    uint64_t boff;          /* file offset of buf[0] */
    size_t blen;            /* valid bytes in buf */
    uint64_t pos;           /* next byte to parse */
    char what[320];         /* item being parsed: "kv #3 'general.name'" */
    uint64_t path[SL_GGUF_MAX_ARRAY_DEPTH];   /* element indices inside arrays */
    int depth;
} parser;

#define U64(x) ((unsigned long long)(x))

__attribute__((format(printf, 3, 4)))
static int fail(parser *p, int st, const char *fmt, ...)
{
    char detail[384], where[96] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    size_t w = 0;
    for (int i = 0; i < p->depth && w < sizeof where; i++)
        w += (size_t)snprintf(where + w, sizeof where - w, "[%llu]", U64(p->path[i]));
    return sl_err_set(st, "%s: %s%s%s%s", p->g->name, p->what, where, p->what[0] ? ": " : "",
                      detail);
}

static uint64_t remaining(const parser *p) { return p->g->file_size - p->pos; }

/* Raw read through the callback, looping over short reads. */
static int cb_read(parser *p, void *dst, uint64_t n, uint64_t off)
{
    uint8_t *d = dst;
    uint64_t done = 0;
    while (done < n) {
        size_t chunk = n - done > (1u << 30) ? (1u << 30) : (size_t)(n - done);
        int64_t r = p->g->fn(p->g->ctx, d + done, chunk, off + done);
        if (r < 0)
            return sl_err_set(SL_EIO, "%s: read of %llu bytes at offset 0x%llx failed: %s",
                              p->g->name, U64(chunk), U64(off + done), strerror((int)-r));
        if (r == 0 || (uint64_t)r > chunk)
            return sl_err_set(SL_ETRUNC, "%s: file ends at offset 0x%llx, before its stated size %llu",
                              p->g->name, U64(off + done), U64(p->g->file_size));
        done += (uint64_t)r;
    }
    return SL_OK;
}

/* Copy n bytes at p->pos (caller checked n <= remaining) and advance. */
static int take(parser *p, void *dst, uint64_t n)
{
    uint8_t *d = dst;
    if (n > remaining(p))   /* callers check first; this keeps the loop finite regardless */
        return fail(p, SL_ETRUNC, "%llu bytes at offset 0x%llx run past end of file (size %llu)",
                    U64(n), U64(p->pos), U64(p->g->file_size));
    while (n > 0) {
        if (p->pos >= p->boff && p->pos < p->boff + p->blen) {
            uint64_t in = p->boff + p->blen - p->pos;
            uint64_t k = n < in ? n : in;
            memcpy(d, p->buf + (p->pos - p->boff), k);
            d += k; n -= k; p->pos += k;
        } else if (n >= WINDOW) {
            int st = cb_read(p, d, n, p->pos);
            if (st) return st;
            p->pos += n;
            return SL_OK;
        } else {
            uint64_t r = remaining(p);
            size_t len = r < WINDOW ? (size_t)r : WINDOW;
            p->blen = 0;
            int st = cb_read(p, p->buf, len, p->pos);
            if (st) return st;
            p->boff = p->pos;
            p->blen = len;
        }
    }
    return SL_OK;
}

static int need(parser *p, uint64_t n, const char *field)
{
    if (n <= remaining(p)) return SL_OK;
    return fail(p, SL_ETRUNC, "%s at offset 0x%llx needs %llu bytes, file has %llu left (size %llu)",
                field, U64(p->pos), U64(n), U64(remaining(p)), U64(p->g->file_size));
}

static uint64_t le(const uint8_t *b, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | b[i];
    return v;
}

static int rd_u32(parser *p, uint32_t *v, const char *field)
{
    uint8_t b[4];
    int st = need(p, 4, field);
    if (!st) st = take(p, b, 4);
    if (!st) *v = (uint32_t)le(b, 4);
    return st;
}

static int rd_u64(parser *p, uint64_t *v, const char *field)
{
    uint8_t b[8];
    int st = need(p, 8, field);
    if (!st) st = take(p, b, 8);
    if (!st) *v = le(b, 8);
    return st;
}

/* Length-prefixed string into the arena, NUL-terminated. */
static int rd_str(parser *p, uint64_t cap, const char *field, const char **s, uint64_t *len)
{
    uint64_t off = p->pos, n;
    uint8_t b[8];
    if (remaining(p) < 8)
        return fail(p, SL_ETRUNC, "%s length at offset 0x%llx needs 8 bytes, file has %llu left "
                    "(size %llu)", field, U64(off), U64(remaining(p)), U64(p->g->file_size));
    int st = take(p, b, 8);
    if (st) return st;
    n = le(b, 8);
    if (n > remaining(p))
        return fail(p, SL_ETRUNC, "%s length %llu at offset 0x%llx exceeds remaining file (%llu bytes)",
                    field, U64(n), U64(off), U64(remaining(p)));
    if (n > cap)
        return fail(p, SL_EFORMAT, "%s length %llu at offset 0x%llx exceeds the limit of %llu",
                    field, U64(n), U64(off), U64(cap));
    char *buf = sl_arena_alloc(&p->g->arena, (size_t)n + 1, 1);
    if (!buf) return fail(p, SL_ENOMEM, "out of memory for a %llu-byte %s", U64(n), field);
    if ((st = take(p, buf, n))) return st;
    buf[n] = '\0';
    *s = buf;
    *len = n;
    return SL_OK;
}

static void store_scalar(uint32_t type, const uint8_t *b, sl_gguf_value *v)
{
    switch (type) {
    case SL_GGUF_U8: case SL_GGUF_U16: case SL_GGUF_U32: case SL_GGUF_U64:
        v->v.u = le(b, (int)sl_gguf_vtype_size(type)); break;
    case SL_GGUF_BOOL: v->v.u = b[0] != 0; break;
    case SL_GGUF_I8: v->v.i = (int8_t)b[0]; break;
    case SL_GGUF_I16: v->v.i = (int16_t)(uint16_t)le(b, 2); break;
    case SL_GGUF_I32: v->v.i = (int32_t)(uint32_t)le(b, 4); break;
    case SL_GGUF_I64: v->v.i = (int64_t)le(b, 8); break;
    case SL_GGUF_F32: { uint32_t u = (uint32_t)le(b, 4); float f; memcpy(&f, &u, 4); v->v.f = f; break; }
    case SL_GGUF_F64: { uint64_t u = le(b, 8); memcpy(&v->v.f, &u, 8); break; }
    default: break;
    }
}

static int parse_value(parser *p, uint32_t type, sl_gguf_value *out, int depth);

static int parse_array(parser *p, sl_gguf_value *out, int depth)
{
    uint64_t off = p->pos, n;
    uint32_t et;
    int st;
    if (depth >= SL_GGUF_MAX_ARRAY_DEPTH)
        return fail(p, SL_EFORMAT, "array at offset 0x%llx nested deeper than %d levels",
                    U64(off), SL_GGUF_MAX_ARRAY_DEPTH);
    if ((st = rd_u32(p, &et, "array element type"))) return st;
    if (!sl_gguf_vtype_name(et))
        return fail(p, SL_EFORMAT, "array element type %u at offset 0x%llx is not a GGUF value type",
                    et, U64(off));
    if ((st = rd_u64(p, &n, "array length"))) return st;
    size_t esz = sl_gguf_vtype_size(et);
    uint64_t min = esz ? esz : et == SL_GGUF_STRING ? 8 : 12;   /* smallest element on disk */
    if (n > SL_GGUF_MAX_ARRAY_LEN)
        return fail(p, SL_EFORMAT, "array length %llu at offset 0x%llx exceeds the limit of %llu",
                    U64(n), U64(off + 4), U64(SL_GGUF_MAX_ARRAY_LEN));
    if (n > remaining(p) / min)
        return fail(p, SL_ETRUNC, "array of %llu %s at offset 0x%llx needs at least %llu bytes, "
                    "file has %llu left", U64(n), sl_gguf_vtype_name(et), U64(off), U64(n * min),
                    U64(remaining(p)));
    out->arr_type = et;
    out->n = n;
    out->v.data = NULL;
    if (n == 0) return SL_OK;
    if (esz) {
        uint8_t *d = sl_arena_alloc(&p->g->arena, (size_t)(n * esz), 8);
        if (!d) return fail(p, SL_ENOMEM, "out of memory for an array of %llu elements", U64(n));
        if ((st = take(p, d, n * esz))) return st;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        for (uint64_t i = 0; esz > 1 && i < n; i++)
            for (size_t a = 0, b = esz - 1; a < b; a++, b--) {
                uint8_t t = d[i * esz + a]; d[i * esz + a] = d[i * esz + b]; d[i * esz + b] = t;
            }
#endif
        out->v.data = d;
        return SL_OK;
    }
    sl_gguf_value *el = sl_arena_alloc(&p->g->arena, (size_t)n * sizeof *el, 8);
    if (!el) return fail(p, SL_ENOMEM, "out of memory for an array of %llu elements", U64(n));
    memset(el, 0, (size_t)n * sizeof *el);
    out->v.elems = el;
    p->depth = depth + 1;
    for (uint64_t i = 0; i < n; i++) {
        p->path[depth] = i;
        if ((st = parse_value(p, et, &el[i], depth + 1))) return st;
    }
    p->depth = depth;
    return SL_OK;
}

static int parse_value(parser *p, uint32_t type, sl_gguf_value *out, int depth)
{
    out->type = type;
    size_t sz = sl_gguf_vtype_size(type);
    int st;
    if (sz) {
        uint8_t b[8];
        if ((st = need(p, sz, sl_gguf_vtype_name(type))) || (st = take(p, b, sz))) return st;
        store_scalar(type, b, out);
        return SL_OK;
    }
    if (type == SL_GGUF_STRING) {
        const char *s;
        if ((st = rd_str(p, SL_GGUF_MAX_STRING, "string", &s, &out->n))) return st;
        out->v.s = s;
        return SL_OK;
    }
    if (type == SL_GGUF_ARRAY) return parse_array(p, out, depth);
    return fail(p, SL_EFORMAT, "value type %u at offset 0x%llx is not a GGUF value type",
                type, U64(p->pos - 4));
}

static int grow(void **arr, int64_t *cap, int64_t need_n, size_t elem)
{
    if (need_n <= *cap) return SL_OK;
    int64_t nc = *cap ? *cap * 2 : 64;
    while (nc < need_n) nc *= 2;
    void *na = realloc(*arr, (size_t)nc * elem);
    if (!na) return SL_ENOMEM;
    *arr = na;
    *cap = nc;
    return SL_OK;
}

/* The header's lists of named entries (kvs, tensor infos): the array they are
 * read into, its count and name index, and the reader of one entry. */
typedef struct entries {
    void **arr; size_t elem; int64_t *n; sl_gguf_index *index;
    const char *what;        /* "kv": p->what is "kv #3" until one() names the entry */
    /* reads entry i into e (zeroed) and gives its name for the index */
    int (*one)(parser *p, void *e, uint64_t i, const char **name, uint64_t *len);
} entries;

static int parse_entries(parser *p, uint64_t n, const entries *E)
{
    int64_t cap = 0;
    for (uint64_t i = 0; i < n; i++) {
        snprintf(p->what, sizeof p->what, "%s #%llu", E->what, U64(i));
        int st = grow(E->arr, &cap, (int64_t)i + 1, E->elem);
        if (st) return fail(p, st, "out of memory");
        void *e = memset((char *)*E->arr + i * E->elem, 0, E->elem);
        const char *name;
        uint64_t len;
        if ((st = E->one(p, e, i, &name, &len))) return st;
        *E->n = (int64_t)i + 1;
        if ((st = sl_gguf_index_add(E->index, sl_gguf_hash(name, len), i))) return fail(p, st, "out of memory");
    }
    p->what[0] = '\0';
    return SL_OK;
}

/* A key or tensor name (field): at most cap bytes, not empty, no NUL inside. */
static int rd_name(parser *p, uint64_t cap, const char *field, const char **s, uint64_t *len)
{
    uint64_t off = p->pos;
    int st = rd_str(p, cap, field, s, len);
    if (st) return st;
    if (*len == 0) return fail(p, SL_EFORMAT, "empty %s at offset 0x%llx", field, U64(off));
    if (strlen(*s) != *len)
        return fail(p, SL_EFORMAT, "%s at offset 0x%llx contains a NUL byte", field, U64(off));
    return SL_OK;
}

static int parse_kv(parser *p, void *e, uint64_t i, const char **name, uint64_t *len)
{
    sl_gguf_kv *kv = e;
    kv->offset = p->pos;
    int st = rd_name(p, SL_GGUF_MAX_KEY, "key", &kv->key, &kv->key_len);
    if (st) return st;
    snprintf(p->what, sizeof p->what, "kv #%llu '%.200s'", U64(i), kv->key);
    if (sl_gguf_kv_lookup(p->g, kv->key, kv->key_len) >= 0)
        return fail(p, SL_EFORMAT, "duplicate key at offset 0x%llx", U64(kv->offset));
    uint32_t type;
    uint64_t toff = p->pos;
    if ((st = rd_u32(p, &type, "value type"))) return st;
    if (!sl_gguf_vtype_name(type))
        return fail(p, SL_EFORMAT, "value type %u at offset 0x%llx is not a GGUF value type",
                    type, U64(toff));
    p->depth = 0;
    if ((st = parse_value(p, type, &kv->val, 0))) return st;
    p->depth = 0;
    *name = kv->key; *len = kv->key_len;
    return SL_OK;
}

static int parse_kvs(parser *p, uint64_t n_kv)
{
    sl_gguf *g = p->g;
    const entries kvs = { (void **)&g->kvs, sizeof *g->kvs, &g->n_kv, &g->kv_index, "kv", parse_kv };
    return parse_entries(p, n_kv, &kvs);
}

static int parse_alignment(parser *p)
{
    sl_gguf *g = p->g;
    g->alignment = SL_GGUF_DEFAULT_ALIGNMENT;
    int64_t i = sl_gguf_kv_lookup(g, "general.alignment", 17);
    if (i < 0) return SL_OK;
    const sl_gguf_kv *kv = &g->kvs[i];
    uint64_t a;
    switch (kv->val.type) {
    case SL_GGUF_U8: case SL_GGUF_U16: case SL_GGUF_U32: case SL_GGUF_U64: a = kv->val.v.u; break;
    case SL_GGUF_I8: case SL_GGUF_I16: case SL_GGUF_I32: case SL_GGUF_I64:
        a = kv->val.v.i < 0 ? 0 : (uint64_t)kv->val.v.i; break;
    default:
        snprintf(p->what, sizeof p->what, "kv #%lld 'general.alignment'", (long long)i);
        return fail(p, SL_EFORMAT, "at offset 0x%llx has type %s, expected an integer",
                    U64(kv->offset), sl_gguf_vtype_name(kv->val.type));
    }
    if (a == 0 || (a & (a - 1)) || a > (1u << 30)) {
        snprintf(p->what, sizeof p->what, "kv #%lld 'general.alignment'", (long long)i);
        return fail(p, SL_EFORMAT, "at offset 0x%llx: alignment %llu is not a power of two in 1..2^30",
                    U64(kv->offset), U64(a));
    }
    if (a < SL_GGUF_MIN_ALIGNMENT) {
        snprintf(p->what, sizeof p->what, "kv #%lld 'general.alignment'", (long long)i);
        return fail(p, SL_EFORMAT, "at offset 0x%llx: alignment %llu is below %u, the least the kernels load "
                    "tensor data with", U64(kv->offset), U64(a), SL_GGUF_MIN_ALIGNMENT);
    }
    g->alignment = a;
    return SL_OK;
}

/* "blk.N." -> N; -1 for names outside layers; -2 if N is too large. */
static int32_t layer_of(const char *name)
{
    if (strncmp(name, "blk.", 4)) return -1;
    const char *c = name + 4;
    int64_t n = 0;
    int digits = 0;
    while (*c >= '0' && *c <= '9') {
        n = n * 10 + (*c++ - '0');
        if (++digits > 9) return -2;
    }
    if (!digits || *c != '.') return -1;
    return n < SL_GGUF_MAX_LAYERS ? (int32_t)n : -2;
}

static int parse_tensor_info(parser *p, void *e, uint64_t i, const char **name, uint64_t *len)
{
    (void)i;
    sl_gguf_tensor *t = e;
    uint64_t noff = p->pos, nlen;
    int st = rd_name(p, SL_GGUF_MAX_NAME, "name", &t->name, &nlen);
    if (st) return st;
    snprintf(p->what, sizeof p->what, "tensor '%s'", t->name);
    if (sl_gguf_tensor_lookup(p->g, t->name, nlen) >= 0)
        return fail(p, SL_EFORMAT, "duplicate tensor name at offset 0x%llx", U64(noff));
    uint64_t off = p->pos;
    if ((st = rd_u32(p, &t->n_dims, "n_dims"))) return st;
    if (t->n_dims < 1 || t->n_dims > SL_GGUF_MAX_DIMS)
        return fail(p, SL_EFORMAT, "n_dims %u at offset 0x%llx not in 1..%d", t->n_dims,
                    U64(off), SL_GGUF_MAX_DIMS);
    for (uint32_t d = 0; d < SL_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        off = p->pos;
        if ((st = rd_u64(p, &t->ne[d], "dimension"))) return st;
        if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX)
            return fail(p, SL_EFORMAT, "ne[%u] = %llu at offset 0x%llx is out of range", d,
                        U64(t->ne[d]), U64(off));
    }
    off = p->pos;
    if ((st = rd_u32(p, &t->type, "type"))) return st;
    if (!sl_gguf_type_name(t->type))
        return fail(p, SL_EUNSUPPORTED, "type %u at offset 0x%llx is not a known ggml type",
                    t->type, U64(off));
    if ((st = rd_u64(p, &t->offset, "offset"))) return st;
    if ((st = sl_gguf_tensor_size(t->type, t->n_dims, t->ne, &t->nbytes))) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", sl_last_error());
        return fail(p, st, "shape at offset 0x%llx: %s", U64(noff), msg);
    }
    t->layer = layer_of(t->name);
    if (t->layer == -2)
        return fail(p, SL_EFORMAT, "layer index at offset 0x%llx is %d or more",
                    U64(noff), SL_GGUF_MAX_LAYERS);
    *name = t->name; *len = nlen;
    return SL_OK;
}

static int parse_tensor_infos(parser *p, uint64_t n_tensors)
{
    sl_gguf *g = p->g;
    const entries tensors = { (void **)&g->tensors, sizeof *g->tensors, &g->n_tensors, &g->t_index, "tensor",
                              parse_tensor_info };
    return parse_entries(p, n_tensors, &tensors);
}

static int cmp_by_offset(const void *a, const void *b, void *ctx)
{
    const sl_gguf_tensor *t = ctx;
    uint64_t x = t[*(const int64_t *)a].offset, y = t[*(const int64_t *)b].offset;
    return x < y ? -1 : x > y;
}

/* Data ranges: aligned, inside the file, not overlapping; then the extents. */
static int check_layout(parser *p)
{
    sl_gguf *g = p->g;
    if (g->n_tensors == 0) return SL_OK;
    if (g->data_offset > g->file_size)
        return fail(p, SL_ETRUNC, "data section starts at 0x%llx, past end of file (size %llu)",
                    U64(g->data_offset), U64(g->file_size));
    for (int64_t i = 0; i < g->n_tensors; i++) {
        sl_gguf_tensor *t = &g->tensors[i];
        snprintf(p->what, sizeof p->what, "tensor '%s'", t->name);
        if (t->offset % g->alignment)
            return fail(p, SL_EFORMAT, "data offset 0x%llx is not a multiple of the alignment %llu",
                        U64(t->offset), U64(g->alignment));
        uint64_t end;
        if (__builtin_add_overflow(g->data_offset, t->offset, &t->file_offset) ||
            __builtin_add_overflow(t->file_offset, t->nbytes, &end) || end > g->file_size)
            return fail(p, SL_ETRUNC, "data [0x%llx, +%llu) past end of file (size %llu)",
                        U64(g->data_offset + t->offset), U64(t->nbytes), U64(g->file_size));
    }
    int64_t *ord = malloc((size_t)g->n_tensors * sizeof *ord);
    if (!ord) return fail(p, SL_ENOMEM, "out of memory");
    for (int64_t i = 0; i < g->n_tensors; i++) ord[i] = i;
    qsort_r(ord, (size_t)g->n_tensors, sizeof *ord, cmp_by_offset, g->tensors);
    for (int64_t i = 1; i < g->n_tensors; i++) {
        const sl_gguf_tensor *a = &g->tensors[ord[i - 1]], *b = &g->tensors[ord[i]];
        if (a->file_offset + a->nbytes > b->file_offset) {
            snprintf(p->what, sizeof p->what, "tensor '%s'", b->name);
            int st = fail(p, SL_EFORMAT, "data [0x%llx, +%llu) overlaps tensor '%s' [0x%llx, +%llu)",
                          U64(b->file_offset), U64(b->nbytes), a->name, U64(a->file_offset),
                          U64(a->nbytes));
            free(ord);
            return st;
        }
    }
    free(ord);
    p->what[0] = '\0';
    int st = sl_gguf_build_extents(g);
    return st ? fail(p, st, "out of memory") : SL_OK;
}

int sl_gguf_build_extents(sl_gguf *g)
{
    int32_t max_layer = -1;
    for (int64_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].layer > max_layer) max_layer = g->tensors[i].layer;
    g->n_layers = max_layer + 1;
    g->nonlayer = (sl_gguf_extent){ 0 };
    g->total_bytes = 0;
    if (g->n_layers > 0) {
        g->layers = calloc((size_t)g->n_layers, sizeof *g->layers);
        if (!g->layers) return SL_ENOMEM;
    }
    for (int64_t i = 0; i < g->n_tensors; i++) {
        const sl_gguf_tensor *t = &g->tensors[i];
        sl_gguf_extent *e = t->layer >= 0 ? &g->layers[t->layer] : &g->nonlayer;
        uint64_t end = t->file_offset + t->nbytes;
        if (e->n_tensors == 0 || t->file_offset < e->begin) e->begin = t->file_offset;
        if (e->n_tensors == 0 || end > e->end) e->end = end;
        e->bytes += t->nbytes;
        e->n_tensors++;
        g->total_bytes += t->nbytes;
    }
    return SL_OK;
}

static int parse(parser *p)
{
    sl_gguf *g = p->g;
    uint8_t h[24];
    if (g->file_size < 24)
        return fail(p, SL_ETRUNC, "file is %llu bytes, too small for a GGUF header (24 bytes)",
                    U64(g->file_size));
    int st = take(p, h, 24);
    if (st) return st;
    if (memcmp(h, "GGUF", 4)) {
        if (!memcmp(h, "FUGG", 4))
            return fail(p, SL_EFORMAT, "byte-swapped GGUF magic 'FUGG' at offset 0: big-endian "
                        "files are not supported");
        return fail(p, SL_EFORMAT, "not a GGUF file: magic at offset 0 is %02x %02x %02x %02x, "
                    "expected 47 47 55 46 ('GGUF')", h[0], h[1], h[2], h[3]);
    }
    uint32_t ver = (uint32_t)le(h + 4, 4);
    if (ver == 1)
        return fail(p, SL_EVERSION, "GGUF version 1 is not supported (only v2 and v3); "
                    "re-convert the file with a current converter");
    if (ver == 0x02000000u || ver == 0x03000000u)
        return fail(p, SL_EVERSION, "version field at offset 4 is big-endian (v%u): big-endian "
                    "GGUF files are not supported", ver >> 24);
    if (ver != 2 && ver != 3)
        return fail(p, SL_EVERSION, "GGUF version %u at offset 4 is not supported (only v2 and v3)",
                    ver);
    g->version = ver;
    uint64_t n_tensors = le(h + 8, 8), n_kv = le(h + 16, 8);
    /* smallest kv: key length + 1-byte key + type + 1-byte value = 14;
     * smallest tensor info: name length + 1 byte + n_dims + ne + type + offset = 33 */
    if (n_kv > remaining(p) / 14)
        return fail(p, SL_ETRUNC, "n_kv %llu at offset 0x10 cannot fit in the %llu bytes after "
                    "the header", U64(n_kv), U64(remaining(p)));
    if (n_tensors > remaining(p) / 33)
        return fail(p, SL_ETRUNC, "n_tensors %llu at offset 0x8 cannot fit in the %llu bytes after "
                    "the header", U64(n_tensors), U64(remaining(p)));
    if ((st = parse_kvs(p, n_kv))) return st;
    if ((st = parse_alignment(p))) return st;
    if (n_tensors > remaining(p) / 33)
        return fail(p, SL_ETRUNC, "n_tensors %llu (offset 0x8) cannot fit in the %llu bytes after "
                    "the metadata at 0x%llx", U64(n_tensors), U64(remaining(p)), U64(p->pos));
    if ((st = parse_tensor_infos(p, n_tensors))) return st;
    uint64_t a = g->alignment;
    g->data_offset = (p->pos + a - 1) / a * a;   /* pos <= file_size < 2^63: no overflow */
    return check_layout(p);
}

int sl_gguf_open_cb(sl_gguf **out, sl_gguf_read_fn fn, void *ctx, uint64_t file_size,
                    const char *name)
{
    if (!out || !fn) return sl_err_set(SL_EINVAL, "sl_gguf_open_cb: NULL argument");
    *out = NULL;
    if (!name) name = "<gguf>";
    if (file_size > (uint64_t)INT64_MAX)
        return sl_err_set(SL_EINVAL, "%s: file size %llu too large", name, U64(file_size));
    sl_gguf *g = calloc(1, sizeof *g);
    parser p = { .g = g };
    if (!g || !(g->name = strdup(name)) || !(p.buf = malloc(WINDOW))) {
        if (g) free(g->name);
        free(g);
        return sl_err_set(SL_ENOMEM, "%s: out of memory", name);
    }
    g->fn = fn;
    g->ctx = ctx;
    g->fd = -1;
    g->file_size = file_size;
    int st = parse(&p);
    free(p.buf);
    if (st) {
        sl_gguf_close(g);
        return st;
    }
    g->one = (sl_gguf_shard){ .path = g->name, .fd = -1, .file_size = file_size, .data_offset = g->data_offset,
                              .n_tensors = g->n_tensors, .tensor_bytes = g->total_bytes };
    g->shards = &g->one;
    g->n_shards = 1;
    sl_err_clear();
    *out = g;
    return SL_OK;
}

static int64_t fd_read(void *ctx, void *buf, size_t len, uint64_t off)
{
    int fd = (int)(intptr_t)ctx;
    size_t done = 0;
    if (off > (uint64_t)INT64_MAX - len) return -EINVAL;
    while (done < len) {
        ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (r < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (r == 0) break;
        done += (size_t)r;
    }
    return (int64_t)done;
}

int sl_gguf_open_fd(sl_gguf **out, int fd, const char *name)
{
    if (!out) return sl_err_set(SL_EINVAL, "sl_gguf_open_fd: NULL argument");
    *out = NULL;
    if (!name) name = "<fd>";
    struct stat sb;
    if (fstat(fd, &sb) < 0)
        return sl_err_set(-errno, "%s: fstat failed: %s", name, strerror(errno));
    uint64_t size;
    if (S_ISREG(sb.st_mode)) {
        size = (uint64_t)sb.st_size;
    } else if (S_ISBLK(sb.st_mode)) {
        off_t end = lseek(fd, 0, SEEK_END);
        if (end < 0) return sl_err_set(-errno, "%s: cannot size block device: %s", name, strerror(errno));
        size = (uint64_t)end;
    } else {
        return sl_err_set(SL_EINVAL, "%s: not a regular file or block device", name);
    }
    /* opened with O_NONBLOCK so that a FIFO is refused instead of hanging the
     * open; reads must block (io_uring honours O_NONBLOCK even on files) */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
        return sl_err_set(-errno, "%s: fcntl failed: %s", name, strerror(errno));
    int st = sl_gguf_open_cb(out, fd_read, (void *)(intptr_t)fd, size, name);
    if (!st) (*out)->fd = (*out)->one.fd = fd;
    return st;
}

int sl_gguf_open_file(sl_gguf **out, const char *path)
{
    if (!out || !path) return sl_err_set(SL_EINVAL, "sl_gguf_open_path: NULL argument");
    *out = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return sl_err_set(-errno, "%s: cannot open: %s", path, strerror(errno));
    int st = sl_gguf_open_fd(out, fd, path);
    if (st) {
        close(fd);
        return st;
    }
    (*out)->own_fd = 1;
    return SL_OK;
}

void sl_gguf_close(sl_gguf *g)
{
    if (!g) return;
    for (uint32_t i = 1; g->parts && i < g->n_shards; i++) sl_gguf_close(g->parts[i]);
    free(g->parts);
    if (g->shards != &g->one) free(g->shards);
    if (g->own_fd && g->fd >= 0) close(g->fd);
    free(g->name);
    free(g->kvs);
    free(g->kv_index.slot);
    free(g->tensors);
    free(g->t_index.slot);
    free(g->layers);
    sl_arena_free(&g->arena);
    free(g);
}
