/* vec_dot and gemm tiles of the avx512vnni level: the VNNI K-quant kernels (dot_x86_vnni.h: vpdpbusd / vpdpwssd)
 * and the rest of the x86 scheme (dot_x86.h), compiled with this level's -m
 * flags; each instance named here. */
#include "dot_x86_vnni.h"

DEF_DOT(q4_k, dot_q4_k_avx512vnni, gemm_q4_k_avx512vnni, )
DEF_DOT(q5_k, dot_q5_k_avx512vnni, gemm_q5_k_avx512vnni, )
DEF_DOT(q6_k, dot_q6_k_avx512vnni, gemm_q6_k_avx512vnni, )
DEF_DOT(q2_k, dot_q2_k_avx512vnni, gemm_q2_k_avx512vnni, DU2)
DEF_DOT(q3_k, dot_q3_k_avx512vnni, gemm_q3_k_avx512vnni, DU2)
DEF_DOT(q4_0, dot_q4_0_avx512vnni, gemm_q4_0_avx512vnni, )
DEF_DOT(q4_1, dot_q4_1_avx512vnni, gemm_q4_1_avx512vnni, )
DEF_DOT(q5_0, dot_q5_0_avx512vnni, gemm_q5_0_avx512vnni, )
DEF_DOT(q5_1, dot_q5_1_avx512vnni, gemm_q5_1_avx512vnni, )
DEF_DOT(q8_0, dot_q8_0_avx512vnni, gemm_q8_0_avx512vnni, )

void sl_dot_fill_avx512vnni(sl_kern *k)
{
    X86_SET(k, SL_Q_Q4_K, dot_q4_k_avx512vnni, gemm_q4_k_avx512vnni);
    X86_SET(k, SL_Q_Q5_K, dot_q5_k_avx512vnni, gemm_q5_k_avx512vnni);
    X86_SET(k, SL_Q_Q6_K, dot_q6_k_avx512vnni, gemm_q6_k_avx512vnni);
    X86_SET(k, SL_Q_Q2_K, dot_q2_k_avx512vnni, gemm_q2_k_avx512vnni);
    X86_SET(k, SL_Q_Q3_K, dot_q3_k_avx512vnni, gemm_q3_k_avx512vnni);
    X86_SET(k, SL_Q_Q4_0, dot_q4_0_avx512vnni, gemm_q4_0_avx512vnni);
    X86_SET(k, SL_Q_Q4_1, dot_q4_1_avx512vnni, gemm_q4_1_avx512vnni);
    X86_SET(k, SL_Q_Q5_0, dot_q5_0_avx512vnni, gemm_q5_0_avx512vnni);
    X86_SET(k, SL_Q_Q5_1, dot_q5_1_avx512vnni, gemm_q5_1_avx512vnni);
    X86_SET(k, SL_Q_Q8_0, dot_q8_0_avx512vnni, gemm_q8_0_avx512vnni);
    x86_fill_float(k);
}
