/* Attention work item, AVX-512 (F/BW/DQ/VL + F16C): the AVX2 item's plan in
 * 16-wide vectors; head_dim tails by masked loads, so no scalar remainder. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "ops_internal.h"
#include "vmath_avx2.h"
#include "vmath_avx512.h"

#define JB 64

static inline __m512 ld_h16(__mmask16 m, const sl_f16 *p)
{
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

static inline __m256 fold(__m512 v)
{
    return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
}

/* s[g][j] = scale * dot(q_g, k_j) for g < ng, j < L; all ng heads per block
 * of 8 positions so each K row is fetched from memory once for the group. */
static void scores(float *s0, const float *qf0, int ng, const sl_f16 *kb, int64_t ks, int hd,
                   int32_t L, float scale)
{
    const __m256 vsc = _mm256_set1_ps(scale);
    int32_t j = 0;
    for (; j + 8 <= L; j += 8) {
        for (int g = 0; g < ng; g++) {
            const float *qf = qf0 + g * hd;
            float *s = s0 + (int64_t)g * L;
            const sl_f16 *k0 = kb + (int64_t)j * ks;
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
            for (int d = 0; d < hd; d += 16) {
                __mmask16 m = sl_tail16(hd - d);
                __m512 q = _mm512_maskz_loadu_ps(m, qf + d);
                a0 = _mm512_fmadd_ps(q, ld_h16(m, k0 + d), a0);
                a1 = _mm512_fmadd_ps(q, ld_h16(m, k0 + ks + d), a1);
                a2 = _mm512_fmadd_ps(q, ld_h16(m, k0 + 2 * ks + d), a2);
                a3 = _mm512_fmadd_ps(q, ld_h16(m, k0 + 3 * ks + d), a3);
                a4 = _mm512_fmadd_ps(q, ld_h16(m, k0 + 4 * ks + d), a4);
                a5 = _mm512_fmadd_ps(q, ld_h16(m, k0 + 5 * ks + d), a5);
                a6 = _mm512_fmadd_ps(q, ld_h16(m, k0 + 6 * ks + d), a6);
                a7 = _mm512_fmadd_ps(q, ld_h16(m, k0 + 7 * ks + d), a7);
            }
            __m256 r = sl_hsum8x8(fold(a0), fold(a1), fold(a2), fold(a3), fold(a4), fold(a5), fold(a6),
                                  fold(a7));
            _mm256_storeu_ps(s + j, _mm256_mul_ps(r, vsc));
        }
    }
    for (; j < L; j++) {
        for (int g = 0; g < ng; g++) {
            const float *qf = qf0 + g * hd;
            float *s = s0 + (int64_t)g * L;
            const sl_f16 *kj = kb + (int64_t)j * ks;
            __m512 a = _mm512_setzero_ps();
            for (int d = 0; d < hd; d += 16) {
                __mmask16 m = sl_tail16(hd - d);
                a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, qf + d), ld_h16(m, kj + d), a);
            }
            s[j] = _mm512_reduce_add_ps(a) * scale;
        }
    }
}

static void softmax_f16(float *s, int32_t L)
{
    __m512 vm = _mm512_set1_ps(-INFINITY);
    for (int32_t j = 0; j < L; j += 16) {
        __mmask16 k = sl_tail16(L - j);
        vm = _mm512_mask_max_ps(vm, k, vm, _mm512_maskz_loadu_ps(k, s + j));
    }
    __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(vm));
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int32_t j = 0; j < L; j += 16) {
        __mmask16 k = sl_tail16(L - j);
        __m512 e = _mm512_maskz_mov_ps(k, sl_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + j), mx)));
        _mm512_mask_storeu_ps(s + j, k, e);
        sl_acc_pd16(&s0, &s1, e);
    }
    __m512 inv = _mm512_set1_ps((float)(1.0 / _mm512_reduce_add_pd(_mm512_add_pd(s0, s1))));
    for (int32_t j = 0; j < L; j += 16) {
        __mmask16 k = sl_tail16(L - j);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, s + j), inv);
        _mm512_mask_storeu_ps(s + j, k, _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)));
    }
}

/* acc[g][d0 ..] += sum_{j0<=j<j1} p[g][j] v_j[d0 ..]: GN heads x NV vectors of
 * 16 in registers; mt masks the last vector (head_dim tail). */
static inline __attribute__((always_inline)) void
pv_chunk(float *acc, const float *p, int32_t L, int hd, const sl_f16 *vb, int64_t ks, int32_t j0,
         int32_t j1, int d0, __mmask16 mt, const int GN, const int NV)
{
    __m512 A[4][2];
    for (int g = 0; g < GN; g++)
        for (int c = 0; c < NV; c++)
            A[g][c] = _mm512_maskz_loadu_ps(c == NV - 1 ? mt : 0xffff, acc + g * hd + d0 + 16 * c);
    for (int32_t j = j0; j < j1; j++) {
        const sl_f16 *vj = vb + (int64_t)j * ks + d0;
        __m512 V[2];
        for (int c = 0; c < NV; c++)
            V[c] = ld_h16(c == NV - 1 ? mt : 0xffff, vj + 16 * c);
        for (int g = 0; g < GN; g++) {
            __m512 pg = _mm512_set1_ps(p[(int64_t)g * L + j]);
            for (int c = 0; c < NV; c++)
                A[g][c] = _mm512_fmadd_ps(pg, V[c], A[g][c]);
        }
    }
    for (int g = 0; g < GN; g++)
        for (int c = 0; c < NV; c++)
            _mm512_mask_storeu_ps(acc + g * hd + d0 + 16 * c, c == NV - 1 ? mt : 0xffff, A[g][c]);
}

static void pv_block(float *acc, const float *p, int32_t L, int hd, const sl_f16 *vb, int64_t ks,
                     int32_t j0, int32_t j1, int gn)
{
    int d = 0;
    for (; d + 32 <= hd; d += 32) {
        switch (gn) {
        case 1: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 0xffff, 1, 2); break;
        case 2: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 0xffff, 2, 2); break;
        case 3: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 0xffff, 3, 2); break;
        default: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, 0xffff, 4, 2); break;
        }
    }
    for (; d < hd; d += 16) {
        __mmask16 mt = sl_tail16(hd - d);
        switch (gn) {
        case 1: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, mt, 1, 1); break;
        case 2: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, mt, 2, 1); break;
        case 3: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, mt, 3, 1); break;
        default: pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d, mt, 4, 1); break;
        }
    }
}

void sl_attn_item_avx512(SL_ATTN_ITEM_ARGS)
{
    const int hd = a->head_dim;
    const int32_t L = a->pos0 + row + 1;
    const int64_t ks = a->kv_stride;
    const float *q = a->q + (int64_t)row * a->q_stride + (int64_t)h0 * hd;
    const sl_f16 *kb = a->k + kvh * sl_attn_khs(a), *vb = a->v + kvh * sl_attn_khs(a);
    float *out = a->out + (int64_t)row * a->out_stride + (int64_t)h0 * hd;
    const int nq = ng * hd;

    for (int i = 0; i < nq; i += 16) {
        __mmask16 m = sl_tail16(nq - i);
        __m512 v = _mm512_maskz_loadu_ps(m, q + i);
        _mm512_mask_storeu_ps(ws->qf + i, m, _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT)));
    }
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
