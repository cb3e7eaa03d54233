/* `sluice eval -m MODEL --tokens 1,2,3 [--logits-out FILE] [--greedy N]`:
 * the fidelity tool. Feeds the ids in one prefill, writes the logits of every
 * position as little-endian float32 [n_tokens][n_vocab], then greedy-decodes N
 * tokens one at a time (argmax, ties -> lowest id, EOS not special) and prints
 * them on one line. Keep this interface stable: tests and scripts use it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../gguf/base/sl_file.h"
#include "../../gguf/base/sl_status.h"
#include "cli.h"
#include "cli_opts.h"
#include "../sampler.h"
#include "../sluice.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: sluice eval -m MODEL --tokens ID,ID,... [--logits-out FILE] [--greedy N] [options]\n"
               "  --tokens LIST          comma-separated token ids (BOS is not added)\n"
               "  --logits-out FILE      write logits of every position, LE float32 [n][n_vocab]\n"
               "  --greedy N             greedy-decode N tokens after the prompt, print their ids\n"
               "%s", sl_cli_model_opts_help);
}

static int parse_ids(const char *s, int32_t **out, int *n_out)
{
    int cap = 16, n = 0;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids) return -1;
    const char *p = s;
    while (*p) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || v > INT32_MAX || (*end && *end != ',')) { free(ids); return -1; }
        if (n == cap) {
            cap *= 2;
            int32_t *t = realloc(ids, (size_t)cap * sizeof *ids);
            if (!t) { free(ids); return -1; }
            ids = t;
        }
        ids[n++] = (int32_t)v;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p) { free(ids); return -1; }   /* trailing comma */
    }
    if (n == 0) { free(ids); return -1; }
    *out = ids;
    *n_out = n;
    return 0;
}

static int eval_main(int argc, char **argv)
{
    sl_cli_model_opts mo;
    sl_cli_model_opts_init(&mo);
    const char *tokens = NULL, *logits_out = NULL;
    long long n_greedy = 0;
    for (int i = 1; i < argc; i++) {
        int r = sl_cli_model_opt(&mo, argc, argv, &i, "eval");
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (i + 1 >= argc && (!strcmp(a, "--tokens") || !strcmp(a, "--logits-out") || !strcmp(a, "--greedy"))) {
            fprintf(stderr, "sluice eval: option %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--tokens")) tokens = argv[++i];
        else if (!strcmp(a, "--logits-out")) logits_out = argv[++i];
        else if (!strcmp(a, "--greedy")) {
            if (sl_cli_int(argv[++i], 0, 1 << 24, &n_greedy)) {
                fprintf(stderr, "sluice eval: invalid value '%s' for --greedy\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "sluice eval: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!mo.path || !tokens) {
        fprintf(stderr, "sluice eval: %s is required\n", !mo.path ? "-m MODEL" : "--tokens");
        usage(stderr);
        return 2;
    }
    int32_t *ids;
    int n;
    if (parse_ids(tokens, &ids, &n)) {
        fprintf(stderr, "sluice eval: --tokens must be comma-separated non-negative ids, got '%s'\n", tokens);
        return 2;
    }
    if (mo.mp.n_ctx == 0) {   /* room for the prompt and the continuation */
        long long need = (long long)n + n_greedy;
        mo.mp.n_ctx = (int32_t)(need < 512 ? 512 : need > (1 << 24) ? (1 << 24) : need);
    }
    sl_model *m = NULL;
    sl_session *s = NULL;
    float *logits = NULL;
    int ret = 1;
    if (sl_cli_open_model(&mo, "eval", &m)) goto out;
    if (sl_session_create(&s, m)) {
        fprintf(stderr, "sluice eval: %s\n", sl_last_error());
        goto out;
    }
    sl_model_info info;
    sl_model_get_info(m, &info);
    logits = malloc((size_t)n * (size_t)info.n_vocab * sizeof(float));
    if (!logits) { fprintf(stderr, "sluice eval: out of memory for %d x %d logits\n", n, info.n_vocab); goto out; }
    if (sl_session_eval(s, ids, n, logits)) {
        fprintf(stderr, "sluice eval: %s\n", sl_session_errmsg(s));
        goto out;
    }
    if (logits_out) {
        sl_file_out fo;
        /* host is little-endian on every supported target (x86-64, aarch64) */
        if (sl_file_out_open(&fo, logits_out, "logits") ||
            sl_file_out_write(&fo, logits, sizeof(float) * (size_t)info.n_vocab * (size_t)n) ||
            sl_file_out_commit(&fo)) {
            sl_file_out_abort(&fo);
            fprintf(stderr, "sluice eval: %s\n", sl_last_error());
            goto out;
        }
    }
    for (long long k = 0; k < n_greedy; k++) {
        int32_t t = sl_sampler_greedy(sl_session_logits(s), info.n_vocab);
        printf(k ? " %d" : "%d", t);
        if (k + 1 < n_greedy && sl_session_feed_tokens(s, &t, 1)) {
            putchar('\n');
            fprintf(stderr, "sluice eval: step %lld: %s\n", k + 1, sl_session_errmsg(s));
            goto out;
        }
    }
    putchar('\n');
    ret = fflush(stdout) ? 1 : 0;
out:
    free(logits);
    free(ids);
    sl_session_destroy(s);
    sl_model_close(m);
    return ret;
}

SL_CLI_COMMAND(cmd_eval, "eval", "feed token ids, dump logits, greedy ids (fidelity tool)", eval_main)
