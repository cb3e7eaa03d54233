/* Attention work item, A64 NEON (armv8.0; FCVTL/FCVTN for f16): the AVX2
 * item's plan in 4-wide vectors (8-position score blocks reduced with
 * pairwise adds; p.v with 4 heads x 16 dims in registers per 64 positions). */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "ops_internal.h"
#include "vmath_neon.h"

#define JB 64

static inline float32x4_t hsum4x4(float32x4_t a0, float32x4_t a1, float32x4_t a2, float32x4_t a3)
{
    return vpaddq_f32(vpaddq_f32(a0, a1), vpaddq_f32(a2, a3));
}

/* s[g][j] = scale * dot(q_g, k_j) for g < ng, j < L; all ng heads per block
 * of 8 positions so each K row is fetched from memory once for the group. */
static void scores(float *s0, const float *qf0, int ng, const sl_f16 *kb, int64_t ks, int hd,
                   int32_t L, float scale)
{
    const int d4 = hd & ~3;
    int32_t j = 0;
    for (; j + 8 <= L; j += 8) {
        for (int g = 0; g < ng; g++) {
            const float *qf = qf0 + g * hd;
            float *s = s0 + (int64_t)g * L;
            const sl_f16 *k0 = kb + (int64_t)j * ks;
            float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
            for (int d = 0; d < d4; d += 4) {
                float32x4_t q = vld1q_f32(qf + d);
                a0 = vfmaq_f32(a0, q, sl_ld_h4(k0 + d));
                a1 = vfmaq_f32(a1, q, sl_ld_h4(k0 + ks + d));
                a2 = vfmaq_f32(a2, q, sl_ld_h4(k0 + 2 * ks + d));
                a3 = vfmaq_f32(a3, q, sl_ld_h4(k0 + 3 * ks + d));
                a4 = vfmaq_f32(a4, q, sl_ld_h4(k0 + 4 * ks + d));
                a5 = vfmaq_f32(a5, q, sl_ld_h4(k0 + 5 * ks + d));
                a6 = vfmaq_f32(a6, q, sl_ld_h4(k0 + 6 * ks + d));
                a7 = vfmaq_f32(a7, q, sl_ld_h4(k0 + 7 * ks + d));
            }
            float32x4_t r0 = hsum4x4(a0, a1, a2, a3), r1 = hsum4x4(a4, a5, a6, a7);
            if (d4 < hd) {
                float t[8];
                for (int jj = 0; jj < 8; jj++) {
                    float acc = 0.0f;
                    for (int d = d4; d < hd; d++)
                        acc += qf[d] * sl_f16_to_f32(k0[jj * ks + d]);
                    t[jj] = acc;
                }
                r0 = vaddq_f32(r0, vld1q_f32(t));
                r1 = vaddq_f32(r1, vld1q_f32(t + 4));
            }
            vst1q_f32(s + j, vmulq_n_f32(r0, scale));
            vst1q_f32(s + j + 4, vmulq_n_f32(r1, scale));
        }
    }
    for (; j < L; j++) {
        for (int g = 0; g < ng; g++) {
            const float *qf = qf0 + g * hd;
            float *s = s0 + (int64_t)g * L;
            const sl_f16 *kj = kb + (int64_t)j * ks;
            float32x4_t a = vdupq_n_f32(0);
            for (int d = 0; d < d4; d += 4)
                a = vfmaq_f32(a, vld1q_f32(qf + d), sl_ld_h4(kj + d));
            float acc = vaddvq_f32(a);
            for (int d = d4; d < hd; d++)
                acc += qf[d] * sl_f16_to_f32(kj[d]);
            s[j] = acc * scale;
        }
    }
}

static void softmax_f16(float *s, int32_t L)
{
    int32_t nv = L & ~3, j;
    int nt = L - nv;
    float tail[4];
    for (int t = 0; t < 4; t++)
        tail[t] = t < nt ? s[nv + t] : -INFINITY;
    float32x4_t vm = vld1q_f32(tail);
    for (j = 0; j < nv; j += 4)
        vm = vmaxq_f32(vm, vld1q_f32(s + j));
    float32x4_t mx = vdupq_n_f32(vmaxvq_f32(vm));
    float64x2_t s0 = vdupq_n_f64(0), s1 = s0;
    for (j = 0; j <= nv; j += 4) {
        float *p = j < nv ? s + j : tail;
        float32x4_t e = sl_exp4(vsubq_f32(vld1q_f32(p), mx));
        vst1q_f32(p, e);
        sl_acc_pd4(&s0, &s1, e);
    }
    float inv = (float)(1.0 / vaddvq_f64(vaddq_f64(s0, s1)));
    for (j = 0; j <= nv; j += 4) {
        float *p = j < nv ? s + j : tail;
        float32x4_t v = vmulq_n_f32(vld1q_f32(p), inv);
        vst1q_f32(p, vcvt_f32_f16(vcvt_f16_f32(v)));
    }
    memcpy(s + nv, tail, (size_t)nt * sizeof(float));
}

static inline __attribute__((always_inline)) void
pv_chunk(float *acc, const float *p, int32_t L, int hd, const sl_f16 *vb, int64_t ks, int32_t j0,
         int32_t j1, int d0, const int GN, const int NV)
{
    float32x4_t A[4][4];
    for (int g = 0; g < GN; g++)
        for (int c = 0; c < NV; c++)
            A[g][c] = vld1q_f32(acc + g * hd + d0 + 4 * c);
    for (int32_t j = j0; j < j1; j++) {
        const sl_f16 *vj = vb + (int64_t)j * ks + d0;
        float32x4_t V[4];
        for (int c = 0; c < NV; c++)
            V[c] = sl_ld_h4(vj + 4 * c);
        for (int g = 0; g < GN; g++) {
            float pg = p[(int64_t)g * L + j];
            for (int c = 0; c < NV; c++)
                A[g][c] = vfmaq_n_f32(A[g][c], V[c], pg);
        }
    }
    for (int g = 0; g < GN; g++)
        for (int c = 0; c < NV; c++)
            vst1q_f32(acc + g * hd + d0 + 4 * c, A[g][c]);
}

static void pv_block(float *acc, const float *p, int32_t L, int hd, const sl_f16 *vb, int64_t ks,
                     int32_t j0, int32_t j1, int gn)
{
    int d = 0;
    for (; d + 16 <= hd; d += 16) {
        switch (gn) {
        case 1: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 1, 4); break;
        case 2: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 2, 4); break;
        case 3: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 3, 4); break;
        default: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 4, 4); break;
        }
    }
    for (; d + 4 <= hd; d += 4) {
        switch (gn) {
        case 1: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 1, 1); break;
        case 2: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 2, 1); break;
        case 3: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 3, 1); break;
        default: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 4, 1); break;
        }
    }
    for (; d < hd; d++)
        for (int g = 0; g < gn; g++)
            for (int32_t j = j0; j < j1; j++)
                acc[g * hd + d] += p[(int64_t)g * L + j] * sl_f16_to_f32(vb[(int64_t)j * ks + d]);
}

void sl_attn_item_neon(SL_ATTN_ITEM_ARGS)
{
    const int hd = a->head_dim;
    const int32_t L = a->pos0 + row + 1;
    const int64_t ks = a->kv_stride;
    const float *q = a->q + (int64_t)row * a->q_stride + (int64_t)h0 * hd;
    const sl_f16 *kb = a->k + kvh * sl_attn_khs(a), *vb = a->v + kvh * sl_attn_khs(a);
    float *out = a->out + (int64_t)row * a->out_stride + (int64_t)h0 * hd;
    const int nq = ng * hd;

    int i = 0;
    for (; i + 4 <= nq; i += 4)
        vst1q_f32(ws->qf + i, vcvt_f32_f16(vcvt_f16_f32(vld1q_f32(q + i))));
    for (; i < nq; i++)
        ws->qf[i] = sl_f16_to_f32(sl_f32_to_f16(q[i]));
    scores(ws->s, ws->qf, ng, kb, ks, hd, L, a->scale);
    for (int g = 0; g < ng; g++)
        softmax_f16(ws->s + (int64_t)g * L, L);
    memset(ws->acc, 0, (size_t)nq * sizeof(float));
    for (int32_t j0 = 0; j0 < L; j0 += JB) {
        int32_t j1 = j0 + JB < L ? j0 + JB : L;
        for (int g0 = 0; g0 < ng; g0 += 4)
            pv_block(ws->acc + g0 * hd, ws->s + (int64_t)g0 * L, L, hd, vb, ks, j0, j1,
                     ng - g0 < 4 ? ng - g0 : 4);
    }
    memcpy(out, ws->acc, (size_t)nq * sizeof(float));
}
