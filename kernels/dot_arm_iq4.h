/* aarch64 block kernels of the codebook and ternary types, included by
 * dot_neon.c and dot_dotprod.c after dot_arm.h (its dot16 / dot32 give each
 * level its own int8 products):
 * - IQ4_NL, MXFP4 (Q8_0): nibbles -> signed levels by one vqtbl1q_s8 from
 *   the 16-entry table, one FMA per 32-element block;
 * - IQ4_XS (Q8_K): the same per 32-element sub-block, scaled by ls - 32 in
 *   the integer lanes (vmlaq_n_s32), one FMA per superblock;
 * - TQ2_0, TQ1_0 (Q8_K): the digits t (0..2) times y, the block sum of y
 *   (from bsums) subtracted exactly in the integer lanes. TQ1_0's base-3
 *   digits: byte times 3^n by vmulq_u8 (mod 256), then (v * 3) >> 8 by a
 *   widening multiply and a narrowing shift. */
#ifndef SL_DOT_ARM_IQ4_H
#define SL_DOT_ARM_IQ4_H

/* A block's 32 nibbles as the levels of the 16-entry table tab (one
 * vqtbl1q_s8 each half), dotted with the activation's 32 int8. */
static inline int32x4_t lut_dot32(const int8_t *tab, const uint8_t *qs, const int8_t *yq)
{
    const int8x16_t lut = vld1q_s8(tab);
    uint8x16_t q = vld1q_u8(qs);
    int8x16_t lo = vqtbl1q_s8(lut, vandq_u8(q, vdupq_n_u8(15))), hi = vqtbl1q_s8(lut, vshrq_n_u8(q, 4));
    return dot32(lo, hi, vld1q_s8(yq), vld1q_s8(yq + 16));
}

static inline void blk_iq4_nl(const sl_block_iq4_nl *x, const sl_block_q8_0 *y, acc_t *acc)
{
    fin_legacy(lut_dot32(sl_kvalues_iq4nl, x->qs, y->qs), f16s(x->d) * f16s(y->d), acc);
}
ARM_NOSPLIT(iq4_nl, sl_block_iq4_nl, sl_block_q8_0)

static inline void blk_mxfp4(const sl_block_mxfp4 *x, const sl_block_q8_0 *y, acc_t *acc)
{
    fin_legacy(lut_dot32(sl_kvalues_mxfp4, x->qs, y->qs), f16s(y->d) * sl_e8m0_half(x->e), acc);
}
ARM_NOSPLIT(mxfp4, sl_block_mxfp4, sl_block_q8_0)

static inline void blk_iq4_xs(const sl_block_iq4_xs *x, const sl_block_q8_k *y, acc_t *acc)
{
    const int8x16_t lut = vld1q_s8(sl_kvalues_iq4nl);
    uint32_t sl;
    memcpy(&sl, x->scales_l, 4);
    uint32_t sh = x->scales_h;
    int32x4_t isum = vdupq_n_s32(0);
    for (int ib = 0; ib < 8; ib++) {
        int ls = (int)((sl >> (4 * ib)) & 15) | (int)((sh >> (2 * ib)) & 3) << 4;
        uint8x16_t q = vld1q_u8(x->qs + 16 * ib);
        int8x16_t lo = vqtbl1q_s8(lut, vandq_u8(q, vdupq_n_u8(15))), hi = vqtbl1q_s8(lut, vshrq_n_u8(q, 4));
        const int8_t *Y = y->qs + 32 * ib;
        isum = vmlaq_n_s32(isum, dot32(lo, hi, vld1q_s8(Y), vld1q_s8(Y + 16)), ls - 32);
    }
    acc->a = vfmaq_f32(acc->a, vcvtq_f32_s32(isum), vdupq_n_f32(f16s(x->d) * y->d));
}
ARM_NOSPLIT(iq4_xs, sl_block_iq4_xs, sl_block_q8_k)

/* acc += (sum t y - sum y) d d_y, sum t y in the lanes of isum */
static inline void fin_tern(int32x4_t isum, const sl_block_q8_k *y, sl_f16 d, acc_t *acc)
{
    int32_t ys = vaddlvq_s16(vld1q_s16(y->bsums)) + vaddlvq_s16(vld1q_s16(y->bsums + 8));
    isum = vsubq_s32(isum, vsetq_lane_s32(ys, vdupq_n_s32(0), 0));
    acc->a = vfmaq_f32(acc->a, vcvtq_f32_s32(isum), vdupq_n_f32(f16s(d) * y->d));
}

static inline void blk_tq2_0(const sl_block_tq2_0 *x, const sl_block_q8_k *y, acc_t *acc)
{
    int32x4_t isum = vdupq_n_s32(0);
    for (int h = 0; h < 2; h++) {
        uint8x16_t q0 = vld1q_u8(x->qs + 32 * h), q1 = vld1q_u8(x->qs + 32 * h + 16);
        const int8_t *Y = y->qs + 128 * h;
        for (int l = 0; l < 4; l++)
            isum = vaddq_s32(isum, dot32(crumb(q0, l), crumb(q1, l), vld1q_s8(Y + 32 * l), vld1q_s8(Y + 32 * l + 16)));
    }
    fin_tern(isum, y, x->d, acc);
}
ARM_NOSPLIT(tq2_0, sl_block_tq2_0, sl_block_q8_k)

/* base-3 digit (v * 3) >> 8 of every byte */
static inline int8x16_t tq1_digit16(uint8x16_t v)
{
    const uint8x8_t three = vdup_n_u8(3);
    uint8x8_t lo = vshrn_n_u16(vmull_u8(vget_low_u8(v), three), 8);
    return S8(vshrn_high_n_u16(lo, vmull_high_u8(v, vdupq_n_u8(3)), 8));
}

static inline void blk_tq1_0(const sl_block_tq1_0 *x, const sl_block_q8_k *y, acc_t *acc)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    static const uint8_t pow3_qh[16] = { 1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27 };
    uint8x16_t q0 = vld1q_u8(x->qs), q1 = vld1q_u8(x->qs + 16), q2 = vld1q_u8(x->qs + 32);
    int32x4_t isum = vdupq_n_s32(0);
    for (int n = 0; n < 5; n++) {
        uint8x16_t p = vdupq_n_u8(pow3[n]);
        /* qs[0..31]: elements 32n .. 32n+31; qs[32..47]: elements 160+16n .. +15 */
        isum = vaddq_s32(isum, dot32(tq1_digit16(vmulq_u8(q0, p)), tq1_digit16(vmulq_u8(q1, p)),
                                     vld1q_s8(y->qs + 32 * n), vld1q_s8(y->qs + 32 * n + 16)));
        isum = dot16(isum, tq1_digit16(vmulq_u8(q2, p)), vld1q_s8(y->qs + 160 + 16 * n));
    }
    /* qh: byte 4n+m = digit n of qh[m], elements 240..255 */
    uint32_t qh;
    memcpy(&qh, x->qh, 4);
    uint8x16_t h = vmulq_u8(vreinterpretq_u8_u32(vdupq_n_u32(qh)), vld1q_u8(pow3_qh));
    isum = dot16(isum, tq1_digit16(h), vld1q_s8(y->qs + 240));
    fin_tern(isum, y, x->d, acc);
}
ARM_NOSPLIT(tq1_0, sl_block_tq1_0, sl_block_q8_k)

ARM_FAMILY(SL_IQ4_EACH, arm_fill_iq4, 0)

#endif
