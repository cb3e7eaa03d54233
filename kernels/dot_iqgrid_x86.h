/* x86 dots of the grid i-quants with Q8_K (the scheme of dot_iqgrid.h),
 * included by dot_iqgrid_avx2.c and dot_iqgrid_avx512.c with their -m flags.
 * Per 32 elements: the grid entries are gathered into one vector of unsigned
 * bytes, the signs are moved onto the activations (vpsignb with byte masks
 * from the sign bytes or the sl_iq_signs64 table), vpmaddubsw forms the
 * products and vpmaddwd adds pairs times the group scale 2s+1. (A 64-element
 * avx512 variant with the sign bits as opmasks measured 1.5-1.8x slower: the
 * gathers and mask assembly are scalar work either way, so the avx512 level
 * builds this 256-bit scheme with its own flags, as the K-quants do.) iq1: the
 * weight bytes 8g + delta8 are signed, so |w| times sign(q8, w). The exact
 * integer sum of a super-block is reduced once and scaled like the scalar
 * oracle's term, and the terms are added in double in the same order, so
 * every level equals the scalar result bit for bit. */
#ifndef SL_DOT_IQGRID_X86_H
#define SL_DOT_IQGRID_X86_H

#include <immintrin.h>
#include <string.h>

#include "dot_iqgrid.h"

#define INL static inline __attribute__((always_inline))

INL uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
INL uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* 4 sign bytes of the 7-bit sign indices in w (bits 7l..7l+6), byte l = group l */
INL uint32_t signs4(uint32_t w)
{
    return (uint32_t)sl_iq_signs8[w & 127] | (uint32_t)sl_iq_signs8[(w >> 7) & 127] << 8
         | (uint32_t)sl_iq_signs8[(w >> 14) & 127] << 16 | (uint32_t)sl_iq_signs8[(w >> 21) & 127] << 24;
}

/* 3-bit scale codes -> 2s+1 as one 16-bit word repeated (for a set1 / lane) */
INL int sc21(unsigned s) { return (int)(2 * s + 1); }

/* ---------------- avx2: 32 elements per step -------------------------------- */
typedef __m256i vec;

INL int32_t hsum_i32(vec v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

INL vec scales2(int s0, int s1)
{
    return _mm256_set_m128i(_mm_set1_epi16((short)s1), _mm_set1_epi16((short)s0));
}

/* bytes 0xff where bit i of the 32 sign bits is set, else 0x01 */
INL vec sign_vec(uint32_t bits)
{
    const vec shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                       0x0101010101010101, 0x0000000000000000);
    const vec bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    vec v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), shuf);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
    return _mm256_or_si256(v, _mm256_set1_epi8(1));
}

/* A super-block unpacked once: per 32 elements the unsigned weight bytes,
 * the vpsignb operand for the activations and the 2s+1 scale words. */
typedef struct { vec g[8]; vec s[8]; vec sc[8]; } unp_t;

INL void put_u(unp_t *u, int k, vec g, uint32_t neg, vec sc) { u->g[k] = g; u->s[k] = sign_vec(neg); u->sc[k] = sc; }

/* the same from four 7-bit sign indices, through the byte-mask table */
INL void put_k(unp_t *u, int k, vec g, unsigned k0, unsigned k1, unsigned k2, unsigned k3, vec sc)
{
    vec m = _mm256_set_epi64x((long long)sl_iq_signs64[k3 & 127], (long long)sl_iq_signs64[k2 & 127],
                              (long long)sl_iq_signs64[k1 & 127], (long long)sl_iq_signs64[k0 & 127]);
    u->g[k] = g;
    u->s[k] = _mm256_or_si256(m, _mm256_set1_epi8(1));
    u->sc[k] = sc;
}

/* iq1: w = 8g + delta8 signed bytes: |w| times sign(q8, w) */
INL void put_s(unp_t *u, int k, vec w, vec sc) { u->g[k] = _mm256_sign_epi8(w, w); u->s[k] = w; u->sc[k] = sc; }

INL int32_t isum_unp(const unp_t *u, const int8_t *q)
{
    vec acc = _mm256_setzero_si256();
    for (int k = 0; k < 8; k++) {
        vec y = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(q + 32 * k)), u->s[k]);
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u->g[k], y), u->sc[k]));
    }
    return hsum_i32(acc);
}

INL vec g8x4(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    return _mm256_set_epi64x((long long)d, (long long)c, (long long)b, (long long)a);
}

INL vec g4x8(const uint32_t *grid, const uint8_t *qs, uint32_t hi_bits)
{
    return _mm256_set_epi32((int)grid[qs[7] | ((hi_bits >> 7) & 1) << 8], (int)grid[qs[6] | ((hi_bits >> 6) & 1) << 8],
                            (int)grid[qs[5] | ((hi_bits >> 5) & 1) << 8], (int)grid[qs[4] | ((hi_bits >> 4) & 1) << 8],
                            (int)grid[qs[3] | ((hi_bits >> 3) & 1) << 8], (int)grid[qs[2] | ((hi_bits >> 2) & 1) << 8],
                            (int)grid[qs[1] | ((hi_bits >> 1) & 1) << 8], (int)grid[qs[0] | (hi_bits & 1) << 8]);
}

INL vec iq1_w(vec g, vec dsign /* 0x01 or 0xff per byte */)
{
    g = _mm256_add_epi8(g, g);
    g = _mm256_add_epi8(g, g);
    g = _mm256_add_epi8(g, g);
    return _mm256_add_epi8(g, dsign);
}

/* ---- per type: the exact integer sum of one super-block ----------------- */

INL void unp_iq2_xxs(const sl_block_iq2_xxs *x, unp_t *u)
{
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *a = x->qs + 8 * ib;
        uint32_t w = rd32(a + 4);
        vec g = g8x4(sl_iq2xxs_grid[a[0]], sl_iq2xxs_grid[a[1]], sl_iq2xxs_grid[a[2]], sl_iq2xxs_grid[a[3]]);
        put_k(u, ib, g, w, w >> 7, w >> 14, w >> 21, _mm256_set1_epi16((short)sc21(w >> 28)));
    }
}

INL void unp_iq2_xs(const sl_block_iq2_xs *x, unp_t *u)
{
    for (int ib = 0; ib < 8; ib++) {
        const uint16_t *s = x->qs + 4 * ib;
        vec g = g8x4(sl_iq2xs_grid[s[0] & 511], sl_iq2xs_grid[s[1] & 511], sl_iq2xs_grid[s[2] & 511],
                     sl_iq2xs_grid[s[3] & 511]);
        unsigned c = x->scales[ib];
        put_k(u, ib, g, s[0] >> 9, s[1] >> 9, s[2] >> 9, s[3] >> 9, scales2(sc21(c & 15), sc21(c >> 4)));
    }
}

INL void unp_iq2_s(const sl_block_iq2_s *x, unp_t *u)
{
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *s = x->qs + 4 * ib;
        unsigned h = x->qh[ib];
        vec g = g8x4(sl_iq2s_grid[s[0] | (h & 3) << 8], sl_iq2s_grid[s[1] | ((h >> 2) & 3) << 8],
                     sl_iq2s_grid[s[2] | ((h >> 4) & 3) << 8], sl_iq2s_grid[s[3] | ((h >> 6) & 3) << 8]);
        unsigned c = x->scales[ib];
        put_u(u, ib, g, rd32(x->signs + 4 * ib), scales2(sc21(c & 15), sc21(c >> 4)));
    }
}

INL void unp_iq3_xxs(const sl_block_iq3_xxs *x, unp_t *u)
{
    for (int ib = 0; ib < 8; ib++) {
        uint32_t w = rd32(x->w + 4 * ib);
        vec g = g4x8(sl_iq3xxs_grid, x->qs + 8 * ib, 0);
        put_k(u, ib, g, w, w >> 7, w >> 14, w >> 21, _mm256_set1_epi16((short)sc21(w >> 28)));
    }
}

INL void unp_iq3_s(const sl_block_iq3_s *x, unp_t *u)
{
    for (int ib = 0; ib < 8; ib++) {
        vec g = g4x8(sl_iq3s_grid, x->qs + 8 * ib, x->qh[ib]);
        unsigned c = (x->scales[ib / 2] >> (4 * (ib % 2))) & 15;
        put_u(u, ib, g, rd32(x->signs + 4 * ib), _mm256_set1_epi16((short)sc21(c)));
    }
}

INL void unp_iq1_s(const sl_block_iq1_s *x, unp_t *u)
{
    for (int ib = 0; ib < 8; ib++) {
        unsigned h = x->qh[ib];
        const uint8_t *s = x->qs + 4 * ib;
        vec g = g8x4(sl_iq1s_grid[s[0] | (h & 7) << 8], sl_iq1s_grid[s[1] | ((h >> 3) & 7) << 8],
                     sl_iq1s_grid[s[2] | ((h >> 6) & 7) << 8], sl_iq1s_grid[s[3] | ((h >> 9) & 7) << 8]);
        vec ds = _mm256_set1_epi8(h & 0x8000 ? -1 : 1);
        put_s(u, ib, iq1_w(g, ds), _mm256_set1_epi16((short)sc21((h >> 12) & 7)));
    }
}

INL void unp_iq1_m(const sl_block_iq1_m *x, unp_t *u)
{
    for (int ib = 0; ib < 8; ib++) {
        unsigned a = x->qh[2 * ib], b = x->qh[2 * ib + 1];
        const uint8_t *s = x->qs + 4 * ib;
        vec g = g8x4(sl_iq1s_grid[s[0] | (a & 7) << 8], sl_iq1s_grid[s[1] | ((a >> 4) & 7) << 8],
                     sl_iq1s_grid[s[2] | (b & 7) << 8], sl_iq1s_grid[s[3] | ((b >> 4) & 7) << 8]);
        const long long P = 0x0101010101010101ll, M = -1ll;
        vec ds = _mm256_set_epi64x(b & 0x80 ? M : P, b & 0x08 ? M : P, a & 0x80 ? M : P, a & 0x08 ? M : P);
        unsigned sc = (unsigned)(x->scales[2 * (ib / 2)] | x->scales[2 * (ib / 2) + 1] << 8) >> (6 * (ib % 2));
        put_s(u, ib, iq1_w(g, ds), scales2(sc21(sc & 7), sc21((sc >> 3) & 7)));
    }
}

/* The drivers (dot_iqgrid.h's IQ_GRID_DRIVER) of this scheme, one per type;
 * a level is one translation unit, so the static names need no suffix. */
#define IQ_DOT(T, ID, BT, DBITS, MULT) \
    IQ_GRID_DRIVER(dot_##T, gemm_##T, BT, unp_t, unp_##T, isum_unp, _cvtsh_ss(DBITS), MULT)
#define IQ_SET(T, ID, BT, DBITS, MULT) k->vec_dot[ID] = dot_##T, k->gemm[ID] = gemm_##T;

#define IQ_LEVEL(FILL)                                                                  \
    SL_IQGRID_EACH(IQ_DOT)                                                              \
    void FILL(sl_kern *k) { SL_IQGRID_EACH(IQ_SET) }

#endif
