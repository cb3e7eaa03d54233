/* kernels/rows8_*.c and the rows8 paths of kernels/matvec.c (MXFP4, IQ4_NL,
 * Q8_0, IQ4_XS): every level's rows8 kernel equals the scalar one bit for bit
 * (MXFP4: every E8M0 exponent, also as a whole row's scale; IQ4_XS: every
 * sub-block scale; K over one activation chunk, 1..4 activation rows at
 * once); matvec, matmul at every row count and matvec_multi give those bits
 * whatever the threads and takes; the results equal the plain rows' dots
 * within test_kern_dot's bound
 * 2 (nb + 12) u M, and ggml's golden dots too; argument checks. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kern_internal.h"
#include "golden_quant.h"
#include "kern_rand.h"
#include "sl_test.h"

#define R8 (SL_GGML_MXFP4 | (int)SL_GGML_ROWS8)
static const int r8_types[] = { SL_GGML_MXFP4, SL_GGML_IQ4_NL, SL_GGML_Q8_0, SL_GGML_IQ4_XS };
#define N_R8 (int)(sizeof r8_types / sizeof *r8_types)

/* cols rounded up to whole blocks of t */
static int64_t whole(int t, int64_t cols)
{
    int64_t be = sl_gguf_block_elems(t);
    return (cols + be - 1) / be * be;
}

/* rows x cols rows of t (plain, caller frees); when `wild`, MXFP4 with every
 * exponent 0..255 somewhere (1: mixed along each row; 2: one a row, so a
 * row's result shows its exponent, the subnormal scales of 0 and 1 too) and
 * IQ4_XS with random bits in every scale field (all 64 sub-block scales, the
 * extremes -32 and 31 too), else kr_weights' sane ones. */
static uint8_t *weights(int t, int64_t rows, int64_t cols, int wild, uint64_t *seed)
{
    uint8_t *w = kr_weights(t, rows, cols, seed);
    cr_assert_not_null(w);
    size_t n = sl_gguf_row_bytes(t, cols) * (size_t)rows / sl_gguf_block_bytes(t), nbr = n / (size_t)rows;
    if (wild && t == SL_GGML_MXFP4)
        for (size_t b = 0; b < n; b++)
            ((sl_block_mxfp4 *)w)[b].e = (uint8_t)(wild == 1 ? b * 37 + kr_next(seed) % 3 : b / nbr * 97);
    if (wild && t == SL_GGML_IQ4_XS)
        for (size_t b = 0; b < n; b++) {
            sl_block_iq4_xs *x = (sl_block_iq4_xs *)w + b;
            uint64_t r = kr_next(seed);
            x->scales_h = b % 3 == 0 ? 0xffff : b % 3 == 1 ? 0 : (uint16_t)r;
            for (int i = 0; i < 4; i++)
                x->scales_l[i] = b % 3 == 0 ? 0xff : b % 3 == 1 ? 0 : (uint8_t)(r >> (16 + 8 * i));
        }
    return w;
}

static uint8_t *packed(int t, const uint8_t *w, int64_t rows, int64_t cols)
{
    size_t bytes = sl_gguf_row_bytes(t, cols) * (size_t)rows;
    uint8_t *p = malloc(bytes);
    cr_assert_not_null(p);
    memcpy(p, w, bytes);
    cr_assert_eq(sl_quant_rows8_pack(t, p, rows, cols), 0);
    return p;
}

static int same(float a, float b) { return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b)); }

/* The plain rows' dot (any level's: within the bound) against the rows8 result. */
static void near_plain(const sl_kern *k, int t, const uint8_t *w, int64_t r, int64_t cols, const void *act,
                       float got)
{
    size_t rb = sl_gguf_row_bytes(t, cols);
    const uint8_t *x = w + (size_t)r * rb;
    float s;
    k->vec_dot[t](cols, &s, x, act);
    double nb = (double)(cols / sl_gguf_block_elems(t));
    double tol = 2.0 * (nb + 12) * KR_U * (double)sl_dot_scalar_mag(t, cols, x, act) + 1e-30;
    if (!isfinite(s)) return;   /* exponents near 255 overflow both ways */
    cr_assert(fabs((double)got - (double)s) <= tol, "%s %s row %lld cols %lld: rows8 %.9g vs plain %.9g (tol %.3g)",
              k->name, sl_gguf_type_name(t), (long long)r, (long long)cols, got, s, tol);
}

Test(kern_rows8, every_level_equals_scalar, .timeout = 120)
{
    const sl_kern *sc = sl_kern_for(SL_ISA_SCALAR);
    cr_assert_not_null(sc);
    uint64_t seed = 99;
    /* cols (whole blocks): one block, gpt-oss's 2880, over the kernels' 256-block
     * chunk; 256 rows: a row for each exponent */
    static const int64_t shapes[][2] = { {8, 32}, {16, 2880}, {8, 8256}, {24, 320}, {256, 64}, {8, 66048} };
    for (int ti = 0; ti < N_R8; ti++) {
        const int t = r8_types[ti];
        cr_assert(sl_quant_rows8_supported(t) && sc->rows8[t] && !sc->rows8_fast[t], "%s", sl_gguf_type_name(t));
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int wild = 0; wild < 3; wild++) {
                const int64_t rows = shapes[s][0], cols = whole(t, shapes[s][1]);
                uint8_t *w = weights(t, rows, cols, wild, &seed), *p = packed(t, w, rows, cols);
                uint8_t *act = kr_act(sc, t, SL_ROWS8_NY, cols, &seed);
                size_t arb = sl_kern_act_bytes(t, cols, 1);
                float *ref = malloc((size_t)(SL_ROWS8_NY * rows) * sizeof(float));
                float *got = malloc((size_t)(SL_ROWS8_NY * rows) * sizeof(float));
                cr_assert(act && ref && got);
                sc->rows8[t](cols, p, 0, rows / 8, act, arb, SL_ROWS8_NY, ref, rows);
                for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
                    const sl_kern *k = sl_kern_for(isa);
                    if (!k) continue;
                    cr_assert_not_null(k->rows8[t], "%s has no rows8 kernel for %s", k->name, sl_gguf_type_name(t));
                    for (int ny = 1; ny <= SL_ROWS8_NY; ny++)
                        for (int64_t g0 = 0; g0 < rows / 8; g0++) {   /* every first group: offsets */
                            for (int64_t i = 0; i < SL_ROWS8_NY * rows; i++) got[i] = NAN;
                            k->rows8[t](cols, p, g0, rows / 8, act, arb, ny, got, rows);
                            for (int j = 0; j < SL_ROWS8_NY; j++)
                                for (int64_t r = 0; r < rows; r++) {
                                    float want = j < ny && r >= 8 * g0 ? ref[j * rows + r] : NAN;
                                    cr_assert(same(got[j * rows + r], want), "%s %s %lld x %lld wild %d ny %d g0 %lld "
                                              "act %d row %lld: %.9g vs scalar %.9g", k->name, sl_gguf_type_name(t),
                                              (long long)rows, (long long)cols, wild, ny, (long long)g0, j,
                                              (long long)r, got[j * rows + r], want);
                                }
                        }
                    for (int j = 0; j < SL_ROWS8_NY; j++)
                        for (int64_t r = 0; r < rows; r++)
                            near_plain(k, t, w, r, cols, act + (size_t)j * arb, ref[j * rows + r]);
                }
                free(w); free(p); free(act); free(ref); free(got);
            }
    }
}

/* matvec, matmul (1..9 rows, the panel's 10+, 64) and matvec_multi on rows8
 * give the kernel's bits, with and without a pool, over guided takes. */
Test(kern_rows8, matmul_and_multi_give_the_kernel_bits, .timeout = 120)
{
    uint64_t seed = 5150;
    static const int64_t shapes[][2] = { {8, 64}, {104, 2880}, {1600, 512} };
    static const int64_t nacts[] = { 1, 2, 3, 4, 5, 7, 8, 9, 10, 16, 64 };
    for (int nth = 1; nth <= 3; nth++) {
        sl_pool *pool = NULL;
        cr_assert_eq(sl_pool_create(&pool, nth), 0);
        for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
            const sl_kern *k = sl_kern_for(isa);
            if (!k) continue;
            for (int ti = 0; ti < N_R8; ti++)
            for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
                const int t = r8_types[ti], rt = t | (int)SL_GGML_ROWS8;
                const int64_t rows = shapes[s][0], cols = whole(t, shapes[s][1]);
                uint8_t *w = weights(t, rows, cols, 0, &seed), *p = packed(t, w, rows, cols);
                uint8_t *act = kr_act(k, rt, 64, cols, &seed);
                size_t arb = sl_kern_act_bytes(rt, cols, 1);
                cr_assert_eq(arb, sl_kern_act_bytes(t, cols, 1));
                float *ref = malloc((size_t)(64 * rows) * sizeof(float)), *Y = malloc((size_t)(64 * (rows + 1)) * sizeof(float));
                cr_assert(act && ref && Y);
                for (int j = 0; j < 64; j++)
                    k->rows8[t](cols, p, 0, rows / 8, act + (size_t)j * arb, arb, 1, ref + j * rows, rows);
                for (size_t ni = 0; ni < sizeof nacts / sizeof *nacts; ni++) {
                    const int64_t n = nacts[ni], ldy = rows + 1;
                    for (int64_t i = 0; i < 64 * ldy; i++) Y[i] = NAN;
                    int rc = n == 1 ? sl_kern_matvec(k, nth > 1 ? pool : NULL, rt, p, rows, cols, act, Y)
                                    : sl_kern_matmul(k, nth > 1 ? pool : NULL, rt, p, rows, cols, act, n, Y, ldy);
                    cr_assert_eq(rc, 0);
                    for (int64_t j = 0; j < n; j++)
                        for (int64_t r = 0; r < rows; r++)
                            cr_assert(same(Y[j * ldy + r], ref[j * rows + r]), "%s %s %d threads %lld x %lld n_act %lld "
                                      "act %lld row %lld: %.9g vs %.9g", k->name, sl_gguf_type_name(t), nth, (long long)rows, (long long)cols,
                                      (long long)n, (long long)j, (long long)r, Y[j * ldy + r], ref[j * rows + r]);
                    if (n > 1) cr_assert(isnan(Y[rows]), "matmul wrote past its rows");
                }
                /* multi: rows8 parts between plain ones, boundaries inside parts */
                uint8_t *q = kr_weights(SL_GGML_Q8_0, 40, cols, &seed), *qa = kr_act(k, SL_GGML_Q8_0, 1, cols, &seed);
                float *yq = malloc(41 * sizeof(float)), *y2 = malloc((size_t)(rows + 1) * sizeof(float));
                cr_assert(q && qa && yq && y2);
                for (int i = 0; i <= rows; i++) Y[i] = y2[i] = NAN;
                sl_mv_part parts[3] = {
                    { .wtype = rt, .W = p, .rows = rows, .cols = cols, .act = act, .y = Y },
                    { .wtype = SL_GGML_Q8_0, .W = q, .rows = 40, .cols = cols, .act = qa, .y = yq },
                    { .wtype = rt, .W = p, .rows = rows, .cols = cols, .act = act + arb, .y = y2 },
                };
                cr_assert_eq(sl_kern_matvec_multi(k, nth > 1 ? pool : NULL, parts, 3), 0);
                size_t qb = sl_gguf_row_bytes(SL_GGML_Q8_0, cols);
                for (int64_t r = 0; r < rows; r++) {
                    cr_assert(same(Y[r], ref[r]), "%s multi part 0 row %lld", k->name, (long long)r);
                    cr_assert(same(y2[r], ref[rows + r]), "%s multi part 2 row %lld", k->name, (long long)r);
                }
                cr_assert(isnan(Y[rows]) && isnan(y2[rows]), "multi wrote past a rows8 part");
                for (int r = 0; r < 40; r++) {
                    float e;
                    k->vec_dot[SL_GGML_Q8_0](cols, &e, q + (size_t)r * qb, qa);
                    cr_assert(same(e, yq[r]), "%s multi part 1 row %d", k->name, r);
                }
                free(q); free(qa); free(yq); free(y2);
                free(w); free(p); free(act); free(ref); free(Y);
            }
        }
        sl_pool_destroy(pool);
    }
}

/* ggml's dots of the golden rows (64 x 512: eight groups) of each type. */
Test(kern_rows8, golden_dots_every_level)
{
    static const char *const names[] = { "mxfp4", "iq4_nl", "q8_0", "iq4_xs" };
    static const char *const acts[] = { "q8_0", "q8_0", "q8_0", "q8_k" };
    const int64_t rows = 64, cols = 512;
    for (int ti = 0; ti < N_R8; ti++) {
        const int t = r8_types[ti];
        char name[64];
        size_t rb = sl_gguf_row_bytes(t, cols), ab = sl_kern_act_bytes(t, cols, 1);
        snprintf(name, sizeof name, "%s.q", names[ti]);
        uint8_t *q = sl_test_golden_quant(name, rb * rows);
        snprintf(name, sizeof name, "act.%s", acts[ti]);
        uint8_t *act = sl_test_golden_quant(name, ab);
        snprintf(name, sizeof name, "%s.dot.f32", names[ti]);
        float *dot = sl_test_golden_quant(name, rows * sizeof(float));
        uint8_t *p = packed(t, q, rows, cols);
        float y[64];
        for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
            const sl_kern *k = sl_kern_for(isa);
            if (!k) continue;
            cr_assert_eq(sl_kern_matvec(k, NULL, t | (int)SL_GGML_ROWS8, p, rows, cols, act, y), 0);
            for (int r = 0; r < rows; r++) {
                double tol = 2.0 * (cols / sl_gguf_block_elems(t) + 12) * KR_U
                           * (double)sl_dot_scalar_mag(t, cols, q + (size_t)r * rb, act) + 1e-30;
                cr_assert(fabs((double)y[r] - (double)dot[r]) <= tol, "%s %s row %d: %.9g vs golden %.9g (tol %.3g)",
                          k->name, names[ti], r, y[r], dot[r], tol);
            }
        }
        free(q); free(act); free(dot); free(p);
    }
}

Test(kern_rows8, bad_arguments)
{
    const sl_kern *k = sl_kern_best();
    uint8_t w[16 * 17] = {0}, a[34 * 2] = {0};
    float y[16];
    cr_assert_eq(sl_kern_matvec(k, NULL, R8, w, 12, 32, a, y), -EINVAL);                 /* not whole groups */
    cr_assert_eq(sl_kern_matvec(k, NULL, SL_GGML_Q4_0 | (int)SL_GGML_ROWS8, w, 8, 32, a, y), -EINVAL);
    cr_assert_eq(sl_kern_matvec(k, NULL, SL_GGML_ROWS8 | 0x7f, w, 8, 32, a, y), -EINVAL);     /* no such type */
    cr_assert_eq(sl_kern_matvec(k, NULL, R8, w, 8, 48, a, y), -EINVAL);                  /* not whole blocks */
    cr_assert_eq(sl_kern_matvec(k, NULL, SL_GGML_IQ4_XS | (int)SL_GGML_ROWS8, w, 8, 32, a, y), -EINVAL);
    cr_assert_eq(sl_kern_matmul(k, NULL, R8, w, 8, 32, a, 2, y, 4), -EINVAL);             /* ldy < rows */
    sl_mv_part bad = { .wtype = R8, .W = w, .rows = 4, .cols = 32, .act = a, .y = y };
    cr_assert_eq(sl_kern_matvec_multi(k, NULL, &bad, 1), -EINVAL);
    cr_assert_eq(sl_kern_matvec(k, NULL, R8, w, 0, 32, a, y), 0);
}
