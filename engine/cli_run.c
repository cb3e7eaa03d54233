/* `sluice run` (generate from a prompt) and `sluice chat` (interactive, chat
 * template from the model). Text goes to stdout as it is generated; timings
 * and statistics to stderr. Exit codes: 0 ok, 1 model/runtime error, 2 bad flags. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../gguf/sl_status.h"
#include "../io/sluice_stream.h"
#include "chat.h"
#include "cli.h"
#include "cli_opts.h"
#include "sluice.h"

typedef struct gen_opts {
    sl_cli_model_opts mo;
    sl_sampling sp;
    bool seed_set;
    long long n_predict;
    const char *prompt;
    const char *tmpl_name;
    const char *system;
    bool stats, json, no_display_prompt, ignore_eos;
    const char *spec;       /* --spec: "ngram" (run only), "off" */
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
    "  --spec ngram|off       speculative decoding with n-gram drafts (run; default off)\n"
    "  --stats                per-token compute / I/O stall / bytes read summary\n"
    "  --json                 the summary as one JSON object on stderr\n";

static bool needs_value(const char *a)
{
    static const char *v[] = { "-p", "--prompt", "-n", "--n-predict", "--temp", "--top-k", "--top-p",
                               "--min-p", "--repeat-penalty", "--repeat-last-n", "--seed",
                               "--chat-template", "-sys", "--system-prompt", "--spec", NULL };
    for (int i = 0; v[i]; i++)
        if (!strcmp(a, v[i])) return true;
    return false;
}

/* Parses the common generation flags; returns 0, or 2 for bad flags, or -1 for --help. */
static int parse_gen(gen_opts *o, int argc, char **argv, const char *cmd, void (*usage)(FILE *))
{
    sl_cli_model_opts_init(&o->mo);
    sl_sampling_init(&o->sp);
    o->n_predict = -1;
    for (int i = 1; i < argc; i++) {
        int r = sl_cli_model_opt(&o->mo, argc, argv, &i, cmd);
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return -1; }
        if (!strcmp(a, "--stats")) { o->stats = true; continue; }
        if (!strcmp(a, "--json")) { o->json = true; continue; }
        if (!strcmp(a, "--no-display-prompt")) { o->no_display_prompt = true; continue; }
        if (!strcmp(a, "--ignore-eos")) { o->ignore_eos = true; continue; }
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
        else if (!strcmp(a, "--spec")) { o->spec = v; bad = strcmp(v, "ngram") && strcmp(v, "off"); }
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
    if (!o->seed_set) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        o->sp.seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
    }
    return 0;
}

static void print_summary(const gen_opts *o, sl_model *m, const sl_stats *all, const sl_stats *pre)
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
    if (o->stats)
        fprintf(stderr, "stats: mode %s, io %s, %d threads, %s kernels; per decode token: compute %.2f ms, "
                        "I/O stall %.2f ms, read %.2f MB (%.1f MB/s); prompt read %.2f MB\n",
                sl_stream_mode_name(mi.mode), sl_stream_io_name(mi.io), mi.n_threads, mi.isa, comp / per, stall / per,
                (double)bytes / 1e6 / per, mbps, (double)pre->bytes_read / 1e6);
    if (o->json)
        fprintf(stderr, "{\"mode\":\"%s\",\"io\":\"%s\",\"threads\":%d,\"isa\":\"%s\",\"n_prompt\":%lld,"
                        "\"prompt_ms\":%.3f,\"prompt_tok_s\":%.3f,\"n_decode\":%lld,\"decode_ms\":%.3f,"
                        "\"decode_tok_s\":%.3f,\"ttft_ms\":%.3f,\"compute_ms_per_token\":%.3f,"
                        "\"stall_ms_per_token\":%.3f,\"bytes_read_per_token\":%.0f,\"decode_mb_s\":%.3f,"
                        "\"prompt_bytes_read\":%llu}\n",
                sl_stream_mode_name(mi.mode), sl_stream_io_name(mi.io), mi.n_threads, mi.isa, (long long)all->n_prompt,
                all->prompt_ms, ptps, (long long)nd, dms, dtps, all->ttft_ms, comp / per, stall / per,
                (double)bytes / per, mbps, (unsigned long long)pre->bytes_read);
}

/* How a generation ended (when it did not fail). */
enum gen_end { GEN_LIMIT, GEN_EOG, GEN_CTX_FULL };

/* The one generation loop of run and chat: samples until -n tokens, an
 * end-of-generation token or a full context, printing each piece as it comes
 * (and appending it to capture, if given). feed_eog: the end token belongs to
 * the conversation (chat) and is accepted into the context. Returns 0 with
 * *end, or a negative SL_E* (message in sl_session_errmsg). */
static int generate(const gen_opts *o, sl_model *m, sl_session *s, FILE *capture, bool feed_eog,
                    enum gen_end *end, sl_spec *spec)
{
    char piece[2048];
    *end = GEN_LIMIT;
    for (long long i = 0; o->n_predict < 0 || i < o->n_predict; i++) {
        if (sl_session_n_past(s) >= sl_session_n_ctx(s)) {
            fprintf(stderr, "\n[context full: %d tokens]\n", sl_session_n_ctx(s));
            *end = GEN_CTX_FULL;
            return 0;
        }
        if (spec) {   /* several tokens per pass, all fed (drafts after an end token are moot: we stop) */
            int32_t toks[16], got = 0;
            long long left = o->n_predict < 0 ? 16 : o->n_predict - i;
            int rc = sl_spec_step(spec, toks, left < 16 ? (int32_t)left : 16, &got);
            if (rc) return rc;
            for (int32_t j = 0; j < got; j++) {
                if (!o->ignore_eos && sl_model_token_is_eog(m, toks[j])) { *end = GEN_EOG; return 0; }
                int len = sl_session_detok(s, toks[j], piece, sizeof piece);
                if (len > 0) { fwrite(piece, 1, (size_t)len, stdout); fflush(stdout); }
            }
            i += got - 1;
            continue;
        }
        int32_t tok;
        int rc = sl_session_sample(s, &tok);
        if (rc) return rc;
        if (!o->ignore_eos && sl_model_token_is_eog(m, tok)) {
            *end = GEN_EOG;
            if (feed_eog && sl_session_n_past(s) < sl_session_n_ctx(s)) return sl_session_accept(s, tok);
            return 0;
        }
        int len = sl_session_detok(s, tok, piece, sizeof piece);
        if (len > 0) {
            fwrite(piece, 1, (size_t)len, stdout);
            fflush(stdout);
            if (capture) fwrite(piece, 1, (size_t)len, capture);
        }
        if ((rc = sl_session_accept(s, tok))) return rc;
    }
    return 0;
}

static void run_usage(FILE *f)
{
    fprintf(f, "usage: sluice run -m MODEL -p PROMPT [options]\n"
               "  -p, --prompt TEXT      prompt (BOS added as the model asks)\n"
               "  --no-display-prompt    do not echo the prompt\n%s%s",
            sampling_help, sl_cli_model_opts_help);
}

static int run_main(int argc, char **argv)
{
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
    sl_model *m = NULL;
    sl_session *s = NULL;
    int ret = 1;
    if (sl_cli_open_model(&o.mo, "run", &m)) return 1;
    if (sl_session_create(&s, m) || sl_session_set_sampling(s, &o.sp)) {
        fprintf(stderr, "sluice run: %s\n", sl_last_error());
        goto out;
    }
    if (sl_session_feed_text(s, o.prompt, false)) {
        fprintf(stderr, "sluice run: %s\n", sl_session_errmsg(s));
        goto out;
    }
    if (!o.no_display_prompt) { fputs(o.prompt, stdout); fflush(stdout); }
    sl_stats pre, all;
    sl_session_get_stats(s, &pre);
    enum gen_end end;
    sl_spec *spec = NULL;
    if (o.spec && !strcmp(o.spec, "ngram")) {
        sl_spec_params spp;
        sl_spec_params_init(&spp);
        if (sl_spec_create(&spec, s, &spp)) { fprintf(stderr, "sluice run: %s\n", sl_last_error()); goto out; }
    }
    if (generate(&o, m, s, NULL, false, &end, spec))
        fprintf(stderr, "\nsluice: %s\n", spec ? sl_spec_errmsg(spec) : sl_session_errmsg(s));
    else ret = 0;
    putchar('\n');
    fflush(stdout);
    sl_session_get_stats(s, &all);
    print_summary(&o, m, &all, &pre);
    if (spec && (o.stats || o.json)) {
        sl_spec_stats ss;
        sl_spec_get_stats(spec, &ss);
        fprintf(stderr, "spec: n-gram drafts: %lld passes, %lld drafted, %lld accepted (%.1f%%), %.2f tokens/pass, k now %d\n",
                (long long)ss.n_passes, (long long)ss.n_drafted, (long long)ss.n_accepted,
                ss.n_drafted ? 100.0 * (double)ss.n_accepted / (double)ss.n_drafted : 0.0,
                ss.n_passes ? (double)ss.n_tokens / (double)ss.n_passes : 0.0, ss.k);
    }
    sl_spec_destroy(spec);
out:
    sl_session_destroy(s);
    sl_model_close(m);
    return ret;
}

/* ---- chat ----------------------------------------------------------------- */

static void chat_usage(FILE *f)
{
    fprintf(f, "usage: sluice chat -m MODEL [--chat-template NAME] [-sys TEXT] [options]\n"
               "  reads one user message per line from stdin (works with piped input)\n"
               "  --chat-template NAME   llama3 | chatml | qwen2 | qwen2.5 | llama2 | mistral | phi3 (default: from the model)\n"
               "  -sys, --system-prompt  system message\n%s%s",
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

static char *render(enum sl_chat_tmpl t, const msgs *ms, bool gen, const char *bos, const char *eos)
{
    int64_t len = sl_chat_render(t, ms->v, ms->n, gen, bos, eos, NULL, 0);
    if (len < 0) return NULL;
    char *out = malloc((size_t)len + 1);
    if (!out) return NULL;
    if (sl_chat_render(t, ms->v, ms->n, gen, bos, eos, out, (size_t)len + 1) != len) { free(out); return NULL; }
    out[len] = 0;
    return out;
}

static int feed_special(sl_model *m, sl_session *s, const char *text)
{
    size_t len = strlen(text);
    int cap = (int)(len + 16);
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids) return SL_ENOMEM;
    int n = sl_model_tokenize(m, text, len, false, true, ids, cap);
    int rc = n < 0 ? n : sl_session_feed_tokens(s, ids, n);
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
    if (o.spec && strcmp(o.spec, "off")) {   /* a drafted turn's end would have to be rolled back */
        fprintf(stderr, "sluice chat: --spec is not supported in chat yet (use run)\n");
        return 2;
    }
    enum sl_chat_tmpl t = SL_CHAT_NONE;
    if (o.tmpl_name && sl_chat_from_name(o.tmpl_name, &t)) {
        fprintf(stderr, "sluice chat: unknown chat template '%s' (llama3, chatml, qwen2, qwen2.5, llama2, mistral, phi3)\n", o.tmpl_name);
        return 2;
    }
    sl_model *m = NULL;
    sl_session *s = NULL;
    msgs ms = { 0 };
    char *prev = NULL, *line = NULL;
    size_t line_cap = 0;
    int ret = 1;
    if (sl_cli_open_model(&o.mo, "chat", &m)) return 1;
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
    if (o.system && msgs_add(&ms, "system", o.system)) goto oom;
    prev = strdup("");
    if (!prev) goto oom;
    bool tty = isatty(0);
    for (;;) {
        if (tty) { fputs("> ", stderr); fflush(stderr); }
        ssize_t n = getline(&line, &line_cap, stdin);
        if (n < 0) break;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (n == 0) continue;
        if (msgs_add(&ms, "user", line)) goto oom;
        char *full = render(t, &ms, true, bos, eos);
        if (!full) { fprintf(stderr, "sluice chat: cannot render the chat template: %s\n", sl_last_error()); goto out; }
        size_t pl = strlen(prev);
        const char *delta = strncmp(full, prev, pl) ? full : full + pl;
        if (delta == full && pl) {   /* template re-rendered history differently: start over */
            sl_session_reset(s);
        }
        int rc = feed_special(m, s, delta);
        free(full);
        if (rc) goto out;
        /* generate the reply, capturing its text for the history */
        char *reply = NULL;
        size_t rlen = 0;
        FILE *mem = open_memstream(&reply, &rlen);
        if (!mem) goto oom;
        enum gen_end end;
        rc = generate(&o, m, s, mem, true, &end, NULL);
        fclose(mem);
        putchar('\n');
        fflush(stdout);
        if (rc || end == GEN_CTX_FULL) {
            if (rc) fprintf(stderr, "sluice chat: %s\n", sl_session_errmsg(s));
            free(reply);
            goto out;
        }
        int ar = msgs_add(&ms, "assistant", reply ? reply : "");
        free(reply);
        if (ar) goto oom;
        free(prev);
        prev = render(t, &ms, false, bos, eos);
        if (!prev) { fprintf(stderr, "sluice chat: cannot render the chat template\n"); goto out; }
    }
    ret = 0;
    if (o.stats || o.json) {
        sl_stats all, zero;
        memset(&zero, 0, sizeof zero);
        sl_session_get_stats(s, &all);
        print_summary(&o, m, &all, &zero);
    }
    goto out;
oom:
    fprintf(stderr, "sluice chat: out of memory\n");
out:
    for (size_t i = 0; i < ms.n; i++) free(ms.own[i]);
    free(ms.v);
    free(ms.own);
    free(prev);
    free(line);
    sl_session_destroy(s);
    sl_model_close(m);
    return ret;
}

SL_CLI_COMMAND(cmd_run, "run", "generate text from a prompt", run_main)
SL_CLI_COMMAND(cmd_chat, "chat", "interactive chat with the model's chat template", chat_main)
