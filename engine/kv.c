/* KV cache allocation, row stores and cell copies (kv.h). */
#include "kv.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../gguf/base/sl_internal.h"

int sl_kv_type_check(int t, int32_t head_dim, const char *what)
{
    if (t == SL_KV_NONE && !strcmp(what, "V")) return 0;
    if (t != SL_GGML_F16 && t != SL_GGML_Q8_0 && t != SL_GGML_Q4_0) {
        const char *name = t >= 0 ? sl_gguf_type_name((uint32_t)t) : NULL;
        return sl_err_set(SL_EINVAL, "kv cache: %s type %s (%d) not supported (f16, q8_0, q4_0)", what,
                          name ? name : "unknown", t);
    }
    if (t != SL_GGML_F16 && (head_dim < 1 || head_dim % SL_QK))
        return sl_err_set(SL_EINVAL, "kv cache: %s type %s needs a head dimension that is a multiple of %d "
                          "(this model's is %d); use f16", what, sl_gguf_type_name((uint32_t)t), SL_QK,
                          head_dim);
    return 0;
}

int32_t sl_kv_rot_size(int t, int32_t head_dim, int is_v)
{
    if (t == SL_GGML_F16 || t == SL_KV_NONE || head_dim < 64 || head_dim % 64) return 0;
    if (is_v) return 64;
    int32_t r = 64;
    while (head_dim % (2 * r) == 0) r *= 2;
    return r;
}

void sl_kv_rotate(float *x, int64_t n, int32_t nrot)
{
    const float scale = 1.0f / sqrtf((float)nrot);
    for (int64_t b = 0; b < n; b += nrot) {
        float *r = x + b;
        for (int32_t j = 0; j < nrot; j++) r[j] *= scale;
        for (int32_t len = 1; len < nrot; len <<= 1)
            for (int32_t i = 0; i < nrot; i += 2 * len)
                for (int32_t j = 0; j < len; j++) {
                    float u = r[i + j], v = r[i + len + j];
                    r[i + j] = u + v;
                    r[i + len + j] = u - v;
                }
    }
}

static uint64_t row_bytes(int t, int64_t n)
{
    if (t != SL_GGML_F16 && t != SL_GGML_Q8_0 && t != SL_GGML_Q4_0) return 0;
    return (uint64_t)(n / (int64_t)sl_gguf_block_elems((uint32_t)t)) * sl_gguf_block_bytes((uint32_t)t);
}

uint64_t sl_kv_pos_bytes(int32_t kv_dim, int type_k, int type_v)
{
    if (kv_dim <= 0) return 0;
    uint64_t k = row_bytes(type_k, kv_dim), v = row_bytes(type_v, kv_dim);
    return k && (v || type_v == SL_KV_NONE) ? k + v : 0;
}

/* Saturates at UINT64_MAX (hostile header sizes must not wrap to a small
 * cache that the attention kernels would then overrun). */
uint64_t sl_kv_bytes(int32_t n_layer, int32_t n_ctx, int32_t kv_dim, int type_k, int type_v)
{
    uint64_t pb = sl_kv_pos_bytes(kv_dim, type_k, type_v);
    if (n_layer <= 0 || n_ctx <= 0 || !pb) return 0;
    uint64_t r;
    if (__builtin_mul_overflow((uint64_t)n_layer, (uint64_t)n_ctx, &r) ||
        __builtin_mul_overflow(r, pb, &r))
        return UINT64_MAX;
    return r;
}

int32_t sl_kv_ring_cap(int32_t n_ctx, int32_t window, int32_t n_batch)
{
    if (window <= 0 || n_batch <= 0) return n_ctx;
    int64_t c = (int64_t)window - 1 + n_batch;
    return c < n_ctx ? (int32_t)c : n_ctx;
}

uint64_t sl_kv_bytes_layers(int32_t n_layer, const int32_t *cap, int32_t kv_dim, int type_k, int type_v)
{
    uint64_t pb = sl_kv_pos_bytes(kv_dim, type_k, type_v), r = 0, t;
    if (n_layer <= 0 || !pb) return 0;
    for (int32_t l = 0; l < n_layer; l++) {
        if (cap[l] < 0) return 0;
        if (__builtin_mul_overflow((uint64_t)cap[l], pb, &t) || __builtin_add_overflow(r, t, &r))
            return UINT64_MAX;
    }
    return r;
}

int sl_kv_init(sl_kv *kv, int32_t n_layer, int32_t n_ctx, int32_t n_head_kv, int32_t head_dim,
               int type_k, int type_v)
{
    return sl_kv_init_layers(kv, n_layer, n_ctx, n_head_kv, head_dim, type_k, type_v, NULL);
}

int sl_kv_init_layers(sl_kv *kv, int32_t n_layer, int32_t n_ctx, int32_t n_head_kv, int32_t head_dim,
                      int type_k, int type_v, const int32_t *cap)
{
    memset(kv, 0, sizeof *kv);
    if (n_layer < 1 || n_ctx < 1 || n_head_kv < 1 || head_dim < 1 ||
        (int64_t)n_head_kv * head_dim > INT32_MAX)
        return sl_err_set(SL_EINVAL, "kv cache: invalid size (%d layers, %d ctx, %d kv heads x %d)",
                          n_layer, n_ctx, n_head_kv, head_dim);
    int rc;
    if ((rc = sl_kv_type_check(type_k, head_dim, "K")) || (rc = sl_kv_type_check(type_v, head_dim, "V")))
        return rc;
    int32_t kv_dim = n_head_kv * head_dim;
    uint64_t total = sl_kv_bytes(n_layer, n_ctx, kv_dim, type_k, type_v);
    if (total == UINT64_MAX || total > (uint64_t)PTRDIFF_MAX / 2)
        return sl_err_set(SL_ENOMEM, "kv cache: %llu bytes too large", (unsigned long long)total);
    kv->cap = malloc((size_t)n_layer * sizeof *kv->cap);
    kv->base = calloc((size_t)n_layer, sizeof *kv->base);
    kv->row0 = malloc((size_t)n_layer * sizeof *kv->row0);
    if (!kv->cap || !kv->base || !kv->row0) {
        sl_kv_free(kv);
        return sl_err_set(SL_ENOMEM, "kv cache: out of memory");
    }
    size_t rows = 0;   /* per kv head summed over layers: <= n_layer * n_ctx, no overflow */
    for (int32_t l = 0; l < n_layer; l++) {
        if (cap && (cap[l] < 0 || cap[l] > n_ctx)) {
            sl_kv_free(kv);
            return sl_err_set(SL_EINVAL, "kv cache: layer %d: %d rows outside 0..%d", l, cap ? cap[l] : 0, n_ctx);
        }
        kv->cap[l] = cap ? cap[l] : n_ctx;
        kv->row0[l] = rows * (size_t)n_head_kv;
        rows += (size_t)kv->cap[l];
    }
    total = sl_kv_bytes_layers(n_layer, kv->cap, kv_dim, type_k, type_v);
    uint64_t szk = (uint64_t)rows * row_bytes(type_k, kv_dim), szv = total - szk;
    /* 64-byte aligned base helps the SIMD attention kernels */
    size_t ak = ((size_t)szk + 127) & ~(size_t)63, av = ((size_t)szv + 127) & ~(size_t)63;   /* never 0 */
    kv->k = aligned_alloc(64, ak);
    kv->v = aligned_alloc(64, av);
    if (!kv->k || !kv->v) {
        sl_kv_free(kv);
        return sl_err_set(SL_ENOMEM, "kv cache: cannot allocate %zu + %zu bytes", ak, av);
    }
    kv->n_layer = n_layer; kv->n_ctx = n_ctx;
    kv->n_head_kv = n_head_kv; kv->head_dim = head_dim; kv->kv_dim = kv_dim;
    kv->n_past = 0;
    kv->type_k = type_k; kv->type_v = type_v;
    kv->row_k = (size_t)row_bytes(type_k, head_dim);
    kv->row_v = (size_t)row_bytes(type_v, head_dim);
    kv->rot_k = sl_kv_rot_size(type_k, head_dim, 0);
    kv->rot_v = sl_kv_rot_size(type_v, head_dim, 1);
    return 0;
}

void sl_kv_free(sl_kv *kv)
{
    free(kv->k);
    free(kv->v);
    free(kv->cap);
    free(kv->base);
    free(kv->row0);
    free(kv->rec);
    free(kv->rec0);
    memset(kv, 0, sizeof *kv);
}

/* Resident bytes of the whole pages in [beg, end), then released. */
static uint64_t release_range(char *beg, char *end, size_t page)
{
    uintptr_t b = ((uintptr_t)beg + page - 1) & ~(uintptr_t)(page - 1), e = (uintptr_t)end & ~(uintptr_t)(page - 1);
    if (e <= b) return 0;
    size_t n = (e - b) / page;
    uint64_t resident = 0;
    unsigned char vec[256];
    for (size_t i = 0; i < n; i += sizeof vec) {
        size_t c = n - i < sizeof vec ? n - i : sizeof vec;
        if (mincore((void *)(b + i * page), c * page, vec)) return 0;
        for (size_t j = 0; j < c; j++) resident += vec[j] & 1;
    }
    if (madvise((void *)b, e - b, MADV_DONTNEED)) return 0;   /* e.g. locked pages: nothing given back */
    return resident * page;
}

uint64_t sl_kv_release(const sl_kv *kv)
{
    long ps = sysconf(_SC_PAGESIZE);
    if (ps <= 0 || (ps & (ps - 1))) return 0;
    uint64_t got = 0;
    for (int32_t l = 0; l < kv->n_layer; l++) {
        int32_t s0 = kv->n_past - kv->base[l];   /* the layer's first unused slot */
        if (s0 < 0) s0 = 0;
        if (s0 >= kv->cap[l]) continue;
        for (int32_t g = 0; g < kv->n_head_kv; g++) {
            size_t r0 = kv->row0[l] + (size_t)g * (size_t)kv->cap[l];
            got += release_range((char *)kv->k + (r0 + (size_t)s0) * kv->row_k,
                                 (char *)kv->k + (r0 + (size_t)kv->cap[l]) * kv->row_k, (size_t)ps);
            got += release_range((char *)kv->v + (r0 + (size_t)s0) * kv->row_v,
                                 (char *)kv->v + (r0 + (size_t)kv->cap[l]) * kv->row_v, (size_t)ps);
        }
    }
    return got;
}

void sl_kv_clear(sl_kv *kv)
{
    kv->n_past = 0;
    for (int32_t l = 0; l < kv->n_layer; l++) kv->base[l] = 0;
    if (kv->rec) kv->rec_pos = -1;   /* zeroed by the next pass (sl_kv_rec_begin) */
}

/* Moves n rows of every kv head of layer l from slot `from` to slot `to`. */
static void move_slots(const sl_kv *kv, int32_t l, int32_t to, int32_t from, int32_t n)
{
    for (int32_t g = 0; g < kv->n_head_kv; g++) {
        char *k0 = (char *)kv->k + (kv->row0[l] + (size_t)g * (size_t)kv->cap[l]) * kv->row_k;
        char *v0 = (char *)kv->v + (kv->row0[l] + (size_t)g * (size_t)kv->cap[l]) * kv->row_v;
        memmove(k0 + (size_t)to * kv->row_k, k0 + (size_t)from * kv->row_k, (size_t)n * kv->row_k);
        memmove(v0 + (size_t)to * kv->row_v, v0 + (size_t)from * kv->row_v, (size_t)n * kv->row_v);
    }
}

int sl_kv_ring_advance(sl_kv *kv, int32_t layer, int32_t pos0, int32_t n, int32_t window)
{
    int32_t base = kv->base[layer], cap = kv->cap[layer];
    if ((int64_t)pos0 + n - base <= cap) return 0;
    int32_t nb = window > 0 && pos0 - (window - 1) > base ? pos0 - (window - 1) : base;
    if ((int64_t)pos0 + n - nb > cap)
        return sl_err_set(SL_EINVAL, "kv cache: layer %d: %d new positions do not fit its %d-row window ring",
                          layer, n, cap);
    move_slots(kv, layer, 0, nb - base, pos0 - nb);
    kv->base[layer] = nb;
    return 0;
}

void sl_kv_store_row(int t, const sl_kern *k, void *dst, const float *src, int32_t n)
{
    if (t == SL_GGML_F16) k->f32_to_f16(dst, src, n);
    else sl_quant_quantize_row(t, src, dst, n);
}

void sl_kv_store(const sl_kv *kv, const sl_kern *k, int32_t layer, int32_t pos, const float *krow,
                 const float *vrow)
{
    for (int32_t g = 0; g < kv->n_head_kv; g++) {
        const int64_t o = (int64_t)g * kv->head_dim;
        sl_kv_store_row(kv->type_k, k, sl_kv_k(kv, layer, g, pos), krow + o, kv->head_dim);
        if (kv->type_v != SL_KV_NONE)
            sl_kv_store_row(kv->type_v, k, sl_kv_v(kv, layer, g, pos), vrow + o, kv->head_dim);
    }
}

uint64_t sl_kv_cells_bytes(const sl_kv *kv, int32_t n)
{
    return n <= 0 ? 0 : (uint64_t)n * (uint64_t)kv->n_layer * (uint64_t)kv->n_head_kv * (kv->row_k + kv->row_v);
}

/* to_cache: copy src -> cache, else cache -> dst. */
static int cells_copy(const sl_kv *kv, int32_t p0, int32_t n, char *buf, int to_cache)
{
    for (int32_t l = 0; l < kv->n_layer; l++)
        if (kv->cap[l] == 0)
            return sl_err_set(SL_EINVAL, sl_kv_rec_layer(kv, l) ? "kv cells: layer %d is recurrent: a state, no cells"
                                         : "kv cells: layer %d is not held by this cache (a pipeline stage)", l);
    for (int32_t l = 0; l < kv->n_layer; l++)
        if (p0 < kv->base[l] || (int64_t)p0 + n - kv->base[l] > kv->cap[l])
            return sl_err_set(SL_EINVAL, "kv cells: positions %d..+%d: layer %d holds only %d..%d (its window)",
                              p0, n, l, kv->base[l], kv->base[l] + kv->cap[l] - 1);
    for (int32_t l = 0; l < kv->n_layer; l++)
        for (int kvi = 0; kvi < 2; kvi++)
            for (int32_t g = 0; g < kv->n_head_kv; g++) {
                char *c = kvi ? sl_kv_v(kv, l, g, p0) : sl_kv_k(kv, l, g, p0);
                size_t len = (size_t)n * (kvi ? kv->row_v : kv->row_k);
                if (to_cache) memcpy(c, buf, len);
                else memcpy(buf, c, len);
                buf += len;
            }
    return 0;
}

int sl_kv_cells_read(const sl_kv *kv, int32_t p0, int32_t n, void *dst)
{
    if (p0 < 0 || n < 0 || (int64_t)p0 + n > kv->n_past || (n && !dst))
        return sl_err_set(SL_EINVAL, "kv cells: read of positions %d..+%d outside the %d filled", p0, n,
                          kv->n_past);
    return cells_copy(kv, p0, n, dst, 0);
}

int sl_kv_cells_write(sl_kv *kv, int32_t p0, int32_t n, const void *src)
{
    if (p0 < 0 || n < 0 || (int64_t)p0 + n > kv->n_ctx || (n && !src))
        return sl_err_set(SL_EINVAL, "kv cells: write of positions %d..+%d outside n_ctx %d", p0, n,
                          kv->n_ctx);
    return cells_copy(kv, p0, n, (char *)src, 1);
}
