/* exp(x) for 4 floats (A64 NEON): the same scheme as vmath_avx2.h (Cody-Waite
 * reduction, degree-7 Taylor, 2^n as two factors; clamp to [-104, 89]). */
#ifndef SL_VMATH_NEON_H
#define SL_VMATH_NEON_H

#include <arm_neon.h>

static inline float32x4_t sl_exp4(float32x4_t x)
{
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-104.0f)), vdupq_n_f32(89.0f));
    float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693145751953125f));
    r = vfmsq_f32(r, n, vdupq_n_f32(1.428606765330187e-06f));
    float32x4_t p = vdupq_n_f32(1.0f / 5040);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 720), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 120), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 24), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 6), p, r);
    p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    int32x4_t ni = vcvtq_s32_f32(n);
    int32x4_t n1 = vshrq_n_s32(ni, 1), n2 = vsubq_s32(ni, n1);
    int32x4_t b = vdupq_n_s32(127);
    float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, b), 23));
    float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, b), 23));
    return vmulq_f32(vmulq_f32(p, s1), s2);
}

static inline float32x4_t sl_ld_h4(const sl_f16 *p)
{
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

/* FCVTN rounds by FPCR (nearest even by default), the same as sl_f32_to_f16. */
static inline void sl_st_h4(sl_f16 *p, float32x4_t v)
{
    vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(v)));
}

static inline void sl_acc_pd4(float64x2_t *s0, float64x2_t *s1, float32x4_t v)
{
    *s0 = vaddq_f64(*s0, vcvt_f64_f32(vget_low_f32(v)));
    *s1 = vaddq_f64(*s1, vcvt_high_f64_f32(v));
}

#endif
