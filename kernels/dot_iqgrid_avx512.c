/* The grid i-quant dots of the avx512 level (dot_iqgrid_x86.h, 64 elements per
 * step, signs as opmasks); avx512vnni uses these too. */
#include "dot_iqgrid_x86.h"

IQ_LEVEL(sl_dot_fill_iqgrid_avx512, avx512)
