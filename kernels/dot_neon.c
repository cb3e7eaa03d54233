/* Dot kernels for the neon level: the shared aarch64 scheme (dot_arm.h),
 * armv8.0 ASIMD: int8 products with vmull_s8 + vpadalq_s16. */
#define ARM_SUFFIX neon
#define ARM_DOTPROD 0
#include "dot_arm.h"
#include "dot_arm_iq4.h"
#include "dot_arm_q32.h"

void sl_dot_fill_neon(sl_kern *k) { arm_fill_neon(k); arm_fill_iq4_neon(k); arm_fill_q32_neon(k); }
