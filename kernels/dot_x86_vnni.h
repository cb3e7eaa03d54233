/* The x86 K-quant block kernels of the avx512vnni level: integer products
 * by vpdpbusd (u8 x s8 -> int32) and vpdpwssd (words x scales -> int32),
 * two chunks per scale step (dot2_scaled). Defines the integer products
 * dot_x86.h builds on, includes it, then q4_K, q6_K, q2_K, q3_K. The forms
 * without VNNI are dot_x86_madd.h. */
#ifndef SL_DOT_X86_VNNI_H
#define SL_DOT_X86_VNNI_H

#include <immintrin.h>

/* acc += sum over byte pairs (u8 a * s8 b) * w16, per int32 lane. */
static inline __m256i madd_scaled(__m256i acc, __m256i a, __m256i b, __m256i w16)
{
    return _mm256_dpwssd_epi32(acc, _mm256_maddubs_epi16(a, b), w16);
}

/* acc += sum of u8 a * s8 b per int32 lane (4 bytes each). */
static inline __m256i dot_u8s8(__m256i acc, __m256i a, __m256i b)
{
    return _mm256_dpbusd_epi32(acc, a, b);
}

#define SL_X86_KQ_Z 1   /* q4_K / q6_K below, 512 bits wide */
#include "dot_x86.h"

/* Two chunks dotted with vpdpbusd (lanes stay below 2^15: at most 4 products
 * of |q| <= 63 and |y| <= 127), packed to words and scaled with one
 * vpdpwssd: 3 multiply-port ops per 64 bytes instead of 4. */
static inline __m256i dot2_scaled(__m256i acc, __m256i xa, __m256i ya, __m256i xb, __m256i yb, __m256i w)
{
    __m256i pa = _mm256_dpbusd_epi32(_mm256_setzero_si256(), xa, ya);
    __m256i pb = _mm256_dpbusd_epi32(_mm256_setzero_si256(), xb, yb);
    return _mm256_dpwssd_epi32(acc, _mm256_packs_epi32(pa, pb), w);
}

/* One superblock (q2_K, q3_K): chunks 2m, 2m+1 with their word-pair scales
 * sc2[m] in two independent chains; the min / offset terms are the caller's. */
INL void dot2_superblock(const __m256i q[8], const __m256i sc2[4], const sl_block_q8_k *y,
                         __m256i *i0, __m256i *i1)
{
    *i0 = dot2_scaled(*i0, q[0], loadu(y->qs), q[1], loadu(y->qs + 32), sc2[0]);
    *i1 = dot2_scaled(*i1, q[2], loadu(y->qs + 64), q[3], loadu(y->qs + 96), sc2[1]);
    *i0 = dot2_scaled(*i0, q[4], loadu(y->qs + 128), q[5], loadu(y->qs + 160), sc2[2]);
    *i1 = dot2_scaled(*i1, q[6], loadu(y->qs + 192), q[7], loadu(y->qs + 224), sc2[3]);
}

/* q4_K and q6_K, 512 bits: a zmm holds chunks 2j | 2j+1 (256 elements in
 * four zmm), so each activation zmm is one contiguous 64-byte load. The 16
 * integer lanes are folded once per block (fold_z) so that fin_dmin converts
 * the same integer sums as with this level's former 256-bit pairs (integer
 * sums are exact in any order): results are bit for bit unchanged. */
typedef struct { __m512i q[4], w[2]; } zq_t;

/* Chunks 2j | 2j+1 x their activations, packed to words (per 128-bit lane:
 * chunk 2j or 2j+1, elements 16 i .. 16 i + 15 of q[a] then q[b]) and
 * scaled with one vpdpwssd. */
static inline __m512i dot2z(__m512i acc, __m512i qa, __m512i qb, const int8_t *ya, const int8_t *yb, __m512i w)
{
    __m512i pa = _mm512_dpbusd_epi32(_mm512_setzero_si512(), qa, _mm512_loadu_si512(ya));
    __m512i pb = _mm512_dpbusd_epi32(_mm512_setzero_si512(), qb, _mm512_loadu_si512(yb));
    return _mm512_dpwssd_epi32(acc, _mm512_packs_epi32(pa, pb), w);
}

/* The 16 lanes of two dot2z steps -> 8: lane l + lane l + 8. Not the
 * 256-bit scheme's eight sums, but fin_dmin adds lanes l and l + 2 of each
 * 128-bit half next, and both schemes' sums agree there (an integer sum does
 * not depend on its order): lanes 4i and 4i + 1 get 8 elements of every chunk
 * with their scales. */
static inline __m256i fold_z(__m512i r)
{
    return _mm256_add_epi32(_mm512_castsi512_si256(r), _mm512_extracti64x4_epi64(r, 1));
}

INL __m256i zq_superblock(const zq_t *z, const sl_block_q8_k *y)
{
    __m512i r = dot2z(_mm512_setzero_si512(), z->q[0], z->q[1], y->qs, y->qs + 64, z->w[0]);
    r = dot2z(r, z->q[2], z->q[3], y->qs + 128, y->qs + 192, z->w[1]);
    return fold_z(r);
}

/* Word-scale indices of dot2z step s: 128-bit lane i takes sub-block sb x4
 * then sb' x4 (its packed words: chunk 2j then 2j + 2 of the step).
 * Rows: q4_K (32-element sub-blocks: sb = 4s + i/2, sb' = sb + 2) steps 0, 1;
 * q6_K (16-element sub-blocks: sb = 8s + i, sb' = sb + 4) steps 0, 1. */
static const short zq_sidx[4][32] __attribute__((aligned(64))) = {
    {0, 0, 0, 0, 2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2, 1, 1, 1, 1, 3, 3, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3},
    {4, 4, 4, 4, 6, 6, 6, 6, 4, 4, 4, 4, 6, 6, 6, 6, 5, 5, 5, 5, 7, 7, 7, 7, 5, 5, 5, 5, 7, 7, 7, 7},
    {0, 0, 0, 0, 4, 4, 4, 4, 1, 1, 1, 1, 5, 5, 5, 5, 2, 2, 2, 2, 6, 6, 6, 6, 3, 3, 3, 3, 7, 7, 7, 7},
    {8, 8, 8, 8, 12, 12, 12, 12, 9, 9, 9, 9, 13, 13, 13, 13, 10, 10, 10, 10, 14, 14, 14, 14, 11, 11, 11, 11, 15, 15, 15, 15},
};

#if defined(__GFNI__) && defined(__AVX512VBMI__)
/* zq_sidx rows 0, 1 as byte indices into the 8 scale bytes: word k's low
 * byte takes scale zq_sidx[row][k], its high byte is masked to zero. */
static const char zq_bidx[2][64] __attribute__((aligned(64))) = {
    {0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 2, 0,
     1, 0, 1, 0, 1, 0, 1, 0, 3, 0, 3, 0, 3, 0, 3, 0, 1, 0, 1, 0, 1, 0, 1, 0, 3, 0, 3, 0, 3, 0, 3, 0},
    {4, 0, 4, 0, 4, 0, 4, 0, 6, 0, 6, 0, 6, 0, 6, 0, 4, 0, 4, 0, 4, 0, 4, 0, 6, 0, 6, 0, 6, 0, 6, 0,
     5, 0, 5, 0, 5, 0, 5, 0, 7, 0, 7, 0, 7, 0, 7, 0, 5, 0, 5, 0, 5, 0, 5, 0, 7, 0, 7, 0, 7, 0, 7, 0},
};
#endif

static inline __m512i zq_scales(__m512i s16, int row)
{
    return _mm512_permutexvar_epi16(_mm512_load_si512(zq_sidx[row]), s16);
}

typedef struct { zq_t z; __m256i m16; __m256 dv; } u_q4_k;

INL void unp_q4_k(const sl_block_q4_k *x, u_q4_k *u)
{
    uint32_t sc[2], mn[2];
    sl_q4k_scales8(x->scales, sc, mn);
    __m128i s8 = _mm_cvtsi64_si128((long long)(((uint64_t)sc[1] << 32) | sc[0]));
#if defined(__GFNI__) && defined(__AVX512VBMI__)
    /* The same bytes with fewer shuffle-port ops (Zen 4: 5.5 instead of 6.5 ns
     * a block in L2, kbench -c). Nibbles: one affine map per qword, x & 15 in
     * the low half and x >> 4 in the high half, instead of a masked shift and
     * an and. Scales: one byte permute into the even bytes of each word, odd
     * bytes zeroed, instead of a widening and a word permute. */
    const __m512i lohi = _mm512_set_epi64(0x1020408000000000ll, 0x1020408000000000ll, 0x1020408000000000ll,
                                          0x1020408000000000ll, 0x0102040800000000ll, 0x0102040800000000ll,
                                          0x0102040800000000ll, 0x0102040800000000ll);
    UNROLL
    for (int p = 0; p < 4; p++)     /* qs[32p..] low nibbles: chunk 2p, high: 2p + 1 */
        u->z.q[p] = _mm512_gf2p8affine_epi64_epi8(_mm512_broadcast_i64x4(loadu(x->qs + 32 * p)), lohi, 0);
    u->z.w[0] = _mm512_maskz_permutexvar_epi8(0x5555555555555555ull, _mm512_load_si512(zq_bidx[0]),
                                              _mm512_castsi128_si512(s8));
    u->z.w[1] = _mm512_maskz_permutexvar_epi8(0x5555555555555555ull, _mm512_load_si512(zq_bidx[1]),
                                              _mm512_castsi128_si512(s8));
#else
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    UNROLL
    for (int p = 0; p < 4; p++) {   /* qs[32p..] low nibbles: chunk 2p, high: 2p + 1 */
        __m512i q = _mm512_broadcast_i64x4(loadu(x->qs + 32 * p));
        u->z.q[p] = _mm512_and_si512(_mm512_mask_srli_epi16(q, 0xffff0000u, q, 4), m4);
    }
    __m512i s16 = _mm512_cvtepu8_epi16(_mm256_castsi128_si256(s8));
    u->z.w[0] = zq_scales(s16, 0);
    u->z.w[1] = zq_scales(s16, 1);
#endif
    __m128i m8 = _mm_cvtsi64_si128((long long)(((uint64_t)mn[1] << 32) | mn[0]));
    u->m16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
    u->dv = dmin_vec_h(&x->d);
}

INL void pair_q4_k(const u_q4_k *u, const sl_block_q8_k *y, acc_t *acc)
{
    fin_dmin(zq_superblock(&u->z, y), _mm256_madd_epi16(loadu(y->bsums), u->m16), u->dv, y->d, acc);
}

/* q6_K: q + 32 (0..63) times y; 32 * sum(sc * bsums) goes to the min lanes. */
typedef struct { zq_t z; __m256i sc16; __m256 dv; } u_q6_k;

INL void unp_q6_k(const sl_block_q6_k *x, u_q6_k *u)
{
    const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
    /* chunk 4h + k: ql[64h + 32 (k & 1)] nibble k >> 1, qh[32h] bits 2k, 2k + 1 */
    const __m512i sh01 = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0), sh23 = _mm512_set_epi64(6, 6, 6, 6, 4, 4, 4, 4);
    UNROLL
    for (int h = 0; h < 2; h++) {
        __m512i L = _mm512_loadu_si512(x->ql + 64 * h);
        __m512i H = _mm512_broadcast_i64x4(loadu(x->qh + 32 * h));
        __m512i h01 = _mm512_and_si512(_mm512_slli_epi16(_mm512_srlv_epi64(H, sh01), 4), m30);
        __m512i h23 = _mm512_and_si512(_mm512_slli_epi16(_mm512_srlv_epi64(H, sh23), 4), m30);
        u->z.q[2 * h] = _mm512_ternarylogic_epi32(L, m4, h01, 0xea);              /* (L & 15) | h */
        u->z.q[2 * h + 1] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(L, 4), m4, h23, 0xea);
    }
    __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
    __m512i s16 = _mm512_castsi256_si512(sc16);
    u->z.w[0] = zq_scales(s16, 2);
    u->z.w[1] = zq_scales(s16, 3);
    u->sc16 = sc16;
    float d = f16s(x->d);
    u->dv = dmin_vec(d, 32.0f * d);
}

INL void pair_q6_k(const u_q6_k *u, const sl_block_q8_k *y, acc_t *acc)
{
    fin_dmin(zq_superblock(&u->z, y), _mm256_madd_epi16(loadu(y->bsums), u->sc16), u->dv, y->d, acc);
}

/* Word scales for dot2_scaled over chunks k = 2m, 2m+1 of 16-element
 * sub-blocks (chunk k holds sub-blocks 2k | 2k+1 in its low | high half). */
static inline __m256i sc2_sub16(__m256i sc16, int m)
{
    short a = (short)(4 * m), b = (short)(4 * m + 2), c = (short)(4 * m + 1), d = (short)(4 * m + 3);
    return _mm256_permutexvar_epi16(_mm256_set_epi16(d, d, d, d, c, c, c, c, b, b, b, b, a, a, a, a), sc16);
}

/* q2_K: 2-bit q (0..3) x y scaled by the low nibbles; mins via bsums. */
/* Fewer ops per block (decode is compute bound on q2_K): fields k = 1, 3 of
 * each byte are used in place (x & 0x0c = 4 q), so the even-k chunks get 4 x
 * their scale instead of a shift + mask; the mins enter as 16 m (x & 0xf0).
 * Integer lanes then carry 4 isum | 16 msum interleaved (fold_im) and meet
 * one factor vector (d, dmin, d, dmin, ...) from a single f16 pair convert;
 * red_q2_k applies 1/4 and -1/16 per lane once per row (exact: powers of 2).
 * Bounds: dpbusd lanes <= 4 * 12 * 128 (packs exact), 4 isum per block
 * <= 4 * 45 * 128 * 256 < 2^24, a folded msum lane <= 4 * 240 * 2048 < 2^24
 * (both converted exactly). */
typedef struct { __m256i q[8], sc2[4], m16; __m256 dv; } u_q2_k;

INL void unp_q2_k(const sl_block_q2_k *x, u_q2_k *u)
{
    const __m256i m3 = _mm256_set1_epi8(3), mc = _mm256_set1_epi8(0x0c);
    UNROLL
    for (int h = 0; h < 2; h++) {
        __m256i q = loadu(x->qs + 32 * h), t = _mm256_srli_epi16(q, 4);
        u->q[4 * h] = _mm256_and_si256(q, m3);
        u->q[4 * h + 1] = _mm256_and_si256(q, mc);
        u->q[4 * h + 2] = _mm256_and_si256(t, m3);
        u->q[4 * h + 3] = _mm256_and_si256(t, mc);
    }
    __m256i w = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
    /* sub-block s sits in chunk s / 2; even chunks (s % 4 < 2) get 4 x */
    __m256i sc16 = _mm256_sllv_epi16(_mm256_and_si256(w, _mm256_set1_epi16(15)),
                                     _mm256_set_epi16(0, 0, 2, 2, 0, 0, 2, 2, 0, 0, 2, 2, 0, 0, 2, 2));
    UNROLL
    for (int m = 0; m < 4; m++) u->sc2[m] = sc2_sub16(sc16, m);
    u->m16 = _mm256_and_si256(w, _mm256_set1_epi16(0xf0));
    uint32_t dd;
    memcpy(&dd, &x->d, 4); /* d, dmin adjacent */
    u->dv = _mm256_cvtph_ps(_mm_set1_epi32((int)dd));
}

/* (isum | msum) lanes interleaved: even lanes isum partials, odd lanes msum. */
static inline __m256i fold_im(__m256i isum, __m256i msum)
{
    return _mm256_add_epi32(_mm256_unpacklo_epi32(isum, msum), _mm256_unpackhi_epi32(isum, msum));
}

INL void pair_q2_k(const u_q2_k *u, const sl_block_q8_k *y, acc_t *acc)
{
    __m256i i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256();
    dot2_superblock(u->q, u->sc2, y, &i0, &i1);
    __m256i msum = _mm256_madd_epi16(loadu(y->bsums), u->m16);
    __m256i v = fold_im(_mm256_add_epi32(i0, i1), msum);
    acc->a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_mul_ps(u->dv, _mm256_set1_ps(y->d)), acc->a);
}

static inline float red_q2_k(const acc_t *a)
{
    return hsum8(_mm256_mul_ps(a->a, _mm256_set_ps(-0.0625f, 0.25f, -0.0625f, 0.25f,
                                                   -0.0625f, 0.25f, -0.0625f, 0.25f)));
}

/* q3_K: q + 4 (0..7) x y scaled by the signed 6-bit scales; 4 * sum(sc * bsums) to b. */
/* As q2_K: fields k = 1, 3 used in place (4 (q + 4)), even chunks get 4 x
 * their scale. The hmask bit of chunk 4h + k is moved onto the field's +4
 * bit with byte adds (x + x = x << 1 per byte) from hm or hm >> 4 and merged
 * by one bit select. 4 isum goes to acc->a, osum to acc->b (one factor d:
 * no fold needed); red_q3_k weighs them 1/4 and -4 (exact: powers of 2).
 * Bounds: dpbusd lanes <= 4 * 28 * 128 (packs exact); an isum lane covers
 * 32 elements: 4 * 7 * 32 * 128 * 32 < 2^24 (converted exactly). */
typedef struct { __m256i q[8], sc2[4], sc16; __m256 dv; } u_q3_k;

INL void unp_q3_k(const sl_block_q3_k *x, u_q3_k *u)
{
    u->sc16 = _mm256_cvtepi8_epi16(q3k_scales8(x));
    __m256i sc16x = _mm256_sllv_epi16(u->sc16, _mm256_set_epi16(0, 0, 2, 2, 0, 0, 2, 2, 0, 0, 2, 2, 0, 0, 2, 2));
    UNROLL
    for (int m = 0; m < 4; m++) u->sc2[m] = sc2_sub16(sc16x, m);
    const __m256i m3 = _mm256_set1_epi8(3), mc = _mm256_set1_epi8(0x0c);
    const __m256i b2 = _mm256_set1_epi8(0x04), b4 = _mm256_set1_epi8(0x10);
    __m256i hm = loadu(x->hmask);
    UNROLL
    for (int h = 0; h < 2; h++) {
        __m256i q = loadu(x->qs + 32 * h), t = _mm256_srli_epi16(q, 4);
        __m256i H0 = h ? _mm256_srli_epi16(hm, 4) : hm;
        __m256i H1 = _mm256_add_epi8(H0, H0), H2 = _mm256_add_epi8(H1, H1), H3 = _mm256_add_epi8(H2, H2);
        /* select: bit from the hmask copy where the constant is set, else the field */
        u->q[4 * h] = _mm256_ternarylogic_epi32(_mm256_and_si256(q, m3), H2, b2, 0xd8);
        u->q[4 * h + 1] = _mm256_ternarylogic_epi32(_mm256_and_si256(q, mc), H3, b4, 0xd8);
        u->q[4 * h + 2] = _mm256_ternarylogic_epi32(_mm256_and_si256(t, m3), H0, b2, 0xd8);
        u->q[4 * h + 3] = _mm256_ternarylogic_epi32(_mm256_and_si256(t, mc), H1, b4, 0xd8);
    }
    u->dv = _mm256_cvtph_ps(_mm_set1_epi16((short)x->d));
}

INL void pair_q3_k(const u_q3_k *u, const sl_block_q8_k *y, acc_t *acc)
{
    __m256i i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256();
    dot2_superblock(u->q, u->sc2, y, &i0, &i1);
    __m256i osum = _mm256_madd_epi16(loadu(y->bsums), u->sc16);
    __m256 f = _mm256_mul_ps(u->dv, _mm256_set1_ps(y->d));
    acc->a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(i0, i1)), f, acc->a);
    acc->b = _mm256_fmadd_ps(_mm256_cvtepi32_ps(osum), f, acc->b);
}

static inline float red_q3_k(const acc_t *a)
{
    return 0.25f * hsum8(a->a) - 4.0f * hsum8(a->b);
}

#endif
