/* The grid i-quant dots of the avx512 level (dot_iqgrid_z.h, 64 elements a step). */
#include "dot_iqgrid_z.h"

IQZ_FILL(sl_dot_fill_iqgrid_avx512)
