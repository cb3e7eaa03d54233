/* The x86 dot scheme shared by every x86 level: helpers, the block kernels
 * that are the same with and without VNNI (q5_K, the legacy types, the
 * common part of the q4_K / q6_K unpacks), the float-type dots, and DEF_DOT,
 * the driver that turns a type's block kernels into its vec_dot and gemm
 * tile. Included by dot_x86_madd.h (avx2, avx512: vpmaddubsw + vpmaddwd)
 * and dot_x86_vnni.h (avx512vnni: vpdpbusd / vpdpwssd), which define the
 * integer products madd_scaled() and dot_u8s8() first and the q4_K, q6_K,
 * q2_K, q3_K kernels after; the level files (dot_avx2.c, dot_avx512.c,
 * dot_avx512vnni.c) expand the type lists (kern_internal.h) in one
 * X86_LEVEL(...), which names each instance dot_q4_k_avx2, gemm_q4_k_avx2, ...
 * Scheme (every type): exact integer sums per 32-byte chunk in 8 int32 lanes,
 * scaled in the integer domain by the sub-block scales (madd / dpwssd with an
 * i16 scale vector), converted once per block and accumulated in float lanes
 * with one FMA by d_x*d_y; min / offset terms go through the activation's
 * block sums into a second float accumulator. No horizontal sum per block.
 * A gemm tile runs nx weight rows x ny activation rows block by block, so
 * one block of each weight row is loaded from memory once per tile; each
 * pair uses the same instruction sequence as vec_dot (bit-identical). */
#ifndef SL_DOT_X86_H
#define SL_DOT_X86_H

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "kern_internal.h"

#define UNROLL _Pragma("GCC unroll 16")
/* Block kernels must inline into the loops: a call passes the unpacked
 * block (up to ~22 vectors) through memory; gcc's size heuristic declined to
 * inline unp_q4_k once, halving q4_K decode. */
#define INL static inline __attribute__((always_inline))

static inline float hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float f16s(sl_f16 h) { return _cvtsh_ss(h); }

static inline __m256i loadu(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* signed x signed via |x| and sign(y, x) */
static inline __m256i dot_s8s8(__m256i acc, __m256i x, __m256i y)
{
    return dot_u8s8(acc, _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

/* w16 holds 16 words; returns w[2k] in all words of the low 128 bits and
 * w[2k+1] in the high 128 bits (scales of two 16-element sub-blocks). */
static inline __m256i pair_bcast(__m256i w16, int k)
{
    __m256i p = _mm256_permutevar8x32_epi32(w16, _mm256_set1_epi32(k));
    return _mm256_shuffle_epi8(p, _mm256_set_m128i(_mm_set1_epi16(0x0302), _mm_set1_epi16(0x0100)));
}

typedef struct { __m256 a, b; float s; } acc_t;
/* Plain reduction: lanes of a, minus lanes of b, plus the scalar s. */
#define DEF_RED(T) static inline float red_##T(const acc_t *a) { return hsum8(a->a) - hsum8(a->b) + a->s; }

/* Factors for fin_dmin's lane layout: d in lanes 0,1 and -dmin in 2,3 of each half. */
static inline __m256 dmin_vec(float d, float dmin)
{
    return _mm256_set_ps(-dmin, -dmin, d, d, -dmin, -dmin, d, d);
}

/* dmin_vec from a block's adjacent f16 pair (d, dmin): one convert of the
 * broadcast pair, a lane permute and a sign flip instead of two scalar
 * converts and a vector build; the same values bit for bit. */
static inline __m256 dmin_vec_h(const sl_f16 *dd)
{
    uint32_t w;
    memcpy(&w, dd, 4);
    __m256 t = _mm256_cvtph_ps(_mm_set1_epi32((int)w));         /* d, dmin, d, dmin, ... */
    return _mm256_xor_ps(_mm256_permute_ps(t, 0x50), _mm256_set_ps(-0.0f, -0.0f, 0, 0, -0.0f, -0.0f, 0, 0));
}

/* acc += d_y * (d * isum - dmin * msum) with one convert and one FMA: both
 * integer vectors are folded into one (isum pairs | msum pairs per 128-bit
 * half). A folded lane covers 64 elements: below 2^24, so converted exactly,
 * for q2_K..q4_K; q6_K can exceed it only with near-extreme scales and
 * activations, costing one rounding inside the magnitude bound the tests use. */
static inline void fin_dmin(__m256i isum, __m256i msum, __m256 dv, float yd, acc_t *acc)
{
    __m256i v = _mm256_add_epi32(_mm256_unpacklo_epi64(isum, msum), _mm256_unpackhi_epi64(isum, msum));
    acc->a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_mul_ps(dv, _mm256_set1_ps(yd)), acc->a);
}

/* ---- block kernels: one block of x with one block of y ---------------- */

#ifndef SL_X86_KQ_Z   /* the 512-bit level has its own q4_K / q6_K unpacks (dot_x86_vnni.h) */
/* Split kernels: unp_T() does the x-only work once per weight block,
 * pair_T() the per-activation-row work (two independent integer chains);
 * the q4_K / q6_K pairs are the variant headers'. */
typedef struct { __m256i q[8], sc[8], sc2[4], m16; __m256 dv; } u_q4_k;

/* Everything but the VNNI word-pair scales; returns the 8 scales as words, twice. */
INL __m256i unp_q4_k_base(const sl_block_q4_k *x, u_q4_k *u)
{
    uint32_t sc[2], mn[2];
    sl_q4k_scales8(x->scales, sc, mn);
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m128i s8 = _mm_cvtsi64_si128((long long)(((uint64_t)sc[1] << 32) | sc[0]));
    __m128i s16 = _mm_cvtepu8_epi16(s8);
    UNROLL
    for (int p = 0; p < 4; p++) {
        __m256i q = loadu(x->qs + 32 * p);
        u->q[2 * p] = _mm256_and_si256(q, m4);
        u->q[2 * p + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    }
    /* broadcast scale j to all 16 words: permute words across the vector */
    __m256i s16x2 = _mm256_broadcastsi128_si256(s16);
    UNROLL
    for (int j = 0; j < 8; j++)
        u->sc[j] = _mm256_shuffle_epi8(s16x2, _mm256_set1_epi16((short)(0x0100 * (2 * j + 1) + 2 * j)));
    __m128i m8 = _mm_cvtsi64_si128((long long)(((uint64_t)mn[1] << 32) | mn[0]));
    u->m16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
    u->dv = dmin_vec_h(&x->d);
    return s16x2;
}

#endif

INL void blk_q5_k(const sl_block_q5_k *x, const sl_block_q8_k *y, acc_t *acc)
{
    uint32_t sc[2], mn[2];
    sl_q4k_scales8(x->scales, sc, mn);
    const uint8_t *s8 = (const uint8_t *)sc;
    const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    __m256i hb = loadu(x->qh);
    __m256i isum = _mm256_setzero_si256();
    UNROLL
    for (int p = 0; p < 4; p++) {
        __m256i q = loadu(x->qs + 32 * p);
        __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * p), one), 4);
        __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * p + 1), one), 4);
        __m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4), h0);
        __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), h1);
        isum = madd_scaled(isum, lo, loadu(y->qs + 64 * p), _mm256_set1_epi16(s8[2 * p]));
        isum = madd_scaled(isum, hi, loadu(y->qs + 64 * p + 32), _mm256_set1_epi16(s8[2 * p + 1]));
    }
    __m128i m8 = _mm_cvtsi64_si128((long long)(((uint64_t)mn[1] << 32) | mn[0]));
    __m256i m16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
    __m256i msum = _mm256_madd_epi16(loadu(y->bsums), m16);
    float dd = f16s(x->d) * y->d, dm = f16s(x->dmin) * y->d;
    acc->a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(dd), acc->a);
    acc->b = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(dm), acc->b);
}

#ifndef SL_X86_KQ_Z
/* q6_K: q + 32 (0..63) times y; 32 * sum(sc * bsums) goes to acc->b. */
typedef struct { __m256i q[8], sc[8], sc2[4], sc16; __m256 dv; } u_q6_k;

/* Everything but the VNNI word-pair scales. */
INL void unp_q6_k_base(const sl_block_q6_k *x, u_q6_k *u)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f), m3 = _mm256_set1_epi8(3);
    UNROLL
    for (int h = 0; h < 2; h++) {
        const uint8_t *L = x->ql + 64 * h;
        __m256i l0 = loadu(L), l1 = loadu(L + 32), H = loadu(x->qh + 32 * h);
        __m256i *q = u->q + 4 * h;
        q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(H, m3), 4));
        q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 2), m3), 4));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 4), m3), 4));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 6), m3), 4));
    }
    u->sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x->scales));
    UNROLL
    for (int k = 0; k < 8; k++) u->sc[k] = pair_bcast(u->sc16, k);
    float d = f16s(x->d);
    u->dv = dmin_vec(d, 32.0f * d);
}

#endif

/* q3_K: q + 4 (0..7) x y scaled by the signed 6-bit scales; 4 * sum(sc * bsums) to b. */
INL __m128i q3k_scales8(const sl_block_q3_k *x)
{
    /* 64-bit SWAR: bytes 0-7 = scales 0-7 take the low nibbles of a0 | a1,
     * bytes 8-15 the high nibbles; t = a2 | a2 << 30 puts the 2-bit fields of
     * a2 for scales 4-7 (bits 2-3) and 12-15 (bits 6-7) under bytes 4-7. */
    uint64_t lo, a2 = 0;
    memcpy(&lo, x->scales, 8);
    memcpy(&a2, x->scales + 8, 4);
    const uint64_t m4 = 0x0f0f0f0f0f0f0f0fULL, m45 = 0x3030303030303030ULL;
    uint64_t t = a2 | (a2 << 30);
    uint64_t w0 = (lo & m4) | ((t << 4) & m45), w1 = ((lo >> 4) & m4) | (t & m45);
    /* from GPRs: a 128-bit load of values just stored would stall store forwarding */
    return _mm_sub_epi8(_mm_set_epi64x((long long)w1, (long long)w0), _mm_set1_epi8(32));
}

/* ---- legacy 32-element blocks ------------------------------------------- */

/* 16 bytes -> their low nibbles | their high nibbles: the bytes in both
 * halves from one broadcast load, the high half shifted by 4 in its dwords
 * (bits from the next byte land in the high nibble, which the and drops). */
static inline __m256i nibbles32(const uint8_t *qs)
{
    __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    v = _mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0f));
}

/* 0x10 in byte j where bit j of the 32-bit qh is set */
static inline __m256i bit4_32(const uint8_t *qh)
{
    uint32_t b;
    memcpy(&b, qh, 4);
    __m256i v = _mm256_set1_epi32((int)b);
    v = _mm256_shuffle_epi8(v, _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL,
                                                 0x0101010101010101LL, 0x0000000000000000LL));
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bits), bits);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

static inline void fin_legacy(__m256i isum, float d, acc_t *acc)
{
    acc->a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d), acc->a);
}

INL void blk_q4_0(const sl_block_q4_0 *x, const sl_block_q8_0 *y, acc_t *acc)
{
    __m256i q = _mm256_sub_epi8(nibbles32(x->qs), _mm256_set1_epi8(8));
    fin_legacy(dot_s8s8(_mm256_setzero_si256(), q, loadu(y->qs)), f16s(x->d) * f16s(y->d), acc);
}

INL void blk_q4_1(const sl_block_q4_1 *x, const sl_block_q8_1 *y, acc_t *acc)
{
    fin_legacy(dot_u8s8(_mm256_setzero_si256(), nibbles32(x->qs), loadu(y->qs)),
               f16s(x->d) * f16s(y->d), acc);
    acc->s += f16s(x->m) * f16s(y->s);
}

INL void blk_q5_0(const sl_block_q5_0 *x, const sl_block_q8_0 *y, acc_t *acc)
{
    __m256i q = _mm256_sub_epi8(_mm256_or_si256(nibbles32(x->qs), bit4_32(x->qh)), _mm256_set1_epi8(16));
    fin_legacy(dot_s8s8(_mm256_setzero_si256(), q, loadu(y->qs)), f16s(x->d) * f16s(y->d), acc);
}

INL void blk_q5_1(const sl_block_q5_1 *x, const sl_block_q8_1 *y, acc_t *acc)
{
    __m256i q = _mm256_or_si256(nibbles32(x->qs), bit4_32(x->qh));
    fin_legacy(dot_u8s8(_mm256_setzero_si256(), q, loadu(y->qs)), f16s(x->d) * f16s(y->d), acc);
    acc->s += f16s(x->m) * f16s(y->s);
}

INL void blk_q8_0(const sl_block_q8_0 *x, const sl_block_q8_0 *y, acc_t *acc)
{
    fin_legacy(dot_s8s8(_mm256_setzero_si256(), loadu(x->qs), loadu(y->qs)),
               f16s(x->d) * f16s(y->d), acc);
}

/* ---- eight 32-element blocks per step (codebook types with Q8_0) --------
 * A block's products are one integer vector; per block only its convert and
 * one FMA remain in float: the eight d_x d_y come from one f16 convert per
 * side and one multiply, stored, and each block's FMA takes its factor by a
 * broadcast load (a load port, not a vector ALU: the vector pipes are what
 * these kernels are short of), where a block at a time spends two scalar
 * converts, a multiply and a register broadcast. Even and odd blocks go to
 * the two accumulators (the odd ones negated, the reduction subtracts b).
 * The eight scales of a side are gathered by overlapping unaligned loads
 * merged with blends, not an element insert each (two uops apiece): lane
 * X86_POS8(j) holds block j, i.e. the lanes are blocks 0, 2, 4, 6, 1, 3, 5, 7,
 * the order in which a 32-byte load brings two 17-byte blocks' exponents. */
#define X86_POS8(j) ((((j) >> 1) | ((j) & 1) << 2))

/* The f16 at offset 0 of eight structs of st bytes (14 or more) from p, in
 * lane order X86_POS8: the 16-byte load at p + j st - 2 X86_POS8(j) has block
 * j's in word X86_POS8(j), and every such load stays inside the eight. */
INL __m256 f16x8s(const char *p, size_t st)
{
#define F16_AT(j) _mm_loadu_si128((const __m128i *)(p + (j) * st - 2 * X86_POS8(j)))
#define F16_IN(v, j) _mm_blend_epi16(v, F16_AT(j), 1 << X86_POS8(j))
    __m128i v = F16_AT(0);
    v = F16_IN(F16_IN(F16_IN(v, 1), 2), 3);
    v = F16_IN(F16_IN(F16_IN(F16_IN(v, 4), 5), 6), 7);
#undef F16_IN
#undef F16_AT
    return _mm256_cvtph_ps(v);
}

/* The f16 d (first field) of the eight blocks x[0..7] as f32, order X86_POS8 */
#define X86_D8(x) f16x8s((const char *)(x), sizeof *(x))
_Static_assert(offsetof(sl_block_q8_0, d) == 0 && offsetof(sl_block_iq4_nl, d) == 0, "X86_D8 reads d at 0");

/* sl_e8m0_half of eight MXFP4 exponents in lane order X86_POS8:
 * (e - 1) << 23 for e >= 2, else 0x00200000 << e. Four 32-byte loads 30 bytes
 * apart put block 2k's exponent at byte 4k of the low half and block 2k+1's
 * at byte 4k+1 of the high half; blends keep dword k of load k, one vpshufb
 * lifts the eight bytes out (all 8 blocks' 136 bytes cover the loads). */
INL __m256 e8m0x8(const sl_block_mxfp4 *x)
{
    _Static_assert(sizeof *x == 17 && offsetof(sl_block_mxfp4, e) == 0, "mxfp4 block layout");
    const char *p = (const char *)x;
    __m256i v = _mm256_blend_epi32(loadu(p), loadu(p + 30), 0x22);
    v = _mm256_blend_epi32(_mm256_blend_epi32(v, loadu(p + 60), 0x44), loadu(p + 90), 0x88);
    const __m256i pick = _mm256_setr_epi8(0, -1, -1, -1, 4, -1, -1, -1, 8, -1, -1, -1, 12, -1, -1, -1,
                                          1, -1, -1, -1, 5, -1, -1, -1, 9, -1, -1, -1, 13, -1, -1, -1);
    __m256i e = _mm256_shuffle_epi8(v, pick);
    __m256i big = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    __m256i small = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(small, big, _mm256_cmpgt_epi32(e, _mm256_set1_epi32(1))));
}

/* eight blocks' signed levels q, |q| and d_x */
typedef struct { __m256i q[8], aq[8]; __m256 d; } u8_blk;

/* Block j of eight: its products with y[j] times s[j] into acc.a (j even)
 * or, negated, acc.b (j odd). */
INL void term8(__m256i q, __m256i aq, const sl_block_q8_0 *y, const float *s, int j, acc_t *acc)
{
    __m256 p = _mm256_cvtepi32_ps(dot_u8s8(_mm256_setzero_si256(), aq, _mm256_sign_epi8(loadu(y[j].qs), q)));
    __m256 f = _mm256_broadcast_ss(&s[X86_POS8(j)]);
    if (j & 1)
        acc->b = _mm256_fnmadd_ps(p, f, acc->b);
    else
        acc->a = _mm256_fmadd_ps(p, f, acc->a);
}

INL void pair8_blk(const u8_blk *u, const sl_block_q8_0 *y, acc_t *acc)
{
    float s[8];
    _mm256_storeu_ps(s, _mm256_mul_ps(u->d, X86_D8(y)));
    UNROLL
    for (int j = 0; j < 8; j++) term8(u->q[j], u->aq[j], y, s, j, acc);
}

/* ---- the driver: vec_dot + gemm tile per type --------------------------- */

/* Default per-row reduction of the accumulators. */
DEF_RED(q4_k) DEF_RED(q5_k) DEF_RED(q6_k)
DEF_RED(q4_0) DEF_RED(q4_1) DEF_RED(q5_0) DEF_RED(q5_1) DEF_RED(q8_0)

/* Types without a split kernel: unpacking is just the block pointer. */
#define DEF_NOSPLIT(T, XB, YB)                                                           \
typedef const XB *u_##T;                                                                 \
INL void unp_##T(const XB *x, u_##T *u) { *u = x; }                                     \
INL void pair_##T(const u_##T *u, const YB *y, acc_t *acc) { blk_##T(*u, y, acc); }

DEF_NOSPLIT(q5_k, sl_block_q5_k, sl_block_q8_k)
DEF_NOSPLIT(q4_0, sl_block_q4_0, sl_block_q8_0)
DEF_NOSPLIT(q4_1, sl_block_q4_1, sl_block_q8_1)
DEF_NOSPLIT(q5_0, sl_block_q5_0, sl_block_q8_0)
DEF_NOSPLIT(q5_1, sl_block_q5_1, sl_block_q8_1)
DEF_NOSPLIT(q8_0, sl_block_q8_0, sl_block_q8_0)

/* Weight block, activation block and elements per block of each type. */
#define X86_BLOCKS(T, ID, XB, YB, BE, DU) typedef XB xb_##T; typedef YB yb_##T; enum { be_##T = BE };
SL_KQ_EACH(X86_BLOCKS)

/* The step unit of a type: one block (X86_G1: the block kernels
 * themselves), or eight blocks (X86_G8: the type's unpg_T with pair8_blk),
 * the blocks after the last whole group then one at a time. */
#define X86_G1(T)                                                                        \
typedef u_##T ug_##T;                                                                    \
enum { gs_##T = 1 };                                                                     \
INL void unpg_##T(const xb_##T *x, ug_##T *u) { unp_##T(x, u); }                        \
INL void pairg_##T(const ug_##T *u, const yb_##T *y, acc_t *acc) { pair_##T(u, y, acc); } \
INL void stepg_##T(const xb_##T *x, const yb_##T *y, acc_t *acc)                        \
{                                                                                        \
    u_##T u;                                                                             \
    unp_##T(x, &u);                                                                      \
    pair_##T(&u, y, acc);                                                                \
}
/* X86_G8 from the type's lev_T (block -> signed levels) and d8_T (eight
 * d_x); stepg_T is unpg_T + pairg_T for one activation row (vec_dot) with
 * each block's levels used as soon as they are made (the unpacked group is
 * 16 vectors: spilled) and the same arithmetic, so bit for bit the tile. */
#define X86_G8(T)                                                                        \
typedef u8_blk ug_##T;                                                                   \
enum { gs_##T = 8 };                                                                     \
INL void unpg_##T(const xb_##T *x, ug_##T *u)                                           \
{                                                                                        \
    UNROLL for (int j = 0; j < 8; j++) {                                                 \
        u->q[j] = lev_##T(x + j);                                                        \
        u->aq[j] = _mm256_sign_epi8(u->q[j], u->q[j]);                                   \
    }                                                                                    \
    u->d = d8_##T(x);                                                                    \
}                                                                                        \
INL void pairg_##T(const ug_##T *u, const yb_##T *y, acc_t *acc) { pair8_blk(u, y, acc); } \
INL void stepg_##T(const xb_##T *x, const yb_##T *y, acc_t *acc)                        \
{                                                                                        \
    float s[8];                                                                          \
    _mm256_storeu_ps(s, _mm256_mul_ps(d8_##T(x), X86_D8(y)));                         \
    UNROLL for (int j = 0; j < 8; j++) {                                                 \
        __m256i q = lev_##T(x + j);                                                      \
        term8(q, _mm256_sign_epi8(q, q), y, s, j, acc);                                  \
    }                                                                                    \
}

/* One step of a tile at block b: G empty (one block) or g (a group). */
#define X86_TILE_STEP(T, G, b)                                                           \
    UNROLL for (int i = 0; i < NX; i++) {                                                \
        u##G##_##T u;                                                                    \
        unp##G##_##T((const xb_##T *)(vx + (size_t)i * bx) + b, &u);                     \
        UNROLL for (int j = 0; j < NY; j++)                                              \
            pair##G##_##T(&u, (const yb_##T *)(vy + (size_t)j * by) + b, &acc[i][j]);    \
    }

/* The tile body for compile-time NX x NY: accumulators in registers, each
 * weight block unpacked once and paired with the NY activation rows. */
#define X86_TILE(T)                                                                      \
static inline __attribute__((always_inline)) void                                       \
tile_##T(int NX, int NY, int64_t nb, const char *vx, size_t bx, const char *vy,         \
         size_t by, float *s, int64_t lds)                                              \
{                                                                                        \
    acc_t acc[SL_GEMM_MAX][SL_GEMM_WIDE];                                                \
    UNROLL for (int i = 0; i < NX; i++)                                                  \
        UNROLL for (int j = 0; j < NY; j++)                                              \
            acc[i][j] = (acc_t){_mm256_setzero_ps(), _mm256_setzero_ps(), 0.0f};         \
    int64_t b = 0;                                                                       \
    for (; b + gs_##T <= nb; b += gs_##T) X86_TILE_STEP(T, g, b)                         \
    for (; b < nb; b++) X86_TILE_STEP(T, , b)                                            \
    UNROLL for (int i = 0; i < NX; i++)                                                  \
        UNROLL for (int j = 0; j < NY; j++)                                              \
            s[j * lds + i] = red_##T(&acc[i][j]);                                        \
}

/* DEF_DOT(T, DOT, GEMM, DU) defines the vec_dot DOT and the gemm tile GEMM
 * (sl_vec_dot_fn, sl_gemm_fn) of type T from unp_T / pair_T / red_T. vec_dot
 * is the tile's 1 x 1 case written out so the decode loop can be unrolled
 * per type (DU); same operation order, so bit-identical to it. */
#define DEF_DOT(T, DOT, GEMM, DU)                                                        \
X86_TILE(T)                                                                              \
static void GEMM(int64_t n, const void *vx, size_t bx, int nx,                          \
                 const void *vy, size_t by, int ny, float *s, int64_t lds)              \
{                                                                                        \
    int64_t nb = n / be_##T;                                                             \
    const char *x = vx, *y = vy;                                                         \
    switch (nx * 8 + ny) {                                                               \
    case 1 * 8 + 4: tile_##T(1, 4, nb, x, bx, y, by, s, lds); break;                     \
    case 1 * 8 + 2: tile_##T(1, 2, nb, x, bx, y, by, s, lds); break;                     \
    case 1 * 8 + 1: tile_##T(1, 1, nb, x, bx, y, by, s, lds); break;                     \
    default:                                                                             \
        for (int i = 0; i < nx; i++)                                                     \
            for (int j = 0; j < ny; j++)                                                 \
                tile_##T(1, 1, nb, x + (size_t)i * bx, 0, y + (size_t)j * by, 0,         \
                         s + j * lds + i, 0);                                            \
    }                                                                                    \
}                                                                                        \
/* few-row tile: one weight row x up to SL_GEMM_WIDE activation rows */            \
static void wide_##GEMM(int64_t n, const void *vx, size_t bx, int nx,                   \
                        const void *vy, size_t by, int ny, float *s, int64_t lds)       \
{                                                                                        \
    int64_t nb = n / be_##T;                                                             \
    const char *x = vx, *y = vy;                                                         \
    if (nx != 1 || ny <= SL_GEMM_MAX) { GEMM(n, vx, bx, nx, vy, by, ny, s, lds); return; } \
    switch (ny) {                                                                        \
    case 8: tile_##T(1, 8, nb, x, bx, y, by, s, lds); break;                             \
    case 7: tile_##T(1, 7, nb, x, bx, y, by, s, lds); break;                             \
    case 6: tile_##T(1, 6, nb, x, bx, y, by, s, lds); break;                             \
    default: tile_##T(1, 5, nb, x, bx, y, by, s, lds); break;                            \
    }                                                                                    \
}                                                                                        \
/* DOT##_pf is DOT with pf[0, pfn) prefetched to L2, spread over the blocks:  \
 * the same arithmetic in the same order, so bit-identical to DOT, which is    \
 * its pfn = 0 case (inlined, the prefetch loop folds away) */                        \
static inline __attribute__((always_inline)) void                                       \
DOT##_body(int64_t n, float *s, const void *vx, const void *vy, const void *pf, size_t pfn) \
{                                                                                        \
    const xb_##T *x = vx;                                                                \
    const yb_##T *y = vy;                                                                \
    int64_t nb = n / be_##T;                                                             \
    const char *p = pf, *pe = p + pfn;                                                   \
    size_t per = nb ? (pfn / 64 + (size_t)nb) / (size_t)nb * 64 : 0;                     \
    acc_t acc = {_mm256_setzero_ps(), _mm256_setzero_ps(), 0.0f};                        \
    int64_t b = 0;                                                                       \
    DU for (; b + gs_##T <= nb; b += gs_##T) {                                           \
        for (const char *e = p + per * gs_##T; p < e && p < pe; p += 64) __builtin_prefetch(p, 0, 2); \
        stepg_##T(x + b, y + b, &acc);                                                   \
    }                                                                                    \
    for (; b < nb; b++) {                                                                \
        for (const char *e = p + per; p < e && p < pe; p += 64) __builtin_prefetch(p, 0, 2); \
        u_##T u;                                                                         \
        unp_##T(x + b, &u);                                                              \
        pair_##T(&u, y + b, &acc);                                                       \
    }                                                                                    \
    *s = red_##T(&acc);                                                                  \
}                                                                                        \
static void DOT(int64_t n, float *s, const void *vx, const void *vy)                    \
{                                                                                        \
    DOT##_body(n, s, vx, vy, vx, 0);                                                     \
}                                                                                        \
static void DOT##_pf(int64_t n, float *s, const void *vx, const void *vy,               \
                     const void *pf, size_t pfn)                                        \
{                                                                                        \
    DOT##_body(n, s, vx, vy, pf, pfn);                                                   \
}

/* DU of the type lists (kern_internal.h): blocks per decode iteration (8:
 * the eight-block step, X86_G8) and the step unit. */
#define X86_DU_1
#define X86_DU_2 _Pragma("GCC unroll 2")
#define X86_DU_8
#define X86_GS_1(T) X86_G1(T)
#define X86_GS_2(T) X86_G1(T)
#define X86_GS_8(T) X86_G8(T)

#define X86_SET(k, ID, DOT, GEMM) \
    ((k)->vec_dot[ID] = (DOT), (k)->vec_dot_pf[ID] = (DOT##_pf), (k)->gemm[ID] = (GEMM), \
     (k)->gemm_wide[ID] = (wide_##GEMM))

/* A level's instance names: dot_q4_k_avx2, gemm_q4_k_avx2, ... (the level
 * file defines X86_SUFFIX before including its products header). */
#define X86_CAT3(a, b, c) a##_##b##_##c
#define X86_NAME3(a, b, c) X86_CAT3(a, b, c)
#define X86_NAME(K, T) X86_NAME3(K, T, X86_SUFFIX)
/* (names expanded before DEF_DOT / X86_SET paste onto them) */
#define X86_DEF_(T, DOT, GEMM, DU) DEF_DOT(T, DOT, GEMM, DU)
#define X86_DEF(T, ID, XB, YB, BE, DU) X86_GS_##DU(T) X86_DEF_(T, X86_NAME(dot, T), X86_NAME(gemm, T), X86_DU_##DU)
#define X86_SET_(ID, DOT, GEMM) X86_SET(k, ID, DOT, GEMM);
#define X86_SET_T(T, ID, XB, YB, BE, DU) X86_SET_(ID, X86_NAME(dot, T), X86_NAME(gemm, T))

/* A level's kernels of a family LIST (SL_KQ_EACH, SL_IQ4_EACH) and its
 * table filler FILL (kern_internal.h); FLOAT: the float-type dots too. */
#define X86_FAMILY(LIST, FILL, FLOAT)                                                      \
LIST(X86_DEF)                                                                              \
void FILL(sl_kern *k)                                                                      \
{                                                                                          \
    LIST(X86_SET_T)                                                                        \
    if (FLOAT) x86_fill_float(k);                                                          \
}
#define X86_LEVEL(FILL) X86_FAMILY(SL_KQ_EACH, FILL, 1)

/* ---- float types: 8 lanes of FMA, scalar tail -------------------------- */

/* 8 elements of a float-type row from element i, as f32. */
static inline __attribute__((always_inline)) __m256 ft_ld8(const void *p, int64_t i, const int FT)
{
    if (FT == SL_FT_F32)
        return _mm256_loadu_ps((const float *)p + i);
    if (FT == SL_FT_F16)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const sl_f16 *)p + i)));
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const sl_bf16 *)p + i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

/* Two chains of 16, one of 8, then the scalar tail after the reduction. */
static inline __attribute__((always_inline)) void
dot_ft(int64_t n, float *s, const void *x, const void *y, const int FT)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(ft_ld8(x, i, FT), ft_ld8(y, i, FT), a0);
        a1 = _mm256_fmadd_ps(ft_ld8(x, i + 8, FT), ft_ld8(y, i + 8, FT), a1);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(ft_ld8(x, i, FT), ft_ld8(y, i, FT), a0);
    float t = hsum8(_mm256_add_ps(a0, a1));
    for (; i < n; i++) t += sl_ft_get(x, i, FT) * sl_ft_get(y, i, FT);
    *s = t;
}

static void dot_f32_x86(int64_t n, float *s, const void *x, const void *y) { dot_ft(n, s, x, y, SL_FT_F32); }
static void dot_f16_x86(int64_t n, float *s, const void *x, const void *y) { dot_ft(n, s, x, y, SL_FT_F16); }
static void dot_bf16_x86(int64_t n, float *s, const void *x, const void *y) { dot_ft(n, s, x, y, SL_FT_BF16); }

static inline void x86_fill_float(sl_kern *k)
{
    k->vec_dot[SL_GGML_F32] = dot_f32_x86;
    k->vec_dot[SL_GGML_F16] = dot_f16_x86;
    k->vec_dot[SL_GGML_BF16] = dot_bf16_x86;
}

#endif
