/* kernels/dot_*: every SIMD level against the scalar oracle on random data of
 * many shapes, every level against ggml's golden dot products, and the
 * activation quantizer wrapper against the golden activation bytes.
 *
 * Tolerance (derived, not tuned): every level computes exact integer sums
 * (per block, per sub-block or per vector lane, possibly with q stored as
 * q + offset and the offset removed through the activation block sums), turns
 * each into float with at most 3 roundings (convert, scale product, multiply)
 * and adds these terms in its own order: per lane over the nb blocks, then a
 * lane reduction of depth <= 4, then the min/offset part (depth 1). With
 * u = 2^-24 each result is within (nb + 12) u M of the exact dot, where M
 * bounds the sum of |term| for any such grouping: M = sum over elements of
 * |d sc| (|q| + 2 offset) |y| + |dmin m| |y| (sl_dot_scalar_mag). Two levels
 * therefore differ by at most 2 (nb + 12) u M. Float types are the case of
 * 1-element blocks. ggml's golden values are sums of the same kind of terms,
 * so the same bound applies to them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kern_internal.h"
#include "kern_rand.h"
#include "sl_test.h"
#include "golden_quant.h"

#define U KR_U

static const int types[] = { KR_DOT_TYPES };
#define NTYPES (int)(sizeof types / sizeof types[0])

static double bound(int t, int64_t n, const void *x, const void *y)
{
    int64_t nb = n / sl_gguf_block_elems(t);
    return 2.0 * (double)(nb + 12) * U * (double)sl_dot_scalar_mag(t, n, x, y) + 1e-30;
}

Test(kern_dot, levels_present)
{
    const sl_kern *s = sl_kern_for(SL_ISA_SCALAR);
    cr_assert_not_null(s);
    for (int i = 0; i < NTYPES; i++) cr_assert_not_null(s->vec_dot[types[i]]);
    const sl_kern *b = sl_kern_best();
    cr_assert_not_null(b);
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        const sl_kern *k = sl_kern_for(isa);
        if (!k) continue;
        cr_log_info("level %s available", k->name);
        cr_assert_eq(k->isa, isa);
        for (int i = 0; i < NTYPES; i++) cr_assert_not_null(k->vec_dot[types[i]]);
    }
#if defined(__aarch64__)
    cr_assert_not_null(sl_kern_for(SL_ISA_NEON));
#endif
    cr_assert_null(sl_kern_for(-1));
    cr_assert_null(sl_kern_for(SL_ISA_COUNT));
}

Test(kern_dot, env_forces_level)
{
    const sl_kern *k = NULL;
    setenv("SLUICE_ISA", "scalar", 1);
    cr_assert_eq(sl_kern_best_checked(&k), 0);
    cr_assert_eq(k, sl_kern_for(SL_ISA_SCALAR));
    setenv("SLUICE_ISA", "no-such-isa", 1);
    cr_assert_lt(sl_kern_best_checked(&k), 0);
    cr_assert_null(k);
    cr_assert_null(sl_kern_best());
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        setenv("SLUICE_ISA", sl_isa_name(isa), 1);
        int rc = sl_kern_best_checked(&k);
        if (sl_kern_for(isa)) { cr_assert_eq(rc, 0); cr_assert_eq(k, sl_kern_for(isa)); }
        else { cr_assert_lt(rc, 0, "%s unavailable must fail", sl_isa_name(isa)); cr_assert_null(k); }
    }
    unsetenv("SLUICE_ISA");
    cr_assert_eq(sl_kern_best_checked(&k), 0);
    cr_assert_not_null(k);
}

/* Random rows of many lengths: each level vs the scalar oracle. */
Test(kern_dot, simd_equals_scalar_random)
{
    static const int nblocks[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 56};
    static const int nfloat[] = {1, 3, 8, 15, 16, 17, 31, 32, 33, 64, 100, 255, 1000, 4097};
    const sl_kern *sc = sl_kern_for(SL_ISA_SCALAR);
    uint64_t seed = 12345;
    for (int ti = 0; ti < NTYPES; ti++) {
        int t = types[ti];
        int be = sl_gguf_block_elems(t);
        int nn = be == 1 ? (int)(sizeof nfloat / sizeof *nfloat) : (int)(sizeof nblocks / sizeof *nblocks);
        for (int si = 0; si < nn; si++) {
            int64_t n = be == 1 ? nfloat[si] : (int64_t)nblocks[si] * be;
            for (int rep = 0; rep < 3; rep++) {
                void *x = kr_weights(t, 1, n, &seed);
                void *y = kr_act(sc, t, 1, n, &seed);
                cr_assert(x && y);
                float ref;
                sc->vec_dot[t](n, &ref, x, y);
                double tol = bound(t, n, x, y);
                cr_assert(isfinite(ref), "%s n=%lld", sl_gguf_type_name(t), (long long)n);
                for (int isa = 1; isa < SL_ISA_COUNT; isa++) {
                    const sl_kern *k = sl_kern_for(isa);
                    if (!k) continue;
                    float s = NAN;
                    k->vec_dot[t](n, &s, x, y);
                    cr_assert(fabs((double)s - (double)ref) <= tol,
                              "%s %s n=%lld: %.9g vs scalar %.9g (tol %.3g)", k->name,
                              sl_gguf_type_name(t), (long long)n, s, ref, tol);
                }
                free(x);
                free(y);
            }
        }
    }
}

/* The 32-element types against Q8_0 activations at their corners: every
 * weight at the most negative (or largest) level, activations at -127 / 127
 * (the quantizer's range: x86's sign trick has no -128).
 * Kernels summing int8 products in int16 (aarch64 neon: MXFP4 four a lane,
 * IQ4_NL two) would wrap with one product too many; each level vs the
 * oracle, and gemm / gemm_wide (2 weight rows) bit for bit its vec_dot. */
Test(kern_dot, q8_act_types_extreme_fields)
{
    enum { NB = 7, N = NB * SL_QK, ROWS = 2, ACTS = SL_GEMM_WIDE };
    static const int qt[] = { SL_GGML_Q8_0, SL_GGML_IQ4_NL, SL_GGML_MXFP4 };
    static const uint8_t wpat[3][3] = { { 0x80, 0x7f, 0x81 }, { 0x00, 0xff, 0x0f }, { 0xff, 0x77, 0xf7 } };
    static const int8_t apat[] = { -127, 127, -126 };
    const sl_kern *sc = sl_kern_for(SL_ISA_SCALAR);
    sl_block_q8_0 A[ACTS][NB];
    for (int a = 0; a < ACTS; a++)
        for (int b = 0; b < NB; b++) {
            A[a][b].d = (sl_f16)(0x3c00 + a + b);             /* 1.0 and just above */
            for (int i = 0; i < SL_QK; i++) A[a][b].qs[i] = apat[(a + (i & b)) % 3];
        }
    for (int ti = 0; ti < 3; ti++) {
        int t = qt[ti];
        size_t rb = sl_gguf_row_bytes(t, N), bb = rb / NB;
        uint8_t W[ROWS][NB * sizeof(sl_block_q8_0)];
        for (int p = 0; p < 3; p++) {
            for (int r = 0; r < ROWS; r++)
                for (int b = 0; b < NB; b++) {
                    uint8_t *blk = W[r] + b * bb;
                    memset(blk, wpat[ti][(p + r) % 3], bb);
                    if (t == SL_GGML_MXFP4) blk[0] = (uint8_t)(120 + b);
                    else { sl_f16 d = (sl_f16)(0x2c00 + b); memcpy(blk, &d, 2); }
                }
            for (int isa = 1; isa < SL_ISA_COUNT; isa++) {
                const sl_kern *k = sl_kern_for(isa);
                if (!k) continue;
                for (int r = 0; r < ROWS; r++)
                    for (int a = 0; a < ACTS; a++) {
                        float ref, s;
                        sc->vec_dot[t](N, &ref, W[r], A[a]);
                        k->vec_dot[t](N, &s, W[r], A[a]);
                        double tol = bound(t, N, W[r], A[a]);
                        cr_assert(fabs((double)s - (double)ref) <= tol, "%s %s pattern %d row %d act %d: %.9g vs scalar %.9g",
                                  k->name, sl_gguf_type_name(t), p, r, a, s, ref);
                    }
                sl_gemm_fn g[2] = { k->gemm[t], k->gemm_wide[t] };
                for (int gi = 0; gi < 2; gi++) {
                    if (!g[gi]) continue;
                    int maxy = gi ? SL_GEMM_WIDE : SL_GEMM_MAX;
                    for (int ny = 1; ny <= maxy; ny++) {
                        float Y[ACTS][ROWS];
                        g[gi](N, W, sizeof W[0], ROWS, A, sizeof A[0], ny, &Y[0][0], ROWS);
                        for (int a = 0; a < ny; a++)
                            for (int r = 0; r < ROWS; r++) {
                                float s;
                                k->vec_dot[t](N, &s, W[r], A[a]);
                                cr_assert(memcmp(&s, &Y[a][r], 4) == 0, "%s %s %s ny %d row %d act %d: %.9g vs vec_dot %.9g",
                                          k->name, sl_gguf_type_name(t), gi ? "gemm_wide" : "gemm", ny, r, a, Y[a][r], s);
                            }
                    }
                }
            }
        }
    }
}

/* ---- golden (ggml) vectors ------------------------------------------- */
#define GROWS 64
#define GCOLS 512


static const struct { const char *name, *vdt; int type; } gold[] = {
    {"q4_0", "q8_0", SL_GGML_Q4_0}, {"q4_1", "q8_1", SL_GGML_Q4_1}, {"q5_0", "q8_0", SL_GGML_Q5_0},
    {"q5_1", "q8_1", SL_GGML_Q5_1}, {"q8_0", "q8_0", SL_GGML_Q8_0}, {"q2_k", "q8_k", SL_GGML_Q2_K},
    {"q3_k", "q8_k", SL_GGML_Q3_K}, {"q4_k", "q8_k", SL_GGML_Q4_K}, {"q5_k", "q8_k", SL_GGML_Q5_K},
    {"q6_k", "q8_k", SL_GGML_Q6_K}, {"f16", "f16", SL_GGML_F16}, {"bf16", "bf16", SL_GGML_BF16},
    {"iq4_nl", "q8_0", SL_GGML_IQ4_NL}, {"iq4_xs", "q8_k", SL_GGML_IQ4_XS}, {"mxfp4", "q8_0", SL_GGML_MXFP4},
    {"tq1_0", "q8_k", SL_GGML_TQ1_0}, {"tq2_0", "q8_k", SL_GGML_TQ2_0},
};

/* The prefetching vec_dot (decode's long rows) is vec_dot with prefetches
 * added: bit for bit its result, whatever range it prefetches (none, part of
 * a block's worth, more lines than blocks, the row itself). */
Test(kern_dot, prefetching_dot_equals_vec_dot)
{
    uint64_t seed = 99;
    int seen = 0;
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        const sl_kern *k = sl_kern_for(isa);
        if (!k) continue;
        for (int ti = 0; ti < NTYPES; ti++) {
            int t = types[ti];
            if (!k->vec_dot_pf[t]) continue;
            seen++;
            int be = sl_gguf_block_elems(t);
            for (int64_t nbk = 1; nbk <= 40; nbk += 13) {
                int64_t n = nbk * (be == 1 ? 37 : be);
                uint8_t *W = kr_weights(t, 2, n, &seed);
                uint8_t *A = kr_act(k, t, 1, n, &seed);
                size_t rb = sl_gguf_row_bytes(t, n);
                cr_assert(W && A);
                float e, s;
                k->vec_dot[t](n, &e, W, A);
                const size_t pfn[] = { 0, 64, 100, rb, 2 * rb, 64 * (size_t)nbk * 9 };
                for (size_t i = 0; i < sizeof pfn / sizeof *pfn; i++) {
                    const void *pf = pfn[i] <= rb ? (const void *)(W + rb) : (const void *)W;
                    k->vec_dot_pf[t](n, &s, W, A, pf, pfn[i] <= 2 * rb ? pfn[i] : 2 * rb);
                    cr_assert(memcmp(&e, &s, 4) == 0, "%s %s n=%lld pfn=%zu: %.9g vs vec_dot %.9g",
                              k->name, sl_gguf_type_name(t), (long long)n, pfn[i], s, e);
                }
                free(W);
                free(A);
            }
        }
    }
#if defined(__x86_64__)
    if (sl_kern_for(SL_ISA_AVX2)) cr_assert_gt(seen, 0);
#endif
}

/* avx512vbmi is avx512vnni with another q4_K unpack (GFNI nibbles, VBMI
 * scale words) producing the same bytes: every type bit for bit that level's. */
Test(kern_dot, avx512vbmi_equals_avx512vnni)
{
    const sl_kern *a = sl_kern_for(SL_ISA_AVX512VNNI), *b = sl_kern_for(SL_ISA_AVX512VBMI);
    if (!b) {
        cr_log_info("avx512vbmi not available here");
        return;
    }
    cr_assert_not_null(a);
    uint64_t seed = 4711;
    for (int ti = 0; ti < NTYPES; ti++) {
        int t = types[ti];
        int be = sl_gguf_block_elems(t);
        for (int64_t nbk = 1; nbk <= 33; nbk += 8) {
            int64_t n = nbk * (be == 1 ? 37 : be);
            uint8_t *W = kr_weights(t, 4, n, &seed);
            uint8_t *A = kr_act(a, t, 1, n, &seed);
            cr_assert(W && A);
            for (int r = 0; r < 4; r++) {
                float x, y;
                a->vec_dot[t](n, &x, W + (size_t)r * sl_gguf_row_bytes(t, n), A);
                b->vec_dot[t](n, &y, W + (size_t)r * sl_gguf_row_bytes(t, n), A);
                cr_assert(memcmp(&x, &y, 4) == 0, "%s n=%lld row %d: avx512vbmi %.9g vs avx512vnni %.9g",
                          sl_gguf_type_name(t), (long long)n, r, y, x);
            }
            free(W);
            free(A);
        }
    }
}

Test(kern_dot, golden_dots_every_level)
{
    float *actf = sl_test_golden_quant("act.f32", GCOLS * sizeof(float));
    for (size_t gi = 0; gi < sizeof gold / sizeof *gold; gi++) {
        int t = gold[gi].type;
        size_t rb = sl_gguf_row_bytes(t, GCOLS), ab = sl_kern_act_bytes(t, GCOLS, 1);
        char name[64];
        snprintf(name, sizeof name, "%s.q", gold[gi].name);
        uint8_t *q = sl_test_golden_quant(name, rb * GROWS);
        snprintf(name, sizeof name, "act.%s", gold[gi].vdt);
        uint8_t *act = sl_test_golden_quant(name, ab);
        snprintf(name, sizeof name, "%s.dot.f32", gold[gi].name);
        float *dot = sl_test_golden_quant(name, GROWS * sizeof(float));

        /* our activation quantizer path reproduces ggml's bytes */
        uint8_t *mine = malloc(ab);
        sl_kern_quantize_act(sl_kern_best(), t, actf, GCOLS, 1, mine);
        cr_assert_eq(memcmp(mine, act, ab), 0, "%s: quantized activation differs", gold[gi].vdt);
        free(mine);

        for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
            const sl_kern *k = sl_kern_for(isa);
            if (!k) continue;
            for (int r = 0; r < GROWS; r++) {
                const void *x = q + (size_t)r * rb;
                float s = NAN;
                k->vec_dot[t](GCOLS, &s, x, act);
                double tol = bound(t, GCOLS, x, act);
                cr_assert(fabs((double)s - (double)dot[r]) <= tol,
                          "%s %s row %d: %.9g vs golden %.9g (tol %.3g)", k->name,
                          gold[gi].name, r, s, dot[r], tol);
            }
        }
        free(q);
        free(act);
        free(dot);
    }
    free(actf);
}
