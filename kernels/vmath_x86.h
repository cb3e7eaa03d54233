/* What the x86 vector primitive sets (vmath_avx2.h, vmath_avx512.h) share. */
#ifndef SL_VMATH_X86_H
#define SL_VMATH_X86_H

#include <immintrin.h>

/* out[i] = (sum of the 8 lanes of f[i] (+ add[i])) * scale, i < 8: one
 * horizontal-add tree for all eight. */
static inline __attribute__((always_inline)) void
sl_x86_sum8x8_scaled(const __m256 f[8], const float *add, float scale, float *out)
{
    __m256 h01 = _mm256_hadd_ps(f[0], f[1]), h23 = _mm256_hadd_ps(f[2], f[3]);
    __m256 h45 = _mm256_hadd_ps(f[4], f[5]), h67 = _mm256_hadd_ps(f[6], f[7]);
    __m256 h0 = _mm256_hadd_ps(h01, h23), h1 = _mm256_hadd_ps(h45, h67);
    __m256 r = _mm256_add_ps(_mm256_permute2f128_ps(h0, h1, 0x20), _mm256_permute2f128_ps(h0, h1, 0x31));
    if (add)
        r = _mm256_add_ps(r, _mm256_loadu_ps(add));
    _mm256_storeu_ps(out, _mm256_mul_ps(r, _mm256_set1_ps(scale)));
}

#endif
