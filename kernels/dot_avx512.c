/* vec_dot and gemm tiles of the avx512 level: the K-quant kernels without VNNI
 * (dot_x86_madd.h: vpmaddubsw + vpmaddwd, vptestmb for q3_K) and the rest of the
 * x86 scheme (dot_x86.h), compiled with this level's -m flags; each
 * instance is named here. */
#include "dot_x86_madd.h"

X86_LEVEL(sl_dot_fill_avx512, dot_q4_k_avx512, gemm_q4_k_avx512, dot_q5_k_avx512, gemm_q5_k_avx512,
          dot_q6_k_avx512, gemm_q6_k_avx512, dot_q2_k_avx512, gemm_q2_k_avx512,
          dot_q3_k_avx512, gemm_q3_k_avx512, dot_q4_0_avx512, gemm_q4_0_avx512,
          dot_q4_1_avx512, gemm_q4_1_avx512, dot_q5_0_avx512, gemm_q5_0_avx512,
          dot_q5_1_avx512, gemm_q5_1_avx512, dot_q8_0_avx512, gemm_q8_0_avx512)

#include "dot_x86_iq4.h"

static void iq4_fill256_avx512(sl_kern *k);   /* the 256-bit fill, under dot_x86_iq4z.h */

X86_IQ4_LEVEL(iq4_fill256_avx512, dot_iq4_nl_avx512, gemm_iq4_nl_avx512, dot_iq4_xs_avx512, gemm_iq4_xs_avx512,
              dot_mxfp4_avx512, gemm_mxfp4_avx512, dot_tq1_0_avx512, gemm_tq1_0_avx512, dot_tq2_0_avx512, gemm_tq2_0_avx512)

#include "dot_x86_iq4z.h"

X86_IQ4Z_LEVEL(sl_dot_fill_iq4_avx512, iq4_fill256_avx512, dot_iq4_nl_z_avx512, gemm_iq4_nl_z_avx512,
               dot_iq4_xs_z_avx512, gemm_iq4_xs_z_avx512, dot_mxfp4_z_avx512, gemm_mxfp4_z_avx512,
               dot_tq1_0_z_avx512, gemm_tq1_0_z_avx512)
