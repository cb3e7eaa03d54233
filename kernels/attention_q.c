/* The scalar oracle of attention over a quantized KV cache (Q8_0 / Q4_0 K
 * or V; sl_attn's type_k, type_v): llama.cpp's flash-attention numerics.
 * Scores as the SIMD items (sl_attn_q_scores: q converted to K's vec_dot
 * type, the level's vec_dot); softmax with libm expf and a double sum, the
 * probabilities not rounded; each V row dequantized by quant/ and
 * accumulated in f32, in position order. */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

void sl_attn_item_q_scalar(SL_ATTN_ITEM_ARGS)
{
    const int hd = a->head_dim, tv = sl_attn_type(a->type_v);
    const sl_attn_q_span sp = sl_attn_q_span_of(a, row, kvh, h0);
    const int32_t L = sp.L;

    sl_attn_q_scores(a, row, kvh, h0, ng, ws, sp.first, L);
    for (int g = 0; g < ng; g++) {
        float *s = ws->s + (int64_t)g * L, mx = -INFINITY;
        for (int32_t j = 0; j < L; j++)
            mx = s[j] > mx ? s[j] : mx;
        sl_attn_softmax_ref(s, L, mx, 0, sl_attn_sink(a, h0 + g));
    }
    float *acc = ws->acc, *vr = ws->qf;   /* qf is free here: one dequantized V row */
    memset(acc, 0, (size_t)ng * (size_t)hd * sizeof(float));
    for (int32_t j = 0; j < L; j++) {
        sl_quant_dequantize_row(tv, sp.vb + j * sp.vbs, vr, hd);
        for (int g = 0; g < ng; g++) {
            const float p = ws->s[(int64_t)g * L + j];
            for (int d = 0; d < hd; d++)
                acc[g * hd + d] += p * vr[d];
        }
    }
    memcpy(sp.out, acc, (size_t)ng * (size_t)hd * sizeof(float));
}
