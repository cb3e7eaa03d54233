/* The rows8 kernels on aarch64 (kernels.h, sl_rows8_fn), included by
 * rows8_neon.c (armv8.0 ASIMD) and rows8_dotprod.c (armv8.2-a+dotprod), which
 * define ARM_SUFFIX and ARM_DOTPROD (dot_arm_base.h). Per group block the
 * eight rows' payloads are one linear read: nibbles by one vqtbl1q_s8 each
 * half (chunk k: rows k and k + 4), Q8_0 a row per 32 bytes. Each row's
 * products land in a vector of partial sums, two vpaddq levels fold four rows
 * into one vector in row order, and one convert and one FMA (by d_x d_y, one
 * rounded product) finish four rows' block. dotprod: two vdotq_s32 a row;
 * neon: vmull_s8 with int16 accumulation as far as the levels allow (MXFP4
 * |level| <= 12: four products a lane; IQ4_NL <= 127: two; Q8_0 widened a
 * product at a time, -128 * -128 twice would not fit). Bit for bit
 * rows8_scalar.c. */
#ifndef SL_ROWS8_ARM_H
#define SL_ROWS8_ARM_H

#include <stddef.h>

#include "dot_arm_base.h"

#define PF_AHEAD 4096        /* decode: bytes of the group stream prefetched ahead */

#define INL static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#define S16(v) vreinterpretq_s16_s32(v)

enum { T_MXFP4, T_IQ4_NL, T_Q8_0 };

/* sl_e8m0_half of the eight exponents, rows 0..3 | 4..7: the floats' top
 * halves, (e - 1) << 7 for e >= 2 (negative for e = 0), 0x40 / 0x20 (the
 * subnormals) for e = 1 / 0. */
INL void e8m0_half8(const uint8_t *e, float32x4_t d[2])
{
    uint8x8_t v = vld1_u8(e);
    int16x8_t big = vsubq_s16(vreinterpretq_s16_u16(vshll_n_u8(v, 7)), vdupq_n_s16(0x80));
    uint8x8_t sub = vshl_u8(vdup_n_u8(0x20), vreinterpret_s8_u8(vmin_u8(v, vdup_n_u8(1))));
    uint16x8_t top = vreinterpretq_u16_s16(vmaxq_s16(big, vreinterpretq_s16_u16(vmovl_u8(sub))));
    d[0] = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(top), 16));
    d[1] = vreinterpretq_f32_u32(vshll_high_n_u16(top, 16));
}

/* d_x of a group block's eight rows (the f16 d[8] come first). */
INL void dx8(const int T, const void *g, float32x4_t d[2])
{
    if (T == T_MXFP4) {
        e8m0_half8(((const sl_block_mxfp4_r8 *)g)->e, d);
        return;
    }
    float16x8_t h = vreinterpretq_f16_u16(vld1q_u16((const uint16_t *)g));
    d[0] = vcvt_f32_f16(vget_low_f16(h));
    d[1] = vcvt_high_f32_f16(h);
}

/* A group block's eight rows as signed bytes: l[r] elements 0..15 of row r,
 * h[r] 16..31. */
INL void unpack(const int T, const char *xb, int8x16_t lut, int8x16_t l[8], int8x16_t h[8])
{
    if (T == T_Q8_0) {
        const sl_block_q8_0_r8 *g = (const sl_block_q8_0_r8 *)(const void *)xb;
        UNROLL for (int r = 0; r < 8; r++) {
            l[r] = vld1q_s8(g->qs[r]);
            h[r] = vld1q_s8(g->qs[r] + 16);
        }
        return;
    }
    const uint8_t *qs = (const uint8_t *)xb + (T == T_MXFP4 ? offsetof(sl_block_mxfp4_r8, qs)
                                                           : offsetof(sl_block_iq4_nl_r8, qs));
    const uint8x16_t m4 = vdupq_n_u8(15);
    UNROLL for (int r = 0; r < 8; r++) {
        uint8x16_t q = vld1q_u8(qs + sl_quant_rows8_at(r, 16));
        l[r] = vqtbl1q_s8(lut, vandq_u8(q, m4));
        h[r] = vqtbl1q_s8(lut, vshrq_n_u8(q, 4));
    }
}

/* Row (l, h) times y's 32 bytes (yl, yh) as partial sums: int32 lanes, or
 * (neon MXFP4) int16 lanes in the same register. */
INL int32x4_t row_part(const int T, int8x16_t l, int8x16_t h, int8x16_t yl, int8x16_t yh)
{
#if ARM_DOTPROD
    (void)T;
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), l, yl), h, yh);
#else
    if (T == T_MXFP4) {        /* four products a lane: <= 4 * 12 * 128 */
        int16x8_t p = vmlal_high_s8(vmull_s8(vget_low_s8(l), vget_low_s8(yl)), l, yl);
        p = vmlal_s8(p, vget_low_s8(h), vget_low_s8(yh));
        return vreinterpretq_s32_s16(vmlal_high_s8(p, h, yh));
    }
    if (T == T_IQ4_NL) {       /* two products a lane: <= 2 * 127 * 128 */
        int16x8_t p = vmlal_high_s8(vmull_s8(vget_low_s8(l), vget_low_s8(yl)), l, yl);
        int16x8_t q = vmlal_high_s8(vmull_s8(vget_low_s8(h), vget_low_s8(yh)), h, yh);
        return vpadalq_s16(vpaddlq_s16(p), q);
    }
    int32x4_t a = vpaddlq_s16(vmull_s8(vget_low_s8(l), vget_low_s8(yl)));
    a = vpadalq_s16(a, vmull_high_s8(l, yl));
    a = vpadalq_s16(a, vmull_s8(vget_low_s8(h), vget_low_s8(yh)));
    return vpadalq_s16(a, vmull_high_s8(h, yh));
#endif
}

/* Four rows' partial sums folded into their exact sums, in row order. */
INL int32x4_t rows4(const int T, int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d)
{
    if (!ARM_DOTPROD && T == T_MXFP4)   /* 16 products a lane (<= 24576) still fit int16 */
        return vpaddlq_s16(vpaddq_s16(vpaddq_s16(S16(a), S16(b)), vpaddq_s16(S16(c), S16(d))));
    return vpaddq_s32(vpaddq_s32(a, b), vpaddq_s32(c, d));
}

/* Groups [g0, g1) (group blocks of GB bytes, nb a row) with NY activation rows. */
INL void run(const int T, const size_t GB, const int NY, const char *W, int64_t nb, int64_t g0, int64_t g1,
             const char *act, size_t arb, float *Y, int64_t ldy)
{
    const int8x16_t lut = vld1q_s8(T == T_MXFP4 ? sl_kvalues_mxfp4 : sl_kvalues_iq4nl);
    for (int64_t g = g0; g < g1; g++) {
        const char *x = W + (size_t)(g * nb) * GB;
        float32x4_t acc[SL_ROWS8_NY][2];
        UNROLL for (int j = 0; j < NY; j++) acc[j][0] = acc[j][1] = vdupq_n_f32(0.0f);
        for (int64_t b = 0; b < nb; b++) {
            const char *xb = x + (size_t)b * GB, *pf = xb + PF_AHEAD;
            UNROLL for (size_t o = 0; o < GB; o += 64) __builtin_prefetch(pf + o, 0, 2);
            int8x16_t l[8], h[8];
            float32x4_t dx[2];
            unpack(T, xb, lut, l, h);
            dx8(T, xb, dx);
            UNROLL for (int j = 0; j < NY; j++) {
                const sl_block_q8_0 *y = (const sl_block_q8_0 *)(act + (size_t)j * arb) + b;
                const int8x16_t yl = vld1q_s8(y->qs), yh = vld1q_s8(y->qs + 16);
                int32x4_t s[8];
                UNROLL for (int r = 0; r < 8; r++) s[r] = row_part(T, l[r], h[r], yl, yh);
                const float dy = f16s(y->d);
                acc[j][0] = vfmaq_f32(acc[j][0], vcvtq_f32_s32(rows4(T, s[0], s[1], s[2], s[3])), vmulq_n_f32(dx[0], dy));
                acc[j][1] = vfmaq_f32(acc[j][1], vcvtq_f32_s32(rows4(T, s[4], s[5], s[6], s[7])), vmulq_n_f32(dx[1], dy));
            }
        }
        UNROLL for (int j = 0; j < NY; j++) {
            vst1q_f32(Y + j * ldy + 8 * g, acc[j][0]);
            vst1q_f32(Y + j * ldy + 8 * g + 4, acc[j][1]);
        }
    }
}

#define R8_ARM(T, ID, GB)                                                                                    \
    static void FN(rows8_##T)(int64_t n, const void *W, int64_t g0, int64_t g1, const void *act, size_t arb, \
                              int ny, float *Y, int64_t ldy)                                                 \
    {                                                                                                        \
        const int64_t nb = n / SL_QK;                                                                        \
        switch (ny) {                                                                                        \
        case 1: run(ID, sizeof(GB), 1, W, nb, g0, g1, act, arb, Y, ldy); break;                              \
        case 2: run(ID, sizeof(GB), 2, W, nb, g0, g1, act, arb, Y, ldy); break;                              \
        case 3: run(ID, sizeof(GB), 3, W, nb, g0, g1, act, arb, Y, ldy); break;                              \
        default: run(ID, sizeof(GB), 4, W, nb, g0, g1, act, arb, Y, ldy); break;                             \
        }                                                                                                    \
    }
R8_ARM(mxfp4, T_MXFP4, sl_block_mxfp4_r8)
R8_ARM(iq4_nl, T_IQ4_NL, sl_block_iq4_nl_r8)
R8_ARM(q8_0, T_Q8_0, sl_block_q8_0_r8)

/* Fast on instruction counts (perf/results/2026-11-29-neon-rows8.md: a
 * quarter of the plain rows' instructions a decode block, a third to a half
 * with 4..64 activation rows); not yet timed on hardware. */
static void FN(rows8_arm_fill)(sl_kern *k)
{
    k->rows8[SL_GGML_MXFP4] = FN(rows8_mxfp4);
    k->rows8[SL_GGML_IQ4_NL] = FN(rows8_iq4_nl);
    k->rows8[SL_GGML_Q8_0] = FN(rows8_q8_0);
    k->rows8_fast[SL_GGML_MXFP4] = k->rows8_fast[SL_GGML_IQ4_NL] = k->rows8_fast[SL_GGML_Q8_0] = true;
}

#endif
