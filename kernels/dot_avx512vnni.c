/* vec_dot and gemm tiles of the avx512vnni level: the VNNI K-quant kernels
 * (dot_x86_vnni.h: vpdpbusd / vpdpwssd) and the rest of the
 * x86 scheme (dot_x86.h), compiled with this level's -m flags; each
 * instance is named here. */
#include "dot_x86_vnni.h"

X86_LEVEL(sl_dot_fill_avx512vnni, dot_q4_k_avx512vnni, gemm_q4_k_avx512vnni, dot_q5_k_avx512vnni, gemm_q5_k_avx512vnni,
          dot_q6_k_avx512vnni, gemm_q6_k_avx512vnni, dot_q2_k_avx512vnni, gemm_q2_k_avx512vnni,
          dot_q3_k_avx512vnni, gemm_q3_k_avx512vnni, dot_q4_0_avx512vnni, gemm_q4_0_avx512vnni,
          dot_q4_1_avx512vnni, gemm_q4_1_avx512vnni, dot_q5_0_avx512vnni, gemm_q5_0_avx512vnni,
          dot_q5_1_avx512vnni, gemm_q5_1_avx512vnni, dot_q8_0_avx512vnni, gemm_q8_0_avx512vnni)

#include "dot_x86_iq4.h"

static void iq4_fill256_avx512vnni(sl_kern *k);   /* the 256-bit fill, under dot_x86_iq4z.h */

X86_IQ4_LEVEL(iq4_fill256_avx512vnni, dot_iq4_nl_avx512vnni, gemm_iq4_nl_avx512vnni, dot_iq4_xs_avx512vnni, gemm_iq4_xs_avx512vnni,
              dot_mxfp4_avx512vnni, gemm_mxfp4_avx512vnni, dot_tq1_0_avx512vnni, gemm_tq1_0_avx512vnni, dot_tq2_0_avx512vnni, gemm_tq2_0_avx512vnni)

#include "dot_x86_iq4z.h"

X86_IQ4Z_LEVEL(sl_dot_fill_iq4_avx512vnni, iq4_fill256_avx512vnni, dot_iq4_nl_z_avx512vnni, gemm_iq4_nl_z_avx512vnni,
               dot_iq4_xs_z_avx512vnni, gemm_iq4_xs_z_avx512vnni, dot_mxfp4_z_avx512vnni, gemm_mxfp4_z_avx512vnni,
               dot_tq1_0_z_avx512vnni, gemm_tq1_0_z_avx512vnni)
