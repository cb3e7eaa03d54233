/* The rows8 kernels of the neon level (rows8_arm.h): armv8.0 ASIMD, int8
 * products by vmull_s8, accumulated in int16 as far as the levels allow. */
#define ARM_SUFFIX neon
#define ARM_DOTPROD 0
#include "rows8_arm.h"

void sl_rows8_fill_neon(sl_kern *k) { rows8_arm_fill_neon(k); }
