/* Streaming GGUF writer: metadata and tensor infos are collected in memory,
 * then header + infos are written once and tensor data follows in whatever
 * chunks the caller has, padded to the alignment between tensors. Every value
 * it accepts is one the reader accepts (same caps), so its files round-trip. */
#include "gguf.h"
#include "base/sl_internal.h"
#include "base/sl_file.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct { unsigned char *p; size_t len, cap; int oom; } bytes;

typedef struct { char *key; bytes val; } wkv;      /* val = type u32 + encoded value */

typedef struct {
    char *name;
    uint32_t type, n_dims;
    uint64_t ne[SL_GGUF_MAX_DIMS];
    uint64_t nbytes, offset;
} wtensor;

struct sl_gguf_writer {
    FILE *f;                 /* buffered, on a dup of out.fd */
    sl_file_out out;         /* the temporary renamed over path by close */
    char *path;
    unsigned char *fbuf;
    uint32_t version;
    uint64_t alignment;
    wkv *kvs;
    size_t n_kv, cap_kv;
    wtensor *ts;
    size_t n_t, cap_t;
    int began, failed;
    size_t cur;              /* tensor being written */
    uint64_t cur_done;       /* its bytes written so far */
    uint64_t pos;            /* bytes written to the file */
    int skipped;             /* some data skipped (sl_gguf_writer_skip): the file is extended at close */
    char err[512];
};

#define U64(x) ((unsigned long long)(x))

__attribute__((format(printf, 3, 4)))
static int werr(sl_gguf_writer *w, int st, const char *fmt, ...)
{
    char msg[448];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sl_err_set(st, "%s: %s", w->path, msg);
    snprintf(w->err, sizeof w->err, "%s", sl_last_error());
    return st;
}

const char *sl_gguf_writer_errmsg(const sl_gguf_writer *w) { return w ? w->err : sl_last_error(); }

/* ---- encoding ------------------------------------------------------------ */

static void put(bytes *b, const void *src, size_t n)
{
    if (b->oom || n == 0) return;
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap : 64;
        while (nc < b->len + n) {
            if (nc > SIZE_MAX / 2) { b->oom = 1; return; }
            nc *= 2;
        }
        unsigned char *np = realloc(b->p, nc);
        if (!np) { b->oom = 1; return; }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static void put_le(bytes *b, uint64_t v, int n)
{
    unsigned char t[8];
    for (int i = 0; i < n; i++) t[i] = (unsigned char)(v >> (8 * i));
    put(b, t, (size_t)n);
}

static void put_str(bytes *b, const char *s, uint64_t len)
{
    put_le(b, len, 8);
    put(b, s, (size_t)len);
}

/* Host-order packed scalars -> little-endian. */
static void put_packed(bytes *b, const void *data, uint64_t n, size_t esz)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    const unsigned char *p = data;
    for (uint64_t i = 0; i < n; i++)
        for (size_t k = esz; k-- > 0;) put(b, p + i * esz + k, 1);
#else
    put(b, data, (size_t)(n * esz));
#endif
}

static int encode(sl_gguf_writer *w, bytes *b, const char *key, const sl_gguf_value *v, int depth)
{
    size_t sz = sl_gguf_vtype_size(v->type);
    if (sz) {
        uint64_t u = v->v.u;
        if (v->type == SL_GGUF_F32) { float f = (float)v->v.f; uint32_t x; memcpy(&x, &f, 4); u = x; }
        else if (v->type == SL_GGUF_BOOL) u = v->v.u != 0;
        put_le(b, u, (int)sz);   /* signed values: two's complement low bytes */
        return SL_OK;
    }
    if (v->type == SL_GGUF_STRING) {
        if (v->n > SL_GGUF_MAX_STRING)
            return werr(w, SL_ERANGE, "key '%s': string of %llu bytes exceeds the limit", key, U64(v->n));
        if (v->n && !v->v.s) return werr(w, SL_EINVAL, "key '%s': NULL string", key);
        put_str(b, v->v.s, v->n);
        return SL_OK;
    }
    if (v->type != SL_GGUF_ARRAY)
        return werr(w, SL_EINVAL, "key '%s': value type %u is not a GGUF value type", key, v->type);
    if (depth >= SL_GGUF_MAX_ARRAY_DEPTH)
        return werr(w, SL_EINVAL, "key '%s': arrays nested deeper than %d", key, SL_GGUF_MAX_ARRAY_DEPTH);
    if (!sl_gguf_vtype_name(v->arr_type))
        return werr(w, SL_EINVAL, "key '%s': array element type %u unknown", key, v->arr_type);
    if (v->n > SL_GGUF_MAX_ARRAY_LEN)
        return werr(w, SL_ERANGE, "key '%s': array of %llu elements exceeds the limit", key, U64(v->n));
    if (v->n && !v->v.data) return werr(w, SL_EINVAL, "key '%s': NULL array data", key);
    put_le(b, v->arr_type, 4);
    put_le(b, v->n, 8);
    size_t esz = sl_gguf_vtype_size(v->arr_type);
    if (esz) {
        put_packed(b, v->v.data, v->n, esz);
        return SL_OK;
    }
    for (uint64_t i = 0; i < v->n; i++) {
        const sl_gguf_value *e = &v->v.elems[i];
        if (e->type != v->arr_type)
            return werr(w, SL_EINVAL, "key '%s': element %llu is %s in an array of %s", key, U64(i),
                        sl_gguf_vtype_name(e->type) ? sl_gguf_vtype_name(e->type) : "?",
                        sl_gguf_vtype_name(v->arr_type));
        int st = e->type == SL_GGUF_STRING ? encode(w, b, key, e, depth)
                                           : encode(w, b, key, e, depth + 1);
        if (st) return st;
    }
    return SL_OK;
}

/* ---- open, metadata ------------------------------------------------------ */

int sl_gguf_writer_open(sl_gguf_writer **out, const char *path, uint32_t version)
{
    if (!out || !path) return sl_err_set(SL_EINVAL, "sl_gguf_writer_open: NULL argument");
    *out = NULL;
    if (version == 0) version = 3;
    if (version != 2 && version != 3)
        return sl_err_set(SL_EVERSION, "%s: cannot write GGUF version %u (only 2 and 3)", path, version);
    sl_gguf_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path)) || !(w->fbuf = malloc(1u << 20))) {
        if (w) { free(w->path); free(w); }
        return sl_err_set(SL_ENOMEM, "%s: out of memory", path);
    }
    int st = sl_file_out_open(&w->out, path, "gguf");
    if (!st && !(w->f = sl_file_out_stream(&w->out))) st = SL_EIO;
    if (st) {
        sl_file_out_abort(&w->out);
        free(w->fbuf); free(w->path); free(w);
        return st;
    }
    setvbuf(w->f, (char *)w->fbuf, _IOFBF, 1u << 20);
    w->version = version;
    w->alignment = SL_GGUF_DEFAULT_ALIGNMENT;
    *out = w;
    return SL_OK;
}

static int check_open(sl_gguf_writer *w, const char *what)
{
    if (!w) return sl_err_set(SL_EINVAL, "%s: NULL writer", what);
    if (w->failed) return werr(w, SL_EINVAL, "%s after an earlier failure", what);
    if (w->began) return werr(w, SL_EINVAL, "%s after sl_gguf_writer_begin_data", what);
    return SL_OK;
}

static int64_t find_kv(const sl_gguf_writer *w, const char *key)
{
    for (size_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kvs[i].key, key)) return (int64_t)i;
    return -1;
}

static int alignment_of(sl_gguf_writer *w, const sl_gguf_value *v, uint64_t *a)
{
    switch (v->type) {
    case SL_GGUF_U8: case SL_GGUF_U16: case SL_GGUF_U32: case SL_GGUF_U64: *a = v->v.u; break;
    case SL_GGUF_I8: case SL_GGUF_I16: case SL_GGUF_I32: case SL_GGUF_I64:
        *a = v->v.i < 0 ? 0 : (uint64_t)v->v.i; break;
    default: return werr(w, SL_ETYPE, "general.alignment must be an integer");
    }
    if (*a == 0 || (*a & (*a - 1)) || *a > (1u << 30))
        return werr(w, SL_EINVAL, "alignment %llu is not a power of two in 1..2^30", U64(*a));
    if (*a < SL_GGUF_MIN_ALIGNMENT)
        return werr(w, SL_EINVAL, "general.alignment %llu is below %u, the least readers accept",
                    U64(*a), SL_GGUF_MIN_ALIGNMENT);
    return SL_OK;
}

/* Adds key = v, or replaces it when replace is set (general.alignment). */
static int add_kv(sl_gguf_writer *w, const char *key, const sl_gguf_value *v, int replace)
{
    int st = check_open(w, "set metadata");
    if (st) return st;
    if (!key || !v) return werr(w, SL_EINVAL, "NULL key or value");
    size_t klen = strlen(key);
    if (klen == 0 || klen > SL_GGUF_MAX_KEY)
        return werr(w, SL_EINVAL, "key length %zu not in 1..%d", klen, SL_GGUF_MAX_KEY);
    int64_t old = find_kv(w, key);
    if (old >= 0 && !replace) return werr(w, SL_EINVAL, "duplicate key '%s'", key);
    uint64_t align = 0;
    if (!strcmp(key, "general.alignment") && (st = alignment_of(w, v, &align))) return st;
    bytes b = { 0 };
    put_le(&b, v->type, 4);
    if ((st = encode(w, &b, key, v, 0))) { free(b.p); return st; }
    if (b.oom) { free(b.p); return werr(w, SL_ENOMEM, "key '%s': out of memory", key); }
    if (old >= 0) {
        free(w->kvs[old].val.p);
        w->kvs[old].val = b;
    } else {
        if (w->n_kv == w->cap_kv) {
            size_t nc = w->cap_kv ? w->cap_kv * 2 : 32;
            wkv *nk = realloc(w->kvs, nc * sizeof *nk);
            if (!nk) { free(b.p); return werr(w, SL_ENOMEM, "out of memory"); }
            w->kvs = nk;
            w->cap_kv = nc;
        }
        char *k = strdup(key);
        if (!k) { free(b.p); return werr(w, SL_ENOMEM, "out of memory"); }
        w->kvs[w->n_kv].key = k;
        w->kvs[w->n_kv].val = b;
        w->n_kv++;
    }
    if (align) w->alignment = align;
    return SL_OK;
}

int sl_gguf_writer_set_value(sl_gguf_writer *w, const char *key, const sl_gguf_value *v)
{
    return add_kv(w, key, v, 0);
}

int sl_gguf_writer_set_alignment(sl_gguf_writer *w, uint32_t alignment)
{
    sl_gguf_value v = { .type = SL_GGUF_U32, .v.u = alignment };
    return add_kv(w, "general.alignment", &v, 1);
}

int sl_gguf_writer_set_scalar(sl_gguf_writer *w, const char *key, uint32_t vtype, const void *val)
{
    sl_gguf_value v = { .type = vtype };
    if (!val) return add_kv(w, key, NULL, 0);
    switch (vtype) {
    case SL_GGUF_U8: v.v.u = *(const uint8_t *)val; break;
    case SL_GGUF_I8: v.v.i = *(const int8_t *)val; break;
    case SL_GGUF_U16: v.v.u = *(const uint16_t *)val; break;
    case SL_GGUF_I16: v.v.i = *(const int16_t *)val; break;
    case SL_GGUF_U32: v.v.u = *(const uint32_t *)val; break;
    case SL_GGUF_I32: v.v.i = *(const int32_t *)val; break;
    case SL_GGUF_U64: v.v.u = *(const uint64_t *)val; break;
    case SL_GGUF_I64: v.v.i = *(const int64_t *)val; break;
    case SL_GGUF_F32: v.v.f = *(const float *)val; break;
    case SL_GGUF_F64: v.v.f = *(const double *)val; break;
    case SL_GGUF_BOOL: v.v.u = *(const bool *)val; break;
    default:
        if (w && !w->failed) return werr(w, SL_EINVAL, "key '%s': %u is not a scalar type", key, vtype);
        return SL_EINVAL;
    }
    return add_kv(w, key, &v, 0);
}

int sl_gguf_writer_set_u32(sl_gguf_writer *w, const char *key, uint32_t v)
{
    return sl_gguf_writer_set_scalar(w, key, SL_GGUF_U32, &v);
}
int sl_gguf_writer_set_i32(sl_gguf_writer *w, const char *key, int32_t v)
{
    return sl_gguf_writer_set_scalar(w, key, SL_GGUF_I32, &v);
}
int sl_gguf_writer_set_u64(sl_gguf_writer *w, const char *key, uint64_t v)
{
    return sl_gguf_writer_set_scalar(w, key, SL_GGUF_U64, &v);
}
int sl_gguf_writer_set_f32(sl_gguf_writer *w, const char *key, float v)
{
    return sl_gguf_writer_set_scalar(w, key, SL_GGUF_F32, &v);
}
int sl_gguf_writer_set_bool(sl_gguf_writer *w, const char *key, bool v)
{
    return sl_gguf_writer_set_scalar(w, key, SL_GGUF_BOOL, &v);
}

int sl_gguf_writer_set_str(sl_gguf_writer *w, const char *key, const char *s)
{
    sl_gguf_value v = { .type = SL_GGUF_STRING, .n = s ? strlen(s) : 0, .v.s = s ? s : "" };
    return add_kv(w, key, &v, 0);
}

int sl_gguf_writer_set_arr(sl_gguf_writer *w, const char *key, uint32_t elem_type,
                           const void *data, uint64_t n)
{
    if (!sl_gguf_vtype_size(elem_type)) {
        if (w && !w->failed)
            return werr(w, SL_EINVAL, "key '%s': set_arr takes numeric or bool elements, not %u",
                        key ? key : "(null)", elem_type);
        return SL_EINVAL;
    }
    sl_gguf_value v = { .type = SL_GGUF_ARRAY, .arr_type = elem_type, .n = n, .v.data = data };
    return add_kv(w, key, &v, 0);
}

int sl_gguf_writer_set_arr_str(sl_gguf_writer *w, const char *key, const char *const *s, uint64_t n)
{
    if (n > SL_GGUF_MAX_ARRAY_LEN || (n && !s)) {
        if (w && !w->failed) return werr(w, SL_EINVAL, "key '%s': bad string array", key ? key : "(null)");
        return SL_EINVAL;
    }
    sl_gguf_value *el = calloc(n ? (size_t)n : 1, sizeof *el);
    if (!el) return w ? werr(w, SL_ENOMEM, "out of memory") : SL_ENOMEM;
    for (uint64_t i = 0; i < n; i++) {
        el[i].type = SL_GGUF_STRING;
        el[i].v.s = s[i] ? s[i] : "";
        el[i].n = strlen(el[i].v.s);
    }
    sl_gguf_value v = { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_STRING, .n = n, .v.elems = el };
    int st = add_kv(w, key, &v, 0);
    free(el);
    return st;
}

int sl_gguf_writer_copy_kv(sl_gguf_writer *w, const sl_gguf *g, int64_t kv)
{
    const char *key = g ? sl_gguf_kv_key(g, kv) : NULL;
    if (!key) {
        if (w && !w->failed) return werr(w, SL_EINVAL, "copy_kv: no kv #%lld in the reader", (long long)kv);
        return SL_EINVAL;
    }
    /* The source's alignment replaces the default one. */
    return add_kv(w, key, sl_gguf_kv_value(g, kv), !strcmp(key, "general.alignment"));
}

int sl_gguf_writer_add_tensor(sl_gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                              const uint64_t *ne)
{
    int st = check_open(w, "add_tensor");
    if (st) return st;
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len > SL_GGUF_MAX_NAME)
        return werr(w, SL_EINVAL, "tensor name length %zu not in 1..%d", len, SL_GGUF_MAX_NAME);
    for (size_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->ts[i].name, name)) return werr(w, SL_EINVAL, "duplicate tensor '%s'", name);
    uint64_t nbytes;
    if ((st = sl_gguf_tensor_size(type, n_dims, ne, &nbytes))) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", sl_last_error());
        return werr(w, st, "tensor '%s': %s", name, msg);
    }
    if (w->n_t == w->cap_t) {
        size_t nc = w->cap_t ? w->cap_t * 2 : 64;
        wtensor *nt = realloc(w->ts, nc * sizeof *nt);
        if (!nt) return werr(w, SL_ENOMEM, "out of memory");
        w->ts = nt;
        w->cap_t = nc;
    }
    wtensor *t = &w->ts[w->n_t];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name))) return werr(w, SL_ENOMEM, "out of memory");
    t->type = type;
    t->n_dims = n_dims;
    for (uint32_t d = 0; d < SL_GGUF_MAX_DIMS; d++) t->ne[d] = d < n_dims ? ne[d] : 1;
    t->nbytes = nbytes;
    w->n_t++;
    return SL_OK;
}

/* ---- data ---------------------------------------------------------------- */

static int fwrite_all(sl_gguf_writer *w, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, w->f) != n) {
        w->failed = 1;
        return werr(w, SL_EIO, "write of %zu bytes at offset 0x%llx failed: %s", n, U64(w->pos),
                    strerror(errno));
    }
    w->pos += n;
    return SL_OK;
}

static int pad(sl_gguf_writer *w)
{
    static const unsigned char zeros[4096];
    uint64_t n = (w->alignment - w->pos % w->alignment) % w->alignment;
    while (n) {
        size_t k = n > sizeof zeros ? sizeof zeros : (size_t)n;
        int st = fwrite_all(w, zeros, k);
        if (st) return st;
        n -= k;
    }
    return SL_OK;
}

int sl_gguf_writer_begin_data(sl_gguf_writer *w)
{
    int st = check_open(w, "begin_data");
    if (st) return st;
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        off = (off + w->alignment - 1) / w->alignment * w->alignment;
        w->ts[i].offset = off;
        if (__builtin_add_overflow(off, w->ts[i].nbytes, &off) || off > (uint64_t)INT64_MAX)
            return werr(w, SL_ERANGE, "tensor data exceeds 2^63 bytes at '%s'", w->ts[i].name);
    }
    bytes h = { 0 };
    put(&h, "GGUF", 4);
    put_le(&h, w->version, 4);
    put_le(&h, w->n_t, 8);
    put_le(&h, w->n_kv, 8);
    if ((st = fwrite_all(w, h.p, h.len))) { free(h.p); return st; }
    for (size_t i = 0; i < w->n_kv && !st; i++) {
        h.len = 0;
        put_str(&h, w->kvs[i].key, strlen(w->kvs[i].key));
        if (!h.oom) st = fwrite_all(w, h.p, h.len);
        if (!st) st = fwrite_all(w, w->kvs[i].val.p, w->kvs[i].val.len);
    }
    for (size_t i = 0; i < w->n_t && !st; i++) {
        const wtensor *t = &w->ts[i];
        h.len = 0;
        put_str(&h, t->name, strlen(t->name));
        put_le(&h, t->n_dims, 4);
        for (uint32_t d = 0; d < t->n_dims; d++) put_le(&h, t->ne[d], 8);
        put_le(&h, t->type, 4);
        put_le(&h, t->offset, 8);
        if (!h.oom) st = fwrite_all(w, h.p, h.len);
    }
    int oom = h.oom;
    free(h.p);
    if (!st && oom) st = werr(w, SL_ENOMEM, "out of memory");
    if (!st && w->n_t) st = pad(w);
    w->began = 1;
    if (st) w->failed = 1;
    return st;
}

/* Past n bytes without writing them: a hole in the file. */
static int seek_fwd(sl_gguf_writer *w, size_t n)
{
    if (fseeko(w->f, (off_t)n, SEEK_CUR)) {
        w->failed = 1;
        return werr(w, SL_EIO, "seek past %zu bytes at offset 0x%llx failed: %s", n, U64(w->pos), strerror(errno));
    }
    w->pos += n;
    w->skipped = 1;
    return SL_OK;
}

/* Tensor data in order: written from data, or skipped when data is NULL. */
static int advance(sl_gguf_writer *w, const void *data, uint64_t len)
{
    if (w->failed) return werr(w, SL_EINVAL, "write after an earlier failure");
    if (!w->began) return werr(w, SL_EINVAL, "write before sl_gguf_writer_begin_data");
    const unsigned char *p = data;
    while (len > 0) {
        if (w->cur >= w->n_t) {
            w->failed = 1;
            return werr(w, SL_ERANGE, "%llu bytes written past the last tensor", U64(len));
        }
        wtensor *t = &w->ts[w->cur];
        uint64_t k = t->nbytes - w->cur_done;
        if (k > len) k = len;
        for (uint64_t done = 0; done < k;) {
            size_t c = k - done > (1u << 30) ? (1u << 30) : (size_t)(k - done);
            int st = p ? fwrite_all(w, p + done, c) : seek_fwd(w, c);
            if (st) return st;
            done += c;
        }
        if (p) p += k;
        len -= k;
        w->cur_done += k;
        if (w->cur_done == t->nbytes) {
            int st = pad(w);
            if (st) return st;
            w->cur++;
            w->cur_done = 0;
        }
    }
    return SL_OK;
}

int sl_gguf_writer_write(sl_gguf_writer *w, const void *data, uint64_t len)
{
    if (!w) return sl_err_set(SL_EINVAL, "sl_gguf_writer_write: NULL writer");
    if (!data && len) return werr(w, SL_EINVAL, "write of %llu bytes from NULL", U64(len));
    return advance(w, data, len);
}

int sl_gguf_writer_skip(sl_gguf_writer *w, uint64_t len)
{
    if (!w) return sl_err_set(SL_EINVAL, "sl_gguf_writer_skip: NULL writer");
    return advance(w, NULL, len);
}

static void free_writer(sl_gguf_writer *w)
{
    for (size_t i = 0; i < w->n_kv; i++) { free(w->kvs[i].key); free(w->kvs[i].val.p); }
    for (size_t i = 0; i < w->n_t; i++) free(w->ts[i].name);
    free(w->kvs);
    free(w->ts);
    free(w->path);
    free(w->fbuf);
    free(w);
}

int sl_gguf_writer_close(sl_gguf_writer *w)
{
    if (!w) return sl_err_set(SL_EINVAL, "sl_gguf_writer_close: NULL writer");
    int st = SL_OK;
    if (!w->began && !w->failed) st = sl_gguf_writer_begin_data(w);
    if (!st && w->failed) st = werr(w, SL_EINVAL, "close after an earlier failure");
    if (!st && w->cur < w->n_t)
        st = werr(w, SL_ETRUNC, "tensor '%s': only %llu of %llu bytes written (%zu of %zu tensors complete)",
                  w->ts[w->cur].name, U64(w->cur_done), U64(w->ts[w->cur].nbytes), w->cur, w->n_t);
    if (fflush(w->f) && !st) st = werr(w, SL_EIO, "flush failed: %s", strerror(errno));
    /* skipped data at the end: the file still reaches its full size */
    if (!st && w->skipped && ftruncate(fileno(w->f), (off_t)w->pos))
        st = werr(w, SL_EIO, "extending to %llu bytes failed: %s", U64(w->pos), strerror(errno));
    if (fclose(w->f) && !st) st = werr(w, SL_EIO, "close failed: %s", strerror(errno));
    if (st) sl_file_out_abort(&w->out);
    else st = sl_file_out_commit(&w->out);
    free_writer(w);
    return st;
}

void sl_gguf_writer_abort(sl_gguf_writer *w)
{
    if (!w) return;
    fclose(w->f);
    sl_file_out_abort(&w->out);
    free_writer(w);
}
