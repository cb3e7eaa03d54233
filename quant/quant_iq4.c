/* The 4-bit codebook formats IQ4_NL, IQ4_XS and MXFP4: their level tables,
 * scalar dequantizers and our own quantizers. A value is scale * level with
 * 16 fixed levels (non-uniform for IQ4_*, twice the E2M1 values for MXFP4).
 * Quantizers search the scale: each candidate puts the block's extreme
 * element on or near an end level, every element takes its nearest level,
 * and the scale is refitted by (weighted) least squares on that assignment;
 * the candidate with the smallest error wins. Weights qw (an importance
 * matrix row, NULL: all 1) only weight that error. */
#include <math.h>
#include <string.h>

#include "quant_internal.h"

const int8_t sl_kvalues_iq4nl[16] = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113
};
const int8_t sl_kvalues_mxfp4[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };

/* ---- dequantize ---------------------------------------------------------- */

static void deq_iq4_nl(const void *src, float *y, int64_t nb)
{
    const sl_block_iq4_nl *b = src;
    for (int64_t i = 0; i < nb; i++, b++, y += SL_QK) {
        float d = sl_f16_to_f32(b->d);
        for (int j = 0; j < SL_QK / 2; j++) {
            y[j] = d * (float)sl_kvalues_iq4nl[b->qs[j] & 15];
            y[j + 16] = d * (float)sl_kvalues_iq4nl[b->qs[j] >> 4];
        }
    }
}

static void deq_iq4_xs(const void *src, float *y, int64_t nb)
{
    const sl_block_iq4_xs *b = src;
    for (int64_t i = 0; i < nb; i++, b++) {
        float d = sl_f16_to_f32(b->d);
        for (int ib = 0; ib < SL_QKK / 32; ib++, y += 32) {
            /* (float)(ls - 32) on its own keeps the sign of a zero as ggml does */
            float dl = d * (float)(sl_quant_iq4_xs_scale(b, ib) - 32);
            const uint8_t *q = b->qs + 16 * ib;
            for (int j = 0; j < 16; j++) {
                y[j] = dl * (float)sl_kvalues_iq4nl[q[j] & 15];
                y[j + 16] = dl * (float)sl_kvalues_iq4nl[q[j] >> 4];
            }
        }
    }
}

static void deq_mxfp4(const void *src, float *y, int64_t nb)
{
    const sl_block_mxfp4 *b = src;
    for (int64_t i = 0; i < nb; i++, b++, y += SL_QK) {
        float d = sl_e8m0_half(b->e);
        for (int j = 0; j < SL_QK / 2; j++) {
            y[j] = (float)sl_kvalues_mxfp4[b->qs[j] & 15] * d;
            y[j + 16] = (float)sl_kvalues_mxfp4[b->qs[j] >> 4] * d;
        }
    }
}

/* ---- quantize ------------------------------------------------------------ */

/* Index of the IQ4 level nearest to v (the levels are ascending). */
static int iq4_nearest(float v)
{
    const int8_t *L = sl_kvalues_iq4nl;
    if (!(v > (float)L[0])) return 0;             /* also nan */
    if (v >= (float)L[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        int m = (lo + hi) / 2;
        if (v < (float)L[m]) hi = m; else lo = m;
    }
    return v - (float)L[lo] < (float)L[hi] - v ? lo : hi;
}

/* Levels of x[0..n) at scale d (d == 0: the level nearest 0). */
static void iq4_assign(const float *x, int n, float d, uint8_t *q)
{
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < n; j++) q[j] = (uint8_t)iq4_nearest(x[j] * id);
}

static float wt(const float *qw, int j) { return qw ? qw[j] : 1.0f; }

/* Weighted squared error of x against d * level[q]. */
static double iq4_err(const float *x, const float *qw, int n, float d, const uint8_t *q)
{
    double e = 0.0;
    for (int j = 0; j < n; j++) {
        double r = (double)x[j] - (double)d * sl_kvalues_iq4nl[q[j]];
        e += wt(qw, j) * r * r;
    }
    return e;
}

/* Best float scale of x[0..n) on the IQ4 levels (0 for an all-zero block). */
static float iq4_best_scale(const float *x, const float *qw, int n)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++)
        if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); max = x[j]; }
    if (!(amax > 0.0f) || !isfinite(amax)) return 0.0f;
    double best = -1.0;
    float best_d = max / -127.0f;
    uint8_t q[SL_QKK];
    for (int end = 0; end < 2; end++)
        for (int t = -10; t <= 10; t++) {
            float den = end ? 113.0f + (float)t : -127.0f - (float)t;
            iq4_assign(x, n, max / den, q);
            double slx = 0.0, sll = 0.0;
            for (int j = 0; j < n; j++) {
                double l = sl_kvalues_iq4nl[q[j]], w = wt(qw, j);
                slx += w * l * x[j];
                sll += w * l * l;
            }
            /* error = sum w x^2 - slx^2 / sll at the fitted scale slx / sll;
             * a near-tie keeps the earlier candidate (the -127 end first:
             * exact fits of flat blocks then share one sign across IQ4_XS
             * sub-blocks) */
            if (sll > 0.0 && slx * slx / sll > best * (1.0 + 1e-9)) {
                best = slx * slx / sll;
                best_d = (float)(slx / sll);
            }
        }
    return best_d;
}

static int quant_iq4_nl(const float *x, void *dst, int64_t nb, const float *qw)
{
    sl_block_iq4_nl *y = dst;
    for (int64_t i = 0; i < nb; i++, x += SL_QK, qw = qw ? qw + SL_QK : NULL) {
        uint8_t q[SL_QK];
        y[i].d = sl_f32_to_f16(iq4_best_scale(x, qw, SL_QK));
        iq4_assign(x, SL_QK, sl_f16_to_f32(y[i].d), q);   /* levels for the stored scale */
        for (int j = 0; j < 16; j++) y[i].qs[j] = (uint8_t)(q[j] | q[j + 16] << 4);
    }
    return 0;
}

/* Total error of one IQ4_XS superblock with super-scale d (as stored) and
 * the sub-block scales s[] rounded to ls - 32 in [-32, 31]. */
static double iq4xs_try(const float *x, const float *qw, const float *s, float d, int *ls)
{
    double e = 0.0;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int ib = 0; ib < 8; ib++) {
        int l = (int)lroundf(s[ib] * id);
        l = l < -32 ? -32 : l > 31 ? 31 : l;
        ls[ib] = l + 32;
        uint8_t q[32];
        float dl = d * (float)l;
        iq4_assign(x + 32 * ib, 32, dl, q);
        e += iq4_err(x + 32 * ib, qw ? qw + 32 * ib : NULL, 32, dl, q);
    }
    return e;
}

static int quant_iq4_xs(const float *x, void *dst, int64_t nb, const float *qw)
{
    sl_block_iq4_xs *y = dst;
    for (int64_t i = 0; i < nb; i++, x += SL_QKK, qw = qw ? qw + SL_QKK : NULL) {
        float s[8], smax = 0.0f;
        for (int ib = 0; ib < 8; ib++) {
            s[ib] = iq4_best_scale(x + 32 * ib, qw ? qw + 32 * ib : NULL, 32);
            if (fabsf(s[ib]) > fabsf(smax)) smax = s[ib];
        }
        int ls[8], best_ls[8];
        for (int ib = 0; ib < 8; ib++) best_ls[ib] = 32;
        sl_f16 best_d = 0;
        if (smax != 0.0f) {
            /* the largest scale lands on -32 (or +31) or a little inside */
            double best = -1.0;
            for (int t = 0; t < 16; t++) {
                float den = t < 8 ? -32.0f + 0.5f * (float)t : 31.0f - 0.5f * (float)(t - 8);
                sl_f16 dh = sl_f32_to_f16(smax / den);
                double e = iq4xs_try(x, qw, s, sl_f16_to_f32(dh), ls);
                if (best < 0.0 || e < best) {
                    best = e;
                    best_d = dh;
                    memcpy(best_ls, ls, sizeof ls);
                }
            }
        }
        sl_block_iq4_xs *b = &y[i];
        b->d = best_d;
        b->scales_h = 0;
        memset(b->scales_l, 0, sizeof b->scales_l);
        float d = sl_f16_to_f32(best_d);
        for (int ib = 0; ib < 8; ib++) {
            b->scales_l[ib / 2] |= (uint8_t)((best_ls[ib] & 15) << (4 * (ib % 2)));
            b->scales_h |= (uint16_t)((best_ls[ib] >> 4) << (2 * ib));
            uint8_t q[32];
            iq4_assign(x + 32 * ib, 32, d * (float)(best_ls[ib] - 32), q);
            for (int j = 0; j < 16; j++) b->qs[16 * ib + j] = (uint8_t)(q[j] | q[j + 16] << 4);
        }
    }
    return 0;
}

/* MXFP4 code of the level nearest to v (magnitudes 0,1,2,3,4,6,8,12; bit 3 = sign). */
static int mxfp4_nearest(float v)
{
    static const float mag[8] = { 0, 1, 2, 3, 4, 6, 8, 12 };
    float a = fabsf(v);
    int k = 0;
    while (k < 7 && a > 0.5f * (mag[k] + mag[k + 1])) k++;
    return k && v < 0.0f ? 8 | k : k;
}

static int quant_mxfp4(const float *x, void *dst, int64_t nb, const float *qw)
{
    sl_block_mxfp4 *y = dst;
    for (int64_t i = 0; i < nb; i++, x += SL_QK, qw = qw ? qw + SL_QK : NULL) {
        float amax = 0.0f;
        for (int j = 0; j < SL_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        int e0 = 0;
        if (amax > 0.0f && isfinite(amax)) {
            int ex;
            (void)frexpf(amax, &ex);      /* amax = m 2^ex, m in [0.5, 1) */
            e0 = ex + 124;                /* amax / 2^(e0-128) = 16 m: near the top level 12 */
        }
        int best_e = 0;
        double best = -1.0;
        for (int e = e0 - 1; e <= e0 + 1; e++) {
            if (e < 0 || e > 255) continue;
            float d = sl_e8m0_half((uint8_t)e), id = 1.0f / d;
            double err = 0.0;
            for (int j = 0; j < SL_QK; j++) {
                double r = (double)x[j] - (double)sl_kvalues_mxfp4[mxfp4_nearest(x[j] * id)] * d;
                err += wt(qw, j) * r * r;
            }
            if (best < 0.0 || err < best) { best = err; best_e = e; }
        }
        y[i].e = (uint8_t)best_e;
        float id = 1.0f / sl_e8m0_half((uint8_t)best_e);
        for (int j = 0; j < 16; j++)
            y[i].qs[j] = (uint8_t)(mxfp4_nearest(x[j] * id) | mxfp4_nearest(x[j + 16] * id) << 4);
    }
    return 0;
}

const sl_quant_traits sl_qtraits_iq4_nl = { deq_iq4_nl, quant_iq4_nl, SL_GGML_Q8_0 };
const sl_quant_traits sl_qtraits_iq4_xs = { deq_iq4_xs, quant_iq4_xs, SL_GGML_Q8_K };
const sl_quant_traits sl_qtraits_mxfp4 = { deq_mxfp4, quant_mxfp4, SL_GGML_Q8_0 };
