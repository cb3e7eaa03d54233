/* The grid i-quant dots of the dotprod level (dot_iqgrid_arm.h, vdotq_s32). */
#define IQ_SUFFIX dotprod
#define IQ_DOTPROD 1
#include "dot_iqgrid_arm.h"
