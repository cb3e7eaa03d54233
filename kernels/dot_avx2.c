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

#include "dot_x86_iq4.h"

X86_IQ4_LEVEL(sl_dot_fill_iq4_avx2, dot_iq4_nl_avx2, gemm_iq4_nl_avx2, dot_iq4_xs_avx2, gemm_iq4_xs_avx2,
              dot_mxfp4_avx2, gemm_mxfp4_avx2, dot_tq1_0_avx2, gemm_tq1_0_avx2, dot_tq2_0_avx2, gemm_tq2_0_avx2)
