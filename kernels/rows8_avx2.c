/* The rows8 kernels on AVX2 (the avx512 levels use them too): MXFP4, IQ4_NL
 * and Q8_0. Per group block, the eight rows' payloads are one linear read
 * (MXFP4 / IQ4_NL: four 32-byte loads, rows k and k + 4 in load k; Q8_0: a
 * row per load); vphaddd levels fold the eight rows' products into one
 * vector in row order, and one convert and one FMA finish eight rows' block.
 * MXFP4's levels come by one lookup as level + 12 (0..24, unsigned for
 * vpmaddubsw) and the activation block's 12 * sum(y), taken once per call,
 * restores the exact sums: about 6.5 vector uops per row and block against
 * ~12 a row at a time. IQ4_NL and Q8_0 multiply magnitudes by signed
 * activations. Bit for bit rows8_scalar.c. */
#include <immintrin.h>
#include <stddef.h>

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

enum { T_MXFP4, T_IQ4_NL, T_Q8_0 };

/* d_x of a group block's eight rows, in row order. */
INL __m256 dx8(const int T, const void *g)
{
    if (T == T_MXFP4) return e8m0_half8(((const sl_block_mxfp4_r8 *)g)->e);
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)g));   /* d[8] first */
}

/* A group block's nibble levels: MXFP4 as level + LEV_OFF (unsigned), IQ4_NL
 * signed with their magnitudes (its levels span 240: offset pairs would
 * saturate vpmaddubsw) */
typedef struct { __m256i l[4], h[4], al[4], ah[4]; } nib8;

INL void nib_unpack(const int T, const uint8_t *qs, __m256i lut, nib8 *u)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    UNROLL for (int k = 0; k < 4; k++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * k));
        u->l[k] = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, m4));
        u->h[k] = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
        if (T == T_IQ4_NL) {
            u->al[k] = _mm256_sign_epi8(u->l[k], u->l[k]);
            u->ah[k] = _mm256_sign_epi8(u->h[k], u->h[k]);
        }
    }
}

/* The eight rows' integer sums with one activation block, rows in lanes 0..7
 * (MXFP4: still LEV_OFF * sum(y) over). Nibble payloads: load k holds rows k
 * and k + 4, so two vphaddd levels leave rows 0..3 | 4..7. */
INL __m256i nib_sums(const int T, const nib8 *u, const sl_block_q8_0 *y)
{
    const __m256i one = _mm256_set1_epi16(1);
    const __m256i yl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)y->qs));
    const __m256i yh = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(y->qs + 16)));
    __m256i s[4];
    UNROLL for (int k = 0; k < 4; k++) {
        if (T == T_MXFP4)        /* pairs <= 2 * 24 * 128: the two halves' sum fits 16 bits */
            s[k] = _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(u->l[k], yl),
                                                      _mm256_maddubs_epi16(u->h[k], yh)), one);
        else                     /* pairs up to 2 * 127 * 127: widened apart */
            s[k] = _mm256_add_epi32(
                _mm256_madd_epi16(_mm256_maddubs_epi16(u->al[k], _mm256_sign_epi8(yl, u->l[k])), one),
                _mm256_madd_epi16(_mm256_maddubs_epi16(u->ah[k], _mm256_sign_epi8(yh, u->h[k])), one));
    }
    return _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
}

/* Q8_0: row i's 32 bytes times y; three vphaddd levels and a lane swap. */
INL __m256i q8_sums(const sl_block_q8_0_r8 *x, const sl_block_q8_0 *y)
{
    const __m256i one = _mm256_set1_epi16(1), yv = _mm256_loadu_si256((const __m256i *)y->qs);
    __m256i s[8];
    UNROLL for (int i = 0; i < 8; i++) {
        __m256i q = _mm256_loadu_si256((const __m256i *)x->qs[i]);
        s[i] = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(yv, q)), one);
    }
    /* a: rows 0..3, half of each in each lane; c: rows 4..7 */
    __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
    __m256i c = _mm256_hadd_epi32(_mm256_hadd_epi32(s[4], s[5]), _mm256_hadd_epi32(s[6], s[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, c, 0x20), _mm256_permute2x128_si256(a, c, 0x31));
}

/* Blocks [b0, b1) of groups [g0, g1) (group blocks of GB bytes) with NY
 * activation rows; acc starts at 0 on the first chunk, else from Y (the chain
 * goes on exactly). */
INL void run(const int T, const size_t GB, const int NY, const char *W, int64_t nb, int64_t g0, int64_t g1,
             int64_t b0, int64_t b1, const char *act, size_t arb, float *Y, int64_t ldy)
{
    int32_t ys[SL_ROWS8_NY][CH];
    float yd[SL_ROWS8_NY][CH];
    for (int j = 0; j < NY; j++) {
        const sl_block_q8_0 *y = (const sl_block_q8_0 *)(act + (size_t)j * arb);
        for (int64_t b = b0; b < b1; b++) {
            ys[j][b - b0] = T == T_MXFP4 ? off_sum(y + b) : 0;
            yd[j][b - b0] = sl_f16_to_f32(y[b].d);
        }
    }
    const int8_t *lv = T == T_MXFP4 ? sl_kvalues_mxfp4 : sl_kvalues_iq4nl;
    __m128i l = _mm_loadu_si128((const __m128i *)lv);
    if (T == T_MXFP4) l = _mm_add_epi8(l, _mm_set1_epi8(LEV_OFF));
    const __m256i lut = _mm256_broadcastsi128_si256(l);
    for (int64_t g = g0; g < g1; g++) {
        const char *x = W + (size_t)(g * nb) * GB;
        __m256 acc[SL_ROWS8_NY];
        UNROLL for (int j = 0; j < NY; j++)
            acc[j] = b0 ? _mm256_loadu_ps(Y + j * ldy + 8 * g) : _mm256_setzero_ps();
        for (int64_t b = b0; b < b1; b++) {
            const char *xb = x + (size_t)b * GB, *pf = xb + PF_AHEAD;
            UNROLL for (size_t o = 0; o < GB; o += 64) _mm_prefetch(pf + o, _MM_HINT_T1);
            nib8 u;
            if (T != T_Q8_0)
                nib_unpack(T, (const uint8_t *)xb + (T == T_MXFP4 ? offsetof(sl_block_mxfp4_r8, qs)
                                                                 : offsetof(sl_block_iq4_nl_r8, qs)), lut, &u);
            const __m256 dx = dx8(T, xb);
            UNROLL for (int j = 0; j < NY; j++) {
                const sl_block_q8_0 *y = (const sl_block_q8_0 *)(act + (size_t)j * arb) + b;
                __m256i h = T == T_Q8_0 ? q8_sums((const sl_block_q8_0_r8 *)(const void *)xb, y) : nib_sums(T, &u, y);
                if (T == T_MXFP4) h = _mm256_sub_epi32(h, _mm256_set1_epi32(ys[j][b - b0]));
                __m256 f = _mm256_mul_ps(dx, _mm256_set1_ps(yd[j][b - b0]));
                acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(h), f, acc[j]);
            }
        }
        UNROLL for (int j = 0; j < NY; j++) _mm256_storeu_ps(Y + j * ldy + 8 * g, acc[j]);
    }
}

#define R8_AVX2(T, ID, GB)                                                                                   \
    static void rows8_##T(int64_t n, const void *W, int64_t g0, int64_t g1, const void *act, size_t arb,     \
                          int ny, float *Y, int64_t ldy)                                                     \
    {                                                                                                        \
        const int64_t nb = n / SL_QK;                                                                        \
        for (int64_t b0 = 0; b0 < nb; b0 += CH) {                                                            \
            int64_t b1 = b0 + CH < nb ? b0 + CH : nb;                                                        \
            switch (ny) {                                                                                    \
            case 1: run(ID, sizeof(GB), 1, W, nb, g0, g1, b0, b1, act, arb, Y, ldy); break;                  \
            case 2: run(ID, sizeof(GB), 2, W, nb, g0, g1, b0, b1, act, arb, Y, ldy); break;                  \
            case 3: run(ID, sizeof(GB), 3, W, nb, g0, g1, b0, b1, act, arb, Y, ldy); break;                  \
            default: run(ID, sizeof(GB), 4, W, nb, g0, g1, b0, b1, act, arb, Y, ldy); break;                 \
            }                                                                                                \
        }                                                                                                    \
    }
R8_AVX2(mxfp4, T_MXFP4, sl_block_mxfp4_r8)
R8_AVX2(iq4_nl, T_IQ4_NL, sl_block_iq4_nl_r8)
R8_AVX2(q8_0, T_Q8_0, sl_block_q8_0_r8)

void sl_rows8_fill_avx2(sl_kern *k)
{
    k->rows8[SL_GGML_MXFP4] = rows8_mxfp4;
    k->rows8[SL_GGML_IQ4_NL] = rows8_iq4_nl;
    k->rows8[SL_GGML_Q8_0] = rows8_q8_0;
    k->rows8_fast[SL_GGML_MXFP4] = k->rows8_fast[SL_GGML_IQ4_NL] = k->rows8_fast[SL_GGML_Q8_0] = true;
}
