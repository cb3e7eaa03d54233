#include "kern_internal.h"
void sl_dot_fill_avx512vnni(sl_kern *k) { (void)k; }
