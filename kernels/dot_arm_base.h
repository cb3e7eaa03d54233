/* aarch64: what every dot scheme of the neon and dotprod levels shares
 * (dot_arm.h, dot_iqgrid_arm.h): the names <kernel>_<ARM_SUFFIX>, f16 -> f32,
 * and the exact int8 dot of 16 bytes into 4 int32 lanes (ARM_DOTPROD 1: one
 * vdotq_s32; else vmull_s8 + vpadalq_s16). The level file defines ARM_SUFFIX
 * and ARM_DOTPROD before inclusion. */
#ifndef SL_DOT_ARM_BASE_H
#define SL_DOT_ARM_BASE_H

#include <arm_neon.h>
#include <string.h>

#include "kern_internal.h"

#define ARM_CAT2(a, b) a##_##b
#define ARM_CAT(a, b) ARM_CAT2(a, b)
#define FN(name) ARM_CAT(name, ARM_SUFFIX)

static inline float f16s(sl_f16 h)
{
    __fp16 v;
    memcpy(&v, &h, 2);
    return (float)v;
}

static inline int32x4_t dot16(int32x4_t acc, int8x16_t a, int8x16_t b)
{
#if ARM_DOTPROD
    return vdotq_s32(acc, a, b);
#else
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
#endif
}

#endif
