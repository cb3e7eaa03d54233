/* The attention work item (ops_internal.h: one query row, up to
 * SL_ATTN_GMAX heads sharing one kv head) written once over a level's vector
 * primitives (vmath_<isa>.h, then ops_driver.h for exp and softmax):
 * scores 8 positions at a time (8 accumulators reduced together), softmax
 * with the probabilities rounded to f16, p.v with register accumulators
 * (4 heads x SL_V_PV vectors) over blocks of 64 positions so the V block
 * stays in L1 across the head_dim chunks. head_dim tails as in ops_driver.h:
 * masked vectors, or scalar code after the whole vectors. */
#ifndef SL_ATTENTION_DRIVER_H
#define SL_ATTENTION_DRIVER_H

#include <string.h>

#include "ops_driver.h"

#define ATTN_JB 64     /* positions per p.v block */

/* s[g][j] = scale * dot(q_g, k_j) for g < ng, j < L; all ng heads per block
 * of 8 positions so each K row is fetched from memory once for the group.
 * Out of line: inlined into attn_item, gcc 12 spilled the 8 K row pointers
 * of the inner loop (avx2 attention ~6% slower). */
static __attribute__((noinline)) void attn_scores(float *s0, const float *qf0, int ng, const sl_f16 *kb, int64_t ks,
                               int hd, int32_t L, float scale)
{
    const int dv = (int)sl_vbody(hd, SL_VW);
    int32_t j = 0;
    for (; j + 8 <= L; j += 8) {
        for (int g = 0; g < ng; g++) {
            const float *qf = qf0 + g * hd;
            const sl_f16 *k0 = kb + (int64_t)j * ks;
            sl_vf a[8];
            _Pragma("GCC unroll 8")
            for (int jj = 0; jj < 8; jj++)
                a[jj] = sl_v_zero();
            for (int d = 0; d < dv; d += SL_VW) {
                sl_vf q = sl_v_ldm(qf + d, hd - d);
                _Pragma("GCC unroll 8")
                for (int jj = 0; jj < 8; jj++)
                    a[jj] = sl_v_fma(q, sl_v_ldhm(k0 + jj * ks + d, hd - d), a[jj]);
            }
            float t[8];
            if (dv < hd)
                for (int jj = 0; jj < 8; jj++) {
                    float acc = 0.0f;
                    for (int d = dv; d < hd; d++)
                        acc += qf[d] * sl_f16_to_f32(k0[jj * ks + d]);
                    t[jj] = acc;
                }
            sl_v_sum8_scaled(a, dv < hd ? t : NULL, scale, s0 + (int64_t)g * L + j);
        }
    }
    for (; j < L; j++) {
        for (int g = 0; g < ng; g++) {
            const float *qf = qf0 + g * hd;
            const sl_f16 *kj = kb + (int64_t)j * ks;
            sl_vf a = sl_v_zero();
            for (int d = 0; d < dv; d += SL_VW)
                a = sl_v_fma(sl_v_ldm(qf + d, hd - d), sl_v_ldhm(kj + d, hd - d), a);
            float acc = sl_v_hsum(a);
            for (int d = dv; d < hd; d++)
                acc += qf[d] * sl_f16_to_f32(kj[d]);
            s0[(int64_t)g * L + j] = acc * scale;
        }
    }
}

/* acc[g][d0 ..] += sum_{j0<=j<j1} p[g][j] v_j[d0 ..]: GN heads x NV vectors
 * in registers (compile-time after inlining); left: dims from d0 to the end
 * of the head (the last vector's lane mask on masked levels). */
SL_VINL void attn_pv_chunk(float *acc, const float *p, int32_t L, int hd, const sl_f16 *vb, int64_t ks,
                           int32_t j0, int32_t j1, int d0, int left, const int GN, const int NV)
{
    sl_vf A[4][SL_V_PV];
    for (int g = 0; g < GN; g++)
        for (int c = 0; c < NV; c++)
            A[g][c] = sl_v_ldm(acc + g * hd + d0 + SL_VW * c, left - SL_VW * c);
    for (int32_t j = j0; j < j1; j++) {
        const sl_f16 *vj = vb + (int64_t)j * ks + d0;
        sl_vf V[SL_V_PV];
        for (int c = 0; c < NV; c++)
            V[c] = sl_v_ldhm(vj + SL_VW * c, left - SL_VW * c);
        for (int g = 0; g < GN; g++) {
            sl_vf pg = sl_v_set1(p[(int64_t)g * L + j]);
            for (int c = 0; c < NV; c++)
                A[g][c] = sl_v_fma(pg, V[c], A[g][c]);
        }
    }
    for (int g = 0; g < GN; g++)
        for (int c = 0; c < NV; c++)
            sl_v_stm(acc + g * hd + d0 + SL_VW * c, A[g][c], left - SL_VW * c);
}

/* gn (1..4) as a compile-time head count. */
SL_VINL void attn_pv_heads(int gn, float *acc, const float *p, int32_t L, int hd, const sl_f16 *vb,
                           int64_t ks, int32_t j0, int32_t j1, int d0, int left, const int NV)
{
    switch (gn) {
    case 1: attn_pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d0, left, 1, NV); break;
    case 2: attn_pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d0, left, 2, NV); break;
    case 3: attn_pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d0, left, 3, NV); break;
    default: attn_pv_chunk(acc, p, L, hd, vb, ks, j0, j1, d0, left, 4, NV); break;
    }
}

static inline void attn_pv_block(float *acc, const float *p, int32_t L, int hd, const sl_f16 *vb,
                                 int64_t ks, int32_t j0, int32_t j1, int gn)
{
    const int dv = (int)sl_vbody(hd, SL_VW);
    int d = 0;
    for (; d + SL_V_PV * SL_VW <= hd; d += SL_V_PV * SL_VW)
        attn_pv_heads(gn, acc, p, L, hd, vb, ks, j0, j1, d, SL_V_PV * SL_VW, SL_V_PV);
    for (; d < dv; d += SL_VW)
        attn_pv_heads(gn, acc, p, L, hd, vb, ks, j0, j1, d, hd - d, 1);
    for (; d < hd; d++)
        for (int g = 0; g < gn; g++)
            for (int32_t j = j0; j < j1; j++)
                acc[g * hd + d] += p[(int64_t)g * L + j] * sl_f16_to_f32(vb[(int64_t)j * ks + d]);
}

static inline void attn_item(SL_ATTN_ITEM_ARGS)
{
    const int hd = a->head_dim;
    const int32_t first = sl_attn_first(a, row), L = a->pos0 + row + 1 - first;
    const int64_t ks = a->kv_stride;
    const float *q = a->q + (int64_t)row * a->q_stride + (int64_t)h0 * hd;
    const sl_f16 *kb = (const sl_f16 *)a->k + kvh * sl_attn_khs(a) + (int64_t)first * ks;
    const sl_f16 *vb = (const sl_f16 *)a->v + kvh * sl_attn_khs(a) + (int64_t)first * ks;
    float *out = a->out + (int64_t)row * a->out_stride + (int64_t)h0 * hd;
    const int nq = ng * hd, nqv = (int)sl_vbody(nq, SL_VW);

    int i = 0;
    for (; i < nqv; i += SL_VW)      /* q rounded to f16, as llama.cpp */
        sl_v_stm(ws->qf + i, sl_v_round_h(sl_v_ldm(q + i, nq - i)), nq - i);
    for (; i < nq; i++)
        ws->qf[i] = sl_f16_to_f32(sl_f32_to_f16(q[i]));
    attn_scores(ws->s, ws->qf, ng, kb, ks, hd, L, a->scale);
    for (int g = 0; g < ng; g++)
        sl_vsoftmax(ws->s + (int64_t)g * L, L, 1, sl_attn_sink(a, h0 + g));
    memset(ws->acc, 0, (size_t)nq * sizeof(float));
    for (int32_t j0 = 0; j0 < L; j0 += ATTN_JB) {
        int32_t j1 = j0 + ATTN_JB < L ? j0 + ATTN_JB : L;
        for (int g0 = 0; g0 < ng; g0 += 4)
            attn_pv_block(ws->acc + g0 * hd, ws->s + (int64_t)g0 * L, L, hd, vb, ks, j0, j1,
                          ng - g0 < 4 ? ng - g0 : 4);
    }
    memcpy(out, ws->acc, (size_t)nq * sizeof(float));
}

#endif
