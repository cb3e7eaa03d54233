/* F16 KV cache allocation. */
#include "kv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/sl_status.h"

uint64_t sl_kv_bytes(int32_t n_layer, int32_t n_ctx, int32_t kv_dim)
{
    return 2ull * (uint64_t)n_layer * (uint64_t)n_ctx * (uint64_t)kv_dim * sizeof(sl_f16);
}

int sl_kv_init(sl_kv *kv, int32_t n_layer, int32_t n_ctx, int32_t n_head_kv, int32_t head_dim)
{
    memset(kv, 0, sizeof *kv);
    if (n_layer < 1 || n_ctx < 1 || n_head_kv < 1 || head_dim < 1 ||
        (int64_t)n_head_kv * head_dim > INT32_MAX)
        return sl_err_set(SL_EINVAL, "kv cache: invalid size (%d layers, %d ctx, %d kv heads x %d)",
                          n_layer, n_ctx, n_head_kv, head_dim);
    int32_t kv_dim = n_head_kv * head_dim;
    uint64_t half = sl_kv_bytes(n_layer, n_ctx, kv_dim) / 2;
    if (half > (uint64_t)SIZE_MAX / 2)
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
