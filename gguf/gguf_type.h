/* ggml tensor types: the on-disk ids and their block geometry, the one table
 * for the whole tree. gguf/ sizes tensors with it; quant/ keys its per-type
 * operations (dequantize, quantize, vec_dot type) by these ids; kernels/ index
 * their function tables with them. libc only.
 *
 * Unknown ids (not in the table, out of range, negative ints passed in) get the
 * same treatment from every function here and in quant/: the failure value
 * (NULL, 0 or SL_EUNSUPPORTED) and the thread's message
 * "unknown ggml tensor type N" (sl_last_error()). */
#ifndef SL_GGUF_TYPE_H
#define SL_GGUF_TYPE_H

#include <stddef.h>
#include <stdint.h>
#include "sl_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The on-disk numbers. Ids below SL_GGML_TYPE_COUNT index per-type tables;
 * not every id below it is a type (4, 5, 24..28, 31..33, 36..38 are absent,
 * retired or not weight formats here). */
enum sl_ggml_type {
    SL_GGML_F32 = 0, SL_GGML_F16 = 1, SL_GGML_Q4_0 = 2, SL_GGML_Q4_1 = 3,
    SL_GGML_Q5_0 = 6, SL_GGML_Q5_1 = 7, SL_GGML_Q8_0 = 8, SL_GGML_Q8_1 = 9,
    SL_GGML_Q2_K = 10, SL_GGML_Q3_K = 11, SL_GGML_Q4_K = 12, SL_GGML_Q5_K = 13,
    SL_GGML_Q6_K = 14, SL_GGML_Q8_K = 15,
    SL_GGML_IQ2_XXS = 16, SL_GGML_IQ2_XS = 17, SL_GGML_IQ3_XXS = 18, SL_GGML_IQ1_S = 19,
    SL_GGML_IQ4_NL = 20, SL_GGML_IQ3_S = 21, SL_GGML_IQ2_S = 22, SL_GGML_IQ4_XS = 23,
    SL_GGML_IQ1_M = 29,
    SL_GGML_BF16 = 30,
    SL_GGML_TQ1_0 = 34, SL_GGML_TQ2_0 = 35,
    SL_GGML_MXFP4 = 39,
    SL_GGML_TYPE_COUNT = 40
};
/* Set on a type id in memory, never in a file: the matrix's rows are stored
 * interleaved in groups of eight (quant/quant.h, "rows8"). Functions here
 * refuse such ids; quant/ and kernels/ take them where they say so. */
#define SL_GGML_ROWS8 0x100u

/* Name ("q4_K"); NULL for an unknown id. */
SL_API const char *sl_gguf_type_name(uint32_t type);
/* Elements per block (1 for F32/F16/BF16, 32 legacy/IQ4_NL/MXFP4, 256 K-quants,
 * i-quants and ternary) and bytes
 * per block; 0 for an unknown id. */
SL_API uint32_t sl_gguf_block_elems(uint32_t type);
SL_API uint32_t sl_gguf_block_bytes(uint32_t type);
/* Bytes of a row of n elements; 0 for an unknown id, n < 0, n not a multiple
 * of the block or a size that does not fit size_t (each with a message). */
SL_API size_t sl_gguf_row_bytes(uint32_t type, int64_t n);
/* Bytes of a tensor; SL_EFORMAT if ne[0] is not a multiple of the block,
 * SL_ERANGE on overflow, SL_EUNSUPPORTED for unknown types. */
SL_API int sl_gguf_tensor_size(uint32_t type, uint32_t n_dims, const uint64_t *ne, uint64_t *out);

#ifdef __cplusplus
}
#endif

#endif
