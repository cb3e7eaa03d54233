/* sl_quant_quantize_row: argument checks and dispatch to the per-format
 * quantizers. */
#include <string.h>

#include "quant_internal.h"

int64_t sl_quant_quantize_row(int type, const float *src, void *dst, int64_t n)
{
    return sl_quant_quantize_row_imat(type, src, dst, n, NULL);
}

int64_t sl_quant_quantize_row_imat(int type, const float *src, void *dst, int64_t n,
                                   const float *imatrix)
{
    int64_t be = sl_gguf_block_elems((uint32_t)type);
    if (be == 0) return SL_EUNSUPPORTED;
    if (n == 0) return 0;
    size_t bytes = sl_gguf_row_bytes((uint32_t)type, n);
    if (!bytes) return SL_EINVAL;   /* n < 0 or a partial block: the table's message */
    if (!src || !dst) return SL_EINVAL;
    int64_t nb = n / be;
    switch (type) {
    case SL_GGML_F32:  memcpy(dst, src, bytes); break;
    case SL_GGML_F16:  sl_quant_row_f16(src, dst, n); break;
    case SL_GGML_BF16: sl_quant_row_bf16(src, dst, n); break;
    case SL_GGML_Q4_0: sl_quant_q4_0_blocks(src, dst, nb); break;
    case SL_GGML_Q4_1: sl_quant_q4_1_blocks(src, dst, nb); break;
    case SL_GGML_Q5_0: sl_quant_q5_0_blocks(src, dst, nb); break;
    case SL_GGML_Q5_1: sl_quant_q5_1_blocks(src, dst, nb); break;
    case SL_GGML_Q8_0: sl_quant_row_q8_0(src, dst, n); break;
    case SL_GGML_Q8_1: sl_quant_row_q8_1(src, dst, n); break;
    case SL_GGML_Q8_K: sl_quant_row_q8_k(src, dst, n); break;
    case SL_GGML_Q2_K: sl_quant_q2_k_blocks(src, dst, nb); break;
    case SL_GGML_Q3_K: sl_quant_q3_k_blocks(src, dst, nb); break;
    case SL_GGML_Q4_K: sl_quant_q4_k_blocks(src, dst, nb); break;
    case SL_GGML_Q5_K: sl_quant_q5_k_blocks(src, dst, nb); break;
    case SL_GGML_Q6_K: sl_quant_q6_k_blocks(src, dst, nb); break;
    case SL_GGML_IQ4_NL: sl_quant_iq4_nl_blocks(src, imatrix, dst, nb); break;
    case SL_GGML_IQ4_XS: sl_quant_iq4_xs_blocks(src, imatrix, dst, nb); break;
    case SL_GGML_MXFP4: sl_quant_mxfp4_blocks(src, imatrix, dst, nb); break;
    case SL_GGML_TQ1_0: sl_quant_tq1_0_blocks(src, dst, nb); break;
    case SL_GGML_TQ2_0: sl_quant_tq2_0_blocks(src, dst, nb); break;
    case SL_GGML_IQ2_XXS: case SL_GGML_IQ2_XS: case SL_GGML_IQ2_S: case SL_GGML_IQ3_XXS:
    case SL_GGML_IQ3_S: case SL_GGML_IQ1_S: case SL_GGML_IQ1_M:
        return sl_quant_iqgrid_quantize(type, src, dst, nb, imatrix) < 0 ? SL_EINVAL : (int64_t)bytes;
    default: return SL_EUNSUPPORTED;
    }
    return (int64_t)bytes;
}
