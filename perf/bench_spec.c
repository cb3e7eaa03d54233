/* `sluice bench-spec`: decode tokens/s of plain stepping, n-gram speculation,
 * (with --draft-model) draft-model speculation and (with --spec mtp) the
 * model's MTP block on the same greedy run, rounds alternating the methods,
 * medians; acceptance and tokens per pass of each; and a check that every
 * method produced the same tokens (greedy). --pass-cost K: the time of one
 * pass of k + 1 rows (all their logits, as a verification) after the prompt,
 * k = 0..K alternating, medians against k = 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/cli/cli.h"
#include "../engine/cli/cli_opts.h"
#include "../engine/sluice.h"
#include "../gguf/base/sl_status.h"
#include "../io/sluice_stream.h"
#include "perf.h"

enum { M_PLAIN, M_NGRAM, M_DRAFT, M_MTP, N_METHODS };
static const char *const method_name[N_METHODS] = { "plain", "ngram", "draft", "mtp" };
static const int method_kind[N_METHODS] = { SL_SPEC_OFF, SL_SPEC_NGRAM, SL_SPEC_DRAFT, SL_SPEC_MTP };

/* One greedy generation of n tokens after the prompt; *ms: decode wall time. */
static int run_once(sl_session *s, sl_session *ds, int method, int32_t k_max, const char *prompt, int32_t n,
                    int32_t *out, double *ms, sl_spec_stats *st)
{
    sl_session_reset(s);
    sl_spec *sp = NULL;
    int rc;
    if (method != M_PLAIN) {   /* before the prompt: an MTP block follows every pass */
        sl_spec_params p;
        sl_spec_params_init(&p);
        p.kind = method_kind[method];
        p.k_max = k_max;
        p.draft = method == M_DRAFT ? ds : NULL;
        if (ds) sl_session_reset(ds);   /* its prefill of the prompt counts in the run */
        if ((rc = sl_spec_create(&sp, s, &p))) { fprintf(stderr, "bench-spec: %s\n", sl_last_error()); return rc; }
    }
    if ((rc = sl_session_feed_text(s, prompt, false))) {
        fprintf(stderr, "bench-spec: %s\n", sl_session_errmsg(s));
        sl_spec_destroy(sp);
        return rc;
    }
    double t0 = perf_now();
    int32_t got = 0;
    while (got < n && !rc) {
        int32_t k = 1;
        rc = sp ? sl_spec_step(sp, out + got, n - got, &k) : sl_session_step(s, out + got);
        got += k;
    }
    *ms = (perf_now() - t0) * 1e3;
    if (rc) fprintf(stderr, "bench-spec: %s\n", sp ? sl_spec_errmsg(sp) : sl_session_errmsg(s));
    memset(st, 0, sizeof *st);
    if (sp) sl_spec_get_stats(sp, st);
    sl_spec_destroy(sp);
    return rc;
}

/* --pass-cost: after the prompt, one timed pass of k + 1 rows with every
 * row's logits (what a verification computes), k = 0..kmax alternating. */
static int pass_cost(sl_model *m, sl_session *s, const char *prompt, int32_t kmax, long long reps, int32_t n_vocab)
{
    float *lg = malloc((size_t)(kmax + 1) * (size_t)n_vocab * sizeof *lg);
    double *ms = malloc((size_t)(kmax + 1) * (size_t)reps * sizeof *ms);
    double mb[9] = { 0 }, emb[9] = { 0 };   /* MB read from disk a timed pass: all, routed experts */
    int rc = lg && ms ? 0 : 1;
    const int32_t ids[9] = { 100, 200, 300, 400, 500, 600, 700, 800, 900 };   /* any: the cost is the rows' */
    for (long long r = 0; r < reps && !rc; r++)
        for (int32_t k = 0; k <= kmax && !rc; k++) {
            sl_session_reset(s);
            if ((rc = sl_session_feed_text(s, prompt, false))) break;
            sl_stream_stats a, z;
            sl_stream_get_stats(sl_model_stream(m), &a);
            double t0 = perf_now();
            rc = sl_session_eval(s, ids, k + 1, lg);
            ms[(size_t)k * (size_t)reps + (size_t)r] = (perf_now() - t0) * 1e3;
            sl_stream_get_stats(sl_model_stream(m), &z);
            mb[k] += (double)(z.bytes_read - a.bytes_read) / 1e6 / (double)reps;
            emb[k] += (double)(z.expert_bytes_read - a.expert_bytes_read) / 1e6 / (double)reps;
        }
    if (rc) fprintf(stderr, "bench-spec: %s\n", lg && ms ? sl_session_errmsg(s) : "out of memory");
    double m0 = 0;
    for (int32_t k = 0; k <= kmax && !rc; k++) {
        double *v = ms + (size_t)k * (size_t)reps;
        perf_sort(v, (int)reps);
        double med = v[reps / 2];
        if (k == 0) m0 = med;
        printf("pass of %d row%s (k = %d drafts): median %9.1f ms  (min %9.1f, max %9.1f)  x%.3f of one row; "
               "read a pass: %.0f MB (routed experts %.0f MB)\n", k + 1, k ? "s" : " ", k, med, v[0], v[reps - 1],
               med / m0, mb[k], emb[k]);
    }
    free(lg); free(ms);
    return rc ? 1 : 0;
}

static int bench_spec_main(int argc, char **argv)
{
    sl_cli_model_opts mo;
    sl_cli_model_opts_init(&mo);
    sl_cli_spec_opts so;
    sl_cli_spec_opts_init(&so);
    long long n = 64, reps = 3, cost_k = -1;
    const char *prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside.";
    for (int i = 1; i < argc; i++) {
        int r = sl_cli_model_opt(&mo, argc, argv, &i, "bench-spec");
        if (!r) r = sl_cli_spec_opt(&so, argc, argv, &i, "bench-spec");
        if (r < 0) return 2;
        if (r > 0) continue;
        if (i + 1 >= argc) goto usage;
        const char *a = argv[i], *v = argv[++i];
        if (!strcmp(a, "-n")) { if (sl_cli_int(v, 1, 4096, &n)) goto usage; }
        else if (!strcmp(a, "--reps")) { if (sl_cli_int(v, 1, 100, &reps)) goto usage; }
        else if (!strcmp(a, "--pass-cost")) { if (sl_cli_int(v, 0, 8, &cost_k)) goto usage; }
        else if (!strcmp(a, "-p")) prompt = v;
        else goto usage;
    }
    /* plain and n-gram always; draft with --draft-model, mtp with --spec mtp */
    const bool mtp = so.kind == SL_SPEC_MTP;
    so.kind = -1;
    int32_t k_max = so.k_max;
    so.k_max = 0;
    if (!mo.path || sl_cli_spec_check(&so, NULL, "bench-spec")) goto usage;
    so.k_max = k_max;
    mo.mp.keep_nextn = mtp;
    sl_model *m, *dm = NULL;
    if (sl_cli_open_model(&mo, "bench-spec", &m)) return 1;
    if (sl_cli_spec_open_draft(&so, m, "bench-spec", &dm)) { sl_model_close(m); return 1; }
    sl_model_info mi;
    sl_model_get_info(m, &mi);
    sl_session *s = NULL, *ds = NULL;
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = 0;
    if (sl_session_create(&s, m) || sl_session_set_sampling(s, &sp) || (dm && sl_session_create(&ds, dm))) {
        fprintf(stderr, "bench-spec: %s\n", sl_last_error());
        return 1;
    }
    if (cost_k >= 0) {
        int rc = pass_cost(m, s, prompt, (int32_t)cost_k, reps, mi.n_vocab);
        sl_session_destroy(ds); sl_session_destroy(s); sl_model_close(dm); sl_model_close(m);
        return rc;
    }
    const bool use[N_METHODS] = { true, true, dm != NULL, mtp };
    int32_t *tok = malloc((size_t)N_METHODS * (size_t)(n + 16) * sizeof *tok);
    double *ms = malloc((size_t)N_METHODS * (size_t)reps * sizeof *ms);
    sl_spec_stats st[N_METHODS];
    memset(st, 0, sizeof st);
    printf("target %s (mode %s, %d threads), draft %s; greedy, %lld tokens, %lld rounds (methods alternate)\n",
           mo.path, sl_stream_mode_name(mi.mode), mi.n_threads, so.draft_path ? so.draft_path : "none", n, reps);
    int ret = 0;
    for (long long r = 0; r < reps && !ret; r++)
        for (int c = 0; c < N_METHODS && !ret; c++) {
            if (!use[c]) continue;
            sl_spec_stats one;
            if (run_once(s, ds, c, so.k_max, prompt, (int32_t)n, tok + (size_t)c * (size_t)(n + 16),
                         &ms[(size_t)c * (size_t)reps + (size_t)r], &one)) ret = 1;
            st[c].n_passes += one.n_passes; st[c].n_drafted += one.n_drafted;
            st[c].n_accepted += one.n_accepted; st[c].n_tokens += one.n_tokens;
            st[c].draft_ms += one.draft_ms; st[c].verify_ms += one.verify_ms;
        }
    double base = 0;
    for (int c = 0; c < N_METHODS && !ret; c++) {
        if (!use[c]) continue;
        double *v = ms + (size_t)c * (size_t)reps;
        perf_sort(v, (int)reps);
        double med = v[reps / 2], tps = (double)n * 1e3 / med;
        if (c == M_PLAIN) base = tps;
        bool same = !memcmp(tok, tok + (size_t)c * (size_t)(n + 16), (size_t)n * sizeof *tok);
        printf("%-6s %8.2f tok/s  x%.2f vs plain", method_name[c], tps, tps / base);
        if (c != M_PLAIN)
            printf("  accepted %5.1f%% of %lld drafts, %.2f tokens/pass, drafting %.1f%% of the time",
                   st[c].n_drafted ? 100.0 * (double)st[c].n_accepted / (double)st[c].n_drafted : 0.0,
                   (long long)st[c].n_drafted,
                   st[c].n_passes ? (double)st[c].n_tokens / (double)st[c].n_passes : 0.0,
                   100.0 * st[c].draft_ms / (st[c].draft_ms + st[c].verify_ms + 1e-9));
        printf("  tokens %s\n", same ? "= plain" : "DIFFER from plain");
        if (!same) ret = 1;
    }
    free(tok); free(ms);
    sl_session_destroy(ds);
    sl_session_destroy(s);
    sl_model_close(dm);
    sl_model_close(m);
    return ret;
usage:
    fprintf(stderr, "usage: sluice bench-spec -m MODEL [--draft-model FILE] [--spec mtp] [--spec-k N] [-p PROMPT] "
                    "[-n N] [--reps R] [--pass-cost K] [model options]\n");
    return 2;
}

SL_CLI_COMMAND(sl_cmd_bench_spec, "bench-spec", "decode tok/s: plain vs n-gram, draft-model, MTP speculation",
               bench_spec_main)
