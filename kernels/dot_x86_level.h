/* One x86 level's dot kernels, included by its level file after the integer
 * products header (dot_x86_madd.h or dot_x86_vnni.h) with X86_SUFFIX set:
 * every type of the K-quant / legacy list (filler sl_dot_fill_<level>) and,
 * unless X86_KQ_ONLY, of the codebook / ternary list (sl_dot_fill_iq4_<level>;
 * on the avx512 levels with the 512-bit kernels of dot_x86_iq4z.h over the
 * 256-bit ones). Instances are named <kernel>_<type>_<level>. */
#define X86_CAT2(a, b) a##_##b
#define X86_NAME2(a, b) X86_CAT2(a, b)

X86_LEVEL(X86_NAME2(sl_dot_fill, X86_SUFFIX))

#ifndef X86_KQ_ONLY
#include "dot_x86_iq4.h"
#ifdef __AVX512F__
static void X86_NAME(iq4, fill256)(sl_kern *k);   /* the 256-bit fill, under dot_x86_iq4z.h */
X86_IQ4_LEVEL(X86_NAME(iq4, fill256))
#include "dot_x86_iq4z.h"
X86_IQ4Z_LEVEL(X86_NAME(sl_dot_fill, iq4), X86_NAME(iq4, fill256))
#else
X86_IQ4_LEVEL(X86_NAME(sl_dot_fill, iq4))
#endif
#endif
