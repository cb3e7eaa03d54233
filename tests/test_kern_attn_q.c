/* Attention over a quantized KV cache (kernels/attention_q.c, the scalar
 * oracle, and attention_q_driver.h at every SIMD level): Q8_0 / Q4_0 / F16
 * K and V in llama.cpp's blocks, against a double-precision reference that
 * applies exactly the stored values (K and V dequantized by quant/, q
 * converted to Q8_0 for a quantized K or rounded to F16 for an F16 K) and an
 * unrounded softmax; every level against the scalar oracle; window,
 * thread split and argument checks.
 * Tolerance per output element d (P_d = sum_j p_j |v_jd|): the only
 * differences are f32 rounding of the block sums, exp, the softmax sum and
 * the f32 accumulation: 1e-4 * P_d + 1e-6 (scores are O(10), head_dim <= 256,
 * L <= 2048: far below). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_test.h"
#include "../kernels/kernels.h"
#include "attn_testutil.h"

static uint64_t rng_s = 0x9E3779B97F4A7C15ull;
static uint32_t rnd32(void)
{
    rng_s ^= rng_s << 13; rng_s ^= rng_s >> 7; rng_s ^= rng_s << 17;
    return (uint32_t)(rng_s >> 16);
}
static float frand(float lo, float hi) { return lo + (hi - lo) * (float)(rnd32() % 1000003) / 1000003.0f; }

/* Every level this CPU and build run, from the real tables (the quantized
 * path dots with the table's vec_dot). */
static int get_levels(const sl_kern **lv)
{
    int n = 0;
    for (int isa = 0; isa < SL_ISA_COUNT; isa++)
        if (isa != SL_ISA_AVX512VNNI && isa != SL_ISA_AVX512VBMI && isa != SL_ISA_DOTPROD && sl_kern_for(isa))
            lv[n++] = sl_kern_for(isa);
    return n;
}

typedef struct {
    int n_head, n_head_kv, head_dim, n_q;
    int32_t pos0;
    int head_major, kv_pad;   /* kv_pad: extra elements per row (a multiple of 32) */
    int tk, tv;
} shape;

typedef struct {
    shape sh;
    sl_attn a;
    float *q, *out;
    char *k, *v;             /* cache bytes in tk / tv */
    int32_t n_ctx;
} prob;

static int64_t kv_at(const sl_attn *a, int32_t j, int g)
{
    return j * a->kv_stride + g * (a->kv_head_stride ? a->kv_head_stride : a->head_dim);
}
static char *row_of(char *base, int t, int64_t elem)
{
    return base + sl_gguf_row_bytes((uint32_t)t, elem);
}

static void put_row(prob *P, char *base, int t, int32_t j, int g, float lo, float hi)
{
    float x[256];
    for (int d = 0; d < P->sh.head_dim; d++) x[d] = frand(lo, hi);
    cr_assert_gt(sl_quant_quantize_row(t, x, row_of(base, t, kv_at(&P->a, j, g)), P->sh.head_dim), 0);
}

static void prob_make(prob *P, const shape *sh)
{
    memset(P, 0, sizeof *P);
    P->sh = *sh;
    const int hd = sh->head_dim;
    P->n_ctx = sh->pos0 + sh->n_q;
    int64_t qs = (int64_t)sh->n_head * hd;
    int64_t ks = sh->head_major ? hd + sh->kv_pad : (int64_t)sh->n_head_kv * hd + sh->kv_pad;
    int64_t khs = sh->head_major ? ks * P->n_ctx + 32 : 0;
    int64_t elems = sh->head_major ? khs * sh->n_head_kv : ks * P->n_ctx;
    P->q = malloc((size_t)(qs * sh->n_q) * sizeof(float));
    P->out = malloc((size_t)(qs * sh->n_q) * sizeof(float));
    P->k = calloc(1, sl_gguf_row_bytes((uint32_t)sh->tk, elems));
    P->v = calloc(1, sl_gguf_row_bytes((uint32_t)sh->tv, elems));
    cr_assert(P->q && P->out && P->k && P->v, "alloc");
    for (int64_t i = 0; i < qs * sh->n_q; i++) P->q[i] = frand(-2.0f, 2.0f);
    sl_attn a = { .q = P->q, .q_stride = qs, .k = P->k, .v = P->v, .kv_stride = ks,
                  .out = P->out, .out_stride = qs, .n_q = sh->n_q, .n_head = sh->n_head,
                  .n_head_kv = sh->n_head_kv, .head_dim = hd, .pos0 = sh->pos0,
                  .scale = 1.0f / sqrtf((float)hd), .kv_head_stride = khs,
                  .type_k = sh->tk, .type_v = sh->tv };
    P->a = a;
    for (int32_t j = 0; j < P->n_ctx; j++)
        for (int g = 0; g < sh->n_head_kv; g++) {
            put_row(P, P->k, sh->tk, j, g, -1.0f, 1.0f);
            put_row(P, P->v, sh->tv, j, g, -2.0f, 2.0f);
        }
}

static void prob_free(prob *P) { free(P->q); free(P->out); free(P->k); free(P->v); }

static int run(const sl_kern *k, sl_pool *pool, const prob *P)
{
    return attn_run_poisoned(k, pool, &P->a, P->n_ctx);
}

/* The q values the kernel dots with: Q8_0 of q for a quantized K, F16 for F16. */
static void q_as_dotted(const float *q, int hd, int tk, float *out)
{
    if (tk == SL_GGML_F16) {
        for (int d = 0; d < hd; d++) out[d] = sl_f16_to_f32(sl_f32_to_f16(q[d]));
        return;
    }
    sl_block_q8_0 b[8];
    sl_quant_row_q8_0(q, b, hd);
    cr_assert_eq(sl_quant_dequantize_row(SL_GGML_Q8_0, b, out, hd), 0);
}

/* Double reference over the stored values; checks P->out (or `other` when
 * given, with the same tolerance). */
static void check_ref(const prob *P, const char *lvl)
{
    const sl_attn *a = &P->a;
    const int hd = a->head_dim, grp = a->n_head / a->n_head_kv;
    double *s = malloc((size_t)P->n_ctx * sizeof(double));
    float *vd = malloc((size_t)P->n_ctx * (size_t)hd * sizeof(float)), qd[256], kd[256];
    cr_assert(s && vd, "alloc");
    for (int i = 0; i < a->n_q; i++) {
        int32_t L = a->pos0 + i + 1;
        int32_t j0 = a->window > 0 && L > a->window ? L - a->window : 0;
        for (int h = 0; h < a->n_head; h++) {
            int kvh = h / grp;
            q_as_dotted(a->q + i * a->q_stride + h * hd, hd, P->sh.tk, qd);
            double mx = -INFINITY, sum = 0;
            for (int32_t j = j0; j < L; j++) {
                cr_assert_eq(sl_quant_dequantize_row(P->sh.tk, row_of(P->k, P->sh.tk, kv_at(a, j, kvh)), kd, hd), 0);
                cr_assert_eq(sl_quant_dequantize_row(P->sh.tv, row_of(P->v, P->sh.tv, kv_at(a, j, kvh)),
                                                     vd + (int64_t)j * hd, hd), 0);
                double acc = 0;
                for (int d = 0; d < hd; d++) acc += (double)qd[d] * kd[d];
                s[j] = acc * a->scale;
                mx = s[j] > mx ? s[j] : mx;
            }
            /* a sink: one more logit in the max and the denominator, no value */
            const double sink = a->sinks ? a->sinks[h] : -INFINITY;
            mx = sink > mx ? sink : mx;
            for (int32_t j = j0; j < L; j++) { s[j] = exp(s[j] - mx); sum += s[j]; }
            sum += exp(sink - mx);
            for (int32_t j = j0; j < L; j++) s[j] /= sum;
            for (int d = 0; d < hd; d++) {
                double o = 0, P_d = 0;
                for (int32_t j = j0; j < L; j++) {
                    double vv = vd[(int64_t)j * hd + d];
                    o += s[j] * vv;
                    P_d += s[j] * fabs(vv);
                }
                double tol = 1e-4 * P_d + 1e-6;
                double got = a->out[i * a->out_stride + h * hd + d];
                if (!(fabs(got - o) <= tol)) {
                    fprintf(stderr, "attention_q [%s] %s/%s nh=%d nkv=%d hd=%d nq=%d pos0=%d: row %d head %d "
                            "d %d: got %.9g want %.9g tol %.3g\n", lvl, sl_gguf_type_name((uint32_t)P->sh.tk),
                            sl_gguf_type_name((uint32_t)P->sh.tv), a->n_head, a->n_head_kv, hd, a->n_q,
                            a->pos0, i, h, d, got, o, tol);
                    cr_assert_fail("quantized attention vs double reference");
                }
            }
        }
    }
    free(s); free(vd);
}

static const shape shapes[] = {
    /* nh nkv  hd  nq  pos0 hm pad  K             V */
    {  4,  4,  64,  1,    0, 0, 0, SL_GGML_Q8_0, SL_GGML_Q8_0 },
    {  8,  4,  64,  1,  100, 1, 0, SL_GGML_Q8_0, SL_GGML_Q8_0 },
    {  8,  2, 128,  1,  300, 0, 32, SL_GGML_Q4_0, SL_GGML_Q4_0 },
    { 16,  4,  64,  7,   13, 1, 32, SL_GGML_Q4_0, SL_GGML_Q4_0 },
    {  4,  1,  32,  5,    9, 0, 0, SL_GGML_Q8_0, SL_GGML_F16 },
    { 24,  2,  32,  3,    4, 1, 0, SL_GGML_F16, SL_GGML_Q4_0 },   /* group 12 > pack of 8 */
    {  6,  2,  96,  4,   11, 0, 0, SL_GGML_Q4_0, SL_GGML_Q8_0 },  /* odd group of 3 */
    {  4,  2, 256,  2,   61, 1, 0, SL_GGML_Q8_0, SL_GGML_Q4_0 },
    {  8,  8,  64, 33,    0, 0, 0, SL_GGML_Q8_0, SL_GGML_Q8_0 },  /* prefill from 0 */
    {  8,  2, 128,  1, 2047, 1, 0, SL_GGML_Q8_0, SL_GGML_Q8_0 },  /* long context */
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/* The oracle against the double reference; every SIMD level against the
 * oracle and the reference. */
Test(kern_attn_q, levels_vs_oracle_and_reference, .timeout = 60)
{
    const sl_kern *lv[SL_ISA_COUNT];
    int nl = get_levels(lv);
    cr_assert_eq(lv[0]->isa, SL_ISA_SCALAR);
    for (int si = 0; si < N_SHAPES; si++) {
        prob P;
        prob_make(&P, &shapes[si]);
        int64_t osz = P.a.out_stride * P.sh.n_q;
        float *o0 = malloc((size_t)osz * sizeof(float));
        cr_assert_not_null(o0);
        for (int l = 0; l < nl; l++) {
            cr_assert_eq(run(lv[l], NULL, &P), 0, "%s", lv[l]->name);
            check_ref(&P, lv[l]->name);
            if (l == 0) {
                memcpy(o0, P.out, (size_t)osz * sizeof(float));
                continue;
            }
            for (int64_t i = 0; i < osz; i++)
                cr_assert(fabsf(P.out[i] - o0[i]) <= 2e-5f * fabsf(o0[i]) + 2e-5f,
                          "[%s] shape %d element %lld: %.9g vs scalar %.9g", lv[l]->name, si,
                          (long long)i, P.out[i], o0[i]);
        }
        free(o0);
        prob_free(&P);
    }
}

/* A window: the positions before it are not read (a NaN block scale there
 * would poison the row) and the rows match the reference over the window. */
Test(kern_attn_q, sliding_window)
{
    const sl_kern *lv[SL_ISA_COUNT];
    int nl = get_levels(lv);
    static const int32_t windows[] = { 1, 16, 1000 };
    for (int l = 0; l < nl; l++)
        for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++) {
            shape sh = { 8, 2, 64, 9, 30, (int)w % 2, 0, SL_GGML_Q4_0, SL_GGML_Q8_0 };
            prob P;
            prob_make(&P, &sh);
            P.a.window = windows[w];
            for (int32_t j = 0; j < P.a.pos0 + 1 - windows[w]; j++)
                for (int g = 0; g < sh.n_head_kv; g++)
                    for (int b = 0; b < sh.head_dim / 32; b++) {
                        ((sl_block_q4_0 *)row_of(P.k, sh.tk, kv_at(&P.a, j, g)))[b].d = 0x7e00;
                        ((sl_block_q8_0 *)row_of(P.v, sh.tv, kv_at(&P.a, j, g)))[b].d = 0x7e00;
                    }
            cr_assert_eq(run(lv[l], NULL, &P), 0);
            check_ref(&P, lv[l]->name);
            prob_free(&P);
        }
}

/* Sinks on the quantized-cache path: the oracle against the reference,
 * every level against the oracle and the reference, with and without a
 * window; one dominant sink (20) leaves its head's output near zero. */
Test(kern_attn_q, sinks)
{
    const sl_kern *lv[SL_ISA_COUNT];
    int nl = get_levels(lv);
    static const shape shs[] = {
        {  8, 2,  64,  1, 40, 0, 0, SL_GGML_Q8_0, SL_GGML_Q8_0 },
        {  8, 2,  64,  9, 30, 1, 0, SL_GGML_Q4_0, SL_GGML_Q4_0 },
        { 24, 2,  32,  3,  4, 1, 0, SL_GGML_F16, SL_GGML_Q4_0 },
        {  6, 2,  96,  4, 11, 0, 0, SL_GGML_Q4_0, SL_GGML_Q8_0 },
    };
    float sinks[24];
    for (size_t si = 0; si < sizeof shs / sizeof shs[0]; si++)
        for (int w = 0; w < 2; w++) {
            prob P;
            prob_make(&P, &shs[si]);
            attn_test_sinks(sinks, shs[si].n_head);
            P.a.sinks = sinks;
            P.a.window = 5 * w;
            const int64_t osz = P.a.out_stride * shs[si].n_q;
            float *o0 = malloc((size_t)osz * sizeof(float));
            cr_assert_not_null(o0);
            for (int l = 0; l < nl; l++) {
                cr_assert_eq(run(lv[l], NULL, &P), 0, "%s", lv[l]->name);
                check_ref(&P, lv[l]->name);
                if (l == 0) memcpy(o0, P.out, (size_t)osz * sizeof(float));
                for (int64_t i = 0; i < osz; i++)
                    cr_assert(fabsf(P.out[i] - o0[i]) <= 2e-5f * fabsf(o0[i]) + 2e-5f,
                              "[%s] sinks shape %zu element %lld: %.9g vs scalar %.9g", lv[l]->name, si,
                              (long long)i, P.out[i], o0[i]);
                for (int i = 0; i < shs[si].n_q; i++)
                    for (int d = 0; d < shs[si].head_dim; d++)
                        cr_assert(fabsf(P.out[i * P.a.out_stride + shs[si].head_dim + d]) < 1e-6f,
                                  "[%s] the dominant sink's head kept weight", lv[l]->name);
            }
            free(o0);
            prob_free(&P);
        }
}

Test(kern_attn_q, threads_match_single)
{
    const sl_kern *lv[SL_ISA_COUNT];
    int nl = get_levels(lv);
    sl_pool *pool;
    cr_assert_eq(sl_pool_create(&pool, 2), 0);
    shape sh = { 8, 2, 64, 17, 40, 1, 0, SL_GGML_Q4_0, SL_GGML_Q4_0 };
    prob P;
    prob_make(&P, &sh);
    for (int l = 0; l < nl; l++) attn_check_threads(lv[l], pool, &P.a, P.n_ctx);
    prob_free(&P);
    sl_pool_destroy(pool);
}

/* Blocks must not straddle heads or rows; only F16, Q8_0, Q4_0 caches. */
Test(kern_attn_q, bad_args)
{
    const sl_kern *k = sl_kern_for(SL_ISA_SCALAR);
    shape sh = { 4, 2, 64, 1, 3, 0, 0, SL_GGML_Q8_0, SL_GGML_Q8_0 };
    prob P;
    prob_make(&P, &sh);
    size_t sz = sl_kern_attn_scratch(1, 64, P.n_ctx);
    void *ws = malloc(sz);
    cr_assert_not_null(ws);
    cr_assert_eq(sl_kern_attention(k, NULL, &P.a, ws), 0);
    P.a.kv_stride += 16;
    cr_assert_eq(sl_kern_attention(k, NULL, &P.a, ws), -EINVAL);
    P.a.kv_stride -= 16;
    P.a.kv_head_stride = 48;
    cr_assert_eq(sl_kern_attention(k, NULL, &P.a, ws), -EINVAL);
    P.a.kv_head_stride = 0;
    P.a.type_v = SL_GGML_Q4_1;
    cr_assert_eq(sl_kern_attention(k, NULL, &P.a, ws), -EINVAL);
    P.a.type_v = SL_GGML_Q8_0;
    P.a.type_k = -3;
    cr_assert_eq(sl_kern_attention(k, NULL, &P.a, ws), -EINVAL);
    P.a.type_k = SL_GGML_Q8_0;
    P.a.head_dim = 48; P.a.n_head = 2; P.a.n_head_kv = 2;   /* 48 is not whole blocks */
    cr_assert_eq(sl_kern_attention(k, NULL, &P.a, ws), -EINVAL);
    free(ws);
    prob_free(&P);
}
