/* Scalar dot products: the oracle every SIMD kernel is tested against.
 *
 * Each block type contributes per block a term a - b, where a and b are
 * float products of the block's scales and EXACT integer sums (what every
 * SIMD level computes too); only the order in which the per-block float
 * terms are combined differs between levels. The scalar code sums them in
 * double. sl_dot_scalar_mag() returns sum(|a| + |b|) so tests can derive a
 * rounding bound (see tests/test_kern_dot.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kern_internal.h"
#include "dot_iqgrid.h"

typedef sl_dot_blk_fn blk_fn;

/* "am" (absolute mode, for sl_dot_scalar_mag): every integer factor is
 * replaced by its magnitude, and the quant value q by |q| + 2*offset, which
 * also bounds SIMD forms that use the unsigned q + offset and subtract the
 * offset via bsums. Scale products are taken in magnitude too. */
#define AQ(q, off) (am ? abs(q) + 2 * (off) : (q))
#define AY(v) (am ? abs(v) : (v))
#define AF(f) (am ? fabsf(f) : (f))
static int bsum_abs(const sl_block_q8_k *y, int s)
{
    int t = 0;
    for (int l = 0; l < 16; l++) t += abs(y->qs[16 * s + l]);
    return t;
}
#define BS(y, s) (am ? bsum_abs(y, s) : (y)->bsums[s])

static inline float h2f(sl_f16 h) { return sl_f16_to_f32(h); }

/* ---- legacy 32-element formats ------------------------------------- */

static void blk_q4_0(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_q4_0 *x = (const sl_block_q4_0 *)vx + i;
    const sl_block_q8_0 *y = (const sl_block_q8_0 *)vy + i;
    int32_t s = 0;
    for (int j = 0; j < 16; j++)
        s += AQ((x->qs[j] & 15) - 8, 8) * AY(y->qs[j]) + AQ((x->qs[j] >> 4) - 8, 8) * AY(y->qs[j + 16]);
    *a = (float)s * AF(h2f(x->d) * h2f(y->d));
    *b = 0.0f;
}

static void blk_q4_1(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_q4_1 *x = (const sl_block_q4_1 *)vx + i;
    const sl_block_q8_1 *y = (const sl_block_q8_1 *)vy + i;
    int32_t s = 0;
    for (int j = 0; j < 16; j++)
        s += (x->qs[j] & 15) * AY(y->qs[j]) + (x->qs[j] >> 4) * AY(y->qs[j + 16]);
    *a = (float)s * AF(h2f(x->d) * h2f(y->d));
    *b = -AF(h2f(x->m) * h2f(y->s));     /* min term uses the stored f16 s */
}

static inline uint32_t load_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* q5_0 (off 16) and q5_1 (off 0): sum of (q - off) * y over the block. */
static int32_t q5_sum(const uint8_t *qs, const uint8_t *qh4, const int8_t *yq, int off, int am)
{
    uint32_t qh = load_u32(qh4);
    int32_t s = 0;
    for (int j = 0; j < 16; j++) {
        int lo = (int)((qs[j] & 15) | (((qh >> j) & 1) << 4)) - off;
        int hi = (int)((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - off;
        s += AQ(lo, off) * AY(yq[j]) + AQ(hi, off) * AY(yq[j + 16]);
    }
    return s;
}

static void blk_q5_0(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_q5_0 *x = (const sl_block_q5_0 *)vx + i;
    const sl_block_q8_0 *y = (const sl_block_q8_0 *)vy + i;
    *a = (float)q5_sum(x->qs, x->qh, y->qs, 16, am) * AF(h2f(x->d) * h2f(y->d));
    *b = 0.0f;
}

static void blk_q5_1(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_q5_1 *x = (const sl_block_q5_1 *)vx + i;
    const sl_block_q8_1 *y = (const sl_block_q8_1 *)vy + i;
    *a = (float)q5_sum(x->qs, x->qh, y->qs, 0, am) * AF(h2f(x->d) * h2f(y->d));
    *b = -AF(h2f(x->m) * h2f(y->s));
}

static void blk_q8_0(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_q8_0 *x = (const sl_block_q8_0 *)vx + i;
    const sl_block_q8_0 *y = (const sl_block_q8_0 *)vy + i;
    int32_t s = 0;
    for (int j = 0; j < 32; j++) s += AY(x->qs[j]) * AY(y->qs[j]);
    *a = (float)s * AF(h2f(x->d) * h2f(y->d));
    *b = 0.0f;
}

/* ---- K-quants (256-element super-blocks, Q8_K activations) ----------- */

static void blk_q2_k(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_q2_k *x = (const sl_block_q2_k *)vx + i;
    const sl_block_q8_k *y = (const sl_block_q8_k *)vy + i;
    int32_t isum = 0, msum = 0;
    for (int s = 0; s < 16; s++) msum += (x->scales[s] >> 4) * BS(y, s);
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
            for (int half = 0; half < 2; half++) {
                int s = 8 * h + 2 * k + half, sub = 0;
                for (int l = 16 * half; l < 16 * half + 16; l++)
                    sub += ((x->qs[32 * h + l] >> (2 * k)) & 3) * AY(y->qs[128 * h + 32 * k + l]);
                isum += (x->scales[s] & 15) * sub;
            }
    *a = AF(h2f(x->d) * y->d) * (float)isum;
    *b = AF(h2f(x->dmin) * y->d) * (float)msum;
}

/* 16 six-bit scales of q3_K, +32 bias removed. */
void sl_q3k_scales(const uint8_t *sc12, int8_t out[16])
{
    uint32_t w[4];
    sl_q3k_words(sc12, w);
    for (int j = 0; j < 16; j++) out[j] = (int8_t)((int)((w[j / 4] >> (8 * (j % 4))) & 0xff) - 32);
}

static void blk_q3_k(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_q3_k *x = (const sl_block_q3_k *)vx + i;
    const sl_block_q8_k *y = (const sl_block_q8_k *)vy + i;
    int8_t sc[16];
    sl_q3k_scales(x->scales, sc);
    int32_t isum = 0;
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
            for (int half = 0; half < 2; half++) {
                int s = 8 * h + 2 * k + half, sub = 0;
                for (int l = 16 * half; l < 16 * half + 16; l++) {
                    int q = ((x->qs[32 * h + l] >> (2 * k)) & 3)
                          - ((x->hmask[l] & (1 << (4 * h + k))) ? 0 : 4);
                    sub += AQ(q, 4) * AY(y->qs[128 * h + 32 * k + l]);
                }
                isum += AY(sc[s]) * sub;
            }
    *a = AF(h2f(x->d) * y->d) * (float)isum;
    *b = 0.0f;
}

/* 6-bit scale and min of sub-block j of q4_K / q5_K. */
static void q4k_scale_min(const uint8_t *s, int j, int *sc, int *m)
{
    if (j < 4) { *sc = s[j] & 63; *m = s[j + 4] & 63; }
    else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* q4_K (qh NULL) and q5_K (qh: the fifth bits): scaled sums and min sums. */
static void q45k_sums(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh,
                      const sl_block_q8_k *y, int am, int32_t *isum, int32_t *msum)
{
    *isum = *msum = 0;
    for (int p = 0; p < 4; p++) {
        int sc0, m0, sc1, m1, s0 = 0, s1 = 0;
        q4k_scale_min(scales, 2 * p, &sc0, &m0);
        q4k_scale_min(scales, 2 * p + 1, &sc1, &m1);
        for (int l = 0; l < 32; l++) {
            int q0 = (qs[32 * p + l] & 15) | (qh ? ((qh[l] >> (2 * p)) & 1) << 4 : 0);
            int q1 = (qs[32 * p + l] >> 4) | (qh ? ((qh[l] >> (2 * p + 1)) & 1) << 4 : 0);
            s0 += q0 * AY(y->qs[64 * p + l]);
            s1 += q1 * AY(y->qs[64 * p + 32 + l]);
        }
        *isum += sc0 * s0 + sc1 * s1;
        *msum += m0 * (BS(y, 4 * p) + BS(y, 4 * p + 1))
               + m1 * (BS(y, 4 * p + 2) + BS(y, 4 * p + 3));
    }
}

static void blk_q4_k(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_q4_k *x = (const sl_block_q4_k *)vx + i;
    const sl_block_q8_k *y = (const sl_block_q8_k *)vy + i;
    int32_t isum, msum;
    q45k_sums(x->scales, x->qs, NULL, y, am, &isum, &msum);
    *a = AF(h2f(x->d) * y->d) * (float)isum;
    *b = AF(h2f(x->dmin) * y->d) * (float)msum;
}

static void blk_q5_k(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_q5_k *x = (const sl_block_q5_k *)vx + i;
    const sl_block_q8_k *y = (const sl_block_q8_k *)vy + i;
    int32_t isum, msum;
    q45k_sums(x->scales, x->qs, x->qh, y, am, &isum, &msum);
    *a = AF(h2f(x->d) * y->d) * (float)isum;
    *b = AF(h2f(x->dmin) * y->d) * (float)msum;
}

static void blk_q6_k(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    const sl_block_q6_k *x = (const sl_block_q6_k *)vx + i;
    const sl_block_q8_k *y = (const sl_block_q8_k *)vy + i;
    int32_t isum = 0;
    for (int h = 0; h < 2; h++) {
        const uint8_t *L = x->ql + 64 * h, *H = x->qh + 32 * h;
        const int8_t *S = x->scales + 8 * h, *Y = y->qs + 128 * h;
        for (int g = 0; g < 4; g++)
            for (int half = 0; half < 2; half++) {
                int sub = 0;
                for (int l = 16 * half; l < 16 * half + 16; l++) {
                    int lo = (g & 1) ? L[l + 32] : L[l];
                    int q = ((g & 2) ? (lo >> 4) : (lo & 15)) | (((H[l] >> (2 * g)) & 3) << 4);
                    sub += AQ(q - 32, 32) * AY(Y[32 * g + l]);
                }
                isum += AY(S[half + 2 * g]) * sub;
            }
    }
    *a = AF(h2f(x->d) * y->d) * (float)isum;
    *b = 0.0f;
}

/* ---- float types: one "block" per element ------------------------------ */

static void blk_f32(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    *a = AF(((const float *)vx)[i] * ((const float *)vy)[i]);
    *b = 0.0f;
}

static void blk_f16(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    *a = AF(h2f(((const sl_f16 *)vx)[i]) * h2f(((const sl_f16 *)vy)[i]));
    *b = 0.0f;
}

static void blk_bf16(const void *vx, const void *vy, int64_t i, float *a, float *b, int am)
{
    *a = AF(sl_bf16_to_f32(((const sl_bf16 *)vx)[i]) * sl_bf16_to_f32(((const sl_bf16 *)vy)[i]));
    *b = 0.0f;
}

static blk_fn blk_for(int type);

static inline float run(blk_fn f, int type, int64_t n, const void *x, const void *y)
{
    int64_t nb = n / sl_gguf_block_elems(type);
    double s = 0.0;
    for (int64_t i = 0; i < nb; i++) {
        float a, b;
        f(x, y, i, &a, &b, 0);
        s += (double)a - (double)b;
    }
    return (float)s;
}

float sl_dot_scalar_mag(int type, int64_t n, const void *x, const void *y)
{
    blk_fn f = blk_for(type);
    if (!f) return 0.0f;
    int64_t nb = n / sl_gguf_block_elems(type);
    double s = 0.0;
    for (int64_t i = 0; i < nb; i++) {
        float a, b;
        f(x, y, i, &a, &b, 1);
        s += fabs((double)a) + fabs((double)b);
    }
    return (float)s;
}

/* The oracle's vec_dot of a type from its block kernel BLK. */
#define DEF(T, ID, BLK) \
    static void dot_##T(int64_t n, float *s, const void *x, const void *y) { *s = run(BLK, ID, n, x, y); }
#define KQ_DEF(T, ID, ...) DEF(T, ID, blk_##T)
#define EXT_DEF(T, ID, ...) DEF(T, ID, sl_dot_blk_##T)
SL_KQ_EACH(KQ_DEF) SL_IQ4_EACH(EXT_DEF) SL_IQGRID_EACH(EXT_DEF)
DEF(f32, SL_GGML_F32, blk_f32) DEF(f16, SL_GGML_F16, blk_f16) DEF(bf16, SL_GGML_BF16, blk_bf16)

/* The oracle's types: block kernel and vec_dot of each. */
#define ROW(T, ID, BLK) [ID] = {BLK, dot_##T},
#define KQ_ROW(T, ID, ...) ROW(T, ID, blk_##T)
#define EXT_ROW(T, ID, ...) ROW(T, ID, sl_dot_blk_##T)
static const struct { blk_fn blk; sl_vec_dot_fn dot; } scalar_types[SL_GGML_TYPE_COUNT] = {
    SL_KQ_EACH(KQ_ROW) SL_IQ4_EACH(EXT_ROW) SL_IQGRID_EACH(EXT_ROW)
    ROW(f32, SL_GGML_F32, blk_f32) ROW(f16, SL_GGML_F16, blk_f16) ROW(bf16, SL_GGML_BF16, blk_bf16)
};

static blk_fn blk_for(int type)
{
    return type >= 0 && type < SL_GGML_TYPE_COUNT ? scalar_types[type].blk : NULL;
}

void sl_dot_fill_scalar(sl_kern *k)
{
    for (int t = 0; t < SL_GGML_TYPE_COUNT; t++)
        if (scalar_types[t].dot)
            k->vec_dot[t] = scalar_types[t].dot;
}
