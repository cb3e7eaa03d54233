/* quant/ grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M):
 * lattice tables against the published ones, geometry, dequantization bit for
 * bit against llama.cpp's (../shared/golden/quant), our quantizer's error
 * against ggml's on the golden rows with the golden importance matrix, and
 * degenerate input. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../quant/quant.h"
#include "../gguf/base/sl_status.h"
#include "sl_test.h"
#include "golden_quant.h"

#define ROWS 64
#define COLS 512

struct itype { const char *file; int type; int bytes; };
static const struct itype k_types[] = {
    { "iq2_xxs", SL_GGML_IQ2_XXS, 66 }, { "iq2_xs", SL_GGML_IQ2_XS, 74 },
    { "iq2_s", SL_GGML_IQ2_S, 82 },     { "iq3_xxs", SL_GGML_IQ3_XXS, 98 },
    { "iq3_s", SL_GGML_IQ3_S, 110 },    { "iq1_s", SL_GGML_IQ1_S, 50 },
    { "iq1_m", SL_GGML_IQ1_M, 56 },
};
#define NT (int)(sizeof k_types / sizeof k_types[0])

static void check_table(const char *file, const void *ours, size_t bytes)
{
    char name[64];
    snprintf(name, sizeof name, "tables/%s", file);
    void *g = sl_test_golden_quant(name, bytes);
    cr_assert_eq(memcmp(g, ours, bytes), 0, "%s differs", file);
    free(g);
}

Test(quant_iqgrid, tables)
{
    check_table("iq2xxs_grid.u64", sl_iq2xxs_grid, sizeof sl_iq2xxs_grid);
    check_table("iq2xs_grid.u64", sl_iq2xs_grid, sizeof sl_iq2xs_grid);
    check_table("iq2s_grid.u64", sl_iq2s_grid, sizeof sl_iq2s_grid);
    check_table("iq3xxs_grid.u32", sl_iq3xxs_grid, sizeof sl_iq3xxs_grid);
    check_table("iq3s_grid.u32", sl_iq3s_grid, sizeof sl_iq3s_grid);
    check_table("iq1s_grid.u64", sl_iq1s_grid, sizeof sl_iq1s_grid);
    uint8_t signs[128], mask[8];
    for (unsigned k = 0; k < 128; k++) signs[k] = sl_iq_sign_byte(k);
    for (int j = 0; j < 8; j++) mask[j] = (uint8_t)(1u << j);
    check_table("ksigns_iq2xs.u8", signs, sizeof signs);
    check_table("ksigns_iq2xs.u8", sl_iq_signs8, sizeof sl_iq_signs8);
    check_table("ksigns64.u64", sl_iq_signs64, sizeof sl_iq_signs64);
    check_table("kmask_iq2xs.u8", mask, sizeof mask);
}

Test(quant_iqgrid, geometry)
{
    for (int i = 0; i < NT; i++) {
        const struct itype *t = &k_types[i];
        cr_assert_str_eq(sl_gguf_type_name(t->type), t->file);
        cr_assert_eq(sl_gguf_block_elems(t->type), 256u, "%s", t->file);
        cr_assert_eq(sl_gguf_block_bytes(t->type), (uint32_t)t->bytes, "%s", t->file);
        cr_assert_eq(sl_gguf_row_bytes(t->type, COLS), (size_t)(2 * t->bytes), "%s", t->file);
        cr_assert_eq(sl_quant_vec_dot_type(t->type), SL_GGML_Q8_K, "%s", t->file);
        cr_assert(sl_quant_is_supported(t->type), "%s", t->file);
    }
}

Test(quant_iqgrid, dequantize_bit_exact)
{
    float *y = malloc(sizeof(float) * ROWS * COLS);
    for (int i = 0; i < NT; i++) {
        const struct itype *t = &k_types[i];
        char name[64];
        snprintf(name, sizeof name, "%s.q", t->file);
        uint8_t *q = sl_test_golden_quant(name, (size_t)ROWS * 2 * t->bytes);
        snprintf(name, sizeof name, "%s.deq.f32", t->file);
        float *g = sl_test_golden_quant(name, sizeof(float) * ROWS * COLS);
        /* whole matrix as one row: blocks are independent */
        cr_assert_eq(sl_quant_dequantize_row(t->type, q, y, (int64_t)ROWS * COLS), 0);
        for (int j = 0; j < ROWS * COLS; j++) {
            uint32_t a, b;
            memcpy(&a, &y[j], 4);
            memcpy(&b, &g[j], 4);
            cr_assert_eq(a, b, "%s element %d: %a vs ggml %a", t->file, j, y[j], g[j]);
        }
        free(q); free(g);
    }
    free(y);
}

/* Error weighted by the importance matrix (what both quantizers minimise). */
static double wsq(const float *a, const float *x, const float *w, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) { double d = (double)a[i] - x[i]; s += w[i] * d * d; }
    return s;
}

/* ggml quantized the golden rows with imatrix.f32: ours, with the same
 * weights, overall within 3% of its weighted RMSE and every row within 10%. */
Test(quant_iqgrid, rmse_no_worse_than_ggml, .timeout = 120)
{
    float *x = sl_test_golden_quant("input.f32", sizeof(float) * ROWS * COLS);
    float *im = sl_test_golden_quant("imatrix.f32", sizeof(float) * COLS);
    float y[COLS];
    uint8_t qb[2 * 110];
    for (int i = 0; i < NT; i++) {
        const struct itype *t = &k_types[i];
        char name[64];
        snprintf(name, sizeof name, "%s.deq.f32", t->file);
        float *g = sl_test_golden_quant(name, sizeof(float) * ROWS * COLS);
        double me = 0, gd = 0, worst = 0;
        for (int r = 0; r < ROWS; r++) {
            const float *xr = x + r * COLS;
            cr_assert_eq(sl_quant_quantize_row_imat(t->type, xr, qb, COLS, im), 2 * t->bytes);
            cr_assert_eq(sl_quant_dequantize_row(t->type, qb, y, COLS), 0);
            double a = wsq(y, xr, im, COLS), b = wsq(g + r * COLS, xr, im, COLS);
            cr_assert(a <= 1.21 * b + 1e-30, "%s row %d: weighted rmse x%.3f",
                      t->file, r, b > 0 ? sqrt(a / b) : 0.0);
            me += a; gd += b;
            if (b > 0 && sqrt(a / b) > worst) worst = sqrt(a / b);
        }
        double ratio = sqrt(me / gd);
        cr_log_info("rmse %-7s overall %.4f x ggml, worst row %.4f x", t->file, ratio, worst);
        cr_assert(ratio <= 1.03, "%s: overall weighted rmse ratio %.4f", t->file, ratio);
        free(g);
    }
    free(x); free(im);
}

/* Without an importance matrix: zeros, non-finite input, an outlier. */
Test(quant_iqgrid, degenerate_input)
{
    float x[256], y[256];
    uint8_t qb[110];
    for (int i = 0; i < NT; i++) {
        const struct itype *t = &k_types[i];
        memset(x, 0, sizeof x);
        cr_assert_eq(sl_quant_quantize_row(t->type, x, qb, 256), t->bytes);
        cr_assert_eq(sl_quant_dequantize_row(t->type, qb, y, 256), 0);
        for (int j = 0; j < 256; j++) cr_assert_eq(y[j], 0.0f, "%s zeros", t->file);
        for (int j = 0; j < 256; j++) x[j] = (j % 7 == 3) ? NAN : (j % 11 == 5 ? INFINITY : sinf((float)j));
        cr_assert_eq(sl_quant_quantize_row(t->type, x, qb, 256), t->bytes);
        cr_assert_eq(sl_quant_dequantize_row(t->type, qb, y, 256), 0);
        double e = 0, s = 0;
        for (int j = 0; j < 256; j++) {
            cr_assert(isfinite(y[j]), "%s non-finite output", t->file);
            if (isfinite(x[j])) { e += (y[j] - x[j]) * (y[j] - x[j]); s += x[j] * x[j]; }
        }
        cr_assert(e < 0.5 * s, "%s: rel err %g", t->file, e / s);
        for (int j = 0; j < 256; j++) x[j] = j == 100 ? 50000.0f : 0.01f * (float)((j * 37) % 19 - 9);
        cr_assert_eq(sl_quant_quantize_row(t->type, x, qb, 256), t->bytes);
        cr_assert_eq(sl_quant_dequantize_row(t->type, qb, y, 256), 0);
        /* the iq2/iq3 grids have no zero: the outlier's group shares one
         * scale with near-zero values, so only "better than all zeros" holds */
        e = 0; s = 0;
        for (int j = 0; j < 256; j++) { e += (y[j] - x[j]) * (y[j] - x[j]); s += x[j] * x[j]; }
        cr_assert(e < s, "%s outlier: rel err %g (y = %g)", t->file, e / s, y[100]);
    }
    cr_assert_eq(sl_quant_quantize_row(SL_GGML_IQ2_XS, x, qb, 100), SL_EINVAL);
}
