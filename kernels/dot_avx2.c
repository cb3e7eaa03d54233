/* vec_dot and gemm tiles of the avx2 level: the K-quant kernels without VNNI
 * (dot_x86_madd.h: vpmaddubsw + vpmaddwd) and the rest of the x86 scheme
 * (dot_x86.h), each type list expanded by dot_x86_level.h with this level's
 * -m flags. */
#define X86_SUFFIX avx2
#include "dot_x86_madd.h"
#include "dot_x86_level.h"
