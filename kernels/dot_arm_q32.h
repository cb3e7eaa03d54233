/* aarch64 vec_dot and few-row gemm of MXFP4, IQ4_NL and Q8_0 (32-element
 * blocks against Q8_0 activations), included by dot_neon.c and dot_dotprod.c
 * after dot_arm.h / dot_arm_iq4.h, whose generic tile they replace for these
 * types (arm_fill_q32 runs last). The generic tile keeps its accumulators in
 * an array indexed at run time and reloads the lookup table every block,
 * ~48 instructions a row-block; here the activation-row count is a
 * compile-time constant (1..4), so the accumulators, the table and the
 * weight block's 32 levels stay in registers. The arithmetic of each
 * (weight row, activation row) pair is the generic pair's (blk_T of
 * dot_arm.h / dot_arm_iq4.h): the same int32 lanes a block (dot32's lane
 * split), converted and accumulated with one FMA by d_x * d_y, then
 * vaddvq_f32 + 0, so vec_dot, gemm and gemm_wide keep their bits. */
#ifndef SL_DOT_ARM_Q32_H
#define SL_DOT_ARM_Q32_H

#define Q32_INL static inline __attribute__((always_inline))
#define Q32_UNROLL _Pragma("GCC unroll 4")

enum { Q32_Q8_0, Q32_IQ4_NL, Q32_MXFP4 };

/* sl_e8m0_half of every exponent (filled by arm_fill_q32): one load a block
 * where the formula takes six instructions. */
static float FN(e8m0_half)[256];

/* Weight block b of a row: its 32 levels (w[0]: elements 0..15, w[1]:
 * 16..31) and d_x. */
Q32_INL float q32_unpack(const int K, const void *row, int64_t b, int8x16_t lut, int8x16_t w[2])
{
    if (K == Q32_Q8_0) {
        const sl_block_q8_0 *x = (const sl_block_q8_0 *)row + b;
        w[0] = vld1q_s8(x->qs);
        w[1] = vld1q_s8(x->qs + 16);
        return f16s(x->d);
    }
    const uint8_t *qs = K == Q32_MXFP4 ? ((const sl_block_mxfp4 *)row + b)->qs : ((const sl_block_iq4_nl *)row + b)->qs;
    uint8x16_t q = vld1q_u8(qs);
    w[0] = vqtbl1q_s8(lut, vandq_u8(q, vdupq_n_u8(15)));
    w[1] = vqtbl1q_s8(lut, vshrq_n_u8(q, 4));
    return K == Q32_MXFP4 ? FN(e8m0_half)[((const sl_block_mxfp4 *)row + b)->e] : f16s(((const sl_block_iq4_nl *)row + b)->d);
}

/* dot32's int32 lanes (lane i: bytes 2i, 2i + 1, 8 + 2i, 9 + 2i of both
 * halves; the sums are exact, so any grouping gives the same lanes). neon
 * sums in int16 as far as the levels allow: MXFP4 |level| <= 12, four
 * products a lane; IQ4_NL |level| <= 127, two (2 * 127 * 128 < 2^15); Q8_0
 * one, -128 * -128 twice would not fit. */
Q32_INL int32x4_t q32_dot(const int K, const int8x16_t w[2], const int8_t *yq)
{
    int8x16_t y0 = vld1q_s8(yq), y1 = vld1q_s8(yq + 16);
#if ARM_DOTPROD
    (void)K;
    return dot32(w[0], w[1], y0, y1);
#else
    if (K == Q32_MXFP4) {
        int16x8_t t = vmull_s8(vget_low_s8(w[0]), vget_low_s8(y0));
        t = vmlal_high_s8(t, w[0], y0);
        t = vmlal_s8(t, vget_low_s8(w[1]), vget_low_s8(y1));
        return vpaddlq_s16(vmlal_high_s8(t, w[1], y1));
    }
    if (K == Q32_IQ4_NL) {
        int32x4_t s = vpaddlq_s16(vmlal_high_s8(vmull_s8(vget_low_s8(w[0]), vget_low_s8(y0)), w[0], y0));
        return vpadalq_s16(s, vmlal_high_s8(vmull_s8(vget_low_s8(w[1]), vget_low_s8(y1)), w[1], y1));
    }
    return dot32(w[0], w[1], y0, y1);
#endif
}

/* Block b of one weight row against NY activation rows. */
Q32_INL void q32_step(const int K, const int NY, const void *row, int64_t b, int8x16_t lut,
                      const char *vy, size_t by, float32x4_t *acc)
{
    int8x16_t w[2];
    float dx = q32_unpack(K, row, b, lut, w);
    Q32_UNROLL for (int j = 0; j < NY; j++) {
        const sl_block_q8_0 *y = (const sl_block_q8_0 *)(const void *)(vy + (size_t)j * by) + b;
        acc[j] = vfmaq_f32(acc[j], vcvtq_f32_s32(q32_dot(K, w, y->qs)), vdupq_n_f32(dx * f16s(y->d)));
    }
}

/* One weight row against NY activation rows: s[j * lds], j < NY. */
Q32_INL void q32_rows(const int K, const int NY, int64_t nb, const void *row, const char *vy, size_t by,
                      float *s, int64_t lds)
{
    const int8x16_t lut = vld1q_s8(K == Q32_MXFP4 ? sl_kvalues_mxfp4 : sl_kvalues_iq4nl);
    float32x4_t acc[4];
    Q32_UNROLL for (int j = 0; j < NY; j++) acc[j] = vdupq_n_f32(0.0f);
    int64_t b = 0;
    if (NY == 1)                        /* decode: four blocks a pass */
        for (; b + 4 <= nb; b += 4) {
            q32_step(K, NY, row, b, lut, vy, by, acc);
            q32_step(K, NY, row, b + 1, lut, vy, by, acc);
            q32_step(K, NY, row, b + 2, lut, vy, by, acc);
            q32_step(K, NY, row, b + 3, lut, vy, by, acc);
        }
    for (; b + 2 <= nb; b += 2) {
        q32_step(K, NY, row, b, lut, vy, by, acc);
        q32_step(K, NY, row, b + 1, lut, vy, by, acc);
    }
    if (b < nb) q32_step(K, NY, row, b, lut, vy, by, acc);
    Q32_UNROLL for (int j = 0; j < NY; j++) s[j * lds] = vaddvq_f32(acc[j]) + 0.0f;
}

/* gemm (and gemm_wide where the type has one): each weight row against the
 * activation rows four at a time. */
Q32_INL void q32_gemm(const int K, int64_t n, const void *vx, size_t bx, int nx, const void *vy, size_t by,
                      int ny, float *s, int64_t lds)
{
    int64_t nb = n / SL_QK;
    for (int i = 0; i < nx; i++) {
        const void *row = (const char *)vx + (size_t)i * bx;
        for (int j = 0; j < ny; j += 4) {
            const char *y = (const char *)vy + (size_t)j * by;
            float *o = s + j * lds + i;
            switch (ny - j) {
            case 1: q32_rows(K, 1, nb, row, y, by, o, lds); break;
            case 2: q32_rows(K, 2, nb, row, y, by, o, lds); break;
            case 3: q32_rows(K, 3, nb, row, y, by, o, lds); break;
            default: q32_rows(K, 4, nb, row, y, by, o, lds); break;
            }
        }
    }
}

#define Q32_DEF(T, K)                                                                    \
static void FN(q32_gemm_##T)(int64_t n, const void *vx, size_t bx, int nx,               \
                             const void *vy, size_t by, int ny, float *s, int64_t lds)   \
{                                                                                        \
    q32_gemm(K, n, vx, bx, nx, vy, by, ny, s, lds);                                      \
}                                                                                        \
static void FN(q32_dot_##T)(int64_t n, float *s, const void *x, const void *y)          \
{                                                                                        \
    q32_rows(K, 1, n / SL_QK, x, y, 0, s, 0);                                            \
}
Q32_DEF(q8_0, Q32_Q8_0)
Q32_DEF(iq4_nl, Q32_IQ4_NL)
Q32_DEF(mxfp4, Q32_MXFP4)

#define Q32_SET(T, ID)                                                                   \
    k->vec_dot[ID] = FN(q32_dot_##T);                                                    \
    k->gemm[ID] = FN(q32_gemm_##T);                                                      \
    if (k->gemm_wide[ID]) k->gemm_wide[ID] = FN(q32_gemm_##T);

/* After arm_fill / arm_fill_iq4: the same slots, these kernels. */
static void FN(arm_fill_q32)(sl_kern *k)
{
    for (int e = 0; e < 256; e++) FN(e8m0_half)[e] = sl_e8m0_half((uint8_t)e);
    Q32_SET(q8_0, SL_GGML_Q8_0)
    Q32_SET(iq4_nl, SL_GGML_IQ4_NL)
    Q32_SET(mxfp4, SL_GGML_MXFP4)
}

#endif
