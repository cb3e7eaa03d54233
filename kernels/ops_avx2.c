/* Float ops, AVX2+FMA+F16C level. Tails run through the same vector code on
 * an 8-element stack copy, so every element sees the same arithmetic. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kern_internal.h"
#include "ops_internal.h"
#include "vmath_avx2.h"

/* Sum of x^2 (each square rounded to f32, as the scalar) in double. */
static void rmsnorm_avx2(float *y, const float *x, const float *w, int64_t n, float eps)
{
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        v = _mm256_mul_ps(v, v);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    double sum = sl_hsum4d(_mm256_add_pd(s0, s1));
    for (; i < n; i++)
        sum += (double)(x[i] * x[i]);
    float mean = (float)(sum / (double)n);
    float scale = 1.0f / sqrtf(mean + eps);
    __m256 vs = _mm256_set1_ps(scale);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs),
                                              _mm256_loadu_ps(w + i)));
    for (; i < n; i++)
        y[i] = (x[i] * scale) * w[i];
}

/* Same cos/sin table and the same mul/mul/sub per element as the scalar
 * (no FMA), so the result is bit-identical. Normal style multiplies the
 * pairs (x0, x1) by (c, c) and their swap (x1, x0) by (-s, s). */
static void rope_avx2(float *x, int n_head, int head_dim, int n_rot, int32_t pos,
                      const float *inv_freq, int neox)
{
    int half = n_rot / 2;
    const __m256 sgn = _mm256_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f);
    for (int i0 = 0; i0 < half; i0 += 64) {
        float c[64], s[64];
        int m = half - i0 < 64 ? half - i0 : 64;
        sl_rope_cs(c, s, pos, inv_freq + i0, m);
        for (int h = 0; h < n_head; h++) {
            float *xh = x + (int64_t)h * head_dim;
            int i = 0;
            if (neox) {
                float *xa = xh + i0, *xb = xh + i0 + half;
                for (; i + 8 <= m; i += 8) {
                    __m256 x0 = _mm256_loadu_ps(xa + i), x1 = _mm256_loadu_ps(xb + i);
                    __m256 vc = _mm256_loadu_ps(c + i), vs = _mm256_loadu_ps(s + i);
                    _mm256_storeu_ps(xa + i, _mm256_sub_ps(_mm256_mul_ps(x0, vc), _mm256_mul_ps(x1, vs)));
                    _mm256_storeu_ps(xb + i, _mm256_add_ps(_mm256_mul_ps(x0, vs), _mm256_mul_ps(x1, vc)));
                }
                for (; i < m; i++) {
                    float x0 = xa[i], x1 = xb[i];
                    xa[i] = x0 * c[i] - x1 * s[i];
                    xb[i] = x0 * s[i] + x1 * c[i];
                }
            } else {
                float *xp = xh + 2 * i0;
                for (; i + 4 <= m; i += 4) {
                    __m128 c4 = _mm_loadu_ps(c + i), s4 = _mm_loadu_ps(s + i);
                    __m256 cc = _mm256_set_m128(_mm_unpackhi_ps(c4, c4), _mm_unpacklo_ps(c4, c4));
                    __m256 ss = _mm256_set_m128(_mm_unpackhi_ps(s4, s4), _mm_unpacklo_ps(s4, s4));
                    ss = _mm256_xor_ps(ss, sgn);
                    __m256 v = _mm256_loadu_ps(xp + 2 * i);
                    __m256 sw = _mm256_permute_ps(v, 0xB1);
                    _mm256_storeu_ps(xp + 2 * i, _mm256_add_ps(_mm256_mul_ps(v, cc), _mm256_mul_ps(sw, ss)));
                }
                for (; i < m; i++) {
                    float x0 = xp[2 * i], x1 = xp[2 * i + 1];
                    xp[2 * i] = x0 * c[i] - x1 * s[i];
                    xp[2 * i + 1] = x0 * s[i] + x1 * c[i];
                }
            }
        }
    }
}

static void softmax_avx2(float *x, int64_t n)
{
    if (n <= 0)
        return;
    int64_t nv = n & ~(int64_t)7, i;
    float tail[8];
    int nt = (int)(n - nv);
    for (int t = 0; t < 8; t++)
        tail[t] = t < nt ? x[nv + t] : -INFINITY;
    __m256 vm = _mm256_loadu_ps(tail);
    for (i = 0; i < nv; i += 8)
        vm = _mm256_max_ps(vm, _mm256_loadu_ps(x + i));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vm), _mm256_extractf128_ps(vm, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    __m256 mx = _mm256_set1_ps(_mm_cvtss_f32(m4));
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (i = 0; i <= nv; i += 8) {
        float *p = i < nv ? x + i : tail;
        __m256 e = sl_exp8(_mm256_sub_ps(_mm256_loadu_ps(p), mx));
        _mm256_storeu_ps(p, e);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    __m256 inv = _mm256_set1_ps((float)(1.0 / sl_hsum4d(_mm256_add_pd(s0, s1))));
    for (i = 0; i < nv; i += 8)
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
    _mm256_storeu_ps(tail, _mm256_mul_ps(_mm256_loadu_ps(tail), inv));
    memcpy(x + nv, tail, (size_t)nt * sizeof(float));
}

static inline __m256 silu_mul8(__m256 g, __m256 u)
{
    __m256 e = sl_exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
    return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

static void silu_mul_avx2(float *y, const float *g, const float *u, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, silu_mul8(_mm256_loadu_ps(g + i), _mm256_loadu_ps(u + i)));
    if (i < n) {
        float tg[8] = {0}, tu[8] = {0}, ty[8];
        memcpy(tg, g + i, (size_t)(n - i) * sizeof(float));
        memcpy(tu, u + i, (size_t)(n - i) * sizeof(float));
        _mm256_storeu_ps(ty, silu_mul8(_mm256_loadu_ps(tg), _mm256_loadu_ps(tu)));
        memcpy(y + i, ty, (size_t)(n - i) * sizeof(float));
    }
}

static void add_avx2(float *y, const float *a, const float *b, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    for (; i < n; i++)
        y[i] = a[i] + b[i];
}

/* F16C rounds to nearest even, the same as sl_f32_to_f16. */
static void f32_to_f16_avx2(sl_f16 *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    if (i < n) {
        float t[8] = {0};
        sl_f16 r[8];
        memcpy(t, x + i, (size_t)(n - i) * sizeof(float));
        _mm_storeu_si128((__m128i *)r, _mm256_cvtps_ph(_mm256_loadu_ps(t), _MM_FROUND_TO_NEAREST_INT));
        memcpy(y + i, r, (size_t)(n - i) * sizeof(sl_f16));
    }
}

void sl_ops_fill_avx2(sl_kern *k)
{
    k->rmsnorm = rmsnorm_avx2;
    k->rope = rope_avx2;
    k->softmax = softmax_avx2;
    k->silu_mul = silu_mul_avx2;
    k->add = add_avx2;
    k->f32_to_f16 = f32_to_f16_avx2;
}
