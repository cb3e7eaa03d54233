/* Float vector primitives of the neon level (A64 ASIMD, armv8.0, 4 lanes;
 * FCVTL/FCVTN for f16): the names vmath_avx2.h lists. No lane masks
 * (SL_VMASK 0): the drivers finish tails in scalar code or on a stack copy. */
#ifndef SL_VMATH_NEON_H
#define SL_VMATH_NEON_H

#include <arm_neon.h>
#include <string.h>
#include "kernels.h"

#define SL_VW 4
#define SL_VMASK 0
#define SL_V_PV 4
#define SL_V_RPAIRS 4
#define SL_VINL static inline __attribute__((always_inline))

typedef float32x4_t sl_vf;
typedef struct { float64x2_t a, b; } sl_vacc;

SL_VINL sl_vf sl_v_zero(void) { return vdupq_n_f32(0.0f); }
SL_VINL sl_vf sl_v_set1(float x) { return vdupq_n_f32(x); }
SL_VINL sl_vf sl_v_ld(const float *p) { return vld1q_f32(p); }
SL_VINL void sl_v_st(float *p, sl_vf v) { vst1q_f32(p, v); }

SL_VINL sl_vf sl_v_ldh(const sl_f16 *p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
/* FCVTN rounds by FPCR (nearest even by default), the same as sl_f32_to_f16. */
SL_VINL void sl_v_sth(sl_f16 *p, sl_vf v) { vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(v))); }
SL_VINL sl_vf sl_v_round_h(sl_vf v) { return vcvt_f32_f16(vcvt_f16_f32(v)); }
/* 4 bytes -> low lanes of a d-register (memcpy: no alignment assumed) */
SL_VINL uint8x8_t sl_v_ld4u8(const void *p)
{
    uint32_t w;
    memcpy(&w, p, 4);
    return vreinterpret_u8_u32(vdup_n_u32(w));
}
SL_VINL sl_vf sl_v_ld_i8(const int8_t *p)
{
    int16x8_t h = vmovl_s8(vreinterpret_s8_u8(sl_v_ld4u8(p)));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)));
}
SL_VINL sl_vf sl_v_ld_q4(const uint8_t *p, int hi)
{
    uint8x8_t b = sl_v_ld4u8(p);
    b = hi ? vshr_n_u8(b, 4) : vand_u8(b, vdup_n_u8(15));
    int16x8_t h = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(b)), vdupq_n_s16(8));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(h)));
}

#include "vmath_nomask.h"

SL_VINL sl_vf sl_v_min(sl_vf a, sl_vf b) { return vminq_f32(a, b); }
SL_VINL sl_vf sl_v_max(sl_vf a, sl_vf b) { return vmaxq_f32(a, b); }
SL_VINL sl_vf sl_v_fma(sl_vf a, sl_vf b, sl_vf c) { return vfmaq_f32(c, a, b); }
SL_VINL sl_vf sl_v_fnma(sl_vf a, sl_vf b, sl_vf c) { return vfmsq_f32(c, a, b); }
SL_VINL sl_vf sl_v_roundn(sl_vf v) { return vrndnq_f32(v); }
SL_VINL sl_vf sl_v_scale2n(sl_vf p, sl_vf n)
{
    int32x4_t ni = vcvtq_s32_f32(n), n1 = vshrq_n_s32(ni, 1);
    sl_vf s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, vdupq_n_s32(127)), 23));
    return vmulq_f32(vmulq_f32(p, s1), vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vsubq_s32(ni, n1), vdupq_n_s32(127)), 23)));
}

SL_VINL float sl_v_hsum(sl_vf v) { return vaddvq_f32(v); }
SL_VINL float sl_v_hmax(sl_vf v) { return vmaxvq_f32(v); }

SL_VINL sl_vacc sl_vacc_zero(void) { return (sl_vacc){vdupq_n_f64(0), vdupq_n_f64(0)}; }
SL_VINL void sl_vacc_add(sl_vacc *s, sl_vf v)
{
    s->a = vaddq_f64(s->a, vcvt_f64_f32(vget_low_f32(v)));
    s->b = vaddq_f64(s->b, vcvt_high_f64_f32(v));
}
SL_VINL double sl_vacc_sum(sl_vacc s) { return vaddvq_f64(vaddq_f64(s.a, s.b)); }

/* out[i] = (sum of the lanes of a[i] (+ add[i])) * scale, i < 8: pairwise adds. */
SL_VINL void sl_v_sum8_scaled(const sl_vf a[8], const float *add, float scale, float *out)
{
    float32x4_t r0 = vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3]));
    float32x4_t r1 = vpaddq_f32(vpaddq_f32(a[4], a[5]), vpaddq_f32(a[6], a[7]));
    if (add) {
        r0 = vaddq_f32(r0, vld1q_f32(add));
        r1 = vaddq_f32(r1, vld1q_f32(add + 4));
    }
    vst1q_f32(out, vmulq_n_f32(r0, scale));
    vst1q_f32(out + 4, vmulq_n_f32(r1, scale));
}

/* Rope, interleaved pairs: 4 pairs at xp de-interleaved with vld2q (no FMA,
 * as the scalar). left: pairs remaining (>= 4 here). */
SL_VINL void sl_v_rope_pairs(float *xp, const float *c, const float *s, int left)
{
    (void)left;
    float32x4_t vc = vld1q_f32(c), vs = vld1q_f32(s);
    float32x4x2_t v2 = vld2q_f32(xp);
    float32x4_t x0 = v2.val[0], x1 = v2.val[1];
    v2.val[0] = vsubq_f32(vmulq_f32(x0, vc), vmulq_f32(x1, vs));
    v2.val[1] = vaddq_f32(vmulq_f32(x0, vs), vmulq_f32(x1, vc));
    vst2q_f32(xp, v2);
}

#endif
