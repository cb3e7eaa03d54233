/* The ternary formats TQ1_0 (base-3 digits, five per byte) and TQ2_0 (2 bits
 * per value): value = (t - 1) * d, t in {0, 1, 2}, one f16 d per 256
 * elements. Scalar dequantizers and our own quantizer: for a fixed number k
 * of nonzero values the best choice is the k largest magnitudes with d their
 * mean (error sum x^2 - S_k^2 / k), so the k maximizing S_k^2 / k is taken;
 * the values are then rounded at the stored f16 d. (ggml takes d = max |x|,
 * which zeroes most of a Gaussian block.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant_internal.h"

/* Digit n (0 = most significant of five) of a TQ1_0 byte. */
static int tq1_digit(uint8_t b, int n)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    uint8_t v = (uint8_t)(b * pow3[n]);          /* mod 256 */
    return (v * 3) >> 8;
}

void sl_quant_tq1_0_digits(const sl_block_tq1_0 *b, uint8_t t[SL_QKK])
{
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 32; m++) t[32 * n + m] = (uint8_t)tq1_digit(b->qs[m], n);
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 16; m++) t[160 + 16 * n + m] = (uint8_t)tq1_digit(b->qs[32 + m], n);
    for (int n = 0; n < 4; n++)
        for (int m = 0; m < 4; m++) t[240 + 4 * n + m] = (uint8_t)tq1_digit(b->qh[m], n);
}

static void deq_tq1_0(const void *src, float *y, int64_t nb)
{
    const sl_block_tq1_0 *b = src;
    for (int64_t i = 0; i < nb; i++, b++, y += SL_QKK) {
        uint8_t t[SL_QKK];
        sl_quant_tq1_0_digits(b, t);
        float d = sl_f16_to_f32(b->d);
        for (int j = 0; j < SL_QKK; j++) y[j] = (float)(t[j] - 1) * d;
    }
}

static void deq_tq2_0(const void *src, float *y, int64_t nb)
{
    const sl_block_tq2_0 *b = src;
    for (int64_t i = 0; i < nb; i++, b++, y += SL_QKK) {
        float d = sl_f16_to_f32(b->d);
        for (int h = 0; h < 2; h++)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++)
                    y[128 * h + 32 * l + m] = (float)(((b->qs[32 * h + m] >> (2 * l)) & 3) - 1) * d;
    }
}

static int cmp_desc(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

/* d (as stored) and the digits t of one 256-element block. */
static sl_f16 ternary_block(const float *x, uint8_t t[SL_QKK])
{
    float a[SL_QKK];
    for (int j = 0; j < SL_QKK; j++) a[j] = isfinite(x[j]) ? fabsf(x[j]) : 0.0f;
    qsort(a, SL_QKK, sizeof a[0], cmp_desc);
    double s = 0.0, best = 0.0, best_d = 0.0;
    for (int k = 1; k <= SL_QKK; k++) {
        s += a[k - 1];
        if (s * s / k > best) { best = s * s / k; best_d = s / k; }
    }
    sl_f16 dh = sl_f32_to_f16((float)best_d);
    float d = sl_f16_to_f32(dh), id = d > 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < SL_QKK; j++) {
        float v = x[j] * id;
        t[j] = (uint8_t)(v >= 0.5f ? 2 : v <= -0.5f ? 0 : 1);
    }
    return dh;
}

/* The digits t of a block in TQ2_0's layout (d is the caller's). */
static void pack_tq2_0(const uint8_t *t, sl_block_tq2_0 *b)
{
    memset(b->qs, 0, sizeof b->qs);
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 4; l++)
            for (int m = 0; m < 32; m++)
                b->qs[32 * h + m] |= (uint8_t)(t[128 * h + 32 * l + m] << (2 * l));
}

/* Five digits (t[0] most significant) as a byte: ceil(v * 256 / 243), which
 * tq1_digit() reads back exactly. */
static uint8_t tq1_pack(const uint8_t *t, int stride, int ndig)
{
    int v = 0;
    for (int n = 0; n < 5; n++) v = 3 * v + (n < ndig ? t[n * stride] : 0);
    return (uint8_t)((v * 256 + 242) / 243);
}

/* The digits t of a block in TQ1_0's layout (d is the caller's). */
static void pack_tq1_0(const uint8_t *t, sl_block_tq1_0 *b)
{
    for (int m = 0; m < 32; m++) b->qs[m] = tq1_pack(t + m, 32, 5);
    for (int m = 0; m < 16; m++) b->qs[32 + m] = tq1_pack(t + 160 + m, 16, 5);
    for (int m = 0; m < 4; m++) b->qh[m] = tq1_pack(t + 240 + m, 4, 4);
}

/* A type's row: per block, d and the digits (ternary_block), then its packing. */
#define TERNARY_ROW(t)                                                                    \
    static int quant_##t(const float *x, void *dst, int64_t nb, const float *imatrix)     \
    {                                                                                     \
        sl_block_##t *y = dst;                                                            \
        (void)imatrix;                                                                    \
        for (int64_t i = 0; i < nb; i++, x += SL_QKK) {                                   \
            uint8_t digits[SL_QKK];                                                       \
            y[i].d = ternary_block(x, digits);                                            \
            pack_##t(digits, &y[i]);                                                      \
        }                                                                                 \
        return 0;                                                                         \
    }                                                                                     \
    const sl_quant_traits sl_qtraits_##t = { deq_##t, quant_##t, SL_GGML_Q8_K };
TERNARY_ROW(tq1_0)
TERNARY_ROW(tq2_0)
