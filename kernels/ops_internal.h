/* Internal to kernels/: what the float-op files of every level share: the
 * rope angle table, and the attention work item's interface (attention.c
 * splits the work and holds the scalar oracle; attention_driver.h is the
 * SIMD item, instantiated per level in ops_<isa>.c). */
#ifndef SL_OPS_INTERNAL_H
#define SL_OPS_INTERNAL_H

#include "kernels.h"

/* cos/sin of pos * inv_freq[i] for i < n (rope angles; the same libm calls
 * on every level so all levels rotate by bit-identical factors). */
void sl_rope_cs(float *c, float *s, int32_t pos, const float *inv_freq, int n);

/* Attention: one work item = query row `row`, heads h0..h0+ng-1, all sharing
 * kv head kvh (ng <= SL_ATTN_GMAX), so K/V rows are read once for the group.
 * ws: this thread's scratch: qf [GMAX][head_dim] (q rounded to f16, as f32),
 * s [GMAX][L] (scores, then probabilities rounded to f16, as f32),
 * acc [GMAX][head_dim]. */
#define SL_ATTN_GMAX 8
static inline int64_t sl_attn_khs(const sl_attn *a)
{
    return a->kv_head_stride ? a->kv_head_stride : a->head_dim;
}
typedef struct sl_attn_ws { float *qf, *s, *acc; } sl_attn_ws;
#define SL_ATTN_ITEM_ARGS const sl_attn *a, int row, int kvh, int h0, int ng, \
                          const sl_attn_ws *ws
typedef void (*sl_attn_item_fn)(SL_ATTN_ITEM_ARGS);
void sl_attn_item_scalar(SL_ATTN_ITEM_ARGS);
#if defined(__x86_64__) || defined(__i386__)
void sl_attn_item_avx2(SL_ATTN_ITEM_ARGS);
void sl_attn_item_avx512(SL_ATTN_ITEM_ARGS);
#endif
#if defined(__aarch64__)
void sl_attn_item_neon(SL_ATTN_ITEM_ARGS);
#endif

#endif
