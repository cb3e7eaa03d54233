/* Helpers shared by the quant/ sources (not part of the public API). */
#ifndef SL_QUANT_INTERNAL_H
#define SL_QUANT_INTERNAL_H

#include "quant.h"
#include "../gguf/base/sl_status.h"

/* Round to nearest, ties to even, for |x| < 2^22: adding 1.5*2^23 leaves
 * no fraction bits, so the FPU's default rounding does the work. Exact and
 * independent of libm (lrintf would be a call without -fno-math-errno).
 * Strict IEEE evaluation (no -ffast-math) keeps the compiler from folding it. */
static inline int sl_rint(float x)
{
    float t = (x + 12582912.0f) - 12582912.0f;
    return (int)t;
}

/* Weight quantizers over nb whole blocks (x holds nb * block elements). */
void sl_quant_q4_0_blocks(const float *x, sl_block_q4_0 *y, int64_t nb);
void sl_quant_q4_1_blocks(const float *x, sl_block_q4_1 *y, int64_t nb);
void sl_quant_q5_0_blocks(const float *x, sl_block_q5_0 *y, int64_t nb);
void sl_quant_q5_1_blocks(const float *x, sl_block_q5_1 *y, int64_t nb);
void sl_quant_q2_k_blocks(const float *x, sl_block_q2_k *y, int64_t nb);
void sl_quant_q3_k_blocks(const float *x, sl_block_q3_k *y, int64_t nb);
void sl_quant_q4_k_blocks(const float *x, sl_block_q4_k *y, int64_t nb);
void sl_quant_q5_k_blocks(const float *x, sl_block_q5_k *y, int64_t nb);
void sl_quant_q6_k_blocks(const float *x, sl_block_q6_k *y, int64_t nb);

/* The codebook and ternary formats (quant_iq4.c, quant_ternary.c): dequantize
 * n elements; quantize nb blocks, qw = optional per-element importance
 * weights (NULL: plain squared error). */
void sl_quant_deq_iq4_nl(const void *src, float *y, int64_t n);
void sl_quant_deq_iq4_xs(const void *src, float *y, int64_t n);
void sl_quant_deq_mxfp4(const void *src, float *y, int64_t n);
void sl_quant_deq_tq1_0(const void *src, float *y, int64_t n);
void sl_quant_deq_tq2_0(const void *src, float *y, int64_t n);
void sl_quant_iq4_nl_blocks(const float *x, const float *qw, sl_block_iq4_nl *y, int64_t nb);
void sl_quant_iq4_xs_blocks(const float *x, const float *qw, sl_block_iq4_xs *y, int64_t nb);
void sl_quant_mxfp4_blocks(const float *x, const float *qw, sl_block_mxfp4 *y, int64_t nb);
void sl_quant_tq1_0_blocks(const float *x, sl_block_tq1_0 *y, int64_t nb);
void sl_quant_tq2_0_blocks(const float *x, sl_block_tq2_0 *y, int64_t nb);
/* Grid i-quants (quant_iqgrid.c, quant_iqgrid_q.c) over nb super-blocks;
 * SL_EUNSUPPORTED for another type. imatrix: NULL or 256*nb importance weights. */
int sl_quant_iqgrid_dequantize(int type, const void *src, float *y, int64_t nb);
int sl_quant_iqgrid_quantize(int type, const float *x, void *dst, int64_t nb, const float *imatrix);

#endif
