/* The attention work item over a quantized KV cache (sl_attn type_k/type_v
 * Q8_0 or Q4_0; attention_q.c is its scalar oracle), written once over a
 * level's vector primitives: scores by the level's vec_dot on q converted
 * to K's vec_dot type (sl_attn_q_scores), softmax in f32 without rounding
 * the probabilities (llama.cpp's flash-attention path), then p.v: each
 * 32-value block of a V row converted to f32 once (q * d is exact in f32)
 * and accumulated for two heads at a time in registers, over blocks of 64
 * positions so V stays in L1 across the heads. Needs sl_v_ld_i8 and
 * sl_v_ld_q4 from vmath_<isa>.h; head_dim is a multiple of 32, so no tails. */
#ifndef SL_ATTENTION_Q_DRIVER_H
#define SL_ATTENTION_Q_DRIVER_H

#include <string.h>

#include "ops_driver.h"

#define ATTNQ_NV (SL_QK / SL_VW)   /* vectors per 32-value block */
#define ATTNQ_JB 64                /* positions per p.v block */

/* Block b of V row `vr` (cache type tv) as ATTNQ_NV f32 vectors. */
SL_VINL void attnq_ldv(sl_vf V[ATTNQ_NV], const char *vr, int b, const int tv)
{
    if (tv == SL_GGML_Q8_0) {
        const sl_block_q8_0 *B = (const sl_block_q8_0 *)vr + b;
        const sl_vf D = sl_v_set1(sl_f16_to_f32(B->d));
        for (int c = 0; c < ATTNQ_NV; c++)
            V[c] = sl_v_ld_i8(B->qs + c * SL_VW) * D;
    } else if (tv == SL_GGML_Q4_0) {
        /* element i < 16: low nibble of qs[i]; i >= 16: high nibble of qs[i - 16] */
        const sl_block_q4_0 *B = (const sl_block_q4_0 *)vr + b;
        const sl_vf D = sl_v_set1(sl_f16_to_f32(B->d));
        for (int c = 0; c < ATTNQ_NV; c++)
            V[c] = sl_v_ld_q4(B->qs + (c * SL_VW) % (SL_QK / 2), c * SL_VW >= SL_QK / 2) * D;
    } else {
        const sl_f16 *h = (const sl_f16 *)vr + b * SL_QK;
        for (int c = 0; c < ATTNQ_NV; c++)
            V[c] = sl_v_ldh(h + c * SL_VW);
    }
}

/* acc[g][b*32 ..] += sum_{j0<=j<j1} p[g][j] v_j[b*32 ..] for GN (1, 2) heads. */
SL_VINL void attnq_pv_block(float *acc, const float *p, int32_t L, int hd, const char *vb,
                            int64_t vbs, int32_t j0, int32_t j1, int b, const int GN, const int tv)
{
    sl_vf A[2][ATTNQ_NV];
    for (int g = 0; g < GN; g++)
        for (int c = 0; c < ATTNQ_NV; c++)
            A[g][c] = sl_v_ld(acc + g * hd + b * SL_QK + c * SL_VW);
    for (int32_t j = j0; j < j1; j++) {
        sl_vf V[ATTNQ_NV];
        attnq_ldv(V, vb + j * vbs, b, tv);
        for (int g = 0; g < GN; g++) {
            const sl_vf P = sl_v_set1(p[(int64_t)g * L + j]);
            for (int c = 0; c < ATTNQ_NV; c++)
                A[g][c] = sl_v_fma(P, V[c], A[g][c]);
        }
    }
    for (int g = 0; g < GN; g++)
        for (int c = 0; c < ATTNQ_NV; c++)
            sl_v_st(acc + g * hd + b * SL_QK + c * SL_VW, A[g][c]);
}

SL_VINL void attnq_pv(float *acc, const float *p, int32_t L, int ng, int hd, const char *vb,
                      int64_t vbs, const int tv)
{
    for (int32_t j0 = 0; j0 < L; j0 += ATTNQ_JB) {
        const int32_t j1 = j0 + ATTNQ_JB < L ? j0 + ATTNQ_JB : L;
        for (int b = 0; b < hd / SL_QK; b++)
            for (int g = 0; g < ng; g += 2) {
                if (ng - g >= 2)
                    attnq_pv_block(acc + g * hd, p + (int64_t)g * L, L, hd, vb, vbs, j0, j1, b, 2, tv);
                else
                    attnq_pv_block(acc + g * hd, p + (int64_t)g * L, L, hd, vb, vbs, j0, j1, b, 1, tv);
            }
    }
}

static inline void attn_item_q(SL_ATTN_ITEM_ARGS)
{
    const int hd = a->head_dim, tv = sl_attn_type(a->type_v);
    const sl_attn_q_span sp = sl_attn_q_span_of(a, row, kvh, h0);
    const int32_t L = sp.L;
    const int64_t vbs = sp.vbs;
    const char *vb = sp.vb;

    sl_attn_q_scores(a, row, kvh, h0, ng, ws, sp.first, L);
    for (int g = 0; g < ng; g++)
        sl_vsoftmax(ws->s + (int64_t)g * L, L, 0, sl_attn_sink(a, h0 + g));
    memset(ws->acc, 0, (size_t)ng * (size_t)hd * sizeof(float));
    switch (tv) {   /* the type as a constant: one specialized loop per V type */
    case SL_GGML_Q8_0: attnq_pv(ws->acc, ws->s, L, ng, hd, vb, vbs, SL_GGML_Q8_0); break;
    case SL_GGML_Q4_0: attnq_pv(ws->acc, ws->s, L, ng, hd, vb, vbs, SL_GGML_Q4_0); break;
    default: attnq_pv(ws->acc, ws->s, L, ng, hd, vb, vbs, SL_GGML_F16); break;
    }
    memcpy(sp.out, ws->acc, (size_t)ng * (size_t)hd * sizeof(float));
}

#endif
