/* Dot kernels for the avx512vnni level: the shared x86 scheme (dot_x86.h) built with
 * this file's -m flags; integer products with vpdpbusd / vpdpwssd. */
#define X86_SUFFIX avx512vnni
#define X86_VNNI 1
#include "dot_x86.h"

void sl_dot_fill_avx512vnni(sl_kern *k) { x86_fill_avx512vnni(k); }
