/* Float vector primitives of the avx512 levels (AVX-512 F/BW/DQ/VL + F16C,
 * 16 lanes): the names vmath_avx2.h lists, with lane masks for partial
 * vectors (SL_VMASK 1), so the drivers run no scalar tails here. */
#ifndef SL_VMATH_AVX512_H
#define SL_VMATH_AVX512_H

#include <immintrin.h>

#include "kernels.h"
#include "vmath_x86.h"

#define SL_VW 16
#define SL_VMASK 1
#define SL_V_PV 2
#define SL_V_RPAIRS 8
#define SL_VINL static inline __attribute__((always_inline))

typedef __m512 sl_vf;
typedef struct { __m512d a, b; } sl_vacc;

SL_VINL __mmask16 sl_v_mask(int64_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

#define SL_AVX512_LDB(p) _mm_loadu_si128((const __m128i *)(p))
SL_X86_VPRIMS(_mm512, 512, SL_AVX512_LDB)
SL_VINL sl_vf sl_v_ldm(const float *p, int64_t left) { return _mm512_maskz_loadu_ps(sl_v_mask(left), p); }
SL_VINL void sl_v_stm(float *p, sl_vf v, int64_t left) { _mm512_mask_storeu_ps(p, sl_v_mask(left), v); }
SL_VINL sl_vf sl_v_ldp(const float *p, int64_t n, float fill)
{
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), sl_v_mask(n), p);
}
SL_VINL void sl_v_stp(float *p, sl_vf v, int64_t n) { sl_v_stm(p, v, n); }

SL_VINL sl_vf sl_v_ldh(const sl_f16 *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
SL_VINL sl_vf sl_v_ldhm(const sl_f16 *p, int64_t left)
{
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(sl_v_mask(left), p));
}
/* VCVTPS2PH rounds to nearest even, the same as sl_f32_to_f16. */
SL_VINL __m256i sl_v_cvth(sl_vf v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }
SL_VINL void sl_v_sth(sl_f16 *p, sl_vf v) { _mm256_storeu_si256((__m256i *)p, sl_v_cvth(v)); }
SL_VINL void sl_v_sthp(sl_f16 *p, sl_vf v, int64_t n) { _mm256_mask_storeu_epi16(p, sl_v_mask(n), sl_v_cvth(v)); }
SL_VINL sl_vf sl_v_round_h(sl_vf v) { return _mm512_cvtph_ps(sl_v_cvth(v)); }
SL_VINL sl_vf sl_v_roundn(sl_vf v)
{
    return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
SL_VINL float sl_v_hsum(sl_vf v) { return _mm512_reduce_add_ps(v); }
SL_VINL float sl_v_hmax(sl_vf v) { return _mm512_reduce_max_ps(v); }

SL_VINL sl_vacc sl_vacc_zero(void) { return (sl_vacc){_mm512_setzero_pd(), _mm512_setzero_pd()}; }
SL_VINL void sl_vacc_add(sl_vacc *s, sl_vf v)
{
    s->a = _mm512_add_pd(s->a, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    s->b = _mm512_add_pd(s->b, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
}
SL_VINL double sl_vacc_sum(sl_vacc s) { return _mm512_reduce_add_pd(_mm512_add_pd(s.a, s.b)); }

/* out[i] = (sum of the lanes of a[i] (+ add[i])) * scale, i < 8: each folded
 * to 8 lanes, then the avx2 level's 8x8 horizontal-add tree. */
SL_VINL void sl_v_sum8_scaled(const sl_vf a[8], const float *add, float scale, float *out)
{
    __m256 f[8];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < 8; i++)
        f[i] = _mm256_add_ps(_mm512_castps512_ps256(a[i]), _mm512_extractf32x8_ps(a[i], 1));
    sl_x86_sum8x8_scaled(f, add, scale, out);
}

/* Rope, interleaved pairs: up to 8 pairs (left) at xp, as vmath_avx2.h. */
SL_VINL void sl_v_rope_pairs(float *xp, const float *c, const float *s, int left)
{
    const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m512 sgn = _mm512_castsi512_ps(_mm512_set4_epi32(0, (int)0x80000000u, 0, (int)0x80000000u));
    if (left > 8)
        left = 8;
    __mmask8 k8 = (__mmask8)((1u << left) - 1);
    __mmask16 k = (__mmask16)((1u << (2 * left)) - 1);
    __m512 cc = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(k8, c)));
    __m512 ss = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_maskz_loadu_ps(k8, s)));
    ss = _mm512_xor_ps(ss, sgn);
    __m512 v = _mm512_maskz_loadu_ps(k, xp);
    __m512 sw = _mm512_permute_ps(v, 0xB1);
    _mm512_mask_storeu_ps(xp, k, _mm512_add_ps(_mm512_mul_ps(v, cc), _mm512_mul_ps(sw, ss)));
}

#endif
