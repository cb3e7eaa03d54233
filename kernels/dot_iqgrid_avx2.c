/* The grid i-quant dots of the avx2 level (dot_iqgrid_x86.h, 32 elements per step). */
#include "dot_iqgrid_x86.h"

IQ_LEVEL(sl_dot_fill_iqgrid_avx2)
