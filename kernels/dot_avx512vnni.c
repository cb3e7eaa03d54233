/* vec_dot and gemm tiles of the avx512vnni level: the VNNI K-quant kernels
 * (dot_x86_vnni.h: vpdpbusd / vpdpwssd) and the rest of the x86 scheme
 * (dot_x86.h), each type list expanded by dot_x86_level.h with this level's
 * -m flags. */
#define X86_SUFFIX avx512vnni
#include "dot_x86_vnni.h"
#include "dot_x86_level.h"
