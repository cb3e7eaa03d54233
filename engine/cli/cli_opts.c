/* Shared model options of the generation commands: loading, threads,
 * context, streamer mode, and the KV cache (llama.cpp's spellings: cache
 * types, --keep, context shift). */
#include "cli_opts.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../gguf/base/sl_status.h"
#include "../../gguf/gguf_type.h"
#include "../../io/sluice_stream.h"
#include "cli.h"
#include "cli_progress.h"

const char sl_cli_model_opts_help[] =
    "  -m, --model FILE       GGUF model (required)\n"
    "  -t, --threads N        compute threads (default: all CPUs)\n"
    "  -c, --ctx-size N       context positions (default: min(training ctx, 4096))\n"
    "  -b, --batch-size N     prompt tokens per forward chunk (default 64)\n"
    "  --mode M               resident | stream | mmap (default: planner decides)\n"
    "  --io B                 uring | pread (default: uring where it works)\n"
    "  --mem-budget SIZE      memory budget, e.g. 2.5G, 800M (default: MemAvailable)\n"
    "  --max-pinned N         stream mode: pin at most N layers\n"
    "  --mlock                lock resident weights in RAM\n"
    "  --expert-policy P      MoE expert cache eviction: lru | lfu | decay (default decay)\n"
    "  --moe-pregate on|off   MoE decode: guess layer l+1's experts with its router on layer l's\n"
    "                         input and read them ahead (default on)\n"
    "  --expert-cache SIZE    MoE: cap the expert cache (default: what the budget leaves)\n"
    "  --no-expert-stream     MoE: stream experts with their layer, not one at a time\n"
    "  --numa local|distribute  weights, slots, KV cache on the compute threads' node, or\n"
    "                         interleaved over all nodes (no-op on one node)\n"
    "  -ctk, --cache-type-k T KV cache type of K: f16 (default), q8_0, q4_0\n"
    "  -ctv, --cache-type-v T KV cache type of V: f16 (default), q8_0, q4_0\n"
    "  --keep N               context shift keeps BOS + N tokens (-1: the whole prompt; default 0)\n"
    "  --no-context-shift     stop at a full context instead of dropping the older half\n";

void sl_cli_model_opts_init(sl_cli_model_opts *o)
{
    o->path = NULL;
    sl_model_params_init(&o->mp);
    o->mp.context_shift = true;   /* the commands go on past n_ctx unless --no-context-shift */
}

int sl_cli_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int sl_cli_float(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* The index of v among names[0..n), -1 if it is none of them. */
static int word(const char *v, const char *const *names, int n)
{
    for (int k = 0; k < n; k++)
        if (!strcmp(v, names[k])) return k;
    return -1;
}

/* A size above 0 ("2.5G", "800M"): 0 ok, -1 bad. */
static int size_opt(const char *v, uint64_t *out)
{
    unsigned long long b;
    if (sl_cli_parse_size(v, &b) || b == 0) return -1;
    *out = b;
    return 0;
}

static int parse_type(const char *v, int32_t *out)
{
    static const int types[] = { SL_GGML_F16, SL_GGML_Q8_0, SL_GGML_Q4_0 };
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
        if (!strcmp(v, sl_gguf_type_name((uint32_t)types[k]))) { *out = types[k]; return 0; }
    return -1;
}

/* The KV cache options; returns as sl_cli_model_opt. */
static int kv_opt(sl_cli_model_opts *o, int argc, char **argv, int *i, const char *cmd)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--no-context-shift")) { o->mp.context_shift = false; return 1; }
    bool tk = !strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k");
    bool tv = !strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v");
    bool keep = !strcmp(a, "--keep");
    if (!tk && !tv && !keep) return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "sluice %s: option %s needs a value\n", cmd, a);
        return -1;
    }
    const char *v = argv[++*i];
    long long n;
    if (tk && !parse_type(v, &o->mp.type_k)) return 1;
    if (tv && !parse_type(v, &o->mp.type_v)) return 1;
    if (keep && !sl_cli_int(v, -1, 1 << 24, &n)) { o->mp.n_keep = (int32_t)n; return 1; }
    fprintf(stderr, "sluice %s: invalid value '%s' for %s%s\n", cmd, v, a,
            keep ? "" : " (f16, q8_0 or q4_0)");
    return -1;
}

int sl_cli_model_opt(sl_cli_model_opts *o, int argc, char **argv, int *i, const char *cmd)
{
    const char *a = argv[*i];
    int kvr = kv_opt(o, argc, argv, i, cmd);
    if (kvr) return kvr;
    bool takes = !strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "-t") ||
                 !strcmp(a, "--threads") || !strcmp(a, "-c") || !strcmp(a, "--ctx-size") ||
                 !strcmp(a, "-b") || !strcmp(a, "--batch-size") || !strcmp(a, "--mode") ||
                 !strcmp(a, "--io") || !strcmp(a, "--mem-budget") || !strcmp(a, "--max-pinned") ||
                 !strcmp(a, "--expert-policy") || !strcmp(a, "--expert-cache") ||
                 !strcmp(a, "--moe-pregate") ||
                 !strcmp(a, "--numa");
    if (!strcmp(a, "--mlock")) { o->mp.mlock = true; return 1; }
    if (!strcmp(a, "--no-expert-stream")) { o->mp.expert_stream = SL_EXPERTS_OFF; return 1; }
    if (!takes) return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "sluice %s: option %s needs a value\n", cmd, a);
        return -1;
    }
    const char *v = argv[++*i];
    static const char *const onoff[] = { "on", "off" };
    static const char *const placements[] = { "local", "distribute" };   /* params.numa 1, 2 */
    long long n;
    int k, bad = 0;
    if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->path = v;
    else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
        if (!(bad = sl_cli_int(v, 1, 256, &n))) o->mp.n_threads = (int)n;
    } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) {
        if (!(bad = sl_cli_int(v, 1, 1 << 24, &n))) o->mp.n_ctx = (int32_t)n;
    } else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) {
        if (!(bad = sl_cli_int(v, 1, 1 << 16, &n))) o->mp.n_batch = (int32_t)n;
    } else if (!strcmp(a, "--max-pinned")) {
        if (!(bad = sl_cli_int(v, 0, 1 << 20, &n))) o->mp.max_pinned = (int32_t)n;
    } else if (!strcmp(a, "--expert-policy")) {
        bad = sl_stream_policy_parse(v, &o->mp.expert_policy);
    } else if (!strcmp(a, "--moe-pregate")) {
        if (!(bad = (k = word(v, onoff, 2)) < 0)) o->mp.moe_pregate = k == 0 ? SL_PREGATE_ON : SL_PREGATE_OFF;
    } else if (!strcmp(a, "--expert-cache")) {
        bad = size_opt(v, &o->mp.expert_cache_bytes);
    } else if (!strcmp(a, "--mode")) {
        bad = sl_stream_mode_parse(v, &o->mp.mode);
    } else if (!strcmp(a, "--io")) {
        bad = sl_stream_io_parse(v, &o->mp.io);
    } else if (!strcmp(a, "--mem-budget")) {
        bad = size_opt(v, &o->mp.mem_budget);
    } else if (!strcmp(a, "--numa")) {
        if (!(bad = (k = word(v, placements, 2)) < 0)) o->mp.numa = k + 1;
    }
    if (!bad) return 1;
    fprintf(stderr, "sluice %s: invalid value '%s' for %s\n", cmd, v, a);
    return -1;
}

int sl_cli_open_model(const sl_cli_model_opts *o, const char *cmd, sl_model **m)
{
    sl_model_params mp = o->mp;   /* a resident load shows its progress */
    sl_cli_progress pg;
    char what[64];
    snprintf(what, sizeof what, "sluice %s: loading", cmd);
    sl_cli_progress_begin(&pg, what, 0, true);
    mp.progress = sl_cli_progress_cb;
    mp.progress_ctx = &pg;
    int rc = sl_model_open(m, o->path, &mp);
    sl_cli_progress_end(&pg);
    if (rc) {
        const char *msg = sl_last_error();
        if (strstr(msg, o->path)) fprintf(stderr, "sluice %s: %s\n", cmd, msg);
        else fprintf(stderr, "sluice %s: %s: %s\n", cmd, o->path, msg);
        return 1;
    }
    const char *notice = sl_stream_notice(sl_model_stream(*m));
    if (notice && *notice) fprintf(stderr, "sluice %s: %s\n", cmd, notice);
    /* a forced mode is obeyed even when it cannot keep to the budget: say so */
    const sl_stream_plan *pl = sl_stream_get_plan(sl_model_stream(*m));
    if (pl && !pl->fits)
        fprintf(stderr, "sluice %s: warning: this mode needs %.2f GiB, above the %.2f GiB memory budget\n",
                cmd, (double)pl->peak_bytes / (1u << 30), (double)pl->budget / (1u << 30));
    return 0;
}

int sl_cli_tokenize_spans(sl_model *m, const char *text, size_t len, bool add_bos, bool parse_special,
                          const size_t *plain, size_t n_plain, int32_t **ids)
{
    *ids = NULL;
    int cap = len + 16 > (size_t)INT32_MAX ? INT32_MAX : (int)(len + 16);
    for (int pass = 0; pass < 2; pass++) {
        int32_t *b = realloc(*ids, (size_t)cap * sizeof *b);
        if (!b) { free(*ids); *ids = NULL; return SL_ENOMEM; }
        *ids = b;
        int n = plain ? sl_model_tokenize_plain(m, text, len, add_bos, plain, n_plain, *ids, cap)
                      : sl_model_tokenize(m, text, len, add_bos, parse_special, *ids, cap);
        if (n != SL_ERANGE || pass || cap == INT32_MAX) {
            if (n < 0) { free(*ids); *ids = NULL; }
            return n;
        }
        /* at most three ids a byte, and the specials */
        cap = len > (size_t)(INT32_MAX - 16) / 3 ? INT32_MAX : (int)(3 * len + 16);
    }
    return SL_ERANGE;
}

int sl_cli_tokenize(sl_model *m, const char *text, size_t len, bool add_bos, bool parse_special, int32_t **ids)
{
    return sl_cli_tokenize_spans(m, text, len, add_bos, parse_special, NULL, 0, ids);
}
