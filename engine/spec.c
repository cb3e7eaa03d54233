/* Speculative decoding (sluice.h "speculative decoding"): one pass verifies
 * the sampled token and k drafts (n-gram lookup, a draft model or the
 * model's own MTP block: spec_mtp.c); the cache
 * keeps the accepted prefix (rows past it are rolled back by moving n_past).
 * A recurrent state cannot be rolled back that way: it is saved before the
 * pass and, when a draft was rejected, restored and advanced over the
 * accepted tokens again (one more pass, only on a rejection). */
#include "session_obj.h"
#include "spec_mtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/base/sl_platform.h"

#define SPEC_K_LIMIT 8      /* k + 1 <= 9 rows: matmul tiles equal vec_dot */

struct sl_spec {
    sl_session *s;
    sl_session *draft;          /* SL_SPEC_DRAFT: the draft model's session */
    sl_mtp *mtp;                /* SL_SPEC_MTP: the NextN block's drafter */
    sl_spec_params p;
    int32_t k_max, k;
    int32_t n_vocab;
    float *rows;                /* [SPEC_K_LIMIT + 1][n_vocab] */
    float *q;                   /* draft (sampling): [SPEC_K_LIMIT][n_vocab] q of each draft */
    int32_t pending;            /* next token drawn at a rejection, -1: none */
    int32_t pending_past;       /* n_past it belongs to */
    uint64_t pending_epoch;     /* the session's epoch then (fed since: void) */
    sl_spec_stats st;
    void *rec_snap;             /* the target's recurrent state before a verify pass (NULL: none) */
    char err[512];
};


static int spec_fail(sl_spec *sp, int rc)
{
    snprintf(sp->err, sizeof sp->err, "%s", sl_last_error());
    return rc;
}

/* 0 when the two models have the same vocabulary (size and every token's text). */
static int same_vocab(const sl_model *t, const sl_model *d)
{
    sl_model_info ti, di;
    sl_model_get_info(t, &ti);
    sl_model_get_info(d, &di);
    int32_t n = ti.n_vocab < di.n_vocab ? ti.n_vocab : di.n_vocab;
    char a[512], b[512];
    for (int32_t id = 0; id < n; id++) {
        int la = sl_model_token_text(t, id, a, sizeof a), lb = sl_model_token_text(d, id, b, sizeof b);
        if (la == SL_ERANGE || lb == SL_ERANGE) {   /* longer than any real token: compare what fits */
            la = la == SL_ERANGE ? (int)sizeof a - 1 : la;
            lb = lb == SL_ERANGE ? (int)sizeof b - 1 : lb;
        }
        if (la < 0 || lb < 0)
            return sl_err_set(SL_EUNSUPPORTED, "spec: cannot read token %d of the %s vocabulary (no tokenizer?)", id,
                              la < 0 ? "target" : "draft");
        if (la != lb || memcmp(a, b, (size_t)la))
            return sl_err_set(SL_EINVAL, "spec: the draft model's vocabulary differs from the target's at token id "
                              "%d (draft \"%.40s\", target \"%.40s\")", id, b, a);
    }
    if (ti.n_vocab != di.n_vocab)
        return sl_err_set(SL_EINVAL, "spec: the draft model's vocabulary differs from the target's at token id %d "
                          "(draft has %d tokens, target %d)", n, di.n_vocab, ti.n_vocab);
    return 0;
}

int sl_spec_params_init_sized(sl_spec_params *p, size_t struct_size)
{
    sl_spec_params d;
    memset(&d, 0, sizeof d);
    d.kind = SL_SPEC_NGRAM;
    d.ngram_min = 1;
    d.ngram_max = 3;
    d.adaptive = true;
    return sl_struct_init(p, struct_size, &d, sizeof d, SL_SPEC_PARAMS_MIN_SIZE, "sl_spec_params");
}

int sl_spec_create(sl_spec **out, sl_session *s, const sl_spec_params *pp)
{
    if (!out || !s) return sl_err_set(SL_EINVAL, "spec: NULL argument");
    *out = NULL;
    sl_spec_params p;
    sl_spec_params_init(&p);
    if (pp && sl_struct_in(&p, sizeof p, pp, SL_SPEC_PARAMS_MIN_SIZE, "sl_spec_params")) return SL_EINVAL;
    if (p.kind != SL_SPEC_NGRAM && p.kind != SL_SPEC_OFF && p.kind != SL_SPEC_DRAFT && p.kind != SL_SPEC_MTP)
        return sl_err_set(SL_EINVAL, "spec: unknown kind %d", p.kind);
    if (p.k_max < 0 || p.k_max > SPEC_K_LIMIT || p.ngram_min < 1 || p.ngram_max < p.ngram_min || p.ngram_max > 64)
        return sl_err_set(SL_EINVAL, "spec: k_max %d (0..%d), ngram %d..%d (1 <= min <= max <= 64)", p.k_max,
                          SPEC_K_LIMIT, p.ngram_min, p.ngram_max);
    if (p.kind == SL_SPEC_DRAFT) {
        if (!p.draft) return sl_err_set(SL_EINVAL, "spec: kind SL_SPEC_DRAFT needs a draft session (params.draft)");
        if (p.draft == s) return sl_err_set(SL_EINVAL, "spec: the draft session is the target session");
        int rc = same_vocab(s->m, p.draft->m);
        if (rc) return rc;
    }
    sl_spec *sp = calloc(1, sizeof *sp);
    if (!sp) return sl_err_set(SL_ENOMEM, "spec: out of memory");
    sp->s = s;
    sp->p = p;
    sp->draft = p.kind == SL_SPEC_DRAFT ? p.draft : NULL;
    sp->n_vocab = s->m->d.n_vocab;
    sl_model_info mi;
    sl_model_get_info(s->m, &mi);
    /* streaming: a pass costs the disk read whatever its rows; resident: rows cost compute */
    sp->k_max = p.kind == SL_SPEC_OFF ? 0 : p.k_max ? p.k_max : mi.mode == SL_MODE_STREAM ? 8 : 4;
    int32_t nb = s->m->fw.n_batch;
    if (sp->k_max > nb - 1) sp->k_max = nb - 1;
    sp->k = p.adaptive ? (sp->k_max + 1) / 2 : sp->k_max;
    sp->pending = -1;
    sp->rows = malloc((size_t)(SPEC_K_LIMIT + 1) * (size_t)sp->n_vocab * sizeof(float));
    if (sp->draft) sp->q = malloc((size_t)SPEC_K_LIMIT * (size_t)sp->n_vocab * sizeof(float));
    if (s->kv.rec) sp->rec_snap = malloc((size_t)sl_kv_rec_total(&s->kv));
    if (!sp->rows || (sp->draft && !sp->q) || (s->kv.rec && !sp->rec_snap)) {
        sl_spec_destroy(sp);
        return sl_err_set(SL_ENOMEM, "spec: out of memory");
    }
    int rc = p.kind == SL_SPEC_MTP ? sl_mtp_create(&sp->mtp, s) : 0;
    if (rc) {
        sl_spec_destroy(sp);
        return rc;
    }
    *out = sp;
    return 0;
}

void sl_spec_destroy(sl_spec *sp)
{
    if (!sp) return;
    sl_mtp_destroy(sp->mtp);
    free(sp->rows);
    free(sp->q);
    free(sp->rec_snap);
    free(sp);
}

const char *sl_spec_errmsg(const sl_spec *sp) { return sp ? sp->err : sl_last_error(); }

/* Up to k tokens following the most recent earlier occurrence of ctx's last
 * n tokens (n from n_max down to n_min); returns how many. */
static int32_t ngram_draft(const int32_t *ctx, int32_t len, int32_t n_min, int32_t n_max, int32_t k,
                           int32_t *out)
{
    for (int32_t n = n_max; n >= n_min; n--) {
        if (n >= len) continue;
        const int32_t *suf = ctx + len - n;
        for (int32_t j = len - n - 1; j >= 0; j--) {
            if (memcmp(ctx + j, suf, (size_t)n * sizeof *ctx)) continue;
            int32_t m = 0;
            while (m < k && j + n + m < len) { out[m] = ctx[j + n + m]; m++; }
            return m;
        }
    }
    return 0;
}

/* Drafts end at an end-of-generation token: nothing after one is kept. */
static int32_t cut_at_eog(const sl_model *m, const int32_t *d, int32_t k)
{
    for (int32_t i = 0; i < k; i++)
        if (sl_model_token_is_eog(m, d[i])) return i + 1;
    return k;
}

/* Draft model: bring its cache to the target's context ctx[0..len) (the
 * common prefix stays, the rest is fed in one prefill, at least the last
 * token so that its logits are fresh), then propose up to k tokens, feeding
 * all but the last. Sampling: the draft draws from q (the target's settings
 * on the draft's logits) and q of each draft is kept in sp->q. Returns how
 * many were proposed (0: the draft's context is too short), or a status. */
static int draft_propose(sl_spec *sp, const int32_t *ctx, int32_t len, int32_t k, int32_t *out)
{
    sl_session *d = sp->draft;
    sl_kv *dkv = &d->kv;
    int32_t *dh = d->hist;
    if (k > dkv->n_ctx - len + 1) k = dkv->n_ctx - len + 1;   /* no context shift in the draft */
    if (k < 1) return 0;
    int32_t c = 0, lim = dkv->n_past < len - 1 ? dkv->n_past : len - 1;
    while (c < lim && dh[c] == ctx[c]) c++;
    if (dkv->rec && c != dkv->rec_pos) c = 0;   /* a recurrent draft goes back only to 0 */
    dkv->n_past = c;
    int rc = sl_session_feed_tokens(d, ctx + c, len - c);
    if (rc) return sl_err_set(rc, "spec: draft model: %s", sl_session_errmsg(d));
    sl_sampler *ds = &d->smp, *ts = &sp->s->smp;
    bool greedy = !(ts->p.temp > 0);
    ds->p = ts->p;   /* q: the target's settings; the draft's PRNG reseeded from the target's */
    if (!greedy) sl_sampler_seed(ds, (uint64_t)(sl_sampler_uniform(ts) * 9007199254740992.0));
    const sl_model *m = d->m;
    int32_t n = 0;
    while (n < k) {
        double sum;
        int32_t nc = sl_sampler_dist(ds, d->logits, dh, dkv->n_past, &sum);
        int32_t t = greedy ? ds->cand[0].id : sl_sampler_draw(ds, nc, sum);
        if (!greedy) {
            float *q = sp->q + (size_t)n * (size_t)sp->n_vocab;
            memset(q, 0, (size_t)sp->n_vocab * sizeof *q);
            for (int32_t i = 0; i < nc; i++) q[ds->cand[i].id] = (float)(ds->prob[i] / sum);
        }
        out[n++] = t;
        if (n == k || sl_model_token_is_eog(m, t)) break;
        if ((rc = sl_session_accept(d, t))) return sl_err_set(rc, "spec: draft model: %s", sl_session_errmsg(d));
    }
    return n;
}

static bool pending_valid(sl_spec *sp)
{
    sl_session *s = sp->s;
    return sp->pending >= 0 && sp->pending_past == s->kv.n_past &&
           sp->pending_epoch == s->epoch && s->have_logits;
}

int sl_spec_sample(sl_spec *sp, int32_t *token)
{
    if (!sp || !token) return sl_err_set(SL_EINVAL, "spec sample: NULL argument");
    if (pending_valid(sp)) { *token = sp->pending; return 0; }   /* stays until the session is fed */
    int rc = sl_session_sample(sp->s, token);
    return rc ? spec_fail(sp, rc) : 0;
}

/* The target's recurrent state back to position base (saved before the
 * verify pass), then advanced over ids[0..n): the state of the accepted
 * tokens, as plain decoding leaves it (rows are computed alike for 1..9 rows
 * a pass). The pass's logits are not needed (sp->rows is scratch here). */
static int rec_replay(sl_spec *sp, const int32_t *ids, int32_t base, int32_t n)
{
    sl_kv *kv = &sp->s->kv;
    sl_kv_rec_write(kv, sp->rec_snap, base);
    kv->n_past = base;
    sl_forward_seq one = { .kv = kv, .ids = ids, .n = n, .mode = SL_LOGITS_LAST };
    return sl_forward_run_batch(&sp->s->m->fw, &one, 1, sp->rows);
}

int sl_spec_step(sl_spec *sp, int32_t *tokens, int32_t cap, int32_t *n_out)
{
    sl_session *s = sp->s;
    sl_kv *kv = &s->kv;
    sl_sampler *smp = &s->smp;
    int32_t *hist = s->hist;
    const sl_model *model = s->m;
    if (!tokens || !n_out || cap < 1) return spec_fail(sp, sl_err_set(SL_EINVAL, "spec step: bad output buffer"));
    *n_out = 0;
    const int32_t base = kv->n_past;
    if (base >= kv->n_ctx)
        return spec_fail(sp, sl_err_set(SL_ECTX, "context full: %d of %d positions used", base, kv->n_ctx));
    int32_t ids[SPEC_K_LIMIT + 1];
    int rc;
    if (pending_valid(sp)) {
        ids[0] = sp->pending;   /* drawn at the last rejection: the target's next token */
    } else if ((rc = sl_session_sample(s, &ids[0]))) {
        return spec_fail(sp, rc);
    }
    sp->pending = -1;
    /* the context is the cache plus the token just chosen */
    hist[base] = ids[0];
    int32_t k = sp->k;
    if (k > cap - 1) k = cap - 1;
    if (k > kv->n_ctx - base - 1) k = kv->n_ctx - base - 1;
    if (sl_model_token_is_eog(model, ids[0])) k = 0;
    double dms = 0;   /* the draft model's share: counted in the session's decode time too */
    if (k > 0 && sp->draft) {
        double t0 = sl_now_ms();
        int got = draft_propose(sp, hist, base + 1, k, ids + 1);
        dms = sl_now_ms() - t0;
        sp->st.draft_ms += dms;
        if (got < 0) return spec_fail(sp, got);
        k = got;
    } else if (k > 0 && sp->mtp) {
        double t0 = sl_now_ms();
        int got = sl_mtp_draft(sp->mtp, ids[0], base, k, ids + 1);
        dms = sl_now_ms() - t0;
        sp->st.draft_ms += dms;
        if (got < 0) return spec_fail(sp, got);
        k = cut_at_eog(model, ids + 1, got);
    } else if (k > 0) {
        k = cut_at_eog(model, ids + 1, ngram_draft(hist, base + 1, sp->p.ngram_min, sp->p.ngram_max, k, ids + 1));
    }
    sp->st.n_passes++;
    if (k == 0) {   /* nothing to verify: a plain step */
        if ((rc = sl_session_accept(s, ids[0]))) return spec_fail(sp, rc);
        tokens[0] = ids[0];
        *n_out = 1;
        sp->st.n_tokens++;
        sp->st.k = sp->k;
        return 0;
    }
    sl_forward *fw = &s->m->fw;
    sl_stream *st = s->m->st;
    sl_forward_seq one = { .kv = kv, .ids = ids, .n = k + 1, .mode = SL_LOGITS_ALL };
    sl_stream_stats a, z;
    sl_stream_get_stats(st, &a);
    const double f0 = sp->mtp ? sl_mtp_follow_ms(sp->mtp) : 0;   /* the block's share of the passes */
    double t0 = sl_now_ms();
    if (sp->rec_snap) sl_kv_rec_read(kv, sp->rec_snap);
    rc = sl_forward_run_batch(fw, &one, 1, sp->rows);
    double ms = sl_now_ms() - t0;
    sp->st.verify_ms += ms;
    sl_stream_get_stats(st, &z);
    if (rc) {
        sl_session_fed(s, ids, k + 1, false, ms, 0);
        return spec_fail(sp, rc);
    }
    /* row i predicts the token after ids[i]; the draft ids[i+1] is checked against it */
    int32_t m = 0;
    memcpy(hist + base, ids, (size_t)(k + 1) * sizeof *ids);
    for (; m < k; m++) {
        const float *row = sp->rows + (size_t)m * (size_t)sp->n_vocab;
        double sum;
        int32_t nc = sl_sampler_dist(smp, row, hist, base + 1 + m, &sum);
        int32_t d = ids[m + 1], at = -1;
        for (int32_t c = 0; c < nc; c++) if (smp->cand[c].id == d) { at = c; break; }
        if (!(smp->p.temp > 0)) {
            if (at == 0) continue;
            sp->pending = smp->cand[0].id;
            break;
        }
        /* P(accept) = min(1, p(d) / q(d)); n-gram drafts are certain: q(d) = 1 */
        const float *q = sp->draft ? sp->q + (size_t)m * (size_t)sp->n_vocab : NULL;
        double qd = q ? (double)q[d] : 1.0;
        if (at >= 0 && sl_sampler_uniform(smp) * sum * qd < smp->prob[at]) continue;
        if (!q) {   /* residual: p without d */
            if (at >= 0) { sum -= smp->prob[at]; smp->prob[at] = 0; }
            sp->pending = sl_sampler_draw(smp, nc, sum);
            break;
        }
        double rs = 0;   /* residual: max(0, p - q), in prob's unnormalized scale */
        for (int32_t c = 0; c < nc; c++) {
            double r = (double)smp->prob[c] - sum * (double)q[smp->cand[c].id];
            smp->prob[c] = r > 0 ? (float)r : 0.0f;
            rs += smp->prob[c];
        }
        if (!(rs > 0)) nc = sl_sampler_dist(smp, row, hist, base + 1 + m, &rs);   /* p <= q by rounding only */
        sp->pending = sl_sampler_draw(smp, nc, rs);
        break;
    }
    kv->n_past = base + 1 + m;   /* roll back the rejected rows */
    if (sp->draft) {   /* the draft fed ids[0..k): keep what was accepted */
        sl_kv *dkv = &sp->draft->kv;
        if (dkv->n_past > kv->n_past) dkv->n_past = kv->n_past;
    }
    memcpy(s->logits, sp->rows + (size_t)m * (size_t)sp->n_vocab,
           (size_t)sp->n_vocab * sizeof(float));
    if (sp->mtp) sl_mtp_keep(sp->mtp, base, base + m);
    if (sp->rec_snap && m < k) {
        t0 = sl_now_ms();
        rc = rec_replay(sp, ids, base, 1 + m);
        sp->st.verify_ms += sl_now_ms() - t0;
        if (rc) {
            sl_session_fed(s, ids, 1 + m, false, ms, 0);
            return spec_fail(sp, rc);
        }
    }
    if (sp->mtp) {
        const double fm = sl_mtp_follow_ms(sp->mtp) - f0;
        sp->st.verify_ms -= fm;
        sp->st.draft_ms += fm;
    }
    sl_session_fed(s, ids, 1 + m, true, ms + dms, z.stall_ms - a.stall_ms);
    sp->pending_past = kv->n_past;
    sp->pending_epoch = s->epoch;
    memcpy(tokens, ids, (size_t)(1 + m) * sizeof *ids);
    *n_out = 1 + m;
    sp->st.n_drafted += k;
    sp->st.n_accepted += m;
    sp->st.n_tokens += 1 + m;
    if (sp->p.adaptive) {
        int32_t nk = m == k ? 2 * sp->k : m + 1;
        sp->k = nk < 1 ? 1 : nk > sp->k_max ? sp->k_max : nk;
    }
    sp->st.k = sp->k;
    return 0;
}

int sl_spec_get_stats_sized(const sl_spec *sp, sl_spec_stats *out, size_t size)
{
    return sl_struct_out(out, size, &sp->st, sizeof sp->st, SL_SPEC_STATS_MIN_SIZE, "sl_spec_stats");
}
