/* F16 KV cache: per layer, K and V as [pos][n_head_kv * head_dim] (the layout
 * sl_attn reads), sized once for n_ctx positions. */
#ifndef SL_ENGINE_KV_H
#define SL_ENGINE_KV_H

#include <stdint.h>
#include <stddef.h>

#include "../quant/quant.h"

typedef struct sl_kv {
    sl_f16 *k, *v;          /* [n_layer][n_ctx][kv_dim] each */
    int32_t n_layer, n_ctx, kv_dim;
    int32_t n_past;         /* positions filled */
} sl_kv;

/* Bytes init will allocate (for the planner's reserve). */
uint64_t sl_kv_bytes(int32_t n_layer, int32_t n_ctx, int32_t kv_dim);
int  sl_kv_init(sl_kv *kv, int32_t n_layer, int32_t n_ctx, int32_t kv_dim);
void sl_kv_free(sl_kv *kv);
static inline sl_f16 *sl_kv_k(const sl_kv *kv, int32_t layer, int32_t pos)
{
    return kv->k + ((size_t)layer * (size_t)kv->n_ctx + (size_t)pos) * (size_t)kv->kv_dim;
}
static inline sl_f16 *sl_kv_v(const sl_kv *kv, int32_t layer, int32_t pos)
{
    return kv->v + ((size_t)layer * (size_t)kv->n_ctx + (size_t)pos) * (size_t)kv->kv_dim;
}

#endif
