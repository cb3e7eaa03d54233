/* The 32-element formats Q4_0, Q4_1, Q5_0, Q5_1: scalar dequantizers,
 * reference quantizers and their type-table rows (Q8_0's is quant_act.c's). These are the straightforward min/max quantizers: they reproduce the
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

/* One block's levels (symmetric around 2^(bits-1), or affine from min when m
 * is set), f16 scale and min, the fifth bits (qh set: 5-bit formats) and the
 * nibbles. */
static void legacy_block(const float *x, int bits, sl_f16 *d, sl_f16 *m, uint8_t *qh, uint8_t *qs)
{
    uint8_t q[SL_QK];
    float df, mf = 0.0f;
    if (m) affine_levels(x, (1 << bits) - 1, q, &df, &mf);
    else sym_levels(x, 1 << (bits - 1), q, &df);
    *d = sl_f32_to_f16(df);
    if (m) *m = sl_f32_to_f16(mf);
    if (qh) pack_fifth_bits(q, qh);
    pack_nibbles(q, qs);
}

static uint32_t load_u32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* One block's values: (q - off) * d, or q * d + m when m is set; q takes its
 * fifth bit from qh when set. Each product and sum rounded on its own. */
static void legacy_deq(sl_f16 dh, const sl_f16 *m, const uint8_t *qh, const uint8_t *qs, int off, float *y)
{
    float d = sl_f16_to_f32(dh), mf = m ? sl_f16_to_f32(*m) : 0.0f;
    uint32_t h = qh ? load_u32(qh) : 0;
    for (int j = 0; j < SL_QK / 2; j++) {
        int lo = (qs[j] & 15) | (int)((h >> j) & 1) << 4;
        int hi = (qs[j] >> 4) | (int)((h >> (j + 16)) & 1) << 4;
        if (m) {
            y[j] = (float)lo * d + mf;
            y[j + 16] = (float)hi * d + mf;
        } else {
            y[j] = (float)(lo - off) * d;
            y[j + 16] = (float)(hi - off) * d;
        }
    }
}

/* Type t's dequantizer, quantizer and row: BITS per level, M / QH the block's
 * min and fifth-bit fields (NULL: none), OFF the symmetric offset. */
#define LEGACY_ROW(t, BITS, OFF, M, QH, VT)                                                      \
    static void deq_##t(const void *src, float *y, int64_t nb)                                  \
    {                                                                                            \
        const sl_block_##t *b = src;                                                             \
        for (int64_t i = 0; i < nb; i++, b++, y += SL_QK) legacy_deq(b->d, M, QH, b->qs, OFF, y); \
    }                                                                                            \
    static int quant_##t(const float *x, void *dst, int64_t nb, const float *imatrix)            \
    {                                                                                            \
        sl_block_##t *b = dst;                                                                   \
        (void)imatrix;                                                                           \
        for (int64_t i = 0; i < nb; i++, b++, x += SL_QK) legacy_block(x, BITS, &b->d, M, QH, b->qs); \
        return 0;                                                                                \
    }                                                                                            \
    const sl_quant_traits sl_qtraits_##t = { deq_##t, quant_##t, VT };

LEGACY_ROW(q4_0, 4, 8, NULL, NULL, SL_GGML_Q8_0)
LEGACY_ROW(q4_1, 4, 0, &b->m, NULL, SL_GGML_Q8_1)
LEGACY_ROW(q5_0, 5, 16, NULL, b->qh, SL_GGML_Q8_0)
LEGACY_ROW(q5_1, 5, 0, &b->m, b->qh, SL_GGML_Q8_1)
