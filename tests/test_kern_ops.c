/* Float ops of every ISA level: scalar against double-precision references,
 * each SIMD level against the scalar oracle, tails and canaries included.
 * Tolerances (relative, u = 2^-24 = one f32 rounding):
 *  - add, f32_to_f16: exact (bitwise).
 *  - rope: SIMD == scalar bitwise (same cos/sin table, same mul/mul/sub, no
 *    FMA); scalar vs double formula on the same f32 angle: cosf/sinf (1 ulp)
 *    + 2 products + 1 sum -> 4u * (|x0| + |x1|).
 *  - rmsnorm: scalar vs double: mean (0.5u) + sqrt (0.5u) + divide (0.5u) +
 *    two products (1u) -> 3u, tolerance 4u*|y|; SIMD vs scalar: the double sum
 *    differs only in order (~n*2^-53), so scale can differ by one rounding:
 *    2u*|y|.
 *  - silu_mul: scalar vs double: expf, add, divide, product -> 5u*|y|;
 *    SIMD vs scalar (polynomial exp) 12u*|y| + 1e-37.
 *  - swiglu_oai: the clamps exact, then as silu_mul with alpha x in the exp
 *    (one more product: 6u*|y| against double) and v + 1 (one more sum);
 *    SIMD vs scalar 14u*|y| + 1e-37.
 *  - delta_rule: SIMD == scalar bitwise (elementwise over the value lanes, the
 *    same operations in the same order, no FMA); scalar vs double: each
 *    output sums dk products of sums of dk products: 4 dk u times the sum of
 *    the magnitudes that enter it.
 *  - delta_chunk: SIMD == scalar bitwise (the same elementwise code around
 *    each level's gemm, whose sums run in the scalar order, no FMA); against
 *    the recurrence in double, token by token: each output and state value
 *    is a sum over dk + n terms (the state read, the triangular solve, the
 *    chunk's own tokens): 2 (dk + n) u times the magnitudes that enter the
 *    recurrence's output (delta_ref's), resp. |S| + 1 for the state.
 *  - gelu_mul: SIMD == scalar bitwise (the same F16 table entries, one
 *    product); the scalar entry vs the double tanh formula: within the F16
 *    table's error the golden README gives (0.0039 absolute, 0.4% relative).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_test.h"
#include "../kernels/kern_internal.h"
#include "../kernels/ops_internal.h"
#include "../quant/quant.h"

#define U (1.0 / 16777216.0)
#define CANARY 12345.678f

static uint64_t rng_s = 0x9E3779B97F4A7C15ull;
static uint32_t rnd32(void)
{
    rng_s ^= rng_s << 13; rng_s ^= rng_s >> 7; rng_s ^= rng_s << 17;
    return (uint32_t)(rng_s >> 16);
}
static float frand(float lo, float hi) { return lo + (hi - lo) * (float)(rnd32() % 1000003) / 1000003.0f; }

static int get_levels(sl_kern *lv)
{
    int n = 0;
    memset(lv, 0, 4 * sizeof *lv);
    lv[n].isa = SL_ISA_SCALAR; lv[n].name = "scalar"; sl_ops_fill_scalar(&lv[n++]);
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        lv[n].isa = SL_ISA_AVX2; lv[n].name = "avx2"; sl_ops_fill_avx2(&lv[n++]);
    }
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
        lv[n].isa = SL_ISA_AVX512; lv[n].name = "avx512"; sl_ops_fill_avx512(&lv[n++]);
    }
#endif
#if defined(__aarch64__)
    lv[n].isa = SL_ISA_NEON; lv[n].name = "neon"; sl_ops_fill_neon(&lv[n++]);
#endif
    for (int i = 0; i < n; i++) {
        cr_assert_not_null(lv[i].rmsnorm); cr_assert_not_null(lv[i].rope);
        cr_assert_not_null(lv[i].silu_mul); cr_assert_not_null(lv[i].swiglu_oai);
        cr_assert_not_null(lv[i].add); cr_assert_not_null(lv[i].f32_to_f16);
        cr_assert_not_null(lv[i].delta_rule); cr_assert_not_null(lv[i].delta_chunk);
        cr_assert_not_null(lv[i].gelu_mul);
    }
    return n;
}

static const int64_t sizes[] = { 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65,
                                 100, 127, 255, 256, 257, 1000, 4096, 4099 };
#define N_SIZES ((int)(sizeof sizes / sizeof sizes[0]))

/* |got - want| <= rel*|want| + abs, reporting the first violation. */
static int close_to(const char *what, const char *lvl, int64_t n, int64_t i, double got,
                    double want, double rel, double abs_)
{
    double err = fabs(got - want);
    if (err <= rel * fabs(want) + abs_ && !(isnan(got) != isnan(want)))
        return 1;
    fprintf(stderr, "%s [%s] n=%lld i=%lld: got %.9g want %.9g (err %.3g, rel %.3g u)\n", what,
            lvl, (long long)n, (long long)i, got, want, err, err / fabs(want) / U);
    return 0;
}

static float *fbuf(int64_t n) { float *p = malloc((size_t)(n + 16) * sizeof *p); cr_assert_not_null(p); return p; }
static void set_canary(float *p, int64_t n) { for (int i = 0; i < 16; i++) p[n + i] = CANARY; }
static int canary_ok(const float *p, int64_t n)
{
    for (int i = 0; i < 16; i++) if (p[n + i] != CANARY) return 0;
    return 1;
}

Test(kern_ops, rmsnorm)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    for (int si = 0; si < N_SIZES; si++) {
        int64_t n = sizes[si];
        float *x = fbuf(n), *w = fbuf(n), *y0 = fbuf(n), *y = fbuf(n);
        float amp = si % 3 == 0 ? 1e-3f : si % 3 == 1 ? 1.0f : 300.0f;
        for (int64_t i = 0; i < n; i++) { x[i] = frand(-amp, amp); w[i] = frand(-2, 2); }
        float eps = 1e-5f;
        set_canary(y0, n);
        lv[0].rmsnorm(y0, x, w, n, eps);
        cr_assert(canary_ok(y0, n), "rmsnorm scalar wrote past n");
        double ss = 0;
        for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
        double sc = 1.0 / sqrt(ss / (double)n + eps);
        for (int64_t i = 0; i < n; i++)
            cr_assert(close_to("rmsnorm vs double", "scalar", n, i, y0[i], x[i] * sc * w[i], 4 * U, 0),
                      "rmsnorm scalar vs double");
        for (int l = 1; l < nl; l++) {
            set_canary(y, n);
            lv[l].rmsnorm(y, x, w, n, eps);
            cr_assert(canary_ok(y, n), "rmsnorm SIMD wrote past n");
            for (int64_t i = 0; i < n; i++)
                cr_assert(close_to("rmsnorm", lv[l].name, n, i, y[i], y0[i], 2 * U, 0), "rmsnorm SIMD vs scalar");
        }
        /* in place (y == x) is allowed */
        memcpy(y, x, (size_t)n * sizeof *x);
        lv[nl - 1].rmsnorm(y, y, w, n, eps);
        for (int64_t i = 0; i < n; i++)
            cr_assert(close_to("rmsnorm in place", lv[nl - 1].name, n, i, y[i], y0[i], 2 * U, 0), "in place");
        free(x); free(w); free(y0); free(y);
    }
}

static void inv_freqs(float *f, int n_rot, float base)
{
    for (int i = 0; i < n_rot / 2; i++)
        f[i] = (float)pow(base, -2.0 * i / n_rot);
}

Test(kern_ops, rope)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    static const int shapes[][3] = { /* n_head, head_dim, n_rot */
        {1, 2, 2}, {1, 6, 6}, {3, 8, 8}, {2, 16, 16}, {4, 64, 64}, {2, 64, 32}, {3, 40, 24},
        {2, 80, 80}, {5, 128, 128}, {2, 128, 64}, {1, 256, 256}, {2, 34, 34}, {2, 18, 10},
    };
    static const int32_t poss[] = { 0, 1, 2, 77, 1000, 8191 };
    for (unsigned sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        int nh = shapes[sh][0], hd = shapes[sh][1], nr = shapes[sh][2];
        int64_t n = (int64_t)nh * hd;
        float fr[256];
        inv_freqs(fr, nr, sh % 2 ? 10000.0f : 500000.0f);
        float *x = fbuf(n), *y0 = fbuf(n), *y = fbuf(n);
        for (unsigned pi = 0; pi < sizeof poss / sizeof poss[0]; pi++) {
            int32_t pos = poss[pi];
            for (int neox = 0; neox < 2; neox++) {
                for (int64_t i = 0; i < n; i++) x[i] = frand(-3, 3);
                memcpy(y0, x, (size_t)n * sizeof *x);
                set_canary(y0, n);
                lv[0].rope(y0, nh, hd, nr, pos, fr, neox);
                cr_assert(canary_ok(y0, n), "rope wrote past the heads");
                for (int h = 0; h < nh; h++) {
                    const float *xh = x + h * hd, *yh = y0 + h * hd;
                    for (int i = 0; i < nr / 2; i++) {
                        int a = neox ? i : 2 * i, b = neox ? i + nr / 2 : 2 * i + 1;
                        double th = (double)((float)pos * fr[i]);
                        double c = cos(th), s = sin(th);
                        double w0 = xh[a] * c - xh[b] * s, w1 = xh[a] * s + xh[b] * c;
                        double tol = 4 * U * (fabs(xh[a]) + fabs(xh[b]));
                        cr_assert(close_to("rope vs formula", neox ? "neox" : "norm", hd, a, yh[a], w0, 0, tol), "rope a");
                        cr_assert(close_to("rope vs formula", neox ? "neox" : "norm", hd, b, yh[b], w1, 0, tol), "rope b");
                    }
                    for (int d = nr; d < hd; d++)
                        cr_assert(yh[d] == xh[d], "rope touched a dim beyond n_rot");
                }
                for (int l = 1; l < nl; l++) {
                    memcpy(y, x, (size_t)n * sizeof *x);
                    set_canary(y, n);
                    lv[l].rope(y, nh, hd, nr, pos, fr, neox);
                    cr_assert(canary_ok(y, n), "rope SIMD wrote past the heads");
                    if (memcmp(y, y0, (size_t)n * sizeof *y) != 0) {
                        fprintf(stderr, "rope [%s] nh=%d hd=%d nr=%d pos=%d neox=%d differs from scalar\n",
                                lv[l].name, nh, hd, nr, pos, neox);
                        cr_assert_fail("rope SIMD != scalar");
                    }
                }
            }
        }
        free(x); free(y0); free(y);
    }
}

Test(kern_ops, silu_mul)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    double worst = 0;
    for (int si = 0; si < N_SIZES; si++) {
        int64_t n = sizes[si];
        float *g = fbuf(n), *u = fbuf(n), *y0 = fbuf(n), *y = fbuf(n);
        for (int64_t i = 0; i < n; i++) { g[i] = frand(-12, 12); u[i] = frand(-4, 4); }
        if (n > 4) { g[0] = -100.0f; g[1] = 100.0f; g[2] = -88.5f; g[3] = 0.0f; }
        set_canary(y0, n);
        lv[0].silu_mul(y0, g, u, n);
        cr_assert(canary_ok(y0, n), "silu_mul wrote past n");
        for (int64_t i = 0; i < n; i++)
            cr_assert(close_to("silu_mul vs double", "scalar", n, i, y0[i],
                               (double)g[i] / (1.0 + exp(-(double)g[i])) * u[i], 5 * U, 1e-37), "silu scalar vs double");
        for (int l = 1; l < nl; l++) {
            set_canary(y, n);
            lv[l].silu_mul(y, g, u, n);
            cr_assert(canary_ok(y, n), "silu_mul SIMD wrote past n");
            for (int64_t i = 0; i < n; i++) {
                if (fabsf(y0[i]) > 1e-30f) { double r = fabs(y[i] - y0[i]) / fabs(y0[i]) / U; worst = r > worst ? r : worst; }
                cr_assert(close_to("silu_mul", lv[l].name, n, i, y[i], y0[i], 12 * U, 1e-37), "silu SIMD vs scalar");
            }
        }
        free(g); free(u); free(y0); free(y);
    }
    cr_log_info("silu_mul: worst SIMD vs scalar %.2f u", worst);
}

Test(kern_ops, swiglu_oai)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    const float alpha = 1.702f, lim = 7.0f;
    for (int si = 0; si < N_SIZES; si++) {
        int64_t n = sizes[si];
        float *g = fbuf(n), *u = fbuf(n), *y0 = fbuf(n), *y = fbuf(n);
        for (int64_t i = 0; i < n; i++) { g[i] = frand(-12, 12); u[i] = frand(-12, 12); }
        if (n > 5) { g[0] = -100.0f; g[1] = 100.0f; g[2] = 7.0f; u[2] = -7.5f; g[3] = 0.0f; u[4] = 8.0f; }
        set_canary(y0, n);
        lv[0].swiglu_oai(y0, g, u, n, alpha, lim);
        cr_assert(canary_ok(y0, n), "swiglu_oai wrote past n");
        for (int64_t i = 0; i < n; i++) {
            double x = g[i] < lim ? g[i] : lim, v = u[i] < -lim ? -lim : u[i] > lim ? lim : u[i];
            double want = x / (1.0 + exp(-(double)(alpha * (float)x))) * (v + 1.0);
            cr_assert(close_to("swiglu_oai vs double", "scalar", n, i, y0[i], want, 6 * U, 1e-37), "scalar vs double");
        }
        for (int l = 1; l < nl; l++) {
            set_canary(y, n);
            lv[l].swiglu_oai(y, g, u, n, alpha, lim);
            cr_assert(canary_ok(y, n), "swiglu_oai SIMD wrote past n");
            for (int64_t i = 0; i < n; i++)
                cr_assert(close_to("swiglu_oai", lv[l].name, n, i, y[i], y0[i], 14 * U, 1e-37), "SIMD vs scalar");
        }
        free(g); free(u); free(y0); free(y);
    }
}

/* Every SIMD level's gelu_mul equals the scalar oracle's y0 bit for bit. */
static void gelu_levels_match(const sl_kern *lv, int nl, const float *g, const float *u, const float *y0,
                              float *y, int64_t n)
{
    for (int l = 1; l < nl; l++) {
        set_canary(y, n);
        lv[l].gelu_mul(y, g, u, n);
        cr_assert(canary_ok(y, n), "gelu_mul wrote past n");
        cr_assert(memcmp(y, y0, (size_t)n * sizeof *y) == 0, "gelu_mul [%s] differs from scalar", lv[l].name);
    }
}

static double gelu_double(double x)
{
    return 0.5 * x * (1.0 + tanh(0.79788456080286535587989211986876 * (x + 0.044715 * x * x * x)));
}

Test(kern_ops, gelu_mul)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    /* every finite F16 value as the gate (u = 1): the table itself */
    int64_t n = 0;
    float *g = fbuf(1 << 16), *u = fbuf(1 << 16), *y0 = fbuf(1 << 16), *y = fbuf(1 << 16);
    for (uint32_t h = 0; h < (1u << 16); h++) {
        float x = sl_f16_to_f32((sl_f16)h);
        if (isfinite(x)) { g[n] = x; u[n++] = 1.0f; }
    }
    set_canary(y0, n);
    lv[0].gelu_mul(y0, g, u, n);
    cr_assert(canary_ok(y0, n), "gelu_mul wrote past n");
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double want = g[i] <= -10 ? 0 : g[i] >= 10 ? g[i] : gelu_double(g[i]);
        double err = fabs(y0[i] - want);
        worst = err > worst ? err : worst;
        cr_assert(err <= 0.0039 || err <= 0.004 * fabs(want), "gelu(%g) = %g, formula %g", g[i], y0[i], want);
        cr_assert_eq(y0[i], sl_f16_to_f32(sl_f32_to_f16(y0[i])), "gelu(%g) not an F16 value", g[i]);
    }
    gelu_levels_match(lv, nl, g, u, y0, y, n);
    free(g); free(u); free(y0); free(y);
    /* random gates and up values, the +-10 edges, all sizes */
    for (int si = 0; si < N_SIZES; si++) {
        n = sizes[si];
        g = fbuf(n); u = fbuf(n); y0 = fbuf(n); y = fbuf(n);
        for (int64_t i = 0; i < n; i++) { g[i] = frand(-12, 12); u[i] = frand(-4, 4); }
        if (n > 4) { g[0] = -10.0f; g[1] = 10.0f; g[2] = 9.99f; g[3] = -9.99f; }
        lv[0].gelu_mul(y0, g, u, n);
        for (int64_t i = 0; i < n; i++) {
            float e = g[i] <= -10 ? 0.0f : g[i] >= 10 ? g[i] : sl_f16_to_f32(sl_gelu_table()[sl_f32_to_f16(g[i])]);
            cr_assert(y0[i] == (g[i] <= -10 ? 0.0f : e * u[i]), "gelu_mul scalar: entry times u");
        }
        gelu_levels_match(lv, nl, g, u, y0, y, n);
        free(g); free(u); free(y0); free(y);
    }
    cr_log_info("gelu_mul: worst F16 table entry vs double formula %.5f", worst);
}

Test(kern_ops, add)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    for (int si = 0; si < N_SIZES; si++) {
        int64_t n = sizes[si];
        float *a = fbuf(n), *b = fbuf(n), *y = fbuf(n);
        for (int64_t i = 0; i < n; i++) { a[i] = frand(-1e3f, 1e3f); b[i] = frand(-1, 1); }
        for (int l = 0; l < nl; l++) {
            set_canary(y, n);
            lv[l].add(y, a, b, n);
            cr_assert(canary_ok(y, n), "add wrote past n");
            for (int64_t i = 0; i < n; i++)
                cr_assert(y[i] == a[i] + b[i], "add not exact");
        }
        free(a); free(b); free(y);
    }
}

/* One delta-rule step in double: S, o, and the magnitudes |.| each output
 * sums (for the tolerance). */
static void delta_ref(double *S, const float *q, const float *k, const float *v, double beta, double decay,
                      double scale, int dk, int dv, double *o, double *mag)
{
    for (int j = 0; j < dv; j++) {
        double m = 0, mm = 0;
        for (int i = 0; i < dk; i++) {
            S[i * dv + j] *= decay;
            m += S[i * dv + j] * k[i];
            mm += fabs(S[i * dv + j] * k[i]);
        }
        double dl = (v[j] - m) * beta;
        o[j] = 0;
        mag[j] = 0;
        for (int i = 0; i < dk; i++) {
            S[i * dv + j] += k[i] * dl;
            o[j] += S[i * dv + j] * q[i] * scale;
            mag[j] += (fabs(S[i * dv + j]) + fabs(k[i]) * (fabs(v[j]) + mm) * beta) * fabs(q[i]) * scale;
        }
    }
}

Test(kern_ops, delta_rule)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    static const int dims[][2] = { { 64, 64 }, { 128, 128 }, { 16, 13 }, { 8, 37 }, { 3, 1 } };
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int dk = dims[di][0], dv = dims[di][1];
        float *S0 = fbuf((int64_t)dk * dv), *S = fbuf((int64_t)dk * dv), *q = fbuf(dk), *k = fbuf(dk);
        float *v = fbuf(dv), *o0 = fbuf(dv), *o = fbuf(dv), *m = fbuf(dv);
        double *Sd = calloc((size_t)dk * dv, sizeof *Sd), *od = calloc((size_t)dv, sizeof *od);
        double *mag = calloc((size_t)dv, sizeof *mag);
        for (int i = 0; i < dk * dv; i++) Sd[i] = S0[i] = frand(-1, 1);
        for (int step = 0; step < 4; step++) {
            for (int i = 0; i < dk; i++) { q[i] = frand(-0.3f, 0.3f); k[i] = frand(-0.3f, 0.3f); }
            for (int j = 0; j < dv; j++) v[j] = frand(-2, 2);
            const float beta = frand(0, 1), decay = frand(0.5f, 1), scale = 0.125f;
            memcpy(S, S0, (size_t)dk * dv * sizeof *S);
            set_canary(o0, dv);
            lv[0].delta_rule(S0, q, k, v, beta, decay, scale, dk, dv, o0, m);
            cr_assert(canary_ok(o0, dv), "delta_rule wrote past dv");
            delta_ref(Sd, q, k, v, beta, decay, scale, dk, dv, od, mag);
            for (int j = 0; j < dv; j++)
                cr_assert(fabs(o0[j] - od[j]) <= 4.0 * dk * U * mag[j] + 1e-30,
                          "scalar delta_rule %dx%d lane %d: %g vs %g", dk, dv, j, o0[j], od[j]);
            for (int l = 1; l < nl; l++) {
                float *Sl = fbuf((int64_t)dk * dv);
                memcpy(Sl, S, (size_t)dk * dv * sizeof *Sl);
                set_canary(o, dv);
                lv[l].delta_rule(Sl, q, k, v, beta, decay, scale, dk, dv, o, m);
                cr_assert(canary_ok(o, dv), "%s delta_rule wrote past dv", lv[l].name);
                cr_assert(!memcmp(o, o0, (size_t)dv * sizeof *o) && !memcmp(Sl, S0, (size_t)dk * dv * sizeof *Sl),
                          "%s delta_rule %dx%d differs from scalar", lv[l].name, dk, dv);
                free(Sl);
            }
        }
        free(S0); free(S); free(q); free(k); free(v); free(o0); free(o); free(m);
        free(Sd); free(od); free(mag);
    }
}

/* delta_chunk over n tokens laid out as the forward pass has them (rows of
 * q | k | v, rows of beta | log decay, output rows with a gap) against
 * delta_ref applied token by token, and every level against scalar. */
static void chunk_case(const sl_kern *lv, int nl, int dk, int dv, int n, float gl_lo, float gl_hi)
{
    const int64_t ld = 2 * dk + dv + 1, ldo = dv + 3;
    float *S0 = fbuf((int64_t)dk * dv), *S = fbuf((int64_t)dk * dv), *x = fbuf(n * ld), *bg = fbuf(2 * n);
    float *o0 = fbuf(n * ldo), *o = fbuf(n * ldo), *ws = fbuf(sl_kern_delta_chunk_ws(dk, dv));
    double *Sd = calloc((size_t)dk * dv, sizeof *Sd), *od = calloc((size_t)dv, sizeof *od);
    double *mag = calloc((size_t)dv, sizeof *mag);
    const float scale = 1.0f / sqrtf((float)dk);
    for (int i = 0; i < dk * dv; i++) Sd[i] = S[i] = S0[i] = frand(-1, 1);
    for (int t = 0; t < n; t++) {
        for (int i = 0; i < 2 * dk; i++) x[t * ld + i] = frand(-0.3f, 0.3f);
        for (int j = 0; j < dv; j++) x[t * ld + 2 * dk + j] = frand(-2, 2);
        bg[2 * t] = frand(0, 1);
        bg[2 * t + 1] = frand(gl_lo, gl_hi);
    }
    for (int64_t i = 0; i < n * ldo + 16; i++) o0[i] = o[i] = CANARY;
    lv[0].delta_chunk(S0, x, x + dk, x + 2 * dk, ld, bg, bg + 1, 2, scale, n, dk, dv, o0, ldo, ws);
    for (int t = 0; t < n; t++) {
        const float *xt = x + t * ld;
        delta_ref(Sd, xt, xt + dk, xt + 2 * dk, bg[2 * t], exp((double)bg[2 * t + 1]), scale, dk, dv, od, mag);
        for (int j = 0; j < dv; j++)
            cr_assert(fabs(o0[t * ldo + j] - od[j]) <= 2.0 * (dk + n) * U * mag[j] + 1e-30,
                      "scalar delta_chunk %dx%d n %d token %d lane %d: %g vs %g (magnitude %g)", dk, dv, n, t, j,
                      o0[t * ldo + j], od[j], mag[j]);
        for (int j = dv; j < ldo; j++) cr_assert(o0[t * ldo + j] == CANARY, "delta_chunk wrote past dv");
    }
    cr_assert(canary_ok(o0, n * ldo), "delta_chunk wrote past its rows");
    for (int i = 0; i < dk * dv; i++)
        cr_assert(fabs(S0[i] - Sd[i]) <= 2.0 * (dk + n) * U * (fabs(Sd[i]) + 1),
                  "scalar delta_chunk %dx%d n %d state %d: %g vs %g", dk, dv, n, i, S0[i], Sd[i]);
    for (int l = 1; l < nl; l++) {
        float *Sl = fbuf((int64_t)dk * dv);
        memcpy(Sl, S, (size_t)dk * dv * sizeof *Sl);
        lv[l].delta_chunk(Sl, x, x + dk, x + 2 * dk, ld, bg, bg + 1, 2, scale, n, dk, dv, o, ldo, ws);
        cr_assert(!memcmp(o, o0, (size_t)(n * ldo + 16) * sizeof *o) &&
                  !memcmp(Sl, S0, (size_t)dk * dv * sizeof *Sl),
                  "%s delta_chunk %dx%d n %d differs from scalar", lv[l].name, dk, dv, n);
        free(Sl);
    }
    free(S0); free(S); free(x); free(bg); free(o0); free(o); free(ws); free(Sd); free(od); free(mag);
}

Test(kern_ops, delta_chunk)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    static const int dims[][2] = { { 128, 128 }, { 64, 64 }, { 16, 13 }, { 8, 37 }, { 3, 1 }, { 32, 47 } };
    static const int ns[] = { 1, 2, 5, 16, 33, SL_DELTA_CHUNK };
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            chunk_case(lv, nl, dims[di][0], dims[di][1], ns[ni], -0.5f, 0.0f);   /* model-like decays */
            chunk_case(lv, nl, dims[di][0], dims[di][1], ns[ni], -40.0f, -5.0f); /* e^G underflows */
        }
}

static float bits_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

Test(kern_ops, f32_to_f16)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    int64_t n = 20000;
    float *x = fbuf(n);
    sl_f16 *y = malloc((size_t)(n + 16) * sizeof *y);
    cr_assert_not_null(y);
    for (int64_t i = 0; i < n; i++) {
        switch (i % 6) {
        case 0: x[i] = frand(-2, 2); break;
        case 1: x[i] = bits_f(rnd32() ^ ((uint32_t)rnd32() << 16)); break;   /* any bits */
        case 2: x[i] = frand(-1, 1) * 1e-5f; break;                           /* f16 subnormals */
        case 3: x[i] = frand(-70000, 70000); break;                           /* overflow edge */
        case 4: {   /* exact halfway between two f16 (ties to even) */
            uint32_t e = 103 + rnd32() % 40, m = rnd32() & 0x7fe000u;
            x[i] = bits_f((rnd32() & 0x80000000u) | (e << 23) | m | 0x1000u);
            break;
        }
        default: x[i] = (float[]){0.0f, -0.0f, INFINITY, -INFINITY, 65504.0f, 65520.0f,
                                  65519.99f, 5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f}[rnd32() % 10];
        }
    }
    for (int l = 0; l < nl; l++) {
        for (int64_t len = 1; len <= n; len = len < 40 ? len + 1 : len * 3 + 1) {
            for (int i = 0; i < 16; i++) y[len + i] = 0xBEEF;
            lv[l].f32_to_f16(y, x, len);
            for (int i = 0; i < 16; i++) cr_assert(y[len + i] == 0xBEEF, "f32_to_f16 wrote past n");
            for (int64_t i = 0; i < len; i++) {
                sl_f16 want = sl_f32_to_f16(x[i]);
                int ok = isnan(x[i]) ? ((y[i] & 0x7c00) == 0x7c00 && (y[i] & 0x3ff)) : y[i] == want;
                if (!ok) {
                    fprintf(stderr, "f32_to_f16 [%s] x=%.9g (0x%08x): got 0x%04x want 0x%04x\n", lv[l].name,
                            x[i], (unsigned)(((union { float f; uint32_t u; }){ .f = x[i] }).u), y[i], want);
                    cr_assert_fail("f32_to_f16 not exact");
                }
            }
        }
    }
    free(x); free(y);
}

/* The Q8_K activation quantizer of every level that has one: bytes equal to
 * the scalar sl_quant_row_q8_k (d, qs and bsums), on random rows of any
 * scale and on the edges - an all-zero block, the largest magnitude twice
 * with both signs (the first gives the sign), halves after scaling (ties to
 * even), -0, subnormals, inf and NaN. */
Test(kern_ops, quantize_q8_k)
{
    enum { NB = 3, N = NB * SL_QKK };
    float *x = fbuf(N);
    sl_block_q8_k want[NB], got[NB];
    int tested = 0;
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        const sl_kern *k = sl_kern_for(isa);
        if (!k || !k->quantize_q8_k) continue;
        tested++;
        for (int t = 0; t < 400; t++) {
            float sc = powf(10.0f, frand(-6, 6));
            for (int i = 0; i < N; i++) x[i] = frand(-1, 1) * sc;
            int blk = (int)(rnd32() % NB), at = blk * SL_QKK;
            switch (t % 8) {
            case 0: for (int i = 0; i < SL_QKK; i++) x[at + i] = (i & 1) ? -0.0f : 0.0f; break;
            case 1: x[at + (int)(rnd32() % 128)] = 2 * sc; x[at + 128 + (int)(rnd32() % 128)] = -2 * sc; break;
            case 2: x[at + (int)(rnd32() % 128)] = -2 * sc; x[at + 128 + (int)(rnd32() % 128)] = 2 * sc; break;
            case 3:   /* max -127: iscale 1, so k + 0.5 are exact ties */
                for (int i = 0; i < SL_QKK; i++) x[at + i] = (float)((int)(rnd32() % 253) - 126) + 0.5f * (float)(rnd32() & 1);
                x[at + (int)(rnd32() % SL_QKK)] = -127.0f;
                break;
            case 4: for (int i = 0; i < SL_QKK; i++) x[at + i] = frand(-1, 1) * 1e-40f; break;
            case 5: x[at + (int)(rnd32() % SL_QKK)] = (rnd32() & 1) ? INFINITY : -INFINITY; break;
            case 6: x[at + (int)(rnd32() % SL_QKK)] = NAN; break;
            default: {   /* both signs of the largest magnitude in one 8-element run */
                int c = at + 8 * (int)(rnd32() % 32), a = (int)(rnd32() % 7), b = a + 1 + (int)(rnd32() % (unsigned)(7 - a));
                float s = (rnd32() & 1) ? 2 * sc : -2 * sc;
                x[c + a] = s; x[c + b] = -s;
                break;
            }
            }
            memset(want, 0x5a, sizeof want);
            memset(got, 0xa5, sizeof got);
            sl_quant_row_q8_k(x, want, N);
            k->quantize_q8_k(x, got, N);
            for (int b = 0; b < NB; b++)
                cr_assert(memcmp(&want[b].d, &got[b].d, sizeof want[b].d) == 0 &&
                              memcmp(want[b].qs, got[b].qs, sizeof want[b].qs) == 0 &&
                              memcmp(want[b].bsums, got[b].bsums, sizeof want[b].bsums) == 0,
                          "%s case %d block %d: d %.9g vs %.9g, qs[0] %d vs %d", k->name, t % 8, b,
                          (double)got[b].d, (double)want[b].d, got[b].qs[0], want[b].qs[0]);
        }
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) cr_assert_gt(tested, 0, "no level with a Q8_K quantizer");
#else
    (void)tested;
#endif
    free(x);
}
