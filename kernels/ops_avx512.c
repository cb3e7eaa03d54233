/* Float ops, AVX-512 (F/BW/DQ/VL) level; tails through masked loads/stores,
 * so every element sees the same arithmetic. */
#include <immintrin.h>
#include <math.h>

#include "kern_internal.h"
#include "ops_internal.h"
#include "vmath_avx512.h"

static void rmsnorm_avx512(float *y, const float *x, const float *w, int64_t n, float eps)
{
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 16) {
        __m512 v = _mm512_maskz_loadu_ps(sl_tail16(n - i), x + i);
        sl_acc_pd16(&s0, &s1, _mm512_mul_ps(v, v));
    }
    double sum = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
    float mean = (float)(sum / (double)n);
    __m512 vs = _mm512_set1_ps(1.0f / sqrtf(mean + eps));
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 m = sl_tail16(n - i);
        __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vs),
                                 _mm512_maskz_loadu_ps(m, w + i));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

/* Bit-identical to the scalar (same cos/sin, mul/mul/sub, no FMA). Normal
 * style: pairs (x0, x1) times (c, c) plus their swap (x1, x0) times (-s, s). */
static void rope_avx512(float *x, int n_head, int head_dim, int n_rot, int32_t pos,
                        const float *inv_freq, int neox)
{
    int half = n_rot / 2;
    const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m512 sgn = _mm512_castsi512_ps(_mm512_set4_epi32(0, (int)0x80000000u, 0, (int)0x80000000u));
    for (int i0 = 0; i0 < half; i0 += 64) {
        float c[64], s[64];
        int m = half - i0 < 64 ? half - i0 : 64;
        sl_rope_cs(c, s, pos, inv_freq + i0, m);
        for (int h = 0; h < n_head; h++) {
            float *xh = x + (int64_t)h * head_dim;
            if (neox) {
                float *xa = xh + i0, *xb = xh + i0 + half;
                for (int i = 0; i < m; i += 16) {
                    __mmask16 k = sl_tail16(m - i);
                    __m512 x0 = _mm512_maskz_loadu_ps(k, xa + i), x1 = _mm512_maskz_loadu_ps(k, xb + i);
                    __m512 vc = _mm512_maskz_loadu_ps(k, c + i), vs = _mm512_maskz_loadu_ps(k, s + i);
                    _mm512_mask_storeu_ps(xa + i, k, _mm512_sub_ps(_mm512_mul_ps(x0, vc), _mm512_mul_ps(x1, vs)));
                    _mm512_mask_storeu_ps(xb + i, k, _mm512_add_ps(_mm512_mul_ps(x0, vs), _mm512_mul_ps(x1, vc)));
                }
            } else {
                float *xp = xh + 2 * i0;
                for (int i = 0; i < m; i += 8) {
                    int left = m - i < 8 ? m - i : 8;
                    __mmask16 k = (__mmask16)((1u << (2 * left)) - 1);
                    __m512 cc = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(
                        _mm256_maskz_loadu_ps((__mmask8)((1u << left) - 1), c + i)));
                    __m512 ss = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(
                        _mm256_maskz_loadu_ps((__mmask8)((1u << left) - 1), s + i)));
                    ss = _mm512_xor_ps(ss, sgn);
                    __m512 v = _mm512_maskz_loadu_ps(k, xp + 2 * i);
                    __m512 sw = _mm512_permute_ps(v, 0xB1);
                    _mm512_mask_storeu_ps(xp + 2 * i, k, _mm512_add_ps(_mm512_mul_ps(v, cc), _mm512_mul_ps(sw, ss)));
                }
            }
        }
    }
}

static void softmax_avx512(float *x, int64_t n)
{
    if (n <= 0)
        return;
    __m512 vm = _mm512_set1_ps(-INFINITY);
    for (int64_t i = 0; i < n; i += 16)
        vm = _mm512_mask_max_ps(vm, sl_tail16(n - i), vm, _mm512_maskz_loadu_ps(sl_tail16(n - i), x + i));
    __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(vm));
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = sl_tail16(n - i);
        __m512 e = _mm512_maskz_mov_ps(k, sl_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mx)));
        _mm512_mask_storeu_ps(x + i, k, e);
        sl_acc_pd16(&s0, &s1, e);
    }
    __m512 inv = _mm512_set1_ps((float)(1.0 / _mm512_reduce_add_pd(_mm512_add_pd(s0, s1))));
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = sl_tail16(n - i);
        _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), inv));
    }
}

static void silu_mul_avx512(float *y, const float *g, const float *u, int64_t n)
{
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = sl_tail16(n - i);
        __m512 vg = _mm512_maskz_loadu_ps(k, g + i);
        __m512 e = sl_exp16(_mm512_sub_ps(_mm512_setzero_ps(), vg));
        __m512 r = _mm512_div_ps(vg, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
        _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(r, _mm512_maskz_loadu_ps(k, u + i)));
    }
}

static void add_avx512(float *y, const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = sl_tail16(n - i);
        _mm512_mask_storeu_ps(y + i, k, _mm512_add_ps(_mm512_maskz_loadu_ps(k, a + i),
                                                      _mm512_maskz_loadu_ps(k, b + i)));
    }
}

/* VCVTPS2PH rounds to nearest even, the same as sl_f32_to_f16. */
static void f32_to_f16_avx512(sl_f16 *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = sl_tail16(n - i);
        __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(k, x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm256_mask_storeu_epi16(y + i, k, h);
    }
}

void sl_ops_fill_avx512(sl_kern *k)
{
    k->rmsnorm = rmsnorm_avx512;
    k->rope = rope_avx512;
    k->softmax = softmax_avx512;
    k->silu_mul = silu_mul_avx512;
    k->add = add_avx512;
    k->f32_to_f16 = f32_to_f16_avx512;
}
