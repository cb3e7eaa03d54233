/* Scalar oracle block kernels of the codebook and ternary types (IQ4_NL,
 * MXFP4 with Q8_0; IQ4_XS, TQ1_0, TQ2_0 with Q8_K): exact integer sums of
 * level * activation, scaled once per block (see dot_scalar.c). With am set,
 * every integer factor is taken in magnitude and a ternary digit as
 * |t - 1| + 2 (SIMD forms that sum t * y and subtract the block sum of y). */
#include <stdlib.h>

#include "kern_internal.h"

static inline float h2f(sl_f16 h) { return sl_f16_to_f32(h); }
static inline int mag(int v, int am) { return am ? abs(v) : v; }
static inline float fmag(float f, int am) { return am ? (f < 0.0f ? -f : f) : f; }

/* sum over a 32-element block of level[nibble] * y (IQ4_NL / MXFP4 nibble order). */
static int32_t nib_sum(const uint8_t *qs, const int8_t *lv, const int8_t *y, int am)
{
    int32_t s = 0;
    for (int j = 0; j < 16; j++)
        s += mag(lv[qs[j] & 15], am) * mag(y[j], am) + mag(lv[qs[j] >> 4], am) * mag(y[j + 16], am);
    return s;
}

void sl_dot_blk_iq4_nl(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_iq4_nl *x = (const sl_block_iq4_nl *)vx + i;
    const sl_block_q8_0 *y = (const sl_block_q8_0 *)vy + i;
    *a = (float)nib_sum(x->qs, sl_kvalues_iq4nl, y->qs, am) * fmag(h2f(x->d) * h2f(y->d), am);
    *b = 0.0f;
}

void sl_dot_blk_mxfp4(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_mxfp4 *x = (const sl_block_mxfp4 *)vx + i;
    const sl_block_q8_0 *y = (const sl_block_q8_0 *)vy + i;
    *a = (float)nib_sum(x->qs, sl_kvalues_mxfp4, y->qs, am) * fmag(h2f(y->d) * sl_e8m0_half(x->e), am);
    *b = 0.0f;
}

void sl_dot_blk_iq4_xs(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_iq4_xs *x = (const sl_block_iq4_xs *)vx + i;
    const sl_block_q8_k *y = (const sl_block_q8_k *)vy + i;
    int32_t isum = 0;
    for (int ib = 0; ib < 8; ib++)
        isum += mag(sl_quant_iq4_xs_scale(x, ib) - 32, am)
              * nib_sum(x->qs + 16 * ib, sl_kvalues_iq4nl, y->qs + 32 * ib, am);
    *a = fmag(h2f(x->d) * y->d, am) * (float)isum;
    *b = 0.0f;
}

/* sum of (t - 1) * y over a ternary block's 256 digits. */
static int32_t tern_sum(const uint8_t *t, const int8_t *y, int am)
{
    int32_t s = 0;
    for (int j = 0; j < SL_QKK; j++) s += (am ? abs(t[j] - 1) + 2 : t[j] - 1) * mag(y[j], am);
    return s;
}

void sl_dot_blk_tq1_0(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_tq1_0 *x = (const sl_block_tq1_0 *)vx + i;
    const sl_block_q8_k *y = (const sl_block_q8_k *)vy + i;
    uint8_t t[SL_QKK];
    sl_quant_tq1_0_digits(x, t);
    *a = (float)tern_sum(t, y->qs, am) * fmag(h2f(x->d) * y->d, am);
    *b = 0.0f;
}

void sl_dot_blk_tq2_0(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_tq2_0 *x = (const sl_block_tq2_0 *)vx + i;
    const sl_block_q8_k *y = (const sl_block_q8_k *)vy + i;
    uint8_t t[SL_QKK];
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 4; l++)
            for (int m = 0; m < 32; m++) t[128 * h + 32 * l + m] = (x->qs[32 * h + m] >> (2 * l)) & 3;
    *a = (float)tern_sum(t, y->qs, am) * fmag(h2f(x->d) * y->d, am);
    *b = 0.0f;
}
