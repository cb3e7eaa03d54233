/* The x86 K-quant block kernels without VNNI (the avx2 and avx512 levels):
 * integer products by vpmaddubsw (u8 x s8 -> word pairs) and vpmaddwd
 * (words x scales -> int32), one 32-byte chunk and its sub-block scale per
 * step. Defines the integer products dot_x86.h builds on, includes it, then
 * q4_K, q6_K, q2_K, q3_K. The VNNI forms are dot_x86_vnni.h. */
#ifndef SL_DOT_X86_MADD_H
#define SL_DOT_X86_MADD_H

#include <immintrin.h>

/* acc += sum over byte pairs (u8 a * s8 b) * w16, per int32 lane. */
static inline __m256i madd_scaled(__m256i acc, __m256i a, __m256i b, __m256i w16)
{
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), w16));
}

/* acc += sum of u8 a * s8 b per int32 lane (4 bytes each). */
static inline __m256i dot_u8s8(__m256i acc, __m256i a, __m256i b)
{
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b),
                                                   _mm256_set1_epi16(1)));
}

#include "dot_x86.h"

/* One superblock: chunk k (32 bytes) times its scale pair sc[k] in two
 * independent chains, then the min / offset sum bsums . bw and fin_dmin. */
INL void pair_madd(const __m256i q[8], const __m256i sc[8], __m256i bw, __m256 dv,
                   const sl_block_q8_k *y, acc_t *acc)
{
    __m256i i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256();
    UNROLL
    for (int k = 0; k < 8; k += 2) {
        i0 = madd_scaled(i0, q[k], loadu(y->qs + 32 * k), sc[k]);
        i1 = madd_scaled(i1, q[k + 1], loadu(y->qs + 32 * k + 32), sc[k + 1]);
    }
    fin_dmin(_mm256_add_epi32(i0, i1), _mm256_madd_epi16(loadu(y->bsums), bw), dv, y->d, acc);
}

INL void unp_q4_k(const sl_block_q4_k *x, u_q4_k *u) { (void)unp_q4_k_base(x, u); }

INL void pair_q4_k(const u_q4_k *u, const sl_block_q8_k *y, acc_t *acc)
{
    pair_madd(u->q, u->sc, u->m16, u->dv, y, acc);
}

INL void unp_q6_k(const sl_block_q6_k *x, u_q6_k *u) { unp_q6_k_base(x, u); }

INL void pair_q6_k(const u_q6_k *u, const sl_block_q8_k *y, acc_t *acc)
{
    pair_madd(u->q, u->sc, u->sc16, u->dv, y, acc);
}

/* q2_K: 2-bit q (0..3) x y scaled by the low nibbles; mins via bsums. */
typedef struct { __m256i q[8], sc[8], m16; __m256 dv; } u_q2_k;

INL void unp_q2_k(const sl_block_q2_k *x, u_q2_k *u)
{
    const __m256i m3 = _mm256_set1_epi8(3);
    UNROLL
    for (int h = 0; h < 2; h++) {
        __m256i q = loadu(x->qs + 32 * h);
        UNROLL
        for (int k = 0; k < 4; k++) u->q[4 * h + k] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * k), m3);
    }
    __m128i s8 = _mm_loadu_si128((const __m128i *)x->scales);
    __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(s8, _mm_set1_epi8(15)));
    UNROLL
    for (int k = 0; k < 8; k++) u->sc[k] = pair_bcast(sc16, k);
    u->m16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s8, 4), _mm_set1_epi8(15)));
    u->dv = dmin_vec(f16s(x->d), f16s(x->dmin));
}

INL void pair_q2_k(const u_q2_k *u, const sl_block_q8_k *y, acc_t *acc)
{
    pair_madd(u->q, u->sc, u->m16, u->dv, y, acc);
}

DEF_RED(q2_k)

/* q3_K: q + 4 (0..7) x y scaled by the signed 6-bit scales; 4 * sum(sc * bsums) to b. */
typedef struct { __m256i q[8], sc[8], sc16; __m256 dv; } u_q3_k;

INL void unp_q3_k(const sl_block_q3_k *x, u_q3_k *u)
{
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    u->sc16 = _mm256_cvtepi8_epi16(q3k_scales8(x));
    UNROLL
    for (int k = 0; k < 8; k++) u->sc[k] = pair_bcast(u->sc16, k);
    __m256i hm = loadu(x->hmask);
    UNROLL
    for (int h = 0; h < 2; h++) {
        __m256i q = loadu(x->qs + 32 * h);
        UNROLL
        for (int k = 0; k < 4; k++) {
            __m256i lo = _mm256_and_si256(_mm256_srli_epi16(q, 2 * k), m3);
#ifdef __AVX512BW__
            /* +4 where the hmask bit is set: test + masked add, 2 ops instead of 4 */
            __mmask32 hb = _mm256_test_epi8_mask(hm, _mm256_set1_epi8((char)(1 << (4 * h + k))));
            u->q[4 * h + k] = _mm256_mask_add_epi8(lo, hb, lo, _mm256_set1_epi8(4));
            (void)one;
#else
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + k), one);
            u->q[4 * h + k] = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 2));
#endif
        }
    }
    float d = f16s(x->d);
    u->dv = dmin_vec(d, 4.0f * d);
}

INL void pair_q3_k(const u_q3_k *u, const sl_block_q8_k *y, acc_t *acc)
{
    pair_madd(u->q, u->sc, u->sc16, u->dv, y, acc);
}

DEF_RED(q3_k)

#endif
