/* Read-only access to an opened GGUF: metadata getters, value tree, tensor
 * lookup, layer extents. Nothing here mutates the handle, so any number of
 * threads may use one reader at once; messages go to the calling thread. */
#include "gguf_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- arena, hash index ------------------------------------------------ */

/* The fuzz targets build with small chunks: no mmap per parsed file under
 * ASan, and the chaining and large-allocation paths taken more often. */
#ifndef SL_ARENA_CHUNK
#define SL_ARENA_CHUNK (256u * 1024)
#endif
#define ARENA_CHUNK SL_ARENA_CHUNK

void *sl_arena_alloc(sl_arena *a, size_t n, size_t align)
{
    sl_arena_chunk *c = a->head;
    if (n == 0) n = 1;
    if (c) {
        size_t at = (c->used + align - 1) & ~(align - 1);
        if (at <= c->cap && c->cap - at >= n) {
            c->used = at + n;
            return c->mem + at;
        }
    }
    /* Big requests get their own chunk behind the head, so the head keeps filling. */
    size_t cap = n > ARENA_CHUNK / 4 ? n : ARENA_CHUNK;
    if (cap > SIZE_MAX - sizeof *c) return NULL;
    sl_arena_chunk *nc = malloc(sizeof *nc + cap);
    if (!nc) return NULL;
    nc->cap = cap;
    nc->used = n;
    if (cap == n && c) {
        nc->next = c->next;
        c->next = nc;
    } else {
        nc->next = c;
        a->head = nc;
    }
    return nc->mem;   /* chunk memory is 16-aligned */
}

void sl_arena_free(sl_arena *a)
{
    for (sl_arena_chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    a->head = NULL;
}

uint64_t sl_gguf_hash(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;   /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

int sl_gguf_index_add(sl_gguf_index *ix, uint64_t hash, uint64_t idx)
{
    if ((ix->n + 1) * 2 > ix->cap) {
        uint64_t nc = ix->cap ? ix->cap * 2 : 64;
        sl_gguf_slot *ns = calloc((size_t)nc, sizeof *ns);
        if (!ns) return SL_ENOMEM;
        for (uint64_t i = 0; i < ix->cap; i++) {
            if (!ix->slot[i].idx1) continue;
            uint64_t j = ix->slot[i].hash & (nc - 1);
            while (ns[j].idx1) j = (j + 1) & (nc - 1);
            ns[j] = ix->slot[i];
        }
        free(ix->slot);
        ix->slot = ns;
        ix->cap = nc;
    }
    uint64_t j = hash & (ix->cap - 1);
    while (ix->slot[j].idx1) j = (j + 1) & (ix->cap - 1);
    ix->slot[j].hash = hash;
    ix->slot[j].idx1 = idx + 1;
    ix->n++;
    return SL_OK;
}

/* Index of the entry of ix under name whose own name is_name() accepts, or -1
 * (the hash narrows the probe; the name decides). */
static int64_t lookup(const sl_gguf *g, const sl_gguf_index *ix, const char *name, size_t len,
                      bool (*is_name)(const sl_gguf *g, uint64_t i, const char *name, size_t len))
{
    if (!ix->cap) return -1;
    uint64_t h = sl_gguf_hash(name, len);
    for (uint64_t j = h & (ix->cap - 1); ix->slot[j].idx1; j = (j + 1) & (ix->cap - 1))
        if (ix->slot[j].hash == h && is_name(g, ix->slot[j].idx1 - 1, name, len))
            return (int64_t)ix->slot[j].idx1 - 1;
    return -1;
}

static bool kv_is(const sl_gguf *g, uint64_t i, const char *key, size_t len)
{
    return g->kvs[i].key_len == len && !memcmp(g->kvs[i].key, key, len);
}

static bool tensor_is(const sl_gguf *g, uint64_t i, const char *name, size_t len)
{
    return !strncmp(g->tensors[i].name, name, len) && g->tensors[i].name[len] == '\0';
}

int64_t sl_gguf_kv_lookup(const sl_gguf *g, const char *key, size_t len)
{
    return lookup(g, &g->kv_index, key, len, kv_is);
}

int64_t sl_gguf_tensor_lookup(const sl_gguf *g, const char *name, size_t len)
{
    return lookup(g, &g->t_index, name, len, tensor_is);
}

/* ---- header ------------------------------------------------------------ */

const char *sl_gguf_errmsg(const sl_gguf *g) { (void)g; return sl_last_error(); }
uint32_t sl_gguf_version(const sl_gguf *g) { return g->version; }
uint64_t sl_gguf_file_size(const sl_gguf *g) { return g->file_size; }
uint64_t sl_gguf_alignment(const sl_gguf *g) { return g->alignment; }
uint64_t sl_gguf_data_offset(const sl_gguf *g) { return g->data_offset; }
const char *sl_gguf_name(const sl_gguf *g) { return g->name; }

/* ---- metadata ---------------------------------------------------------- */

int64_t sl_gguf_n_kv(const sl_gguf *g) { return g->n_kv; }

const char *sl_gguf_kv_key(const sl_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_kv ? g->kvs[i].key : NULL;
}

uint32_t sl_gguf_kv_type(const sl_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_kv ? g->kvs[i].val.type : UINT32_MAX;
}

int64_t sl_gguf_find_key(const sl_gguf *g, const char *key)
{
    return key ? sl_gguf_kv_lookup(g, key, strlen(key)) : -1;
}

const sl_gguf_value *sl_gguf_kv_value(const sl_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_kv ? &g->kvs[i].val : NULL;
}

static int get(const sl_gguf *g, const char *key, const sl_gguf_value **v)
{
    int64_t i = sl_gguf_find_key(g, key);
    if (i < 0) return sl_err_set(SL_ENOENT, "%s: key '%s' not found", g->name, key ? key : "(null)");
    *v = &g->kvs[i].val;
    return SL_OK;
}

static int type_err(const sl_gguf *g, const char *key, const sl_gguf_value *v, const char *want)
{
    return sl_err_set(SL_ETYPE, "%s: key '%s' is %s, expected %s", g->name, key,
                      sl_gguf_vtype_name(v->type), want);
}

static bool is_unsigned(uint32_t t)
{
    return t == SL_GGUF_U8 || t == SL_GGUF_U16 || t == SL_GGUF_U32 || t == SL_GGUF_U64;
}

static bool is_signed(uint32_t t)
{
    return t == SL_GGUF_I8 || t == SL_GGUF_I16 || t == SL_GGUF_I32 || t == SL_GGUF_I64;
}

/* An integer key's value as u64 (want_signed false) or as the bits of an i64:
 * SL_ERANGE when it does not fit, SL_ETYPE when it is not an integer. */
static int get_int(const sl_gguf *g, const char *key, bool want_signed, uint64_t *bits)
{
    const sl_gguf_value *v = NULL;
    int st = get(g, key, &v);
    if (st) return st;
    bool sgn = is_signed(v->type);
    if (!sgn && !is_unsigned(v->type)) return type_err(g, key, v, "an integer");
    if (sgn && !want_signed && v->v.i < 0)
        return sl_err_set(SL_ERANGE, "%s: key '%s' = %lld is negative", g->name, key, (long long)v->v.i);
    if (!sgn && want_signed && v->v.u > (uint64_t)INT64_MAX)
        return sl_err_set(SL_ERANGE, "%s: key '%s' = %llu does not fit in int64", g->name, key,
                          (unsigned long long)v->v.u);
    *bits = sgn ? (uint64_t)v->v.i : v->v.u;
    return SL_OK;
}

int sl_gguf_get_u64(const sl_gguf *g, const char *key, uint64_t *out) { return get_int(g, key, false, out); }

int sl_gguf_get_u32(const sl_gguf *g, const char *key, uint32_t *out)
{
    uint64_t u;
    int st = sl_gguf_get_u64(g, key, &u);
    if (st) return st;
    if (u > UINT32_MAX)
        return sl_err_set(SL_ERANGE, "%s: key '%s' = %llu does not fit in 32 bits", g->name, key,
                          (unsigned long long)u);
    *out = (uint32_t)u;
    return SL_OK;
}

int sl_gguf_get_i64(const sl_gguf *g, const char *key, int64_t *out)
{
    uint64_t bits;
    int st = get_int(g, key, true, &bits);
    if (!st) *out = (int64_t)bits;
    return st;
}

/* The value of key when its type is t or t2; else SL_ETYPE ("expected want"). */
static int get_as(const sl_gguf *g, const char *key, uint32_t t, uint32_t t2, const char *want,
                  const sl_gguf_value **v)
{
    int st = get(g, key, v);
    if (!st && (*v)->type != t && (*v)->type != t2) st = type_err(g, key, *v, want);
    return st;
}

int sl_gguf_get_f64(const sl_gguf *g, const char *key, double *out)
{
    const sl_gguf_value *v = NULL;
    int st = get_as(g, key, SL_GGUF_F32, SL_GGUF_F64, "f32 or f64", &v);
    if (!st) *out = v->v.f;
    return st;
}

int sl_gguf_get_f32(const sl_gguf *g, const char *key, float *out)
{
    double d;
    int st = sl_gguf_get_f64(g, key, &d);
    if (!st) *out = (float)d;
    return st;
}

int sl_gguf_get_str(const sl_gguf *g, const char *key, const char **s, uint64_t *len)
{
    const sl_gguf_value *v = NULL;
    int st = get_as(g, key, SL_GGUF_STRING, SL_GGUF_STRING, "string", &v);
    if (st) return st;
    *s = v->v.s;
    if (len) *len = v->n;
    return SL_OK;
}

int sl_gguf_get_bool(const sl_gguf *g, const char *key, bool *out)
{
    const sl_gguf_value *v = NULL;
    int st = get_as(g, key, SL_GGUF_BOOL, SL_GGUF_BOOL, "bool", &v);
    if (!st) *out = v->v.u != 0;
    return st;
}

int sl_gguf_kv_arr(const sl_gguf *g, int64_t kv, uint32_t *elem_type, uint64_t *n,
                   const void **data)
{
    if (kv < 0 || kv >= g->n_kv)
        return sl_err_set(SL_ENOENT, "%s: kv index %lld out of range", g->name, (long long)kv);
    const sl_gguf_value *v = &g->kvs[kv].val;
    if (v->type != SL_GGUF_ARRAY) return type_err(g, g->kvs[kv].key, v, "array");
    if (elem_type) *elem_type = v->arr_type;
    if (n) *n = v->n;
    if (data) *data = sl_gguf_vtype_size(v->arr_type) ? v->v.data : NULL;
    return SL_OK;
}

int sl_gguf_get_arr(const sl_gguf *g, const char *key, uint32_t *elem_type, uint64_t *n,
                    const void **data)
{
    int64_t i = sl_gguf_find_key(g, key);
    if (i < 0) return sl_err_set(SL_ENOENT, "%s: key '%s' not found", g->name, key ? key : "(null)");
    return sl_gguf_kv_arr(g, i, elem_type, n, data);
}

int sl_gguf_arr_str(const sl_gguf *g, int64_t kv, uint64_t i, const char **s, uint64_t *len)
{
    uint32_t et;
    uint64_t n;
    int st = sl_gguf_kv_arr(g, kv, &et, &n, NULL);
    if (st) return st;
    if (et != SL_GGUF_STRING)
        return sl_err_set(SL_ETYPE, "%s: key '%s' is an array of %s, expected strings", g->name,
                          g->kvs[kv].key, sl_gguf_vtype_name(et));
    if (i >= n)
        return sl_err_set(SL_ERANGE, "%s: key '%s': index %llu past array length %llu", g->name,
                          g->kvs[kv].key, (unsigned long long)i, (unsigned long long)n);
    const sl_gguf_value *e = &g->kvs[kv].val.v.elems[i];
    *s = e->v.s;
    if (len) *len = e->n;
    return SL_OK;
}

/* ---- value tree -------------------------------------------------------- */

uint32_t sl_gguf_value_type(const sl_gguf_value *v) { return v->type; }
uint64_t sl_gguf_value_u64(const sl_gguf_value *v) { return v->v.u; }
int64_t sl_gguf_value_i64(const sl_gguf_value *v) { return v->v.i; }
double sl_gguf_value_f64(const sl_gguf_value *v) { return v->v.f; }

const char *sl_gguf_value_str(const sl_gguf_value *v, uint64_t *len)
{
    if (v->type != SL_GGUF_STRING) return NULL;
    if (len) *len = v->n;
    return v->v.s;
}

uint32_t sl_gguf_value_arr_type(const sl_gguf_value *v)
{
    return v->type == SL_GGUF_ARRAY ? v->arr_type : UINT32_MAX;
}

uint64_t sl_gguf_value_arr_len(const sl_gguf_value *v)
{
    return v->type == SL_GGUF_ARRAY ? v->n : 0;
}

int sl_gguf_value_arr_at(const sl_gguf_value *v, uint64_t i, sl_gguf_value *tmp,
                         const sl_gguf_value **elem)
{
    if (v->type != SL_GGUF_ARRAY)
        return sl_err_set(SL_ETYPE, "value is %s, not an array", sl_gguf_vtype_name(v->type));
    if (i >= v->n)
        return sl_err_set(SL_ERANGE, "index %llu past array length %llu", (unsigned long long)i,
                          (unsigned long long)v->n);
    size_t sz = sl_gguf_vtype_size(v->arr_type);
    if (!sz) {
        *elem = &v->v.elems[i];
        return SL_OK;
    }
    if (!tmp) return sl_err_set(SL_EINVAL, "numeric array element needs a tmp node");
    const unsigned char *p = (const unsigned char *)v->v.data + i * sz;
    memset(tmp, 0, sizeof *tmp);
    tmp->type = v->arr_type;
    switch (v->arr_type) {
    case SL_GGUF_U8: tmp->v.u = *p; break;
    case SL_GGUF_BOOL: tmp->v.u = *p != 0; break;
    case SL_GGUF_I8: tmp->v.i = (int8_t)*p; break;
    case SL_GGUF_U16: { uint16_t x; memcpy(&x, p, 2); tmp->v.u = x; break; }
    case SL_GGUF_I16: { int16_t x; memcpy(&x, p, 2); tmp->v.i = x; break; }
    case SL_GGUF_U32: { uint32_t x; memcpy(&x, p, 4); tmp->v.u = x; break; }
    case SL_GGUF_I32: { int32_t x; memcpy(&x, p, 4); tmp->v.i = x; break; }
    case SL_GGUF_F32: { float x; memcpy(&x, p, 4); tmp->v.f = x; break; }
    case SL_GGUF_U64: memcpy(&tmp->v.u, p, 8); break;
    case SL_GGUF_I64: memcpy(&tmp->v.i, p, 8); break;
    case SL_GGUF_F64: memcpy(&tmp->v.f, p, 8); break;
    default: break;
    }
    *elem = tmp;
    return SL_OK;
}

/* ---- tensors and layers ------------------------------------------------ */

int64_t sl_gguf_n_tensors(const sl_gguf *g) { return g->n_tensors; }

const sl_gguf_tensor *sl_gguf_tensor_at(const sl_gguf *g, int64_t i)
{
    return i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

const sl_gguf_tensor *sl_gguf_find_tensor(const sl_gguf *g, const char *name)
{
    if (!name) return NULL;
    int64_t i = sl_gguf_tensor_lookup(g, name, strlen(name));
    return i < 0 ? NULL : &g->tensors[i];
}

int32_t sl_gguf_n_layers(const sl_gguf *g) { return g->n_layers; }

int sl_gguf_layer_extent_sized(const sl_gguf *g, int32_t layer, sl_gguf_extent *out, size_t size)
{
    if (layer < 0 || layer >= g->n_layers)
        return sl_err_set(SL_ERANGE, "%s: layer %d not in 0..%d", g->name, layer, g->n_layers - 1);
    return sl_struct_out(out, size, &g->layers[layer], sizeof *out, SL_GGUF_EXTENT_MIN_SIZE,
                         "sl_gguf_extent");
}

int sl_gguf_nonlayer_extent_sized(const sl_gguf *g, sl_gguf_extent *out, size_t size)
{
    return sl_struct_out(out, size, &g->nonlayer, sizeof *out, SL_GGUF_EXTENT_MIN_SIZE,
                         "sl_gguf_extent");
}

uint64_t sl_gguf_total_tensor_bytes(const sl_gguf *g) { return g->total_bytes; }

/* [offset, +len) of one file read through fn (size: that file's). */
static int read_file(sl_gguf_read_fn fn, void *ctx, const char *name, uint64_t size, void *buf, size_t len,
                     uint64_t offset)
{
    uint64_t end;
    if (__builtin_add_overflow(offset, (uint64_t)len, &end) || end > size)
        return sl_err_set(SL_ERANGE, "%s: read [0x%llx, +%zu) past end of file (size %llu)", name,
                          (unsigned long long)offset, len, (unsigned long long)size);
    size_t done = 0;
    while (done < len) {
        int64_t r = fn(ctx, (char *)buf + done, len - done, offset + done);
        if (r < 0)
            return sl_err_set(SL_EIO, "%s: read at offset 0x%llx failed: %s", name,
                              (unsigned long long)(offset + done), strerror((int)-r));
        if (r == 0 || (uint64_t)r > len - done)
            return sl_err_set(SL_ETRUNC, "%s: file ends at offset 0x%llx, before its stated size %llu",
                              name, (unsigned long long)(offset + done), (unsigned long long)size);
        done += (size_t)r;
    }
    return SL_OK;
}

int sl_gguf_read(const sl_gguf *g, void *buf, size_t len, uint64_t offset)
{
    if (g->n_shards <= 1) return read_file(g->fn, g->ctx, g->name, g->file_size, buf, len, offset);
    const sl_gguf_shard *sh = sl_gguf_shard_of(g, offset);
    uint64_t end;
    if (!sh || __builtin_add_overflow(offset, (uint64_t)len, &end) || end > sh->base + sh->file_size)
        return sl_err_set(SL_ERANGE, "%s: read [0x%llx, +%zu) is not inside one file of the split model",
                          g->name, (unsigned long long)offset, len);
    const sl_gguf *p = g->parts[sh - g->shards] ? g->parts[sh - g->shards] : g;
    return read_file(p->fn, p->ctx, sh->path, sh->file_size, buf, len, offset - sh->base);
}

/* ---- shards ------------------------------------------------------------ */

uint32_t sl_gguf_n_shards(const sl_gguf *g) { return g->n_shards; }

const sl_gguf_shard *sl_gguf_shard_at(const sl_gguf *g, uint32_t i)
{
    return i < g->n_shards ? &g->shards[i] : NULL;
}

const sl_gguf_shard *sl_gguf_shard_of(const sl_gguf *g, uint64_t off)
{
    uint32_t lo = 0, hi = g->n_shards;   /* last shard with base <= off */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (g->shards[mid].base <= off) lo = mid; else hi = mid;
    }
    const sl_gguf_shard *sh = &g->shards[lo];
    return off >= sh->base && off - sh->base < sh->file_size ? sh : NULL;
}
