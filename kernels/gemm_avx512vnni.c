/* Prefill GEMM for the avx512vnni level: activation rows in zmm lanes.
 *
 * The per-pair gemm tiles of dot_x86.h spend about half their multiply-port
 * slots on packing and scaling, so a 64-row matmul reached only ~2.5x the
 * rows/s of a bandwidth-bound matvec. Here 16 activation rows are transposed
 * once per call into a panel (4 bytes of each row per 64-byte vector), and
 * each weight row is unpacked once per K chunk into plain u8 values; one
 * vpdpbusd then does 16 rows x 4 bytes against a broadcast weight dword with
 * nothing else in the inner loop. Per sub-block scales are applied to int32
 * lane sums with one vpmulld (q2_K and q3_K: pre-multiplied into the
 * weights, which still fit in u8), the min / offset terms via the activation
 * block sums with vpdpwssd, and the float finish runs once per 256-element
 * superblock. The loop structure is gemm_panel.h's.
 *
 * Integer sums per superblock are exact, as in vec_dot; only the order of
 * the float finish differs, so results agree with vec_dot to within the
 * rounding bound the tests derive (sl_dot_scalar_mag), not bit for bit. */
#include <immintrin.h>
#include <string.h>

#include "kern_internal.h"

#define NR 8           /* weight rows per register tile */
#define LANES 16       /* activation rows per panel group (one zmm of int32) */

/* ---- K-quants ---------------------------------------------------------- */

/* One weight row's superblock, unpacked: isum = sum_j sc[j] * (q . a)_j,
 * msum = sum over sub-blocks of mn * bsum, dot = da*(d*isum - dm*msum). */
typedef struct {
    int32_t sc[16];          /* per sub-block scale (8 or 16 used) */
    int32_t mn[8];           /* min / offset pairs as int16 (lo: sub-block 2p, hi: 2p+1);
                                32-element sub-blocks (q4_K, q5_K) use 4 pairs */
    float d, dm;
} kq_meta;

/* One superblock of 16 activation rows. */
typedef struct {
    int8_t qs[64][64];       /* [k-step][lane][4 bytes] */
    int32_t bs[8][16];       /* bsums pairs (group 2p | 2p+1 << 16) per lane */
    int32_t bs32[4][16];     /* the same over 32-element sub-blocks (q4_K, q5_K) */
    int32_t osum[16];        /* 127 * sum of the superblock (q3_K's weight offset) */
    float d[16];
} kq_act;

/* Weights as u8 = q + off; sum (q + off) a = dot + off * sum(a), and the
 * panel carries off * sum(a) per block and lane. */
typedef struct {
    int8_t qs[8][64];
    int32_t osum[16];
    float d[16];
} lg_act;

#include "gemm_x86.h"

/* The type's part of packing one superblock of one activation row (the
 * transposition itself is panel_pack in gemm_panel.h). */
static void kq_extra(const void *vy, void *vp, int lane, int arg)
{
    kq_act *g = vp;
    (void)arg;
    x86_kq_extra(vy, g, lane);
    g->osum[lane] = 127 * sl_q8k_sum(vy);
}

/* q4_K/q5_K 6-bit scales and mins of the 8 sub-blocks, unpacked 4 at a time
 * in general registers; mins go out as the pairs (m_j, m_j) of 32 bits that
 * meet the activation's 32-element sums bs32[j] (one vpdpwssd per 2 groups). */
static inline void k4_meta(const uint8_t *s12, kq_meta *m)
{
    uint32_t sc[2], mn[2];
    sl_q4k_scales8(s12, sc, mn);
    __m128i s8 = _mm_cvtsi64_si128((long long)(((uint64_t)sc[1] << 32) | sc[0]));
    __m128i m8 = _mm_cvtsi64_si128((long long)(((uint64_t)mn[1] << 32) | mn[0]));
    st(m->sc, _mm256_cvtepu8_epi32(s8));
    /* (m_2p, m_2p+1) word pairs for the 32-element activation sums */
    _mm_storeu_si128((__m128i *)m->mn, _mm_cvtepu8_epi16(m8));
}

/* q6_K: q + 32 (0..63) as u8; the offset 32 * sc goes through the block sums */
static inline void unp_q6_k(const void *vx, uint8_t *q, kq_meta *m)
{
    const sl_block_q6_k *x = vx;
    x86_q6k_values(x, q);
    __m128i s8 = _mm_loadu_si128((const __m128i *)x->scales);
    _mm512_storeu_si512(m->sc, _mm512_cvtepi8_epi32(s8));
    st(m->mn, _mm256_slli_epi16(_mm256_cvtepi8_epi16(s8), 5));     /* 32 * sc as word pairs */
    m->d = m->dm = f16s(x->d);
}

/* q3_K: (q - 4) * sc lies in [-124, 128], so with an offset of 127 the
 * scaled weight fits in u8 ([3, 255]) and needs no per-sub-block multiply;
 * the panel's osum (127 * sum of the activations) takes the offset back. */
static inline void unp_q3_k(const void *vx, uint8_t *q, kq_meta *m)
{
    const sl_block_q3_k *x = vx;
    uint32_t w[4];
    sl_q3k_words(x->scales, w);
    __m128i s8 = _mm_sub_epi8(_mm_set_epi32((int)w[3], (int)w[2], (int)w[1], (int)w[0]), _mm_set1_epi8(32));
    __m512i scw = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(s8));     /* words 0..15: sc */
    const __m512i hi1 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(1), 1);
    const __m512i o127 = _mm512_set1_epi16(127);
    const __m256i four = _mm256_set1_epi8(4);
    __m256i hm = ld(x->hmask);
    for (int h = 0; h < 2; h++) {
        __m256i v = ld(x->qs + 32 * h);
        for (int k = 0; k < 4; k++) {
            __m256i lo = crumbs(v, k);
            __mmask32 hb = _mm256_test_epi8_mask(hm, _mm256_set1_epi8((char)(1 << (4 * h + k))));
            __m256i qv = _mm256_mask_sub_epi8(lo, (__mmask32)~hb, lo, four);   /* q - 4 */
            /* words 0..15 get sub-block 8h+2k's scale, 16..31 the next one's */
            __m512i sc = _mm512_permutexvar_epi16(_mm512_add_epi16(_mm512_set1_epi16((short)(8 * h + 2 * k)), hi1), scw);
            __m512i p = _mm512_add_epi16(_mm512_mullo_epi16(_mm512_cvtepi8_epi16(qv), sc), o127);
            st(q + 128 * h + 32 * k, _mm512_cvtusepi16_epi8(p));
        }
    }
    m->d = f16s(x->d);
    m->dm = 0.0f;
}

/* q2_K: q * sc (0..45) fits in u8, so the scale is folded into the weights
 * with a per-128-bit-lane table lookup (each lane is one 16-element group). */
static inline void unp_q2_k(const void *vx, uint8_t *q, kq_meta *m)
{
    const sl_block_q2_k *x = vx;
    __m128i s8 = _mm_loadu_si128((const __m128i *)x->scales);
    /* dword s = bytes 0, sc, 2sc, 3sc of sub-block s: no carries, 3 * 15 < 256 */
    __m512i lut16 = _mm512_mullo_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(s8, _mm_set1_epi8(15))),
                                       _mm512_set1_epi32(0x03020100));
    /* all 64 bytes at once: 128-bit lane l of shift k holds sub-block
     * 2k + (l & 1) + 8 (l >> 1), elements 32k + 16 (l & 1) + 128 (l >> 1) */
    __m512i v = _mm512_loadu_si512(x->qs);
    const __m512i m3 = _mm512_set1_epi8(3);
    const __m512i lane_sb = _mm512_set_epi32(9, 9, 9, 9, 8, 8, 8, 8, 1, 1, 1, 1, 0, 0, 0, 0);
    for (int k = 0; k < 4; k++) {
        __m512i lut = _mm512_permutexvar_epi32(_mm512_add_epi32(lane_sb, _mm512_set1_epi32(2 * k)), lut16);
        __m512i w = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 2 * k), m3));
        st(q + 32 * k, _mm512_castsi512_si256(w));
        st(q + 128 + 32 * k, _mm512_extracti64x4_epi64(w, 1));
    }
    st(m->mn, _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s8, 4), _mm_set1_epi8(15))));
    m->d = f16s(x->d);
    m->dm = f16s(x->dmin);
}

/* The float accumulators of a tile, [NR][16 lanes]: zero on the first chunk. */
static inline __attribute__((always_inline)) void facc_load(__m512 facc[NR], const float *acc, int first)
{
    _Pragma("GCC unroll 8")
    for (int r = 0; r < NR; r++)
        facc[r] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + 16 * r);
}

static inline __attribute__((always_inline)) void facc_store(const __m512 facc[NR], float *acc)
{
    _Pragma("GCC unroll 8")
    for (int r = 0; r < NR; r++) _mm512_storeu_ps(acc + 16 * r, facc[r]);
}

/* part[r] = the vpdpbusd sum over k-steps s0..s0+n-1 of weight row r's dword
 * (rows rstride bytes apart in wq) against the 16 activation lanes of step s. */
static inline __attribute__((always_inline)) void
dp_run(__m512i part[NR], const uint8_t *wq, int rstride, const int8_t (*qs)[64], int s0, int n)
{
    _Pragma("GCC unroll 8")
    for (int r = 0; r < NR; r++) part[r] = _mm512_setzero_si512();
    _Pragma("GCC unroll 8")
    for (int s = s0; s < s0 + n; s++) {
        __m512i av = _mm512_loadu_si512(qs[s]);
        _Pragma("GCC unroll 8")
        for (int r = 0; r < NR; r++) {
            int32_t w;
            memcpy(&w, wq + rstride * r + 4 * s, 4);
            part[r] = _mm512_dpbusd_epi32(part[r], _mm512_set1_epi32(w), av);
        }
    }
}

/* NR rows x 16 activation rows over nbc superblocks. wq: [nbc][NR][256],
 * wm: [nbc][NR]; A: nbc consecutive panel superblocks; acc: [NR][16] floats.
 * SUBK = k-steps (4 bytes each) per scaled sub-block (64: none); MINS = 0, or
 * 4 / 8 min pairs against bs32 / bs; OFF: take back the panel's osum. */
static inline __attribute__((always_inline)) void
kq_tile(const int SUBK, const int MINS, const int OFF, const uint8_t *wq, const kq_meta *wm,
        int nbc, const kq_act *A, float *acc, int first)
{
    __m512 facc[NR];
    facc_load(facc, acc, first);
    for (int b = 0; b < nbc; b++, wq += NR * 256, wm += NR) {
        const kq_act *a = A + b;
        __m512i isum[NR];
        /* runs of RUN k-steps into fresh partial sums, then scaled (or, with
         * no sub-block scale, just added) into isum: accumulating 64 steps
         * straight into isum made gcc 12 copy every accumulator each step */
        const int RUN = SUBK == 64 ? 8 : SUBK;
        for (int j = 0; j < 64 / RUN; j++) {
            __m512i part[NR];
            dp_run(part, wq, 256, a->qs, j * RUN, RUN);
            _Pragma("GCC unroll 8")
            for (int r = 0; r < NR; r++) {
                __m512i t = SUBK == 64 ? part[r] : _mm512_mullo_epi32(part[r], _mm512_set1_epi32(wm[r].sc[j]));
                isum[r] = j ? _mm512_add_epi32(isum[r], t) : t;
            }
        }
        __m512 da = _mm512_loadu_ps(a->d);
        __m512i os = OFF ? _mm512_loadu_si512(a->osum) : _mm512_setzero_si512();
        _Pragma("GCC unroll 8")
        for (int r = 0; r < NR; r++) {
            if (OFF) isum[r] = _mm512_sub_epi32(isum[r], os);
            __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(isum[r]), _mm512_set1_ps(wm[r].d));
            if (MINS) {
                __m512i ms = _mm512_setzero_si512();
                _Pragma("GCC unroll 8")
                for (int p = 0; p < MINS; p++)
                    ms = _mm512_dpwssd_epi32(ms, _mm512_loadu_si512(MINS == 4 ? a->bs32[p] : a->bs[p]),
                                             _mm512_set1_epi32(wm[r].mn[p]));
                t = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ms), _mm512_set1_ps(wm[r].dm), t);
            }
            facc[r] = _mm512_fmadd_ps(t, da, facc[r]);
        }
    }
    facc_store(facc, acc);
}

/* kq_tile's SUBK, MINS, OFF per type (lg_tile takes none). */
#define KQ_TILE_q4_k 8, 4, 0,
#define KQ_TILE_q5_k 8, 4, 0,
#define KQ_TILE_q6_k 4, 8, 0,
#define KQ_TILE_q3_k 64, 0, 1,
#define KQ_TILE_q2_k 64, 8, 0,
#define LG_TILE_q8_0
#define LG_TILE_q4_0
#define LG_TILE_q5_0

/* ---- 32-element block types (q8_0, q4_0, q5_0 with q8_0 activations) --- */

#define LG_OFF_Q8_0 128    /* u8 weight = q + off */
#define LG_OFF_Q4_0 8
#define LG_OFF_Q5_0 16

static void unp_q8_0(const void *vx, uint8_t *q, float *d)
{
    const sl_block_q8_0 *x = vx;
    st(q, _mm256_xor_si256(ld(x->qs), _mm256_set1_epi8((char)0x80)));
    *d = f16s(x->d);
}

/* NR rows x 16 activation rows over nbc blocks; wq: [nbc][NR][32], wd: [nbc][NR]. */
static inline __attribute__((always_inline)) void
lg_tile(const uint8_t *wq, const float *wd, int nbc, const lg_act *A, float *acc, int first)
{
    __m512 facc[NR];
    facc_load(facc, acc, first);
    for (int b = 0; b < nbc; b++, wq += NR * 32, wd += NR) {
        const lg_act *a = A + b;
        __m512i part[NR];
        dp_run(part, wq, 32, a->qs, 0, 8);
        __m512i os = _mm512_loadu_si512(a->osum);
        __m512 da = _mm512_loadu_ps(a->d);
        _Pragma("GCC unroll 8")
        for (int r = 0; r < NR; r++) {
            __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(part[r], os));
            facc[r] = _mm512_fmadd_ps(f, _mm512_mul_ps(da, _mm512_set1_ps(wd[r])), facc[r]);
        }
    }
    facc_store(facc, acc);
}

#define PANEL_PREFETCH(p) _mm_prefetch((p), _MM_HINT_T1)
#include "gemm_panel.h"

void sl_gemm_fill_avx512vnni(sl_kern *k) { panel_fill(k); }
