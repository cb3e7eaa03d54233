/* Internal to kernels/: the grid i-quants' dot with Q8_K (IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M). Every level computes, per
 * super-block, one exact integer sum isum and adds (d * d8) * mult * isum:
 *   iq2_*:   isum = sum over scale groups of (2s+1) * sum(q8 * signed grid), mult 1/8
 *   iq3_xxs: the same, mult 1/4;  iq3_s: mult 1
 *   iq1_*:   isum = sum over groups of (2s+1) * sum(q8 * (8 g + delta8)),
 *            delta8 = +-1 (the +-1/8 delta times 8), mult 1/8
 * so levels differ only in the order of the float additions. */
#ifndef SL_DOT_IQGRID_H
#define SL_DOT_IQGRID_H

#include "kern_internal.h"

/* The facts every level instantiates its kernels from, once per type:
 * X(T, ID, BT, DBITS, MULT): T the name suffix, ID the ggml type, BT the
 * block, DBITS the fp16 bits of the block's d (of block pointer x), MULT the
 * scale of isum (the scheme above). Each level converts DBITS its own way. */
#define SL_IQGRID_EACH(X)                                                    \
    X(iq2_xxs, SL_GGML_IQ2_XXS, sl_block_iq2_xxs, x->d, 0.125f)              \
    X(iq2_xs, SL_GGML_IQ2_XS, sl_block_iq2_xs, x->d, 0.125f)                 \
    X(iq2_s, SL_GGML_IQ2_S, sl_block_iq2_s, x->d, 0.125f)                    \
    X(iq3_xxs, SL_GGML_IQ3_XXS, sl_block_iq3_xxs, x->d, 0.25f)               \
    X(iq3_s, SL_GGML_IQ3_S, sl_block_iq3_s, x->d, 1.0f)                      \
    X(iq1_s, SL_GGML_IQ1_S, sl_block_iq1_s, x->d, 0.125f)                    \
    X(iq1_m, SL_GGML_IQ1_M, sl_block_iq1_m, sl_iq1m_d_bits(x->scales), 0.125f)

/* The scalar oracle's per-block terms (dot_iqgrid_scalar.c), in dot_scalar.c's
 * block-kernel form: *a = this block's term, *b = 0; am = magnitudes. */
SL_IQGRID_EACH(SL_DOT_BLK_DECL)

/* The drivers of the x86 levels (avx2's dot_iqgrid_x86.h, avx512's
 * dot_iqgrid_z.h); NEON sums straight from the block. The scalar oracle's
 * per-block terms, summed in double in its order. DOT is the vec_dot, where
 * XSUM(x, q8) is a block's exact integer sum; GEMM the gemm tile, which
 * unpacks a weight row's block once (UNP into a UT) for up to SL_GEMM_MAX
 * activation rows and sums each with ISUM(&u, q8) (the same integer sum:
 * bit-identical to DOT). */
#define IQ_GRID_DOT(DOT, BT, XSUM, DEXPR, MULT)                                             \
    static void DOT(int64_t n, float *s, const void *vx, const void *vy)                \
    {                                                                                   \
        const BT *x = vx;                                                               \
        const sl_block_q8_k *y = vy;                                                    \
        double sum = 0.0;                                                               \
        for (int64_t i = 0; i < n / SL_QKK; i++, x++, y++) {                            \
            float dd = (DEXPR) * y->d;                                                  \
            sum += (double)(dd * (MULT) * (float)XSUM(x, y->qs));                       \
        }                                                                               \
        *s = (float)sum;                                                                \
    }

#define IQ_GRID_GEMM(GEMM, BT, UT, UNP, ISUM, DEXPR, MULT)                                  \
    static void GEMM(int64_t n, const void *vx, size_t bx, int nx, const void *vy,      \
                     size_t by, int ny, float *s, int64_t lds)                          \
    {                                                                                   \
        for (int r = 0; r < nx; r++) {                                                  \
            double sum[SL_GEMM_MAX] = { 0 };                                            \
            const BT *x = (const BT *)((const char *)vx + (size_t)r * bx);              \
            for (int64_t i = 0; i < n / SL_QKK; i++, x++) {                             \
                UT u;                                                                   \
                UNP(x, &u);                                                             \
                float dx = (DEXPR);                                                     \
                for (int c = 0; c < ny; c++) {                                          \
                    const sl_block_q8_k *y = (const sl_block_q8_k *)((const char *)vy + (size_t)c * by) + i; \
                    float dd = dx * y->d;                                               \
                    sum[c] += (double)(dd * (MULT) * (float)ISUM(&u, y->qs));           \
                }                                                                       \
            }                                                                           \
            for (int c = 0; c < ny; c++) s[c * lds + r] = (float)sum[c];                \
        }                                                                               \
    }

/* both from an unpacked block (avx512: the block does not fit the registers) */
#define IQ_GRID_DRIVER(DOT, GEMM, BT, UT, UNP, ISUM, DEXPR, MULT)                         \
    static inline int32_t DOT##_xsum(const BT *x, const int8_t *q)                      \
    {                                                                                   \
        UT u;                                                                           \
        UNP(x, &u);                                                                     \
        return ISUM(&u, q);                                                             \
    }                                                                                   \
    IQ_GRID_DOT(DOT, BT, DOT##_xsum, DEXPR, MULT)                                       \
    IQ_GRID_GEMM(GEMM, BT, UT, UNP, ISUM, DEXPR, MULT)

#endif
