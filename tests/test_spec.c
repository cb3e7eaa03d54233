/* Speculative decoding (sl_spec): n-gram drafts — greedy tokens identical to
 * plain decoding on every golden model (resident and streamed); with
 * sampling, the accept/reject rule keeps the target distribution (two-sample
 * chi-square of the second generated token, spec vs plain, fixed seeds);
 * adaptive k and the refusals. Draft-model drafts — greedy identity on pairs
 * that share a vocabulary (other quantizations of the target, another model
 * of the same vocabulary, the target itself), the vocabulary refusal naming
 * the first differing id, the min(1, p/q) rule and residual max(0, p - q)
 * against the target's exact distribution (chi-square, fixed seeds), stats.
 * SL_HOST_ONLY (reads the models in several modes). */
#include "sl_test.h"
#include "session_testutil.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../engine/sluice.h"
#include "golden_models.h"
#include "util_cli.h"
#include "../gguf/base/sl_status.h"
#include "../io/sluice_stream.h"

#define MODELS SL_SHARED_DIR "/models"
#define S260 MODELS "/stories260K.gguf"
#define NGEN 40

static sl_model *open_mode(const char *path, int mode)
{
    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.n_ctx = 256;
    mp.n_threads = 1;   /* tiny models: a second thread only adds synchronisation */
    mp.mode = mode;
    if (mode == SL_MODE_STREAM) mp.max_pinned = 0;
    return st_open(path, &mp);
}

/* A prompt with a repeated phrase, so that n-gram drafts exist from the start. */
static int prompt(int32_t n_vocab, int32_t *ids)
{
    int n = 0;
    ids[n++] = 1;
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 5; j++) ids[n++] = 3 + (int32_t)((j * 37 + 11) % (n_vocab - 3));
    return n;
}

static sl_session *prompted(sl_model *m, const sl_sampling *sp)
{
    sl_model_info info;
    sl_model_get_info(m, &info);
    int32_t ids[32];
    int n = prompt(info.n_vocab, ids);
    sl_session *s = st_session(m, false);
    cr_assert_eq(sl_session_set_sampling(s, sp), 0);
    cr_assert_eq(sl_session_feed_tokens(s, ids, n), 0, "%s", sl_session_errmsg(s));
    return s;
}

/* Greedy: the tokens of a speculative run (n-gram drafts, or a session of the
 * model `draft`) equal plain sl_session_step; returns the accepted drafts. */
static int64_t check_greedy(const char *path, const char *draft, int mode, bool adaptive, int32_t k_max)
{
    sl_model *m = open_mode(path, mode);
    sl_model *dm = draft ? open_mode(draft, SL_MODE_RESIDENT) : NULL;
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = 0;
    int32_t plain[NGEN], spec[NGEN + 16];
    sl_session *s = prompted(m, &sp), *ds = NULL;
    for (int i = 0; i < NGEN; i++) cr_assert_eq(sl_session_step(s, &plain[i]), 0, "%s", sl_session_errmsg(s));
    sl_session_destroy(s);

    s = prompted(m, &sp);
    sl_spec_params pp;
    sl_spec_params_init(&pp);
    pp.adaptive = adaptive;
    pp.k_max = k_max;
    if (dm) {
        cr_assert_eq(sl_session_create(&ds, dm), 0);
        pp.kind = SL_SPEC_DRAFT;
        pp.draft = ds;
    }
    sl_spec *x;
    cr_assert_eq(sl_spec_create(&x, s, &pp), 0, "%s", sl_last_error());
    int32_t n = 0;
    while (n < NGEN) {
        int32_t got;
        cr_assert_eq(sl_spec_step(x, spec + n, 16, &got), 0, "%s", sl_spec_errmsg(x));
        cr_assert(got >= 1 && got <= 9);
        n += got;
        /* a draft never runs ahead of what the target kept */
        if (ds) cr_assert_leq(sl_session_n_past(ds), sl_session_n_past(s));
    }
    for (int i = 0; i < NGEN; i++)
        cr_assert_eq(spec[i], plain[i], "%s, draft %s (mode %d, k_max %d): token %d: speculative %d, plain %d", path,
                     draft ? draft : "n-gram", mode, k_max, i, spec[i], plain[i]);
    sl_spec_stats st;
    cr_assert_eq(sl_spec_get_stats(x, &st), 0);
    cr_assert_eq(st.n_tokens, n);
    cr_assert_eq(sl_session_n_past(s), 16 + n, "cache holds the prompt and every generated token");
    cr_assert_leq(st.n_accepted, st.n_drafted);
    cr_assert_eq(st.n_tokens, st.n_passes + st.n_accepted);
    if (ds) {
        cr_assert_gt(st.n_drafted, 0);
        cr_assert_gt(st.draft_ms, 0);
        cr_assert_gt(st.verify_ms, 0);
        cr_log_info("draft %s for %s (mode %d, k_max %d): %lld of %lld drafts accepted, %.2f tokens/pass", draft,
                    path, mode, k_max, (long long)st.n_accepted, (long long)st.n_drafted,
                    (double)st.n_tokens / (double)st.n_passes);
    }
    sl_spec_destroy(x);
    sl_session_destroy(ds);
    sl_session_destroy(s);
    sl_model_close(dm);
    sl_model_close(m);
    return st.n_accepted;
}

static void all_greedy(int mode)
{
    int64_t accepted = 0;
    for (size_t i = 0; i < N_GOLDEN_MODELS; i++) {
        char path[512];
        snprintf(path, sizeof path, MODELS "/%s.gguf", golden_models[i]);
        accepted += check_greedy(path, NULL, mode, true, 0);
        if (mode == SL_MODE_RESIDENT) accepted += check_greedy(path, NULL, mode, false, 8);
    }
    cr_assert_gt(accepted, 0, "no draft was ever accepted: the identity proves nothing");
}

Test(spec, greedy_identity_resident, .timeout = 120) { all_greedy(SL_MODE_RESIDENT); }
Test(spec, greedy_identity_stream, .timeout = 120) { all_greedy(SL_MODE_STREAM); }

/* ---- sampling keeps the target distribution ------------------------------ */
#define RUNS 1200

static const char story[] = "Once upon a time, there was a little girl. She had a big red ball. "
                            "Once upon a time, there was a little";

static int story_prompt(sl_model *m, int32_t *ids)
{
    return sl_model_tokenize(m, story, strlen(story), true, false, ids, 64);
}

/* The first n-gram draft after ctx[0..len) (n = 3, 2, 1; most recent earlier
 * match), as sluice.h describes it; -1 if none. */
static int32_t first_draft(const int32_t *ctx, int len)
{
    for (int n = 3; n >= 1; n--)
        for (int j = len - n - 1; j >= 0; j--)
            if (!memcmp(ctx + j, ctx + len - n, (size_t)n * sizeof *ctx)) return ctx[j + n];
    return -1;
}

/* Spec params (n-gram) with k fixed, not adaptive. */
static sl_spec_params fixed_k(int32_t k)
{
    sl_spec_params pp;
    sl_spec_params_init(&pp);
    pp.adaptive = false;
    pp.k_max = k;
    return pp;
}

/* Second generated token of each run (seed = run index). */
static void second_tokens(sl_model *m, bool spec, int32_t *first, int32_t *out, bool *rejected0,
                          sl_spec_stats *tot)
{
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = 1.0f; sp.top_k = 0; sp.top_p = 1.0f; sp.min_p = 0.0f;
    /* real text the trained model continues: drafts from the repeated sentence
     * are often, not always, what it samples */
    int32_t ids[64];
    int n = story_prompt(m, ids);
    cr_assert_gt(n, 10);
    sl_session *s = st_session(m, false);
    sl_spec_params pp = fixed_k(3);
    memset(tot, 0, sizeof *tot);
    for (int r = 0; r < RUNS; r++) {
        sl_session_reset(s);
        sp.seed = 1000 + (uint64_t)r;
        cr_assert_eq(sl_session_set_sampling(s, &sp), 0);
        cr_assert_eq(sl_session_feed_tokens(s, ids, n), 0);
        int32_t t[16], got = 0;
        if (spec) {
            sl_spec *x;
            cr_assert_eq(sl_spec_create(&x, s, &pp), 0);
            sl_spec_stats st;
            while (got < 2) {
                int32_t k;
                cr_assert_eq(sl_spec_step(x, t + got, 8, &k), 0, "%s", sl_spec_errmsg(x));
                if (got == 0) {   /* the first pass drafted and kept none: a rejection at its first draft */
                    sl_spec_get_stats(x, &st);
                    rejected0[r] = st.n_drafted > 0 && st.n_accepted == 0;
                }
                got += k;
            }
            sl_spec_get_stats(x, &st);
            tot->n_drafted += st.n_drafted;
            tot->n_accepted += st.n_accepted;
            sl_spec_destroy(x);
        } else {
            cr_assert_eq(sl_session_step(s, &t[0]), 0);
            cr_assert_eq(sl_session_step(s, &t[1]), 0);
        }
        first[r] = t[0];
        out[r] = t[1];
    }
    sl_session_destroy(s);
}

/* Upper 0.1% point of chi-square with df degrees of freedom (Wilson-Hilferty). */
static double chi2_crit(int df)
{
    const double z = 3.0902;
    double a = 2.0 / (9.0 * df), c = 1 - a + z * sqrt(a);
    return df * c * c * c;
}

Test(spec, sampling_keeps_distribution, .timeout = 400)
{
    sl_model *m = open_mode(S260, SL_MODE_RESIDENT);
    static int32_t a[RUNS], b[RUNS], a1[RUNS], b1[RUNS];
    static bool rej[RUNS];
    sl_spec_stats st, none;
    second_tokens(m, false, a1, a, rej, &none);
    second_tokens(m, true, b1, b, rej, &st);
    cr_assert_gt(st.n_accepted, RUNS / 20, "drafts accepted %lld of %lld: the rule is barely exercised",
                 (long long)st.n_accepted, (long long)st.n_drafted);
    cr_assert_lt(st.n_accepted, st.n_drafted - RUNS / 20, "drafts rejected too rarely to test the residual draw");

    /* The event "second token = the first draft": its count against the exact
     * target probabilities p(d | prompt, t1) (binomial z, |z| < 4). Accepting
     * too often or drawing rejections from p instead of the residual moves it. */
    int32_t ids[80];
    int n = story_prompt(m, ids);
    sl_model_info info;
    sl_model_get_info(m, &info);
    static double pd_of[512];
    static bool have[512];
    sl_session *s = st_session(m, false);
    double expect = 0, var = 0;
    int hits = 0, used = 0, n_rej = 0;
    for (int r = 0; r < RUNS; r++) {
        int32_t t1 = b1[r];
        ids[n] = t1;
        int32_t d = first_draft(ids, n + 1);
        if (d < 0) continue;
        if (!have[t1]) {   /* p(. | prompt, t1) at temperature 1, nothing filtered */
            sl_session_reset(s);
            cr_assert_eq(sl_session_feed_tokens(s, ids, n + 1), 0);
            const float *lg = sl_session_logits(s);
            double mx = lg[0], sum = 0;
            for (int i = 1; i < info.n_vocab; i++) if (lg[i] > mx) mx = lg[i];
            for (int i = 0; i < info.n_vocab; i++) sum += exp((double)lg[i] - mx);
            pd_of[t1] = exp((double)lg[d] - mx) / sum;
            have[t1] = true;
        }
        expect += pd_of[t1];
        var += pd_of[t1] * (1 - pd_of[t1]);
        hits += b[r] == d;
        used++;
        /* after a rejection the token comes from the residual, which excludes the draft */
        cr_assert(!rej[r] || b[r] != d, "run %d: draft %d rejected, yet drawn again", r, d);
        n_rej += rej[r];
    }
    sl_session_destroy(s);
    cr_assert_gt(used, RUNS / 2);
    cr_assert_gt(n_rej, 10, "only %d rejections at the first draft", n_rej);
    double z = (hits - expect) / sqrt(var);
    cr_log_info("spec sampling: second token = first draft in %d of %d runs, expected %.1f (z %.2f); %d rejections",
                hits, used, expect, z, n_rej);
    cr_assert(fabs(z) < 4, "second token = first draft in %d of %d runs, expected %.1f (z = %.2f)", hits, used,
              expect, z);

    /* two-sample chi-square over tokens, the rare ones (< 10 in both) pooled */
    static int ca[512], cb[512];
    for (int r = 0; r < RUNS; r++) { ca[a[r]]++; cb[b[r]]++; }
    double chi = 0, pa = 0, pb = 0;
    int df = -1;
    for (int t = 0; t < 512; t++) {
        if (ca[t] + cb[t] < 10) { pa += ca[t]; pb += cb[t]; continue; }
        chi += (double)(ca[t] - cb[t]) * (ca[t] - cb[t]) / (ca[t] + cb[t]);
        df++;
    }
    if (pa + pb > 0) { chi += (pa - pb) * (pa - pb) / (pa + pb); df++; }
    cr_log_info("df %d", df);
    cr_assert_gt(df, 3, "too few categories (%d) for the test to mean anything", df);
    cr_assert_lt(chi, chi2_crit(df), "chi-square %.1f >= %.1f (df %d): speculative sampling changed the "
                 "distribution of the second token", chi, chi2_crit(df), df);
    cr_log_info("spec sampling: chi2 %.1f (df %d, crit %.1f), accepted %lld of %lld drafts", chi, df,
                chi2_crit(df), (long long)st.n_accepted, (long long)st.n_drafted);
    sl_model_close(m);
}

/* ---- draft-model drafts --------------------------------------------------- */

#define TINY(q) MODELS "/synth-tiny-" q ".gguf"

Test(spec, draft_greedy_identity, .timeout = 120)
{
    /* another quantization of the same float model: the realistic draft */
    int64_t acc = check_greedy(TINY("q8_0"), TINY("q4_k"), SL_MODE_RESIDENT, true, 0);
    acc += check_greedy(TINY("q8_0"), TINY("q4_0"), SL_MODE_STREAM, true, 0);
    acc += check_greedy(TINY("q4_k"), TINY("q2_k"), SL_MODE_RESIDENT, false, 8);
    cr_assert_gt(acc, NGEN / 4, "a quantization of the same model should often be accepted (%lld)", (long long)acc);
    /* another model with the same vocabulary (Llama-2 SPM; TinyStories' 2048) */
    check_greedy(TINY("q4_k"), MODELS "/llama-2-tiny-random.gguf", SL_MODE_RESIDENT, true, 0);
    check_greedy(MODELS "/TinyStories-656K-Q8_0.gguf", MODELS "/synth2-qwen3-q4_k_m.gguf", SL_MODE_STREAM, true, 0);
    /* the target as its own draft: every draft is the argmax */
    int64_t self = check_greedy(MODELS "/TinyStories-656K-Q8_0.gguf", MODELS "/TinyStories-656K-Q8_0.gguf",
                                      SL_MODE_RESIDENT, false, 4);
    cr_assert_geq(self, NGEN - NGEN / 5, "the target drafting for itself: %lld accepted", (long long)self);
}

/* A draft with a shorter context than the target's drafts while it can, then
 * the passes go on without drafts: the same tokens, no error. */
Test(spec, draft_context_shorter)
{
    sl_model *m = open_mode(TINY("q8_0"), SL_MODE_RESIDENT);
    sl_model_params mp = st_params(24, 0, 1);
    mp.mode = SL_MODE_RESIDENT;
    sl_model *dm;
    cr_assert_eq(sl_model_open(&dm, TINY("q4_k"), &mp), 0, "%s", sl_last_error());
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = 0;
    int32_t plain[NGEN], spec[NGEN + 16];
    sl_session *s = prompted(m, &sp), *ds;
    for (int i = 0; i < NGEN; i++) cr_assert_eq(sl_session_step(s, &plain[i]), 0);
    sl_session_destroy(s);
    s = prompted(m, &sp);
    cr_assert_eq(sl_session_create(&ds, dm), 0);
    sl_spec_params pp = fixed_k(4);
    pp.kind = SL_SPEC_DRAFT;
    pp.draft = ds;
    sl_spec *x;
    cr_assert_eq(sl_spec_create(&x, s, &pp), 0, "%s", sl_last_error());
    int32_t n = 0;
    int64_t drafted_at_24 = -1;
    sl_spec_stats st;
    while (n < NGEN) {
        int32_t got;
        cr_assert_eq(sl_spec_step(x, spec + n, 16, &got), 0, "%s", sl_spec_errmsg(x));
        n += got;
        cr_assert_leq(sl_session_n_past(ds), 24);
        sl_spec_get_stats(x, &st);
        if (sl_session_n_past(s) >= 24 && drafted_at_24 < 0) drafted_at_24 = st.n_drafted;
    }
    for (int i = 0; i < NGEN; i++) cr_assert_eq(spec[i], plain[i], "token %d", i);
    cr_assert_gt(drafted_at_24, 0, "drafts while the context fits the draft");
    cr_assert_eq(st.n_drafted, drafted_at_24, "no drafts once the context outgrew the draft's");
    sl_spec_destroy(x);
    sl_session_destroy(ds);
    sl_session_destroy(s);
    sl_model_close(dm);
    sl_model_close(m);
}

Test(spec, draft_refusals)
{
    sl_model *m = open_mode(S260, SL_MODE_RESIDENT);
    sl_model *other = open_mode(TINY("q4_k"), SL_MODE_RESIDENT);
    sl_sampling sp;
    sl_sampling_init(&sp);
    sl_session *s = prompted(m, &sp), *ds;
    cr_assert_eq(sl_session_create(&ds, other), 0);
    sl_spec_params pp;
    sl_spec_params_init(&pp);
    pp.kind = SL_SPEC_DRAFT;
    sl_spec *x = NULL;
    cr_assert_eq(sl_spec_create(&x, s, &pp), SL_EINVAL, "no draft session");
    pp.draft = s;
    cr_assert_eq(sl_spec_create(&x, s, &pp), SL_EINVAL, "the target as its own draft session");
    /* the first id whose text differs, found here independently */
    int32_t first = -1;
    char a[512], b[512];
    for (int32_t id = 0; id < 512 && first < 0; id++) {
        int la = sl_model_token_text(m, id, a, sizeof a), lb = sl_model_token_text(other, id, b, sizeof b);
        cr_assert(la >= 0 && lb >= 0);
        if (la != lb || memcmp(a, b, (size_t)la)) first = id;
    }
    cr_assert_gt(first, 2, "both vocabularies begin <unk> <s> </s>: the check must look past them");
    pp.draft = ds;
    cr_assert_eq(sl_spec_create(&x, s, &pp), SL_EINVAL, "vocab 512 vs 32000");
    cr_assert_null(x);
    char want[64];
    snprintf(want, sizeof want, "token id %d ", first);
    cr_assert_not_null(strstr(sl_last_error(), want), "'%s' does not name id %d", sl_last_error(), first);
    /* an old caller's struct (first layout) has no draft field: a draft kind is refused, n-gram works */
    pp.struct_size = SL_SPEC_PARAMS_MIN_SIZE;
    cr_assert_eq(sl_spec_create(&x, s, &pp), SL_EINVAL);
    pp.kind = SL_SPEC_NGRAM;
    cr_assert_eq(sl_spec_create(&x, s, &pp), 0);
    sl_spec_destroy(x);
    sl_session_destroy(ds);
    sl_session_destroy(s);
    sl_model_close(other);
    sl_model_close(m);
}

/* Sampling with a draft model: over fixed seeds, the second generated token
 * (the first one a draft can decide) against the target's exact
 * distribution given the first, p(x | prompt, t1): Pearson chi-square within
 * each frequent t1 (cells with expectation < 5 pooled), summed over them. The
 * draft is another quantization (q4_0) of the target (q8_0): accepted often,
 * rejected often enough that the residual draw matters. Temperature 0.7 and
 * top-k 40 (replicated below) keep the distributions peaked, as in use. */
#define DRUNS 1000
#define DTEMP 0.7
#define DTOPK 40
Test(spec, draft_sampling_keeps_distribution, .timeout = 300)
{
    sl_model *m = open_mode(TINY("q8_0"), SL_MODE_RESIDENT);
    sl_model *dm = open_mode(TINY("q4_0"), SL_MODE_RESIDENT);
    sl_model_info info;
    sl_model_get_info(m, &info);
    const int32_t nv = info.n_vocab;
    int32_t ids[40];
    int n = prompt(nv, ids);
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = (float)DTEMP; sp.top_k = DTOPK; sp.top_p = 1.0f; sp.min_p = 0.0f;
    sl_session *s, *ds, *ref;
    cr_assert_eq(sl_session_create(&s, m), 0);
    cr_assert_eq(sl_session_create(&ds, dm), 0);
    cr_assert_eq(sl_session_create(&ref, m), 0);
    sl_spec_params pp = fixed_k(3);
    pp.kind = SL_SPEC_DRAFT;
    pp.draft = ds;
    double *p1 = malloc((size_t)nv * sizeof *p1);
    int *count = calloc((size_t)64 * (size_t)nv, sizeof *count), n_of[64] = { 0 };
    int32_t t1_seen[64];
    int n_t1 = 0;
    float *pcache = malloc((size_t)64 * (size_t)nv * sizeof *pcache);   /* p(. | prompt, t1), frequent t1 */
    int64_t drafted = 0, accepted = 0, rej_first = 0;
    for (int r = 0; r < DRUNS; r++) {
        sl_session_reset(s);
        sp.seed = 5000 + (uint64_t)r;
        cr_assert_eq(sl_session_set_sampling(s, &sp), 0);
        cr_assert_eq(sl_session_feed_tokens(s, ids, n), 0);
        sl_spec *x;
        cr_assert_eq(sl_spec_create(&x, s, &pp), 0, "%s", sl_last_error());
        int32_t t[16], got = 0;
        sl_spec_stats st;
        while (got < 2) {
            int32_t k;
            cr_assert_eq(sl_spec_step(x, t + got, 8, &k), 0, "%s", sl_spec_errmsg(x));
            if (got == 0) { sl_spec_get_stats(x, &st); rej_first += st.n_drafted > 0 && st.n_accepted == 0; }
            got += k;
        }
        sl_spec_get_stats(x, &st);
        cr_assert_eq(st.n_tokens, st.n_passes + st.n_accepted);
        drafted += st.n_drafted;
        accepted += st.n_accepted;
        sl_spec_destroy(x);
        int c = 0;
        while (c < n_t1 && t1_seen[c] != t[0]) c++;
        if (c == n_t1) {   /* p(. | prompt, t1): softmax(logit / T) over the top k, 0 elsewhere */
            sl_session_reset(ref);
            ids[n] = t[0];
            cr_assert_eq(sl_session_feed_tokens(ref, ids, n + 1), 0);
            const float *lg = sl_session_logits(ref);
            int top[DTOPK];
            for (int j = 0; j < DTOPK; j++) {
                int b = -1;
                for (int i = 0; i < nv; i++) {
                    bool taken = false;
                    for (int q = 0; q < j && !taken; q++) taken = top[q] == i;
                    if (!taken && (b < 0 || lg[i] > lg[b])) b = i;
                }
                top[j] = b;
            }
            double sum = 0;
            for (int i = 0; i < nv; i++) p1[i] = 0;
            for (int j = 0; j < DTOPK; j++) sum += (p1[top[j]] = exp(((double)lg[top[j]] - lg[top[0]]) / DTEMP));
            for (int i = 0; i < nv; i++) p1[i] /= sum;
            if (n_t1 < 64) {
                t1_seen[n_t1++] = t[0];
                for (int i = 0; i < nv; i++) pcache[(size_t)c * (size_t)nv + (size_t)i] = (float)p1[i];
            } else c = -1;
        }
        if (c < 0) continue;   /* a rare first token: no stratum */
        n_of[c]++;
        count[(size_t)c * (size_t)nv + (size_t)t[1]]++;
    }
    cr_log_info("draft sampling: %lld of %lld drafts accepted, first draft rejected in %lld runs",
                (long long)accepted, (long long)drafted, (long long)rej_first);
    cr_assert_gt(accepted, DRUNS / 10, "accepted %lld of %lld: the acceptance rule is barely exercised",
                 (long long)accepted, (long long)drafted);
    cr_assert_gt(rej_first, DRUNS / 20, "the first draft was rejected in only %lld runs: the residual is barely "
                 "exercised", (long long)rej_first);
    double chi = 0;
    int df = 0, used = 0;
    for (int c = 0; c < n_t1; c++) {
        if (n_of[c] < 20) continue;
        double pe = 0, po = 0;
        int cells = 0;
        used += n_of[c];
        for (int i = 0; i < nv; i++) {
            double e = n_of[c] * (double)pcache[(size_t)c * (size_t)nv + (size_t)i];
            double o = count[(size_t)c * (size_t)nv + (size_t)i];
            if (e < 5) { pe += e; po += o; continue; }
            chi += (o - e) * (o - e) / e;
            cells++;
        }
        if (pe >= 5) { chi += (po - pe) * (po - pe) / pe; cells++; }
        else cr_assert_lt(po, 5 + 4 * sqrt(pe + 1), "t1 %d: %g tokens where %.1f were expected", t1_seen[c], po, pe);
        if (cells > 1) df += cells - 1;
    }
    cr_assert_gt(used, DRUNS / 2, "only %d runs in strata", used);
    cr_log_info("draft sampling: chi2 %.1f (df %d, crit %.1f)", chi, df, chi2_crit(df > 0 ? df : 1));
    cr_assert_gt(df, 3, "too few categories (%d) for the test to mean anything", df);
    cr_assert_lt(chi, chi2_crit(df), "chi-square %.1f >= %.1f (df %d): draft speculation changed the distribution "
                 "of the second token", chi, chi2_crit(df), df);
    free(p1); free(count); free(pcache);
    sl_session_destroy(ref);
    sl_session_destroy(ds);
    sl_session_destroy(s);
    sl_model_close(dm);
    sl_model_close(m);
}

/* sl_spec_sample hands out the draw a rejection left pending until the session is fed. */
Test(spec, sample_keeps_pending_draw)
{
    sl_model *m = open_mode(S260, SL_MODE_RESIDENT);
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = 1.0f; sp.top_k = 0; sp.top_p = 1.0f; sp.min_p = 0.0f;
    int32_t ids[64];
    int n = story_prompt(m, ids);
    sl_session *s = st_session(m, false);
    sl_spec_params pp = fixed_k(3);
    int found = 0;
    for (int r = 0; r < 200 && found < 5; r++) {
        sl_session_reset(s);
        sp.seed = 77 + (uint64_t)r;
        cr_assert_eq(sl_session_set_sampling(s, &sp), 0);
        cr_assert_eq(sl_session_feed_tokens(s, ids, n), 0);
        sl_spec *x;
        cr_assert_eq(sl_spec_create(&x, s, &pp), 0);
        int32_t t[8], k, a, b;
        cr_assert_eq(sl_spec_step(x, t, 8, &k), 0);
        sl_spec_stats st;
        sl_spec_get_stats(x, &st);
        if (st.n_accepted < st.n_drafted) {   /* a rejection: the next token is already drawn */
            found++;
            cr_assert_eq(sl_spec_sample(x, &a), 0);
            cr_assert_eq(sl_spec_sample(x, &b), 0);
            cr_assert_eq(a, b, "the pending draw is handed out until the session is fed");
            int32_t t2[8];
            cr_assert_eq(sl_spec_step(x, t2, 1, &k), 0);
            cr_assert_eq(t2[0], a, "the step begins with the pending draw");
            /* fed: a fresh sample now (the PRNG moves) */
            cr_assert_eq(sl_spec_sample(x, &a), 0);
            cr_assert_eq(sl_spec_sample(x, &b), 0);
        }
        sl_spec_destroy(x);
    }
    cr_assert_eq(found, 5, "no rejection in 200 runs");
    st_close(s, m);
}

Test(spec, refusals)
{
    sl_model *m = open_mode(S260, SL_MODE_RESIDENT);
    sl_sampling sp;
    sl_sampling_init(&sp);
    sl_session *s = prompted(m, &sp);
    sl_spec_params pp;
    sl_spec_params_init(&pp);
    sl_spec *x;
    pp.kind = 7;
    cr_assert_eq(sl_spec_create(&x, s, &pp), SL_EINVAL);
    pp.kind = SL_SPEC_NGRAM;
    pp.k_max = 9;
    cr_assert_eq(sl_spec_create(&x, s, &pp), SL_EINVAL, "more than 8 drafts");
    pp.k_max = 2;
    pp.ngram_min = 0;
    cr_assert_eq(sl_spec_create(&x, s, &pp), SL_EINVAL);
    pp.ngram_min = 1;
    pp.struct_size = 1;
    cr_assert_eq(sl_spec_create(&x, s, &pp), SL_EINVAL);
    pp.struct_size = sizeof pp;
    cr_assert_eq(sl_spec_create(&x, s, &pp), 0);
    int32_t t[4], n;
    cr_assert_eq(sl_spec_step(x, t, 0, &n), SL_EINVAL);
    cr_assert_eq(sl_spec_step(x, t, 1, &n), 0, "cap 1: no drafts, a plain step");
    cr_assert_eq(n, 1);
    sl_spec_destroy(x);
    sl_spec_destroy(NULL);
    st_close(s, m);
}

/* ---- the command line: run, chat (and serve's flags) ----------------------- */

Test(spec_cli, bad_values_exit_2)
{
    static const char *const bad[] = {
        "run -m " S260 " -p hi --spec bogus", "invalid value 'bogus' for --spec",
        "chat -m " S260 " --spec fast < /dev/null", "invalid value 'fast' for --spec",
        "chat -m " S260 " --spec draft < /dev/null", "--spec draft needs --draft-model",
        "run -m " S260 " -p hi --spec ngram --draft-model " S260, "--draft-model goes with --spec draft",
        "run -m " S260 " -p hi --spec ngram --spec-k 9", "invalid value '9' for --spec-k",
        "chat -m " S260 " --spec ngram --spec-k 0 < /dev/null", "invalid value '0' for --spec-k",
        "run -m " S260 " -p hi --spec-k 2", "--spec-k needs",
        "run -m " S260 " -p hi --draft-model", "needs a value",
        "serve -m " S260 " --spec sometimes", "invalid value 'sometimes' for --spec",
        "serve -m " S260 " --spec draft", "--spec draft needs --draft-model",
        "serve -m " S260 " --draft-model " S260 " --spec-k 12", "invalid value '12' for --spec-k",
    };
    char out[8192];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i += 2) {
        int rc = sl_test_sluice(bad[i], out, sizeof out);
        if (rc == 1 && strstr(out, "not built here")) continue;   /* serve without its libraries */
        cr_assert_eq(rc, 2, "%s: %s", bad[i], out);
        cr_assert_not_null(strstr(out, bad[i + 1]), "%s: '%s' not in: %s", bad[i], bad[i + 1], out);
    }
}

Test(spec_cli, draft_model_runs, .timeout = 60)
{
    char plain[16384], spec[16384];
    /* greedy: the same text with and without a draft model (another quantization) */
    int rc = sl_test_sluice("run -m " TINY("q8_0") " -p 'Once upon a time' -n 40 --temp 0 -t 1 --no-display-prompt",
                            plain, sizeof plain);
    cr_assert_eq(rc, 0, "%s", plain);
    rc = sl_test_sluice("run -m " TINY("q8_0") " --draft-model " TINY("q4_k") " -p 'Once upon a time' -n 40 "
                        "--temp 0 -t 1 --no-display-prompt --stats", spec, sizeof spec);
    cr_assert_eq(rc, 0, "%s", spec);
    cr_assert_not_null(strstr(spec, "spec: "), "%s", spec);
    cr_assert_not_null(strstr(spec, "decode: 40 tokens"), "%s", spec);
    char *nl = strchr(plain, '\n'), *nl2 = strchr(spec, '\n');
    cr_assert(nl && nl2);
    cr_assert_eq(nl - plain, nl2 - spec, "plain '%.*s' vs draft '%.*s'", (int)(nl - plain), plain, (int)(nl2 - spec), spec);
    cr_assert_eq(memcmp(plain, spec, (size_t)(nl - plain)), 0);
    /* another vocabulary: refused, naming the id */
    rc = sl_test_sluice("run -m " S260 " --draft-model " TINY("q4_k") " -p hi -n 4", spec, sizeof spec);
    cr_assert_eq(rc, 1, "%s", spec);
    cr_assert_not_null(strstr(spec, "vocabulary differs from the target's at token id"), "%s", spec);
    /* chat speculates (n-gram and a draft model); greedy replies as without, turn after turn */
    char in[64], cmd[512], a[16384], b[16384];
    snprintf(in, sizeof in, "/tmp/sl_spec_chat_%d.txt", (int)getpid());
    FILE *f = fopen(in, "w");
    cr_assert_not_null(f);
    fputs("Once upon a time\nTell me about the cat\nAnd then?\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "chat -m " S260 " --chat-template chatml -n 48 --temp 0 -t 1 < %s", in);
    cr_assert_eq(sl_test_sluice(cmd, a, sizeof a), 0, "%s", a);
    static const char *const how[] = { "--spec ngram", "--draft-model " S260, "--spec draft --draft-model " S260
                                       " --spec-k 2" };
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "chat -m " S260 " --chat-template chatml -n 48 --temp 0 -t 1 %s < %s", how[i], in);
        cr_assert_eq(sl_test_sluice(cmd, b, sizeof b), 0, "%s", b);
        cr_assert_str_eq(b, a, "chat %s differs from plain chat", how[i]);
    }
    snprintf(cmd, sizeof cmd, "chat -m " S260 " --chat-template chatml -n 48 --temp 0 -t 1 --spec ngram --stats < %s", in);
    cr_assert_eq(sl_test_sluice(cmd, b, sizeof b), 0, "%s", b);
    cr_assert_not_null(strstr(b, "spec: "), "%s", b);
    remove(in);
}
