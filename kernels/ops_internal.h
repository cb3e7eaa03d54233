/* Internal to kernels/: helpers shared by the float-op files of every ISA
 * level (ops_*.c, attention*.c). */
#ifndef SL_OPS_INTERNAL_H
#define SL_OPS_INTERNAL_H

#include "kernels.h"

/* cos/sin of pos * inv_freq[i] for i < n (rope angles; the same libm calls
 * on every level so all levels rotate by bit-identical factors). */
void sl_rope_cs(float *c, float *s, int32_t pos, const float *inv_freq, int n);

/* Attention: one work item = query row `row`, heads h0..h0+ng-1 (all sharing
 * kv head kvh, ng <= SL_ATTN_GMAX). ws: this thread's scratch. */
#define SL_ATTN_GMAX 8
typedef void (*sl_attn_item_fn)(const sl_attn *a, int row, int kvh, int h0, int ng,
                                void *ws);
void sl_attn_item_scalar(const sl_attn *a, int row, int kvh, int h0, int ng, void *ws);
#if defined(__x86_64__) || defined(__i386__)
void sl_attn_item_avx2(const sl_attn *a, int row, int kvh, int h0, int ng, void *ws);
void sl_attn_item_avx512(const sl_attn *a, int row, int kvh, int h0, int ng, void *ws);
#endif
#if defined(__aarch64__)
void sl_attn_item_neon(const sl_attn *a, int row, int kvh, int h0, int ng, void *ws);
#endif

#endif
