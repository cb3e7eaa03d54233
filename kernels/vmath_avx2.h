/* Float vector primitives of the avx2 level (AVX2+FMA+F16C, 8 lanes): the
 * vocabulary the float drivers (ops_driver.h, attention_driver.h) are written
 * in. Every level's vmath_<isa>.h defines the same names:
 *   SL_VW                lanes per vector
 *   SL_VMASK             1: partial vectors by lane masks (drivers run their
 *                        tails in vector code); 0: drivers finish the last
 *                        n % SL_VW elements in scalar code, and the partial
 *                        loads / stores are vmath_nomask.h's stack copies
 *   SL_V_PV              vectors per head_dim chunk held in registers by p.v
 *   SL_V_RPAIRS          interleaved rope pairs per sl_v_rope_pairs call
 *   sl_vf, sl_vacc       float vector; pair of double accumulators
 *   sl_v_ld/st           full vectors; sl_v_ldm/stm(p, left): lanes < left
 *                        (SL_VMASK) or the full vector (caller: left >= SL_VW)
 *   sl_v_ldp/stp(p, n)   a partial vector of n < SL_VW lanes (others = fill)
 *   sl_v_ldh, ldhm, sth, sthp   f16 loads / stores (round to nearest even)
 *   arithmetic           zero set1 fma(a,b,c)=a*b+c fnma(a,b,c)=c-a*b
 *                        min max roundn round_h (+ - * / are the vector
 *                        type's operators)
 *   sl_v_scale2n(p, n)   p * 2^(n>>1) * 2^(n-(n>>1)) for integral n
 *   reductions           hsum hmax; sl_vacc_add/sum (f32 lanes summed in
 *                        double); sl_v_sum8_scaled (8 vectors -> 8 sums)
 *   sl_v_rope_pairs      rope on interleaved pairs (no FMA, as the scalar)
 *   sl_v_ld_i8(p)        SL_VW int8 values as f32 (Q8_0 cache blocks)
 *   sl_v_ld_q4(p, hi)    SL_VW bytes' low (hi = 0) or high nibbles minus 8, as
 *                        f32 (Q4_0 cache blocks)
 * A new level is a new vmath_<isa>.h and a 10-line ops_<isa>.c. Each
 * primitive keeps the instruction sequence the level's hand-written kernels
 * used, so results are bit-identical to them. */
#ifndef SL_VMATH_AVX2_H
#define SL_VMATH_AVX2_H

#include <immintrin.h>
#include "kernels.h"
#include "vmath_x86.h"

#define SL_VW 8
#define SL_VMASK 0
#define SL_V_PV 2
#define SL_V_RPAIRS 4
#define SL_VINL static inline __attribute__((always_inline))

typedef __m256 sl_vf;
typedef struct { __m256d a, b; } sl_vacc;

#define SL_AVX2_LDB(p) _mm_loadl_epi64((const __m128i *)(p))
SL_X86_VPRIMS(_mm256, 256, SL_AVX2_LDB)

SL_VINL sl_vf sl_v_ldh(const sl_f16 *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
/* F16C rounds to nearest even, the same as sl_f32_to_f16. */
SL_VINL __m128i sl_v_cvth(sl_vf v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }
SL_VINL void sl_v_sth(sl_f16 *p, sl_vf v) { _mm_storeu_si128((__m128i *)p, sl_v_cvth(v)); }
SL_VINL sl_vf sl_v_round_h(sl_vf v) { return _mm256_cvtph_ps(sl_v_cvth(v)); }

#include "vmath_nomask.h"

SL_VINL sl_vf sl_v_roundn(sl_vf v)
{
    return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
SL_VINL float sl_v_hsum(sl_vf v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
SL_VINL float sl_v_hmax(sl_vf v)
{
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    return _mm_cvtss_f32(m4);
}

SL_VINL sl_vacc sl_vacc_zero(void) { return (sl_vacc){_mm256_setzero_pd(), _mm256_setzero_pd()}; }
SL_VINL void sl_vacc_add(sl_vacc *s, sl_vf v)
{
    s->a = _mm256_add_pd(s->a, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    s->b = _mm256_add_pd(s->b, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}
SL_VINL double sl_vacc_sum(sl_vacc s)
{
    __m256d v = _mm256_add_pd(s.a, s.b);
    __m128d t = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
}

/* out[i] = (sum of the lanes of a[i] (+ add[i])) * scale, i < 8. */
SL_VINL void sl_v_sum8_scaled(const sl_vf a[8], const float *add, float scale, float *out)
{
    sl_x86_sum8x8_scaled(a, add, scale, out);
}

/* Rope, interleaved pairs: rotates the SL_V_RPAIRS pairs at xp by c, s (no
 * FMA, as the scalar): (x0, x1) times (c, c) plus the swap (x1, x0) times
 * (-s, s). left: pairs remaining (>= SL_V_RPAIRS here). */
SL_VINL void sl_v_rope_pairs(float *xp, const float *c, const float *s, int left)
{
    (void)left;
    const __m256 sgn = _mm256_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f);
    __m128 c4 = _mm_loadu_ps(c), s4 = _mm_loadu_ps(s);
    __m256 cc = _mm256_set_m128(_mm_unpackhi_ps(c4, c4), _mm_unpacklo_ps(c4, c4));
    __m256 ss = _mm256_set_m128(_mm_unpackhi_ps(s4, s4), _mm_unpacklo_ps(s4, s4));
    ss = _mm256_xor_ps(ss, sgn);
    __m256 v = _mm256_loadu_ps(xp);
    __m256 sw = _mm256_permute_ps(v, 0xB1);
    _mm256_storeu_ps(xp, _mm256_add_ps(_mm256_mul_ps(v, cc), _mm256_mul_ps(sw, ss)));
}

#endif
