/* Reference quantizers of the 32-element formats Q4_0, Q4_1, Q5_0, Q5_1 and
 * Q8_0. These are the straightforward min/max quantizers: they reproduce the
 * bytes of ggml's (and gguf-py's) reference quantizers exactly, which is what
 * the golden tests check; a smarter search would not be byte-compatible. */
#include <math.h>
#include <string.h>

#include "quant_internal.h"

/* Signed value of largest magnitude (first on ties). */
static float signed_absmax(const float *x, int n)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        float a = fabsf(x[j]);
        if (a > amax) { amax = a; max = x[j]; }
    }
    return max;
}

/* Truncate a non-negative level to [0, hi]; nan -> 0. */
static int level(float v, int hi)
{
    if (!(v > 0.0f)) return 0;
    if (v >= (float)hi) return hi;
    return (int)v;
}

/* Symmetric formats: the extreme value maps to level 0 (d = max / -half). */
static void sym_levels(const float *x, int half, uint8_t *q, float *d_out)
{
    float d = signed_absmax(x, SL_QK) / (float)-half;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < SL_QK; j++) q[j] = (uint8_t)level(x[j] * id + ((float)half + 0.5f), 2 * half - 1);
    *d_out = d;
}

/* Affine formats: min maps to level 0, max to level nmax. */
static void affine_levels(const float *x, int nmax, uint8_t *q, float *d_out, float *m_out)
{
    float mn = x[0], mx = x[0];
    for (int j = 1; j < SL_QK; j++) { mn = fminf(mn, x[j]); mx = fmaxf(mx, x[j]); }
    float d = (mx - mn) / (float)nmax;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < SL_QK; j++) q[j] = (uint8_t)level((x[j] - mn) * id + 0.5f, nmax);
    *d_out = d;
    *m_out = mn;
}

static void pack_nibbles(const uint8_t *q, uint8_t *qs)
{
    for (int j = 0; j < SL_QK / 2; j++) qs[j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
}

static void pack_fifth_bits(const uint8_t *q, uint8_t qh[4])
{
    uint32_t h = 0;
    for (int j = 0; j < SL_QK; j++) h |= (uint32_t)(q[j] >> 4) << j;
    for (int k = 0; k < 4; k++) qh[k] = (uint8_t)(h >> (8 * k));
}

void sl_quant_q4_0_blocks(const float *x, sl_block_q4_0 *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += SL_QK) {
        uint8_t q[SL_QK];
        float d;
        sym_levels(x, 8, q, &d);
        y[i].d = sl_f32_to_f16(d);
        pack_nibbles(q, y[i].qs);
    }
}

void sl_quant_q4_1_blocks(const float *x, sl_block_q4_1 *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += SL_QK) {
        uint8_t q[SL_QK];
        float d, m;
        affine_levels(x, 15, q, &d, &m);
        y[i].d = sl_f32_to_f16(d);
        y[i].m = sl_f32_to_f16(m);
        pack_nibbles(q, y[i].qs);
    }
}

void sl_quant_q5_0_blocks(const float *x, sl_block_q5_0 *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += SL_QK) {
        uint8_t q[SL_QK];
        float d;
        sym_levels(x, 16, q, &d);
        y[i].d = sl_f32_to_f16(d);
        pack_fifth_bits(q, y[i].qh);
        pack_nibbles(q, y[i].qs);
    }
}

void sl_quant_q5_1_blocks(const float *x, sl_block_q5_1 *y, int64_t nb)
{
    for (int64_t i = 0; i < nb; i++, x += SL_QK) {
        uint8_t q[SL_QK];
        float d, m;
        affine_levels(x, 31, q, &d, &m);
        y[i].d = sl_f32_to_f16(d);
        y[i].m = sl_f32_to_f16(m);
        pack_fifth_bits(q, y[i].qh);
        pack_nibbles(q, y[i].qs);
    }
}
