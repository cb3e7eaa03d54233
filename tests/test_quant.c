/* quant/: conversions, type table, dequantizers and activation quantizers
 * against ggml's golden vectors (../shared/golden/quant, bit for bit), the
 * weight quantizers' reconstruction error against ggml's, and bad input. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../quant/quant.h"
#include "../gguf/base/sl_status.h"
#include "../gguf/base/sl_internal.h"
#include "sl_test.h"
#include "golden_quant.h"

#define ROWS 64
#define COLS 512


static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* Independent f16 decoding through ldexp, for the exhaustive check. */
static double f16_ref(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

Test(quant_f16, exhaustive_decode_and_roundtrip)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = sl_f16_to_f32((sl_f16)h);
        int e = (h >> 10) & 31;
        if (e == 31) {
            if (h & 1023) {
                cr_assert(isnan(f), "h=%04x", h);
                sl_f16 back = sl_f32_to_f16(f);
                cr_assert_eq(back & 0x7c00, 0x7c00, "h=%04x", h);
                cr_assert_neq(back & 0x3ff, 0, "nan stays nan h=%04x", h);
                cr_assert_eq(back & 0x8000, h & 0x8000);
            } else {
                cr_assert(isinf(f) && (f < 0) == !!(h & 0x8000), "h=%04x", h);
                cr_assert_eq(sl_f32_to_f16(f), h);
            }
            continue;
        }
        cr_assert_eq((double)f, f16_ref((uint16_t)h), "decode h=%04x", h);
        cr_assert_eq(signbit(f) != 0, !!(h & 0x8000), "sign h=%04x", h);
        cr_assert_eq(sl_f32_to_f16(f), h, "roundtrip h=%04x", h);
    }
}

Test(quant_f16, rounding_to_nearest_even)
{
    /* Midpoints between consecutive finite halves are exact in f32: ties go to
     * the even code, one f32 ulp either side goes to the nearer one. */
    for (uint32_t h = 0; h < 0x7bff; h++) {
        double mid = (f16_ref((uint16_t)h) + f16_ref((uint16_t)(h + 1))) / 2;
        float m = (float)mid;
        cr_assert_eq((double)m, mid);
        uint32_t even = (h & 1) ? h + 1 : h;
        cr_assert_eq(sl_f32_to_f16(m), even, "tie above %04x", h);
        cr_assert_eq(sl_f32_to_f16(-m), even | 0x8000, "-tie above %04x", h);
        cr_assert_eq(sl_f32_to_f16(nextafterf(m, 0)), h, "below tie %04x", h);
        cr_assert_eq(sl_f32_to_f16(nextafterf(m, INFINITY)), h + 1, "above tie %04x", h);
    }
    cr_assert_eq(sl_f32_to_f16(65504.0f), 0x7bff);
    cr_assert_eq(sl_f32_to_f16(nextafterf(65520.0f, 0)), 0x7bff);
    cr_assert_eq(sl_f32_to_f16(65520.0f), 0x7c00);
    cr_assert_eq(sl_f32_to_f16(1e30f), 0x7c00);
    cr_assert_eq(sl_f32_to_f16(-1e30f), 0xfc00);
    cr_assert_eq(sl_f32_to_f16(INFINITY), 0x7c00);
    cr_assert_eq(sl_f32_to_f16(-INFINITY), 0xfc00);
    cr_assert_eq(sl_f32_to_f16(0x1p-25f), 0x0000);
    cr_assert_eq(sl_f32_to_f16(nextafterf(0x1p-25f, 1)), 0x0001);
    cr_assert_eq(sl_f32_to_f16(0x1p-24f), 0x0001);
    cr_assert_eq(sl_f32_to_f16(3 * 0x1p-25f), 0x0002);
    cr_assert_eq(sl_f32_to_f16(1e-30f), 0x0000);
    cr_assert_eq(sl_f32_to_f16(-0.0f), 0x8000);
    cr_assert_eq(sl_f32_to_f16(bitsf(1)), 0x0000);     /* f32 subnormal */
    cr_assert_eq(sl_f32_to_f16(nextafterf(0x1p-14f, 0)), 0x0400);
    cr_assert_eq(sl_f32_to_f16(1.0f), 0x3c00);
    cr_assert_eq(sl_f32_to_f16(-2.5f), 0xc100);
    cr_assert_eq(sl_f32_to_f16(NAN) & 0x7e00, 0x7e00);
    cr_assert_eq(sl_f32_to_f16(bitsf(0x7f800001u)) & 0x7fff, 0x7e00, "signalling nan -> quiet, not inf");
}

Test(quant_bf16, exhaustive_and_rounding)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = sl_bf16_to_f32((sl_bf16)h);
        cr_assert_eq(fbits(f), h << 16);
        if (isnan(f)) cr_assert(isnan(sl_bf16_to_f32(sl_f32_to_bf16(f))), "h=%04x", h);
        else cr_assert_eq(sl_f32_to_bf16(f), h, "roundtrip h=%04x", h);
        if ((h & 0x7f80) == 0x7f80) continue;
        /* tie and neighbours (h's upper neighbour may be inf: still right) */
        uint32_t tie = (h << 16) | 0x8000;
        uint32_t even = (h & 1) ? h + 1 : h;
        cr_assert_eq(sl_f32_to_bf16(bitsf(tie)), even & 0xffff, "tie h=%04x", h);
        cr_assert_eq(sl_f32_to_bf16(bitsf(tie - 1)), h, "below h=%04x", h);
        cr_assert_eq(sl_f32_to_bf16(bitsf(tie + 1)), (h + 1) & 0xffff, "above h=%04x", h);
    }
    cr_assert(isnan(sl_bf16_to_f32(sl_f32_to_bf16(bitsf(0x7f800001u)))), "low-payload nan stays nan");
    cr_assert(isnan(sl_bf16_to_f32(sl_f32_to_bf16(bitsf(0xffffffffu)))));
    cr_assert_eq(sl_f32_to_bf16(INFINITY), 0x7f80);
    cr_assert_eq(sl_f32_to_bf16(3.4e38f), 0x7f80, "rounds up to inf");
}

/* ---- type table ------------------------------------------------------- */

struct gtype { const char *file; int type; int elems, bytes, row_bytes, vdt; };

static const struct gtype k_golden[] = {
    { "q4_0", SL_GGML_Q4_0, 32, 18, 288, SL_GGML_Q8_0 },
    { "q4_1", SL_GGML_Q4_1, 32, 20, 320, SL_GGML_Q8_1 },
    { "q5_0", SL_GGML_Q5_0, 32, 22, 352, SL_GGML_Q8_0 },
    { "q5_1", SL_GGML_Q5_1, 32, 24, 384, SL_GGML_Q8_1 },
    { "q8_0", SL_GGML_Q8_0, 32, 34, 544, SL_GGML_Q8_0 },
    { "q2_k", SL_GGML_Q2_K, 256, 84, 168, SL_GGML_Q8_K },
    { "q3_k", SL_GGML_Q3_K, 256, 110, 220, SL_GGML_Q8_K },
    { "q4_k", SL_GGML_Q4_K, 256, 144, 288, SL_GGML_Q8_K },
    { "q5_k", SL_GGML_Q5_K, 256, 176, 352, SL_GGML_Q8_K },
    { "q6_k", SL_GGML_Q6_K, 256, 210, 420, SL_GGML_Q8_K },
    { "f16", SL_GGML_F16, 1, 2, 1024, SL_GGML_F16 },
    { "bf16", SL_GGML_BF16, 1, 2, 1024, SL_GGML_BF16 },
    { "iq4_nl", SL_GGML_IQ4_NL, 32, 18, 288, SL_GGML_Q8_0 },
    { "iq4_xs", SL_GGML_IQ4_XS, 256, 136, 272, SL_GGML_Q8_K },
    { "tq1_0", SL_GGML_TQ1_0, 256, 54, 108, SL_GGML_Q8_K },
    { "tq2_0", SL_GGML_TQ2_0, 256, 66, 132, SL_GGML_Q8_K },
    { "mxfp4", SL_GGML_MXFP4, 32, 17, 272, SL_GGML_Q8_0 },
};
#define NGOLDEN (int)(sizeof k_golden / sizeof k_golden[0])

Test(quant_type, table)
{
    for (int i = 0; i < NGOLDEN; i++) {
        const struct gtype *g = &k_golden[i];
        cr_assert_eq((int)sl_gguf_block_elems(g->type), g->elems, "%s", g->file);
        cr_assert_eq((int)sl_gguf_block_bytes(g->type), g->bytes, "%s", g->file);
        cr_assert_eq(sl_gguf_row_bytes(g->type, COLS), (size_t)g->row_bytes, "%s", g->file);
        cr_assert_eq(sl_quant_vec_dot_type(g->type), g->vdt, "%s", g->file);
        cr_assert(sl_quant_is_supported(g->type), "%s", g->file);
        char up[8];
        snprintf(up, sizeof up, "%s", sl_gguf_type_name(g->type));
        for (char *c = up; *c; c++) if (*c == 'K') *c = 'k';
        cr_assert_str_eq(up, g->file);
    }
    cr_assert_eq(sl_gguf_block_bytes(SL_GGML_F32), 4);
    cr_assert_eq(sl_quant_vec_dot_type(SL_GGML_F32), SL_GGML_F32);
    cr_assert(sl_quant_is_supported(SL_GGML_F32));
    cr_assert_eq(sl_gguf_block_bytes(SL_GGML_Q8_K), 292);
    cr_assert_eq(sl_gguf_block_elems(SL_GGML_Q8_K), 256);
    cr_assert_eq(sl_gguf_block_bytes(SL_GGML_Q8_1), 36);
    cr_assert(!sl_quant_is_supported(SL_GGML_Q8_K), "activation-only");
    cr_assert(!sl_quant_is_supported(SL_GGML_Q8_1), "activation-only");
    /* unknown ids: the shared table's failure and message (test_gguf_type.c) */
    const int bad[] = { -1, 4, 5, 24, 28, 31, 36, 40, 1000, -100000 };
    float x[32] = {0}, y[32];
    uint8_t buf[64];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "unknown ggml tensor type %u", (uint32_t)bad[i]);
        sl_err_clear();
        cr_assert_eq(sl_quant_vec_dot_type(bad[i]), -1);
        cr_assert_str_eq(sl_last_error(), want);
        cr_assert(!sl_quant_is_supported(bad[i]));
        sl_err_clear();
        cr_assert_eq(sl_quant_dequantize_row(bad[i], buf, y, 32), SL_EUNSUPPORTED);
        cr_assert_str_eq(sl_last_error(), want);
        sl_err_clear();
        cr_assert_eq(sl_quant_quantize_row(bad[i], x, buf, 32), SL_EUNSUPPORTED);
        cr_assert_str_eq(sl_last_error(), want);
    }
    cr_assert_eq(sl_gguf_row_bytes(SL_GGML_Q6_K, (int64_t)14336 * 4096), (size_t)14336 * 4096 / 256 * 210);
}

/* ---- dequantizers, bit for bit ---------------------------------------- */

Test(quant_golden, dequantize_bit_exact)
{
    for (int i = 0; i < NGOLDEN; i++) {
        const struct gtype *g = &k_golden[i];
        char name[64];
        snprintf(name, sizeof name, "%s.q", g->file);
        uint8_t *q = sl_test_golden_quant(name, (size_t)ROWS * g->row_bytes);
        snprintf(name, sizeof name, "%s.deq.f32", g->file);
        float *want = sl_test_golden_quant(name, sizeof(float) * ROWS * COLS);
        float *got = malloc(sizeof(float) * ROWS * COLS);
        /* whole matrix as one long row, and row by row */
        cr_assert_eq(sl_quant_dequantize_row(g->type, q, got, ROWS * COLS), 0);
        cr_assert_eq(memcmp(got, want, sizeof(float) * ROWS * COLS), 0, "%s: whole", g->file);
        memset(got, 0xff, sizeof(float) * ROWS * COLS);
        for (int r = 0; r < ROWS; r++) {
            cr_assert_eq(sl_quant_dequantize_row(g->type, q + (size_t)r * g->row_bytes, got + r * COLS, COLS), 0);
            for (int j = 0; j < COLS; j++)
                cr_assert_eq(fbits(got[r * COLS + j]), fbits(want[r * COLS + j]),
                             "%s row %d col %d: %a vs %a", g->file, r, j, got[r * COLS + j], want[r * COLS + j]);
        }
        free(q); free(want); free(got);
    }
}

Test(quant_golden, f32_identity)
{
    float *x = sl_test_golden_quant("input.f32", sizeof(float) * ROWS * COLS);
    float *y = malloc(sizeof(float) * ROWS * COLS), *z = malloc(sizeof(float) * ROWS * COLS);
    cr_assert_eq(sl_quant_quantize_row(SL_GGML_F32, x, y, ROWS * COLS), (int64_t)sizeof(float) * ROWS * COLS);
    cr_assert_eq(sl_quant_dequantize_row(SL_GGML_F32, y, z, ROWS * COLS), 0);
    cr_assert_eq(memcmp(x, z, sizeof(float) * ROWS * COLS), 0);
    free(x); free(y); free(z);
}

/* ---- activation quantizers, byte for byte ----------------------------- */

struct gact { const char *file; int type; size_t bytes; };
static const struct gact k_act[] = {
    { "q8_k", SL_GGML_Q8_K, 584 }, { "q8_0", SL_GGML_Q8_0, 544 }, { "q8_1", SL_GGML_Q8_1, 576 },
    { "f16", SL_GGML_F16, 1024 }, { "bf16", SL_GGML_BF16, 1024 },
};

Test(quant_golden, activation_bytes)
{
    float *a = sl_test_golden_quant("act.f32", sizeof(float) * COLS);
    uint8_t buf[2048];
    float deq[COLS];
    for (size_t i = 0; i < sizeof k_act / sizeof k_act[0]; i++) {
        const struct gact *g = &k_act[i];
        char name[64];
        snprintf(name, sizeof name, "act.%s", g->file);
        uint8_t *want = sl_test_golden_quant(name, g->bytes);
        snprintf(name, sizeof name, "act.%s.deq.f32", g->file);
        float *want_deq = sl_test_golden_quant(name, sizeof(float) * COLS);

        memset(buf, 0xa5, sizeof buf);
        switch (g->type) {
        case SL_GGML_Q8_K: sl_quant_row_q8_k(a, (sl_block_q8_k *)buf, COLS); break;
        case SL_GGML_Q8_0: sl_quant_row_q8_0(a, (sl_block_q8_0 *)buf, COLS); break;
        case SL_GGML_Q8_1: sl_quant_row_q8_1(a, (sl_block_q8_1 *)buf, COLS); break;
        case SL_GGML_F16: sl_quant_row_f16(a, (sl_f16 *)buf, COLS); break;
        case SL_GGML_BF16: sl_quant_row_bf16(a, (sl_bf16 *)buf, COLS); break;
        }
        for (size_t j = 0; j < g->bytes; j++)
            cr_assert_eq(buf[j], want[j], "act.%s byte %zu: %02x vs %02x", g->file, j, buf[j], want[j]);
        cr_assert_eq(buf[g->bytes], 0xa5, "act.%s wrote past the row", g->file);

        /* the generic entry point gives the same bytes */
        memset(buf, 0, sizeof buf);
        cr_assert_eq(sl_quant_quantize_row(g->type, a, buf, COLS), (int64_t)g->bytes);
        cr_assert_eq(memcmp(buf, want, g->bytes), 0, "act.%s via quantize_row", g->file);

        cr_assert_eq(sl_quant_dequantize_row(g->type, want, deq, COLS), 0);
        cr_assert_eq(memcmp(deq, want_deq, sizeof deq), 0, "act.%s.deq.f32", g->file);
        free(want); free(want_deq);
    }
    free(a);
}

/* q8_K on every golden input row: reference semantics checked directly. */
Test(quant_act, q8_k_semantics)
{
    float *x = sl_test_golden_quant("input.f32", sizeof(float) * ROWS * COLS);
    sl_block_q8_k b[2];
    for (int r = 0; r < ROWS; r++) {
        sl_quant_row_q8_k(x + r * COLS, b, COLS);
        for (int k = 0; k < 2; k++) {
            const float *xs = x + r * COLS + 256 * k;
            float amax = 0, max = 0;
            for (int j = 0; j < 256; j++) if (fabsf(xs[j]) > amax) { amax = fabsf(xs[j]); max = xs[j]; }
            if (amax == 0) {
                cr_assert_eq(b[k].d, 0.0f);
                for (int j = 0; j < 256; j++) cr_assert_eq(b[k].qs[j], 0);
                for (int j = 0; j < 16; j++) cr_assert_eq(b[k].bsums[j], 0);
                continue;
            }
            float is = -127.0f / max;
            cr_assert_eq(fbits(b[k].d), fbits(1.0f / is), "row %d", r);
            for (int j = 0; j < 256; j++) {
                float v = nearbyintf(is * xs[j]);
                if (v > 127) v = 127;
                cr_assert_eq(b[k].qs[j], (int)v, "row %d blk %d el %d", r, k, j);
            }
            for (int s = 0; s < 16; s++) {
                int sum = 0;
                for (int j = 0; j < 16; j++) sum += b[k].qs[16 * s + j];
                cr_assert_eq(b[k].bsums[s], sum);
            }
        }
    }
    free(x);
}

/* ---- simple weight quantizers reproduce the golden bytes -------------- */

Test(quant_golden, simple_types_exact_bytes)
{
    static const char *simple[] = { "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "f16", "bf16" };
    float *x = sl_test_golden_quant("input.f32", sizeof(float) * ROWS * COLS);
    for (size_t s = 0; s < sizeof simple / sizeof simple[0]; s++) {
        const struct gtype *g = NULL;
        for (int i = 0; i < NGOLDEN; i++) if (!strcmp(k_golden[i].file, simple[s])) g = &k_golden[i];
        cr_assert_not_null(g);
        char name[64];
        snprintf(name, sizeof name, "%s.q", g->file);
        uint8_t *want = sl_test_golden_quant(name, (size_t)ROWS * g->row_bytes);
        uint8_t *got = malloc((size_t)ROWS * g->row_bytes);
        for (int r = 0; r < ROWS; r++) {
            cr_assert_eq(sl_quant_quantize_row(g->type, x + r * COLS, got + (size_t)r * g->row_bytes, COLS),
                         (int64_t)g->row_bytes);
            for (int j = 0; j < g->row_bytes; j++)
                cr_assert_eq(got[(size_t)r * g->row_bytes + j], want[(size_t)r * g->row_bytes + j],
                             "%s row %d byte %d", g->file, r, j);
        }
        free(want); free(got);
    }
    free(x);
}

/* ---- bad arguments ---------------------------------------------------- */

Test(quant_args, bad_arguments)
{
    float x[512] = {0}, y[512];
    uint8_t buf[4096];
    for (int i = 0; i < NGOLDEN; i++) {
        int t = k_golden[i].type, be = k_golden[i].elems;
        if (be > 1) {
            cr_assert_eq(sl_quant_dequantize_row(t, buf, y, be + 1), -EINVAL, "%s", k_golden[i].file);
            cr_assert_eq(sl_quant_quantize_row(t, x, buf, be + 1), -EINVAL, "%s", k_golden[i].file);
            cr_assert_eq(sl_quant_quantize_row(t, x, buf, be / 2), -EINVAL, "%s", k_golden[i].file);
        }
        cr_assert_eq(sl_quant_dequantize_row(t, buf, y, -be), -EINVAL);
        cr_assert_eq(sl_quant_quantize_row(t, x, buf, -be), -EINVAL);
        cr_assert_eq(sl_quant_dequantize_row(t, NULL, y, be), -EINVAL);
        cr_assert_eq(sl_quant_dequantize_row(t, buf, NULL, be), -EINVAL);
        cr_assert_eq(sl_quant_quantize_row(t, NULL, buf, be), -EINVAL);
        cr_assert_eq(sl_quant_quantize_row(t, x, NULL, be), -EINVAL);
        cr_assert_eq(sl_quant_dequantize_row(t, NULL, NULL, 0), 0, "empty row is fine");
        cr_assert_eq(sl_quant_quantize_row(t, NULL, NULL, 0), 0);
    }
    cr_assert_eq(sl_quant_quantize_row(SL_GGML_Q8_K, x, buf, 300), -EINVAL);
    cr_assert_eq(sl_quant_quantize_row(SL_GGML_Q8_1, x, buf, 40), -EINVAL);
    cr_assert_eq(sl_quant_dequantize_row(SL_GGML_Q8_K, buf, y, 128), -EINVAL);
    cr_assert_eq(sl_quant_dequantize_row(4, buf, y, 32), SL_EUNSUPPORTED);
    cr_assert_eq(sl_quant_dequantize_row(-1, buf, y, 32), SL_EUNSUPPORTED);
    cr_assert_eq(sl_quant_dequantize_row(SL_GGML_TYPE_COUNT, buf, y, 32), SL_EUNSUPPORTED);
    cr_assert_eq(sl_quant_quantize_row(99, x, buf, 32), SL_EUNSUPPORTED);
}

/* ---- weight quantizers: reconstruction error vs ggml's ---------------- */

/* Thresholds: overall RMSE <= 1.03x ggml's, every row <= 1.10x ggml's (plus
 * an absolute floor of 1e-6 of the row's RMS for rows ggml gets ~exact). */
#define RMSE_OVERALL_MAX 1.03
#define RMSE_ROW_MAX 1.10

static double rms_err(const float *a, const float *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) { double d = (double)a[i] - b[i]; s += d * d; }
    return sqrt(s / n);
}

Test(quant_rmse, no_worse_than_ggml, .timeout = 60)
{
    float *x = sl_test_golden_quant("input.f32", sizeof(float) * ROWS * COLS);
    float *deq = malloc(sizeof(float) * ROWS * COLS);
    uint8_t *qb = malloc(2048);
    for (int i = 0; i < NGOLDEN; i++) {
        const struct gtype *g = &k_golden[i];
        char name[64];
        snprintf(name, sizeof name, "%s.deq.f32", g->file);
        float *gold = sl_test_golden_quant(name, sizeof(float) * ROWS * COLS);
        double se_me = 0, se_gold = 0, worst = 0;
        int worst_row = -1;
        for (int r = 0; r < ROWS; r++) {
            const float *xr = x + r * COLS;
            cr_assert_eq(sl_quant_quantize_row(g->type, xr, qb, COLS), (int64_t)g->row_bytes);
            cr_assert_eq(sl_quant_dequantize_row(g->type, qb, deq + r * COLS, COLS), 0);
            for (int j = 0; j < COLS; j++) cr_assert(isfinite(deq[r * COLS + j]), "%s row %d: non-finite", g->file, r);
            double me = rms_err(deq + r * COLS, xr, COLS), gd = rms_err(gold + r * COLS, xr, COLS);
            double rms = 0;
            for (int j = 0; j < COLS; j++) rms += (double)xr[j] * xr[j];
            rms = sqrt(rms / COLS);
            cr_assert(me <= RMSE_ROW_MAX * gd + 1e-6 * rms, "%s row %d: rmse %g vs ggml %g (x%.3f)",
                      g->file, r, me, gd, gd > 0 ? me / gd : 0.0);
            se_me += me * me; se_gold += gd * gd;
            if (gd > 0 && me / gd > worst) { worst = me / gd; worst_row = r; }
        }
        double ratio = sqrt(se_me / se_gold);
        cr_log_info("rmse %-5s overall %.4f x ggml, worst row %d: %.4f x", g->file, ratio, worst_row, worst);
        cr_assert(ratio <= RMSE_OVERALL_MAX, "%s: overall rmse ratio %.4f", g->file, ratio);
        free(gold);
    }
    free(x); free(deq); free(qb);
}

/* With the golden importance matrix (imatrix.f32, what ggml's .q used), the
 * imatrix-weighted error of IQ4_NL / IQ4_XS is no worse than ggml's (same
 * overall threshold as above) and lower than without the matrix, which
 * changes most rows. */
Test(quant_rmse, imatrix_weighted_no_worse_than_ggml, .timeout = 60)
{
    static const struct { const char *file; int type; } ts[] = {
        { "iq4_nl", SL_GGML_IQ4_NL }, { "iq4_xs", SL_GGML_IQ4_XS },
    };
    float *x = sl_test_golden_quant("input.f32", sizeof(float) * ROWS * COLS);
    float *im = sl_test_golden_quant("imatrix.f32", sizeof(float) * COLS);
    float deq[COLS], deq0[COLS];
    uint8_t qb[2048], q0[2048];
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.deq.f32", ts[i].file);
        float *gold = sl_test_golden_quant(name, sizeof(float) * ROWS * COLS);
        double se_me = 0, se_gold = 0, se_plain = 0;
        int differs = 0;
        for (int r = 0; r < ROWS; r++) {
            const float *xr = x + r * COLS;
            int64_t rb = sl_quant_quantize_row_imat(ts[i].type, xr, qb, COLS, im);
            cr_assert_gt(rb, 0);
            cr_assert_eq(sl_quant_quantize_row(ts[i].type, xr, q0, COLS), rb);
            differs += memcmp(qb, q0, (size_t)rb) != 0;
            cr_assert_eq(sl_quant_dequantize_row(ts[i].type, qb, deq, COLS), 0);
            cr_assert_eq(sl_quant_dequantize_row(ts[i].type, q0, deq0, COLS), 0);
            double wme = 0, wgold = 0, wplain = 0;
            for (int j = 0; j < COLS; j++) {
                double a = deq[j] - xr[j], g = gold[r * COLS + j] - xr[j], p = deq0[j] - xr[j];
                wme += im[j] * a * a; wgold += im[j] * g * g; wplain += im[j] * p * p;
            }
            se_me += wme; se_gold += wgold; se_plain += wplain;
        }
        double ratio = sqrt(se_me / se_gold);
        cr_log_info("imatrix-weighted rmse %-6s %.4f x ggml, %.4f x without the matrix", ts[i].file, ratio,
                    sqrt(se_me / se_plain));
        cr_assert(se_me < se_plain, "%s: the importance matrix did not lower the weighted error", ts[i].file);
        cr_assert(ratio <= RMSE_OVERALL_MAX, "%s: weighted rmse ratio %.4f", ts[i].file, ratio);
        cr_assert_gt(differs, ROWS / 2, "%s: the importance matrix changed only %d rows", ts[i].file, differs);
        free(gold);
    }
    free(x); free(im);
}

/* ---- edge cases, round trips ------------------------------------------ */

static const int k_weight_types[] = {
    SL_GGML_Q4_0, SL_GGML_Q4_1, SL_GGML_Q5_0, SL_GGML_Q5_1, SL_GGML_Q8_0, SL_GGML_Q2_K,
    SL_GGML_Q3_K, SL_GGML_Q4_K, SL_GGML_Q5_K, SL_GGML_Q6_K, SL_GGML_F16, SL_GGML_BF16, SL_GGML_F32,
    SL_GGML_IQ4_NL, SL_GGML_IQ4_XS, SL_GGML_MXFP4, SL_GGML_TQ1_0, SL_GGML_TQ2_0,
};
#define NWT (int)(sizeof k_weight_types / sizeof k_weight_types[0])

/* Relative RMSE bound per type on N(0,1) data (ggml's are ~0.6x these). */
static double rel_tol(int t)
{
    switch (t) {
    case SL_GGML_Q2_K: return 0.45;
    case SL_GGML_TQ1_0: case SL_GGML_TQ2_0: return 0.5;   /* 3 levels: ~0.44 at best */
    case SL_GGML_MXFP4: return 0.2;
    case SL_GGML_IQ4_NL: case SL_GGML_IQ4_XS: return 0.12;
    case SL_GGML_Q3_K: return 0.25;
    case SL_GGML_Q4_0: case SL_GGML_Q4_1: case SL_GGML_Q4_K: return 0.15;
    case SL_GGML_Q5_0: case SL_GGML_Q5_1: case SL_GGML_Q5_K: return 0.08;
    case SL_GGML_Q6_K: return 0.04;
    case SL_GGML_Q8_0: return 0.01;
    case SL_GGML_F16: return 1e-3;
    case SL_GGML_BF16: return 6e-3;
    default: return 0;
    }
}

static uint64_t rng_state;
static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float rng_normal(void)
{
    double u1 = ((rng_next() >> 11) + 1) * 0x1p-53, u2 = (rng_next() >> 11) * 0x1p-53;
    return (float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
}

static double quant_roundtrip(int t, const float *x, float *y, int n)
{
    size_t rb = sl_gguf_row_bytes(t, n);
    uint8_t *q = malloc(rb + 64);
    memset(q + rb, 0x5a, 64);
    cr_assert_eq(sl_quant_quantize_row(t, x, q, n), (int64_t)rb, "%s n=%d", sl_gguf_type_name(t), n);
    for (int i = 0; i < 64; i++) cr_assert_eq(q[rb + i], 0x5a, "%s wrote past the row", sl_gguf_type_name(t));
    cr_assert_eq(sl_quant_dequantize_row(t, q, y, n), 0);
    free(q);
    return rms_err(x, y, n);
}

Test(quant_weights, random_roundtrip_and_lengths)
{
    rng_state = 42;
    static const int lens[] = { 256, 512, 1024, 4096 };
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int n = lens[li];
        float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
        for (int s = 0; s < 3; s++) {
            float scale = s == 0 ? 1.0f : s == 1 ? 0.02f : 300.0f;
            for (int i = 0; i < n; i++) x[i] = scale * rng_normal();
            for (int k = 0; k < NWT; k++) {
                int t = k_weight_types[k];
                double e = quant_roundtrip(t, x, y, n) / scale;
                cr_assert(e <= rel_tol(t), "%s n=%d scale %g: rel rmse %g", sl_gguf_type_name(t), n, scale, e);
            }
        }
        free(x); free(y);
    }
}

/* Many blocks in one call give the same bytes as block by block. */
Test(quant_weights, long_row_equals_blockwise)
{
    float *x = sl_test_golden_quant("input.f32", sizeof(float) * ROWS * COLS);
    for (int k = 0; k < NWT; k++) {
        int t = k_weight_types[k], be = sl_gguf_block_elems(t), bb = sl_gguf_block_bytes(t);
        size_t rb = sl_gguf_row_bytes(t, ROWS * COLS);
        uint8_t *a = malloc(rb), *b = malloc(rb);
        cr_assert_eq(sl_quant_quantize_row(t, x, a, ROWS * COLS), (int64_t)rb);
        int step = be < 256 ? 256 : be;   /* keep it quick for 1-element "blocks" */
        for (int i = 0; i < ROWS * COLS; i += step)
            cr_assert_eq(sl_quant_quantize_row(t, x + i, b + (size_t)i / be * bb, step), (int64_t)step / be * bb);
        cr_assert_eq(memcmp(a, b, rb), 0, "%s", sl_gguf_type_name(t));
        free(a); free(b);
    }
    free(x);
}

/* Legacy formats: requantizing a dequantized row reproduces it. */
Test(quant_weights, legacy_idempotent)
{
    static const int types[] = { SL_GGML_Q4_0, SL_GGML_Q4_1, SL_GGML_Q5_0, SL_GGML_Q5_1, SL_GGML_Q8_0, SL_GGML_F16, SL_GGML_BF16 };
    float *x = sl_test_golden_quant("input.f32", sizeof(float) * ROWS * COLS);
    float *y = malloc(sizeof(float) * ROWS * COLS), *z = malloc(sizeof(float) * ROWS * COLS);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        quant_roundtrip(types[k], x, y, ROWS * COLS);
        double e = quant_roundtrip(types[k], y, z, ROWS * COLS);
        double e0 = rms_err(x, y, ROWS * COLS);
        cr_assert(e <= 1e-3 * e0, "%s: second pass moved values (%g vs first %g)", sl_gguf_type_name(types[k]), e, e0);
    }
    free(x); free(y); free(z);
}

static void fill_case(int c, float *x, int n)
{
    for (int i = 0; i < n; i++) {
        switch (c) {
        case 0: x[i] = 0.0f; break;                                   /* zeros */
        case 1: x[i] = -3.5f; break;                                  /* negative constant */
        case 2: x[i] = 0.25f; break;                                  /* positive constant */
        case 3: x[i] = i % 97 == 5 ? 1000.0f : 0.0f; break;           /* lone spikes */
        case 4: x[i] = (i & 1) ? 65504.0f : -65504.0f; break;         /* f16 extremes */
        case 5: x[i] = 1e-7f * rng_normal(); break;                   /* f16-subnormal scales */
        case 6: x[i] = -fabsf(rng_normal()) - 4.0f; break;            /* all negative */
        case 7: x[i] = fabsf(rng_normal()) + 4.0f; break;             /* all positive, offset */
        case 8: x[i] = rng_normal() * (i % 256 < 16 ? 1e4f : 1e-3f); break; /* one loud sub-block */
        case 9: x[i] = 1e-30f * rng_normal(); break;                  /* below f16 entirely */
        case 10: x[i] = -0.0f; break;
        }
    }
}
#define NCASES 11

Test(quant_weights, edge_cases_finite_and_bounded)
{
    rng_state = 7;
    const int n = 512;
    float x[512], y[512];
    for (int c = 0; c < NCASES; c++) {
        fill_case(c, x, n);
        double rms = 0, amax = 0;
        for (int i = 0; i < n; i++) { rms += (double)x[i] * x[i]; amax = fmax(amax, fabs(x[i])); }
        rms = sqrt(rms / n);
        for (int k = 0; k < NWT; k++) {
            int t = k_weight_types[k];
            double e = quant_roundtrip(t, x, y, n);
            for (int i = 0; i < n; i++) cr_assert(isfinite(y[i]), "%s case %d el %d: %g", sl_gguf_type_name(t), c, i, y[i]);
            if (c == 0 || c == 10) for (int i = 0; i < n; i++) cr_assert_eq(y[i], 0.0f, "%s zeros", sl_gguf_type_name(t));
            /* flat rows are (nearly) exact: within f16 resolution */
            /* (MXFP4's power-of-two scales cannot put -3.5 on a level) */
            if ((c == 1 || c == 2) && t != SL_GGML_MXFP4) cr_assert(e <= 1e-3 * rms, "%s case %d: rmse %g", sl_gguf_type_name(t), c, e);
            /* no value further off than the row's magnitude (plus the f16
             * subnormal quantum times a few levels: scales are f16) */
            for (int i = 0; i < n; i++)
                cr_assert(fabs((double)y[i] - x[i]) <= 1.01 * amax + 64 * 0x1p-24, "%s case %d el %d: %g vs %g",
                          sl_gguf_type_name(t), c, i, y[i], x[i]);
            if (c == 5 || c == 8 || c == 9 || c == 3) continue;   /* f16 range limits dominate */
            if (t != SL_GGML_F32) cr_assert(e <= 1.5 * rel_tol(t) * rms + 1e-30, "%s case %d: rel rmse %g",
                                         sl_gguf_type_name(t), c, e / rms);
        }
    }
}

/* Hostile bytes (nan/inf scales, any bit pattern) dequantize without faults. */
Test(quant_weights, dequantize_random_bytes)
{
    rng_state = 99;
    uint8_t buf[4 * 292];
    float y[1024];
    int types[] = { SL_GGML_Q4_0, SL_GGML_Q4_1, SL_GGML_Q5_0, SL_GGML_Q5_1, SL_GGML_Q8_0, SL_GGML_Q8_1, SL_GGML_Q2_K, SL_GGML_Q3_K,
                    SL_GGML_Q4_K, SL_GGML_Q5_K, SL_GGML_Q6_K, SL_GGML_Q8_K, SL_GGML_F16, SL_GGML_BF16, SL_GGML_F32,
                    SL_GGML_IQ4_NL, SL_GGML_IQ4_XS, SL_GGML_MXFP4, SL_GGML_TQ1_0, SL_GGML_TQ2_0 };
    for (int it = 0; it < 20; it++) {
        for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)rng_next();
        for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
            int64_t n = (int64_t)(sizeof buf / (size_t)sl_gguf_block_bytes(types[k])) * sl_gguf_block_elems(types[k]);
            if (n > 1024) n = 1024 / sl_gguf_block_elems(types[k]) * sl_gguf_block_elems(types[k]);
            cr_assert_eq(sl_quant_dequantize_row(types[k], buf, y, n), 0);
        }
    }
}

/* q8_0 / q8_1 reference semantics on every golden input row. */
Test(quant_act, q8_0_q8_1_semantics)
{
    float *x = sl_test_golden_quant("input.f32", sizeof(float) * ROWS * COLS);
    sl_block_q8_0 b0[16];
    sl_block_q8_1 b1[16];
    for (int r = 0; r < ROWS; r++) {
        sl_quant_row_q8_0(x + r * COLS, b0, COLS);
        sl_quant_row_q8_1(x + r * COLS, b1, COLS);
        for (int k = 0; k < 16; k++) {
            const float *xs = x + r * COLS + 32 * k;
            float amax = 0;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(xs[j]));
            float d = amax / 127, id = d ? 1 / d : 0;
            cr_assert_eq(b0[k].d, sl_f32_to_f16(d));
            cr_assert_eq(b1[k].d, sl_f32_to_f16(d));
            int sum = 0;
            for (int j = 0; j < 32; j++) {
                int q = (int)roundf(xs[j] * id);
                cr_assert_eq(b0[k].qs[j], q, "row %d blk %d el %d", r, k, j);
                cr_assert_eq(b1[k].qs[j], q);
                sum += q;
            }
            cr_assert_eq(b1[k].s, sl_f32_to_f16((float)sum * d));
        }
    }
    free(x);
}

/* inf / nan input: no fault, and every block without one is quantized
 * exactly as on its own (damage stays inside the block). */
Test(quant_weights, nonfinite_input_is_block_local)
{
    rng_state = 1234;
    const int n = 1024;
    float x[1024], clean[256];
    int types[] = { SL_GGML_Q4_0, SL_GGML_Q4_1, SL_GGML_Q5_0, SL_GGML_Q5_1, SL_GGML_Q8_0, SL_GGML_Q8_1, SL_GGML_Q8_K, SL_GGML_Q2_K,
                    SL_GGML_Q3_K, SL_GGML_Q4_K, SL_GGML_Q5_K, SL_GGML_Q6_K, SL_GGML_F16, SL_GGML_BF16,
                    SL_GGML_IQ4_NL, SL_GGML_IQ4_XS, SL_GGML_MXFP4, SL_GGML_TQ1_0, SL_GGML_TQ2_0 };
    const float bad[] = { INFINITY, -INFINITY, NAN, 3e38f };
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        for (int i = 0; i < n; i++) x[i] = rng_normal();
        x[300] = bad[b];            /* in K super-block 1, legacy block 9 */
        for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
            int t = types[k], be = sl_gguf_block_elems(t), bb = sl_gguf_block_bytes(t);
            size_t rb = sl_gguf_row_bytes(t, n);
            uint8_t *q = malloc(rb), *one = malloc((size_t)bb * 256);
            cr_assert_eq(sl_quant_quantize_row(t, x, q, n), (int64_t)rb);
            int unit = be < 256 ? 256 : be;
            for (int s = 0; s < n; s += unit) {
                memcpy(clean, x + s, sizeof(float) * unit);
                cr_assert_eq(sl_quant_quantize_row(t, clean, one, unit), (int64_t)unit / be * bb);
                for (int blk = 0; blk < unit / be; blk++) {
                    int e0 = s + blk * be;
                    if (300 >= e0 && 300 < e0 + be) continue;
                    cr_assert_eq(memcmp(q + (size_t)e0 / be * bb, one + (size_t)blk * bb, (size_t)bb), 0,
                                 "%s bad=%g block at %d", sl_gguf_type_name(t), bad[b], e0);
                }
            }
            free(q); free(one);
        }
    }
}

/* The pieces together: the weight row and the activation quantized to the
 * table's vec_dot_type, both dequantized, dotted in double = ggml's f64 dot. */
Test(quant_golden, dequantized_dot_matches_f64)
{
    float *a = sl_test_golden_quant("act.f32", sizeof(float) * COLS);
    float ad[COLS], wd[COLS];
    uint8_t abuf[2048];
    for (int i = 0; i < NGOLDEN; i++) {
        const struct gtype *g = &k_golden[i];
        int vdt = sl_quant_vec_dot_type(g->type);
        cr_assert_geq(sl_quant_quantize_row(vdt, a, abuf, COLS), 0);
        cr_assert_eq(sl_quant_dequantize_row(vdt, abuf, ad, COLS), 0);
        char name[64];
        snprintf(name, sizeof name, "%s.q", g->file);
        uint8_t *q = sl_test_golden_quant(name, (size_t)ROWS * g->row_bytes);
        snprintf(name, sizeof name, "%s.dot.f64", g->file);
        double *want = sl_test_golden_quant(name, sizeof(double) * ROWS);
        for (int r = 0; r < ROWS; r++) {
            cr_assert_eq(sl_quant_dequantize_row(g->type, q + (size_t)r * g->row_bytes, wd, COLS), 0);
            double dot = 0, mag = 0;
            for (int j = 0; j < COLS; j++) { dot += (double)wd[j] * ad[j]; mag += fabs((double)wd[j] * ad[j]); }
            cr_assert(fabs(dot - want[r]) <= 1e-13 * mag, "%s row %d: %.17g vs %.17g", g->file, r, dot, want[r]);
        }
        free(q); free(want);
    }
    free(a);
}
