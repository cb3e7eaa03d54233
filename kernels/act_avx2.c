/* Activation quantizer of the x86 levels (AVX2; the avx512 levels take it
 * too): f32 -> Q8_K, the vec_dot_type of every K-quant, run before each
 * decode matvec. Bytes equal sl_quant_row_q8_k's (the oracle): the same
 * amax (NaN never wins, as the scalar `a > amax`), the first element of
 * largest magnitude for the sign, the same float products, clamps written
 * as the scalar's comparisons (minps/maxps return their second operand on
 * NaN, as `v < 127 ? v : 127` does), and the same magic-number rounding. */
#include <immintrin.h>

#include "kern_internal.h"
#include "../quant/quant.h"

static void q8k_row(const float *x, void *vy, int64_t n)
{
    sl_block_q8_k *y = vy;
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-128.0f);
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int64_t i = 0; i < n / SL_QKK; i++, x += SL_QKK) {
        __m256 m = _mm256_setzero_ps();
        for (int j = 0; j < SL_QKK; j += 8)
            m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + j), absm), m);
        __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        h = _mm_max_ps(h, _mm_movehl_ps(h, h));
        h = _mm_max_ss(h, _mm_movehdup_ps(h));
        const float amax = _mm_cvtss_f32(h);
        if (amax == 0.0f) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        /* the first element whose magnitude is amax gives the sign */
        const __m256 am = _mm256_set1_ps(amax);
        float max = amax;
        for (int j = 0; j < SL_QKK; j += 8) {
            int bits = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + j), absm), am, _CMP_EQ_OQ));
            if (bits) { max = x[j + __builtin_ctz((unsigned)bits)]; break; }
        }
        const float iscale = -127.0f / max;
        const __m256 is = _mm256_set1_ps(iscale);
        for (int j = 0; j < SL_QKK; j += 32) {
            __m256i q[4];
            for (int k = 0; k < 4; k++) {
                __m256 v = _mm256_mul_ps(is, _mm256_loadu_ps(x + j + 8 * k));
                v = _mm256_max_ps(_mm256_min_ps(v, hi), lo);
                v = _mm256_sub_ps(_mm256_add_ps(v, magic), magic);
                q[k] = _mm256_cvttps_epi32(v);
            }
            __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            _mm256_storeu_si256((__m256i *)(y[i].qs + j), _mm256_permutevar8x32_epi32(b, order));
        }
        for (int g = 0; g < SL_QKK / 16; g++) {
            /* 16 bytes -> 16 int16 -> 8 int32 pair sums -> one sum */
            __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(y[i].qs + 16 * g)));
            __m256i s = _mm256_madd_epi16(w, _mm256_set1_epi16(1));
            __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
            t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
            y[i].bsums[g] = (int16_t)_mm_cvtsi128_si32(t);
        }
        y[i].d = 1.0f / iscale;
    }
}

void sl_act_fill_avx2(sl_kern *k) { k->quantize_q8_k = q8k_row; }
