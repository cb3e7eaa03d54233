/* Scalar dequantizers. Every product and sum is rounded separately, in the
 * order of the format's definition (build uses -ffp-contract=off), so the
 * results equal ggml's to_float bit for bit. */
#include <string.h>

#include "quant_internal.h"

#define F16(h) sl_f16_to_f32(h)

static void deq_f32(const void *src, float *y, int64_t n) { memcpy(y, src, (size_t)n * sizeof(float)); }

static void deq_f16(const void *src, float *y, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) { sl_f16 h; memcpy(&h, p + 2 * i, 2); y[i] = sl_f16_to_f32(h); }
}

static void deq_bf16(const void *src, float *y, int64_t n)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n; i++) { sl_bf16 h; memcpy(&h, p + 2 * i, 2); y[i] = sl_bf16_to_f32(h); }
}

static void deq_q4_0(const void *src, float *y, int64_t n)
{
    const sl_block_q4_0 *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, y += SL_QK) {
        float d = F16(b->d);
        for (int j = 0; j < SL_QK / 2; j++) {
            y[j] = (float)((b->qs[j] & 15) - 8) * d;
            y[j + 16] = (float)((b->qs[j] >> 4) - 8) * d;
        }
    }
}

static void deq_q4_1(const void *src, float *y, int64_t n)
{
    const sl_block_q4_1 *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, y += SL_QK) {
        float d = F16(b->d), m = F16(b->m);
        for (int j = 0; j < SL_QK / 2; j++) {
            y[j] = (float)(b->qs[j] & 15) * d + m;
            y[j + 16] = (float)(b->qs[j] >> 4) * d + m;
        }
    }
}

static uint32_t load_u32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static void deq_q5_0(const void *src, float *y, int64_t n)
{
    const sl_block_q5_0 *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, y += SL_QK) {
        float d = F16(b->d);
        uint32_t qh = load_u32(b->qh);
        for (int j = 0; j < SL_QK / 2; j++) {
            int lo = (b->qs[j] & 15) | (int)((qh >> j) & 1) << 4;
            int hi = (b->qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
            y[j] = (float)(lo - 16) * d;
            y[j + 16] = (float)(hi - 16) * d;
        }
    }
}

static void deq_q5_1(const void *src, float *y, int64_t n)
{
    const sl_block_q5_1 *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, y += SL_QK) {
        float d = F16(b->d), m = F16(b->m);
        uint32_t qh = load_u32(b->qh);
        for (int j = 0; j < SL_QK / 2; j++) {
            int lo = (b->qs[j] & 15) | (int)((qh >> j) & 1) << 4;
            int hi = (b->qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
            y[j] = (float)lo * d + m;
            y[j + 16] = (float)hi * d + m;
        }
    }
}

static void deq_q8_0(const void *src, float *y, int64_t n)
{
    const sl_block_q8_0 *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, y += SL_QK) {
        float d = F16(b->d);
        for (int j = 0; j < SL_QK; j++) y[j] = (float)b->qs[j] * d;
    }
}

static void deq_q8_1(const void *src, float *y, int64_t n)
{
    const sl_block_q8_1 *b = src;
    for (int64_t i = 0; i < n / SL_QK; i++, b++, y += SL_QK) {
        float d = F16(b->d);
        for (int j = 0; j < SL_QK; j++) y[j] = (float)b->qs[j] * d;
    }
}

static void deq_q2_k(const void *src, float *y, int64_t n)
{
    const sl_block_q2_k *b = src;
    for (int64_t i = 0; i < n / SL_QKK; i++, b++) {
        float d = F16(b->d), dmin = F16(b->dmin);
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++)
                for (int half = 0; half < 2; half++) {
                    uint8_t sc = b->scales[8 * h + 2 * k + half];
                    float dl = d * (float)(sc & 15), ml = dmin * (float)(sc >> 4);
                    for (int l = 16 * half; l < 16 * half + 16; l++) {
                        int q = (b->qs[32 * h + l] >> (2 * k)) & 3;
                        y[128 * h + 32 * k + l] = dl * (float)q - ml;
                    }
                }
        y += SL_QKK;
    }
}

/* q3_K's 16 six-bit scales, stored +32, as signed values. */
static void q3k_scales(const uint8_t *s, int8_t out[16])
{
    for (int j = 0; j < 16; j++) {
        int lo = j < 8 ? s[j] & 15 : s[j - 8] >> 4;
        int hi = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
        out[j] = (int8_t)((lo | hi << 4) - 32);
    }
}

static void deq_q3_k(const void *src, float *y, int64_t n)
{
    const sl_block_q3_k *b = src;
    for (int64_t i = 0; i < n / SL_QKK; i++, b++) {
        float d = F16(b->d);
        int8_t sc[16];
        q3k_scales(b->scales, sc);
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++)
                for (int half = 0; half < 2; half++) {
                    float dl = d * (float)sc[8 * h + 2 * k + half];
                    for (int l = 16 * half; l < 16 * half + 16; l++) {
                        int q = (b->qs[32 * h + l] >> (2 * k)) & 3;
                        if (!(b->hmask[l] & (1u << (4 * h + k)))) q -= 4;
                        y[128 * h + 32 * k + l] = dl * (float)q;
                    }
                }
        y += SL_QKK;
    }
}

/* q4_K / q5_K: 6-bit scale and min of sub-block j from the 12 packed bytes. */
static void k4_scale_min(const uint8_t *s, int j, int *sc, int *m)
{
    if (j < 4) { *sc = s[j] & 63; *m = s[j + 4] & 63; }
    else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* q4_K and q5_K: the same 6-bit scale/min pairs over 8 groups of 32; q5_K adds
 * a fifth bit per element from qh (NULL for q4_K). */
static void deq_k45(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, float d, float dmin,
                    float *y)
{
    for (int j = 0; j < 8; j++) {
        int sc, m;
        k4_scale_min(scales, j, &sc, &m);
        float d1 = d * (float)sc, m1 = dmin * (float)m;
        const uint8_t *q = qs + 32 * (j / 2);
        int shift = 4 * (j & 1);
        for (int l = 0; l < 32; l++) {
            int v = ((q[l] >> shift) & 15) | (qh ? ((qh[l] >> j) & 1) << 4 : 0);
            y[32 * j + l] = d1 * (float)v - m1;
        }
    }
}

static void deq_q4_k(const void *src, float *y, int64_t n)
{
    const sl_block_q4_k *b = src;
    for (int64_t i = 0; i < n / SL_QKK; i++, b++, y += SL_QKK)
        deq_k45(b->scales, b->qs, NULL, F16(b->d), F16(b->dmin), y);
}

static void deq_q5_k(const void *src, float *y, int64_t n)
{
    const sl_block_q5_k *b = src;
    for (int64_t i = 0; i < n / SL_QKK; i++, b++, y += SL_QKK)
        deq_k45(b->scales, b->qs, b->qh, F16(b->d), F16(b->dmin), y);
}

static void deq_q6_k(const void *src, float *y, int64_t n)
{
    const sl_block_q6_k *b = src;
    for (int64_t i = 0; i < n / SL_QKK; i++, b++) {
        float d = F16(b->d);
        for (int h = 0; h < 2; h++) {
            const uint8_t *L = b->ql + 64 * h, *H = b->qh + 32 * h;
            const int8_t *S = b->scales + 8 * h;
            for (int g = 0; g < 4; g++) {
                const uint8_t *lq = L + 32 * (g & 1);
                int lshift = 4 * (g >> 1);
                for (int l = 0; l < 32; l++) {
                    int q = (((lq[l] >> lshift) & 15) | (((H[l] >> (2 * g)) & 3) << 4)) - 32;
                    y[128 * h + 32 * g + l] = (d * (float)S[l / 16 + 2 * g]) * (float)q;
                }
            }
        }
        y += SL_QKK;
    }
}

static void deq_q8_k(const void *src, float *y, int64_t n)
{
    const sl_block_q8_k *b = src;
    for (int64_t i = 0; i < n / SL_QKK; i++, b++, y += SL_QKK)
        for (int j = 0; j < SL_QKK; j++) y[j] = b->d * (float)b->qs[j];
}

int sl_quant_dequantize_row(int type, const void *src, float *dst, int64_t n)
{
    if (!sl_gguf_block_elems((uint32_t)type)) return SL_EUNSUPPORTED;
    if (n == 0) return 0;
    if (!sl_gguf_row_bytes((uint32_t)type, n)) return SL_EINVAL;  /* n < 0 or a partial block */
    if (!src || !dst) return SL_EINVAL;
    switch (type) {
    case SL_GGML_F32:  deq_f32(src, dst, n); break;
    case SL_GGML_F16:  deq_f16(src, dst, n); break;
    case SL_GGML_BF16: deq_bf16(src, dst, n); break;
    case SL_GGML_Q4_0: deq_q4_0(src, dst, n); break;
    case SL_GGML_Q4_1: deq_q4_1(src, dst, n); break;
    case SL_GGML_Q5_0: deq_q5_0(src, dst, n); break;
    case SL_GGML_Q5_1: deq_q5_1(src, dst, n); break;
    case SL_GGML_Q8_0: deq_q8_0(src, dst, n); break;
    case SL_GGML_Q8_1: deq_q8_1(src, dst, n); break;
    case SL_GGML_Q2_K: deq_q2_k(src, dst, n); break;
    case SL_GGML_Q3_K: deq_q3_k(src, dst, n); break;
    case SL_GGML_Q4_K: deq_q4_k(src, dst, n); break;
    case SL_GGML_Q5_K: deq_q5_k(src, dst, n); break;
    case SL_GGML_Q6_K: deq_q6_k(src, dst, n); break;
    case SL_GGML_Q8_K: deq_q8_k(src, dst, n); break;
    case SL_GGML_IQ4_NL: sl_quant_deq_iq4_nl(src, dst, n); break;
    case SL_GGML_IQ4_XS: sl_quant_deq_iq4_xs(src, dst, n); break;
    case SL_GGML_MXFP4: sl_quant_deq_mxfp4(src, dst, n); break;
    case SL_GGML_TQ1_0: sl_quant_deq_tq1_0(src, dst, n); break;
    case SL_GGML_TQ2_0: sl_quant_deq_tq2_0(src, dst, n); break;
    case SL_GGML_IQ2_XXS: case SL_GGML_IQ2_XS: case SL_GGML_IQ2_S: case SL_GGML_IQ3_XXS:
    case SL_GGML_IQ3_S: case SL_GGML_IQ1_S: case SL_GGML_IQ1_M:
        return sl_quant_iqgrid_dequantize(type, src, dst, n / SL_QKK);
    default: return SL_EUNSUPPORTED;
    }
    return 0;
}
