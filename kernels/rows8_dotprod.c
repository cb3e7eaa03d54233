/* The rows8 kernels of the dotprod level (rows8_arm.h), built with
 * -march=armv8.2-a+dotprod: two vdotq_s32 a row and block. */
#define ARM_SUFFIX dotprod
#define ARM_DOTPROD 1
#include "rows8_arm.h"

void sl_rows8_fill_dotprod(sl_kern *k) { rows8_arm_fill_dotprod(k); }
