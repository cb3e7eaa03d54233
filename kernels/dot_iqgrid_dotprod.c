/* The grid i-quant dots of the dotprod level (dot_iqgrid_arm.h, vdotq_s32). */
#define ARM_SUFFIX dotprod
#define ARM_DOTPROD 1
#include "dot_iqgrid_arm.h"
