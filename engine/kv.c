/* F16 KV cache allocation. */
#include "kv.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/sl_internal.h"

/* Saturates at UINT64_MAX (hostile header sizes must not wrap to a small
 * cache that the attention kernels would then overrun). */
uint64_t sl_kv_bytes(int32_t n_layer, int32_t n_ctx, int32_t kv_dim)
{
    if (n_layer <= 0 || n_ctx <= 0 || kv_dim <= 0) return 0;
    uint64_t r;
    if (__builtin_mul_overflow((uint64_t)n_layer, (uint64_t)n_ctx, &r) ||
        __builtin_mul_overflow(r, (uint64_t)kv_dim, &r) ||
        __builtin_mul_overflow(r, 2u * sizeof(sl_f16), &r))
        return UINT64_MAX;
    return r;
}

int sl_kv_init(sl_kv *kv, int32_t n_layer, int32_t n_ctx, int32_t n_head_kv, int32_t head_dim)
{
    memset(kv, 0, sizeof *kv);
    if (n_layer < 1 || n_ctx < 1 || n_head_kv < 1 || head_dim < 1 ||
        (int64_t)n_head_kv * head_dim > INT32_MAX)
        return sl_err_set(SL_EINVAL, "kv cache: invalid size (%d layers, %d ctx, %d kv heads x %d)",
                          n_layer, n_ctx, n_head_kv, head_dim);
    int32_t kv_dim = n_head_kv * head_dim;
    uint64_t total = sl_kv_bytes(n_layer, n_ctx, kv_dim), half = total / 2;
    if (total == UINT64_MAX || half > (uint64_t)PTRDIFF_MAX / 2)
        return sl_err_set(SL_ENOMEM, "kv cache: %llu bytes too large", (unsigned long long)half);
    /* 64-byte aligned base helps the SIMD attention kernels */
    size_t sz = ((size_t)half + 63) & ~(size_t)63;
    kv->k = aligned_alloc(64, sz);
    kv->v = aligned_alloc(64, sz);
    if (!kv->k || !kv->v) {
        free(kv->k); free(kv->v);
        memset(kv, 0, sizeof *kv);
        return sl_err_set(SL_ENOMEM, "kv cache: cannot allocate 2 x %zu bytes", sz);
    }
    kv->n_layer = n_layer; kv->n_ctx = n_ctx;
    kv->n_head_kv = n_head_kv; kv->head_dim = head_dim; kv->kv_dim = kv_dim;
    kv->n_past = 0;
    return 0;
}

void sl_kv_free(sl_kv *kv)
{
    free(kv->k);
    free(kv->v);
    memset(kv, 0, sizeof *kv);
}
