/* vec_dot and gemm tiles of the avx512vbmi level (avx512vnni + VBMI + GFNI):
 * dot_x86_vnni.h compiled with this level's -m flags, whose q4_K unpack then
 * takes its nibbles by one GFNI affine map and its scale words by one VBMI
 * byte permute (the same bytes, so results are bit for bit avx512vnni's);
 * filled over the avx512vnni tables, so every other kernel is that level's. */
#include "dot_x86_vnni.h"

X86_LEVEL(sl_dot_fill_avx512vbmi, dot_q4_k_avx512vbmi, gemm_q4_k_avx512vbmi, dot_q5_k_avx512vbmi, gemm_q5_k_avx512vbmi,
          dot_q6_k_avx512vbmi, gemm_q6_k_avx512vbmi, dot_q2_k_avx512vbmi, gemm_q2_k_avx512vbmi,
          dot_q3_k_avx512vbmi, gemm_q3_k_avx512vbmi, dot_q4_0_avx512vbmi, gemm_q4_0_avx512vbmi,
          dot_q4_1_avx512vbmi, gemm_q4_1_avx512vbmi, dot_q5_0_avx512vbmi, gemm_q5_0_avx512vbmi,
          dot_q5_1_avx512vbmi, gemm_q5_1_avx512vbmi, dot_q8_0_avx512vbmi, gemm_q8_0_avx512vbmi)
