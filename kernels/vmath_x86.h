/* What the x86 vector primitive sets (vmath_avx2.h, vmath_avx512.h) share:
 * the primitives that are the same instructions at both widths, and the
 * 8x8 horizontal-add tree. */
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

/* The primitives written the same at both widths, from the intrinsic prefix
 * P (_mm256, _mm512), the register width W (256, 512) and LDB(p), the
 * SL_VW bytes at p in the low lanes of an __m128i. */
#define SL_X86_VPRIMS(P, W, LDB)                                                       \
SL_VINL sl_vf sl_v_zero(void) { return P##_setzero_ps(); }                            \
SL_VINL sl_vf sl_v_set1(float x) { return P##_set1_ps(x); }                           \
SL_VINL sl_vf sl_v_ld(const float *p) { return P##_loadu_ps(p); }                     \
SL_VINL void sl_v_st(float *p, sl_vf v) { P##_storeu_ps(p, v); }                      \
SL_VINL sl_vf sl_v_min(sl_vf a, sl_vf b) { return P##_min_ps(a, b); }                 \
SL_VINL sl_vf sl_v_max(sl_vf a, sl_vf b) { return P##_max_ps(a, b); }                 \
SL_VINL sl_vf sl_v_fma(sl_vf a, sl_vf b, sl_vf c) { return P##_fmadd_ps(a, b, c); }   \
SL_VINL sl_vf sl_v_fnma(sl_vf a, sl_vf b, sl_vf c) { return P##_fnmadd_ps(a, b, c); } \
SL_VINL sl_vf sl_v_ld_i8(const int8_t *p) { return P##_cvtepi32_ps(P##_cvtepi8_epi32(LDB(p))); } \
SL_VINL sl_vf sl_v_ld_q4(const uint8_t *p, int hi)                                   \
{                                                                                    \
    __m##W##i b = P##_cvtepu8_epi32(LDB(p));                                         \
    if (hi) b = P##_srli_epi32(b, 4);                                                \
    b = P##_sub_epi32(P##_and_si##W(b, P##_set1_epi32(15)), P##_set1_epi32(8));      \
    return P##_cvtepi32_ps(b);                                                       \
}                                                                                    \
SL_VINL sl_vf sl_v_scale2n(sl_vf p, sl_vf n)                                         \
{                                                                                    \
    __m##W##i ni = P##_cvtps_epi32(n);                                               \
    __m##W##i n1 = P##_srai_epi32(ni, 1), n2 = P##_sub_epi32(ni, n1);                \
    __m##W##i b = P##_set1_epi32(127);                                               \
    __m##W s1 = P##_castsi##W##_ps(P##_slli_epi32(P##_add_epi32(n1, b), 23));       \
    __m##W s2 = P##_castsi##W##_ps(P##_slli_epi32(P##_add_epi32(n2, b), 23));       \
    return P##_mul_ps(P##_mul_ps(p, s1), s2);                                        \
}

#endif
