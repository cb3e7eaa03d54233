/* Few-row panel of the avx512vnni level for q4_K and q6_K (batched
 * decode, speculative verification: 3..9 activation rows), bit for bit
 * vec_dot's.
 *
 * The gemm_wide tiles pair each unpacked weight block with each row exactly
 * as vec_dot does: per pair 4 vpdpbusd, 2 packs, 2 vpdpwssd, a fold, the
 * min terms and the float finish. Here the rows are transposed once per
 * call into quads: a zmm holds 4 rows x the 4 integer partials vec_dot keeps
 * per block (its partial j sums the elements with (e mod 32) / 8 = j; q4_K
 * and q6_K share that layout). A 128-bit weight pattern (one dword of each
 * partial) in every 128-bit lane then feeds 4 rows per vpdpbusd, and one
 * vpdpwssd per 64 (q4_K) or 32 (q6_K) elements applies the sub-block
 * scales: ~5-6 integer multiply ops per (weight block, row) pair instead of
 * 7, and none of the tile's packs, folds and shuffles.
 *
 * Why the bits stay vec_dot's: the integer partials are the same exact
 * sums (any order), converted the same way, multiplied by the same product
 * d_x * d_y and added with one FMA per block into the same lane of the
 * same accumulator; the type's reduction (DEF_RED's, the same for both)
 * finishes each row. */
#include <immintrin.h>
#include <string.h>

#include "dot_x86_vnni.h"

#define WQ 3           /* row quads per panel: up to 12 rows */

/* One superblock of up to WQ quads of activation rows (lane 4r + c of a
 * quad vector belongs to row 4q + r). */
typedef struct {
    int8_t qs[8][2][WQ][64];  /* [32-element span m][u][q]: lane 4r + j = qs[32m + 8j + 4u ..+3] */
    float yd[WQ][16];         /* lane 4r + c: d of the row */
    int32_t s4[WQ][16];       /* q4_K min sums, lane 4r + l (l = 2h + t): (S[4h+t], S[4h+t+2]),
                                 S[k] the sum over 32-element sub-block k */
    int32_t s6[2][WQ][16];    /* q6_K: (b[8h+2t], b[8h+2t+1]) and (b[8h+2t+4], b[8h+2t+5]),
                                 b the 16-element block sums */
} wp_blk;
_Static_assert(sizeof(wp_blk) % 64 == 0, "quad vectors stay 64-byte aligned");

static size_t wp_panel_bytes(int64_t cols, int64_t n_act)
{
    (void)n_act;
    return (size_t)(cols / SL_QKK) * sizeof(wp_blk);
}

static size_t wp_scratch_bytes(int64_t n_act)
{
    (void)n_act;
    return 0;
}

static void wp_pack(const void *act, size_t arb, int64_t n_act, int64_t nb, void *panel)
{
    wp_blk *P = panel;
    memset(P, 0, (size_t)nb * sizeof *P);      /* rows past n_act: d = 0, sums 0 */
    for (int64_t i = 0; i < n_act; i++) {
        const sl_block_q8_k *y = (const sl_block_q8_k *)((const char *)act + (size_t)i * arb);
        int q = (int)(i / 4), r = (int)(i % 4);
        for (int64_t b = 0; b < nb; b++) {
            const sl_block_q8_k *yb = y + b;
            wp_blk *p = P + b;
            for (int m = 0; m < 8; m++)
                for (int u = 0; u < 2; u++)
                    for (int j = 0; j < 4; j++)
                        memcpy(&p->qs[m][u][q][16 * r + 4 * j], yb->qs + 32 * m + 8 * j + 4 * u, 4);
            const int16_t *bs = yb->bsums;
            for (int l = 0; l < 4; l++) {
                int h = l >> 1, t = l & 1, k = 4 * h + t;
                p->yd[q][4 * r + l] = yb->d;
                p->s4[q][4 * r + l] = sl_pair16(bs[2 * k] + bs[2 * k + 1], bs[2 * k + 4] + bs[2 * k + 5]);
                p->s6[0][q][4 * r + l] = sl_pair16(bs[8 * h + 2 * t], bs[8 * h + 2 * t + 1]);
                p->s6[1][q][4 * r + l] = sl_pair16(bs[8 * h + 2 * t + 4], bs[8 * h + 2 * t + 5]);
            }
        }
    }
}

/* One weight superblock in registers: its values in element order (the
 * patterns of span m, u = dwords 2j + u of the span in every 128-bit lane,
 * are one vpermd each: wp_pat), the scale word pairs (sc[2k], sc[2k+1]) of
 * span pairs, the min word pairs of the min terms, d and -dmin. */
typedef struct { __m512i z[4], sw[8], mw, mw2; float d, ndm; } wp_w;   /* q4_K: sw[0..3], no mw2 */

/* vpermd indices of pattern (m & 1, u): dword 8 (m & 1) + 2j + u of z[m / 2] */
static const int32_t wp_pidx[2][2][16] __attribute__((aligned(64))) = {
    {{0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6}, {1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7}},
    {{8, 10, 12, 14, 8, 10, 12, 14, 8, 10, 12, 14, 8, 10, 12, 14},
     {9, 11, 13, 15, 9, 11, 13, 15, 9, 11, 13, 15, 9, 11, 13, 15}},
};

/* Low words of a's dwords | low words of b's above them (both fit int16). */
static inline __m512i wp_words(__m512i a, __m512i b)
{
    return _mm512_mask_blend_epi16(0xaaaaaaaau, a, _mm512_slli_epi32(b, 16));
}

static inline __m512i wp_pat(const wp_w *w, int m, int u)
{
    return _mm512_permutexvar_epi32(_mm512_load_si512(wp_pidx[m & 1][u]), w->z[m >> 1]);
}

static inline __attribute__((always_inline)) void wp_prep_q4_k(const sl_block_q4_k *x, wp_w *o)
{
    u_q4_k u;                 /* its values (element order); the rest is dead and dropped */
    unp_q4_k(x, &u);
    UNROLL for (int p = 0; p < 4; p++) o->z[p] = u.z.q[p];
    uint32_t sc[2], mn[2];
    sl_q4k_scales8(x->scales, sc, mn);
    __m512i s16 = _mm512_cvtepu8_epi16(_mm256_castsi128_si256(
        _mm_cvtsi64_si128((long long)(((uint64_t)sc[1] << 32) | sc[0]))));
    __m512i m16 = _mm512_cvtepu8_epi16(_mm256_castsi128_si256(
        _mm_cvtsi64_si128((long long)(((uint64_t)mn[1] << 32) | mn[0]))));
    /* spans 2k, 2k + 1 share a vpdpwssd: word pair (sc[2k], sc[2k+1]) */
    UNROLL for (int k = 0; k < 4; k++)
        o->sw[k] = _mm512_permutexvar_epi16(_mm512_set1_epi32(2 * k | (2 * k + 1) << 16), s16);
    /* lane l = 2h + t: (m[4h+t], m[4h+t+2]) */
    const __m512i midx = _mm512_set_epi16(7, 5, 6, 4, 3, 1, 2, 0, 7, 5, 6, 4, 3, 1, 2, 0,
                                          7, 5, 6, 4, 3, 1, 2, 0, 7, 5, 6, 4, 3, 1, 2, 0);
    o->mw = _mm512_permutexvar_epi16(midx, m16);
    o->d = f16s(x->d);
    o->ndm = -f16s(x->dmin);
}

/* q6_K: q + 32 (0..63) in element order (dot_x86_vnni.h's unpack); span m's
 * scale words: lanes j = 0, 1 take sub-block 2m, j = 2, 3 sub-block 2m + 1,
 * in both words (u = 0 | u = 1 share it); min terms 32 sc b as q4_K's mins. */
static inline __attribute__((always_inline)) void wp_prep_q6_k(const sl_block_q6_k *x, wp_w *o)
{
    u_q6_k u;
    unp_q6_k(x, &u);
    UNROLL for (int p = 0; p < 4; p++) o->z[p] = u.z.q[p];
    __m512i s16 = _mm512_castsi256_si512(u.sc16);
    const __m512i sidx = _mm512_set_epi16(1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0,
                                          1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0);
    UNROLL for (int m = 0; m < 8; m++)
        o->sw[m] = _mm512_permutexvar_epi16(_mm512_add_epi16(sidx, _mm512_set1_epi16((short)(2 * m))), s16);
    /* lane l = 2h + t: (sc[8h+2t], sc[8h+2t+1]) and (sc[8h+2t+4], sc[8h+2t+5]) */
    const __m512i aidx = _mm512_set_epi16(11, 10, 9, 8, 3, 2, 1, 0, 11, 10, 9, 8, 3, 2, 1, 0,
                                          11, 10, 9, 8, 3, 2, 1, 0, 11, 10, 9, 8, 3, 2, 1, 0);
    o->mw = _mm512_permutexvar_epi16(aidx, s16);
    o->mw2 = _mm512_permutexvar_epi16(_mm512_add_epi16(aidx, _mm512_set1_epi16(4)), s16);
    float d = f16s(x->d);
    o->d = d;
    o->ndm = -(32.0f * d);
}

/* Final lanes of one row in vec_dot's accumulator order:
 * (P0, P1, M00, M01, P2, P3, M10, M11); red_T() of that is the dot. */
static inline __m256 wp_row_acc(const float *fp, const float *fm)
{
    return _mm256_setr_ps(fp[0], fp[1], fm[0], fm[1], fp[2], fp[3], fm[2], fm[3]);
}

/* Superblocks [b0, b1) of one weight row against NQ quads of the panel,
 * into the row's float accumulators acc (fp then fm, [2][WQ][16]; zero on
 * the row's first chunk). A span's 8-element groups give 8 products per
 * lane (<= 8 * 15 * 128 < 2^15), so both u patterns share one vpdpbusd
 * chain; spans 2k and 2k + 1 then go in as one word pair against their two
 * 6-bit scales (one vpdpwssd per 64 elements). Min terms: S[k] m[k] +
 * S[k+2] m[k+2] per lane. Blocks are added in order, so chunking a row
 * keeps vec_dot's order. */
static inline __attribute__((always_inline)) void
wp_chunk(const int Q6, const int NQ, const void *x, int64_t b0, int64_t b1, const wp_blk *P, float *acc, int first)
{
    __m512 fp[WQ], fm[WQ];
    UNROLL for (int q = 0; q < NQ; q++) {
        fp[q] = first ? _mm512_setzero_ps() : _mm512_load_ps(acc + 16 * q);
        fm[q] = first ? _mm512_setzero_ps() : _mm512_load_ps(acc + 16 * (WQ + q));
    }
    const __m512i zero = _mm512_setzero_si512();
    for (int64_t b = b0; b < b1; b++) {
        {   /* one weight superblock */
            wp_w wv, *w = &wv;
            if (Q6) wp_prep_q6_k((const sl_block_q6_k *)x + b, w);
            else wp_prep_q4_k((const sl_block_q4_k *)x + b, w);
            const wp_blk *pb = P + b;
            __m512i ps[WQ][2], lo[WQ];
            UNROLL for (int q = 0; q < NQ; q++) ps[q][0] = ps[q][1] = zero;
            UNROLL for (int m = 0; m < 8; m++) {
                __m512i w0 = wp_pat(w, m, 0), w1 = wp_pat(w, m, 1);
                UNROLL for (int q = 0; q < NQ; q++) {
                    __m512i a = _mm512_dpbusd_epi32(zero, w0, _mm512_load_si512(pb->qs[m][0][q]));
                    if (Q6) {   /* 4 products of <= 63 * 128 per lane: u = 0 | u = 1 as one word pair */
                        __m512i c = _mm512_dpbusd_epi32(zero, w1, _mm512_load_si512(pb->qs[m][1][q]));
                        ps[q][m & 1] = _mm512_dpwssd_epi32(ps[q][m & 1], wp_words(a, c), w->sw[m]);
                        continue;
                    }
                    a = _mm512_dpbusd_epi32(a, w1, _mm512_load_si512(pb->qs[m][1][q]));
                    /* span 2k | span 2k + 1 as one word pair */
                    if (m & 1) ps[q][(m >> 1) & 1] = _mm512_dpwssd_epi32(ps[q][(m >> 1) & 1], wp_words(lo[q], a), w->sw[m >> 1]);
                    else lo[q] = a;
                }
            }
            __m512 d = _mm512_set1_ps(w->d), ndm = _mm512_set1_ps(w->ndm);
            UNROLL for (int q = 0; q < NQ; q++) {
                __m512i ms = Q6 ? _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(zero, _mm512_load_si512(pb->s6[0][q]), w->mw),
                                                      _mm512_load_si512(pb->s6[1][q]), w->mw2)
                                : _mm512_dpwssd_epi32(zero, _mm512_load_si512(pb->s4[q]), w->mw);
                __m512 yd = _mm512_load_ps(pb->yd[q]);
                fp[q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(ps[q][0], ps[q][1])),
                                        _mm512_mul_ps(d, yd), fp[q]);
                fm[q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ms), _mm512_mul_ps(ndm, yd), fm[q]);
            }
        }
    }
    UNROLL for (int q = 0; q < NQ; q++) {
        _mm512_store_ps(acc + 16 * q, fp[q]);
        _mm512_store_ps(acc + 16 * (WQ + q), fm[q]);
    }
}

/* A row's accumulators to its n dots, in vec_dot's lane order:
 * (P0, P1, M00, M01, P2, P3, M10, M11) per row, then the reduction
 * (red_q4_k; red_q6_k is the same DEF_RED). */
static void wp_finish(const float *acc, int64_t n, float *Y, int64_t ldy)
{
    for (int64_t i = 0; i < n; i++) {
        const float *a = acc + 16 * (i / 4) + 4 * (i % 4), *c = acc + 16 * (WQ + i / 4) + 4 * (i % 4);
        acc_t t = { wp_row_acc(a, c), _mm256_setzero_ps(), 0.0f };
        Y[i * ldy] = red_q4_k(&t);
    }
}

/* Rows [r0, r1) against the whole panel, WP_RB weight rows at a time over
 * K chunks of WP_KC superblocks, so the chunk of the panel they sweep stays
 * in L1 (a whole 14336-column panel is 129 KiB: swept once per row from L2
 * it held the down projections to ~10 GB/s) and three quads fit too. Each
 * chunk prefetches the same chunk of the next row block. */
#define WP_RB 4
#define WP_KC 4
static inline __attribute__((always_inline)) void
wp_run(const int Q6, const void *W, size_t wrb, int64_t r0, int64_t r1, int64_t cols, const void *panel,
       int64_t n_act, float *Y, int64_t ldy)
{
    int64_t nb = cols / SL_QKK;
    const size_t bb = Q6 ? sizeof(sl_block_q6_k) : sizeof(sl_block_q4_k);
    float acc[WP_RB][2 * WQ * 16] __attribute__((aligned(64)));
    for (int64_t rb = r0; rb < r1; rb += WP_RB) {
        int nr = r1 - rb < WP_RB ? (int)(r1 - rb) : WP_RB;
        for (int64_t b0 = 0; b0 < nb; b0 += WP_KC) {
            int64_t b1 = nb - b0 < WP_KC ? nb : b0 + WP_KC;
            for (int i = 0; i < nr; i++) {
                const char *w = (const char *)W + (size_t)(rb + i) * wrb;
                if (rb + WP_RB + i < r1)
                    for (size_t o = (size_t)b0 * bb; o < (size_t)b1 * bb; o += 64)
                        __builtin_prefetch(w + (size_t)WP_RB * wrb + o, 0, 3);
                if (n_act <= 4) wp_chunk(Q6, 1, w, b0, b1, panel, acc[i], b0 == 0);
                else if (n_act <= 8) wp_chunk(Q6, 2, w, b0, b1, panel, acc[i], b0 == 0);
                else wp_chunk(Q6, 3, w, b0, b1, panel, acc[i], b0 == 0);
            }
        }
        for (int i = 0; i < nr; i++) wp_finish(acc[i], n_act, Y + rb + i, ldy);
    }
}

static void wp_run_q4_k(const void *W, size_t wrb, int64_t r0, int64_t r1, int64_t cols,
                        const void *panel, int64_t n_act, float *Y, int64_t ldy, void *scratch)
{
    (void)scratch;
    wp_run(0, W, wrb, r0, r1, cols, panel, n_act, Y, ldy);
}

static void wp_run_q6_k(const void *W, size_t wrb, int64_t r0, int64_t r1, int64_t cols,
                        const void *panel, int64_t n_act, float *Y, int64_t ldy, void *scratch)
{
    (void)scratch;
    wp_run(1, W, wrb, r0, r1, cols, panel, n_act, Y, ldy);
}

/* Rows 3..9 (kbench -n, 2 threads, from RAM, against the 8-row tiles: see
 * the few-row panel results of 2026-11-25 in perf/results); 2 rows lost to the tiles.
 * q6_K in L2 only matches its tile; from RAM it wins once the panel chunk
 * stays in L1 (8 rows 1.4-1.5x). */
static const sl_panel wp_q4_k = { wp_panel_bytes, wp_scratch_bytes, wp_pack, wp_run_q4_k, SL_QKK, 3,
                                  SL_PANEL_MIN_ACT - 1 };

static const sl_panel wp_q6_k = { wp_panel_bytes, wp_scratch_bytes, wp_pack, wp_run_q6_k, SL_QKK, 3,
                                  SL_PANEL_MIN_ACT - 1 };

void sl_wide_fill_avx512vnni(sl_kern *k)
{
    k->wpanel[SL_GGML_Q4_K] = &wp_q4_k;
    k->wpanel[SL_GGML_Q6_K] = &wp_q6_k;
}
