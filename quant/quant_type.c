/* The activation type of each weight type's dot product. Block geometry and
 * names are gguf/gguf_type.c's: this file only adds the quant/ fact. */
#include "quant_internal.h"

int sl_quant_vec_dot_type(int type)
{
    if (!sl_gguf_type_name((uint32_t)type)) return -1;   /* unknown: the table's message */
    switch (type) {
    case SL_GGML_F32: case SL_GGML_F16: case SL_GGML_BF16: return type;
    case SL_GGML_Q4_0: case SL_GGML_Q5_0: case SL_GGML_Q8_0:
    case SL_GGML_IQ4_NL: case SL_GGML_MXFP4: return SL_GGML_Q8_0;
    case SL_GGML_Q4_1: case SL_GGML_Q5_1: return SL_GGML_Q8_1;
    case SL_GGML_Q2_K: case SL_GGML_Q3_K: case SL_GGML_Q4_K: case SL_GGML_Q5_K:
    case SL_GGML_Q6_K: case SL_GGML_IQ4_XS: case SL_GGML_TQ1_0: case SL_GGML_TQ2_0:
        return SL_GGML_Q8_K;
    case SL_GGML_IQ2_XXS: case SL_GGML_IQ2_XS: case SL_GGML_IQ2_S: case SL_GGML_IQ3_XXS:
    case SL_GGML_IQ3_S: case SL_GGML_IQ1_S: case SL_GGML_IQ1_M: return SL_GGML_Q8_K;
    default: return -1;                                   /* activation-only Q8_1 / Q8_K */
    }
}

int sl_quant_is_supported(int type) { return sl_quant_vec_dot_type(type) >= 0; }
