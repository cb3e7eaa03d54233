/* matvec (decode) and matmul (prefill) on top of the per-level dot kernels,
 * split over the pool by weight-row ranges (each thread streams its own part
 * of W exactly once). Tiles use the level's gemm kernel when it has one
 * (a weight block unpacked once for SL_GEMM_MAX activation rows, or
 * SL_GEMM_WIDE with the few-row tile gemm_wide), or a panel: the prefill
 * one from SL_PANEL_MIN_ACT rows, a few-row one (wpanel) where the level has
 * it for the type and row count. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kern_internal.h"

size_t sl_kern_act_bytes(int wtype, int64_t cols, int64_t n_rows)
{
    if (cols <= 0 || n_rows < 0 || !sl_quant_is_supported(wtype)) return 0;
    int vdt = sl_quant_vec_dot_type(wtype);
    size_t rb = sl_gguf_row_bytes(vdt, cols);
    if (rb == 0 || (n_rows > 0 && rb > SIZE_MAX / (size_t)n_rows)) return 0;
    return rb * (size_t)n_rows;
}

void sl_kern_quantize_act(const sl_kern *k, int wtype, const float *x, int64_t cols,
                          int64_t n_rows, void *act)
{
    size_t rb = sl_kern_act_bytes(wtype, cols, 1);
    if (rb == 0) return;
    int vdt = sl_quant_vec_dot_type(wtype);
    if (vdt == SL_GGML_Q8_K && k && k->quantize_q8_k) {
        for (int64_t r = 0; r < n_rows; r++) k->quantize_q8_k(x + r * cols, (char *)act + (size_t)r * rb, cols);
        return;
    }
    /* rb != 0: cols is a whole number of vdt blocks, so this cannot fail */
    for (int64_t r = 0; r < n_rows; r++)
        (void)sl_quant_quantize_row(vdt, x + r * cols, (char *)act + (size_t)r * rb, cols);
}

struct mm_job {
    const sl_kern *k;
    int wtype;
    const char *W;
    size_t wrb, arb;           /* weight / activation row bytes */
    int64_t rows, cols, n_act, ldy;
    const char *act;
    float *Y;
    _Atomic int64_t *next;     /* few-row path: next row block to take */
    _Atomic uint64_t *nextb;   /* decode: next byte of W to take */
};

/* Every path takes rows [r0, r1) in chunks from a shared counter instead of
 * fixed shares: a vCPU that runs slower (a busy SMT sibling on a shared
 * host: 1.3x here; a host that steals a vCPU for a while) would leave the
 * other waiting at the end of each op. Which thread computes a row does not
 * change its result. false: no rows left. */
static bool take_rows(_Atomic int64_t *next, int64_t chunk, int64_t rows, int64_t *r0, int64_t *r1)
{
    *r0 = atomic_fetch_add_explicit(next, chunk, memory_order_relaxed);
    if (*r0 >= rows) return false;
    *r1 = *r0 + chunk < rows ? *r0 + chunk : rows;
    return true;
}

/* Decode of rows [r0, r1): one linear pass (the pattern the hardware
 * prefetchers follow best), the rows requested ahead by software prefetches
 * into L2 (locality 2, prefetcht1: a long row in L1 evicted the activation
 * it is dotted with; NEON keeps L1, not measured). Where the level has a
 * prefetching vec_dot, each row's dot requests the next row, a few lines
 * per block (only a take's first row is one burst); elsewhere, and for rows
 * up to k->mv_burst_max bytes, each row is one burst just before its dot.
 * Bursts stall the core: 126-184 lines at once for an 8B's ffn_down row
 * (kbench 4096x14336 q4_K/q6_K 64-70% of the read rate with bursts, 88-94%
 * spread, Zen 4), and on Zen 5 even the 36-54 lines of a 4096-column row
 * (kbench 14336x4096 q4_K 86-91% -> 100%, q6_K 75-76% -> 100%; 8B resident
 * decode, 4 alternated rounds, medians 9.42 -> 10.21 tok/s). 4096-column rows
 * have also measured worse spread on Zen 4 (overlapping ranges in a noisy
 * VM), hence the knob (SLUICE_MV_BURST, dispatch.c). */
#if defined(__x86_64__)
#define MV_PF_LOCALITY 2
#else
#define MV_PF_LOCALITY 3
#endif
static void mv_rows(const sl_kern *k, int wtype, int64_t cols, const char *W, size_t wrb,
                    int64_t r0, int64_t r1, const void *act, float *y)
{
    sl_vec_dot_fn dot = k->vec_dot[wtype];
    sl_vec_dot_pf_fn dpf = k->vec_dot_pf[wtype];
    const char *w = W + (size_t)r0 * wrb, *end = W + (size_t)r1 * wrb;
    const char *pf = w;
    if (dpf && wrb > k->mv_burst_max) {
        for (const char *e = w + wrb; pf < e; pf += 64) __builtin_prefetch(pf, 0, MV_PF_LOCALITY);
        for (int64_t r = r0; r < r1; r++, w += wrb) {
            const char *next = r + 1 < r1 ? w + 2 * wrb : end;
            size_t n = next > pf ? (size_t)(next - pf) : 0;
            dpf(cols, y + r, w, act, pf, n);
            pf += n;
        }
        return;
    }
    for (int64_t r = r0; r < r1; r++, w += wrb) {
        for (const char *e = w + wrb; pf < e && pf < end; pf += 64) __builtin_prefetch(pf, 0, MV_PF_LOCALITY);
        dot(cols, y + r, w, act);
    }
}

/* Decode takes guided chunks: a share of what is left (1/(2 nth)), so the
 * last takes are short and the threads finish together; at least `unit`
 * bytes (a long linear run for the prefetchers; the atomic is noise). */
static bool take_bytes(_Atomic uint64_t *next, uint64_t total, uint64_t unit, int nth,
                       uint64_t *b0, uint64_t *b1)
{
    uint64_t cur = atomic_load_explicit(next, memory_order_relaxed);
    for (;;) {
        if (cur >= total) return false;
        uint64_t c = (total - cur) / (2u * (uint64_t)nth);
        c = c < unit ? unit : c;
        uint64_t end = total - cur > c ? cur + c : total;
        if (atomic_compare_exchange_weak_explicit(next, &cur, end, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *b0 = cur; *b1 = end;
            return true;
        }
    }
}

#define MV_UNIT (32u << 10)

static void mm_worker(void *ctx, int ith, int nth)
{
    const struct mm_job *j = ctx;
    sl_gemm_fn g = j->k->gemm[j->wtype];
    sl_vec_dot_fn dot = j->k->vec_dot[j->wtype];
    int64_t r0, r1;
    if (j->n_act == 1) {
        (void)ith;
        /* in rows: a take of b bytes is the rows starting in it */
        uint64_t b0, b1, total = (uint64_t)j->rows * j->wrb;
        while (take_bytes(j->nextb, total, MV_UNIT, nth, &b0, &b1)) {
            r0 = (int64_t)((b0 + j->wrb - 1) / j->wrb);
            r1 = (int64_t)((b1 + j->wrb - 1) / j->wrb);
            if (r0 < r1) mv_rows(j->k, j->wtype, j->cols, j->W, j->wrb, r0, r1, j->act, j->Y);
        }
        return;
    }
    /* Few rows: a block of weight rows (~128 KiB, stays in L2) is swept
     * once per tile of activation rows (SL_GEMM_WIDE with a few-row tile,
     * else SL_GEMM_MAX; the tile stays in L1); within a tile each weight
     * block is loaded and unpacked once. Every weight byte still comes from
     * memory exactly once. */
#ifndef SL_MM_BLOCK_BYTES
#define SL_MM_BLOCK_BYTES (128u << 10)
#endif
    int tn = SL_GEMM_MAX;
    if (j->k->gemm_wide[j->wtype]) { g = j->k->gemm_wide[j->wtype]; tn = SL_GEMM_WIDE; }
    int64_t rb = (int64_t)(SL_MM_BLOCK_BYTES / j->wrb);
    rb = rb < 4 ? 4 : rb / 4 * 4;
    int64_t b0, b1;
    while (take_rows(j->next, rb, j->rows, &b0, &b1))
        for (int64_t i = 0; i < j->n_act; i += tn) {
            int ny = j->n_act - i < tn ? (int)(j->n_act - i) : tn;
            const char *a = j->act + (size_t)i * j->arb;
            for (int64_t r = b0; r < b1; r++) {
                const char *w = j->W + (size_t)r * j->wrb;
                float *y = j->Y + i * j->ldy + r;
                /* the first tile reads W from memory: ask for the next row
                 * while this one computes (the tile's compute per byte is
                 * too high for the hardware prefetcher to stay ahead) */
                if (i == 0 && r + 1 < b1)
                    for (size_t o = 0; o < j->wrb; o += 64) __builtin_prefetch(w + j->wrb + o, 0, 3);
                if (g) {
                    g(j->cols, w, j->wrb, 1, a, j->arb, ny, y, j->ldy);
                } else {
                    for (int yi = 0; yi < ny; yi++)
                        dot(j->cols, y + yi * j->ldy, w, a + (size_t)yi * j->arb);
                }
            }
        }
}

/* ---- several matvecs in one job, split by bytes ------------------------- */

struct mv_multi_job {
    const sl_kern *k;
    const sl_mv_part *parts;
    size_t wrb[SL_MV_MAX_PARTS];         /* bytes of a unit: a row, or a rows8 group */
    int ur[SL_MV_MAX_PARTS];             /* rows of a unit: 1 or 8 */
    uint64_t off[SL_MV_MAX_PARTS + 1];   /* byte offset of each part in the whole */
    int n;
    _Atomic uint64_t next;               /* next byte of the whole to take */
};

/* First row of part i at or after the whole's byte b: rows split at the
 * same b for neighbouring threads, so every row is computed exactly once. */
static int64_t part_row(const struct mv_multi_job *j, int i, uint64_t b)
{
    if (b <= j->off[i]) return 0;
    if (b >= j->off[i + 1]) return j->parts[i].rows;
    return (int64_t)((b - j->off[i] + j->wrb[i] - 1) / j->wrb[i]) * j->ur[i];
}

static void mv_multi_worker(void *ctx, int ith, int nth)
{
    struct mv_multi_job *j = ctx;
    (void)ith;
    uint64_t b0, b1;
    while (take_bytes(&j->next, j->off[j->n], MV_UNIT, nth, &b0, &b1)) {
        for (int i = 0; i < j->n; i++) {
            int64_t r0 = part_row(j, i, b0), r1 = part_row(j, i, b1);
            const sl_mv_part *pt = &j->parts[i];
            if (r0 >= r1) continue;
            if (j->ur[i] == 8)
                j->k->rows8[sl_quant_base_type(pt->wtype)](pt->cols, pt->W, r0 / 8, r1 / 8, pt->act, 0, 1, pt->y,
                                                           pt->rows);
            else
                mv_rows(j->k, pt->wtype, pt->cols, pt->W, j->wrb[i], r0, r1, pt->act, pt->y);
        }
    }
}

/* ---- panel GEMM (prefill on levels with sl_kern.panel) ------------------ */

/* Scratch for the activation panel and per-thread tiles, kept per calling
 * thread and grown on demand, so prefill does not allocate per call; freed
 * when that thread exits. */
struct scratch { void *p; size_t n; };
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_ok;

static void scratch_free(void *v)
{
    struct scratch *s = v;
    free(s->p);
    free(s);
}

static void scratch_init(void) { scratch_ok = pthread_key_create(&scratch_key, scratch_free) == 0; }

static void *scratch_get(size_t n)
{
    pthread_once(&scratch_once, scratch_init);
    if (!scratch_ok) return NULL;
    struct scratch *s = pthread_getspecific(scratch_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s) return NULL;
        if (pthread_setspecific(scratch_key, s) != 0) { free(s); return NULL; }
    }
    if (s->n < n) {
        free(s->p);
        s->p = aligned_alloc(64, n);
        s->n = s->p ? n : 0;
    }
    return s->p;
}

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

struct pn_job {
    const sl_panel *pn;
    const char *W;
    size_t wrb;
    int64_t rows, cols, n_act, ldy;
    const void *panel;
    char *scratch;           /* thread ith at ith * per */
    size_t per;
    float *Y;
    int64_t chunk;           /* rows per take (a multiple of 8) */
    _Atomic int64_t *next;   /* next row to take */
};

static void pn_worker(void *ctx, int ith, int nth)
{
    const struct pn_job *j = ctx;
    (void)nth;
    int64_t r0, r1;
    while (take_rows(j->next, j->chunk, j->rows, &r0, &r1))
        j->pn->run(j->W, j->wrb, r0, r1, j->cols, j->panel, j->n_act, j->Y, j->ldy,
                   j->scratch + (size_t)ith * j->per);
}

/* The panel matmul runs for n_act rows of wtype: the prefill one from
 * SL_PANEL_MIN_ACT rows, below that the few-row one where the level has it
 * for this row count; NULL: the tiles. */
static const sl_panel *pick_panel(const sl_kern *k, int wtype, int64_t n_act)
{
    if (n_act >= SL_PANEL_MIN_ACT) return k->panel[wtype];
    const sl_panel *pn = k->wpanel[wtype];
    return pn && n_act >= pn->min_act && n_act <= pn->max_act ? pn : NULL;
}

size_t sl_kern_matmul_scratch_bound(const sl_kern *k, int64_t cols, int64_t n_act, int n_threads)
{
    size_t best = 0;
    if (!k || cols <= 0 || n_act < 2 || n_threads < 1) return 0;
    for (int t = 0; t < SL_GGML_TYPE_COUNT; t++) {
        const sl_panel *pn = pick_panel(k, t, n_act);
        if (!pn) continue;
        int64_t c = (cols + pn->block - 1) / pn->block * pn->block;
        size_t b = up64(pn->panel_bytes(c, n_act)) + (size_t)n_threads * up64(pn->scratch_bytes(n_act));
        if (b > best) best = b;
    }
    return best;
}

/* 0: done; 1: not taken (no panel kernel for this row count, or no memory).
 * From SL_PANEL_MIN_ACT rows the prefill panel (it computes 16 activation
 * rows at a time: at 8 rows it only matched the per-pair tiles, q4_K, 1
 * thread; from 12 it won by 1.5x+), below that the few-row panel. */
static int panel_matmul(const sl_kern *k, sl_pool *p, int wtype, const void *W, int64_t rows,
                        int64_t cols, const void *act, int64_t n_act, float *Y, int64_t ldy)
{
    const sl_panel *pn = pick_panel(k, wtype, n_act);
    if (!pn) return 1;    /* cols: a block multiple (check) */
    int nth = sl_pool_n_threads(p);
    size_t pb = up64(pn->panel_bytes(cols, n_act)), per = up64(pn->scratch_bytes(n_act));
    char *mem = scratch_get(pb + (size_t)nth * per);
    if (!mem) return 1;
    size_t arb = sl_kern_act_bytes(wtype, cols, 1);
    pn->pack(act, arb, n_act, cols / pn->block, mem);
    /* ~16 chunks per thread: small enough to even out a slower thread,
     * large enough that a chunk's panel sweep dwarfs the atomic */
    int64_t chunk = (rows / (16 * (int64_t)nth) + 7) / 8 * 8;
    _Atomic int64_t next = 0;
    struct pn_job j = {
        .pn = pn, .W = W, .wrb = sl_gguf_row_bytes(wtype, cols), .rows = rows, .cols = cols,
        .n_act = n_act, .ldy = ldy, .panel = mem, .scratch = mem + pb, .per = per, .Y = Y,
        .chunk = chunk < 8 ? 8 : chunk, .next = &next,
    };
    if (nth > 1 && rows >= 16) sl_pool_run(p, pn_worker, &j);
    else pn_worker(&j, 0, 1);
    return 0;
}

/* ---- rows8 matrices (type | SL_GGML_ROWS8): groups of 8 rows ------------ */

struct r8_job {
    sl_rows8_fn fn;
    const char *W, *act;
    size_t gb, arb;            /* group / activation row bytes */
    int64_t groups, cols, n_act, ldy;
    float *Y;
    _Atomic int64_t *next;     /* few rows: next group to take */
    _Atomic uint64_t *nextb;   /* decode: next byte of W to take */
};

/* Decode takes bytes like mm_worker (the groups starting in them); more
 * rows take ~SL_MM_BLOCK_BYTES of groups, swept once per SL_ROWS8_NY rows. */
static void r8_worker(void *ctx, int ith, int nth)
{
    const struct r8_job *j = ctx;
    (void)ith;
    if (j->n_act == 1) {
        uint64_t b0, b1, total = (uint64_t)j->groups * j->gb;
        while (take_bytes(j->nextb, total, MV_UNIT, nth, &b0, &b1)) {
            int64_t g0 = (int64_t)((b0 + j->gb - 1) / j->gb), g1 = (int64_t)((b1 + j->gb - 1) / j->gb);
            if (g0 < g1) j->fn(j->cols, j->W, g0, g1, j->act, j->arb, 1, j->Y, j->ldy);
        }
        return;
    }
    int64_t chunk = (int64_t)(SL_MM_BLOCK_BYTES / j->gb), g0, g1;
    while (take_rows(j->next, chunk < 1 ? 1 : chunk, j->groups, &g0, &g1))
        for (int64_t i = 0; i < j->n_act; i += SL_ROWS8_NY) {
            int ny = j->n_act - i < SL_ROWS8_NY ? (int)(j->n_act - i) : SL_ROWS8_NY;
            j->fn(j->cols, j->W, g0, g1, j->act + (size_t)i * j->arb, j->arb, ny, j->Y + i * j->ldy, j->ldy);
        }
}

static int rows8_matmul(const sl_kern *k, sl_pool *p, int wtype, const void *W, int64_t rows, int64_t cols,
                        const void *act, int64_t n_act, float *Y, int64_t ldy)
{
    int t = sl_quant_base_type(wtype);
    _Atomic int64_t next = 0;
    _Atomic uint64_t nextb = 0;
    struct r8_job j = {
        .fn = k->rows8[t], .W = W, .act = act, .gb = 8 * sl_gguf_row_bytes(t, cols),
        .arb = sl_kern_act_bytes(wtype, cols, 1), .groups = rows / 8, .cols = cols, .n_act = n_act,
        .ldy = ldy, .Y = Y, .next = &next, .nextb = &nextb,
    };
    if (sl_pool_n_threads(p) > 1 && j.groups > 1) sl_pool_run(p, r8_worker, &j);
    else r8_worker(&j, 0, 1);
    return 0;
}

static bool is_rows8(int wtype) { return wtype > 0 && (wtype & (int)SL_GGML_ROWS8); }

static int check(const sl_kern *k, int wtype, const void *W, int64_t rows, int64_t cols,
                 const void *act, const void *y)
{
    if (!k || !W || !act || !y || rows < 0 || cols <= 0) return -EINVAL;
    if (is_rows8(wtype)) {
        int t = sl_quant_base_type(wtype);
        if (t >= SL_GGML_TYPE_COUNT || !k->rows8[t] || rows % 8) return -EINVAL;
        return sl_gguf_row_bytes(t, cols) && sl_kern_act_bytes(wtype, cols, 1) ? 0 : -EINVAL;
    }
    if (wtype < 0 || wtype >= SL_GGML_TYPE_COUNT || !k->vec_dot[wtype]) return -EINVAL;
    if (sl_gguf_row_bytes(wtype, cols) == 0 || sl_kern_act_bytes(wtype, cols, 1) == 0)
        return -EINVAL;                      /* cols not a multiple of the block */
    return 0;
}

int sl_kern_matvec(const sl_kern *k, sl_pool *p, int wtype, const void *W, int64_t rows,
                   int64_t cols, const void *act, float *y)
{
    return sl_kern_matmul(k, p, wtype, W, rows, cols, act, 1, y, rows);
}

int sl_kern_matmul(const sl_kern *k, sl_pool *p, int wtype, const void *W, int64_t rows,
                   int64_t cols, const void *act, int64_t n_act, float *Y, int64_t ldy)
{
    int rc = check(k, wtype, W, rows, cols, act, Y);
    if (rc) return rc;
    if (n_act < 0 || (n_act > 1 && ldy < rows)) return -EINVAL;
    if (rows == 0 || n_act == 0) return 0;
    if (is_rows8(wtype)) return rows8_matmul(k, p, wtype, W, rows, cols, act, n_act, Y, ldy);
    if (n_act > 1 && panel_matmul(k, p, wtype, W, rows, cols, act, n_act, Y, ldy) == 0) return 0;
    _Atomic int64_t next = 0;
    _Atomic uint64_t nextb = 0;
    struct mm_job j = {
        .k = k, .wtype = wtype, .W = W, .wrb = sl_gguf_row_bytes(wtype, cols),
        .arb = sl_kern_act_bytes(wtype, cols, 1), .rows = rows, .cols = cols,
        .n_act = n_act, .ldy = ldy, .act = act, .Y = Y, .next = &next, .nextb = &nextb,
    };
    int nth = sl_pool_n_threads(p);
    if (nth > 1 && rows >= 8) sl_pool_run(p, mm_worker, &j);
    else mm_worker(&j, 0, 1);
    return 0;
}

int sl_kern_matvec_multi(const sl_kern *k, sl_pool *p, const sl_mv_part *parts, int n_parts)
{
    if (!parts || n_parts < 1 || n_parts > SL_MV_MAX_PARTS) return -EINVAL;
    struct mv_multi_job j = { .k = k, .parts = parts, .n = n_parts };
    for (int i = 0; i < n_parts; i++) {
        const sl_mv_part *pt = &parts[i];
        int rc = check(k, pt->wtype, pt->W, pt->rows, pt->cols, pt->act, pt->y);
        if (rc) return rc;
        j.ur[i] = is_rows8(pt->wtype) ? 8 : 1;
        j.wrb[i] = (size_t)j.ur[i] * sl_gguf_row_bytes(sl_quant_base_type(pt->wtype), pt->cols);
        j.off[i + 1] = j.off[i] + (uint64_t)(pt->rows / j.ur[i]) * j.wrb[i];
    }
    int nth = sl_pool_n_threads(p);
    if (nth > 1 && j.off[n_parts] > 0) sl_pool_run(p, mv_multi_worker, &j);
    else mv_multi_worker(&j, 0, 1);
    return 0;
}
