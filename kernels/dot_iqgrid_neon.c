/* The grid i-quant dots of the neon level (dot_iqgrid_arm.h, vmull_s8 + vpadalq_s16). */
#define ARM_SUFFIX neon
#define ARM_DOTPROD 0
#include "dot_iqgrid_arm.h"
