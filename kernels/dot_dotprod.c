/* Dot kernels for the dotprod level: the shared aarch64 scheme (dot_arm.h),
 * built with -march=armv8.2-a+dotprod: 16 int8 products per vdotq_s32. */
#define ARM_SUFFIX dotprod
#define ARM_DOTPROD 1
#include "dot_arm.h"
#include "dot_arm_iq4.h"
#include "dot_arm_q32.h"

void sl_dot_fill_dotprod(sl_kern *k) { arm_fill_dotprod(k); arm_fill_iq4_dotprod(k); arm_fill_q32_dotprod(k); }
