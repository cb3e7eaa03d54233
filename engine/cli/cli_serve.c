/* `sluice serve`: the OpenAI-compatible HTTP server (engine/cli/serve/). Prints
 * "sluice serve: listening on http://HOST:PORT" once it accepts connections
 * and runs until SIGINT / SIGTERM. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../chat.h"
#include "cli.h"
#include "cli_opts.h"
#include "../sluice.h"
#ifdef SL_HAVE_SERVE
#include "serve/serve.h"
#endif

static void usage(FILE *f)
{
    fprintf(f, "usage: sluice serve -m MODEL [options]\n"
               "  --host ADDR            IPv4 address to listen on (default 127.0.0.1)\n"
               "  --port N               port (default 8080; 0 = any free port)\n"
               "  --api-key KEY          require 'Authorization: Bearer KEY' (all but /health), checked\n"
               "                         before any body is read (binding beyond loopback without\n"
               "                         one is allowed, with a warning)\n"
               "  --parallel N           sequences decoded together in one pass (default 8)\n"
               "  --queue N              requests waiting beyond those before 429 (default 64)\n"
               "  --prefix-cache N       finished requests' KV caches kept for prompts that start the\n"
               "                         same way (exact prefix reuse; at most --parallel, default\n"
               "                         --parallel; 0 = off: every request prefills its whole prompt)\n"
               "  --prefix-snapshots N   recurrent models: state snapshots per cached session, taken at\n"
               "                         n_batch boundaries of prompts, so a shared start (a system\n"
               "                         prompt) is reused exactly (default 4, 0 = whole history only;\n"
               "                         each the size of the state, counted with the KV cache)\n"
               "  --max-body BYTES       request body limit (default 1M)\n"
               "  --max-conns N          open connections in all (default 512; the last eighth only\n"
               "                         for clients that hold none, so new clients get in)\n"
               "  --max-conns-per-client N  open connections one client address may hold (default 64)\n"
               "  --header-timeout S     seconds a request's header may take to arrive (default 10)\n"
               "  --body-timeout S       seconds its body may take after the header (default 30);\n"
               "                         a partial request past either is dropped\n"
               "  --max-tokens N         cap on a request's max_tokens (default: the context)\n"
               "  --chat-template NAME   llama3 | chatml | qwen2 | qwen2.5 | llama2 | mistral | phi3\n"
               "                         (default: from the model; without one, ChatML)\n"
               "  --model-name NAME      the id /v1/models reports (default: the file name)\n"
               SL_CLI_SPEC_OPTS_HELP
               "                         (speculation runs while one request is decoding alone;\n"
               "                         concurrent requests share batched passes without drafts)\n"
               "%s", sl_cli_model_opts_help);
}

static int serve_main(int argc, char **argv)
{
#ifndef SL_HAVE_SERVE
    (void)argc; (void)argv; (void)usage;
    fprintf(stderr, "sluice serve: not built here (needs libmicrohttpd-dev and libcjson-dev: make deps)\n");
    return 1;
#else
    sl_cli_model_opts mo;
    sl_cli_model_opts_init(&mo);
    sl_srv_http_config hc;
    memset(&hc, 0, sizeof hc);
    hc.host = "127.0.0.1";
    hc.port = 8080;
    hc.max_body = 1 << 20;
    hc.guard = (sl_srv_guard_config){ .per_client = 64, .max_conns = 512, .header_s = 10, .body_s = 30 };
    sl_srv_config ec = { .parallel = 8, .queue = 64, .lim = { .max_messages = 256 }, .prefix_cache = -1 };
    long long max_tokens = 0, snaps = SL_SRV_REC_SNAPSHOTS;
    const char *tmpl_name = NULL;
    sl_cli_spec_opts so;
    sl_cli_spec_opts_init(&so);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = sl_cli_model_opt(&mo, argc, argv, &i, "serve");
        if (!r) r = sl_cli_spec_opt(&so, argc, argv, &i, "serve");
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (i + 1 >= argc) { fprintf(stderr, "sluice serve: unknown option or missing value: %s\n", a); return 2; }
        const char *v = argv[++i];
        long long n;
        unsigned long long b;
        if (!strcmp(a, "--host")) hc.host = v;
        else if (!strcmp(a, "--port") && !sl_cli_int(v, 0, 65535, &n)) hc.port = (int)n;
        else if (!strcmp(a, "--api-key") && *v) hc.api_key = v;
        else if (!strcmp(a, "--parallel") && !sl_cli_int(v, 1, 1024, &n)) ec.parallel = (int32_t)n;
        else if (!strcmp(a, "--queue") && !sl_cli_int(v, 0, 1 << 20, &n)) ec.queue = (int32_t)n;
        else if (!strcmp(a, "--prefix-cache") && !sl_cli_int(v, 0, 1024, &n)) ec.prefix_cache = (int32_t)n;
        else if (!strcmp(a, "--prefix-snapshots") && !sl_cli_int(v, 0, 4096, &n)) snaps = n;
        else if (!strcmp(a, "--max-body") && !sl_cli_parse_size(v, &b) && b >= 64 && b <= (1ull << 30)) hc.max_body = b;
        else if (!strcmp(a, "--max-conns") && !sl_cli_int(v, 1, 65536, &n)) hc.guard.max_conns = (int)n;
        else if (!strcmp(a, "--max-conns-per-client") && !sl_cli_int(v, 1, 65536, &n)) hc.guard.per_client = (int)n;
        else if (!strcmp(a, "--header-timeout") && !sl_cli_int(v, 1, 3600, &n)) hc.guard.header_s = (int)n;
        else if (!strcmp(a, "--body-timeout") && !sl_cli_int(v, 1, 3600, &n)) hc.guard.body_s = (int)n;
        else if (!strcmp(a, "--max-tokens") && !sl_cli_int(v, 1, 1 << 24, &n)) max_tokens = n;
        else if (!strcmp(a, "--chat-template")) tmpl_name = v;
        else if (!strcmp(a, "--model-name") && *v) hc.model_name = v;
        else { fprintf(stderr, "sluice serve: invalid option or value: %s %s\n", a, v); usage(stderr); return 2; }
    }
    if (!mo.path) { usage(stderr); return 2; }
    hc.guard.headroom = hc.guard.max_conns / 8;
    if (hc.guard.per_client > hc.guard.max_conns - hc.guard.headroom)
        hc.guard.per_client = hc.guard.max_conns - hc.guard.headroom;
    if (!sl_srv_host_is_loopback(hc.host))   /* allowed (containers bind 0.0.0.0), never silently */
        fprintf(stderr, "sluice serve: WARNING: listening on %s, beyond loopback: other machines can reach this "
                "server%s\n", hc.host, hc.api_key ? "" : " and, without --api-key, use it freely");
    if (ec.prefix_cache < 0 || ec.prefix_cache > ec.parallel) ec.prefix_cache = ec.parallel;
    mo.mp.rec_snapshots = ec.prefix_cache > 0 ? (int32_t)snaps : 0;
    if (sl_cli_spec_check(&so, &mo.mp, "serve")) return 2;
    enum sl_chat_tmpl tmpl = SL_CHAT_NONE;
    if (tmpl_name && sl_chat_from_name(tmpl_name, &tmpl)) {
        fprintf(stderr, "sluice serve: unknown chat template '%s'\n", tmpl_name);
        return 2;
    }
    /* the engine and HTTP threads inherit the blocked signals: only sigwait sees them */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    sl_model *m, *dm;
    if (sl_cli_open_model(&mo, "serve", &m)) return 1;
    if (sl_cli_spec_open_draft(&so, m, "serve", &dm)) { sl_model_close(m); return 1; }
    ec.spec_kind = so.kind;
    ec.spec_k = so.k_max;
    ec.draft = dm;
    if (so.kind != SL_SPEC_OFF) {   /* refuse a draft of another vocabulary now, not at the first request */
        sl_session *ts = NULL, *ds = NULL;
        sl_spec *sp = NULL;
        int bad = sl_session_create(&ts, m) || sl_cli_spec_create(&so, ts, dm, &ds, &sp, "serve");
        sl_spec_destroy(sp);
        sl_session_destroy(ds);
        sl_session_destroy(ts);
        if (bad) { sl_model_close(dm); sl_model_close(m); return 1; }
    }
    if (!tmpl_name) {
        const char *j = sl_model_meta_str(m, "tokenizer.chat_template");
        if (j && sl_chat_detect(j, &tmpl)) tmpl = SL_CHAT_NONE;
        if (tmpl == SL_CHAT_NONE) {   /* as llama-server: chat completions still work */
            tmpl = SL_CHAT_CHATML;
            fprintf(stderr, "sluice serve: %s has %s chat template: using ChatML (--chat-template NAME to choose)\n",
                    mo.path, j ? "an unrecognised" : "no");
        }
    }
    sl_model_info mi;
    sl_model_get_info(m, &mi);
    if (mi.bos_id >= 0 && sl_model_token_text(m, mi.bos_id, hc.bos, sizeof hc.bos) < 0) hc.bos[0] = 0;
    if (mi.eos_id >= 0 && sl_model_token_text(m, mi.eos_id, hc.eos, sizeof hc.eos) < 0) hc.eos[0] = 0;
    hc.tmpl = tmpl;
    ec.lim.n_vocab = mi.n_vocab;
    ec.lim.max_tokens = max_tokens ? (int32_t)max_tokens : mi.n_ctx;
    hc.lim = ec.lim;
    if (!hc.model_name) {
        const char *slash = strrchr(mo.path, '/');
        hc.model_name = slash ? slash + 1 : mo.path;
    }
    sl_srv *e;
    if (sl_srv_create(&e, m, &ec)) {
        fprintf(stderr, "sluice serve: cannot start the engine: %s\n", sl_last_error());
        sl_model_close(dm);
        sl_model_close(m);
        return 1;
    }
    sl_srv_http *h;
    int port;
    if (sl_srv_http_start(&h, e, &hc, &port)) {
        fprintf(stderr, "sluice serve: %s\n", sl_last_error());
        sl_srv_destroy(e);
        sl_model_close(dm);
        sl_model_close(m);
        return 1;
    }
    printf("sluice serve: listening on http://%s:%d (model %s, chat template %s, %d parallel, queue %d, prefix cache %d, spec %s)\n",
           hc.host, port, hc.model_name, sl_chat_name(tmpl), ec.parallel, ec.queue, ec.prefix_cache,
           so.kind == SL_SPEC_NGRAM ? "ngram" : so.kind == SL_SPEC_DRAFT ? "draft"
           : so.kind == SL_SPEC_MTP ? "mtp" : "off");
    fflush(stdout);
    int sig;
    sigwait(&sigs, &sig);
    sl_srv_http_stop(h);
    sl_srv_destroy(e);
    sl_model_close(dm);
    sl_model_close(m);
    return 0;
#endif
}

SL_CLI_COMMAND(cmd_serve, "serve", "OpenAI-compatible HTTP server (continuous batching)", serve_main)
