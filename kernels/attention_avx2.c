/* Attention work item, AVX2+FMA+F16C: scores 8 positions at a time (8
 * accumulators, one horizontal 8x8 reduction), vector exp, probabilities
 * rounded with F16C, p.v with register accumulators over blocks of 64
 * positions so the V block stays in L1 across the head_dim chunks. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "ops_internal.h"
#include "vmath_avx2.h"

#define JB 64

static inline __m256 ld_h8(const sl_f16 *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* s[g][j] = scale * dot(q_g, k_j) for g < ng, j < L; all ng heads per block
 * of 8 positions so each K row is fetched from memory once for the group. */
static void scores(float *s0, const float *qf0, int ng, const sl_f16 *kb, int64_t ks, int hd,
                   int32_t L, float scale)
{
    const int d8 = hd & ~7;
    const __m256 vsc = _mm256_set1_ps(scale);
    int32_t j = 0;
    for (; j + 8 <= L; j += 8) {
        for (int g = 0; g < ng; g++) {
            const float *qf = qf0 + g * hd;
            float *s = s0 + (int64_t)g * L;
            const sl_f16 *k0 = kb + (int64_t)j * ks;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
            for (int d = 0; d < d8; d += 8) {
                __m256 q = _mm256_loadu_ps(qf + d);
                a0 = _mm256_fmadd_ps(q, ld_h8(k0 + d), a0);
                a1 = _mm256_fmadd_ps(q, ld_h8(k0 + ks + d), a1);
                a2 = _mm256_fmadd_ps(q, ld_h8(k0 + 2 * ks + d), a2);
                a3 = _mm256_fmadd_ps(q, ld_h8(k0 + 3 * ks + d), a3);
                a4 = _mm256_fmadd_ps(q, ld_h8(k0 + 4 * ks + d), a4);
                a5 = _mm256_fmadd_ps(q, ld_h8(k0 + 5 * ks + d), a5);
                a6 = _mm256_fmadd_ps(q, ld_h8(k0 + 6 * ks + d), a6);
                a7 = _mm256_fmadd_ps(q, ld_h8(k0 + 7 * ks + d), a7);
            }
            __m256 r = sl_hsum8x8(a0, a1, a2, a3, a4, a5, a6, a7);
            if (d8 < hd) {
                float t[8];
                for (int jj = 0; jj < 8; jj++) {
                    float acc = 0.0f;
                    for (int d = d8; d < hd; d++)
                        acc += qf[d] * sl_f16_to_f32(k0[jj * ks + d]);
                    t[jj] = acc;
                }
                r = _mm256_add_ps(r, _mm256_loadu_ps(t));
            }
            _mm256_storeu_ps(s + j, _mm256_mul_ps(r, vsc));
        }
    }
    for (; j < L; j++) {
        for (int g = 0; g < ng; g++) {
            const float *qf = qf0 + g * hd;
            float *s = s0 + (int64_t)g * L;
            const sl_f16 *kj = kb + (int64_t)j * ks;
            __m256 a = _mm256_setzero_ps();
            for (int d = 0; d < d8; d += 8)
                a = _mm256_fmadd_ps(_mm256_loadu_ps(qf + d), ld_h8(kj + d), a);
            float acc = sl_hsum8(a);
            for (int d = d8; d < hd; d++)
                acc += qf[d] * sl_f16_to_f32(kj[d]);
            s[j] = acc * scale;
        }
    }
}

/* s <- f16-rounded softmax(s), as f32. */
static void softmax_f16(float *s, int32_t L)
{
    int32_t nv = L & ~7, j;
    int nt = L - nv;
    float tail[8];
    for (int t = 0; t < 8; t++)
        tail[t] = t < nt ? s[nv + t] : -INFINITY;
    __m256 vm = _mm256_loadu_ps(tail);
    for (j = 0; j < nv; j += 8)
        vm = _mm256_max_ps(vm, _mm256_loadu_ps(s + j));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vm), _mm256_extractf128_ps(vm, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    __m256 mx = _mm256_set1_ps(_mm_cvtss_f32(m4));
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (j = 0; j <= nv; j += 8) {
        float *p = j < nv ? s + j : tail;
        __m256 e = sl_exp8(_mm256_sub_ps(_mm256_loadu_ps(p), mx));
        _mm256_storeu_ps(p, e);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    __m256 inv = _mm256_set1_ps((float)(1.0 / sl_hsum4d(_mm256_add_pd(s0, s1))));
    for (j = 0; j <= nv; j += 8) {
        float *p = j < nv ? s + j : tail;
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(p), inv);
        _mm256_storeu_ps(p, _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)));
    }
    memcpy(s + nv, tail, (size_t)nt * sizeof(float));
}

/* acc[g][d0..d0+8*NV) += sum_{j in [j0,j1)} p[g][j] * v_j[d0..]: GN heads x NV
 * vectors kept in registers (GN, NV compile-time after inlining). */
static inline __attribute__((always_inline)) void
pv_chunk(float *acc, const float *p, int32_t L, int hd, const sl_f16 *vb, int64_t ks, int32_t j0,
         int32_t j1, int d0, const int GN, const int NV)
{
    __m256 A[4][2];
    for (int g = 0; g < GN; g++)
        for (int c = 0; c < NV; c++)
            A[g][c] = _mm256_loadu_ps(acc + g * hd + d0 + 8 * c);
    for (int32_t j = j0; j < j1; j++) {
        const sl_f16 *vj = vb + (int64_t)j * ks + d0;
        __m256 V[2];
        for (int c = 0; c < NV; c++)
            V[c] = ld_h8(vj + 8 * c);
        for (int g = 0; g < GN; g++) {
            __m256 pg = _mm256_broadcast_ss(p + (int64_t)g * L + j);
            for (int c = 0; c < NV; c++)
                A[g][c] = _mm256_fmadd_ps(pg, V[c], A[g][c]);
        }
    }
    for (int g = 0; g < GN; g++)
        for (int c = 0; c < NV; c++)
            _mm256_storeu_ps(acc + g * hd + d0 + 8 * c, A[g][c]);
}

static void pv_block(float *acc, const float *p, int32_t L, int hd, const sl_f16 *vb, int64_t ks,
                     int32_t j0, int32_t j1, int gn)
{
    int d = 0;
    for (; d + 16 <= hd; d += 16) {
        switch (gn) {
        case 1: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 1, 2); break;
        case 2: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 2, 2); break;
        case 3: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 3, 2); break;
        default: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 4, 2); break;
        }
    }
    for (; d + 8 <= hd; d += 8) {
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

void sl_attn_item_avx2(SL_ATTN_ITEM_ARGS)
{
    const int hd = a->head_dim;
    const int32_t L = a->pos0 + row + 1;
    const int64_t ks = a->kv_stride;
    const float *q = a->q + (int64_t)row * a->q_stride + (int64_t)h0 * hd;
    const sl_f16 *kb = a->k + kvh * sl_attn_khs(a), *vb = a->v + kvh * sl_attn_khs(a);
    float *out = a->out + (int64_t)row * a->out_stride + (int64_t)h0 * hd;
    const int nq = ng * hd;

    int i = 0;
    for (; i + 8 <= nq; i += 8)
        _mm256_storeu_ps(ws->qf + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(q + i),
                                                                     _MM_FROUND_TO_NEAREST_INT)));
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
