/* The driver shared by the per-ISA panel GEMMs (gemm_avx512vnni.c,
 * gemm_dotprod.c): row split into blocks of ROW_BLOCK rows, a K chunk of
 * each NR-row tile unpacked once into private scratch and swept against every
 * LANES-row group of the activation panel, the next tile's weights
 * prefetched meanwhile, accumulators kept per tile and group until the last
 * chunk, then written out transposed into Y[act][row].
 *
 * The includer defines before inclusion: NR, LANES; the types kq_meta,
 * kq_act (one superblock of one group), lg_act (one 32-element block of one
 * group), both starting with their qs[k-step][lane][4] bytes; unp_<type>();
 * the always-inline tiles kq_tile(...) and lg_tile(...) and, per type, the
 * compile-time arguments they take first, as KQ_TILE_q4_k .. KQ_TILE_q2_k
 * and LG_TILE_q8_0 / q4_0 / q5_0 (each ending in a comma, or empty), and
 * LG_TILE_mxfp4 with unp_mxfp4 and LG_OFF_MXFP4 where the level has one;
 * kq_extra() and lg_extra() (the type's part of packing one block of one
 * activation row) with LG_OFF_Q8_0/Q4_0/Q5_0 passed to lg_extra;
 * PANEL_PREFETCH(p); PANEL_NO_Q8_0 leaves q8_0 out. It defines the sl_panel
 * objects pn_<type> and panel_fill(), which installs them. */
#ifndef SL_GEMM_PANEL_H
#define SL_GEMM_PANEL_H

#include <stddef.h>
#include <string.h>

#include "kern_internal.h"

#ifndef KQ_CH
#define KQ_CH 8        /* K chunk for K-quants, in 256-element superblocks */
#endif
#ifndef LG_CH
#define LG_CH 64       /* K chunk for 32-element block types, in blocks */
#endif
#ifndef ROW_BLOCK
#define ROW_BLOCK 64   /* rows per sweep over one K chunk of the panel */
#endif
#ifndef PF_TILES
#define PF_TILES 2     /* weights are prefetched this many tiles ahead */
#endif

typedef void (*kq_unp_fn)(const void *x, uint8_t *q, kq_meta *m);
typedef void (*kq_tile_fn)(const uint8_t *wq, const kq_meta *wm, int nbc, const kq_act *A,
                           float *acc, int first);
typedef void (*lg_unp_fn)(const void *x, uint8_t *q, float *d);
typedef void (*lg_tile_fn)(const uint8_t *wq, const float *wd, int nbc, const lg_act *A,
                           float *acc, int first);

typedef struct {
    int kquant;              /* 1: 256-element superblocks, else 32-element blocks */
    size_t xbs;              /* weight block bytes */
    kq_unp_fn kq_unp;
    kq_tile_fn kq_tile;
    lg_unp_fn lg_unp;
    lg_tile_fn lg_tile;
} panel_type;

/* Per-thread scratch: one chunk of NR unpacked rows + the row block's accumulators. */
static inline size_t wbuf_bytes(const panel_type *t)
{
    return t->kquant ? (size_t)KQ_CH * NR * (256 + sizeof(kq_meta))
                     : (size_t)LG_CH * NR * (32 + sizeof(float));
}

/* Unpacks rows [r0, r0 + nr) of superblocks / blocks [b0, b0 + nbc) into
 * wbuf: values [b][NR][vals], then meta [b][NR] (kq_meta or float d); rows
 * past nr are zero. */
static inline __attribute__((always_inline)) void
unpack_chunk(const panel_type *t, const char *W, size_t wrb, int64_t r0, int nr,
             int64_t b0, int nbc, void *wbuf)
{
    const size_t vals = t->kquant ? 256 : 32, msz = t->kquant ? sizeof(kq_meta) : sizeof(float);
    uint8_t *wq = wbuf;
    char *wm = (char *)wq + (size_t)nbc * NR * vals;
    if (nr < NR) {
        memset(wq, 0, (size_t)nbc * NR * vals);
        memset(wm, 0, (size_t)nbc * NR * msz);
    }
    for (int r = 0; r < nr; r++) {
        const char *x = W + (size_t)(r0 + r) * wrb + (size_t)b0 * t->xbs;
        for (int b = 0; b < nbc; b++) {
            size_t o = (size_t)b * NR + (size_t)r;
            if (t->kquant)
                t->kq_unp(x + (size_t)b * t->xbs, wq + o * 256, (kq_meta *)wm + o);
            else
                t->lg_unp(x + (size_t)b * t->xbs, wq + o * 32, (float *)wm + o);
        }
    }
}

static inline __attribute__((always_inline)) void
run_rows(const panel_type *t, const char *W, size_t wrb, int64_t r0, int64_t r1,
                     int64_t nb, const void *panel, int64_t n_act, float *Y, int64_t ldy,
                     void *scratch)
{
    int64_t groups = (n_act + LANES - 1) / LANES;
    int64_t ch = t->kquant ? KQ_CH : LG_CH;
    size_t gbytes = (size_t)nb * (t->kquant ? sizeof(kq_act) : sizeof(lg_act));  /* one group */
    uint8_t *wbuf = scratch;
    float *acc = (float *)(wbuf + wbuf_bytes(t));       /* [tile][group][NR][16] */
    for (int64_t rb0 = r0; rb0 < r1; rb0 += ROW_BLOCK) {
        int64_t rb1 = rb0 + ROW_BLOCK < r1 ? rb0 + ROW_BLOCK : r1;
        for (int64_t b0 = 0; b0 < nb; b0 += ch) {
            int nbc = (int)(nb - b0 < ch ? nb - b0 : ch);
            for (int64_t tr = rb0; tr < rb1; tr += NR) {
                int nr = (int)(rb1 - tr < NR ? rb1 - tr : NR);
                unpack_chunk(t, W, wrb, tr, nr, b0, nbc, wbuf);
                /* the next tile's weights come from DRAM: fetch them into L2
                 * while this tile computes (spread over its groups so the
                 * miss queue never fills) instead of stalling in unpack */
                int64_t nt = tr, nbn = b0, nrb0 = rb0, nrb1 = rb1;
                for (int step = 0; step < PF_TILES; step++) {
                    if (nt + NR < nrb1) nt += NR;
                    else if (nbn + ch < nb) { nt = nrb0; nbn += ch; }
                    else { nrb0 = nt = nrb1; nbn = 0; nrb1 = nrb0 + ROW_BLOCK < r1 ? nrb0 + ROW_BLOCK : r1; }
                }
                int64_t pf_rows = nt < r1 ? (nt + NR < r1 ? NR : r1 - nt) : 0;
                size_t pf_len = (size_t)(nb - nbn < ch ? nb - nbn : ch) * t->xbs;
                float *tacc = acc + (size_t)((tr - rb0) / NR) * (size_t)groups * NR * LANES;
                for (int64_t g = 0; g < groups; g++) {
                    for (int64_t r = pf_rows * g / groups; r < pf_rows * (g + 1) / groups; r++) {
                        const char *x = W + (size_t)(nt + r) * wrb + (size_t)nbn * t->xbs;
                        for (size_t o = 0; o < pf_len; o += 64) PANEL_PREFETCH(x + o);
                    }
                    const char *gp = (const char *)panel + (size_t)g * gbytes;
                    float *ga = tacc + (size_t)g * NR * LANES;
                    if (t->kquant)
                        t->kq_tile(wbuf, (const kq_meta *)(wbuf + (size_t)nbc * NR * 256), nbc,
                                   (const kq_act *)gp + b0, ga, b0 == 0);
                    else
                        t->lg_tile(wbuf, (const float *)(wbuf + (size_t)nbc * NR * 32), nbc,
                                (const lg_act *)gp + b0, ga, b0 == 0);
                }
            }
        }
        for (int64_t tr = rb0; tr < rb1; tr += NR) {
            int nr = (int)(rb1 - tr < NR ? rb1 - tr : NR);
            const float *tacc = acc + (size_t)((tr - rb0) / NR) * (size_t)groups * NR * LANES;
            for (int64_t n = 0; n < n_act; n++) {
                const float *src = tacc + (size_t)(n / LANES) * NR * LANES + n % LANES;
                for (int r = 0; r < nr; r++) Y[n * ldy + tr + r] = src[r * LANES];
            }
        }
    }
}

/* Per type: its tile (the includer's kq_tile / lg_tile with the type's
 * compile-time arguments), its panel_type and its sl_panel run(). */
#define KQ_PANEL(T, XB)                                                                     \
static void tile_##T(const uint8_t *wq, const kq_meta *wm, int nbc, const kq_act *A,        \
                     float *acc, int first)                                                 \
{ kq_tile(KQ_TILE_##T wq, wm, nbc, A, acc, first); }                                        \
static const panel_type pt_##T = { 1, sizeof(XB), unp_##T, tile_##T, NULL, NULL };         \
static void run_##T(const void *W, size_t wrb, int64_t r0, int64_t r1, int64_t cols,        \
                    const void *panel, int64_t n_act, float *Y, int64_t ldy, void *scratch) \
{ run_rows(&pt_##T, W, wrb, r0, r1, cols / 256, panel, n_act, Y, ldy, scratch); }
#define LG_PANEL(T, XB)                                                                     \
static void tile_##T(const uint8_t *wq, const float *wd, int nbc, const lg_act *A,          \
                     float *acc, int first)                                                 \
{ lg_tile(LG_TILE_##T wq, wd, nbc, A, acc, first); }                                        \
static const panel_type pt_##T = { 0, sizeof(XB), NULL, NULL, unp_##T, tile_##T };         \
static void run_##T(const void *W, size_t wrb, int64_t r0, int64_t r1, int64_t cols,        \
                    const void *panel, int64_t n_act, float *Y, int64_t ldy, void *scratch) \
{ run_rows(&pt_##T, W, wrb, r0, r1, cols / 32, panel, n_act, Y, ldy, scratch); }

KQ_PANEL(q4_k, sl_block_q4_k)
KQ_PANEL(q5_k, sl_block_q5_k)
KQ_PANEL(q6_k, sl_block_q6_k)
KQ_PANEL(q3_k, sl_block_q3_k)
KQ_PANEL(q2_k, sl_block_q2_k)
#ifndef PANEL_NO_Q8_0
LG_PANEL(q8_0, sl_block_q8_0)
#endif
LG_PANEL(q4_0, sl_block_q4_0)
LG_PANEL(q5_0, sl_block_q5_0)
#ifdef LG_TILE_mxfp4
LG_PANEL(mxfp4, sl_block_mxfp4)
#endif

/* Activation row n goes to lane n % LANES of group n / LANES: its 4-byte
 * k-steps are interleaved with the group's other rows; lanes past n_act
 * stay zero. */
static void panel_pack(const void *act, size_t arb, int64_t n_act, int64_t nb, void *panel,
                       size_t pbs, size_t ybs, size_t qs_off, int nsteps,
                       void (*extra)(const void *y, void *pb, int lane, int arg), int arg)
{
    int64_t groups = (n_act + LANES - 1) / LANES;
    memset(panel, 0, (size_t)(groups * nb) * pbs);
    for (int64_t n = 0; n < n_act; n++) {
        const char *y = (const char *)act + (size_t)n * arb;
        int lane = (int)(n % LANES);
        char *g = (char *)panel + (size_t)(n / LANES) * (size_t)nb * pbs;
        for (int64_t b = 0; b < nb; b++) {
            const char *yb = y + (size_t)b * ybs;
            char *pb = g + (size_t)b * pbs;
            for (int s = 0; s < nsteps; s++)
                memcpy(pb + ((size_t)s * LANES + (size_t)lane) * 4, yb + qs_off + 4 * (size_t)s, 4);
            extra(yb, pb, lane, arg);
        }
    }
}

_Static_assert(offsetof(kq_act, qs) == 0 && sizeof(((kq_act *)0)->qs) == 64 * LANES * 4, "panel qs layout");
_Static_assert(offsetof(lg_act, qs) == 0 && sizeof(((lg_act *)0)->qs) == 8 * LANES * 4, "panel qs layout");

static void kq_pack(const void *act, size_t arb, int64_t n_act, int64_t nb, void *panel)
{
    panel_pack(act, arb, n_act, nb, panel, sizeof(kq_act), sizeof(sl_block_q8_k),
               offsetof(sl_block_q8_k, qs), 64, kq_extra, 0);
}
#define LG_PACK(T, OFF)                                                                     \
static void pack_##T(const void *act, size_t arb, int64_t n_act, int64_t nb, void *panel)   \
{                                                                                           \
    panel_pack(act, arb, n_act, nb, panel, sizeof(lg_act), sizeof(sl_block_q8_0),           \
               offsetof(sl_block_q8_0, qs), 8, lg_extra, OFF);                              \
}
#ifndef PANEL_NO_Q8_0
LG_PACK(q8_0, LG_OFF_Q8_0)
#endif
LG_PACK(q4_0, LG_OFF_Q4_0)
LG_PACK(q5_0, LG_OFF_Q5_0)
#ifdef LG_TILE_mxfp4
LG_PACK(mxfp4, LG_OFF_MXFP4)
#endif

static size_t panel_bytes_kq(int64_t cols, int64_t n_act)
{
    return (size_t)((n_act + LANES - 1) / LANES) * (size_t)(cols / 256) * sizeof(kq_act);
}
static size_t panel_bytes_lg(int64_t cols, int64_t n_act)
{
    return (size_t)((n_act + LANES - 1) / LANES) * (size_t)(cols / 32) * sizeof(lg_act);
}
static size_t scratch_kq(int64_t n_act)
{
    return wbuf_bytes(&pt_q4_k) + (size_t)(ROW_BLOCK / NR) * (size_t)((n_act + LANES - 1) / LANES)
           * NR * LANES * sizeof(float);
}
static size_t scratch_lg(int64_t n_act)
{
    return wbuf_bytes(&pt_q4_0) + (size_t)(ROW_BLOCK / NR) * (size_t)((n_act + LANES - 1) / LANES)
           * NR * LANES * sizeof(float);
}

static const sl_panel pn_q4_k = { panel_bytes_kq, scratch_kq, kq_pack, run_q4_k, 256, 0, 0 };
static const sl_panel pn_q5_k = { panel_bytes_kq, scratch_kq, kq_pack, run_q5_k, 256, 0, 0 };
static const sl_panel pn_q6_k = { panel_bytes_kq, scratch_kq, kq_pack, run_q6_k, 256, 0, 0 };
static const sl_panel pn_q3_k = { panel_bytes_kq, scratch_kq, kq_pack, run_q3_k, 256, 0, 0 };
static const sl_panel pn_q2_k = { panel_bytes_kq, scratch_kq, kq_pack, run_q2_k, 256, 0, 0 };
#ifndef PANEL_NO_Q8_0
static const sl_panel pn_q8_0 = { panel_bytes_lg, scratch_lg, pack_q8_0, run_q8_0, 32, 0, 0 };
#endif
static const sl_panel pn_q4_0 = { panel_bytes_lg, scratch_lg, pack_q4_0, run_q4_0, 32, 0, 0 };
static const sl_panel pn_q5_0 = { panel_bytes_lg, scratch_lg, pack_q5_0, run_q5_0, 32, 0, 0 };
#ifdef LG_TILE_mxfp4
static const sl_panel pn_mxfp4 = { panel_bytes_lg, scratch_lg, pack_mxfp4, run_mxfp4, 32, 0, 0 };
#endif

static void panel_fill(sl_kern *k)
{
    k->panel[SL_GGML_Q4_K] = &pn_q4_k;
    k->panel[SL_GGML_Q5_K] = &pn_q5_k;
    k->panel[SL_GGML_Q6_K] = &pn_q6_k;
    k->panel[SL_GGML_Q3_K] = &pn_q3_k;
    k->panel[SL_GGML_Q2_K] = &pn_q2_k;
#ifndef PANEL_NO_Q8_0
    k->panel[SL_GGML_Q8_0] = &pn_q8_0;
#endif
    k->panel[SL_GGML_Q4_0] = &pn_q4_0;
    k->panel[SL_GGML_Q5_0] = &pn_q5_0;
#ifdef LG_TILE_mxfp4
    k->panel[SL_GGML_MXFP4] = &pn_mxfp4;
#endif
}

#endif
