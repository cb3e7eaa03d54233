/* kernels/matvec.c: matvec and matmul on every level, with and without a pool,
 * against the level's own vec_dot row by row. matvec and the gemm tiles use
 * vec_dot's arithmetic per pair: bit for bit. The panel GEMM (prefill on
 * levels with sl_kern.panel, n_act >= SL_PANEL_MIN_ACT) forms the same exact integer sums
 * per block but finishes them in float in its own order (per superblock:
 * convert, scale, fused multiply-add into a lane accumulator), so it is held
 * to test_kern_dot's derived bound between two levels, 2 (nb + 12) u M
 * (M = sl_dot_scalar_mag); the few-row tiles (gemm_wide, up to 8 activation
 * rows per weight-block unpack) are bit for bit; argument checks. */
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kern_internal.h"
#include "kern_rand.h"
#include "sl_test.h"

#define U KR_U

static const int types[] = { KR_DOT_TYPES };
#define NTYPES (int)(sizeof types / sizeof types[0])

static void check_type(const sl_kern *k, sl_pool *p, int t, int64_t rows, int64_t cols,
                       int64_t n_act, uint64_t *seed)
{
    size_t rb = sl_gguf_row_bytes(t, cols), ab = sl_kern_act_bytes(t, cols, 1);
    cr_assert_gt(rb, 0);
    cr_assert_gt(ab, 0);
    uint8_t *W = kr_weights(t, rows, cols, seed);
    uint8_t *A = kr_act(k, t, n_act, cols, seed);
    int64_t ldy = rows + 3;
    float *Y = malloc((size_t)(n_act * ldy) * sizeof *Y);
    float *y1 = malloc((size_t)rows * sizeof *y1);
    cr_assert(W && A && Y && y1);
    for (int64_t i = 0; i < n_act * ldy; i++) Y[i] = NAN;

    cr_assert_eq(sl_kern_matvec(k, p, t, W, rows, cols, A, y1), 0);
    cr_assert_eq(sl_kern_matmul(k, p, t, W, rows, cols, A, n_act, Y, ldy), 0);
    for (int64_t i = 0; i < n_act; i++)
        for (int64_t r = 0; r < rows; r++) {
            float s;
            k->vec_dot[t](cols, &s, W + (size_t)r * rb, A + (size_t)i * ab);
            if (k->panel[t] && n_act >= SL_PANEL_MIN_ACT) {
                double nb = (double)(cols / sl_gguf_block_elems(t));
                double tol = 2.0 * (nb + 12) * U
                           * (double)sl_dot_scalar_mag(t, cols, W + (size_t)r * rb, A + (size_t)i * ab) + 1e-30;
                cr_assert(fabs((double)s - (double)Y[i * ldy + r]) <= tol,
                          "%s %s panel rows=%lld cols=%lld n_act=%lld act %lld row %lld: %.9g vs vec_dot %.9g (tol %.3g)",
                          k->name, sl_gguf_type_name(t), (long long)rows, (long long)cols,
                          (long long)n_act, (long long)i, (long long)r, Y[i * ldy + r], s, tol);
            } else
            cr_assert(memcmp(&s, &Y[i * ldy + r], 4) == 0,
                      "%s %s rows=%lld cols=%lld act %lld row %lld: matmul %.9g vec_dot %.9g",
                      k->name, sl_gguf_type_name(t), (long long)rows, (long long)cols,
                      (long long)i, (long long)r, Y[i * ldy + r], s);
            if (i == 0)
                cr_assert(memcmp(&s, &y1[r], 4) == 0, "%s %s matvec row %lld: %.9g vs %.9g",
                          k->name, sl_gguf_type_name(t), (long long)r, y1[r], s);
        }
    for (int64_t i = 0; i < n_act; i++)          /* padding columns untouched */
        for (int64_t r = rows; r < ldy; r++) cr_assert(isnan(Y[i * ldy + r]));
    free(W); free(A); free(Y); free(y1);
}

/* Weights of type t, n bytes: every byte pat, the block scales (f16
 * fields; MXFP4's exponent) alternating so the float part stays finite. */
static void fill_pattern(uint8_t *W, int t, size_t n, uint8_t pat)
{
    size_t bb = (size_t)sl_gguf_block_bytes(t);
    memset(W, pat, n);
    const int *f = kr_f16_fields(t);
    for (size_t b = 0; b < n / bb; b++)
        for (int j = 0; f[j] >= 0; j++) kr_put_f16(W + b * bb + (size_t)f[j], (b & 1) ? 0.01f : -0.02f);
    if (t == SL_GGML_IQ1_M)
        for (size_t b = 0; b < n / bb; b++) kr_put_iq1m_d(W + b * bb, (b & 1) ? 0.01f : -0.02f);
    if (t == SL_GGML_MXFP4)      /* the E8M0 exponent: 2^-7 / 2^-6 */
        for (size_t b = 0; b < n / bb; b++) W[b * bb + offsetof(sl_block_mxfp4, e)] = (b & 1) ? 121 : 122;
}

/* The panel kernels fold scales and offsets into u8 / s8 weights and int16
 * block sums; their range arguments are tightest at the format's corners
 * (q3_K: (q - 4) * sc = 128 when every bit is 0). Uniform byte patterns put
 * every field at such a corner, against activations at +-127 / -128. */
Test(kern_matvec, panel_extreme_fields)
{
    static const uint8_t pats[] = { 0x00, 0xff, 0x55, 0xaa, 0x80, 0x7f };
    static const int64_t rows = 24, n_act = 18;
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        const sl_kern *k = sl_kern_for(isa);
        if (!k) continue;
        for (int ti = 0; ti < NTYPES; ti++) {
            int t = types[ti];
            if (!k->panel[t]) continue;
            int64_t cols = 2 * sl_gguf_block_elems(t) * (sl_gguf_block_elems(t) == 32 ? 8 : 1);
            size_t rb = sl_gguf_row_bytes(t, cols), ab = sl_kern_act_bytes(t, cols, 1);
            uint8_t *W = malloc(rb * rows), *A = malloc(ab * n_act);
            float *x = malloc((size_t)(cols * n_act) * sizeof *x), *Y = malloc((size_t)(rows * n_act) * sizeof *Y);
            cr_assert(W && A && x && Y);
            for (int64_t i = 0; i < cols * n_act; i++)        /* rows of +-1 with one -2 per row */
                x[i] = (i % cols == (i / cols) % cols) ? -2.0f : ((i / cols) & 1 ? 1.0f : -1.0f);
            sl_kern_quantize_act(k, t, x, cols, n_act, A);
            for (size_t pi = 0; pi < sizeof pats; pi++) {
                fill_pattern(W, t, rb * rows, pats[pi]);
                cr_assert_eq(sl_kern_matmul(k, NULL, t, W, rows, cols, A, n_act, Y, rows), 0);
                for (int64_t i = 0; i < n_act; i++)
                    for (int64_t r = 0; r < rows; r++) {
                        float s;
                        k->vec_dot[t](cols, &s, W + (size_t)r * rb, A + (size_t)i * ab);
                        double nb = (double)(cols / sl_gguf_block_elems(t));
                        double tol = 2.0 * (nb + 12) * U
                                   * (double)sl_dot_scalar_mag(t, cols, W + (size_t)r * rb, A + (size_t)i * ab) + 1e-30;
                        cr_assert(fabs((double)s - (double)Y[i * rows + r]) <= tol,
                                  "%s %s pattern 0x%02x act %lld row %lld: panel %.9g vec_dot %.9g (tol %.3g)",
                                  k->name, sl_gguf_type_name(t), pats[pi], (long long)i, (long long)r,
                                  Y[i * rows + r], s, tol);
                    }
            }
            free(W); free(A); free(x); free(Y);
        }
    }
}

/* The few-row panels (sl_kern.wpanel) keep vec_dot's bits through int16
 * word pairs (vpdpbusd lanes of up to 8 products, packed two to a dword):
 * their bounds are tightest with every weight field at a corner and
 * activations at -128 (a row of equal values quantizes to -128 throughout)
 * or alternating -128 / 127. */
Test(kern_matvec, few_row_panel_extreme_fields)
{
    static const uint8_t pats[] = { 0x00, 0xff, 0x55, 0xaa, 0x80, 0x7f };
    static const int64_t rows = 24, acts[] = { 3, 5, 8 };
    int ran = 0;
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        const sl_kern *k = sl_kern_for(isa);
        if (!k) continue;
        for (int ti = 0; ti < NTYPES; ti++) {
            int t = types[ti];
            if (!k->wpanel[t]) continue;
            int64_t cols = 3 * sl_gguf_block_elems(t);
            size_t rb = sl_gguf_row_bytes(t, cols), ab = sl_kern_act_bytes(t, cols, 1);
            uint8_t *W = malloc(rb * rows), *A = malloc(ab * 8);
            float *x = malloc((size_t)(cols * 8) * sizeof *x), *Y = malloc((size_t)(rows * 8) * sizeof *Y);
            cr_assert(W && A && x && Y);
            uint64_t seed = 99;
            for (int64_t i = 0; i < 8; i++)
                for (int64_t c = 0; c < cols; c++) {
                    float v = i % 4 == 0 ? 1.0f : i % 4 == 1 ? -1.0f : i % 4 == 2 ? ((c & 1) ? -1.0f : 1.0f)
                            : (float)((int64_t)(kr_next(&seed) % 255) - 127);
                    x[i * cols + c] = v;
                }
            sl_kern_quantize_act(k, t, x, cols, 8, A);
            for (size_t pi = 0; pi < sizeof pats; pi++) {
                fill_pattern(W, t, rb * rows, pats[pi]);
                for (size_t ai = 0; ai < sizeof acts / sizeof *acts; ai++) {
                    int64_t n_act = acts[ai];
                    if (n_act < k->wpanel[t]->min_act || n_act > k->wpanel[t]->max_act) continue;
                    cr_assert_eq(sl_kern_matmul(k, NULL, t, W, rows, cols, A, n_act, Y, rows), 0);
                    for (int64_t i = 0; i < n_act; i++)
                        for (int64_t r = 0; r < rows; r++) {
                            float s;
                            k->vec_dot[t](cols, &s, W + (size_t)r * rb, A + (size_t)i * ab);
                            cr_assert(memcmp(&s, &Y[i * rows + r], 4) == 0,
                                      "%s %s pattern 0x%02x n_act %lld act %lld row %lld: %.9g vs vec_dot %.9g",
                                      k->name, sl_gguf_type_name(t), pats[pi], (long long)n_act,
                                      (long long)i, (long long)r, Y[i * rows + r], s);
                        }
                    ran++;
                }
            }
            free(W); free(A); free(x); free(Y);
        }
    }
#if defined(__x86_64__)
    if (sl_kern_for(SL_ISA_AVX512VNNI)) cr_assert_gt(ran, 0, "the avx512vnni few-row panels ran");
#endif
}

Test(kern_matvec, equals_vec_dot_every_level)
{
    sl_pool *p = NULL;
    cr_assert_eq(sl_pool_create(&p, 2), 0);
    uint64_t seed = 777;
    static const int64_t shapes[][3] = { /* rows, cols in blocks (x be), n_act */
        {1, 1, 1}, {3, 2, 5}, {4, 1, 4}, {13, 3, 9}, {37, 2, 7}, {64, 1, 17},
        /* few-row tiles (SL_GEMM_WIDE): every height up to 8, then 8 + 1 */
        {9, 2, 6}, {11, 1, 8}, {6, 3, 2}, {5, 2, 3},
        /* panel GEMM edges: row tails, > 64-row blocks, K over one chunk, lanes > 16 */
        {70, 9, 33}, {19, 67, 10}, {8, 1, 16},
        /* decode over several guided takes (>= 32 KiB each), odd row count */
        {1531, 2, 1}, {3001, 1, 1}, {2049, 3, 1},
        /* few-row panel: K chunks with a tail, row blocks with a tail, 1..3 quads */
        {22, 9, 7}, {21, 5, 9}, {37, 6, 3}, {18, 13, 8},
        /* decode rows over 4 KiB for every type (the dot prefetches the next row) */
        {17, 250, 1}, {90, 250, 1},
    };
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        const sl_kern *k = sl_kern_for(isa);
        if (!k) continue;
        /* decode's prefetch: every row spread (the default), rows up to 4 KiB
         * one burst each, bursts only */
        static const size_t bursts[] = { 0, 4096, SIZE_MAX };
        for (size_t bi = 0; bi < sizeof bursts / sizeof *bursts; bi++) {
            sl_kern kc = *k;
            kc.mv_burst_max = bursts[bi];
            for (int ti = 0; ti < NTYPES; ti++) {
                int t = types[ti];
                int be = sl_gguf_block_elems(t);
                for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
                    if (bi > 0 && shapes[s][2] != 1) continue;   /* the others do not decode */
                    int64_t cols = shapes[s][1] * (be == 1 ? 37 : be);
                    check_type(&kc, s & 1 ? p : NULL, t, shapes[s][0], cols, shapes[s][2], &seed);
                }
            }
        }
    }
    sl_pool_destroy(p);
}

Test(kern_matvec, bad_arguments)
{
    const sl_kern *k = sl_kern_best();
    cr_assert_not_null(k);
    float y[4];
    uint8_t W[4 * 144] = {0}, A[292] = {0};
    cr_assert_eq(sl_kern_matvec(k, NULL, SL_GGML_Q4_K, W, 4, 255, A, y), -EINVAL);  /* not a block multiple */
    cr_assert_eq(sl_kern_matvec(k, NULL, SL_GGML_Q8_K, W, 4, 256, A, y), -EINVAL);  /* activation-only type */
    cr_assert_eq(sl_kern_matvec(k, NULL, 99, W, 4, 256, A, y), -EINVAL);
    cr_assert_eq(sl_kern_matvec(k, NULL, -1, W, 4, 256, A, y), -EINVAL);
    cr_assert_eq(sl_kern_matvec(NULL, NULL, SL_GGML_Q4_K, W, 4, 256, A, y), -EINVAL);
    cr_assert_eq(sl_kern_matvec(k, NULL, SL_GGML_Q4_K, NULL, 4, 256, A, y), -EINVAL);
    cr_assert_eq(sl_kern_matmul(k, NULL, SL_GGML_Q4_K, W, 4, 256, A, 2, y, 3), -EINVAL); /* ldy < rows */
    cr_assert_eq(sl_kern_matvec(k, NULL, SL_GGML_Q4_K, W, 4, 256, A, y), 0);
    for (int i = 0; i < 4; i++) cr_assert_eq(y[i], 0.0f);
    cr_assert_eq(sl_kern_act_bytes(SL_GGML_Q4_K, 512, 3), 3 * 2 * sizeof(sl_block_q8_k));
    cr_assert_eq(sl_kern_act_bytes(SL_GGML_Q4_0, 64, 1), 2 * sizeof(sl_block_q8_0));
    cr_assert_eq(sl_kern_act_bytes(SL_GGML_Q4_1, 64, 1), 2 * sizeof(sl_block_q8_1));
    cr_assert_eq(sl_kern_act_bytes(SL_GGML_F16, 10, 2), 40);
    cr_assert_eq(sl_kern_act_bytes(SL_GGML_Q4_K, 100, 1), 0);
}

/* The bound the session reserves for the prefill buffer covers what matmul
 * actually asks for, on every type and level. */
Test(kern_matvec, scratch_bound_covers_panels)
{
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        const sl_kern *k = sl_kern_for(isa);
        if (!k) continue;
        cr_assert_eq(sl_kern_matmul_scratch_bound(k, 4096, 1, 2), 0);
        int any_w = 0;
        for (int t = 0; t < SL_GGML_TYPE_COUNT; t++) any_w |= k->wpanel[t] != NULL;
        if (!any_w) cr_assert_eq(sl_kern_matmul_scratch_bound(k, 4096, SL_PANEL_MIN_ACT - 1, 2), 0);
        for (int t = 0; t < SL_GGML_TYPE_COUNT; t++)
            for (int64_t n = k->wpanel[t] ? k->wpanel[t]->min_act : 0; k->wpanel[t] && n <= k->wpanel[t]->max_act; n++) {
                const sl_panel *pn = k->wpanel[t];
                size_t need = pn->panel_bytes(4096, n) + 2 * pn->scratch_bytes(n);
                cr_assert_geq(sl_kern_matmul_scratch_bound(k, 4096, n, 2), need, "%s few-row type %d n %lld",
                              k->name, t, (long long)n);
            }
        for (int t = 0; t < SL_GGML_TYPE_COUNT; t++) {
            const sl_panel *pn = k->panel[t];
            if (!pn) continue;
            for (int64_t n = SL_PANEL_MIN_ACT; n <= 70; n += 30) {
                size_t need = pn->panel_bytes(4096, n) + 2 * pn->scratch_bytes(n);
                cr_assert_geq(sl_kern_matmul_scratch_bound(k, 4096, n, 2), need, "%s type %d n %lld", k->name, t, (long long)n);
                cr_assert_geq(sl_kern_matmul_scratch_bound(k, 4000, n, 2), pn->panel_bytes(3840, n), "%s type %d", k->name, t);
            }
        }
    }
}

/* Several matvecs in one job (decode q/k/v, gate/up): every row bit for bit
 * vec_dot's, whatever the mix of row sizes (q4_K 144 B, q6_K 210 B, q8_0) and
 * wherever the byte split of 1..3 threads falls, also inside an empty part. */
Test(kern_matvec, multi_equals_vec_dot)
{
    static const int mtypes[] = { SL_GGML_Q4_K, SL_GGML_Q6_K, SL_GGML_Q8_0, SL_GGML_Q4_K };
    static const int64_t mrows[][4] = { { 1, 1, 1, 1 }, { 37, 5, 0, 11 }, { 64, 16, 16, 3 }, { 3, 129, 7, 0 },
                                        /* several guided takes, boundaries inside parts */
                                        { 1001, 517, 1203, 0 },
                                        /* at 8192 columns: rows over 4 KiB (prefetching dot) */
                                        { 40, 9, 23, 5 } };
    uint64_t seed = 4242;
    for (int nth = 1; nth <= 3; nth++) {
        sl_pool *p = NULL;
        cr_assert_eq(sl_pool_create(&p, nth), 0);
        for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
            const sl_kern *kl = sl_kern_for(isa);
            if (!kl) continue;
            sl_kern kc = *kl;
            kc.mv_burst_max = isa & 1 ? SIZE_MAX : 0;   /* both prefetch forms over the levels */
            const sl_kern *k = &kc;
            for (size_t s = 0; s < sizeof mrows / sizeof *mrows; s++) {
                const int64_t cols = s + 1 < sizeof mrows / sizeof *mrows ? 512 : 8192;
                for (int np = 1; np <= 4; np++) {
                    sl_mv_part parts[4];
                    uint8_t *W[4], *A[4];
                    float *y[4];
                    for (int i = 0; i < np; i++) {
                        int64_t rows = mrows[s][i];
                        W[i] = kr_weights(mtypes[i], rows ? rows : 1, cols, &seed);
                        A[i] = kr_act(k, mtypes[i], 1, cols, &seed);
                        y[i] = malloc((size_t)(rows + 1) * sizeof(float));
                        cr_assert(W[i] && A[i] && y[i]);
                        for (int64_t r = 0; r <= rows; r++) y[i][r] = NAN;
                        parts[i] = (sl_mv_part){ .wtype = mtypes[i], .W = W[i], .rows = rows, .cols = cols,
                                                 .act = A[i], .y = y[i] };
                    }
                    cr_assert_eq(sl_kern_matvec_multi(k, p, parts, np), 0);
                    for (int i = 0; i < np; i++) {
                        size_t rb = sl_gguf_row_bytes(mtypes[i], cols);
                        for (int64_t r = 0; r < mrows[s][i]; r++) {
                            float e;
                            k->vec_dot[mtypes[i]](cols, &e, W[i] + (size_t)r * rb, A[i]);
                            cr_assert(memcmp(&e, &y[i][r], 4) == 0, "%s %d threads shape %zu part %d row %lld: %.9g vs %.9g",
                                      k->name, nth, s, i, (long long)r, y[i][r], e);
                        }
                        cr_assert(isnan(y[i][mrows[s][i]]), "no write past part %d", i);
                        free(W[i]); free(A[i]); free(y[i]);
                    }
                }
            }
        }
        sl_pool_destroy(p);
    }
    const sl_kern *k = sl_kern_best();
    sl_mv_part bad = { .wtype = SL_GGML_Q4_K, .W = NULL, .rows = 1, .cols = 512 };
    cr_assert_eq(sl_kern_matvec_multi(k, NULL, &bad, 1), -EINVAL);
    cr_assert_eq(sl_kern_matvec_multi(k, NULL, &bad, 0), -EINVAL);
    cr_assert_eq(sl_kern_matvec_multi(k, NULL, &bad, SL_MV_MAX_PARTS + 1), -EINVAL);
}
