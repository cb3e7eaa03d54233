/* vec_dot and gemm tiles of the avx512vbmi level (avx512vnni + VBMI + GFNI):
 * dot_x86_vnni.h compiled with this level's -m flags, whose q4_K unpack then
 * takes its nibbles by one GFNI affine map and its scale words by one VBMI
 * byte permute (the same bytes, so results are bit for bit avx512vnni's);
 * filled over the avx512vnni tables, so every other kernel (the codebook
 * list: X86_KQ_ONLY) is that level's. */
#define X86_SUFFIX avx512vbmi
#define X86_KQ_ONLY
#include "dot_x86_vnni.h"
#include "dot_x86_level.h"
