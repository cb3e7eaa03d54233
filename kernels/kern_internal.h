/* Internal to kernels/: per-ISA table fillers. dispatch.c builds one sl_kern
 * per level by calling the dot filler (quantized vec_dot kernels) and the ops
 * filler (float ops) of that level; a level's file is compiled only on its
 * architecture, with its own -m flags. */
#ifndef SL_KERN_INTERNAL_H
#define SL_KERN_INTERNAL_H

#include "kernels.h"

void sl_dot_fill_scalar(sl_kern *k);
void sl_ops_fill_scalar(sl_kern *k);
#if defined(__x86_64__) || defined(__i386__)
void sl_dot_fill_avx2(sl_kern *k);
void sl_ops_fill_avx2(sl_kern *k);
void sl_dot_fill_avx512(sl_kern *k);
void sl_ops_fill_avx512(sl_kern *k);
void sl_dot_fill_avx512vnni(sl_kern *k);   /* may reuse avx512 ops */
#endif
#if defined(__aarch64__)
void sl_dot_fill_neon(sl_kern *k);
void sl_ops_fill_neon(sl_kern *k);
void sl_dot_fill_dotprod(sl_kern *k);      /* may reuse neon ops */
#endif

/* Scalar oracle helpers (dot_scalar.c), shared with the SIMD files and tests. */
/* sum over elements of |d sc| (|q| + 2 offset) |y| + |dmin m| |y|: bounds the
 * magnitude of every float term any level forms from its exact integer sums,
 * so rounding differences between levels are <= c * u * mag (see tests). */
float sl_dot_scalar_mag(int type, int64_t n, const void *x, const void *y);
void sl_q3k_scales(const uint8_t *sc12, int8_t out[16]);          /* -32 applied */
void sl_q4k_scale_min(const uint8_t *s, int j, int *sc, int *m);  /* q4_K/q5_K */

#endif
