/* The grid i-quant dots of the avx512 levels, included by
 * dot_iqgrid_avx512.c and dot_iqgrid_avx512vnni.c with their -m flags (VNNI:
 * vpdpwssd for the scale step): 64 elements per step, every type;
 * dot_iqgrid_x86.h's 256-bit scheme stays the avx2 level's.
 *
 * A super-block is unpacked into four steps of 64 unsigned weight bytes g,
 * a 64-bit opmask m (1: negate the activation; vpsubb under the mask, q8 is
 * never -128) and the 2s+1 scale of every word pair (vpmaddubsw then
 * vpmaddwd: |pair| <= 2 * 127 * 127 for the grids, so no saturation):
 * - sign indices (7 bits + parity) become their 32 sign bytes at once (the
 *   parity bit by two nibble vpshufb lookups); stored sign bytes are loaded
 *   as masks directly;
 * - grid rows (<= 16 KiB, L1-resident) are scalar loads put into lanes
 *   (measured 1.3x faster than vpgatherqq on this VM, 1.9x faster than
 *   assembling them on the stack);
 * - iq1: the weight bytes w = 8g + delta8 are signed: g = |w|, m = sign(w).
 * The exact super-block sum then takes the scalar oracle's float steps, so
 * every level equals the scalar result bit for bit (dot_iqgrid.h). */
#ifndef SL_DOT_IQGRID_Z_H
#define SL_DOT_IQGRID_Z_H

#include <immintrin.h>
#include <string.h>

#include "dot_iqgrid.h"

#define ZINL static inline __attribute__((always_inline))
#define ZUNROLL _Pragma("GCC unroll 8")

typedef __m512i v512;
typedef struct { v512 g[4], sc[4]; uint64_t m[4]; } unpz_t;

ZINL uint32_t zrd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
ZINL uint64_t zrd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* 32 sign indices (bytes, 7 bits) -> their sign bytes, stored as the 4 masks */
ZINL void signs_from_idx(__m256i si, unpz_t *u)
{
    const __m256i par = _mm256_broadcastsi128_si256(_mm_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128,
                                                                  -128, 0, 0, -128, 0, -128, -128, 0));
    const __m256i lo4 = _mm256_set1_epi8(15);
    __m256i p = _mm256_xor_si256(_mm256_shuffle_epi8(par, _mm256_and_si256(si, lo4)),
                                 _mm256_shuffle_epi8(par, _mm256_and_si256(_mm256_srli_epi16(si, 4), lo4)));
    _mm256_storeu_si256((__m256i *)u->m, _mm256_or_si256(si, p));
}

/* the 32 sign indices of 8 u32 words w_ib (bits 7l..7l+6, byte 4 ib + l), w in dwords 'pos' of z */
ZINL __m256i sidx_from_words(v512 z, v512 pos_lo, v512 pos_hi)
{
    const v512 sh = _mm512_set_epi32(21, 14, 7, 0, 21, 14, 7, 0, 21, 14, 7, 0, 21, 14, 7, 0);
    const v512 m7 = _mm512_set1_epi32(127);
    v512 a = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(pos_lo, z), sh), m7);
    v512 b = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(pos_hi, z), sh), m7);
    return _mm256_set_m128i(_mm512_cvtepi32_epi8(b), _mm512_cvtepi32_epi8(a));
}

/* word scales of step k from 16 words s16 (2s+1 per 16 elements): word w -> group 4k + w/8 */
ZINL v512 sc_per16(v512 s16, int k)
{
    const v512 w8 = _mm512_srli_epi16(_mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18,
                                                       17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2,
                                                       1, 0), 3);
    return _mm512_permutexvar_epi16(_mm512_add_epi16(w8, _mm512_set1_epi16((short)(4 * k))), s16);
}

/* word scales of step k from 2s+1 per 32 elements in words pos + stride * ib */
ZINL v512 sc_per32(v512 s, int k, int pos, int stride)
{
    short a = (short)(pos + stride * 2 * k), b = (short)(pos + stride * (2 * k + 1));
    return _mm512_permutexvar_epi16(_mm512_set_epi16(b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b,
                                                     a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a), s);
}

/* 16 scale nibbles (8 bytes, low nibble first) -> 2s+1 as 16 words */
ZINL v512 nib16_2s1(const uint8_t *b8)
{
    __m128i b = _mm_cvtsi64_si128((long long)zrd64(b8));
    __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(b, _mm_set1_epi8(15)),
                                    _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(15)));
    nib = _mm_add_epi8(_mm_add_epi8(nib, nib), _mm_set1_epi8(1));
    return _mm512_castsi256_si512(_mm256_cvtepu8_epi16(nib));
}

ZINL v512 g8(const uint64_t *G, unsigned i0, unsigned i1, unsigned i2, unsigned i3, unsigned i4, unsigned i5,
             unsigned i6, unsigned i7)
{
    return _mm512_set_epi64((long long)G[i7], (long long)G[i6], (long long)G[i5], (long long)G[i4],
                            (long long)G[i3], (long long)G[i2], (long long)G[i1], (long long)G[i0]);
}

/* 16 u32 grid rows: index j = q[j] | bit j of h << 8, paired into 64-bit lanes
 * by scalar shifts (cheaper than 16 dword inserts) */
ZINL v512 g16(const uint32_t *G, const uint8_t *q, unsigned h)
{
#define GP(j) (long long)((uint64_t)G[q[j] | ((h >> (j)) & 1) << 8] | (uint64_t)G[q[j + 1] | ((h >> (j + 1)) & 1) << 8] << 32)
    return _mm512_set_epi64(GP(14), GP(12), GP(10), GP(8), GP(6), GP(4), GP(2), GP(0));
#undef GP
}

/* ---- per type ------------------------------------------------------------ */

ZINL void unpz_iq2_xxs(const sl_block_iq2_xxs *x, unpz_t *u)
{
    const v512 z = _mm512_loadu_si512((const void *)x->qs);   /* w_ib = dword 2 ib + 1 */
    signs_from_idx(sidx_from_words(z, _mm512_set_epi32(7, 7, 7, 7, 5, 5, 5, 5, 3, 3, 3, 3, 1, 1, 1, 1),
                                   _mm512_set_epi32(15, 15, 15, 15, 13, 13, 13, 13, 11, 11, 11, 11, 9, 9, 9, 9)),
                   u);
    v512 s = _mm512_srli_epi32(z, 28);
    s = _mm512_add_epi32(_mm512_add_epi32(s, s), _mm512_set1_epi32(1));
    const uint8_t *q = x->qs;
    ZUNROLL
    for (int k = 0; k < 4; k++, q += 16) {
        u->g[k] = g8(sl_iq2xxs_grid, q[0], q[1], q[2], q[3], q[8], q[9], q[10], q[11]);
        u->sc[k] = sc_per32(s, k, 2, 4);
    }
}

ZINL void unpz_iq2_xs(const sl_block_iq2_xs *x, unpz_t *u)
{
    const v512 q = _mm512_loadu_si512((const void *)x->qs);
    signs_from_idx(_mm512_cvtepi16_epi8(_mm512_srli_epi16(q, 9)), u);
    const uint16_t *Q = x->qs;
    const v512 s16 = nib16_2s1(x->scales);
    ZUNROLL
    for (int k = 0; k < 4; k++, Q += 8) {
        u->g[k] = g8(sl_iq2xs_grid, Q[0] & 511, Q[1] & 511, Q[2] & 511, Q[3] & 511, Q[4] & 511, Q[5] & 511,
                     Q[6] & 511, Q[7] & 511);
        u->sc[k] = sc_per16(s16, k);
    }
}

ZINL void unpz_iq2_s(const sl_block_iq2_s *x, unpz_t *u)
{
    memcpy(u->m, x->signs, 32);
    const v512 s16 = nib16_2s1(x->scales);
    ZUNROLL
    for (int k = 0; k < 4; k++) {
        const uint8_t *s = x->qs + 8 * k;
        unsigned h0 = x->qh[2 * k], h1 = x->qh[2 * k + 1];
        u->g[k] = g8(sl_iq2s_grid, s[0] | (h0 & 3) << 8, s[1] | ((h0 >> 2) & 3) << 8, s[2] | ((h0 >> 4) & 3) << 8,
                     s[3] | (h0 >> 6) << 8, s[4] | (h1 & 3) << 8, s[5] | ((h1 >> 2) & 3) << 8,
                     s[6] | ((h1 >> 4) & 3) << 8, s[7] | (h1 >> 6) << 8);
        u->sc[k] = sc_per16(s16, k);
    }
}

ZINL void unpz_iq3_xxs(const sl_block_iq3_xxs *x, unpz_t *u)
{
    const v512 z = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)x->w));   /* w_ib = dword ib */
    signs_from_idx(sidx_from_words(z, _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0),
                                   _mm512_set_epi32(7, 7, 7, 7, 6, 6, 6, 6, 5, 5, 5, 5, 4, 4, 4, 4)),
                   u);
    v512 s = _mm512_srli_epi32(z, 28);
    s = _mm512_add_epi32(_mm512_add_epi32(s, s), _mm512_set1_epi32(1));
    ZUNROLL
    for (int k = 0; k < 4; k++) {
        u->g[k] = g16(sl_iq3xxs_grid, x->qs + 16 * k, 0);
        u->sc[k] = sc_per32(s, k, 0, 2);
    }
}

ZINL void unpz_iq3_s(const sl_block_iq3_s *x, unpz_t *u)
{
    memcpy(u->m, x->signs, 32);
    /* 2s+1 of sub-block ib in byte ib */
    __m128i b = _mm_cvtsi32_si128((int)zrd32(x->scales));
    __m128i nib = _mm_unpacklo_epi8(_mm_and_si128(b, _mm_set1_epi8(15)),
                                    _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(15)));
    nib = _mm_add_epi8(_mm_add_epi8(nib, nib), _mm_set1_epi8(1));
    const v512 s = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(nib));
    ZUNROLL
    for (int k = 0; k < 4; k++) {
        u->g[k] = g16(sl_iq3s_grid, x->qs + 16 * k, x->qh[2 * k] | (unsigned)x->qh[2 * k + 1] << 8);
        u->sc[k] = sc_per32(s, k, 0, 1);
    }
}

/* iq1: w = 8g + delta8 per byte (delta8 = -1 where dneg is set, else +1) -> g = |w|, m = sign(w) */
ZINL void iq1_put(unpz_t *u, int k, v512 g, __mmask64 dneg)
{
    v512 w = _mm512_and_si512(_mm512_slli_epi16(g, 3), _mm512_set1_epi8((char)0xf8));
    w = _mm512_add_epi8(w, _mm512_mask_blend_epi8(dneg, _mm512_set1_epi8(1), _mm512_set1_epi8(-1)));
    u->g[k] = _mm512_abs_epi8(w);
    u->m[k] = _cvtmask64_u64(_mm512_movepi8_mask(w));
}

ZINL void unpz_iq1_s(const sl_block_iq1_s *x, unpz_t *u)
{
    uint16_t s[8];
    for (int ib = 0; ib < 8; ib++) s[ib] = (uint16_t)(2 * ((x->qh[ib] >> 12) & 7) + 1);
    const v512 sv = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)s));
    ZUNROLL
    for (int k = 0; k < 4; k++) {
        unsigned a = x->qh[2 * k], b = x->qh[2 * k + 1];
        const uint8_t *q = x->qs + 8 * k;
        v512 g = g8(sl_iq1s_grid, q[0] | (a & 7) << 8, q[1] | ((a >> 3) & 7) << 8, q[2] | ((a >> 6) & 7) << 8,
                    q[3] | ((a >> 9) & 7) << 8, q[4] | (b & 7) << 8, q[5] | ((b >> 3) & 7) << 8,
                    q[6] | ((b >> 6) & 7) << 8, q[7] | ((b >> 9) & 7) << 8);
        uint64_t dn = (a & 0x8000 ? 0xffffffffull : 0) | (b & 0x8000 ? 0xffffffff00000000ull : 0);
        iq1_put(u, k, g, _cvtu64_mask64(dn));
        u->sc[k] = sc_per32(sv, k, 0, 1);
    }
}

ZINL void unpz_iq1_m(const sl_block_iq1_m *x, unpz_t *u)
{
    /* scale of 16-element group j: bits 3 (j % 4) of u16 word j / 4 */
    const v512 sw = _mm512_castsi128_si512(_mm_loadl_epi64((const __m128i *)x->scales));
    v512 s = _mm512_permutexvar_epi16(_mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                       3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0), sw);
    s = _mm512_and_si512(_mm512_srlv_epi16(s, _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                               9, 6, 3, 0, 9, 6, 3, 0, 9, 6, 3, 0, 9, 6, 3, 0)),
                         _mm512_set1_epi16(7));
    const v512 s16 = _mm512_add_epi16(_mm512_add_epi16(s, s), _mm512_set1_epi16(1));
    /* delta sign of 8-element group j: bit 3 of nibble j of qh */
    uint64_t q0 = zrd64(x->qh), q1 = zrd64(x->qh + 8);
    uint32_t dbits = (uint32_t)_pext_u64(q0, 0x8888888888888888ull) | (uint32_t)_pext_u64(q1, 0x8888888888888888ull) << 16;
    ZUNROLL
    for (int k = 0; k < 4; k++) {
        const uint8_t *q = x->qs + 8 * k, *h = x->qh + 4 * k;
        v512 g = g8(sl_iq1s_grid, q[0] | (h[0] & 7) << 8, q[1] | ((h[0] >> 4) & 7) << 8, q[2] | (h[1] & 7) << 8,
                    q[3] | ((h[1] >> 4) & 7) << 8, q[4] | (h[2] & 7) << 8, q[5] | ((h[2] >> 4) & 7) << 8,
                    q[6] | (h[3] & 7) << 8, q[7] | ((h[3] >> 4) & 7) << 8);
        uint64_t dn = _pdep_u64((dbits >> (8 * k)) & 0xff, 0x0101010101010101ull) * 0xff;
        iq1_put(u, k, g, _cvtu64_mask64(dn));
        u->sc[k] = sc_per16(s16, k);
    }
}

/* ---- the exact sum and the drivers ---------------------------------------- */

/* the integer lanes of a super-block's sum (reduced by the caller) */
ZINL v512 isum_v(const unpz_t *u, const int8_t *q)
{
    v512 a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
    ZUNROLL
    for (int k = 0; k < 4; k += 2) {
        v512 y0 = _mm512_loadu_si512((const void *)(q + 64 * k));
        v512 y1 = _mm512_loadu_si512((const void *)(q + 64 * k + 64));
        y0 = _mm512_mask_sub_epi8(y0, _cvtu64_mask64(u->m[k]), _mm512_setzero_si512(), y0);
        y1 = _mm512_mask_sub_epi8(y1, _cvtu64_mask64(u->m[k + 1]), _mm512_setzero_si512(), y1);
#ifdef __AVX512VNNI__
        a0 = _mm512_dpwssd_epi32(a0, _mm512_maddubs_epi16(u->g[k], y0), u->sc[k]);
        a1 = _mm512_dpwssd_epi32(a1, _mm512_maddubs_epi16(u->g[k + 1], y1), u->sc[k + 1]);
#else
        a0 = _mm512_add_epi32(a0, _mm512_madd_epi16(_mm512_maddubs_epi16(u->g[k], y0), u->sc[k]));
        a1 = _mm512_add_epi32(a1, _mm512_madd_epi16(_mm512_maddubs_epi16(u->g[k + 1], y1), u->sc[k + 1]));
#endif
    }
    return _mm512_add_epi32(a0, a1);
}

ZINL int32_t isum_z(const unpz_t *u, const int8_t *q) { return _mm512_reduce_add_epi32(isum_v(u, q)); }

/* the four lane sums of a0..a3 as one vector (the panel's 4 rows at once) */
ZINL __m128i hsum4(v512 a0, v512 a1, v512 a2, v512 a3)
{
    v512 t0 = _mm512_add_epi32(_mm512_unpacklo_epi32(a0, a1), _mm512_unpackhi_epi32(a0, a1));
    v512 t1 = _mm512_add_epi32(_mm512_unpacklo_epi32(a2, a3), _mm512_unpackhi_epi32(a2, a3));
    v512 t = _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
    __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* vec_dot and gemm tile (a weight block unpacked once for its ny rows): the
 * scalar oracle's per-block terms, summed in double in its order. */
#define ZDOT(T, ID, BT, DBITS, MULT) \
    IQ_GRID_DRIVER(dot_##T##_z, gemm_##T##_z, BT, unpz_t, unpz_##T, isum_z, _cvtsh_ss(DBITS), MULT)
SL_IQGRID_EACH(ZDOT)

/* ---- prefill panel (matmul with >= SL_PANEL_MIN_ACT activation rows) ----
 * Unpacking dominates a grid block's cost, so each weight block is unpacked
 * once per ZP_R rows and dotted with every activation row: the panel holds
 * the activation blocks as [block][act] (one block column of 64 rows is
 * ~19 KB, L1-resident while it is swept); per (row, act) the sum is the same
 * double chain over blocks as vec_dot's, so results equal vec_dot bit for bit. */
#define ZP_R 4

static size_t zp_panel_bytes(int64_t cols, int64_t n_act)
{
    return (size_t)(cols / SL_QKK) * (size_t)n_act * sizeof(sl_block_q8_k);
}

static size_t zp_scratch_bytes(int64_t n_act) { return (size_t)n_act * ZP_R * sizeof(double); }

static void zp_pack(const void *act, size_t arb, int64_t n_act, int64_t nb, void *panel)
{
    sl_block_q8_k *P = panel;
    for (int64_t c = 0; c < n_act; c++) {
        const sl_block_q8_k *y = (const sl_block_q8_k *)((const char *)act + (size_t)c * arb);
        for (int64_t i = 0; i < nb; i++) P[i * n_act + c] = y[i];
    }
}

#define ZPANEL(T, ID, BT, DBITS, MULT)                                                    \
    static void zp_run_##T(const void *W, size_t wrb, int64_t r0, int64_t r1, int64_t cols, \
                           const void *panel, int64_t n_act, float *Y, int64_t ldy, void *scratch) \
    {                                                                                   \
        const sl_block_q8_k *P = panel;                                                 \
        double *sum = scratch;                                                          \
        int64_t nb = cols / SL_QKK;                                                     \
        for (int64_t r = r0; r < r1; r += ZP_R) {                                       \
            int nr = r1 - r < ZP_R ? (int)(r1 - r) : ZP_R;                              \
            memset(sum, 0, (size_t)n_act * ZP_R * sizeof(double));                      \
            for (int64_t i = 0; i < nb; i++) {                                          \
                unpz_t u[ZP_R];                                                         \
                float dx[ZP_R] = { 0 };                                                 \
                for (int j = 0; j < ZP_R; j++) {                                        \
                    if (j >= nr) { memset(&u[j], 0, sizeof u[j]); continue; }           \
                    const BT *x = (const BT *)((const char *)W + (size_t)(r + j) * wrb) + i; \
                    unpz_##T(x, &u[j]);                                                 \
                    dx[j] = _cvtsh_ss(DBITS);                                           \
                }                                                                       \
                /* per lane j: (float)((dx_j * d_y) * MULT * (float)isum), as vec_dot */ \
                const __m128 dx4 = _mm_loadu_ps(dx), mult = _mm_set1_ps(MULT);          \
                const sl_block_q8_k *y = P + i * n_act;                                 \
                for (int64_t c = 0; c < n_act; c++, y++) {                              \
                    __m128i is = hsum4(isum_v(&u[0], y->qs), isum_v(&u[1], y->qs),      \
                                       isum_v(&u[2], y->qs), isum_v(&u[3], y->qs));     \
                    __m128 dd = _mm_mul_ps(_mm_mul_ps(dx4, _mm_set1_ps(y->d)), mult);   \
                    __m128 t = _mm_mul_ps(dd, _mm_cvtepi32_ps(is));                     \
                    double *sc = sum + c * ZP_R;                                        \
                    _mm256_storeu_pd(sc, _mm256_add_pd(_mm256_loadu_pd(sc), _mm256_cvtps_pd(t))); \
                }                                                                       \
            }                                                                           \
            for (int64_t c = 0; c < n_act; c++)                                         \
                for (int j = 0; j < nr; j++) Y[c * ldy + r + j] = (float)sum[c * ZP_R + j]; \
        }                                                                               \
    }                                                                                   \
    static const sl_panel zp_##T = { zp_panel_bytes, zp_scratch_bytes, zp_pack, zp_run_##T, SL_QKK, 0, 0 };

SL_IQGRID_EACH(ZPANEL)

#define ZSET(T, ID, BT, DBITS, MULT) k->vec_dot[ID] = dot_##T##_z, k->gemm[ID] = gemm_##T##_z, k->panel[ID] = &zp_##T;
#define IQZ_FILL(FILL) \
    void FILL(sl_kern *k) { SL_IQGRID_EACH(ZSET) }

#endif
