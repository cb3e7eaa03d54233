/* Speculative decoding options of run, chat and serve: --spec, --draft-model,
 * --spec-k (--draft-max); the draft model is opened resident with the target's threads and
 * context (a draft is small, and it is consulted k times per target pass). */
#include <stdio.h>
#include <string.h>

#include "../../gguf/base/sl_status.h"
#include "../../io/sluice_stream.h"
#include "cli_opts.h"

void sl_cli_spec_opts_init(sl_cli_spec_opts *o)
{
    memset(o, 0, sizeof *o);
    o->kind = -1;   /* not given */
}

int sl_cli_spec_opt(sl_cli_spec_opts *o, int argc, char **argv, int *i, const char *cmd)
{
    const char *a = argv[*i];
    if (strcmp(a, "--spec") && strcmp(a, "--draft-model") && strcmp(a, "--spec-k") && strcmp(a, "--draft-max"))
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "sluice %s: option %s needs a value\n", cmd, a);
        return -1;
    }
    const char *v = argv[++*i];
    long long n;
    if (!strcmp(a, "--draft-model")) {
        if (!*v) goto bad;
        o->draft_path = v;
    } else if (!strcmp(a, "--spec-k") || !strcmp(a, "--draft-max")) {
        if (sl_cli_int(v, 1, 8, &n)) goto bad;
        o->k_max = (int32_t)n;
    } else if (!strcmp(v, "ngram")) o->kind = SL_SPEC_NGRAM;
    else if (!strcmp(v, "draft")) o->kind = SL_SPEC_DRAFT;
    else if (!strcmp(v, "mtp")) o->kind = SL_SPEC_MTP;
    else if (!strcmp(v, "off")) o->kind = SL_SPEC_OFF;
    else goto bad;
    return 1;
bad:
    fprintf(stderr, "sluice %s: invalid value '%s' for %s\n", cmd, v, a);
    return -1;
}

int sl_cli_spec_check(sl_cli_spec_opts *o, sl_model_params *mp, const char *cmd)
{
    if (o->kind < 0) o->kind = o->draft_path ? SL_SPEC_DRAFT : SL_SPEC_OFF;
    if (o->kind == SL_SPEC_DRAFT && !o->draft_path) {
        fprintf(stderr, "sluice %s: --spec draft needs --draft-model FILE\n", cmd);
        return -1;
    }
    if (o->kind != SL_SPEC_DRAFT && o->draft_path) {
        fprintf(stderr, "sluice %s: --draft-model goes with --spec draft (not --spec %s)\n", cmd,
                o->kind == SL_SPEC_NGRAM ? "ngram" : o->kind == SL_SPEC_MTP ? "mtp" : "off");
        return -1;
    }
    if (o->kind == SL_SPEC_OFF && o->k_max) {
        fprintf(stderr, "sluice %s: --spec-k needs --spec ngram|draft|mtp or --draft-model\n", cmd);
        return -1;
    }
    if (mp) mp->keep_nextn = o->kind == SL_SPEC_MTP;   /* streamed: the MTP block is read too */
    return 0;
}

int sl_cli_spec_open_draft(const sl_cli_spec_opts *o, sl_model *target, const char *cmd, sl_model **dm)
{
    *dm = NULL;
    if (o->kind != SL_SPEC_DRAFT) return 0;
    sl_model_info ti;
    sl_model_get_info(target, &ti);
    sl_cli_model_opts mo;
    sl_cli_model_opts_init(&mo);
    mo.path = o->draft_path;
    mo.mp.mode = SL_MODE_RESIDENT;
    mo.mp.n_threads = ti.n_threads;
    mo.mp.n_ctx = ti.n_ctx;
    mo.mp.context_shift = false;   /* the spec keeps the draft within its context */
    char what[64];
    snprintf(what, sizeof what, "%s (draft model)", cmd);
    return sl_cli_open_model(&mo, what, dm);
}

int sl_cli_spec_create(const sl_cli_spec_opts *o, sl_session *s, sl_model *dm, sl_session **ds, sl_spec **sp,
                       const char *cmd)
{
    *sp = NULL;
    *ds = NULL;
    if (o->kind == SL_SPEC_OFF) return 0;
    sl_spec_params p;
    sl_spec_params_init(&p);
    p.kind = o->kind;
    p.k_max = o->k_max;
    if (dm && sl_session_create(ds, dm)) goto fail;
    p.draft = *ds;
    if (sl_spec_create(sp, s, &p)) goto fail;
    return 0;
fail:
    fprintf(stderr, "sluice %s: %s\n", cmd, sl_last_error());
    sl_session_destroy(*ds);
    *ds = NULL;
    return 1;
}

void sl_cli_spec_print_stats(const sl_spec *sp, bool json)
{
    sl_spec_stats ss;
    if (!sp || sl_spec_get_stats(sp, &ss)) return;
    double rate = ss.n_drafted ? (double)ss.n_accepted / (double)ss.n_drafted : 0.0;
    double per = ss.n_passes ? (double)ss.n_tokens / (double)ss.n_passes : 0.0;
    if (json)
        fprintf(stderr, "{\"spec_passes\":%lld,\"spec_drafted\":%lld,\"spec_accepted\":%lld,\"spec_accept_rate\":%.4f,"
                        "\"spec_tokens_per_pass\":%.3f,\"spec_k\":%d,\"spec_draft_ms\":%.3f,\"spec_verify_ms\":%.3f}\n",
                (long long)ss.n_passes, (long long)ss.n_drafted, (long long)ss.n_accepted, rate, per, ss.k,
                ss.draft_ms, ss.verify_ms);
    else
        fprintf(stderr, "spec: %lld passes, %lld drafted, %lld accepted (%.1f%%), %.2f tokens/pass, k now %d; "
                        "draft model %.1f ms, verification %.1f ms\n",
                (long long)ss.n_passes, (long long)ss.n_drafted, (long long)ss.n_accepted, 100.0 * rate, per, ss.k,
                ss.draft_ms, ss.verify_ms);
}
