/* kbench: kernel throughput against this machine's memory bandwidth, in one run.
 *   1. streaming read bandwidth over a buffer far larger than the caches
 *      (1 and N threads);
 *   2. matvec GB/s of weight bytes per weight type on ROWSxCOLS matrices,
 *      cycling through enough of them that the total is >> L3, as a fraction
 *      of the N-thread read bandwidth;
 *   3. matmul of a 64-row batch: GFLOP/s and activation rows/s vs matvec.
 * All figures are medians of several repetitions; each repetition measures
 * the read bandwidth, the matvec and the matmul back to back, and the two
 * ratios ('% bw', 'mm/mv') are medians of the per-repetition ratios.
 * With -c, instead: the same kernels on a 256x4096 matrix that stays in L2,
 * best of the repetitions (compute throughput without the memory system, the
 * stable way to compare kernel changes on a shared machine; with -t 1 timed
 * in thread CPU time).
 * With -n 1,2,4,8,...: instead, few-row matmuls (batched decode, speculative
 * verification): activation rows/s of matmul with each row count through the
 * same cycled matrices as the matvec, each repetition timing the matvec and
 * every row count back to back (alternated); 'x mv' is the median of the
 * per-repetition ratios mm rows/s / mv rows/s (n = the ideal: the weights
 * cost one pass whatever the rows; with -c in L2, best of the repetitions;
 * with -t 1 timed in thread CPU time).
 * Usage: kbench [-t threads] [-r reps] [-m MiB of weights per type] [-b MiB buffer]
 *               [-T type,type,...] [-c] [-n rows,rows,...] [-s ROWSxCOLS]
 *               (SLUICE_ISA picks the kernel level; "mxfp4/r8" is MXFP4 in the
 *               rows8 layout resident mode packs its matrices in). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "../kernels/kernels.h"
#include "../gguf/base/sl_platform.h"   /* sl_buf_alloc: 2 MiB pages, as the engine's weights */

/* the matvec shape: 14336 x 4096 (an 8B's ffn_gate/up) unless -s ROWSxCOLS */
static int ROWS = 14336, COLS = 4096;
#define BATCH 64

/* A type runs when its kernel exists and its blocks tile a row (-s COLS may be
 * a multiple of 32 only, as gpt-oss's 2880: the 256-element types sit out). */
static int runs(const sl_kern *k, int t)
{
    int b = sl_quant_base_type(t);
    return (b == t ? k->vec_dot[b] != NULL : k->rows8[b] != NULL && ROWS % 8 == 0) &&
           COLS % sl_gguf_block_elems(b) == 0;
}

/* "mxfp4/r8", "iq4_nl/r8", "q8_0/r8", "iq4_xs/r8": a type in the rows8 layout (packed after filling; quant.h) */
#define R8 (int)SL_GGML_ROWS8
static const char *tname(int t)
{
    static char buf[4][24];
    static int at;
    if (!(t & R8)) return sl_gguf_type_name(t);
    char *b = buf[at++ % 4];
    snprintf(b, sizeof buf[0], "%s/r8", sl_gguf_type_name(sl_quant_base_type(t)));
    return b;
}
static size_t row_bytes(int t, int64_t n) { return sl_gguf_row_bytes(sl_quant_base_type(t), n); }

/* -n with one thread times the calling thread's CPU time instead: on a
 * shared machine, time spent descheduled does not count. */
static clockid_t clk = CLOCK_MONOTONIC;

static double now(void)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- read bandwidth ------------------------------------------------------ */
struct rd { const uint8_t *buf; size_t len; uint64_t sink[64]; };

static void rd_fn(void *ctx, int ith, int nth)
{
    struct rd *r = ctx;
    size_t chunk = (r->len / (size_t)nth) & ~(size_t)63;
    const uint8_t *p = r->buf + chunk * (size_t)ith;
#if defined(__x86_64__)
    __m128i a0 = _mm_setzero_si128(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < chunk; i += 64) {
        a0 = _mm_xor_si128(a0, _mm_load_si128((const __m128i *)(p + i)));
        a1 = _mm_xor_si128(a1, _mm_load_si128((const __m128i *)(p + i + 16)));
        a2 = _mm_xor_si128(a2, _mm_load_si128((const __m128i *)(p + i + 32)));
        a3 = _mm_xor_si128(a3, _mm_load_si128((const __m128i *)(p + i + 48)));
    }
    a0 = _mm_xor_si128(_mm_xor_si128(a0, a1), _mm_xor_si128(a2, a3));
    r->sink[ith] = (uint64_t)_mm_cvtsi128_si64(a0);
#else
    const uint64_t *q = (const uint64_t *)p;
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (size_t i = 0; i < chunk / 8; i += 8) {
        a0 ^= q[i] ^ q[i + 4]; a1 ^= q[i + 1] ^ q[i + 5];
        a2 ^= q[i + 2] ^ q[i + 6]; a3 ^= q[i + 3] ^ q[i + 7];
    }
    r->sink[ith] = a0 ^ a1 ^ a2 ^ a3;
#endif
}

/* Median streaming-read GB/s over buf with the pool's threads. */
static double read_bw(sl_pool *p, const uint8_t *buf, size_t len, int reps)
{
    int nth = sl_pool_n_threads(p);
    struct rd r = {.buf = buf, .len = len};
    double t[32];
    sl_pool_run(p, rd_fn, &r);                           /* warm-up */
    for (int k = 0; k < reps; k++) {
        double t0 = now();
        sl_pool_run(p, rd_fn, &r);
        t[k] = now() - t0;
    }
    return (double)(len / (size_t)nth * (size_t)nth) / median(t, reps) / 1e9;
}

/* ---- weights ------------------------------------------------------------ */
static void put_f16(uint8_t *p, float v) { sl_f16 h = sl_f32_to_f16(v); memcpy(p, &h, 2); }

static void fill_plain(int t, uint8_t *w, size_t bytes, uint64_t *seed);

/* Random rows of t; a rows8 type's are filled plain (COLS-element rows), then packed. */
static void fill_weights(int t, uint8_t *w, size_t bytes, uint64_t *seed)
{
    fill_plain(sl_quant_base_type(t), w, bytes, seed);
    if (t & R8) {
        size_t rb = row_bytes(t, COLS);
        (void)sl_quant_rows8_pack(sl_quant_base_type(t), w, (int64_t)(bytes / rb / 8 * 8), COLS);
    }
}

static void fill_plain(int t, uint8_t *w, size_t bytes, uint64_t *seed)
{
    for (size_t i = 0; i + 8 <= bytes; i += 8) { uint64_t v = rng(seed); memcpy(w + i, &v, 8); }
    if (t == SL_GGML_F32) {
        for (size_t i = 0; i < bytes / 4; i++) ((float *)w)[i] = (float)(int)(rng(seed) % 2001 - 1000) * 1e-3f;
        return;
    }
    if (t == SL_GGML_F16 || t == SL_GGML_BF16) {
        for (size_t i = 0; i < bytes / 2; i++) {
            float v = (float)(int)(rng(seed) % 2001 - 1000) * 1e-3f;
            if (t == SL_GGML_F16) put_f16(w + 2 * i, v);
            else { sl_bf16 b = sl_f32_to_bf16(v); memcpy(w + 2 * i, &b, 2); }
        }
        return;
    }
    int off[2] = {-1, -1};                     /* the f16 scale fields: keep them sane */
    switch (t) {
    case SL_GGML_Q4_0: case SL_GGML_Q5_0: case SL_GGML_Q8_0: off[0] = 0; break;
    case SL_GGML_Q4_1: case SL_GGML_Q5_1: case SL_GGML_Q4_K: case SL_GGML_Q5_K: off[0] = 0; off[1] = 2; break;
    case SL_GGML_Q2_K: off[0] = 80; off[1] = 82; break;
    case SL_GGML_Q3_K: off[0] = 108; break;
    case SL_GGML_Q6_K: off[0] = 208; break;
    case SL_GGML_IQ4_NL: case SL_GGML_IQ4_XS: off[0] = 0; break;
    case SL_GGML_TQ1_0: off[0] = 52; break;
    case SL_GGML_TQ2_0: off[0] = 64; break;
    case SL_GGML_IQ2_XXS: case SL_GGML_IQ2_XS: case SL_GGML_IQ2_S: case SL_GGML_IQ3_XXS:
    case SL_GGML_IQ3_S: case SL_GGML_IQ1_S: off[0] = 0; break;
    }
    size_t bb = (size_t)sl_gguf_block_bytes(t);
    if (t == SL_GGML_IQ1_M)                    /* d = 0.01 (0x211f) in the scales' top nibbles */
        for (size_t b = 0; b < bytes / bb; b++)
            for (int k = 0; k < 4; k++)
                w[b * bb + 49 + 2 * k] = (uint8_t)((w[b * bb + 49 + 2 * k] & 0x0f) | ((0x211f >> (4 * k)) & 15) << 4);
    for (size_t b = 0; b < bytes / bb; b++)
        for (int k = 0; k < 2; k++)
            if (off[k] >= 0) put_f16(w + b * bb + (size_t)off[k], 0.01f);
    if (t == SL_GGML_MXFP4)                    /* E8M0 scale byte: 2^-8 */
        for (size_t b = 0; b < bytes / bb; b++) w[b * bb] = 120;
}

/* -c: matvec and 64-row matmul on a matrix small enough to stay in L2. */
/* rows of the in-cache matrix: 256 x 4096 elements (q4_K 576 KiB) whatever COLS is */
#define CROWS (256 * 4096 / COLS > 8 ? 256 * 4096 / COLS / 8 * 8 : 8)   /* whole rows8 groups */
static int in_cache(const sl_kern *k, sl_pool *pool, const int *types, int ntypes, int reps,
                    const float *xf, float *Y)
{
    uint64_t seed = 7;
    int nth = sl_pool_n_threads(pool);
    if (nth == 1) clk = CLOCK_THREAD_CPUTIME_ID;   /* as -n: descheduled time does not count */
    printf("in cache: %dx%d matrix (stays in L2), matmul batch %d, %s time\n", CROWS, COLS, BATCH,
           clk == CLOCK_MONOTONIC ? "wall" : "thread CPU");
    printf("%-8s %9s %11s | %10s %9s\n", "type", "mv GB/s", "ns/block/th", "mm GMAC/s", "mm/mv");
    for (int ti = 0; ti < ntypes; ti++) {
        int t = types[ti];
        if (!runs(k, t)) continue;
        size_t mb = row_bytes(t, COLS) * CROWS;
        uint8_t *W = malloc(mb);
        void *act = malloc(sl_kern_act_bytes(t, COLS, BATCH));
        if (!W || !act) { fprintf(stderr, "kbench: out of memory\n"); return 1; }
        fill_weights(t, W, mb, &seed);
        sl_kern_quantize_act(k, t, xf, COLS, BATCH, act);
        int inner = 200;
        double bmv = 1e30, bmm = 1e30;
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            for (int i = 0; i < inner; i++) sl_kern_matvec(k, pool, t, W, CROWS, COLS, act, Y);
            double tv = (now() - t0) / inner;
            t0 = now();
            for (int i = 0; i < inner / 20; i++) sl_kern_matmul(k, pool, t, W, CROWS, COLS, act, BATCH, Y, CROWS);
            double tm = (now() - t0) / (inner / 20);
            if (tv < bmv) bmv = tv;
            if (tm < bmm) bmm = tm;
        }
        double blocks = (double)CROWS * COLS / sl_gguf_block_elems(sl_quant_base_type(t));
        printf("%-8s %9.2f %11.2f | %10.1f %8.2fx\n", tname(t), (double)mb / bmv / 1e9,
               bmv * 1e9 * nth / blocks, (double)CROWS * COLS * BATCH / bmm / 1e9, BATCH * bmv / bmm);
        fflush(stdout);
        free(W);
        free(act);
    }
    return 0;
}

/* -n: few-row matmuls against the matvec, per type; weights cycled through
 * nmat matrices (>> L3) or, with -c, one CROWS-row matrix in L2. */
#define MAXN 32
static int few_rows(const sl_kern *k, sl_pool *pool, const int *types, int ntypes, int reps,
                    const int *ns, int nn, size_t wmib, int in_l2, const float *xf, float *Y)
{
    uint64_t seed = 11;
    int64_t rows = in_l2 ? CROWS : ROWS;
    if (sl_pool_n_threads(pool) == 1) clk = CLOCK_THREAD_CPUTIME_ID;
    printf("few-row matmul, %lldx%d matrix %s; %s of %d reps; %s time\n",
           (long long)rows, COLS, in_l2 ? "(stays in L2)" : "(weights cycled, from RAM)",
           in_l2 ? "best" : "medians", reps, clk == CLOCK_MONOTONIC ? "wall" : "thread CPU");
    printf("%-8s %10s", "type", "mv rows/s");
    for (int i = 0; i < nn; i++) printf(" | n=%-2d rows/s  x mv", ns[i]);
    printf("\n");
    for (int ti = 0; ti < ntypes; ti++) {
        int t = types[ti];
        if (!runs(k, t)) continue;
        size_t mb = row_bytes(t, COLS) * (size_t)rows;
        int nmat = in_l2 ? 1 : (int)(((wmib << 20) + mb - 1) / mb);
        if (nmat < 1) nmat = 1;
        int inner = in_l2 ? 50 : 1;
        size_t wml;
        void *wmap;
        uint8_t *W = sl_buf_alloc(mb * (size_t)nmat, &wml, &wmap);
        void *act = malloc(sl_kern_act_bytes(t, COLS, MAXN));
        if (!W || !act) { fprintf(stderr, "kbench: out of memory\n"); return 1; }
        fill_weights(t, W, mb * (size_t)nmat, &seed);
        sl_kern_quantize_act(k, t, xf, COLS, MAXN, act);
        double tv[32], tn[MAXN][32], rat[MAXN][32];
        for (int m = 0; m < nmat; m++) sl_kern_matvec(k, pool, t, W + m * mb, rows, COLS, act, Y);
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            for (int it = 0; it < inner; it++)
                for (int m = 0; m < nmat; m++) sl_kern_matvec(k, pool, t, W + m * mb, rows, COLS, act, Y);
            tv[r] = (now() - t0) / (nmat * inner);
            for (int i = 0; i < nn; i++) {
                t0 = now();
                for (int it = 0; it < inner; it++)
                    for (int m = 0; m < nmat; m++) {
                        int rc = sl_kern_matmul(k, pool, t, W + m * mb, rows, COLS, act, ns[i], Y, rows);
                        if (rc) { fprintf(stderr, "kbench: matmul %d\n", rc); return 1; }
                    }
                tn[i][r] = (now() - t0) / (nmat * inner);
                rat[i][r] = ((double)ns[i] / tn[i][r]) / (1.0 / tv[r]);
            }
        }
        double best_v = tv[0];
        for (int r = 1; r < reps; r++) if (tv[r] < best_v) best_v = tv[r];
        double mv = in_l2 ? 1.0 / best_v : 1.0 / median(tv, reps);
        printf("%-8s %10.0f", tname(t), (double)rows * mv);
        for (int i = 0; i < nn; i++) {
            double tt, ra;
            if (in_l2) {
                tt = tn[i][0];
                for (int r = 1; r < reps; r++) if (tn[i][r] < tt) tt = tn[i][r];
                ra = ((double)ns[i] / tt) / mv;
            } else {
                tt = median(tn[i], reps);
                ra = median(rat[i], reps);
            }
            printf(" | %12.0f %5.2f", (double)rows * ns[i] / tt, ra);
        }
        printf("\n");
        fflush(stdout);
        sl_buf_free(wmap, wml);
        free(act);
    }
    printf("(rows/s counted per weight row: matvec = rows of W per second; 'x mv' ideal = n)\n");
    return 0;
}

static const int all_types[] = {
    SL_GGML_Q2_K, SL_GGML_Q3_K, SL_GGML_Q4_K, SL_GGML_Q5_K, SL_GGML_Q6_K, SL_GGML_Q4_0, SL_GGML_Q4_1,
    SL_GGML_Q5_0, SL_GGML_Q5_1, SL_GGML_Q8_0, SL_GGML_Q8_0 | R8, SL_GGML_F16, SL_GGML_BF16, SL_GGML_F32,
    SL_GGML_IQ4_NL, SL_GGML_IQ4_NL | R8, SL_GGML_IQ4_XS, SL_GGML_IQ4_XS | R8, SL_GGML_MXFP4, SL_GGML_MXFP4 | R8, SL_GGML_TQ1_0, SL_GGML_TQ2_0,
    SL_GGML_IQ2_XXS, SL_GGML_IQ2_XS, SL_GGML_IQ2_S, SL_GGML_IQ3_XXS, SL_GGML_IQ3_S, SL_GGML_IQ1_S, SL_GGML_IQ1_M,
};

static int type_by_name(const char *s)
{
    for (size_t i = 0; i < sizeof all_types / sizeof *all_types; i++)
        if (strcasecmp(s, tname(all_types[i])) == 0) return all_types[i];
    return -1;
}

int main(int argc, char **argv)
{
    int nth = 2, reps = 7, cache_only = 0;
    size_t wmib = 320, bmib = 1024;
    int types[32], ntypes = 0, ns[MAXN], nn = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) nth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-m") && i + 1 < argc) wmib = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "-b") && i + 1 < argc) bmib = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "-c")) cache_only = 1;
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            char *e = NULL;
            long r = strtol(argv[++i], &e, 10), c = e && *e == 'x' ? strtol(e + 1, &e, 10) : 0;
            if (!e || *e || r < 1 || r > (1 << 20) || c < 32 || c > (1 << 20) || c % 32) {
                fprintf(stderr, "kbench: -s ROWSxCOLS, COLS a multiple of 32 (of 256 for the K-quants)\n");
                return 2;
            }
            ROWS = (int)r;
            COLS = (int)c;
        }
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            for (char *tok = strtok(argv[++i], ","); tok && nn < 16; tok = strtok(NULL, ",")) {
                ns[nn] = atoi(tok);
                if (ns[nn] < 1 || ns[nn] > MAXN) { fprintf(stderr, "kbench: -n rows in 1..%d\n", MAXN); return 2; }
                nn++;
            }
        }
        else if (!strcmp(argv[i], "-T") && i + 1 < argc) {
            char *list = argv[++i];
            for (char *tok = strtok(list, ","); tok && ntypes < 32; tok = strtok(NULL, ",")) {
                int t = type_by_name(tok);
                if (t < 0) { fprintf(stderr, "kbench: unknown type %s\n", tok); return 2; }
                types[ntypes++] = t;
            }
        } else {
            fprintf(stderr, "usage: kbench [-t threads] [-r reps] [-m MiB weights/type] "
                            "[-b MiB read buffer] [-T q4_K,q6_K,...] [-c] [-n rows,rows,...] [-s ROWSxCOLS]\n");
            return 2;
        }
    }
    if (nth < 1 || reps < 1 || reps > 31 || wmib < 1 || bmib < 16) { fprintf(stderr, "kbench: bad option\n"); return 2; }
    if (!ntypes) {
        ntypes = (int)(sizeof all_types / sizeof *all_types);
        memcpy(types, all_types, sizeof all_types);
    }
    const sl_kern *k = NULL;
    int rc = sl_kern_best_checked(&k);
    if (rc) { fprintf(stderr, "kbench: SLUICE_ISA: level not available (%d)\n", rc); return 1; }

    printf("kbench: kernels %s, %d threads, %s of %d reps\n", k->name, nth, cache_only ? "best" : "medians", reps);
    size_t blen = bmib << 20;
    size_t bml;
    void *bmap;
    uint8_t *bbuf = sl_buf_alloc(blen, &bml, &bmap);
    sl_pool *pool = NULL, *pool1 = NULL;
    if (!bbuf) { fprintf(stderr, "kbench: out of memory\n"); return 1; }
    for (size_t i = 0; i < blen; i += 8) { uint64_t v = i * 0x9e37ull; memcpy(bbuf + i, &v, 8); }
    if ((rc = sl_pool_create(&pool, nth)) != 0 || (rc = sl_pool_create(&pool1, 1)) != 0) {
        fprintf(stderr, "kbench: pool: %d\n", rc);
        return 1;
    }
    if (nn) {
        uint64_t xs = 42;
        float *x = malloc((size_t)MAXN * COLS * sizeof *x), *y = malloc((size_t)MAXN * ROWS * sizeof *y);
        if (!x || !y) { fprintf(stderr, "kbench: out of memory\n"); return 1; }
        for (size_t i = 0; i < (size_t)MAXN * COLS; i++) x[i] = (float)(int)(rng(&xs) % 2001 - 1000) * 1e-3f;
        rc = few_rows(k, pool, types, ntypes, reps, ns, nn, wmib, cache_only, x, y);
        free(x); free(y); sl_buf_free(bmap, bml);
        sl_pool_destroy(pool);
        sl_pool_destroy(pool1);
        return rc;
    }
    if (cache_only) {
        uint64_t xs = 42;
        float *x = malloc((size_t)BATCH * COLS * sizeof *x), *y = malloc((size_t)BATCH * CROWS * sizeof *y);
        if (!x || !y) { fprintf(stderr, "kbench: out of memory\n"); return 1; }
        for (size_t i = 0; i < (size_t)BATCH * COLS; i++) x[i] = (float)(int)(rng(&xs) % 2001 - 1000) * 1e-3f;
        rc = in_cache(k, pool, types, ntypes, reps, x, y);
        free(x); free(y); sl_buf_free(bmap, bml);
        sl_pool_destroy(pool);
        sl_pool_destroy(pool1);
        return rc;
    }
    double bw1 = read_bw(pool1, bbuf, blen, reps);
    double bwn = read_bw(pool, bbuf, blen, reps);
    printf("memory read bandwidth (%zu MiB buffer): 1 thread %.2f GB/s, %d threads %.2f GB/s\n",
           bmib, bw1, nth, bwn);
    printf("(the machine may be shared: every repetition of a type's row re-measures the %d-thread\n"
           " bandwidth right before its matvec and matmul ('bw now' is their median); '%% bw' and\n"
           " 'mm/mv' are medians of the per-repetition ratios)\n\n", nth);
    uint64_t seed = 42;
    float *xf = malloc((size_t)BATCH * COLS * sizeof *xf);
    float *Y = malloc((size_t)BATCH * ROWS * sizeof *Y);
    if (!xf || !Y) { fprintf(stderr, "kbench: out of memory\n"); return 1; }
    for (size_t i = 0; i < (size_t)BATCH * COLS; i++) xf[i] = (float)(int)(rng(&seed) % 2001 - 1000) * 1e-3f;

    printf("matvec %dx%d (rows x cols), weights cycled over >= %zu MiB; matmul batch %d on one matrix\n",
           ROWS, COLS, wmib, BATCH);
    printf("%-8s %8s %5s | %7s %9s %7s %9s | %9s %10s %10s %7s\n", "type", "MiB/mat", "nmat",
           "bw now", "mv GB/s", "% bw", "mv rows/s", "mm GFLOP/s", "mm rows/s", "mv rows/s", "mm/mv");
    for (int ti = 0; ti < ntypes; ti++) {
        int t = types[ti];
        if (!runs(k, t)) {
            printf("%-8s  (%s)\n", tname(t), (t & R8 ? k->rows8[sl_quant_base_type(t)] != NULL : k->vec_dot[t] != NULL)
                                              ? "its blocks do not tile COLS" : "no kernel");
            continue;
        }
        size_t mb = row_bytes(t, COLS) * ROWS;
        int nmat = (int)(((wmib << 20) + mb - 1) / mb);
        if (nmat < 2) nmat = 2;
        size_t wml;
        void *wmap;
        uint8_t *W = sl_buf_alloc(mb * (size_t)nmat, &wml, &wmap);
        void *act = malloc(sl_kern_act_bytes(t, COLS, BATCH));
        if (!W || !act) { fprintf(stderr, "kbench: out of memory\n"); return 1; }
        fill_weights(t, W, mb * (size_t)nmat, &seed);
        sl_kern_quantize_act(k, t, xf, COLS, BATCH, act);

        /* Each repetition samples the read bandwidth, the matvec and the
         * matmul back to back, and '% bw' / 'mm/mv' are medians of those
         * per-repetition ratios: other tenants' load drifts over seconds on
         * a shared machine, so pairs taken together cancel most of it. */
        double tv[32], tm[32], bws[32], pct[32], rat[32];
        read_bw(pool, bbuf, blen, 1);
        for (int m = 0; m < nmat; m++) sl_kern_matvec(k, pool, t, W + m * mb, ROWS, COLS, act, Y);
        for (int r = 0; r < reps; r++) {
            bws[r] = read_bw(pool, bbuf, blen, 1);
            double t0 = now();
            for (int m = 0; m < nmat; m++)
                if ((rc = sl_kern_matvec(k, pool, t, W + m * mb, ROWS, COLS, act, Y)) != 0) {
                    fprintf(stderr, "kbench: matvec %d\n", rc); return 1;
                }
            tv[r] = (now() - t0) / nmat;
            const uint8_t *Wm = W + (size_t)(r % nmat) * mb;    /* evicted by the matvec sweep */
            t0 = now();
            if ((rc = sl_kern_matmul(k, pool, t, Wm, ROWS, COLS, act, BATCH, Y, ROWS)) != 0) {
                fprintf(stderr, "kbench: matmul %d\n", rc); return 1;
            }
            tm[r] = now() - t0;
            pct[r] = (double)mb / tv[r] / 1e9 / bws[r];
            rat[r] = (BATCH / tm[r]) / (1.0 / tv[r]);
        }
        double bwnow = median(bws, reps), tmv = median(tv, reps), tmm = median(tm, reps);
        double pct_med = median(pct, reps), rat_med = median(rat, reps);
        double gbs = (double)mb / tmv / 1e9;
        double mv_rows = 1.0 / tmv, mm_rows = BATCH / tmm;
        printf("%-8s %8.1f %5d | %7.2f %9.2f %6.1f%% %9.1f | %9.1f %10.1f %10.1f %6.2fx\n",
               tname(t), (double)mb / 1048576.0, nmat, bwnow, gbs, 100.0 * pct_med, mv_rows,
               2.0 * ROWS * COLS * BATCH / tmm / 1e9, mm_rows, mv_rows, rat_med);
        fflush(stdout);
        sl_buf_free(wmap, wml);
        free(act);
    }
    printf("\nmv rows/s = activation rows per second through one %dx%d matrix (matvec: 1 row per pass)\n",
           ROWS, COLS);
    sl_pool_destroy(pool);
    sl_pool_destroy(pool1);
    sl_buf_free(bmap, bml);
    free(xf);
    free(Y);
    return 0;
}
