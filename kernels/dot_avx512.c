/* vec_dot and gemm tiles of the avx512 level: the K-quant kernels without VNNI
 * (dot_x86_madd.h: vpmaddubsw + vpmaddwd, vptestmb for q3_K) and the rest of
 * the x86 scheme (dot_x86.h), each type list expanded by dot_x86_level.h with
 * this level's -m flags. */
#define X86_SUFFIX avx512
#include "dot_x86_madd.h"
#include "dot_x86_level.h"
