/* Sampler: greedy ties, determinism for a seed, the support of top-k / top-p /
 * min-p, repetition penalty, and the draw following the softmax. */
#include "sl_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/sampler.h"

#define NV 1000

static void fill_logits(float *l, int n, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        l[i] = (float)((double)(x >> 11) / 9007199254740992.0 * 10.0 - 5.0);
    }
}

Test(sampler, greedy_ties_lowest_id)
{
    float l[8] = { 1, 3, 2, 3, -1, 3, 0, 0 };
    cr_assert_eq(sl_sampler_greedy(l, 8), 1);
    sl_sampler s;
    sl_sampling p;
    sl_sampling_init(&p);
    p.temp = 0;
    cr_assert_eq(sl_sampler_init(&s, 8, &p), 0);
    cr_assert_eq(sl_sampler_sample(&s, l, NULL, 0), 1);
    p.temp = 1; p.top_k = 1;   /* top-k 1 is greedy too, same tie rule */
    s.p = p;
    for (int i = 0; i < 20; i++) cr_assert_eq(sl_sampler_sample(&s, l, NULL, 0), 1);
    sl_sampler_free(&s);
}

static void draw(int32_t *out, int n, const sl_sampling *p, const float *l)
{
    sl_sampler s;
    cr_assert_eq(sl_sampler_init(&s, NV, p), 0);
    for (int i = 0; i < n; i++) out[i] = sl_sampler_sample(&s, l, out, i);
    sl_sampler_free(&s);
}

Test(sampler, deterministic_for_seed)
{
    float l[NV];
    fill_logits(l, NV, 7);
    sl_sampling p;
    sl_sampling_init(&p);
    p.temp = 1.5f; p.top_k = 0; p.top_p = 1; p.min_p = 0; p.repeat_penalty = 1.3f;
    p.seed = 1234;
    int32_t a[200], b[200], c[200];
    draw(a, 200, &p, l);
    draw(b, 200, &p, l);
    cr_assert(!memcmp(a, b, sizeof a), "same seed, different tokens");
    p.seed = 1235;
    draw(c, 200, &p, l);
    cr_assert(memcmp(a, c, sizeof a), "different seeds gave identical 200-token sequences");
}

Test(sampler, uniform_in_range)
{
    sl_sampler s;
    cr_assert_eq(sl_sampler_init(&s, 4, NULL), 0);
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        double u = sl_sampler_uniform(&s);
        cr_assert(u >= 0 && u < 1);
        sum += u;
    }
    cr_assert_float_eq(sum / 100000, 0.5, 0.01);
    sl_sampler_free(&s);
}

/* Sorted order of ids by logit (desc, id asc). */
static int rank_of(const float *l, int n, int id)
{
    int r = 0;
    for (int i = 0; i < n; i++)
        if (l[i] > l[id] || (l[i] == l[id] && i < id)) r++;
    return r;
}

Test(sampler, top_k_support)
{
    float l[NV];
    fill_logits(l, NV, 11);
    sl_sampling p;
    sl_sampling_init(&p);
    p.temp = 5; p.top_k = 7; p.top_p = 1; p.min_p = 0;
    sl_sampler s;
    cr_assert_eq(sl_sampler_init(&s, NV, &p), 0);
    int seen[7] = { 0 };
    for (int i = 0; i < 3000; i++) {
        int32_t t = sl_sampler_sample(&s, l, NULL, 0);
        int r = rank_of(l, NV, t);
        cr_assert_lt(r, 7, "token of rank %d drawn with top-k 7", r);
        seen[r]++;
    }
    for (int r = 0; r < 7; r++) cr_expect_gt(seen[r], 0, "rank %d never drawn at temp 5", r);
    sl_sampler_free(&s);
}

Test(sampler, top_p_and_min_p_support)
{
    /* probabilities (temp 1): 0.5, 0.25, 0.125, 0.0625, ... */
    float l[10];
    for (int i = 0; i < 10; i++) l[i] = -(float)i * logf(2.0f);
    sl_sampling p;
    sl_sampling_init(&p);
    p.temp = 1; p.top_k = 0; p.top_p = 0.8f; p.min_p = 0;
    sl_sampler s;
    cr_assert_eq(sl_sampler_init(&s, 10, &p), 0);
    int cnt[10] = { 0 };
    for (int i = 0; i < 4000; i++) cnt[sl_sampler_sample(&s, l, NULL, 0)]++;
    /* 0.5 + 0.25 < 0.8 <= 0.875: ids 0..2 kept */
    for (int i = 3; i < 10; i++) cr_assert_eq(cnt[i], 0, "id %d drawn with top-p 0.8", i);
    cr_assert(cnt[0] > 0 && cnt[1] > 0 && cnt[2] > 0);
    /* renormalized 4:2:1 */
    cr_expect_float_eq(cnt[0] / 4000.0, 4.0 / 7, 0.04);
    cr_expect_float_eq(cnt[2] / 4000.0, 1.0 / 7, 0.04);

    p.top_p = 1; p.min_p = 0.2f;    /* keeps p >= 0.1: ids 0..2 (0.125 >= 0.1) */
    s.p = p;
    memset(cnt, 0, sizeof cnt);
    for (int i = 0; i < 4000; i++) cnt[sl_sampler_sample(&s, l, NULL, 0)]++;
    for (int i = 3; i < 10; i++) cr_assert_eq(cnt[i], 0, "id %d drawn with min-p 0.2", i);
    cr_assert(cnt[2] > 0);
    sl_sampler_free(&s);
}

Test(sampler, temperature_follows_softmax)
{
    float l[4] = { 0, 1, 2, 3 };
    sl_sampling p;
    sl_sampling_init(&p);
    p.temp = 2; p.top_k = 0; p.top_p = 1; p.min_p = 0;
    p.seed = 99;
    sl_sampler s;
    cr_assert_eq(sl_sampler_init(&s, 4, &p), 0);
    int cnt[4] = { 0 };
    const int N = 40000;
    for (int i = 0; i < N; i++) cnt[sl_sampler_sample(&s, l, NULL, 0)]++;
    double z = 0, e[4];
    for (int i = 0; i < 4; i++) z += e[i] = exp(l[i] / 2.0);
    for (int i = 0; i < 4; i++) {
        double want = e[i] / z, got = (double)cnt[i] / N;
        double sd = sqrt(want * (1 - want) / N);
        cr_expect(fabs(got - want) < 5 * sd, "id %d: frequency %.4f, softmax %.4f", i, got, want);
    }
    sl_sampler_free(&s);
}

Test(sampler, repetition_penalty)
{
    float l[3] = { 2.0f, 1.9f, -1.0f };
    sl_sampling p;
    sl_sampling_init(&p);
    p.temp = 0; p.repeat_penalty = 1.1f; p.repeat_last_n = 2;
    sl_sampler s;
    cr_assert_eq(sl_sampler_init(&s, 3, &p), 0);
    int32_t hist[3] = { 0, 1, 2 };
    /* window = last 2 (ids 1, 2): id 0 unpenalized stays best */
    cr_assert_eq(sl_sampler_sample(&s, l, hist, 3), 0);
    /* id 0 penalized: 2.0 / 1.1 = 1.818 < 1.9 */
    int32_t h2[2] = { 2, 0 };
    cr_assert_eq(sl_sampler_sample(&s, l, h2, 2), 1);
    /* negative logits get multiplied (more negative), never promoted */
    float l2[2] = { -1.0f, -1.05f };
    int32_t h3[1] = { 1 };
    s.n_vocab = 2;
    cr_assert_eq(sl_sampler_sample(&s, l2, h3, 1), 0);
    int32_t h4[1] = { 0 };
    cr_assert_eq(sl_sampler_sample(&s, l2, h4, 1), 1);   /* -1.1 < -1.05 */
    /* repeated ids in the window are penalized once */
    float l3[2] = { 2.0f, 1.7f };
    int32_t h5[3] = { 0, 0, 0 };
    p.repeat_last_n = -1;
    s.p = p;
    cr_assert_eq(sl_sampler_sample(&s, l3, h5, 3), 0);   /* 1.818 > 1.7 */
    /* the sampling path (temp > 0, top-k 1) penalizes the same way, once per id,
     * and leaves no mark behind for the next call */
    float l4[3] = { 2.0f, 1.9f, 1.7f };
    int32_t h6[4] = { 0, 0, 1, 0 };
    p.temp = 1.0f; p.top_k = 1; p.top_p = 1; p.min_p = 0; p.repeat_penalty = 1.2f;
    s.p = p; s.n_vocab = 3;
    cr_assert_eq(sl_sampler_sample(&s, l4, h6, 4), 2);   /* 1.667, 1.583 < 1.7 */
    cr_assert_eq(sl_sampler_sample(&s, l4, NULL, 0), 0);
    p.temp = 0; s.p = p;
    cr_assert_eq(sl_sampler_sample(&s, l4, h6, 4), 2);
    cr_assert_eq(sl_sampler_sample(&s, l4, NULL, 0), 0);
    sl_sampler_free(&s);
}
