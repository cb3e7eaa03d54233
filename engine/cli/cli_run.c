/* `sluice run` (generate from a prompt) and `sluice chat` (interactive, chat
 * template from the model). Text goes to stdout as it is generated; timings
 * and statistics to stderr. Exit codes: 0 ok, 1 model/runtime error, 2 bad flags. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../gguf/gguf_type.h"
#include "../../gguf/base/sl_status.h"
#include "../../io/sluice_stream.h"
#include "../chat.h"
#include "cli.h"
#include "cli_progress.h"
#include "cli_opts.h"
#include "ring/ring_cli.h"
#include "../sluice.h"

typedef struct gen_opts {
    sl_cli_model_opts mo;
    sl_sampling sp;
    bool seed_set;
    long long n_predict;
    const char *prompt;
    const char *tmpl_name;
    const char *system;
    bool stats, json, no_display_prompt, ignore_eos, profile;
    /* chat: Harmony's analysis channel on stderr; control tokens parsed in
     * message text too (the old, unsafe behaviour); the reasoning effort */
    bool show_reasoning, special_in_content;
    const char *reasoning_effort;
    /* prompt cache (engine/session_state.c) */
    const char *prompt_cache;
    bool prompt_cache_ro;
    /* memory-pressure ladder (engine/pressure.c): on when pressure.floor_bytes > 0 */
    sl_pressure_params pressure;
    sl_cli_spec_opts spec;  /* --spec, --draft-model, --spec-k */
} gen_opts;

static const char sampling_help[] =
    "  -n, --n-predict N      tokens to generate (-1 = until end of text or context full)\n"
    "  --temp T               temperature (0.8; 0 = greedy)\n"
    "  --top-k N              top-k (40; 0 = off)\n"
    "  --top-p P              top-p (0.95; 1 = off)\n"
    "  --min-p P              min-p (0.05; 0 = off)\n"
    "  --repeat-penalty R     repetition penalty (1.0 = off)\n"
    "  --repeat-last-n N      tokens the penalty looks back (64; -1 = whole context)\n"
    "  --seed S               sampling seed (default: random, printed)\n"
    "  --ignore-eos           do not stop at end-of-generation tokens\n"
    "  --prompt-cache FILE    restore the longest common prefix of the prompt from FILE\n"
    "                         (if it matches this model and KV type) and save the state there\n"
    "  --prompt-cache-ro      use the cache file but do not update it\n"
    "  --pressure-floor SIZE  adapt to memory pressure: below SIZE available, unpin layers,\n"
    "                         drop slots, shrink the KV window; climb back when it returns\n"
    "  --pressure-hyst SIZE   climb back only above floor + SIZE (default 512M)\n"
    "  --pressure-window N    KV positions the last rung keeps past the --keep sinks (256);\n"
    "                         the older ones are dropped, their pages given back\n"
    "  --pressure-meminfo F   read MemAvailable from F instead of /proc/meminfo (simulations)\n"
    SL_CLI_SPEC_OPTS_HELP
    "  --stats                per-token compute / I/O stall / bytes read summary\n"
    "  --json                 the summary as one JSON object on stderr\n"
    "  --profile              where a decode token's time goes: ms, weight bytes and GB/s per\n"
    "                         op class, per-thread work vs waiting (with --json: as JSON)\n";

static bool needs_value(const char *a)
{
    static const char *v[] = { "-p", "--prompt", "-n", "--n-predict", "--temp", "--top-k", "--top-p",
                               "--min-p", "--repeat-penalty", "--repeat-last-n", "--seed",
                               "--chat-template", "-sys", "--system-prompt", "--prompt-cache", "--pressure-floor", "--pressure-hyst",
                               "--pressure-window", "--pressure-meminfo", "--reasoning-effort", NULL };
    for (int i = 0; v[i]; i++)
        if (!strcmp(a, v[i])) return true;
    return false;
}

/* Parses the common generation flags; returns 0, or 2 for bad flags, or -1 for --help. */
/* The switch option a names (it takes no value), NULL if none. */
static bool *flag_of(gen_opts *o, const char *a)
{
    static const char *const names[] = { "--stats", "--json", "--profile", "--no-display-prompt", "--ignore-eos",
                                         "--prompt-cache-ro", "--show-reasoning", "--special-in-content" };
    bool *const dst[] = { &o->stats, &o->json, &o->profile, &o->no_display_prompt, &o->ignore_eos,
                          &o->prompt_cache_ro, &o->show_reasoning, &o->special_in_content };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (!strcmp(a, names[k])) return dst[k];
    return NULL;
}

static int parse_gen(gen_opts *o, int argc, char **argv, const char *cmd, void (*usage)(FILE *))
{
    sl_cli_model_opts_init(&o->mo);
    sl_sampling_init(&o->sp);
    sl_pressure_params_init(&o->pressure);
    o->pressure.floor_bytes = 0;
    o->n_predict = -1;
    sl_cli_spec_opts_init(&o->spec);
    for (int i = 1; i < argc; i++) {
        int r = sl_cli_model_opt(&o->mo, argc, argv, &i, cmd);
        if (!r) r = sl_cli_spec_opt(&o->spec, argc, argv, &i, cmd);
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return -1; }
        bool *flag = flag_of(o, a);
        if (flag) {
            *flag = true;
            if (flag == &o->json) sl_cli_progress_set_json(true);   /* progress as JSON events */
            continue;
        }
        if (!needs_value(a)) {
            fprintf(stderr, "sluice %s: unknown option '%s'\n", cmd, a);
            usage(stderr);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "sluice %s: option %s needs a value\n", cmd, a);
            return 2;
        }
        const char *v = argv[++i];
        long long n = 0;
        double d = 0;
        bool bad = false;
        if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) o->prompt = v;
        else if (!strcmp(a, "--chat-template")) o->tmpl_name = v;
        else if (!strcmp(a, "-sys") || !strcmp(a, "--system-prompt")) o->system = v;
        else if (!strcmp(a, "--prompt-cache")) o->prompt_cache = v;
        else if (!strcmp(a, "--reasoning-effort")) {
            o->reasoning_effort = v;
            bad = strcmp(v, "low") && strcmp(v, "medium") && strcmp(v, "high");
        }
        else if (!strcmp(a, "--pressure-floor") || !strcmp(a, "--pressure-hyst")) {
            unsigned long long b = 0;
            bad = sl_cli_parse_size(v, &b) || b == 0;
            if (a[11] == 'f') o->pressure.floor_bytes = b;
            else o->pressure.hysteresis_bytes = b;
        } else if (!strcmp(a, "--pressure-meminfo")) {
            o->pressure.meminfo_path = v;
            o->pressure.psi_avg10 = 0;   /* a simulation: the real PSI would disagree */
        } else if (!strcmp(a, "--pressure-window")) {
            bad = sl_cli_int(v, 1, 1 << 30, &n);
            o->pressure.emergency_window = (int32_t)n;
        }
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) {
            bad = sl_cli_int(v, -1, 1 << 30, &n);
            o->n_predict = n;
        } else if (!strcmp(a, "--top-k")) {
            bad = sl_cli_int(v, 0, 1 << 30, &n);
            o->sp.top_k = (int32_t)n;
        } else if (!strcmp(a, "--repeat-last-n")) {
            bad = sl_cli_int(v, -1, 1 << 30, &n);
            o->sp.repeat_last_n = (int32_t)n;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            unsigned long long s = strtoull(v, &end, 10);
            bad = end == v || *end || v[0] == '-';
            o->sp.seed = s;
            o->seed_set = true;
        } else {
            bad = sl_cli_float(v, &d);
            if (!strcmp(a, "--temp")) { bad = bad || d < 0; o->sp.temp = (float)d; }
            else if (!strcmp(a, "--top-p")) { bad = bad || d < 0 || d > 1; o->sp.top_p = (float)d; }
            else if (!strcmp(a, "--min-p")) { bad = bad || d < 0 || d > 1; o->sp.min_p = (float)d; }
            else if (!strcmp(a, "--repeat-penalty")) { bad = bad || d <= 0; o->sp.repeat_penalty = (float)d; }
        }
        if (bad) {
            fprintf(stderr, "sluice %s: invalid value '%s' for %s\n", cmd, v, a);
            return 2;
        }
    }
    if (!o->mo.path) {
        fprintf(stderr, "sluice %s: -m MODEL is required\n", cmd);
        usage(stderr);
        return 2;
    }
    if (sl_cli_spec_check(&o->spec, &o->mo.mp, cmd)) return 2;
    if (!o->seed_set) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        o->sp.seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
    }
    return 0;
}

/* The streamer's counters (NULL-safe: resident and mmap models have none). */
static void stream_stats(sl_model *m, sl_stream_stats *out)
{
    memset(out, 0, sizeof *out);
    sl_stream *st = sl_model_stream(m);
    if (st) (void)sl_stream_get_stats(st, out);
}

static void print_summary(const gen_opts *o, sl_model *m, const sl_stats *all, const sl_stats *pre,
                          const sl_stream_stats *spre)   /* NULL: no decode-only window */
{
    sl_model_info mi;
    sl_model_get_info(m, &mi);
    double ptps = all->prompt_ms > 0 ? (double)all->n_prompt * 1e3 / all->prompt_ms : 0;
    int64_t nd = all->n_decode - pre->n_decode;
    double dms = all->decode_ms - pre->decode_ms;
    double dtps = dms > 0 ? (double)nd * 1e3 / dms : 0;
    double stall = all->stall_ms - pre->stall_ms, comp = all->compute_ms - pre->compute_ms;
    uint64_t bytes = all->bytes_read - pre->bytes_read;
    double per = nd > 0 ? (double)nd : 1;
    double mbps = dms > 0 ? (double)bytes / 1e6 / (dms / 1e3) : 0;
    fprintf(stderr, "\nprompt: %lld tokens in %.1f ms (%.2f tok/s); decode: %lld tokens in %.1f ms "
                    "(%.2f tok/s); time to first token: %.1f ms\n",
            (long long)all->n_prompt, all->prompt_ms, ptps, (long long)nd, dms, dtps, all->ttft_ms);
    if (all->n_restored)
        fprintf(stderr, "prompt cache: %lld positions restored in %.1f ms\n", (long long)all->n_restored,
                all->restore_ms);
    if (o->stats)
        fprintf(stderr, "stats: mode %s, io %s, %d threads, %s kernels; per decode token: compute %.2f ms, "
                        "I/O stall %.2f ms, read %.2f MB (%.1f MB/s); prompt read %.2f MB\n",
                sl_stream_mode_name(mi.mode), sl_stream_io_name(mi.io), mi.n_threads, mi.isa, comp / per, stall / per,
                (double)bytes / 1e6 / per, mbps, (double)pre->bytes_read / 1e6);
    sl_stream_stats snow;
    stream_stats(m, &snow);
    double busy = spre ? snow.io_busy_ms - spre->io_busy_ms : 0;
    uint64_t sbytes = spre ? snow.bytes_read - spre->bytes_read : 0;
    /* how much of decode had reads in flight, and their rate then: a disk
     * idle between reads is time a deeper read-ahead could win back */
    if (o->stats && dms > 0 && busy > 0)
        fprintf(stderr, "stats: disk busy %.1f%% of decode (reads in flight), %.1f MB/s while busy\n",
                100.0 * busy / dms, (double)sbytes / 1e6 / (busy / 1e3));
    uint64_t xh = all->expert_hits - pre->expert_hits, xm = all->expert_misses - pre->expert_misses;
    uint64_t xb = all->expert_bytes_read - pre->expert_bytes_read;
    double xs = all->expert_stall_ms - pre->expert_stall_ms;
    double xrate = xh + xm ? (double)xh / (double)(xh + xm) : 0;
    if (o->stats && all->expert_hits + all->expert_misses) {
        fprintf(stderr, "experts: decode hit rate %.3f (%llu hits, %llu misses), expert read %.2f MB/token, "
                        "expert stall %.2f ms/token; hit rate by layer (since load):",
                xrate, (unsigned long long)xh, (unsigned long long)xm, (double)xb / 1e6 / per, xs / per);
        sl_stream *st = sl_model_stream(m);
        for (int32_t l = 0; l < mi.n_layer; l++) {
            uint64_t h, mi2;
            if (sl_stream_expert_layer_stats(st, l, &h, &mi2) == 0)
                fprintf(stderr, " %.2f", h + mi2 ? (double)h / (double)(h + mi2) : 0.0);
        }
        fprintf(stderr, "\n");
        if (all->pregate_chosen)
            fprintf(stderr, "experts: pre-gating guessed %.3f of the chosen experts; %llu read ahead, "
                            "%llu of them used\n",
                    (double)all->pregate_guessed / (double)all->pregate_chosen,
                    (unsigned long long)all->expert_prefetched, (unsigned long long)all->expert_prefetch_used);
    }
    if (o->stats && all->ple_bytes_read)   /* rows the row cache did not hold */
        fprintf(stderr, "stats: per-layer embeddings %.0f bytes read per decode token, %.0f per prompt token\n",
                (double)(all->ple_bytes_read - pre->ple_bytes_read) / per,
                all->n_prompt ? (double)pre->ple_bytes_read / (double)all->n_prompt : 0.0);
    if (o->stats)   /* the KV cache: its types, cost per position, context shifts */
        fprintf(stderr, "stats: kv cache %s/%s, %llu bytes per position, %.2f MiB for %d positions; "
                        "context shifts %lld (%lld positions dropped); pressure window %d positions, "
                        "%.2f MiB released\n",
                sl_gguf_type_name((uint32_t)mi.type_k), sl_gguf_type_name((uint32_t)mi.type_v),
                (unsigned long long)mi.kv_pos_bytes, (double)mi.kv_bytes / (1 << 20), mi.n_ctx,
                (long long)all->n_ctx_shift,
                (long long)all->n_ctx_dropped, all->pressure_kv_window,
                (double)all->pressure_kv_released / (1 << 20));
    if (o->json)
        fprintf(stderr, "{\"mode\":\"%s\",\"io\":\"%s\",\"threads\":%d,\"isa\":\"%s\",\"n_prompt\":%lld,"
                        "\"prompt_ms\":%.3f,\"prompt_tok_s\":%.3f,\"n_decode\":%lld,\"decode_ms\":%.3f,"
                        "\"decode_tok_s\":%.3f,\"ttft_ms\":%.3f,\"compute_ms_per_token\":%.3f,"
                        "\"stall_ms_per_token\":%.3f,\"bytes_read_per_token\":%.0f,\"decode_mb_s\":%.3f,"
                        "\"prompt_bytes_read\":%llu,\"expert_hit_rate\":%.4f,\"expert_hits\":%llu,"
                        "\"expert_misses\":%llu,\"expert_bytes_per_token\":%.0f,\"expert_stall_ms_per_token\":%.3f,"
                        "\"n_restored\":%lld,\"restore_ms\":%.3f,"
                        "\"pressure_down\":%lld,\"pressure_up\":%lld,\"pressure_depth\":%d,"
                        "\"pressure_kv_window\":%d,\"pressure_kv_released\":%llu,\"n_ctx_shift\":%lld,"
                        "\"pregate_accuracy\":%.4f,\"expert_prefetched\":%llu,\"expert_prefetch_used\":%llu}\n",
                sl_stream_mode_name(mi.mode), sl_stream_io_name(mi.io), mi.n_threads, mi.isa, (long long)all->n_prompt,
                all->prompt_ms, ptps, (long long)nd, dms, dtps, all->ttft_ms, comp / per, stall / per,
                (double)bytes / per, mbps, (unsigned long long)pre->bytes_read, xrate, (unsigned long long)xh,
                (unsigned long long)xm, (double)xb / per, xs / per, (long long)all->n_restored,
                all->restore_ms, (long long)all->n_pressure_down, (long long)all->n_pressure_up,
                all->pressure_depth, all->pressure_kv_window, (unsigned long long)all->pressure_kv_released,
                (long long)all->n_ctx_shift,
                all->pregate_chosen ? (double)all->pregate_guessed / (double)all->pregate_chosen : 0.0,
                (unsigned long long)all->expert_prefetched, (unsigned long long)all->expert_prefetch_used);
}

/* How a generation ended (when it did not fail). */
enum gen_end { GEN_LIMIT, GEN_EOG, GEN_CTX_FULL };

/* Where generated text goes: stdout and capture (the reply for the chat
 * history); with a Harmony parser only the final channel does, the analysis
 * channel goes to stderr with --show-reasoning. */
typedef struct gen_sink {
    FILE *capture;
    sl_harmony *h;
    bool show_reasoning;
} gen_sink;

static void emit(const gen_sink *g, const sl_model *m, int32_t tok, const char *piece, int len)
{
    if (g->h) {
        char text[256];
        /* a control token prints as nothing: push its text as a marker */
        if (len == 0 && sl_model_token_piece(m, tok, text, sizeof text) == 0) {
            int tl = sl_model_token_text(m, tok, text, sizeof text);
            if (tl > 0) sl_harmony_push(g->h, text, (size_t)tl, true);
            return;
        }
        int ch = len > 0 ? sl_harmony_push(g->h, piece, (size_t)len, false) : SL_HARMONY_NONE;
        if (ch == SL_HARMONY_ANALYSIS && g->show_reasoning) {
            fwrite(piece, 1, (size_t)len, stderr);
            fflush(stderr);
        }
        if (ch != SL_HARMONY_FINAL) return;
    }
    if (len <= 0) return;
    fwrite(piece, 1, (size_t)len, stdout);
    fflush(stdout);
    if (g->capture) fwrite(piece, 1, (size_t)len, g->capture);
}

/* The one generation loop of run and chat: samples until -n tokens, an
 * end-of-generation token or a full context, printing each piece as it comes
 * (through the sink). feed_eog: the end token belongs to the conversation
 * (chat) and is accepted into the context. Returns 0 with *end, or a
 * negative SL_E* (message in sl_session_errmsg). */
static int generate(const gen_opts *o, sl_model *m, sl_session *s, const gen_sink *sink, bool feed_eog,
                    enum gen_end *end, sl_spec *spec)
{
    char piece[2048];
    *end = GEN_LIMIT;
    for (long long i = 0; o->n_predict < 0 || i < o->n_predict; i++) {
        if (!o->mo.mp.context_shift && sl_session_n_past(s) >= sl_session_n_ctx(s)) {
            fprintf(stderr, "\n[context full: %d tokens]\n", sl_session_n_ctx(s));
            *end = GEN_CTX_FULL;
            return 0;
        }
        /* several tokens per pass, all fed; a pass ends at an end token, which
         * is then in the context (as chat wants; run stops anyway). A full
         * context takes the plain path below, which shifts it. */
        if (spec && sl_session_n_past(s) < sl_session_n_ctx(s)) {
            int32_t toks[16], got = 0;
            long long left = o->n_predict < 0 ? 16 : o->n_predict - i;
            int rc = sl_spec_step(spec, toks, left < 16 ? (int32_t)left : 16, &got);
            if (rc) return rc;
            for (int32_t j = 0; j < got; j++) {
                if (!o->ignore_eos && sl_model_token_is_eog(m, toks[j])) { *end = GEN_EOG; return 0; }
                int len = sl_session_detok(s, toks[j], piece, sizeof piece);
                emit(sink, m, toks[j], piece, len < 0 ? 0 : len);
            }
            i += got - 1;
            continue;
        }
        int32_t tok;
        /* a rejected draft may have left the next token drawn already */
        int rc = spec ? sl_spec_sample(spec, &tok) : sl_session_sample(s, &tok);
        if (rc) return rc;
        if (!o->ignore_eos && sl_model_token_is_eog(m, tok)) {
            *end = GEN_EOG;
            if (feed_eog && (o->mo.mp.context_shift || sl_session_n_past(s) < sl_session_n_ctx(s)))
                return sl_session_accept(s, tok);
            return 0;
        }
        int len = sl_session_detok(s, tok, piece, sizeof piece);
        emit(sink, m, tok, piece, len < 0 ? 0 : len);
        if ((rc = sl_session_accept(s, tok))) return rc;
    }
    return 0;
}

/* The message of a failed generation. */
static const char *gen_errmsg(sl_session *s, sl_spec *spec)
{
    return spec && *sl_spec_errmsg(spec) ? sl_spec_errmsg(spec) : sl_session_errmsg(s);
}

/* Each ladder step on stderr: a line with --stats, a JSON object with --json. */
static void on_pressure(void *ctx, const sl_pressure_event *e)
{
    const gen_opts *o = ctx;
    static const char *rung[] = { "?", "pins", "slots", "kv_window", "experts" };
    const char *r = e->rung >= 1 && e->rung <= 4 ? rung[e->rung] : rung[0];
    if (o->json)
        fprintf(stderr, "{\"pressure_step\":{\"t_ms\":%.1f,\"dir\":%d,\"rung\":\"%s\",\"from\":%d,\"to\":%d,"
                        "\"avail_bytes\":%lld,\"freed_bytes\":%lld,\"status\":%d}}\n",
                e->t_ms, e->dir, r, e->from, e->to, (long long)e->avail_bytes, (long long)e->freed_bytes, e->status);
    else if (o->stats)
        fprintf(stderr, "\n[pressure %s at %.1f s: %s %d -> %d, available %.2f GiB, freed %.0f MiB%s%s]\n",
                e->dir < 0 ? "down" : "up",
                e->t_ms / 1e3, r, e->from, e->to, (double)e->avail_bytes / (1 << 30),
                (double)e->freed_bytes / (1 << 20), e->status ? ": " : "", e->status ? sl_strerror(e->status) : "");
}

/* Turns the ladder on when --pressure-floor was given. */
static int start_pressure(gen_opts *o, sl_session *s, const char *cmd)
{
    if (!o->pressure.floor_bytes) return 0;
    o->pressure.on_step = on_pressure;
    o->pressure.step_ctx = o;
    int rc = sl_session_set_pressure(s, &o->pressure);
    if (rc) fprintf(stderr, "%s: %s\n", cmd, sl_session_errmsg(s));
    return rc;
}

/* --prompt-cache: restore what the file shares with ids[0..n), then feed the
 * rest. A missing or rejected file only costs the recomputation. */
static int feed_cached(const gen_opts *o, sl_session *s, const int32_t *ids, int n, const char *cmd)
{
    int32_t reused = 0;
    int rc = sl_session_load_prefix(s, o->prompt_cache, ids, n, &reused);
    if (rc == SL_ENOENT) fprintf(stderr, "%s: prompt cache %s does not exist yet\n", cmd, o->prompt_cache);
    else if (rc) fprintf(stderr, "%s: %s; recomputing the prompt\n", cmd, sl_session_errmsg(s));
    else fprintf(stderr, "%s: prompt cache: reused %d of %d prompt tokens\n", cmd, reused, n);
    return sl_session_feed_tokens(s, ids + reused, n - reused);
}

static void save_cache(const gen_opts *o, sl_session *s, const char *cmd)
{
    if (!o->prompt_cache || o->prompt_cache_ro || sl_session_n_past(s) < 1) return;
    if (sl_session_save(s, o->prompt_cache))
        fprintf(stderr, "%s: cannot save the prompt cache: %s\n", cmd, sl_session_errmsg(s));
}

/* What run and chat hold at their end: the speculation, the draft model's
 * session, the session, the draft model, the model (any may be NULL). */
static void close_gen(sl_spec *spec, sl_session *ds, sl_session *s, sl_model *dm, sl_model *m)
{
    sl_spec_destroy(spec);
    sl_session_destroy(ds);
    sl_session_destroy(s);
    sl_model_close(dm);
    sl_model_close(m);
}

static void run_usage(FILE *f)
{
    fprintf(f, "usage: sluice run -m MODEL -p PROMPT [options]\n"
               "  (mpirun -np N sluice run --ring SPEC ...: layers over N ranks; --ring --help)\n"
               "  -p, --prompt TEXT      prompt (BOS added as the model asks)\n"
               "  --no-display-prompt    do not echo the prompt\n%s%s",
            sampling_help, sl_cli_model_opts_help);
}

static int run_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)   /* --ring: the layers over MPI ranks (engine/cli/ring/) */
        if (!strcmp(argv[i], "--ring")) {
#ifdef SL_HAVE_RING_RUN
            return sl_ring_run_main(argc, argv);
#else
            fprintf(stderr, "sluice run: --ring: this sluice was built without Open MPI and GLPK "
                            "(apt-get install libopenmpi-dev openmpi-bin libglpk-dev; make)\n");
            return 2;
#endif
        }
    gen_opts o;
    memset(&o, 0, sizeof o);
    int r = parse_gen(&o, argc, argv, "run", run_usage);
    if (r) return r < 0 ? 0 : r;
    if (!o.prompt) {
        fprintf(stderr, "sluice run: -p PROMPT is required\n");
        return 2;
    }
    /* the seed matters (and is worth printing) only when sampling */
    if (!o.seed_set && o.sp.temp > 0) fprintf(stderr, "seed: %llu\n", (unsigned long long)o.sp.seed);
    sl_model *m = NULL, *dm = NULL;
    sl_session *s = NULL, *ds = NULL;
    sl_spec *spec = NULL;
    int ret = 1;
    if (sl_cli_open_model(&o.mo, "run", &m)) return 1;
    if (sl_cli_spec_open_draft(&o.spec, m, "run", &dm)) goto out;
    if (sl_session_create(&s, m) || sl_session_set_sampling(s, &o.sp)) {
        fprintf(stderr, "sluice run: %s\n", sl_last_error());
        goto out;
    }
    if (start_pressure(&o, s, "sluice run")) goto out;
    /* before the prompt: an MTP block follows every pass from the first */
    if (sl_cli_spec_create(&o.spec, s, dm, &ds, &spec, "run")) goto out;
    if (o.prompt_cache) {
        int32_t *ids;
        int n = sl_cli_tokenize(m, o.prompt, strlen(o.prompt), true, false, &ids);
        int rc = n < 0 ? n : feed_cached(&o, s, ids, n, "sluice run");
        free(ids);
        if (rc) {
            fprintf(stderr, "sluice run: %s\n", n < 0 ? sl_model_errmsg(m) : sl_session_errmsg(s));
            goto out;
        }
    } else if (sl_session_feed_text(s, o.prompt, false)) {
        fprintf(stderr, "sluice run: %s\n", sl_session_errmsg(s));
        goto out;
    }
    if (!o.no_display_prompt) { fputs(o.prompt, stdout); fflush(stdout); }
    sl_stats pre, all;
    sl_stream_stats spre;
    sl_session_get_stats(s, &pre);
    stream_stats(m, &spre);
    if (o.profile && sl_session_set_profile(s, true)) {
        fprintf(stderr, "sluice run: %s\n", sl_session_errmsg(s));
        goto out;
    }
    enum gen_end end;
    gen_sink sink = { 0 };
    if (generate(&o, m, s, &sink, false, &end, spec))
        fprintf(stderr, "\nsluice: %s\n", gen_errmsg(s, spec));
    else ret = 0;
    putchar('\n');
    fflush(stdout);
    sl_session_get_stats(s, &all);
    print_summary(&o, m, &all, &pre, &spre);
    sl_profile prof;
    if (o.profile && sl_session_get_profile(s, &prof) == 0) sl_cli_print_profile(stderr, &prof, o.json);
    save_cache(&o, s, "sluice run");
    if (o.stats || o.json) sl_cli_spec_print_stats(spec, o.json);
out:
    close_gen(spec, ds, s, dm, m);
    return ret;
}

/* ---- chat ----------------------------------------------------------------- */

static void chat_usage(FILE *f)
{
    fprintf(f, "usage: sluice chat -m MODEL [--chat-template NAME] [-sys TEXT] [options]\n"
               "  reads one user message per line from stdin (works with piped input)\n"
               "  --chat-template NAME   llama3 | chatml | qwen2 | qwen2.5 | llama2 | mistral | phi3 | gemma |\n"
               "                         harmony (default: from the model)\n"
               "  -sys, --system-prompt  system message\n"
               "  --reasoning-effort E   Harmony (gpt-oss): low | medium | high (default medium)\n"
               "  --show-reasoning       Harmony: print the analysis channel (on stderr); stdout gets\n"
               "                         the final channel only\n"
               "  --special-in-content   read control tokens in your messages too (unsafe: a message\n"
               "                         can then fake turns; by default only the template's are)\n%s%s",
            sampling_help, sl_cli_model_opts_help);
}

typedef struct msgs { sl_chat_msg *v; char **own; size_t n, cap; } msgs;

static int msgs_add(msgs *ms, const char *role, const char *content)
{
    if (ms->n == ms->cap) {
        size_t c = ms->cap ? 2 * ms->cap : 16;
        sl_chat_msg *v = realloc(ms->v, c * sizeof *v);
        if (!v) return -1;
        ms->v = v;
        char **own = realloc(ms->own, c * sizeof *own);
        if (!own) return -1;
        ms->own = own;
        ms->cap = c;
    }
    char *dup = strdup(content);
    if (!dup) return -1;
    ms->own[ms->n] = dup;
    ms->v[ms->n].role = role;
    ms->v[ms->n].content = dup;
    ms->n++;
    return 0;
}

static int render(enum sl_chat_tmpl t, const msgs *ms, bool gen, const char *bos, const char *eos,
                  const char *effort, sl_chat_rendered *out)
{
    sl_chat_opts co = { .add_generation_prompt = gen, .bos = bos, .eos = eos, .reasoning_effort = effort };
    return sl_chat_render_alloc(t, ms->v, ms->n, &co, out);
}

/* Feeds r->text[from..len): the template's control tokens, the messages as
 * text (unless --special-in-content). A conversation that does not extend
 * what was fed keeps the longest prefix the session can keep. */
static int feed_chat(const gen_opts *o, sl_model *m, sl_session *s, const sl_chat_rendered *r, size_t from,
                     bool restart)
{
    if (restart) from = 0;
    size_t len = r->len - from, np = 0;
    size_t *plain = malloc((r->n_spans ? r->n_spans : 1) * 2 * sizeof *plain);
    int32_t *ids = NULL;
    if (!plain) return SL_ENOMEM;
    for (size_t k = 0; k < r->n_spans; k++) {   /* the spans' parts in [from, len), shifted */
        size_t a = r->spans[2 * k], b = a + r->spans[2 * k + 1];
        if (b <= from) continue;
        if (a < from) a = from;
        plain[2 * np] = a - from;
        plain[2 * np + 1] = b - a;
        np++;
    }
    int n = sl_cli_tokenize_spans(m, r->text + from, len, false, true, o->special_in_content ? NULL : plain, np,
                                  &ids);
    free(plain);
    int32_t kept = restart && n > 0 ? sl_session_keep_prefix(s, ids, n) : 0;
    /* the first message of a conversation may come from the prompt cache */
    bool cached = o->prompt_cache && sl_session_n_past(s) == 0 && n > 0;
    int rc = n < 0 ? n : cached ? feed_cached(o, s, ids, n, "sluice chat") : sl_session_feed_tokens(s, ids + kept, n - kept);
    if (n < 0) fprintf(stderr, "sluice chat: %s\n", sl_model_errmsg(m));
    else if (rc) fprintf(stderr, "sluice chat: %s\n", sl_session_errmsg(s));
    free(ids);
    return rc;
}

static int chat_main(int argc, char **argv)
{
    gen_opts o;
    memset(&o, 0, sizeof o);
    int r = parse_gen(&o, argc, argv, "chat", chat_usage);
    if (r) return r < 0 ? 0 : r;
    enum sl_chat_tmpl t = SL_CHAT_NONE;
    if (o.tmpl_name && sl_chat_from_name(o.tmpl_name, &t)) {
        fprintf(stderr, "sluice chat: %s\n", sl_last_error());
        return 2;
    }
    sl_model *m = NULL, *dm = NULL;
    sl_session *s = NULL, *ds = NULL;
    sl_spec *spec = NULL;
    msgs ms = { 0 };
    sl_chat_rendered prev = { 0 };
    char *line = NULL;
    size_t line_cap = 0;
    int ret = 1;
    if (sl_cli_open_model(&o.mo, "chat", &m)) return 1;
    if (sl_cli_spec_open_draft(&o.spec, m, "chat", &dm)) goto out;
    if (!o.tmpl_name) {
        const char *j = sl_model_meta_str(m, "tokenizer.chat_template");
        if (!j) {
            fprintf(stderr, "sluice chat: %s has no tokenizer.chat_template; use --chat-template NAME\n", o.mo.path);
            goto out;
        }
        if (sl_chat_detect(j, &t)) {
            fprintf(stderr, "sluice chat: %s; use --chat-template NAME\n", sl_last_error());
            goto out;
        }
    }
    sl_model_info mi;
    sl_model_get_info(m, &mi);
    char bos[256] = "", eos[256] = "";
    if (mi.bos_id >= 0 && sl_model_token_text(m, mi.bos_id, bos, sizeof bos) < 0) bos[0] = 0;
    if (mi.eos_id >= 0 && sl_model_token_text(m, mi.eos_id, eos, sizeof eos) < 0) eos[0] = 0;
    if (sl_session_create(&s, m) || sl_session_set_sampling(s, &o.sp)) {
        fprintf(stderr, "sluice chat: %s\n", sl_last_error());
        goto out;
    }
    if (o.profile && sl_session_set_profile(s, true)) {   /* every turn's decode tokens */
        fprintf(stderr, "sluice chat: %s\n", sl_session_errmsg(s));
        goto out;
    }
    if (start_pressure(&o, s, "sluice chat")) goto out;
    if (sl_cli_spec_create(&o.spec, s, dm, &ds, &spec, "chat")) goto out;
    if (o.system && msgs_add(&ms, "system", o.system)) goto oom;
    bool tty = isatty(0);
    bool channels = sl_chat_has_channels(t);
    for (;;) {
        if (tty) { fputs("> ", stderr); fflush(stderr); }
        ssize_t n = getline(&line, &line_cap, stdin);
        if (n < 0) break;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (n == 0) continue;
        if (msgs_add(&ms, "user", line)) goto oom;
        sl_chat_rendered full;
        int rc = render(t, &ms, true, bos, eos, o.reasoning_effort, &full);
        if (rc) { fprintf(stderr, "sluice chat: cannot render the chat template: %s\n", sl_last_error()); goto out; }
        /* the template may re-render history differently (Harmony drops the
         * analysis channel of past replies): then keep what still matches */
        bool extends = prev.len == 0 || (prev.len <= full.len && !memcmp(full.text, prev.text, prev.len));
        rc = feed_chat(&o, m, s, &full, prev.len, !extends && prev.len);
        sl_chat_rendered_free(&full);
        if (rc == SL_ECTX) {   /* nothing was fed: drop this message, keep the conversation */
            fprintf(stderr, "sluice chat: that message does not fit in the context (-c %d); not sent\n",
                    sl_session_n_ctx(s));
            free(ms.own[--ms.n]);
            if (!extends && prev.len) {   /* the session was cut back: feed the whole conversation next */
                sl_session_reset(s);
                sl_chat_rendered_free(&prev);
            }
            continue;
        }
        if (rc) goto out;
        /* generate the reply, capturing its (final channel's) text for the history */
        char *reply = NULL;
        size_t rlen = 0;
        FILE *mem = open_memstream(&reply, &rlen);
        if (!mem) goto oom;
        enum gen_end end;
        sl_harmony h;
        sl_harmony_init(&h);
        gen_sink sink = { mem, channels ? &h : NULL, o.show_reasoning };
        rc = generate(&o, m, s, &sink, true, &end, spec);
        fclose(mem);
        putchar('\n');
        fflush(stdout);
        if (rc || end == GEN_CTX_FULL) {
            if (rc) fprintf(stderr, "sluice chat: %s\n", gen_errmsg(s, spec));
            free(reply);
            goto out;
        }
        save_cache(&o, s, "sluice chat");
        int ar = msgs_add(&ms, "assistant", reply ? reply : "");
        free(reply);
        if (ar) goto oom;
        sl_chat_rendered_free(&prev);
        if (render(t, &ms, false, bos, eos, o.reasoning_effort, &prev)) {
            fprintf(stderr, "sluice chat: cannot render the chat template: %s\n", sl_last_error());
            goto out;
        }
    }
    ret = 0;
    if (o.stats || o.json) {
        sl_stats all, zero;
        memset(&zero, 0, sizeof zero);
        sl_session_get_stats(s, &all);
        print_summary(&o, m, &all, &zero, NULL);
        sl_cli_spec_print_stats(spec, o.json);
    }
    sl_profile prof;
    if (o.profile && sl_session_get_profile(s, &prof) == 0) sl_cli_print_profile(stderr, &prof, o.json);
    goto out;
oom:
    fprintf(stderr, "sluice chat: out of memory\n");
out:
    for (size_t i = 0; i < ms.n; i++) free(ms.own[i]);
    free(ms.v);
    free(ms.own);
    sl_chat_rendered_free(&prev);
    free(line);
    close_gen(spec, ds, s, dm, m);
    return ret;
}

SL_CLI_COMMAND(cmd_run, "run", "generate text from a prompt", run_main)
SL_CLI_COMMAND(cmd_chat, "chat", "interactive chat with the model's chat template", chat_main)
