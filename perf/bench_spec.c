/* `sluice bench-spec`: decode tokens/s of plain stepping, n-gram speculation
 * and (with --draft-model) draft-model speculation on the same greedy run,
 * rounds alternating the methods, medians; acceptance and tokens per pass of
 * each; and a check that every method produced the same tokens (greedy). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/cli/cli.h"
#include "../engine/cli/cli_opts.h"
#include "../engine/sluice.h"
#include "../gguf/base/sl_status.h"
#include "../io/sluice_stream.h"
#include "perf.h"

enum { M_PLAIN, M_NGRAM, M_DRAFT, N_METHODS };
static const char *const method_name[N_METHODS] = { "plain", "ngram", "draft" };

/* One greedy generation of n tokens after the prompt; *ms: decode wall time. */
static int run_once(sl_session *s, sl_session *ds, int method, int32_t k_max, const char *prompt, int32_t n,
                    int32_t *out, double *ms, sl_spec_stats *st)
{
    sl_session_reset(s);
    int rc = sl_session_feed_text(s, prompt, false);
    if (rc) { fprintf(stderr, "bench-spec: %s\n", sl_session_errmsg(s)); return rc; }
    sl_spec *sp = NULL;
    if (method != M_PLAIN) {
        sl_spec_params p;
        sl_spec_params_init(&p);
        p.kind = method == M_NGRAM ? SL_SPEC_NGRAM : SL_SPEC_DRAFT;
        p.k_max = k_max;
        p.draft = ds;
        if (ds) sl_session_reset(ds);   /* its prefill of the prompt counts in the run */
        if ((rc = sl_spec_create(&sp, s, &p))) { fprintf(stderr, "bench-spec: %s\n", sl_last_error()); return rc; }
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

static int bench_spec_main(int argc, char **argv)
{
    sl_cli_model_opts mo;
    sl_cli_model_opts_init(&mo);
    sl_cli_spec_opts so;
    sl_cli_spec_opts_init(&so);
    long long n = 64, reps = 3;
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
        else if (!strcmp(a, "-p")) prompt = v;
        else goto usage;
    }
    so.kind = -1;   /* plain and n-gram always; draft with --draft-model */
    int32_t k_max = so.k_max;
    so.k_max = 0;
    if (!mo.path || sl_cli_spec_check(&so, "bench-spec")) goto usage;
    so.k_max = k_max;
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
    int nm = dm ? N_METHODS : M_DRAFT;
    int32_t *tok = malloc((size_t)N_METHODS * (size_t)(n + 16) * sizeof *tok);
    double *ms = malloc((size_t)N_METHODS * (size_t)reps * sizeof *ms);
    sl_spec_stats st[N_METHODS];
    memset(st, 0, sizeof st);
    printf("target %s (mode %s, %d threads), draft %s; greedy, %lld tokens, %lld rounds (methods alternate)\n",
           mo.path, sl_stream_mode_name(mi.mode), mi.n_threads, so.draft_path ? so.draft_path : "none", n, reps);
    int ret = 0;
    for (long long r = 0; r < reps && !ret; r++)
        for (int c = 0; c < nm && !ret; c++) {
            sl_spec_stats one;
            if (run_once(s, ds, c, so.k_max, prompt, (int32_t)n, tok + (size_t)c * (size_t)(n + 16),
                         &ms[(size_t)c * (size_t)reps + (size_t)r], &one)) ret = 1;
            st[c].n_passes += one.n_passes; st[c].n_drafted += one.n_drafted;
            st[c].n_accepted += one.n_accepted; st[c].n_tokens += one.n_tokens;
            st[c].draft_ms += one.draft_ms; st[c].verify_ms += one.verify_ms;
        }
    double base = 0;
    for (int c = 0; c < nm && !ret; c++) {
        double *v = ms + (size_t)c * (size_t)reps;
        perf_sort(v, (int)reps);
        double med = v[reps / 2], tps = (double)n * 1e3 / med;
        if (c == M_PLAIN) base = tps;
        bool same = !memcmp(tok, tok + (size_t)c * (size_t)(n + 16), (size_t)n * sizeof *tok);
        printf("%-6s %8.2f tok/s  x%.2f vs plain", method_name[c], tps, tps / base);
        if (c != M_PLAIN)
            printf("  accepted %5.1f%% of %lld drafts, %.2f tokens/pass, draft model %.1f%% of the time",
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
    fprintf(stderr, "usage: sluice bench-spec -m MODEL [--draft-model FILE] [--spec-k N] [-p PROMPT] [-n N] "
                    "[--reps R] [model options]\n");
    return 2;
}

SL_CLI_COMMAND(sl_cmd_bench_spec, "bench-spec", "decode tok/s: plain vs n-gram vs draft-model speculation",
               bench_spec_main)
