/* Prefill GEMM for the avx2 level (and avx512 without VNNI): the panel
 * scheme of gemm_avx512vnni.c on 8 activation rows per ymm. Without
 * vpdpbusd a step is vpmaddubsw (u8 weight dword broadcast x s8 activation
 * bytes -> word pairs) added up in 16 bits for as many k-steps as the type's
 * range allows (q4_K: a whole 32-element sub-block), then one vpmaddwd with
 * the sub-block scale as a word pair widens, scales and sums in one go.
 * Weights stay unsigned small values (q, q + 32 for q6_K, q + 4 for q3_K)
 * so vpmaddubsw never saturates (|pair| <= 2 * 63 * 128); offsets and mins
 * go through the activation block sums. q8_0 (255 * 128 * 2 would saturate)
 * keeps the per-pair tiles. Results agree with vec_dot within the tests'
 * rounding bound. */
#include <immintrin.h>
#include <string.h>

#include "kern_internal.h"

#define NR 4           /* weight rows per register tile (16 ymm registers) */
#define LANES 8        /* activation rows per panel group (one ymm of int32) */

/* ---- K-quants ---------------------------------------------------------- */

typedef struct {
    int32_t scw[16];         /* sub-block scale as a word pair (sc, sc) */
    int32_t mn[8];           /* min / offset pairs (sub-blocks 2p, 2p+1); 4 for q4_K/q5_K */
    float d, dm;
} kq_meta;

typedef struct {
    int8_t qs[64][32];       /* [k-step][lane][4 bytes] */
    int32_t bs[8][8];        /* 16-element sums, pairs (2p | 2p+1 << 16) per lane */
    int32_t bs32[4][8];      /* 32-element sums, pairs */
    float d[8];
} kq_act;

typedef struct {
    int8_t qs[8][32];
    int32_t osum[8];         /* offset * sum of the block's activations */
    float d[8];
} lg_act;

#include "gemm_x86.h"

static void kq_extra(const void *vy, void *vp, int lane, int arg)
{
    (void)arg;
    x86_kq_extra(vy, vp, lane);
}

static inline void k4_meta(const uint8_t *s12, kq_meta *m)
{
    uint32_t sc[2], mn[2];
    sl_q4k_scales8(s12, sc, mn);
    for (int j = 0; j < 8; j++) {
        int s = (int)((sc[j / 4] >> (8 * (j % 4))) & 0xff);
        m->scw[j] = sl_pair16(s, s);
    }
    for (int p = 0; p < 4; p++)
        m->mn[p] = sl_pair16((int)((mn[p / 2] >> (16 * (p % 2))) & 0xff), (int)((mn[p / 2] >> (16 * (p % 2) + 8)) & 0xff));
}

/* q6_K: q + 32 (0..63); the offset 32 * sc goes through the block sums */
static inline void unp_q6_k(const void *vx, uint8_t *q, kq_meta *m)
{
    const sl_block_q6_k *x = vx;
    x86_q6k_values(x, q);
    for (int s = 0; s < 16; s++) m->scw[s] = sl_pair16(x->scales[s], x->scales[s]);
    for (int p = 0; p < 8; p++) m->mn[p] = sl_pair16(32 * x->scales[2 * p], 32 * x->scales[2 * p + 1]);
    m->d = m->dm = f16s(x->d);
}

/* q3_K: q + 4 (0..7); the offset 4 * sc goes through the block sums */
static inline void unp_q3_k(const void *vx, uint8_t *q, kq_meta *m)
{
    const sl_block_q3_k *x = vx;
    __m256i hm = ld(x->hmask);
    for (int h = 0; h < 2; h++) {
        __m256i v = ld(x->qs + 32 * h);
        for (int k = 0; k < 4; k++) {   /* the high bit: bit 4h+k of hm, as bit 2 */
            __m256i lo = crumbs(v, k), hi = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + k), _mm256_set1_epi8(1));
            st(q + 128 * h + 32 * k, _mm256_or_si256(lo, _mm256_slli_epi16(hi, 2)));
        }
    }
    uint32_t w[4];
    sl_q3k_words(x->scales, w);
    int sc[16];
    for (int s = 0; s < 16; s++) sc[s] = (int)((w[s / 4] >> (8 * (s % 4))) & 0xff) - 32;
    for (int s = 0; s < 16; s++) m->scw[s] = sl_pair16(sc[s], sc[s]);
    for (int p = 0; p < 8; p++) m->mn[p] = sl_pair16(4 * sc[2 * p], 4 * sc[2 * p + 1]);
    m->d = m->dm = f16s(x->d);
}

/* q2_K: q (0..3), scale per 16-element group, mins through the block sums */
static inline void unp_q2_k(const void *vx, uint8_t *q, kq_meta *m)
{
    const sl_block_q2_k *x = vx;
    for (int h = 0; h < 2; h++) {
        __m256i v = ld(x->qs + 32 * h);
        for (int k = 0; k < 4; k++) st(q + 128 * h + 32 * k, crumbs(v, k));
    }
    for (int s = 0; s < 16; s++) m->scw[s] = sl_pair16(x->scales[s] & 15, x->scales[s] & 15);
    for (int p = 0; p < 8; p++) m->mn[p] = sl_pair16(x->scales[2 * p] >> 4, x->scales[2 * p + 1] >> 4);
    m->d = f16s(x->d);
    m->dm = f16s(x->dmin);
}

/* words += (u8 weight dword broadcast) x (s8 activation bytes), per lane pair */
static inline __m256i step16(__m256i acc, const uint8_t *w4, __m256i av)
{
    int32_t w;
    memcpy(&w, w4, 4);
    return _mm256_add_epi16(acc, _mm256_maddubs_epi16(_mm256_set1_epi32(w), av));
}

/* NR rows x 8 activation rows over nbc superblocks. SUBK: k-steps per
 * scaled sub-block; RUN: k-steps summed in 16 bits before widening (the
 * type's range bound); MINS: 4 / 8 pairs against bs32 / bs. */
static inline __attribute__((always_inline)) void
kq_tile(const int SUBK, const int RUN, const int MINS, const uint8_t *wq, const kq_meta *wm,
        int nbc, const kq_act *A, float *acc, int first)
{
    __m256 facc[NR];
    for (int r = 0; r < NR; r++) facc[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + 8 * r);
    for (int b = 0; b < nbc; b++, wq += NR * 256, wm += NR) {
        const kq_act *a = A + b;
        __m256i isum[NR];
        for (int r = 0; r < NR; r++) isum[r] = _mm256_setzero_si256();
        for (int j = 0; j < 64 / SUBK; j++) {
            _Pragma("GCC unroll 8")
            for (int c = j * SUBK; c < j * SUBK + SUBK; c += RUN) {
                __m256i p16[NR];
                for (int r = 0; r < NR; r++) p16[r] = _mm256_setzero_si256();
                _Pragma("GCC unroll 8")
                for (int s = c; s < c + RUN; s++) {
                    __m256i av = ld(a->qs[s]);
                    _Pragma("GCC unroll 4")
                    for (int r = 0; r < NR; r++) p16[r] = step16(p16[r], wq + 256 * r + 4 * s, av);
                }
                _Pragma("GCC unroll 4")
                for (int r = 0; r < NR; r++)
                    isum[r] = _mm256_add_epi32(isum[r], _mm256_madd_epi16(p16[r], _mm256_set1_epi32(wm[r].scw[j])));
            }
        }
        __m256 da = _mm256_loadu_ps(a->d);
        for (int r = 0; r < NR; r++) {
            __m256i ms = _mm256_setzero_si256();
            for (int p = 0; p < MINS; p++)
                ms = _mm256_add_epi32(ms, _mm256_madd_epi16(ld(MINS == 4 ? a->bs32[p] : a->bs[p]),
                                                            _mm256_set1_epi32(wm[r].mn[p])));
            __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_set1_ps(wm[r].d));
            t = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(ms), _mm256_set1_ps(wm[r].dm), t);
            facc[r] = _mm256_fmadd_ps(t, da, facc[r]);
        }
    }
    for (int r = 0; r < NR; r++) _mm256_storeu_ps(acc + 8 * r, facc[r]);
}

/* kq_tile's SUBK, RUN, MINS per type. 16-bit runs: q4_K 8 x 2 x 15 x 128 =
 * 30720; q5_K 4 x 7936; q6_K 2 x 16128 (all < 32768); q3_K / q2_K |q| <= 7. */
#define KQ_TILE_q4_k 8, 8, 4,
#define KQ_TILE_q5_k 8, 4, 4,
#define KQ_TILE_q6_k 4, 2, 8,
#define KQ_TILE_q3_k 4, 4, 8,
#define KQ_TILE_q2_k 4, 4, 8,


/* ---- 32-element block types (q4_0, q5_0) -------------------------------- */

#define PANEL_NO_Q8_0
#define LG_OFF_Q4_0 8      /* u8 weight = q + off */
#define LG_OFF_Q5_0 16

static inline __attribute__((always_inline)) void
lg_tile(const int RUN, const uint8_t *wq, const float *wd, int nbc, const lg_act *A, float *acc,
            int first)
{
    __m256 facc[NR];
    for (int r = 0; r < NR; r++) facc[r] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + 8 * r);
    const __m256i ones = _mm256_set1_epi16(1);
    for (int b = 0; b < nbc; b++, wq += NR * 32, wd += NR) {
        const lg_act *a = A + b;
        __m256i part[NR];
        for (int r = 0; r < NR; r++) part[r] = _mm256_setzero_si256();
        _Pragma("GCC unroll 2")
        for (int c = 0; c < 8; c += RUN) {
            __m256i p16[NR];
            for (int r = 0; r < NR; r++) p16[r] = _mm256_setzero_si256();
            _Pragma("GCC unroll 8")
            for (int s = c; s < c + RUN; s++) {
                __m256i av = ld(a->qs[s]);
                for (int r = 0; r < NR; r++) p16[r] = step16(p16[r], wq + 32 * r + 4 * s, av);
            }
            for (int r = 0; r < NR; r++) part[r] = _mm256_add_epi32(part[r], _mm256_madd_epi16(p16[r], ones));
        }
        __m256i os = ld(a->osum);
        __m256 da = _mm256_loadu_ps(a->d);
        for (int r = 0; r < NR; r++) {
            __m256 f = _mm256_cvtepi32_ps(_mm256_sub_epi32(part[r], os));
            facc[r] = _mm256_fmadd_ps(f, _mm256_mul_ps(da, _mm256_set1_ps(wd[r])), facc[r]);
        }
    }
    for (int r = 0; r < NR; r++) _mm256_storeu_ps(acc + 8 * r, facc[r]);
}

/* lg_tile's RUN per type. 16-bit runs: q4_0 8 x 2 x 15 x 128 = 30720,
 * q5_0 4 x 2 x 31 x 128 = 31744, mxfp4 4 x 2 x 24 x 128 = 24576 */
#define LG_TILE_q4_0 8,
#define LG_TILE_q5_0 4,
#define LG_TILE_mxfp4 4,

/* MXFP4: the level + 12 (0..24) by one lookup, d = 2^(e - 128). IQ4_NL's
 * levels span 240: a pair would saturate vpmaddubsw, so it keeps the tiles. */
#define LG_OFF_MXFP4 12
static void unp_mxfp4(const void *vx, uint8_t *q, float *d)
{
    const sl_block_mxfp4 *x = vx;
    __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)sl_kvalues_mxfp4));
    lut = _mm256_add_epi8(lut, _mm256_set1_epi8(LG_OFF_MXFP4));
    st(q, _mm256_shuffle_epi8(lut, x86_nib32(x->qs)));
    *d = sl_e8m0_half(x->e);
}

#define PANEL_PREFETCH(p) _mm_prefetch((p), _MM_HINT_T1)
#include "gemm_panel.h"

void sl_gemm_fill_avx2(sl_kern *k) { panel_fill(k); }
