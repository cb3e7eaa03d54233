/* The rows8 kernels on AVX2 (the avx512 levels use them too): MXFP4, IQ4_NL,
 * Q8_0 and IQ4_XS. Per group block, the eight rows' payloads are one linear
 * read (nibbles: four 32-byte loads a 32-element piece, rows k and k + 4 in
 * load k; Q8_0: a row per load); vphaddd levels fold the eight rows' products
 * into one vector in row order, and one convert and one FMA finish eight
 * rows' block. MXFP4's levels come by one lookup as level + 12 (0..24,
 * unsigned for vpmaddubsw) and the activation block's 12 * sum(y), taken once
 * per call, restores the exact sums: about 6.5 vector uops per row and block
 * against ~12 a row at a time. IQ4_NL and Q8_0 multiply the weights'
 * magnitudes by signed activations. IQ4_XS weighs each sub-block's pairs by
 * ls - 32 in the vpmaddwd that widens them, in eight integer lanes a row over
 * the whole superblock: one vphaddd fold, convert and FMA per 256 elements;
 * for one activation row it multiplies the activations' magnitudes (taken
 * once per sub-block, not per chunk) by signed levels: ~14 vector uops per
 * 32-byte chunk against 16 (with more rows the weights' magnitudes, shared by
 * the rows, keep fewer registers live; Q8_K's quantizer never gives -128,
 * whose sign would not flip). Bit for bit rows8_scalar.c. */
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

enum { T_MXFP4, T_IQ4_NL, T_Q8_0, T_IQ4_XS };

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

/* IQ4_XS: the eight rows' 6-bit scales less 32 as words, in the order the
 * payload chunks want them: sc[p][h] holds sub-block 2 j + p of rows 2 h,
 * 2 h + 1 (low lane) and 2 h + 4, 2 h + 5 (high lane) at words 4 r + j. */
INL void xs_scales(const sl_block_iq4_xs_r8 *x, __m256i sc[2][2])
{
    const __m256i m4 = _mm256_set1_epi8(0x0f), m3 = _mm256_set1_epi8(3), mc = _mm256_set1_epi8(12);
    const __m256i l = _mm256_loadu_si256((const __m256i *)x->scales_l);   /* byte 4 i + j: row i's scales_l[j] */
    const __m128i hb = _mm_loadu_si128((const __m128i *)x->scales_h), m4x = _mm_set1_epi8(0x0f);
    const __m128i h0 = _mm_and_si128(hb, m4x), h1 = _mm_and_si128(_mm_srli_epi16(hb, 4), m4x);
    /* byte 4 i + j: nibble j of row i's scales_h, the high bits of sub-blocks 2 j, 2 j + 1 */
    const __m256i n = _mm256_set_m128i(_mm_unpackhi_epi8(h0, h1), _mm_unpacklo_epi8(h0, h1));
    const __m256i k32 = _mm256_set1_epi8(32);
    __m256i e = _mm256_or_si256(_mm256_and_si256(l, m4), _mm256_slli_epi16(_mm256_and_si256(n, m3), 4));
    __m256i o = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(n, mc), 2));
    e = _mm256_sub_epi8(e, k32);
    o = _mm256_sub_epi8(o, k32);
    /* bytes to sign-extended words: each byte twice, shifted down */
    sc[0][0] = _mm256_srai_epi16(_mm256_unpacklo_epi8(e, e), 8);
    sc[0][1] = _mm256_srai_epi16(_mm256_unpackhi_epi8(e, e), 8);
    sc[1][0] = _mm256_srai_epi16(_mm256_unpacklo_epi8(o, o), 8);
    sc[1][1] = _mm256_srai_epi16(_mm256_unpackhi_epi8(o, o), 8);
}

/* IQ4_XS: the eight rows' superblock sums with NY activation blocks (y, arb
 * bytes apart), rows in lanes 0..7 of h[j]. */
INL void xs_sums(const int NY, const sl_block_iq4_xs_r8 *x, const char *y, size_t arb, __m256i lut, __m256i *h)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i sc[2][2], acc[SL_ROWS8_NY][4];
    xs_scales(x, sc);
    UNROLL for (int j = 0; j < NY; j++)
        UNROLL for (int k = 0; k < 4; k++) acc[j][k] = _mm256_setzero_si256();
    UNROLL for (int ib = 0; ib < SL_QKK / 32; ib++) {
        /* the activations (one row: and their magnitudes), each half in both lanes */
        __m256i yl[SL_ROWS8_NY], yh[SL_ROWS8_NY], al[SL_ROWS8_NY], ah[SL_ROWS8_NY];
        UNROLL for (int j = 0; j < NY; j++) {
            const int8_t *q = ((const sl_block_q8_k *)(const void *)(y + (size_t)j * arb))->qs + 32 * ib;
            yl[j] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)q));
            yh[j] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(q + 16)));
            if (NY == 1) {
                al[j] = _mm256_abs_epi8(yl[j]);
                ah[j] = _mm256_abs_epi8(yh[j]);
            }
        }
        UNROLL for (int k = 0; k < 4; k++) {
            /* row k's (row k + 4's) scale of this sub-block in every word of the low (high) lane */
            const int w = 4 * (k & 1) + ib / 2;
            const __m256i s =
                _mm256_shuffle_epi8(sc[ib & 1][k >> 1], _mm256_set1_epi16((short)(0x101 * 2 * w + 0x100)));
            __m256i v = _mm256_loadu_si256((const __m256i *)x->qs[ib][k]);
            __m256i ql = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, m4));
            __m256i qh = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
            __m256i aql = NY == 1 ? ql : _mm256_sign_epi8(ql, ql), aqh = NY == 1 ? qh : _mm256_sign_epi8(qh, qh);
            UNROLL for (int j = 0; j < NY; j++) {   /* pairs <= 2 * 127 * 127, then times ls - 32 */
                __m256i pl, ph;
                if (NY == 1) {   /* |y| x sign(level, y): the magnitudes once per sub-block */
                    pl = _mm256_maddubs_epi16(al[j], _mm256_sign_epi8(ql, yl[j]));
                    ph = _mm256_maddubs_epi16(ah[j], _mm256_sign_epi8(qh, yh[j]));
                } else {         /* |level| x sign(y, level): the magnitudes once per chunk, not per row */
                    pl = _mm256_maddubs_epi16(aql, _mm256_sign_epi8(yl[j], ql));
                    ph = _mm256_maddubs_epi16(aqh, _mm256_sign_epi8(yh[j], qh));
                }
                acc[j][k] =
                    _mm256_add_epi32(acc[j][k], _mm256_add_epi32(_mm256_madd_epi16(pl, s), _mm256_madd_epi16(ph, s)));
            }
        }
    }
    UNROLL for (int j = 0; j < NY; j++)
        h[j] = _mm256_hadd_epi32(_mm256_hadd_epi32(acc[j][0], acc[j][1]), _mm256_hadd_epi32(acc[j][2], acc[j][3]));
}

/* Blocks [b0, b1) of groups [g0, g1) (group blocks of GB bytes, activation
 * blocks of AB) with NY activation rows; acc starts at 0 on the first chunk,
 * else from Y (the chain goes on exactly). */
INL void run(const int T, const size_t GB, const size_t AB, const int NY, const char *W, int64_t nb, int64_t g0,
             int64_t g1, int64_t b0, int64_t b1, const char *act, size_t arb, float *Y, int64_t ldy)
{
    int32_t ys[SL_ROWS8_NY][CH];
    float yd[SL_ROWS8_NY][CH];
    for (int j = 0; j < NY; j++)
        for (int64_t b = b0; b < b1; b++) {
            const void *y = act + (size_t)j * arb + (size_t)b * AB;
            ys[j][b - b0] = T == T_MXFP4 ? off_sum(y) : 0;
            yd[j][b - b0] = T == T_IQ4_XS ? ((const sl_block_q8_k *)y)->d
                                          : sl_f16_to_f32(((const sl_block_q8_0 *)y)->d);
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
            __m256i hx[SL_ROWS8_NY];
            if (T == T_MXFP4 || T == T_IQ4_NL)
                nib_unpack(T, (const uint8_t *)xb + (T == T_MXFP4 ? offsetof(sl_block_mxfp4_r8, qs)
                                                                 : offsetof(sl_block_iq4_nl_r8, qs)), lut, &u);
            if (T == T_IQ4_XS)
                xs_sums(NY, (const sl_block_iq4_xs_r8 *)(const void *)xb, act + (size_t)b * AB, arb, lut, hx);
            const __m256 dx = dx8(T, xb);
            UNROLL for (int j = 0; j < NY; j++) {
                const sl_block_q8_0 *y = (const sl_block_q8_0 *)(const void *)(act + (size_t)j * arb + (size_t)b * AB);
                __m256i h = T == T_IQ4_XS ? hx[j]
                          : T == T_Q8_0   ? q8_sums((const sl_block_q8_0_r8 *)(const void *)xb, y)
                                          : nib_sums(T, &u, y);
                if (T == T_MXFP4) h = _mm256_sub_epi32(h, _mm256_set1_epi32(ys[j][b - b0]));
                __m256 f = _mm256_mul_ps(dx, _mm256_set1_ps(yd[j][b - b0]));
                acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(h), f, acc[j]);
            }
        }
        UNROLL for (int j = 0; j < NY; j++) _mm256_storeu_ps(Y + j * ldy + 8 * g, acc[j]);
    }
}

#define R8_AVX2(T, ID, BE, GB, AB)                                                                           \
    static void rows8_##T(int64_t n, const void *W, int64_t g0, int64_t g1, const void *act, size_t arb,     \
                          int ny, float *Y, int64_t ldy)                                                     \
    {                                                                                                        \
        const int64_t nb = n / BE;                                                                           \
        for (int64_t b0 = 0; b0 < nb; b0 += CH) {                                                            \
            int64_t b1 = b0 + CH < nb ? b0 + CH : nb;                                                        \
            switch (ny) {                                                                                    \
            case 1: run(ID, sizeof(GB), sizeof(AB), 1, W, nb, g0, g1, b0, b1, act, arb, Y, ldy); break;      \
            case 2: run(ID, sizeof(GB), sizeof(AB), 2, W, nb, g0, g1, b0, b1, act, arb, Y, ldy); break;      \
            case 3: run(ID, sizeof(GB), sizeof(AB), 3, W, nb, g0, g1, b0, b1, act, arb, Y, ldy); break;      \
            default: run(ID, sizeof(GB), sizeof(AB), 4, W, nb, g0, g1, b0, b1, act, arb, Y, ldy); break;     \
            }                                                                                                \
        }                                                                                                    \
    }
R8_AVX2(mxfp4, T_MXFP4, SL_QK, sl_block_mxfp4_r8, sl_block_q8_0)
R8_AVX2(iq4_nl, T_IQ4_NL, SL_QK, sl_block_iq4_nl_r8, sl_block_q8_0)
R8_AVX2(q8_0, T_Q8_0, SL_QK, sl_block_q8_0_r8, sl_block_q8_0)
R8_AVX2(iq4_xs, T_IQ4_XS, SL_QKK, sl_block_iq4_xs_r8, sl_block_q8_k)

void sl_rows8_fill_avx2(sl_kern *k)
{
    k->rows8[SL_GGML_MXFP4] = rows8_mxfp4;
    k->rows8[SL_GGML_IQ4_NL] = rows8_iq4_nl;
    k->rows8[SL_GGML_Q8_0] = rows8_q8_0;
    k->rows8[SL_GGML_IQ4_XS] = rows8_iq4_xs;
    k->rows8_fast[SL_GGML_MXFP4] = k->rows8_fast[SL_GGML_IQ4_NL] = k->rows8_fast[SL_GGML_Q8_0] = true;
    k->rows8_fast[SL_GGML_IQ4_XS] = true;
}
