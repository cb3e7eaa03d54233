/* The grid i-quant dots of the avx512 level: dot_iqgrid_x86.h's 256-bit
 * scheme built with this level's flags (avx512vnni uses these too). */
#include "dot_iqgrid_x86.h"

IQ_LEVEL(sl_dot_fill_iqgrid_avx512, avx512)
