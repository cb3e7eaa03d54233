/* kernels/dot_iqgrid_*: the grid i-quant dots (IQ2_XXS .. IQ1_M with Q8_K).
 * Every level forms the same exact integer sum per super-block and the same
 * float term, added in the same order (dot_iqgrid.h), so every level must
 * equal the scalar oracle bit for bit: on random blocks, on blocks of uniform
 * byte patterns (every field at a corner) against activations at +-127, and
 * on ggml's golden rows, where the result must also agree with ggml's dot
 * within test_kern_dot.c's derived bound 2 (nb + 12) u M. (The SIMD sweep
 * of random shapes, matvec and matmul: test_kern_dot.c, test_kern_matvec.c.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kern_internal.h"
#include "kern_rand.h"
#include "sl_test.h"
#include "golden_quant.h"

#define U KR_U

static const struct { const char *name; int type; } k_types[] = {
    {"iq2_xxs", SL_GGML_IQ2_XXS}, {"iq2_xs", SL_GGML_IQ2_XS}, {"iq2_s", SL_GGML_IQ2_S},
    {"iq3_xxs", SL_GGML_IQ3_XXS}, {"iq3_s", SL_GGML_IQ3_S}, {"iq1_s", SL_GGML_IQ1_S},
    {"iq1_m", SL_GGML_IQ1_M},
};
#define NT (int)(sizeof k_types / sizeof k_types[0])

static void same_every_level(int t, int64_t n, const void *x, const void *y, const char *what)
{
    const sl_kern *sc = sl_kern_for(SL_ISA_SCALAR);
    float ref;
    sc->vec_dot[t](n, &ref, x, y);
    cr_assert(isfinite(ref), "%s %s", sl_gguf_type_name(t), what);
    for (int isa = 1; isa < SL_ISA_COUNT; isa++) {
        const sl_kern *k = sl_kern_for(isa);
        if (!k) continue;
        cr_assert(k->vec_dot[t] != sc->vec_dot[t] || isa >= SL_ISA_NEON,
                  "%s has no %s kernel of its own", k->name, sl_gguf_type_name(t));
        float s = NAN;
        k->vec_dot[t](n, &s, x, y);
        cr_assert(memcmp(&s, &ref, 4) == 0, "%s %s %s n=%lld: %.9g vs scalar %.9g", k->name,
                  sl_gguf_type_name(t), what, (long long)n, s, ref);
    }
}

Test(kern_iqgrid, every_level_equals_scalar_random)
{
    uint64_t seed = 4242;
    const sl_kern *sc = sl_kern_for(SL_ISA_SCALAR);
    for (int i = 0; i < NT; i++)
        for (int nb = 1; nb <= 9; nb += 2)
            for (int rep = 0; rep < 4; rep++) {
                int64_t n = 256 * nb;
                void *x = kr_weights(k_types[i].type, 1, n, &seed), *y = kr_act(sc, k_types[i].type, 1, n, &seed);
                cr_assert(x && y);
                same_every_level(k_types[i].type, n, x, y, "random");
                free(x); free(y);
            }
}

Test(kern_iqgrid, every_level_equals_scalar_extreme)
{
    static const uint8_t pats[] = { 0x00, 0xff, 0x55, 0xaa, 0x80, 0x7f, 0x0f, 0xf0 };
    const sl_kern *sc = sl_kern_for(SL_ISA_SCALAR);
    int64_t n = 512;
    float x[512];
    for (int i = 0; i < NT; i++) {
        int t = k_types[i].type;
        size_t rb = sl_gguf_row_bytes(t, n);
        uint8_t *w = malloc(rb), *a = malloc(sl_kern_act_bytes(t, n, 1));
        cr_assert(w && a);
        for (int sign = 0; sign < 3; sign++) {
            for (int j = 0; j < n; j++) x[j] = sign == 2 ? (j & 1 ? 1.0f : -1.0f) : (sign ? -1.0f : 1.0f);
            sl_kern_quantize_act(sc, t, x, n, 1, a);      /* all q8 = +-127 */
            for (size_t p = 0; p < sizeof pats; p++) {
                memset(w, pats[p], rb);
                for (size_t b = 0; b < rb / sl_gguf_block_bytes(t); b++) {
                    uint8_t *blk = w + b * sl_gguf_block_bytes(t);
                    if (t != SL_GGML_IQ1_M) { kr_put_f16(blk, 0.5f); continue; }   /* d at offset 0 */
                    for (int k = 0; k < 4; k++)   /* iq1_m: d = 0.5 (0x3800) in the top nibbles */
                        blk[49 + 2 * k] = (uint8_t)((blk[49 + 2 * k] & 0x0f) | ((0x3800 >> (4 * k)) & 15) << 4);
                }
                same_every_level(t, n, w, a, "pattern");
            }
        }
        free(w); free(a);
    }
}

Test(kern_iqgrid, golden_dots_every_level)
{
    uint8_t *act = sl_test_golden_quant("act.q8_k", 2 * sizeof(sl_block_q8_k));
    for (int i = 0; i < NT; i++) {
        int t = k_types[i].type;
        size_t rb = sl_gguf_row_bytes(t, 512);
        char name[64];
        snprintf(name, sizeof name, "%s.q", k_types[i].name);
        uint8_t *q = sl_test_golden_quant(name, rb * 64);
        snprintf(name, sizeof name, "%s.dot.f32", k_types[i].name);
        float *dot = sl_test_golden_quant(name, 64 * sizeof(float));
        for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
            const sl_kern *k = sl_kern_for(isa);
            if (!k) continue;
            for (int r = 0; r < 64; r++) {
                const void *x = q + (size_t)r * rb;
                float s = NAN;
                k->vec_dot[t](512, &s, x, act);
                double tol = 2.0 * (2 + 12) * U * (double)sl_dot_scalar_mag(t, 512, x, act) + 1e-30;
                cr_assert(fabs((double)s - (double)dot[r]) <= tol, "%s %s row %d: %.9g vs golden %.9g (tol %.3g)",
                          k->name, k_types[i].name, r, s, dot[r], tol);
            }
        }
        free(q); free(dot);
    }
    free(act);
}

/* matmul (the gemm tiles below SL_PANEL_MIN_ACT activation rows, the panel
 * at and above it where a level has one) equals vec_dot bit for bit: both
 * take the same per-block terms in the same double order. Row tails of the
 * panel's 4-row groups, pool and no pool. */
Test(kern_iqgrid, matmul_equals_vec_dot_bitwise)
{
    static const int64_t shapes[][3] = { { 7, 3, 4 }, { 13, 2, SL_PANEL_MIN_ACT }, { 18, 1, 21 } };
    sl_pool *p = NULL;
    cr_assert_eq(sl_pool_create(&p, 2), 0);
    uint64_t seed = 99;
    const sl_kern *sc = sl_kern_for(SL_ISA_SCALAR);
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        const sl_kern *k = sl_kern_for(isa);
        if (!k) continue;
        for (int i = 0; i < NT; i++)
            for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
                int t = k_types[i].type;
                int64_t rows = shapes[s][0], n = 256 * shapes[s][1], n_act = shapes[s][2];
                uint8_t *W = kr_weights(t, rows, n, &seed), *A = kr_act(sc, t, n_act, n, &seed);
                float *Y = malloc((size_t)(rows * n_act) * sizeof *Y);
                cr_assert(W && A && Y);
                cr_assert_eq(sl_kern_matmul(k, s & 1 ? p : NULL, t, W, rows, n, A, n_act, Y, rows), 0);
                size_t rb = sl_gguf_row_bytes(t, n), ab = sl_kern_act_bytes(t, n, 1);
                for (int64_t c = 0; c < n_act; c++)
                    for (int64_t r = 0; r < rows; r++) {
                        float v;
                        k->vec_dot[t](n, &v, W + (size_t)r * rb, A + (size_t)c * ab);
                        cr_assert(memcmp(&v, &Y[c * rows + r], 4) == 0, "%s %s rows %lld n_act %lld: [%lld][%lld] %.9g vs vec_dot %.9g",
                                  k->name, k_types[i].name, (long long)rows, (long long)n_act, (long long)c,
                                  (long long)r, Y[c * rows + r], v);
                    }
                free(W); free(A); free(Y);
            }
    }
    sl_pool_destroy(p);
}
