/* x86 dot kernels, included by dot_avx2.c, dot_avx512.c and dot_avx512vnni.c;
 * each file is compiled with its own -m flags and defines before inclusion:
 *   X86_SUFFIX     name suffix (avx2, avx512, avx512vnni)
 *   X86_VNNI       1: integer dot-accumulate with vpdpbusd / vpdpwssd
 * Scheme (every type): exact integer sums per 32-byte chunk in 8 int32 lanes,
 * scaled in the integer domain by the sub-block scales (madd / dpwssd with an
 * i16 scale vector), converted once per block and accumulated in float lanes
 * with one FMA by d_x*d_y; min / offset terms go through the activation's
 * block sums into a second float accumulator. No horizontal sum per block.
 * gemm_T runs nx weight rows x ny activation rows block by block, so one
 * block of each weight row is loaded from memory once per tile; each pair
 * uses the same instruction sequence as vec_dot (bit-identical results). */
#include <immintrin.h>
#include <string.h>

#include "kern_internal.h"

#define X86_CAT2(a, b) a##_##b
#define X86_CAT(a, b) X86_CAT2(a, b)
#define FN(name) X86_CAT(name, X86_SUFFIX)
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

/* acc += sum over byte pairs (u8 a * s8 b) * w16, per int32 lane. */
static inline __m256i madd_scaled(__m256i acc, __m256i a, __m256i b, __m256i w16)
{
    __m256i p = _mm256_maddubs_epi16(a, b);
#if X86_VNNI
    return _mm256_dpwssd_epi32(acc, p, w16);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, w16));
#endif
}

/* acc += sum of u8 a * s8 b per int32 lane (4 bytes each). */
static inline __m256i dot_u8s8(__m256i acc, __m256i a, __m256i b)
{
#if X86_VNNI
    return _mm256_dpbusd_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b),
                                                   _mm256_set1_epi16(1)));
#endif
}

/* signed x signed via |x| and sign(y, x) */
static inline __m256i dot_s8s8(__m256i acc, __m256i x, __m256i y)
{
    return dot_u8s8(acc, _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

static inline __m256i split16(int lo, int hi)
{
    return _mm256_set_m128i(_mm_set1_epi16((short)hi), _mm_set1_epi16((short)lo));
}

/* w16 holds 16 words; returns w[2k] in all words of the low 128 bits and
 * w[2k+1] in the high 128 bits (scales of two 16-element sub-blocks). */
static inline __m256i pair_bcast(__m256i w16, int k)
{
    __m256i p = _mm256_permutevar8x32_epi32(w16, _mm256_set1_epi32(k));
    return _mm256_shuffle_epi8(p, _mm256_set_m128i(_mm_set1_epi16(0x0302), _mm_set1_epi16(0x0100)));
}

static inline __m256i loadu(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

#if X86_VNNI
/* Two chunks dotted with vpdpbusd (lanes stay below 2^15: at most 4 products
 * of |q| <= 63 and |y| <= 127), packed to words and scaled with one
 * vpdpwssd: 3 multiply-port ops per 64 bytes instead of 4. */
static inline __m256i dot2_scaled(__m256i acc, __m256i xa, __m256i ya, __m256i xb, __m256i yb, __m256i w)
{
    __m256i pa = _mm256_dpbusd_epi32(_mm256_setzero_si256(), xa, ya);
    __m256i pb = _mm256_dpbusd_epi32(_mm256_setzero_si256(), xb, yb);
    return _mm256_dpwssd_epi32(acc, _mm256_packs_epi32(pa, pb), w);
}

/* Word scales for dot2_scaled over chunks k = 2m, 2m+1 of 16-element
 * sub-blocks (chunk k holds sub-blocks 2k | 2k+1 in its low | high half). */
static inline __m256i sc2_sub16(__m256i sc16, int m)
{
    short a = (short)(4 * m), b = (short)(4 * m + 2), c = (short)(4 * m + 1), d = (short)(4 * m + 3);
    return _mm256_permutexvar_epi16(_mm256_set_epi16(d, d, d, d, c, c, c, c, b, b, b, b, a, a, a, a), sc16);
}

/* Same for 32-element sub-blocks 2p (chunk a) and 2p+1 (chunk b), words 0..7 */
static inline __m256i sc2_sub32(__m256i s16x2, int p)
{
    short a = (short)(2 * p), b = (short)(2 * p + 1);
    return _mm256_permutexvar_epi16(_mm256_set_epi16(b, b, b, b, a, a, a, a, b, b, b, b, a, a, a, a), s16x2);
}
#endif

typedef struct { __m256 a, b; float s; } acc_t;
/* Plain reduction: lanes of a, minus lanes of b, plus the scalar s. */
#define DEF_RED(T) static inline float red_##T(const acc_t *a) { return hsum8(a->a) - hsum8(a->b) + a->s; }

/* Factors for fin_dmin's lane layout: d in lanes 0,1 and -dmin in 2,3 of each half. */
static inline __m256 dmin_vec(float d, float dmin)
{
    return _mm256_set_ps(-dmin, -dmin, d, d, -dmin, -dmin, d, d);
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

/* Split kernels: unp_T() does the x-only work once per weight block,
 * pair_T() the per-activation-row work (two independent integer chains). */
typedef struct { __m256i q[8], sc[8], sc2[4], m16; __m256 dv; } u_q4_k;

INL void unp_q4_k(const sl_block_q4_k *x, u_q4_k *u)
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
#if X86_VNNI
    UNROLL
    for (int p = 0; p < 4; p++) u->sc2[p] = sc2_sub32(s16x2, p);
#endif
    __m128i m8 = _mm_cvtsi64_si128((long long)(((uint64_t)mn[1] << 32) | mn[0]));
    u->m16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
    u->dv = dmin_vec(f16s(x->d), f16s(x->dmin));
}

INL void pair_q4_k(const u_q4_k *u, const sl_block_q8_k *y, acc_t *acc)
{
    __m256i i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256();
#if X86_VNNI
    i0 = dot2_scaled(i0, u->q[0], loadu(y->qs), u->q[1], loadu(y->qs + 32), u->sc2[0]);
    i1 = dot2_scaled(i1, u->q[2], loadu(y->qs + 64), u->q[3], loadu(y->qs + 96), u->sc2[1]);
    i0 = dot2_scaled(i0, u->q[4], loadu(y->qs + 128), u->q[5], loadu(y->qs + 160), u->sc2[2]);
    i1 = dot2_scaled(i1, u->q[6], loadu(y->qs + 192), u->q[7], loadu(y->qs + 224), u->sc2[3]);
#else
    UNROLL
    for (int p = 0; p < 4; p++) {
        i0 = madd_scaled(i0, u->q[2 * p], loadu(y->qs + 64 * p), u->sc[2 * p]);
        i1 = madd_scaled(i1, u->q[2 * p + 1], loadu(y->qs + 64 * p + 32), u->sc[2 * p + 1]);
    }
#endif
    __m256i msum = _mm256_madd_epi16(loadu(y->bsums), u->m16);
    fin_dmin(_mm256_add_epi32(i0, i1), msum, u->dv, y->d, acc);
}

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

/* q6_K: q + 32 (0..63) times y, the 32 * sum(sc * bsums) goes to acc->b. */
/* q6_K: q + 32 (0..63) times y; 32 * sum(sc * bsums) goes to acc->b. */
typedef struct { __m256i q[8], sc[8], sc2[4], sc16; __m256 dv; } u_q6_k;

INL void unp_q6_k(const sl_block_q6_k *x, u_q6_k *u)
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
#if X86_VNNI
    UNROLL
    for (int m = 0; m < 4; m++) u->sc2[m] = sc2_sub16(u->sc16, m);
#endif
    float d = f16s(x->d);
    u->dv = dmin_vec(d, 32.0f * d);
}

INL void pair_q6_k(const u_q6_k *u, const sl_block_q8_k *y, acc_t *acc)
{
    __m256i i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256();
#if X86_VNNI
    i0 = dot2_scaled(i0, u->q[0], loadu(y->qs), u->q[1], loadu(y->qs + 32), u->sc2[0]);
    i1 = dot2_scaled(i1, u->q[2], loadu(y->qs + 64), u->q[3], loadu(y->qs + 96), u->sc2[1]);
    i0 = dot2_scaled(i0, u->q[4], loadu(y->qs + 128), u->q[5], loadu(y->qs + 160), u->sc2[2]);
    i1 = dot2_scaled(i1, u->q[6], loadu(y->qs + 192), u->q[7], loadu(y->qs + 224), u->sc2[3]);
#else
    UNROLL
    for (int k = 0; k < 8; k += 2) {
        i0 = madd_scaled(i0, u->q[k], loadu(y->qs + 32 * k), u->sc[k]);
        i1 = madd_scaled(i1, u->q[k + 1], loadu(y->qs + 32 * k + 32), u->sc[k + 1]);
    }
#endif
    __m256i osum = _mm256_madd_epi16(loadu(y->bsums), u->sc16);
    fin_dmin(_mm256_add_epi32(i0, i1), osum, u->dv, y->d, acc);
}

/* q2_K: 2-bit q (0..3) x y scaled by the low nibbles; mins via bsums. */
#if X86_VNNI
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
    i0 = dot2_scaled(i0, u->q[0], loadu(y->qs), u->q[1], loadu(y->qs + 32), u->sc2[0]);
    i1 = dot2_scaled(i1, u->q[2], loadu(y->qs + 64), u->q[3], loadu(y->qs + 96), u->sc2[1]);
    i0 = dot2_scaled(i0, u->q[4], loadu(y->qs + 128), u->q[5], loadu(y->qs + 160), u->sc2[2]);
    i1 = dot2_scaled(i1, u->q[6], loadu(y->qs + 192), u->q[7], loadu(y->qs + 224), u->sc2[3]);
    __m256i msum = _mm256_madd_epi16(loadu(y->bsums), u->m16);
    __m256i v = fold_im(_mm256_add_epi32(i0, i1), msum);
    acc->a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(v), _mm256_mul_ps(u->dv, _mm256_set1_ps(y->d)), acc->a);
}

static inline float red_q2_k(const acc_t *a)
{
    return hsum8(_mm256_mul_ps(a->a, _mm256_set_ps(-0.0625f, 0.25f, -0.0625f, 0.25f,
                                                   -0.0625f, 0.25f, -0.0625f, 0.25f)));
}
#else
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
    __m256i i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256();
    UNROLL
    for (int k = 0; k < 8; k += 2) {
        i0 = madd_scaled(i0, u->q[k], loadu(y->qs + 32 * k), u->sc[k]);
        i1 = madd_scaled(i1, u->q[k + 1], loadu(y->qs + 32 * k + 32), u->sc[k + 1]);
    }
    __m256i msum = _mm256_madd_epi16(loadu(y->bsums), u->m16);
    fin_dmin(_mm256_add_epi32(i0, i1), msum, u->dv, y->d, acc);
}

DEF_RED(q2_k)
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

#if X86_VNNI
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
    i0 = dot2_scaled(i0, u->q[0], loadu(y->qs), u->q[1], loadu(y->qs + 32), u->sc2[0]);
    i1 = dot2_scaled(i1, u->q[2], loadu(y->qs + 64), u->q[3], loadu(y->qs + 96), u->sc2[1]);
    i0 = dot2_scaled(i0, u->q[4], loadu(y->qs + 128), u->q[5], loadu(y->qs + 160), u->sc2[2]);
    i1 = dot2_scaled(i1, u->q[6], loadu(y->qs + 192), u->q[7], loadu(y->qs + 224), u->sc2[3]);
    __m256i osum = _mm256_madd_epi16(loadu(y->bsums), u->sc16);
    __m256 f = _mm256_mul_ps(u->dv, _mm256_set1_ps(y->d));
    acc->a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(i0, i1)), f, acc->a);
    acc->b = _mm256_fmadd_ps(_mm256_cvtepi32_ps(osum), f, acc->b);
}

static inline float red_q3_k(const acc_t *a)
{
    return 0.25f * hsum8(a->a) - 4.0f * hsum8(a->b);
}
#else
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
    __m256i i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256();
    UNROLL
    for (int k = 0; k < 8; k += 2) {
        i0 = madd_scaled(i0, u->q[k], loadu(y->qs + 32 * k), u->sc[k]);
        i1 = madd_scaled(i1, u->q[k + 1], loadu(y->qs + 32 * k + 32), u->sc[k + 1]);
    }
    __m256i osum = _mm256_madd_epi16(loadu(y->bsums), u->sc16);
    fin_dmin(_mm256_add_epi32(i0, i1), osum, u->dv, y->d, acc);
}

DEF_RED(q3_k)
#endif

/* ---- legacy 32-element blocks ------------------------------------------- */

static inline __m256i nibbles32(const uint8_t *qs)
{
    __m128i q = _mm_loadu_si128((const __m128i *)qs);
    __m256i v = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
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

/* ---- gemm tile + vec_dot per type -------------------------------------- */

/* The tile body for compile-time NX x NY: the accumulators live in
 * registers, and the x-only part of each block kernel (unpacking) is shared
 * across the NY activation rows after inlining. */
/* Default per-row reduction of the accumulators. */
DEF_RED(q4_k) DEF_RED(q5_k) DEF_RED(q6_k)
DEF_RED(q4_0) DEF_RED(q4_1) DEF_RED(q5_0) DEF_RED(q5_1) DEF_RED(q8_0)

/* Types without a split kernel: unpacking is just the block pointer. */
#define DEF_NOSPLIT(T, XB, YB)                                                           \
typedef const XB *u_##T;                                                                 \
INL void unp_##T(const XB *x, u_##T *u) { *u = x; }                            \
INL void pair_##T(const u_##T *u, const YB *y, acc_t *acc) { blk_##T(*u, y, acc); }

DEF_NOSPLIT(q5_k, sl_block_q5_k, sl_block_q8_k)
DEF_NOSPLIT(q4_0, sl_block_q4_0, sl_block_q8_0)
DEF_NOSPLIT(q4_1, sl_block_q4_1, sl_block_q8_1)
DEF_NOSPLIT(q5_0, sl_block_q5_0, sl_block_q8_0)
DEF_NOSPLIT(q5_1, sl_block_q5_1, sl_block_q8_1)
DEF_NOSPLIT(q8_0, sl_block_q8_0, sl_block_q8_0)

/* The tile body for compile-time NX x NY: accumulators in registers, each
 * weight block unpacked once and paired with the NY activation rows. */
#define DEF_GEMM(T, XB, YB, BE, DU)                                                      \
static inline __attribute__((always_inline)) void                                       \
FN(tile_##T)(int NX, int NY, int64_t nb, const char *vx, size_t bx, const char *vy,     \
             size_t by, float *s, int64_t lds)                                          \
{                                                                                        \
    acc_t acc[SL_GEMM_MAX][SL_GEMM_MAX];                                                 \
    UNROLL for (int i = 0; i < NX; i++)                                                  \
        UNROLL for (int j = 0; j < NY; j++)                                              \
            acc[i][j] = (acc_t){_mm256_setzero_ps(), _mm256_setzero_ps(), 0.0f};         \
    for (int64_t b = 0; b < nb; b++)                                                     \
        UNROLL for (int i = 0; i < NX; i++) {                                            \
            u_##T u;                                                                     \
            unp_##T((const XB *)(vx + (size_t)i * bx) + b, &u);                          \
            UNROLL for (int j = 0; j < NY; j++)                                          \
                pair_##T(&u, (const YB *)(vy + (size_t)j * by) + b, &acc[i][j]);         \
        }                                                                                \
    UNROLL for (int i = 0; i < NX; i++)                                                  \
        UNROLL for (int j = 0; j < NY; j++)                                              \
            s[j * lds + i] = red_##T(&acc[i][j]);                                        \
}                                                                                        \
static void FN(gemm_##T)(int64_t n, const void *vx, size_t bx, int nx,                  \
                         const void *vy, size_t by, int ny, float *s, int64_t lds)      \
{                                                                                        \
    int64_t nb = n / (BE);                                                               \
    const char *x = vx, *y = vy;                                                         \
    switch (nx * 8 + ny) {                                                               \
    case 1 * 8 + 4: FN(tile_##T)(1, 4, nb, x, bx, y, by, s, lds); break;                 \
    case 1 * 8 + 2: FN(tile_##T)(1, 2, nb, x, bx, y, by, s, lds); break;                 \
    case 1 * 8 + 1: FN(tile_##T)(1, 1, nb, x, bx, y, by, s, lds); break;                 \
    default:                                                                             \
        for (int i = 0; i < nx; i++)                                                     \
            for (int j = 0; j < ny; j++)                                                 \
                FN(tile_##T)(1, 1, nb, x + (size_t)i * bx, 0, y + (size_t)j * by, 0,     \
                             s + j * lds + i, 0);                                        \
    }                                                                                    \
}                                                                                        \
/* vec_dot: the tile's 1 x 1 case written out so the decode loop can be   \
 * unrolled per type (DU); same operation order, so bit-identical to it. */ \
static void FN(dot_##T)(int64_t n, float *s, const void *vx, const void *vy)            \
{                                                                                        \
    const XB *x = vx;                                                                    \
    const YB *y = vy;                                                                    \
    int64_t nb = n / (BE);                                                               \
    acc_t acc = {_mm256_setzero_ps(), _mm256_setzero_ps(), 0.0f};                        \
    DU for (int64_t b = 0; b < nb; b++) {                                                \
        u_##T u;                                                                         \
        unp_##T(x + b, &u);                                                              \
        pair_##T(&u, y + b, &acc);                                                       \
    }                                                                                    \
    *s = red_##T(&acc);                                                                  \
}

/* q2_K / q3_K decode: two blocks per iteration measured 1-2% faster (more
 * independent work in flight); q4_K / q6_K measured slower with it. */
#define DU2 _Pragma("GCC unroll 2")
DEF_GEMM(q4_k, sl_block_q4_k, sl_block_q8_k, SL_QKK, )
DEF_GEMM(q5_k, sl_block_q5_k, sl_block_q8_k, SL_QKK, )
DEF_GEMM(q6_k, sl_block_q6_k, sl_block_q8_k, SL_QKK, )
DEF_GEMM(q2_k, sl_block_q2_k, sl_block_q8_k, SL_QKK, DU2)
DEF_GEMM(q3_k, sl_block_q3_k, sl_block_q8_k, SL_QKK, DU2)
DEF_GEMM(q4_0, sl_block_q4_0, sl_block_q8_0, SL_QK, )
DEF_GEMM(q4_1, sl_block_q4_1, sl_block_q8_1, SL_QK, )
DEF_GEMM(q5_0, sl_block_q5_0, sl_block_q8_0, SL_QK, )
DEF_GEMM(q5_1, sl_block_q5_1, sl_block_q8_1, SL_QK, )
DEF_GEMM(q8_0, sl_block_q8_0, sl_block_q8_0, SL_QK, )

/* ---- float types: 8 lanes of FMA, scalar tail -------------------------- */

static void FN(dot_f32)(int64_t n, float *s, const void *vx, const void *vy)
{
    const float *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
    float t = hsum8(_mm256_add_ps(a0, a1));
    for (; i < n; i++) t += x[i] * y[i];
    *s = t;
}

static void FN(dot_f16)(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_f16 *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
#define LD16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(LD16(x + i), LD16(y + i), a0);
        a1 = _mm256_fmadd_ps(LD16(x + i + 8), LD16(y + i + 8), a1);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(LD16(x + i), LD16(y + i), a0);
#undef LD16
    float t = hsum8(_mm256_add_ps(a0, a1));
    for (; i < n; i++) t += f16s(x[i]) * f16s(y[i]);
    *s = t;
}

static inline __m256 bf16x8(const sl_bf16 *p)
{
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

static void FN(dot_bf16)(int64_t n, float *s, const void *vx, const void *vy)
{
    const sl_bf16 *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(bf16x8(x + i), bf16x8(y + i), a0);
        a1 = _mm256_fmadd_ps(bf16x8(x + i + 8), bf16x8(y + i + 8), a1);
    }
    for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(bf16x8(x + i), bf16x8(y + i), a0);
    float t = hsum8(_mm256_add_ps(a0, a1));
    for (; i < n; i++) t += sl_bf16_to_f32(x[i]) * sl_bf16_to_f32(y[i]);
    *s = t;
}

#define SET(T, ID) k->vec_dot[ID] = FN(dot_##T); k->gemm[ID] = FN(gemm_##T)
static void FN(x86_fill)(sl_kern *k)
{
    SET(q4_k, SL_GGML_Q4_K); SET(q5_k, SL_GGML_Q5_K); SET(q6_k, SL_GGML_Q6_K);
    SET(q2_k, SL_GGML_Q2_K); SET(q3_k, SL_GGML_Q3_K);
    SET(q4_0, SL_GGML_Q4_0); SET(q4_1, SL_GGML_Q4_1); SET(q5_0, SL_GGML_Q5_0);
    SET(q5_1, SL_GGML_Q5_1); SET(q8_0, SL_GGML_Q8_0);
    k->vec_dot[SL_GGML_F32] = FN(dot_f32);
    k->vec_dot[SL_GGML_F16] = FN(dot_f16);
    k->vec_dot[SL_GGML_BF16] = FN(dot_bf16);
}
#undef SET
