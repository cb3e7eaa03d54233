/* sl_kern_attention at every ISA level against a naive double-precision
 * implementation that applies the same f16 roundings (q to f16, probabilities
 * to f16, K/V in f16), plus causality and thread-split invariance.
 * Tolerance per output element d of a head (P_d = sum_j p_j |v_jd|):
 *   2^-10 * P_d      a probability may round to the neighbouring f16 (one
 *                    f16 ulp <= 2^-10 p) when the f32 score differs from the
 *                    double one by a rounding,
 * + L * 2^-24 * max|v|  the same for probabilities in the f16 subnormal range,
 * + 1e-5 * P_d + 1e-6   f32 dot/exp/sum/accumulation errors (scores are O(10),
 *                    head_dim <= 256 terms, L <= 2048 terms: far below this). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_test.h"
#include "../kernels/kernels.h"
#include "attn_testutil.h"

static uint64_t rng_s = 0x2545F4914F6CDD1Dull;
static uint32_t rnd32(void)
{
    rng_s ^= rng_s << 13; rng_s ^= rng_s >> 7; rng_s ^= rng_s << 17;
    return (uint32_t)(rng_s >> 16);
}
static float frand(float lo, float hi) { return lo + (hi - lo) * (float)(rnd32() % 1000003) / 1000003.0f; }
static float f16r(float x) { return sl_f16_to_f32(sl_f32_to_f16(x)); }

static int get_levels(sl_kern *lv)
{
    int n = 0;
    memset(lv, 0, 4 * sizeof *lv);
    lv[n].isa = SL_ISA_SCALAR; lv[n++].name = "scalar";
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        lv[n].isa = SL_ISA_AVX2; lv[n++].name = "avx2";
    }
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
        lv[n].isa = SL_ISA_AVX512; lv[n++].name = "avx512";
    }
#endif
#if defined(__aarch64__)
    lv[n].isa = SL_ISA_NEON; lv[n++].name = "neon";
#endif
    return n;
}

typedef struct {
    int n_head, n_head_kv, head_dim, n_q;
    int32_t pos0;
    int q_pad, kv_pad;     /* extra elements per row (strides > packed) */
    float q_amp;
    int head_major;        /* cache as [n_head_kv][n_ctx][head_dim + kv_pad] */
} shape;

typedef struct {
    shape sh;
    sl_attn a;
    float *q, *out;
    sl_f16 *k, *v;
    int32_t n_ctx;
    int64_t kv_elems;
} prob;

/* Element offset of (position j, kv head g, dim d) in the cache. */
static int64_t kv_at(const sl_attn *a, int32_t j, int g, int d)
{
    return j * a->kv_stride + g * (a->kv_head_stride ? a->kv_head_stride : a->head_dim) + d;
}

static void prob_make(prob *P, const shape *sh)
{
    P->sh = *sh;
    int hd = sh->head_dim;
    P->n_ctx = sh->pos0 + sh->n_q;
    int64_t qs = (int64_t)sh->n_head * hd + sh->q_pad;
    int64_t ks = sh->head_major ? hd + sh->kv_pad : (int64_t)sh->n_head_kv * hd + sh->kv_pad;
    int64_t khs = sh->head_major ? ks * P->n_ctx + 3 : 0;
    P->q = malloc((size_t)(qs * sh->n_q) * sizeof(float));
    P->out = malloc((size_t)(qs * sh->n_q) * sizeof(float));
    P->kv_elems = sh->head_major ? khs * sh->n_head_kv : ks * P->n_ctx;
    P->k = malloc((size_t)P->kv_elems * sizeof(sl_f16));
    P->v = malloc((size_t)P->kv_elems * sizeof(sl_f16));
    cr_assert(P->q && P->out && P->k && P->v, "alloc");
    for (int64_t i = 0; i < qs * sh->n_q; i++) P->q[i] = frand(-sh->q_amp, sh->q_amp);
    for (int64_t i = 0; i < P->kv_elems; i++) {
        P->k[i] = sl_f32_to_f16(frand(-1, 1));
        P->v[i] = sl_f32_to_f16(frand(-2, 2));
    }
    sl_attn a = { P->q, qs, P->k, P->v, ks, P->out, qs, sh->n_q, sh->n_head, sh->n_head_kv, hd,
                  sh->pos0, 1.0f / sqrtf((float)hd), khs, 0, SL_GGML_F16, SL_GGML_F16, NULL };
    P->a = a;
}

static void prob_free(prob *P) { free(P->q); free(P->out); free(P->k); free(P->v); }

static int run(const sl_kern *k, sl_pool *pool, const prob *P)
{
    return attn_run_poisoned(k, pool, &P->a, P->n_ctx);
}

/* Naive double reference with the f16 roundings; checks P->out. */
static void check_ref(const prob *P, const char *lvl)
{
    const sl_attn *a = &P->a;
    int hd = a->head_dim, grp = a->n_head / a->n_head_kv;
    double *s = malloc((size_t)P->n_ctx * sizeof(double));
    float *p16 = malloc((size_t)P->n_ctx * sizeof(float));
    cr_assert(s && p16, "alloc");
    for (int i = 0; i < a->n_q; i++) {
        int32_t L = a->pos0 + i + 1;
        int32_t j0 = a->window > 0 && L > a->window ? L - a->window : 0;
        for (int h = 0; h < a->n_head; h++) {
            const float *q = a->q + i * a->q_stride + h * hd;
            int kvh = h / grp;
            double mx = -INFINITY, sum = 0;
            for (int32_t j = j0; j < L; j++) {
                const sl_f16 *kj = P->k + kv_at(a, j, kvh, 0);
                double acc = 0;
                for (int d = 0; d < hd; d++) acc += (double)f16r(q[d]) * sl_f16_to_f32(kj[d]);
                s[j] = acc * a->scale;
                mx = s[j] > mx ? s[j] : mx;
            }
            /* a sink: one more logit in the max and the denominator, no value */
            const double sink = a->sinks ? a->sinks[h] : -INFINITY;
            mx = sink > mx ? sink : mx;
            for (int32_t j = j0; j < L; j++) { s[j] = exp(s[j] - mx); sum += s[j]; }
            sum += exp(sink - mx);
            for (int32_t j = j0; j < L; j++) { s[j] /= sum; p16[j] = f16r((float)s[j]); }
            for (int d = 0; d < hd; d++) {
                double o = 0, P_d = 0, vmax = 0;
                for (int32_t j = j0; j < L; j++) {
                    double vv = sl_f16_to_f32(P->v[kv_at(a, j, kvh, d)]);
                    o += p16[j] * vv;
                    P_d += s[j] * fabs(vv);
                    vmax = fabs(vv) > vmax ? fabs(vv) : vmax;
                }
                double tol = (1.0 / 1024 + 1e-5) * P_d + L * vmax / 16777216.0 + 1e-6;
                double got = a->out[i * a->out_stride + h * hd + d];
                if (!(fabs(got - o) <= tol)) {
                    fprintf(stderr, "attention [%s] nh=%d nkv=%d hd=%d nq=%d pos0=%d: row %d head %d d %d: "
                            "got %.9g want %.9g tol %.3g\n", lvl, a->n_head, a->n_head_kv, hd, a->n_q,
                            a->pos0, i, h, d, got, o, tol);
                    cr_assert_fail("attention vs double reference");
                }
            }
        }
    }
    free(s); free(p16);
}

static const shape shapes[] = {
    /* nh nkv hd  nq  pos0 qpad kvpad amp */
    {  4,  4, 64,  1,    0, 0, 0, 2.0f, 0 },   /* single position */
    {  4,  4, 64,  1,   37, 0, 0, 2.0f, 0 },   /* GQA 1, decode */
    {  8,  4, 64,  1,  100, 0, 0, 4.0f, 0 },   /* GQA 2 */
    {  8,  2, 128, 1,  300, 3, 5, 3.0f, 0 },   /* GQA 4, padded strides */
    { 16,  4, 64,  7,   13, 0, 0, 2.0f, 0 },   /* many rows, pos0 > 0 */
    {  8,  8, 16, 33,    0, 0, 0, 6.0f, 0 },   /* prefill from 0 */
    {  4,  1, 32,  5,    9, 0, 0, 2.0f, 0 },   /* MQA-like GQA 4 */
    { 24,  2, 8,   3,    4, 1, 1, 2.0f, 0 },   /* group 12 > pack of 8 */
    {  6,  2, 20,  4,   11, 0, 0, 3.0f, 0 },   /* head_dim with SIMD tails */
    {  2,  1, 72,  2,   30, 0, 0, 2.0f, 0 },
    {  4,  2, 256, 2,   61, 0, 0, 2.0f, 0 },
    {  2,  2, 3,   3,    2, 0, 0, 1.0f, 0 },
    {  8,  2, 128, 1, 2047, 0, 0, 3.0f, 0 },   /* long context */
    {  8,  2, 64,  3,   50, 0, 0, 3.0f, 1 }, /* head-major cache */
    { 12,  4, 20,  5,    7, 2, 3, 2.0f, 1 }, /* head-major, padded, tails */
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

Test(kern_attn, vs_double_reference, .timeout = 60)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    for (int si = 0; si < N_SHAPES; si++) {
        prob P;
        prob_make(&P, &shapes[si]);
        for (int l = 0; l < nl; l++) {
            cr_assert_eq(run(&lv[l], NULL, &P), 0);
            check_ref(&P, lv[l].name);
        }
        prob_free(&P);
    }
}

/* Changing K/V at positions after a row's own must not change that row. */
Test(kern_attn, causal_mask)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    for (int l = 0; l < 2 * nl; l++) {
        shape sh = { 8, 2, 64, 9, 5, 0, 0, 3.0f, l % 2 };
        prob P;
        prob_make(&P, &sh);
        int64_t osz = P.a.out_stride * sh.n_q;
        float *o0 = malloc((size_t)osz * sizeof(float));
        cr_assert_not_null(o0);
        cr_assert_eq(run(&lv[l / 2], NULL, &P), 0);
        memcpy(o0, P.out, (size_t)osz * sizeof(float));
        for (int r = sh.n_q - 1; r >= 0; r--) {
            /* perturb position pos0 + r: rows < r must stay bit-identical, row r must move */
            int32_t j = sh.pos0 + r;
            for (int g = 0; g < sh.n_head_kv; g++)
                for (int d = 0; d < sh.head_dim; d++) {
                    P.k[kv_at(&P.a, j, g, d)] = sl_f32_to_f16(frand(-1, 1));
                    P.v[kv_at(&P.a, j, g, d)] = sl_f32_to_f16(frand(-2, 2));
                }
            cr_assert_eq(run(&lv[l / 2], NULL, &P), 0);
            cr_assert(memcmp(P.out, o0, (size_t)(r * P.a.out_stride) * sizeof(float)) == 0,
                      "a row changed when a later position's K/V changed");
            cr_assert(memcmp(P.out + r * P.a.out_stride, o0 + r * P.a.out_stride,
                             (size_t)P.a.out_stride * sizeof(float)) != 0,
                      "a row ignored its own position's K/V");
            check_ref(&P, lv[l / 2].name);
            memcpy(o0, P.out, (size_t)osz * sizeof(float));
        }
        free(o0);
        prob_free(&P);
    }
}

/* Sliding window: each row matches the reference over its last `window`
 * positions, and the positions before the window are not read (NaN there
 * would poison the row). Windows shorter than, equal to and longer than the
 * rows' spans, on every level, head-major and interleaved caches. */
Test(kern_attn, sliding_window)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    static const int32_t windows[] = { 1, 5, 16, 40, 1000 };
    for (int l = 0; l < nl; l++)
        for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++)
            for (int hm = 0; hm < 2; hm++) {
                shape sh = { 8, 2, 64, 9, 30, 0, 0, 3.0f, hm };
                prob P;
                prob_make(&P, &sh);
                P.a.window = windows[w];
                int32_t oldest = P.a.pos0 + 1 - windows[w];   /* row 0's first position */
                for (int32_t j = 0; j < oldest; j++)
                    for (int g = 0; g < sh.n_head_kv; g++)
                        for (int d = 0; d < sh.head_dim; d++) {
                            P.k[kv_at(&P.a, j, g, d)] = sl_f32_to_f16(NAN);
                            P.v[kv_at(&P.a, j, g, d)] = sl_f32_to_f16(NAN);
                        }
                cr_assert_eq(run(&lv[l], NULL, &P), 0);
                check_ref(&P, lv[l].name);
                prob_free(&P);
            }
    shape sh = { 4, 2, 64, 1, 0, 0, 0, 1.0f, 0 };
    prob P;
    prob_make(&P, &sh);
    P.a.window = -1;
    cr_assert_eq(run(&lv[0], NULL, &P), -EINVAL);
    prob_free(&P);
}

/* Sinks (one logit per query head, in the softmax denominator only): every
 * level against the reference, with and without a window, sinks below,
 * near and far above the scores (20: the row's weights all but vanish);
 * each head's output shrinks against the same call without sinks (the
 * sink takes its share of the probability mass, its value is zero). */
Test(kern_attn, sinks)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    static const shape shs[] = {
        { 8, 2, 64, 1, 40, 0, 0, 3.0f, 0 },    /* decode */
        { 8, 2, 64, 9, 30, 0, 0, 3.0f, 1 },    /* prefill, head-major */
        { 24, 2, 8, 3, 4, 1, 1, 2.0f, 0 },     /* group 12 > pack of 8 */
        { 6, 2, 20, 4, 11, 0, 0, 3.0f, 0 },    /* SIMD tails */
    };
    float sinks[24];
    for (size_t si = 0; si < sizeof shs / sizeof shs[0]; si++)
        for (int win = 0; win <= 5; win += 5) {   /* no window, a window of 5 */
            prob P;
            prob_make(&P, &shs[si]);
            P.a.window = win;
            attn_test_sinks(sinks, shs[si].n_head);
            const int64_t osz = P.a.out_stride * shs[si].n_q;
            float *o0 = malloc((size_t)osz * sizeof(float));
            cr_assert_not_null(o0);
            for (int l = 0; l < nl; l++) {
                P.a.sinks = NULL;
                cr_assert_eq(run(&lv[l], NULL, &P), 0);
                memcpy(o0, P.out, (size_t)osz * sizeof(float));
                P.a.sinks = sinks;
                cr_assert_eq(run(&lv[l], NULL, &P), 0);
                check_ref(&P, lv[l].name);
                for (int i = 0; i < shs[si].n_q; i++)
                    for (int h = 0; h < shs[si].n_head; h++) {
                        double n0 = 0, n1 = 0;
                        for (int d = 0; d < shs[si].head_dim; d++) {
                            const int64_t at = i * P.a.out_stride + (int64_t)h * shs[si].head_dim + d;
                            n0 += fabs(o0[at]);
                            n1 += fabs(P.out[at]);
                        }
                        cr_assert(n1 < n0, "[%s] row %d head %d: a sink did not shrink the output", lv[l].name,
                                  i, h);
                        if (h == 1) cr_assert(n1 < 1e-3 * n0, "[%s] the dominant sink left %g of %g", lv[l].name,
                                              n1, n0);
                    }
            }
            sl_pool *pool;
            cr_assert_eq(sl_pool_create(&pool, 2), 0);
            for (int l = 0; l < nl; l++) attn_check_threads(&lv[l], pool, &P.a, P.n_ctx);
            sl_pool_destroy(pool);
            free(o0);
            prob_free(&P);
        }
}

/* The pool split (dynamic, longest first) gives the same bits as one thread. */
Test(kern_attn, threads_match_single)
{
    sl_kern lv[4];
    int nl = get_levels(lv);
    sl_pool *pool;
    cr_assert_eq(sl_pool_create(&pool, 2), 0);
    shape sh = { 8, 2, 64, 17, 40, 0, 0, 3.0f, 0 };
    prob P;
    prob_make(&P, &sh);
    for (int l = 0; l < nl; l++) attn_check_threads(&lv[l], pool, &P.a, P.n_ctx);
    prob_free(&P);
    sl_pool_destroy(pool);
}

Test(kern_attn, bad_args)
{
    sl_kern k;
    memset(&k, 0, sizeof k);
    shape sh = { 4, 3, 16, 1, 0, 0, 0, 1.0f, 0 };   /* 4 heads over 3 kv heads */
    prob P;
    prob_make(&P, &sh);
    char ws[1 << 14];
    cr_assert_eq(sl_kern_attention(&k, NULL, &P.a, ws), -22);
    P.a.n_head_kv = 4; P.a.pos0 = -1;
    cr_assert_eq(sl_kern_attention(&k, NULL, &P.a, ws), -22);
    P.a.pos0 = INT32_MAX;
    cr_assert_eq(sl_kern_attention(&k, NULL, &P.a, ws), -22);
    P.a.pos0 = 0; P.a.kv_stride = 1;
    cr_assert_eq(sl_kern_attention(&k, NULL, &P.a, ws), -22);
    cr_assert_eq(sl_kern_attention(&k, NULL, NULL, ws), -22);
    cr_assert_eq(sl_kern_attn_scratch(0, 16, 8), 0);
    prob_free(&P);
}
