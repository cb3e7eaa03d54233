/* x86 dots of the grid i-quants with Q8_K (the scheme of dot_iqgrid.h),
 * included by dot_iqgrid_avx2.c with its -m flags. Per 32 elements (a group):
 * the 4 grid rows are 64-bit loads put into one vector of unsigned weight
 * bytes, the signs are moved onto the activations (vpsignb), vpmaddubsw forms
 * the products and vpmaddwd adds pairs times the group scale 2s+1. What a
 * block shares is decoded once per block, in vectors, before its groups:
 * - the 32 sign bytes (7-bit indices + parity by two nibble vpshufb lookups,
 *   or the stored bytes), then per group one 32-bit broadcast load, a vpshufb
 *   that spreads byte l over sub-group l and a bit test -> 0xff / 0x01;
 * - the 2s+1 scales as words, then per group one vpshufb (per 16 elements:
 *   the low lane's word and the high lane's differ);
 * - iq1: the weight bytes w = 8g + delta8 are signed, so |w| times
 *   sign(q8, w), with the per-sub-group delta spread like the signs.
 * The matvec sums a block's groups straight into two accumulators (nothing
 * leaves the registers); the gemm tile stores the unpacked block once for
 * its activation rows. The exact integer sum of a super-block is reduced
 * once and scaled like the scalar oracle's term, and the terms are added in
 * double in the same order, so every level equals the scalar result bit for
 * bit. */
#ifndef SL_DOT_IQGRID_X86_H
#define SL_DOT_IQGRID_X86_H

#include <immintrin.h>
#include <string.h>

#include "dot_iqgrid.h"

#define INL static inline __attribute__((always_inline))
#define UNROLL8 _Pragma("GCC unroll 8")

INL uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
INL uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

typedef __m256i vec;

INL int32_t hsum_i32(vec v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* What a block's groups share: the sign (iq1: delta) bytes, group k's four
 * at sp + 4 pos(k), and the 2s+1 words (word w of each lane: see scale_w). */
typedef struct {
    const uint8_t *sp;
    vec sc;
    _Alignas(32) uint8_t sbuf[32];
} pre_t;

/* the order shuffle_ps / packus leave 8 per-group dwords of two 32-byte
 * halves in: dword i holds group P(i), P = 0 1 4 5 2 3 6 7 (an involution) */
INL int pos_split(int k) { return (k == 2 || k == 3) ? k + 2 : (k == 4 || k == 5) ? k - 2 : k; }
INL int pos_id(int k) { return k; }

/* 4 bytes b0..b3 -> 32 bytes, byte i = b(i / 8) */
INL vec spread4(const uint8_t *p)
{
    const vec rep = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                     2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    return _mm256_shuffle_epi8(_mm256_set1_epi32((int)rd32(p)), rep);
}

/* the vpsignb operand of 4 sign bytes: byte i = 0xff if bit i % 8 of b(i / 8), else 0x01 */
INL vec sign_op(const uint8_t *p)
{
    const vec bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    vec v = spread4(p);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
    return _mm256_or_si256(v, _mm256_set1_epi8(1));
}

/* bytes of 7-bit sign indices -> their sign bytes (parity in bit 7) */
INL vec sign_bytes(vec idx)
{
    const vec par = _mm256_broadcastsi128_si256(_mm_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128,
                                                              -128, 0, 0, -128, 0, -128, -128, 0));
    const vec lo4 = _mm256_set1_epi8(15);
    vec p = _mm256_xor_si256(_mm256_shuffle_epi8(par, _mm256_and_si256(idx, lo4)),
                             _mm256_shuffle_epi8(par, _mm256_and_si256(_mm256_srli_epi16(idx, 4), lo4)));
    return _mm256_or_si256(idx, p);
}

/* per dword w: the four 7-bit fields (bits 7l..7l+6) as bytes l */
INL vec idx7x4(vec w)
{
    const vec m = _mm256_set1_epi32(0x7f);
    vec a = _mm256_and_si256(w, m);
    a = _mm256_or_si256(a, _mm256_and_si256(_mm256_slli_epi32(w, 1), _mm256_slli_epi32(m, 8)));
    a = _mm256_or_si256(a, _mm256_and_si256(_mm256_slli_epi32(w, 2), _mm256_slli_epi32(m, 16)));
    return _mm256_or_si256(a, _mm256_and_si256(_mm256_slli_epi32(w, 3), _mm256_slli_epi32(m, 24)));
}

/* 8 dwords s (a 4-bit scale each, group P(i) or i) -> 2s+1 words, the 8 in both lanes */
INL vec sc_words32(vec s)
{
    s = _mm256_add_epi32(_mm256_add_epi32(s, s), _mm256_set1_epi32(1));
    return _mm256_permute4x64_epi64(_mm256_packs_epi32(s, s), 0x88);
}

/* 8 scale bytes, nibbles (lo: elements 0..15 of group k, hi: 16..31) -> 2s+1
 * words: low lane word k = lo(k), high lane word k = hi(k) */
INL vec sc_nib16(const uint8_t *b8)
{
    __m128i b = _mm_loadl_epi64((const __m128i *)b8);
    vec v = _mm256_set_m128i(_mm_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(15))),
                             _mm_cvtepu8_epi16(_mm_and_si128(b, _mm_set1_epi8(15))));
    return _mm256_add_epi16(_mm256_add_epi16(v, v), _mm256_set1_epi16(1));
}

/* word w of each lane repeated over the lane */
INL vec scale_w(vec sc, int w)
{
    const char a = (char)(2 * w), b = (char)(2 * w + 1);
    return _mm256_shuffle_epi8(sc, _mm256_setr_epi8(a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b,
                                                    a, b, a, b, a, b, a, b, a, b, a, b, a, b, a, b));
}

INL vec g8x4(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    return _mm256_set_epi64x((long long)d, (long long)c, (long long)b, (long long)a);
}

/* two u32 grid rows as one u64 */
INL uint64_t g2(const uint32_t *grid, unsigned i0, unsigned i1) { return grid[i0] | (uint64_t)grid[i1] << 32; }

/* iq1: 8 g + delta8 (g, delta8 in -1..1): |w| and sign(w) */
INL void iq1_w(vec g, vec ds, vec *a, vec *s)
{
    vec w = _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16(g, 3), _mm256_set1_epi8((char)0xf8)), ds);
    *a = _mm256_sign_epi8(w, w);
    *s = w;
}

/* delta8 = +-1 bytes of the 32 nibbles' bit 3 (nibble bytes in n) */
INL vec delta_bytes(vec n)
{
    const vec b3 = _mm256_set1_epi8(8);
    return _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(n, b3), b3), _mm256_set1_epi8(1));
}

/* ---- per type: prep (once per block) and group k's (g, sign operand, scale) ---- */

INL void pre_iq2_xxs(const sl_block_iq2_xxs *x, pre_t *p)
{
    vec v0 = _mm256_loadu_si256((const __m256i *)x->qs), v1 = _mm256_loadu_si256((const __m256i *)(x->qs + 32));
    vec w = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(v0), _mm256_castsi256_ps(v1), 0xdd));
    _mm256_store_si256((__m256i *)p->sbuf, sign_bytes(idx7x4(w)));
    p->sp = p->sbuf;
    p->sc = sc_words32(_mm256_srli_epi32(w, 28));
}
INL void grp_iq2_xxs(const sl_block_iq2_xxs *x, const pre_t *p, int k, vec *g, vec *s, vec *sc)
{
    const uint8_t *a = x->qs + 8 * k;
    *g = g8x4(sl_iq2xxs_grid[a[0]], sl_iq2xxs_grid[a[1]], sl_iq2xxs_grid[a[2]], sl_iq2xxs_grid[a[3]]);
    *s = sign_op(p->sp + 4 * pos_split(k));
    *sc = scale_w(p->sc, pos_split(k));
}

INL void pre_iq2_xs(const sl_block_iq2_xs *x, pre_t *p)
{
    vec v0 = _mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)x->qs), 9);
    vec v1 = _mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)(x->qs + 16)), 9);
    _mm256_store_si256((__m256i *)p->sbuf, sign_bytes(_mm256_packus_epi16(v0, v1)));
    p->sp = p->sbuf;
    p->sc = sc_nib16(x->scales);
}
INL void grp_iq2_xs(const sl_block_iq2_xs *x, const pre_t *p, int k, vec *g, vec *s, vec *sc)
{
    const uint16_t *q = x->qs + 4 * k;
    *g = g8x4(sl_iq2xs_grid[q[0] & 511], sl_iq2xs_grid[q[1] & 511], sl_iq2xs_grid[q[2] & 511],
              sl_iq2xs_grid[q[3] & 511]);
    *s = sign_op(p->sp + 4 * pos_split(k));
    *sc = scale_w(p->sc, k);
}

INL void pre_iq2_s(const sl_block_iq2_s *x, pre_t *p)
{
    p->sp = x->signs;
    p->sc = sc_nib16(x->scales);
}
INL void grp_iq2_s(const sl_block_iq2_s *x, const pre_t *p, int k, vec *g, vec *s, vec *sc)
{
    const uint8_t *q = x->qs + 4 * k;
    unsigned h = x->qh[k];
    *g = g8x4(sl_iq2s_grid[q[0] | (h & 3) << 8], sl_iq2s_grid[q[1] | ((h >> 2) & 3) << 8],
              sl_iq2s_grid[q[2] | ((h >> 4) & 3) << 8], sl_iq2s_grid[q[3] | ((h >> 6) & 3) << 8]);
    *s = sign_op(p->sp + 4 * k);
    *sc = scale_w(p->sc, k);
}

INL void pre_iq3_xxs(const sl_block_iq3_xxs *x, pre_t *p)
{
    vec w = _mm256_loadu_si256((const __m256i *)x->w);
    _mm256_store_si256((__m256i *)p->sbuf, sign_bytes(idx7x4(w)));
    p->sp = p->sbuf;
    p->sc = sc_words32(_mm256_srli_epi32(w, 28));
}
INL void grp_iq3_xxs(const sl_block_iq3_xxs *x, const pre_t *p, int k, vec *g, vec *s, vec *sc)
{
    const uint8_t *q = x->qs + 8 * k;
    const uint32_t *G = sl_iq3xxs_grid;
    *g = g8x4(g2(G, q[0], q[1]), g2(G, q[2], q[3]), g2(G, q[4], q[5]), g2(G, q[6], q[7]));
    *s = sign_op(p->sp + 4 * k);
    *sc = scale_w(p->sc, k);
}

INL void pre_iq3_s(const sl_block_iq3_s *x, pre_t *p)
{
    __m128i b = _mm_cvtsi32_si128((int)rd32(x->scales));
    __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(b, _mm_set1_epi8(15)),
                                    _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(15)));
    vec v = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(nib));
    p->sp = x->signs;
    p->sc = _mm256_add_epi16(_mm256_add_epi16(v, v), _mm256_set1_epi16(1));
}
INL void grp_iq3_s(const sl_block_iq3_s *x, const pre_t *p, int k, vec *g, vec *s, vec *sc)
{
    const uint8_t *q = x->qs + 8 * k;
    const uint32_t *G = sl_iq3s_grid;
    unsigned h = (unsigned)x->qh[k] << 8;
#define I3(j) (q[j] | ((h >> (j)) & 256))
    *g = g8x4(g2(G, I3(0), I3(1)), g2(G, I3(2), I3(3)), g2(G, I3(4), I3(5)), g2(G, I3(6), I3(7)));
#undef I3
    *s = sign_op(p->sp + 4 * k);
    *sc = scale_w(p->sc, k);
}

INL void pre_iq1_s(const sl_block_iq1_s *x, pre_t *p)
{
    __m128i h = _mm_loadu_si128((const __m128i *)x->qh);
    __m128i s = _mm_and_si128(_mm_srli_epi16(h, 12), _mm_set1_epi16(7));
    vec v = _mm256_broadcastsi128_si256(s);
    p->sc = _mm256_add_epi16(_mm256_add_epi16(v, v), _mm256_set1_epi16(1));
    /* delta of group k: bit 15 of qh[k] -> the high byte of word k, as 4 bytes at 4k */
    __m128i d = _mm_srli_epi16(h, 12);   /* bit 3 = the delta bit */
    d = _mm_shuffle_epi8(d, _mm_setr_epi8(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6));
    __m128i d2 = _mm_shuffle_epi8(_mm_srli_epi16(h, 12), _mm_setr_epi8(8, 8, 8, 8, 10, 10, 10, 10, 12, 12, 12,
                                                                        12, 14, 14, 14, 14));
    _mm256_store_si256((__m256i *)p->sbuf, delta_bytes(_mm256_set_m128i(d2, d)));
    p->sp = p->sbuf;
}
INL void grp_iq1_s(const sl_block_iq1_s *x, const pre_t *p, int k, vec *g, vec *s, vec *sc)
{
    unsigned h = x->qh[k];
    const uint8_t *q = x->qs + 4 * k;
    vec w = g8x4(sl_iq1s_grid[q[0] | (h & 7) << 8], sl_iq1s_grid[q[1] | ((h >> 3) & 7) << 8],
                 sl_iq1s_grid[q[2] | ((h >> 6) & 7) << 8], sl_iq1s_grid[q[3] | ((h >> 9) & 7) << 8]);
    iq1_w(w, spread4(p->sp + 4 * k), g, s);
    *sc = scale_w(p->sc, k);
}

INL void pre_iq1_m(const sl_block_iq1_m *x, pre_t *p)
{
    /* scales: u16 j holds groups 2j, 2j+1 as 4 x 3 bits (lo16, hi16, lo16, hi16) */
    __m128i s4 = _mm_loadl_epi64((const __m128i *)x->scales);
    vec gs = _mm256_cvtepu16_epi32(_mm_unpacklo_epi16(s4, s4));
    gs = _mm256_srlv_epi32(gs, _mm256_setr_epi32(0, 6, 0, 6, 0, 6, 0, 6));
    vec lo = _mm256_and_si256(gs, _mm256_set1_epi32(7)), hi = _mm256_and_si256(_mm256_srli_epi32(gs, 3),
                                                                            _mm256_set1_epi32(7));
    vec v = _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xd8);
    p->sc = _mm256_add_epi16(_mm256_add_epi16(v, v), _mm256_set1_epi16(1));
    /* deltas: one per 8 elements, bit 3 of nibble l of group k's two qh bytes */
    __m128i qh = _mm_loadu_si128((const __m128i *)x->qh);
    __m128i lo4 = _mm_and_si128(qh, _mm_set1_epi8(15)), hi4 = _mm_and_si128(_mm_srli_epi16(qh, 4), _mm_set1_epi8(15));
    _mm256_store_si256((__m256i *)p->sbuf,
                       delta_bytes(_mm256_set_m128i(_mm_unpackhi_epi8(lo4, hi4), _mm_unpacklo_epi8(lo4, hi4))));
    p->sp = p->sbuf;
}
INL void grp_iq1_m(const sl_block_iq1_m *x, const pre_t *p, int k, vec *g, vec *s, vec *sc)
{
    unsigned a = x->qh[2 * k], b = x->qh[2 * k + 1];
    const uint8_t *q = x->qs + 4 * k;
    vec w = g8x4(sl_iq1s_grid[q[0] | (a & 7) << 8], sl_iq1s_grid[q[1] | ((a >> 4) & 7) << 8],
                 sl_iq1s_grid[q[2] | (b & 7) << 8], sl_iq1s_grid[q[3] | ((b >> 4) & 7) << 8]);
    iq1_w(w, spread4(p->sp + 4 * k), g, s);
    *sc = scale_w(p->sc, k);
}

/* ---- the block sums ------------------------------------------------------- */

INL vec gdot(vec g, vec s, vec sc, const int8_t *q)
{
    vec y = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)q), s);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(g, y), sc);
}

/* A super-block unpacked once (the gemm tile): per group the unsigned
 * weight bytes, the vpsignb operand for the activations and the scale words. */
typedef struct { vec g[8]; vec s[8]; vec sc[8]; } unp_t;

INL int32_t isum_unp(const unp_t *u, const int8_t *q)
{
    vec a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
    UNROLL8
    for (int k = 0; k < 8; k += 2) {
        a0 = _mm256_add_epi32(a0, gdot(u->g[k], u->s[k], u->sc[k], q + 32 * k));
        a1 = _mm256_add_epi32(a1, gdot(u->g[k + 1], u->s[k + 1], u->sc[k + 1], q + 32 * k + 32));
    }
    return hsum_i32(_mm256_add_epi32(a0, a1));
}

/* per type T: unp_T (the gemm's unpack) and xsum_T (the matvec's fused sum) */
#define IQ_SUMS(T, ID, BT, DBITS, MULT)                                                 \
    INL void unp_##T(const BT *x, unp_t *u)                                             \
    {                                                                                   \
        pre_t p;                                                                        \
        pre_##T(x, &p);                                                                 \
        UNROLL8                                                                         \
        for (int k = 0; k < 8; k++) grp_##T(x, &p, k, &u->g[k], &u->s[k], &u->sc[k]);  \
    }                                                                                   \
    INL int32_t xsum_##T(const BT *x, const int8_t *q)                                  \
    {                                                                                   \
        pre_t p;                                                                        \
        pre_##T(x, &p);                                                                 \
        vec a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();                  \
        UNROLL8                                                                         \
        for (int k = 0; k < 8; k += 2) {                                                \
            vec g, s, sc;                                                               \
            grp_##T(x, &p, k, &g, &s, &sc);                                             \
            a0 = _mm256_add_epi32(a0, gdot(g, s, sc, q + 32 * k));                      \
            grp_##T(x, &p, k + 1, &g, &s, &sc);                                         \
            a1 = _mm256_add_epi32(a1, gdot(g, s, sc, q + 32 * k + 32));                 \
        }                                                                               \
        return hsum_i32(_mm256_add_epi32(a0, a1));                                      \
    }
SL_IQGRID_EACH(IQ_SUMS)

/* The drivers (dot_iqgrid.h) of this scheme, one per type; a level is one
 * translation unit, so the static names need no suffix. */
#define IQ_DOT(T, ID, BT, DBITS, MULT)                                                  \
    IQ_GRID_DOT(dot_##T, BT, xsum_##T, _cvtsh_ss(DBITS), MULT)                          \
    IQ_GRID_GEMM(gemm_##T, BT, unp_t, unp_##T, isum_unp, _cvtsh_ss(DBITS), MULT)
#define IQ_SET(T, ID, BT, DBITS, MULT) k->vec_dot[ID] = dot_##T, k->gemm[ID] = gemm_##T;

#define IQ_LEVEL(FILL)                                                                  \
    SL_IQGRID_EACH(IQ_DOT)                                                              \
    void FILL(sl_kern *k) { SL_IQGRID_EACH(IQ_SET) }

#endif
