/* The rows8 MXFP4 kernel on AVX2 (the avx512 levels use it too): per group
 * block, four 32-byte loads hold the eight rows' nibbles (rows k and k + 4 in
 * load k); the levels come by one lookup as level + 12 (0..24, unsigned for
 * vpmaddubsw), three vphaddd fold the eight rows' products into one vector in
 * row order, the activation block's 12 * sum(y) (taken once per call)
 * restores the exact integer sums, and one convert and one FMA finish eight
 * rows' block. About 6.5 vector uops per row and block, against ~12 for a
 * row at a time (kbench, perf/). Bit for bit rows8_scalar.c. */
#include <immintrin.h>

#include "kern_internal.h"

#define CH 256               /* blocks whose activation sums are taken at once */
#define LEV_OFF 12           /* -12 .. 12 -> 0 .. 24 */
#define PF_AHEAD 4096        /* decode: bytes of the group stream prefetched ahead */

#define INL static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

/* sl_e8m0_half of the eight exponents, in row order. */
INL __m256 e8m0_half8(const uint8_t *e)
{
    __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)e));
    __m256i big = _mm256_slli_epi32(_mm256_sub_epi32(v, _mm256_set1_epi32(1)), 23);
    __m256i small = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), v);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(small, big, _mm256_cmpgt_epi32(v, _mm256_set1_epi32(1))));
}

/* LEV_OFF * the sum of a Q8_0 block's 32 values. */
INL int32_t off_sum(const sl_block_q8_0 *y)
{
    __m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)y->qs), _mm256_set1_epi8(-128));
    __m256i s = _mm256_sad_epu8(v, _mm256_setzero_si256());          /* sums of y + 128 per 8 */
    __m128i t = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    t = _mm_add_epi64(t, _mm_unpackhi_epi64(t, t));
    return LEV_OFF * ((int32_t)_mm_cvtsi128_si32(t) - 32 * 128);
}

/* Blocks [b0, b1) of groups [g0, g1) with NY activation rows; acc starts at 0
 * on the first chunk, else from Y (the chain goes on exactly). */
INL void run(const int NY, const sl_block_mxfp4_r8 *W, int64_t nb, int64_t g0, int64_t g1, int64_t b0,
             int64_t b1, const char *act, size_t arb, float *Y, int64_t ldy)
{
    int32_t ys[SL_ROWS8_NY][CH];
    float yd[SL_ROWS8_NY][CH];
    for (int j = 0; j < NY; j++) {
        const sl_block_q8_0 *y = (const sl_block_q8_0 *)(act + (size_t)j * arb);
        for (int64_t b = b0; b < b1; b++) {
            ys[j][b - b0] = off_sum(y + b);
            yd[j][b - b0] = sl_f16_to_f32(y[b].d);
        }
    }
    __m128i l = _mm_add_epi8(_mm_loadu_si128((const __m128i *)sl_kvalues_mxfp4), _mm_set1_epi8(LEV_OFF));
    const __m256i lut = _mm256_broadcastsi128_si256(l), m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi16(1);
    for (int64_t g = g0; g < g1; g++) {
        const sl_block_mxfp4_r8 *x = W + g * nb;
        __m256 acc[SL_ROWS8_NY];
        UNROLL for (int j = 0; j < NY; j++)
            acc[j] = b0 ? _mm256_loadu_ps(Y + j * ldy + 8 * g) : _mm256_setzero_ps();
        for (int64_t b = b0; b < b1; b++) {
            const char *pf = (const char *)(x + b) + PF_AHEAD;
            _mm_prefetch(pf, _MM_HINT_T1);
            _mm_prefetch(pf + 64, _MM_HINT_T1);
            _mm_prefetch(pf + 128, _MM_HINT_T1);
            __m256i ql[4], qh[4];
            UNROLL for (int k = 0; k < 4; k++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)x[b].qs[k]);
                ql[k] = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, m4));
                qh[k] = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
            }
            const __m256 dx = e8m0_half8(x[b].e);
            UNROLL for (int j = 0; j < NY; j++) {
                const sl_block_q8_0 *y = (const sl_block_q8_0 *)(act + (size_t)j * arb) + b;
                const __m256i yl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)y->qs));
                const __m256i yh = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(y->qs + 16)));
                __m256i s[4];
                UNROLL for (int k = 0; k < 4; k++)
                    s[k] = _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(ql[k], yl),
                                                              _mm256_maddubs_epi16(qh[k], yh)), one);
                /* lanes: rows 0..3 | rows 4..7 */
                __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
                h = _mm256_sub_epi32(h, _mm256_set1_epi32(ys[j][b - b0]));
                __m256 f = _mm256_mul_ps(dx, _mm256_set1_ps(yd[j][b - b0]));
                acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(h), f, acc[j]);
            }
        }
        UNROLL for (int j = 0; j < NY; j++) _mm256_storeu_ps(Y + j * ldy + 8 * g, acc[j]);
    }
}

static void rows8_mxfp4(int64_t n, const void *W, int64_t g0, int64_t g1, const void *act, size_t arb, int ny,
                        float *Y, int64_t ldy)
{
    const int64_t nb = n / SL_QK;
    for (int64_t b0 = 0; b0 < nb; b0 += CH) {
        int64_t b1 = b0 + CH < nb ? b0 + CH : nb;
        switch (ny) {
        case 1: run(1, W, nb, g0, g1, b0, b1, act, arb, Y, ldy); break;
        case 2: run(2, W, nb, g0, g1, b0, b1, act, arb, Y, ldy); break;
        case 3: run(3, W, nb, g0, g1, b0, b1, act, arb, Y, ldy); break;
        default: run(4, W, nb, g0, g1, b0, b1, act, arb, Y, ldy); break;
        }
    }
}

void sl_rows8_fill_avx2(sl_kern *k)
{
    k->rows8[SL_GGML_MXFP4] = rows8_mxfp4;
    k->rows8_fast[SL_GGML_MXFP4] = true;
}
