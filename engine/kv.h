/* F16 KV cache: per layer, K and V each head-major [n_head_kv][n_ctx][head_dim]
 * (sl_attn with kv_stride = head_dim, kv_head_stride = n_ctx * head_dim), sized
 * once for n_ctx positions. Head-major keeps each kv head's rows contiguous, so
 * decode attention streams them from DRAM instead of striding over the other
 * heads (perf/bin_attnbench.c: ~2.3x faster per layer at 2k context). */
#ifndef SL_ENGINE_KV_H
#define SL_ENGINE_KV_H

#include <stdint.h>
#include <stddef.h>

#include "../quant/quant.h"

typedef struct sl_kv {
    sl_f16 *k, *v;          /* [n_layer][n_head_kv][n_ctx][head_dim] each */
    int32_t n_layer, n_ctx, n_head_kv, head_dim;
    int32_t kv_dim;         /* n_head_kv * head_dim */
    int32_t n_past;         /* positions filled */
} sl_kv;

/* Bytes init will allocate (for the planner's reserve); kv_dim = n_head_kv * head_dim. */
uint64_t sl_kv_bytes(int32_t n_layer, int32_t n_ctx, int32_t kv_dim);
int  sl_kv_init(sl_kv *kv, int32_t n_layer, int32_t n_ctx, int32_t n_head_kv, int32_t head_dim);
void sl_kv_free(sl_kv *kv);

/* Start of kv head `head`'s row at position `pos` in `layer` (head_dim elements);
 * the rows of one head follow each other, head_dim apart. */
static inline size_t sl_kv_off(const sl_kv *kv, int32_t layer, int32_t head, int32_t pos)
{
    return (((size_t)layer * (size_t)kv->n_head_kv + (size_t)head) * (size_t)kv->n_ctx +
            (size_t)pos) * (size_t)kv->head_dim;
}
static inline sl_f16 *sl_kv_k(const sl_kv *kv, int32_t layer, int32_t head, int32_t pos)
{
    return kv->k + sl_kv_off(kv, layer, head, pos);
}
static inline sl_f16 *sl_kv_v(const sl_kv *kv, int32_t layer, int32_t head, int32_t pos)
{
    return kv->v + sl_kv_off(kv, layer, head, pos);
}
/* Elements between the same position of consecutive kv heads (sl_attn.kv_head_stride). */
static inline int64_t sl_kv_head_stride(const sl_kv *kv)
{
    return (int64_t)kv->n_ctx * kv->head_dim;
}

#endif
