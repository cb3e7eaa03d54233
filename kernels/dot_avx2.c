/* Dot kernels for the avx2 level: the shared x86 scheme (dot_x86.h) built with
 * this file's -m flags. */
#define X86_SUFFIX avx2
#define X86_VNNI 0
#include "dot_x86.h"

void sl_dot_fill_avx2(sl_kern *k) { x86_fill_avx2(k); }
