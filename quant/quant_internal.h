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

/* One row of the type table: what quant/ does with a ggml type (its name and
 * block geometry are gguf/gguf_type.c's). Both functions take nb whole blocks;
 * imatrix is NULL or nb * block importance weights (types that do not use one
 * ignore it); quantize returns 0 or a negative SL_E*. */
typedef struct sl_quant_traits {
    void (*dequantize)(const void *src, float *y, int64_t nb);
    int (*quantize)(const float *x, void *dst, int64_t nb, const float *imatrix); /* NULL: none */
    int vec_dot_type;   /* the activation type of its dot; -1: activation-only */
} sl_quant_traits;

/* Every type quant/ knows: X(ID, t) for SL_GGML_<ID>, whose row
 * sl_qtraits_<t> its family file defines (quant_act.c: the float and 8-bit
 * activation formats; quant_legacy.c, quant_kquant.c, quant_iq4.c,
 * quant_ternary.c, quant_iqgrid.c). A new type is its file's row and a line here. */
#define SL_QUANT_TYPES(X)                                                     \
    X(F32, f32) X(F16, f16) X(BF16, bf16) X(Q8_0, q8_0) X(Q8_1, q8_1) X(Q8_K, q8_k) \
    X(Q4_0, q4_0) X(Q4_1, q4_1) X(Q5_0, q5_0) X(Q5_1, q5_1)                   \
    X(Q2_K, q2_k) X(Q3_K, q3_k) X(Q4_K, q4_k) X(Q5_K, q5_k) X(Q6_K, q6_k)    \
    X(IQ4_NL, iq4_nl) X(IQ4_XS, iq4_xs) X(MXFP4, mxfp4) X(TQ1_0, tq1_0) X(TQ2_0, tq2_0) \
    X(IQ2_XXS, iq2_xxs) X(IQ2_XS, iq2_xs) X(IQ2_S, iq2_s) X(IQ3_XXS, iq3_xxs) \
    X(IQ3_S, iq3_s) X(IQ1_S, iq1_s) X(IQ1_M, iq1_m)

#define SL_QUANT_DECLARE_ROW(ID, t) extern const sl_quant_traits sl_qtraits_##t;
SL_QUANT_TYPES(SL_QUANT_DECLARE_ROW)
#undef SL_QUANT_DECLARE_ROW

/* The row of a type; NULL with gguf's "unknown ggml tensor type N" message for
 * an id the type table does not know. */
const sl_quant_traits *sl_quant_traits_of(int type);

/* Grid i-quants (quant_iqgrid_q.c) over nb super-blocks;
 * SL_EUNSUPPORTED for another type. imatrix: NULL or 256*nb importance weights. */
int sl_quant_iqgrid_quantize(int type, const float *x, void *dst, int64_t nb, const float *imatrix);

#endif
