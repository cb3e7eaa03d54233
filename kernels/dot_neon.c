#include "kern_internal.h"
void sl_dot_fill_neon(sl_kern *k) { (void)k; }
