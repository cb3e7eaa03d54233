/* Internal to kernels/: the per-level table fillers dispatch.c calls to
 * build each sl_kern (dot: vec_dot + gemm tiles; ops: float ops; gemm: the
 * prefill panels), the sl_panel interface, and the scalar helpers the SIMD
 * files and tests share. A level's files are compiled only on its
 * architecture, each with its own -m flags. */
#ifndef SL_KERN_INTERNAL_H
#define SL_KERN_INTERNAL_H

#include <string.h>

#include "kernels.h"

void sl_dot_fill_scalar(sl_kern *k);
void sl_rows8_fill_scalar(sl_kern *k);     /* rows8[] of every level, rows8_fast[] clear */
void sl_ops_fill_scalar(sl_kern *k);
#if defined(__x86_64__) || defined(__i386__)
void sl_dot_fill_avx2(sl_kern *k);
void sl_ops_fill_avx2(sl_kern *k);
void sl_act_fill_avx2(sl_kern *k);   /* also for the avx512 levels */
void sl_gemm_fill_avx2(sl_kern *k);        /* prefill panel GEMM (avx2 and avx512) */
void sl_dot_fill_avx512(sl_kern *k);
void sl_ops_fill_avx512(sl_kern *k);
void sl_dot_fill_avx512vnni(sl_kern *k);   /* may reuse avx512 ops */
void sl_dot_fill_avx512vbmi(sl_kern *k);   /* over avx512vnni's: the X86_LEVEL types */
void sl_gemm_fill_avx512vnni(sl_kern *k);  /* prefill panel GEMM */
void sl_wide_fill_avx512vnni(sl_kern *k);  /* few-row panel (q4_K, q6_K) */
void sl_dot_fill_iq4_avx2(sl_kern *k);     /* IQ4_NL, IQ4_XS, MXFP4, TQ1_0, TQ2_0 */
void sl_dot_fill_iq4_avx512(sl_kern *k);
void sl_dot_fill_iq4_avx512vnni(sl_kern *k);
void sl_dot_fill_iqgrid_avx2(sl_kern *k);  /* the grid i-quants (dot_iqgrid.h) */
void sl_dot_fill_iqgrid_avx512(sl_kern *k);
void sl_dot_fill_iqgrid_avx512vnni(sl_kern *k);
void sl_rows8_fill_avx2(sl_kern *k);       /* also for the avx512 levels */
#endif
#if defined(__aarch64__)
void sl_dot_fill_neon(sl_kern *k);
void sl_ops_fill_neon(sl_kern *k);
void sl_dot_fill_dotprod(sl_kern *k);      /* may reuse neon ops */
void sl_gemm_fill_dotprod(sl_kern *k);     /* prefill panel GEMM */
void sl_dot_fill_iqgrid_neon(sl_kern *k);
void sl_dot_fill_iqgrid_dotprod(sl_kern *k);
void sl_rows8_fill_neon(sl_kern *k);
void sl_rows8_fill_dotprod(sl_kern *k);
#endif

#define SL_PANEL_MIN_ACT 10
/* Prefill GEMM on a panel of activation rows (matmul with n_act >= 10 on
 * levels that set sl_kern.panel[type]): pack() transposes the activation
 * rows once per call into panel_bytes(); run() computes Y rows [r0, r1)
 * for all of them with scratch_bytes(n_act) of private scratch per thread.
 * Results agree with vec_dot within the float rounding bound of the tests.
 * The few-row panels (sl_kern.wpanel, min_act .. max_act rows, below
 * SL_PANEL_MIN_ACT) have the same interface and give vec_dot's bits. */
typedef struct sl_panel {
    size_t (*panel_bytes)(int64_t cols, int64_t n_act);
    size_t (*scratch_bytes)(int64_t n_act);
    void (*pack)(const void *act, size_t arb, int64_t n_act, int64_t nb, void *panel);
    void (*run)(const void *W, size_t wrb, int64_t r0, int64_t r1, int64_t cols,
                const void *panel, int64_t n_act, float *Y, int64_t ldy, void *scratch);
    int block;               /* elements per block: nb = cols / block */
    int min_act, max_act;    /* few-row panels: the row counts they are used for */
} sl_panel;

/* The integer-dot types, one X-macro list per kernel family; the scalar
 * oracle and every SIMD level expand them (as the grid i-quants expand
 * SL_IQGRID_EACH, dot_iqgrid.h) instead of naming instances, so a new type is
 * its kernels plus one line here.
 * X(T, ID, XB, YB, BE, DU): T the name suffix, ID the ggml type, XB / YB the
 * weight and activation blocks, BE elements per block, DU the blocks per
 * decode iteration of the x86 drivers (q2_K / q3_K measured 1-2% faster with
 * two: more independent work in flight; q4_K / q6_K slower; 8: eight
 * 32-element blocks per step, their scales converted together, dot_x86.h:
 * MXFP4 7% faster, IQ4_NL 2%, Q8_0 6% slower). */
#define SL_KQ_EACH(X)                                                          \
    X(q4_k, SL_GGML_Q4_K, sl_block_q4_k, sl_block_q8_k, SL_QKK, 1)              \
    X(q5_k, SL_GGML_Q5_K, sl_block_q5_k, sl_block_q8_k, SL_QKK, 1)              \
    X(q6_k, SL_GGML_Q6_K, sl_block_q6_k, sl_block_q8_k, SL_QKK, 1)              \
    X(q2_k, SL_GGML_Q2_K, sl_block_q2_k, sl_block_q8_k, SL_QKK, 2)              \
    X(q3_k, SL_GGML_Q3_K, sl_block_q3_k, sl_block_q8_k, SL_QKK, 2)              \
    X(q4_0, SL_GGML_Q4_0, sl_block_q4_0, sl_block_q8_0, SL_QK, 1)               \
    X(q4_1, SL_GGML_Q4_1, sl_block_q4_1, sl_block_q8_1, SL_QK, 1)               \
    X(q5_0, SL_GGML_Q5_0, sl_block_q5_0, sl_block_q8_0, SL_QK, 1)               \
    X(q5_1, SL_GGML_Q5_1, sl_block_q5_1, sl_block_q8_1, SL_QK, 1)               \
    X(q8_0, SL_GGML_Q8_0, sl_block_q8_0, sl_block_q8_0, SL_QK, 1)
/* The codebook and ternary family, the same columns. */
#define SL_IQ4_EACH(X)                                                         \
    X(iq4_nl, SL_GGML_IQ4_NL, sl_block_iq4_nl, sl_block_q8_0, SL_QK, 8)         \
    X(iq4_xs, SL_GGML_IQ4_XS, sl_block_iq4_xs, sl_block_q8_k, SL_QKK, 1)        \
    X(mxfp4, SL_GGML_MXFP4, sl_block_mxfp4, sl_block_q8_0, SL_QK, 8)            \
    X(tq1_0, SL_GGML_TQ1_0, sl_block_tq1_0, sl_block_q8_k, SL_QKK, 1)           \
    X(tq2_0, SL_GGML_TQ2_0, sl_block_tq2_0, sl_block_q8_k, SL_QKK, 1)

/* Scalar block kernel of the oracle: block i of x with block i of y gives the
 * float terms a - b of the dot; am = 1 gives magnitudes (sl_dot_scalar_mag).
 * dot_scalar.c has the table and the K-quant / legacy ones; the codebook /
 * ternary types' are dot_scalar_iq4.c's. */
typedef void (*sl_dot_blk_fn)(const void *x, const void *y, int64_t i, float *a, float *b, int am);
#define SL_DOT_BLK_DECL(T, ...) \
    void sl_dot_blk_##T(const void *x, const void *y, int64_t i, float *a, float *b, int am);
SL_IQ4_EACH(SL_DOT_BLK_DECL)

/* Scalar oracle helpers (dot_scalar.c), shared with the SIMD files and tests. */
/* sum over elements of |d sc| (|q| + 2 offset) |y| + |dmin m| |y|: bounds the
 * magnitude of every float term any level forms from its exact integer sums,
 * so rounding differences between levels are <= c * u * mag (see tests). */
float sl_dot_scalar_mag(int type, int64_t n, const void *x, const void *y);
void sl_q3k_scales(const uint8_t *sc12, int8_t out[16]);          /* -32 applied */

/* Float-type row element i as f32 (the SIMD float dots' scalar tails). */
enum { SL_FT_F32, SL_FT_F16, SL_FT_BF16 };
static inline float sl_ft_get(const void *p, int64_t i, int ft)
{
    if (ft == SL_FT_F32)
        return ((const float *)p)[i];
    if (ft == SL_FT_F16)
        return sl_f16_to_f32(((const sl_f16 *)p)[i]);
    return sl_bf16_to_f32(((const sl_bf16 *)p)[i]);
}

/* Sum of a Q8_K block's 256 values, from its 16 block sums. */
static inline int sl_q8k_sum(const sl_block_q8_k *y)
{
    int s = 0;
    for (int j = 0; j < 16; j++) s += y->bsums[j];
    return s;
}

/* Two int16 as one dword (lo in the low word): the word pairs vpdpwssd /
 * vpmaddwd multiply (the x86 panel GEMMs). */
static inline int32_t sl_pair16(int lo, int hi) { return (int32_t)((uint32_t)(uint16_t)lo | (uint32_t)(uint16_t)hi << 16); }

/* The 16 q3_K 6-bit scales, biased by +32 (subtract 32 for the value), 4 per
 * 32-bit word in sub-block order. */
static inline void sl_q3k_words(const uint8_t *s12, uint32_t w[4])
{
    uint32_t a[3];
    memcpy(a, s12, 12);
    w[0] = (a[0] & 0x0f0f0f0f) | (((a[2] >> 0) & 0x03030303) << 4);
    w[1] = (a[1] & 0x0f0f0f0f) | (((a[2] >> 2) & 0x03030303) << 4);
    w[2] = ((a[0] >> 4) & 0x0f0f0f0f) | (((a[2] >> 4) & 0x03030303) << 4);
    w[3] = ((a[1] >> 4) & 0x0f0f0f0f) | (((a[2] >> 6) & 0x03030303) << 4);
}

/* All 8 q4_K/q5_K 6-bit scales and mins at once, 4 per 32-bit word (byte j
 * of the pair is sub-block j): plain integer work, shared by the SIMD files. */
static inline void sl_q4k_scales8(const uint8_t *s12, uint32_t sc[2], uint32_t mn[2])
{
    uint32_t w[3];
    memcpy(w, s12, 12);
    sc[0] = w[0] & 0x3f3f3f3f;
    mn[0] = w[1] & 0x3f3f3f3f;
    sc[1] = (w[2] & 0x0f0f0f0f) | (((w[0] >> 6) & 0x03030303) << 4);
    mn[1] = ((w[2] >> 4) & 0x0f0f0f0f) | (((w[1] >> 6) & 0x03030303) << 4);
}

#endif
