/* Activation quantizers: f32 -> Q8_0 / Q8_1 / Q8_K / F16 / BF16 with exactly
 * the reference semantics the dot kernels are validated against (golden
 * README): bytes equal ggml's reference from_float. With their dequantizers,
 * the type-table rows of these formats and of F32. */
#include <math.h>
#include <string.h>

#include "quant_internal.h"

/* roundf'ed value to int8 without UB on inf/nan input (garbage in, 0 out). */
static int8_t to_i8(float r)
{
    if (!(r >= -128.0f && r <= 127.0f)) return r > 0.0f ? 127 : r < 0.0f ? -128 : 0;
    return (int8_t)r;
}

/* d = amax/127 (float); q = roundf(x / d) computed as x * (1/d), ties away. */
void sl_quant_row_q8_0(const float *x, sl_block_q8_0 *y, int64_t n)
{
    for (int64_t i = 0; i < n / SL_QK; i++, x += SL_QK) {
        float amax = 0.0f;
        for (int j = 0; j < SL_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = sl_f32_to_f16(d);
        for (int j = 0; j < SL_QK; j++) y[i].qs[j] = to_i8(roundf(x[j] * id));
    }
}

/* As q8_0 plus s = d * sum(q) with the float d, stored as f16. */
void sl_quant_row_q8_1(const float *x, sl_block_q8_1 *y, int64_t n)
{
    for (int64_t i = 0; i < n / SL_QK; i++, x += SL_QK) {
        float amax = 0.0f;
        for (int j = 0; j < SL_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        int sum = 0;
        for (int j = 0; j < SL_QK; j++) {
            int q = to_i8(roundf(x[j] * id));
            y[i].qs[j] = (int8_t)q;
            sum += q;
        }
        y[i].d = sl_f32_to_f16(d);
        y[i].s = sl_f32_to_f16((float)sum * d);
    }
}

/* The signed element of largest magnitude (first on ties) maps to -127. */
void sl_quant_row_q8_k(const float *x, sl_block_q8_k *y, int64_t n)
{
    for (int64_t i = 0; i < n / SL_QKK; i++, x += SL_QKK) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < SL_QKK; j++) {
            float a = fabsf(x[j]);
            if (a > amax) { amax = a; max = x[j]; }
        }
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        float iscale = -127.0f / max;
        for (int j = 0; j < SL_QKK; j++) {
            /* min(127, round(v)) == round(min(127, v)); clamping first also
             * keeps inf/nan input away from an undefined conversion */
            float v = iscale * x[j];
            v = v < 127.0f ? v : 127.0f;
            v = v > -128.0f ? v : -128.0f;
            y[i].qs[j] = (int8_t)sl_rint(v);
        }
        for (int g = 0; g < SL_QKK / 16; g++) {
            int s = 0;
            for (int l = 0; l < 16; l++) s += y[i].qs[16 * g + l];
            y[i].bsums[g] = (int16_t)s;
        }
        y[i].d = 1.0f / iscale;
    }
}

void sl_quant_row_f16(const float *x, sl_f16 *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = sl_f32_to_f16(x[i]);
}

void sl_quant_row_bf16(const float *x, sl_bf16 *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] = sl_f32_to_bf16(x[i]);
}

/* ---- the rows of the formats whose quantizer is one of the above ---------- */

#define F16(h) sl_f16_to_f32(h)

static void deq_f32(const void *src, float *y, int64_t nb) { memcpy(y, src, (size_t)nb * sizeof(float)); }

static void deq_f16(const void *src, float *y, int64_t nb)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < nb; i++) { sl_f16 h; memcpy(&h, p + 2 * i, 2); y[i] = sl_f16_to_f32(h); }
}

static void deq_bf16(const void *src, float *y, int64_t nb)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < nb; i++) { sl_bf16 h; memcpy(&h, p + 2 * i, 2); y[i] = sl_bf16_to_f32(h); }
}

/* 32 int8 levels times their block's f16 scale (Q8_0, Q8_1). */
static void deq_q8_32(sl_f16 dh, const int8_t *qs, float *y)
{
    float d = F16(dh);
    for (int j = 0; j < SL_QK; j++) y[j] = (float)qs[j] * d;
}

static void deq_q8_0(const void *src, float *y, int64_t nb)
{
    const sl_block_q8_0 *b = src;
    for (int64_t i = 0; i < nb; i++, y += SL_QK) deq_q8_32(b[i].d, b[i].qs, y);
}

static void deq_q8_1(const void *src, float *y, int64_t nb)
{
    const sl_block_q8_1 *b = src;
    for (int64_t i = 0; i < nb; i++, y += SL_QK) deq_q8_32(b[i].d, b[i].qs, y);
}

static void deq_q8_k(const void *src, float *y, int64_t nb)
{
    const sl_block_q8_k *b = src;
    for (int64_t i = 0; i < nb; i++, b++, y += SL_QKK)
        for (int j = 0; j < SL_QKK; j++) y[j] = b->d * (float)b->qs[j];
}

static int quant_f32(const float *x, void *y, int64_t nb, const float *imatrix)
{
    (void)imatrix;
    memcpy(y, x, (size_t)nb * sizeof(float));
    return 0;
}

/* The activation quantizers as rows (nb blocks, no importance matrix). */
#define ACT_ROW(t, BE, VT)                                                              \
    static int quant_##t(const float *x, void *y, int64_t nb, const float *imatrix)     \
    {                                                                                   \
        (void)imatrix;                                                                  \
        sl_quant_row_##t(x, y, nb * (BE));                                              \
        return 0;                                                                       \
    }                                                                                   \
    const sl_quant_traits sl_qtraits_##t = { deq_##t, quant_##t, VT };
ACT_ROW(f16, 1, SL_GGML_F16)
ACT_ROW(bf16, 1, SL_GGML_BF16)
ACT_ROW(q8_0, SL_QK, SL_GGML_Q8_0)
ACT_ROW(q8_1, SL_QK, -1)       /* activation-only */
ACT_ROW(q8_k, SL_QKK, -1)
const sl_quant_traits sl_qtraits_f32 = { deq_f32, quant_f32, SL_GGML_F32 };
