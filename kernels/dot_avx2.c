/* vec_dot and gemm tiles of the avx2 level: the K-quant kernels without VNNI
 * (dot_x86_madd.h: vpmaddubsw + vpmaddwd) and the rest of the
 * x86 scheme (dot_x86.h), compiled with this level's -m flags; each
 * instance is named here. */
#include "dot_x86_madd.h"

X86_LEVEL(sl_dot_fill_avx2, dot_q4_k_avx2, gemm_q4_k_avx2, dot_q5_k_avx2, gemm_q5_k_avx2,
          dot_q6_k_avx2, gemm_q6_k_avx2, dot_q2_k_avx2, gemm_q2_k_avx2,
          dot_q3_k_avx2, gemm_q3_k_avx2, dot_q4_0_avx2, gemm_q4_0_avx2,
          dot_q4_1_avx2, gemm_q4_1_avx2, dot_q5_0_avx2, gemm_q5_0_avx2,
          dot_q5_1_avx2, gemm_q5_1_avx2, dot_q8_0_avx2, gemm_q8_0_avx2)
