/* Float ops, avx2 level (in progress: scalar ops until the SIMD ones land). */
#include "kern_internal.h"

void sl_ops_fill_avx2(sl_kern *k)
{
    sl_ops_fill_scalar(k);
}
