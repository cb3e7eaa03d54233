/* Block formats of GGUF tensors and activations: layouts, scalar dequantize,
 * reference quantize, activation quantizers. Depends on gguf/gguf_type.h only
 * (the ggml type table) and libc.
 * The scalar code here is the oracle that every SIMD kernel is tested against. */
#ifndef SL_QUANT_H
#define SL_QUANT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "../gguf/gguf_type.h"

/* Type ids and block geometry: gguf/gguf_type.h (enum sl_ggml_type,
 * sl_gguf_block_elems/_bytes, sl_gguf_row_bytes, sl_gguf_type_name), the
 * tree's one type table. quant/ adds the per-type operations below, keyed by
 * those ids; an unknown id fails here exactly as there. */

#define SL_QK   32    /* elements per block of the legacy formats */
#define SL_QKK  256   /* elements per K-quant super-block */

typedef uint16_t sl_f16;   /* IEEE half bits */
typedef uint16_t sl_bf16;  /* bfloat16 bits */

typedef struct { sl_f16 d; uint8_t qs[SL_QK / 2]; } sl_block_q4_0;
typedef struct { sl_f16 d, m; uint8_t qs[SL_QK / 2]; } sl_block_q4_1;
typedef struct { sl_f16 d; uint8_t qh[4]; uint8_t qs[SL_QK / 2]; } sl_block_q5_0;
typedef struct { sl_f16 d, m; uint8_t qh[4]; uint8_t qs[SL_QK / 2]; } sl_block_q5_1;
typedef struct { sl_f16 d; int8_t qs[SL_QK]; } sl_block_q8_0;
typedef struct { sl_f16 d, s; int8_t qs[SL_QK]; } sl_block_q8_1;
typedef struct { uint8_t scales[16]; uint8_t qs[64]; sl_f16 d, dmin; } sl_block_q2_k;
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; sl_f16 d; } sl_block_q3_k;
typedef struct { sl_f16 d, dmin; uint8_t scales[12]; uint8_t qs[128]; } sl_block_q4_k;
typedef struct { sl_f16 d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } sl_block_q5_k;
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; sl_f16 d; } sl_block_q6_k;
typedef struct { float d; int8_t qs[SL_QKK]; int16_t bsums[SL_QKK / 16]; } sl_block_q8_k;

/* 4-bit codebook and ternary formats (layouts: golden/quant/README.md). */
typedef struct { sl_f16 d; uint8_t qs[SL_QK / 2]; } sl_block_iq4_nl;
typedef struct { sl_f16 d; uint16_t scales_h; uint8_t scales_l[SL_QKK / 64]; uint8_t qs[SL_QKK / 2]; } sl_block_iq4_xs;
typedef struct { uint8_t e; uint8_t qs[SL_QK / 2]; } sl_block_mxfp4;     /* e: E8M0 exponent */
typedef struct { uint8_t qs[48]; uint8_t qh[4]; sl_f16 d; } sl_block_tq1_0; /* base-3 digits */
typedef struct { uint8_t qs[SL_QKK / 4]; sl_f16 d; } sl_block_tq2_0;

static_assert(sizeof(sl_block_q4_0) == 18, "q4_0 layout");
static_assert(sizeof(sl_block_q4_1) == 20, "q4_1 layout");
static_assert(sizeof(sl_block_q5_0) == 22, "q5_0 layout");
static_assert(sizeof(sl_block_q5_1) == 24, "q5_1 layout");
static_assert(sizeof(sl_block_q8_0) == 34, "q8_0 layout");
static_assert(sizeof(sl_block_q8_1) == 36, "q8_1 layout");
static_assert(sizeof(sl_block_q2_k) == 84, "q2_K layout");
static_assert(sizeof(sl_block_q3_k) == 110, "q3_K layout");
static_assert(sizeof(sl_block_q4_k) == 144, "q4_K layout");
static_assert(sizeof(sl_block_q5_k) == 176, "q5_K layout");
static_assert(sizeof(sl_block_q6_k) == 210, "q6_K layout");
static_assert(sizeof(sl_block_q8_k) == 292, "q8_K layout");
static_assert(sizeof(sl_block_iq4_nl) == 18, "iq4_nl layout");
static_assert(sizeof(sl_block_iq4_xs) == 136, "iq4_xs layout");
static_assert(sizeof(sl_block_mxfp4) == 17, "mxfp4 layout");
static_assert(sizeof(sl_block_tq1_0) == 54, "tq1_0 layout");
static_assert(sizeof(sl_block_tq2_0) == 66, "tq2_0 layout");

/* The 16 levels of IQ4_NL / IQ4_XS and of MXFP4 (twice the E2M1 values),
 * facts of the formats (quant_iq4.c). */
extern const int8_t sl_kvalues_iq4nl[16];
extern const int8_t sl_kvalues_mxfp4[16];
/* MXFP4's scale 2^(e-128) (E8M0 halved: the levels are doubled): a normal
 * float for e >= 2, the subnormals 2^-127 and 2^-128 for e = 1 and 0.
 * Inline: the dot kernels take it once per 32 elements. */
static inline float sl_e8m0_half(uint8_t e)
{
    union { uint32_t u; float f; } v = { e >= 2 ? (uint32_t)(e - 1) << 23 : 0x00200000u << e };
    return v.f;
}
/* Rows8: a matrix's rows in groups of eight, block b of a group holding the
 * eight rows' block b (type | SL_GGML_ROWS8 in tensor views; MXFP4, IQ4_NL,
 * Q8_0 and IQ4_XS). A group block is each scale field of the eight rows
 * (rows 0..7), field after field, then their payloads piece after piece:
 * a 16-byte nibble piece (a 32-element block or sub-block) in 4 x 32 bytes,
 * chunk k row k's then row k + 4's; Q8_0's 32 bytes a row, in row order.
 * IQ4_XS: d, scales_h, scales_l, then its eight 32-element sub-blocks so.
 * The same bytes as the plain rows (8 blocks), so packing is in place; a
 * decode kernel reads one linear stream for eight rows and ends each block
 * of eight dots with one convert and one FMA (kernels/rows8_*.c). */
typedef struct { uint8_t e[8]; uint8_t qs[4][32]; } sl_block_mxfp4_r8;
typedef struct { sl_f16 d[8]; uint8_t qs[4][32]; } sl_block_iq4_nl_r8;
typedef struct { sl_f16 d[8]; int8_t qs[8][32]; } sl_block_q8_0_r8;
typedef struct {
    sl_f16 d[8];
    uint16_t scales_h[8];
    uint8_t scales_l[8][SL_QKK / 64];
    uint8_t qs[8][4][32];   /* sub-block, chunk */
} sl_block_iq4_xs_r8;
static_assert(sizeof(sl_block_mxfp4_r8) == 8 * sizeof(sl_block_mxfp4), "rows8 mxfp4 layout");
static_assert(sizeof(sl_block_iq4_nl_r8) == 8 * sizeof(sl_block_iq4_nl), "rows8 iq4_nl layout");
static_assert(sizeof(sl_block_q8_0_r8) == 8 * sizeof(sl_block_q8_0), "rows8 q8_0 layout");
static_assert(sizeof(sl_block_iq4_xs_r8) == 8 * sizeof(sl_block_iq4_xs), "rows8 iq4_xs layout");
/* Where row i's payload sits in a group block's payload part (pb: its bytes). */
static inline size_t sl_quant_rows8_at(int i, size_t pb)
{
    return pb == 16 ? 32 * (size_t)(i & 3) + 16 * (size_t)(i >> 2) : pb * (size_t)i;
}
/* The type id without SL_GGML_ROWS8 (its blocks, row bytes, activation type). */
static inline int sl_quant_base_type(int type) { return type & ~(int)SL_GGML_ROWS8; }
/* 1 if `type` (no flag) has a rows8 layout. */
int sl_quant_rows8_supported(int type);
/* In place, rows (a multiple of 8) x cols of `type` from plain rows to rows8
 * (pack) and back (unpack). SL_EINVAL for a type without the layout or a bad
 * shape, SL_ENOMEM (scratch of one group). */
int sl_quant_rows8_pack(int type, void *data, int64_t rows, int64_t cols);
int sl_quant_rows8_unpack(int type, void *data, int64_t rows, int64_t cols);
/* IQ4_XS sub-block ib's 6-bit scale (stored +32: the factor is the result - 32)
 * from a block's fields (inline: also read from the rows8 layout). */
static inline int sl_quant_iq4_xs_ls(uint16_t scales_h, const uint8_t *scales_l, int ib)
{
    return ((scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | ((scales_h >> (2 * ib)) & 3) << 4;
}
static inline int sl_quant_iq4_xs_scale(const sl_block_iq4_xs *b, int ib)
{
    return sl_quant_iq4_xs_ls(b->scales_h, b->scales_l, ib);
}
/* The 256 base-3 digits t (value (t - 1) * d) of a TQ1_0 block in element order. */
void sl_quant_tq1_0_digits(const sl_block_tq1_0 *b, uint8_t t[SL_QKK]);

#include "quant_iqgrid.h"   /* IQ2_XXS .. IQ1_M block layouts and grids */

/* ---- scalar conversions ---------------------------------------------- */
float  sl_f16_to_f32(sl_f16 h);
sl_f16 sl_f32_to_f16(float f);          /* round to nearest even */
float  sl_bf16_to_f32(sl_bf16 h);
sl_bf16 sl_f32_to_bf16(float f);        /* round to nearest even; NaN stays NaN */

/* ---- per-type operations ---------------------------------------------- */
/* Activation type the weight type is dotted with: Q8_K for Q2_K..Q6_K,
 * IQ4_XS, TQ1_0, TQ2_0; Q8_0 for Q4_0/Q5_0/Q8_0, IQ4_NL, MXFP4; Q8_1 for
 * Q4_1/Q5_1; F16/BF16/F32 for themselves; a rows8 type with SL_GGML_ROWS8
 * its plain form's;
 * -1 for the activation-only Q8_1 / Q8_K and for unknown ids (with the
 * table's "unknown ggml tensor type" message). */
int sl_quant_vec_dot_type(int type);
/* True if the type is a known weight type, i.e. has a vec_dot type (Q8_1 /
 * Q8_K dequantize too but are activation-only: 0). */
int sl_quant_is_supported(int type);

/* ---- dequantize (bit-exact with the golden to_float: no FMA contraction) */
/* n must be a multiple of the type's block; returns 0, SL_EINVAL (bad n or
 * pointer) or SL_EUNSUPPORTED (unknown type). */
int sl_quant_dequantize_row(int type, const void *src, float *dst, int64_t n);

/* ---- quantize (reference; RMSE within a few % of ggml's reference) ----- */
/* Returns bytes written, SL_EINVAL or SL_EUNSUPPORTED (as dequantize). Works
 * for every weight type and for the activation types Q8_0, Q8_1, Q8_K (same as
 * the functions below). */
int64_t sl_quant_quantize_row(int type, const float *src, void *dst, int64_t n);
/* The same with an importance matrix: imatrix[i] >= 0 weighs the squared
 * error of element i (n values, one per column; NULL = none). Types that use
 * one (the i-quants) weigh by it, the others ignore it. */
int64_t sl_quant_quantize_row_imat(int type, const float *src, void *dst, int64_t n,
                                   const float *imatrix);

/* ---- activation quantizers (exact reference semantics, see golden README)
 * n must be a multiple of the block (32 / 256); a partial tail is not written. */
void sl_quant_row_q8_0(const float *x, sl_block_q8_0 *y, int64_t n);
void sl_quant_row_q8_1(const float *x, sl_block_q8_1 *y, int64_t n);
void sl_quant_row_q8_k(const float *x, sl_block_q8_k *y, int64_t n);
void sl_quant_row_f16(const float *x, sl_f16 *y, int64_t n);
void sl_quant_row_bf16(const float *x, sl_bf16 *y, int64_t n);

#endif
