/* Weight-value unpacks shared by the x86 panel GEMMs (gemm_avx2.c,
 * gemm_avx512vnni.c): each writes one block's quantized values, in element
 * order, as unsigned bytes (q4_K 0..15, q5_K 0..31, q6_K q + 32 = 0..63,
 * q4_0 0..15, q5_0 0..31) with AVX2 instructions, and the q4_K / q5_K
 * unpacks built on them. Scales and mins are the includer's, since each
 * kernel wants them in its own form: it defines LANES, kq_meta (with d,
 * dm), kq_act (with bs, bs32, d per lane) and lg_act (with osum[] and d[]
 * per lane) before inclusion and k4_meta() (the q4_K / q5_K scales and
 * mins into kq_meta) after. */
#ifndef SL_GEMM_X86_H
#define SL_GEMM_X86_H

#include <immintrin.h>
#include <string.h>

#include "kern_internal.h"

static inline float f16s(sl_f16 h) { return _cvtsh_ss(h); }
static inline __m256i ld(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline void st(void *p, __m256i v) { _mm256_storeu_si256((__m256i *)p, v); }
/* The 2-bit fields k (0..3) of the 32 bytes v as bytes 0..3 (q2_K, q3_K). */
static inline __m256i crumbs(__m256i v, int k) { return _mm256_and_si256(_mm256_srli_epi16(v, 2 * k), _mm256_set1_epi8(3)); }

static inline void x86_q4k_values(const sl_block_q4_k *x, uint8_t *q)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    for (int p = 0; p < 4; p++) {
        __m256i v = ld(x->qs + 32 * p);
        st(q + 64 * p, _mm256_and_si256(v, m4));
        st(q + 64 * p + 32, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
    }
}

static inline void x86_q5k_values(const sl_block_q5_k *x, uint8_t *q)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
    __m256i hb = ld(x->qh);
    for (int p = 0; p < 4; p++) {
        __m256i v = ld(x->qs + 32 * p);
        __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * p), one), 4);
        __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * p + 1), one), 4);
        st(q + 64 * p, _mm256_or_si256(_mm256_and_si256(v, m4), h0));
        st(q + 64 * p + 32, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), h1));
    }
}

static inline void x86_q6k_values(const sl_block_q6_k *x, uint8_t *q)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f), m3 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; h++) {
        __m256i l0 = ld(x->ql + 64 * h), l1 = ld(x->ql + 64 * h + 32), H = ld(x->qh + 32 * h);
        uint8_t *o = q + 128 * h;
        st(o, _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(H, m3), 4)));
        st(o + 32, _mm256_or_si256(_mm256_and_si256(l1, m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 2), m3), 4)));
        st(o + 64, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 4), m3), 4)));
        st(o + 96, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                   _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(H, 6), m3), 4)));
    }
}

/* One activation row's q8_K block sums as word pairs (one lane; lanes int32
 * apart): bs16[p] = (bsums 2p, 2p+1), bs32[p] over the 32-element sub-blocks
 * 2p, 2p+1 (|sum of 32| <= 4096: fits int16). */
static inline void x86_bsum_pairs(const int16_t *bs, int32_t *bs16, int32_t *bs32, int lanes)
{
    for (int p = 0; p < 8; p++) bs16[p * lanes] = sl_pair16(bs[2 * p], bs[2 * p + 1]);
    for (int p = 0; p < 4; p++)
        bs32[p * lanes] = sl_pair16(bs[4 * p] + bs[4 * p + 1], bs[4 * p + 2] + bs[4 * p + 3]);
}

static inline void k4_meta(const uint8_t *s12, kq_meta *m);

/* q4_K / q5_K: the scales and mins (the includer's k4_meta) and d, dmin. */
static inline void k45_meta(const uint8_t *s12, sl_f16 d, sl_f16 dmin, kq_meta *m)
{
    k4_meta(s12, m);
    m->d = f16s(d);
    m->dm = f16s(dmin);
}

static inline void unp_q4_k(const void *vx, uint8_t *q, kq_meta *m)
{
    const sl_block_q4_k *x = vx;
    x86_q4k_values(x, q);
    k45_meta(x->scales, x->d, x->dmin, m);
}

static inline void unp_q5_k(const void *vx, uint8_t *q, kq_meta *m)
{
    const sl_block_q5_k *x = vx;
    x86_q5k_values(x, q);
    k45_meta(x->scales, x->d, x->dmin, m);
}

/* The part of packing one q8_K superblock of one activation row (lane) the
 * x86 panels share: block-sum pairs and d. */
static inline void x86_kq_extra(const sl_block_q8_k *y, kq_act *g, int lane)
{
    x86_bsum_pairs(y->bsums, &g->bs[0][lane], &g->bs32[0][lane], LANES);
    g->d[lane] = y->d;
}

static inline __m256i x86_nib32(const uint8_t *qs)
{
    __m128i v = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0f));
}

static void unp_q4_0(const void *vx, uint8_t *q, float *d)
{
    const sl_block_q4_0 *x = vx;
    st(q, x86_nib32(x->qs));
    *d = f16s(x->d);
}

static void unp_q5_0(const void *vx, uint8_t *q, float *d)
{
    const sl_block_q5_0 *x = vx;
    uint32_t h;
    memcpy(&h, x->qh, 4);
    /* 0x10 in byte j where bit j of qh is set */
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h),
                                    _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL,
                                                      0x0101010101010101LL, 0));
    const __m256i bits = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    v = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bits), bits), _mm256_set1_epi8(0x10));
    st(q, _mm256_or_si256(x86_nib32(x->qs), v));
    *d = f16s(x->d);
}

/* Legacy activation block: off * sum(a) per lane (weights are stored as q + off). */
static void lg_extra(const void *vy, void *vp, int lane, int off)
{
    const sl_block_q8_0 *y = vy;
    lg_act *g = vp;
    int sum = 0;
    for (int i = 0; i < 32; i++) sum += y->qs[i];
    g->osum[lane] = off * sum;
    g->d[lane] = f16s(y->d);
}

#endif
