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

/* Rotates pairs [0, m) of one head's chunk (angles c, s): neox pairs
 * (xa[i], xb[i]), else (xp[2i], xp[2i+1]); returns how many pairs it did
 * (a vector prefix); the rest is done by sl_rope_run in scalar code. */
typedef int (*sl_rope_vec_fn)(float *xa, float *xb, const float *c, const float *s, int m, int neox);

/* The rope op (kernels.h) over chunks of 64 angles: vec may be NULL (all
 * scalar). Every element gets the same mul/mul/sub, no FMA. */
static inline __attribute__((always_inline)) void
sl_rope_run(float *x, int n_head, int head_dim, int n_rot, int32_t pos, const float *inv_freq,
            int neox, sl_rope_vec_fn vec)
{
    int half = n_rot / 2;
    for (int i0 = 0; i0 < half; i0 += 64) {
        float c[64], s[64];
        int m = half - i0 < 64 ? half - i0 : 64;
        sl_rope_cs(c, s, pos, inv_freq + i0, m);
        for (int h = 0; h < n_head; h++) {
            float *xh = x + (int64_t)h * head_dim;
            float *xa = neox ? xh + i0 : xh + 2 * i0, *xb = xh + i0 + half;
            for (int i = vec ? vec(xa, xb, c, s, m, neox) : 0; i < m; i++) {
                float *pa = neox ? xa + i : xa + 2 * i, *pb = neox ? xb + i : pa + 1;
                float x0 = *pa, x1 = *pb;
                *pa = x0 * c[i] - x1 * s[i];
                *pb = x0 * s[i] + x1 * c[i];
            }
        }
    }
}

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
/* First cache position query row `row` reads: 0, or the start of its
 * sliding window (keys j with pos - j < window). */
static inline int32_t sl_attn_first(const sl_attn *a, int row)
{
    const int32_t p = a->pos0 + row;
    return a->window > 0 && p >= a->window ? p + 1 - a->window : 0;
}
typedef struct sl_attn_ws { float *qf, *s, *acc; } sl_attn_ws;

/* GELU (tanh form) of an F16 value, rounded to F16: the entry of
 * llama.cpp's table at that value (gelu_table.c), computed. */
float sl_gelu_f16_entry(sl_f16 h);
/* The 65536 entries, indexed by the F16 bits (built once, thread-safe). */
const sl_f16 *sl_gelu_table(void);
#define SL_ATTN_ITEM_ARGS const sl_attn *a, int row, int kvh, int h0, int ng, \
                          const sl_attn_ws *ws
typedef void (*sl_attn_item_fn)(SL_ATTN_ITEM_ARGS);
#if defined(__x86_64__) || defined(__i386__)
void sl_attn_item_avx2(SL_ATTN_ITEM_ARGS);
void sl_attn_item_avx512(SL_ATTN_ITEM_ARGS);
#endif
#if defined(__aarch64__)
void sl_attn_item_neon(SL_ATTN_ITEM_ARGS);
#endif

#endif
