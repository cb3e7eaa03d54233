/* The grid i-quant dots of the avx512vnni level (dot_iqgrid_z.h with vpdpwssd). */
#include "dot_iqgrid_z.h"

IQZ_FILL(sl_dot_fill_iqgrid_avx512vnni)
