/* The engine thread: the only caller of the model. Between passes it admits
 * queued requests (tokenize, prefill alone, join the batch), drops cancelled
 * ones, samples every member's next token, cuts stop strings, finishes the
 * done ones (leave the batch) and feeds the rest in one sl_batch_accept pass.
 * With speculation on (--spec / --draft-model), a sequence that runs alone
 * decodes by sl_spec_step instead: drafts ride on its pass as extra rows. While
 * several run, the batch's rows are the sequences (one token each: a batched
 * verification of several sequences' drafts is not built); a sequence's
 * draft session catches up with what the batch fed when it runs alone again,
 * and a draw its last rejection left pending is taken by sl_spec_sample, so
 * switching between the two keeps the sampled distribution.
 *
 * Prefix reuse: a slot's session keeps its cache after its request is done.
 * A new request goes to the free slot whose cache shares the longest
 * reusable prefix with its tokens (sl_session_prefix_reusable: exact, so the
 * logits equal a fresh prefill bitwise); only the rest is prefilled. With no
 * match it takes a free session holding nothing, or a new one while fewer
 * than prefix_cache sessions hold a cache, else the least recently used free
 * one (its cache is dropped). So the cache costs no memory beyond the
 * --parallel sessions' own KV caches. */
#include "serve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../../gguf/base/sl_status.h"
#include "../../../gguf/base/sl_platform.h"

typedef struct slot {
    sl_session *s;
    sl_srv_job *job;        /* NULL: free */
    int32_t tok;
    sl_session *ds;         /* the draft model's session (SL_SPEC_DRAFT) */
    sl_spec *sp;            /* speculation on: s's */
    double t_used;          /* admission time of its last request (LRU) */
} slot;

struct sl_srv {
    sl_model *m;
    sl_srv_config c;
    int32_t n_ctx, n_vocab;
    sl_batch *b;
    slot *slots;            /* [parallel] */
    int32_t n_active;
    pthread_mutex_t mu;
    pthread_cond_t work;    /* the engine waits here for jobs */
    sl_srv_job *q_head, *q_tail;
    int32_t q_len;
    bool stop;
    pthread_t th;
    uint64_t next_id;
    int32_t *ids;           /* [n_ctx] tokenizer output */
    /* metrics (guarded by mu) */
    uint64_t n_req_ok, n_req_4xx, n_req_5xx, n_req_429, n_rejected, n_cancelled, n_done;
    uint64_t tok_prompt, tok_gen, tok_cached;
    double gen_ms, ttft_ms_sum;
    uint64_t n_ttft;
    sl_batch_stats bs;
    uint64_t spec_passes, spec_drafted, spec_accepted;
};


const sl_model *sl_srv_model(const sl_srv *s) { return s->m; }

void sl_srv_lock(sl_srv *s) { pthread_mutex_lock(&s->mu); }
void sl_srv_unlock(sl_srv *s) { pthread_mutex_unlock(&s->mu); }

void sl_srv_wait(sl_srv *s, sl_srv_job *j, int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&j->cv, &s->mu, &ts);
}

static void job_free(sl_srv_job *j)
{
    sl_srv_gen_free(&j->g);
    free(j->out);
    free(j->reason);
    free(j->ends);
    free(j->lps);
    pthread_cond_destroy(&j->cv);
    free(j);
}

void sl_srv_unref_locked(sl_srv *s, sl_srv_job *j)
{
    (void)s;
    if (--j->refs == 0) job_free(j);
}

void sl_srv_cancel_locked(sl_srv *s, sl_srv_job *j)
{
    if (j->state == SL_SRV_DONE || j->state == SL_SRV_REJECTED) return;
    j->cancelled = true;
    pthread_cond_signal(&s->work);
}

int sl_srv_submit(sl_srv *s, sl_srv_job *j)
{
    pthread_mutex_lock(&s->mu);
    if (s->q_len + s->n_active >= s->c.parallel + s->c.queue) {   /* every slot busy, queue full */
        pthread_mutex_unlock(&s->mu);
        return SL_EBUSY;
    }
    j->id = ++s->next_id;
    j->state = SL_SRV_QUEUED;
    j->refs = 2;
    j->t_submit = sl_now_ms();
    pthread_cond_init(&j->cv, NULL);
    j->next = NULL;
    if (s->q_tail) s->q_tail->next = j; else s->q_head = j;
    s->q_tail = j;
    s->q_len++;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

void sl_srv_count_http(sl_srv *s, int status)
{
    pthread_mutex_lock(&s->mu);
    if (status == 429) s->n_req_429++;
    else if (status >= 500) s->n_req_5xx++;
    else if (status >= 400) s->n_req_4xx++;
    else s->n_req_ok++;
    pthread_mutex_unlock(&s->mu);
}

/* lock held */
static void finish_locked(sl_srv *s, slot *sl, const char *why)
{
    sl_srv_job *j = sl->job;
    j->finish = why;
    j->safe_len = j->out_len;
    j->state = SL_SRV_DONE;
    if (j->cancelled) s->n_cancelled++; else s->n_done++;
    pthread_cond_broadcast(&j->cv);
    sl_srv_unref_locked(s, j);
    sl->job = NULL;
    s->n_active--;
}

static void reject_locked(sl_srv *s, sl_srv_job *j, int status, const char *code, const char *msg)
{
    j->state = SL_SRV_REJECTED;
    j->http_status = status;
    j->err_code = code;
    snprintf(j->err, sizeof j->err, "%s", msg);
    s->n_rejected++;
    pthread_cond_broadcast(&j->cv);
    sl_srv_unref_locked(s, j);
}

/* The free slot for a prompt of ids[0..n): the longest reusable prefix;
 * else one holding nothing; else a new session while fewer than
 * prefix_cache hold a cache; else the least recently used. There is one
 * (the caller admits only while a slot is free). */
static slot *pick_slot(sl_srv *s, const int32_t *ids, int n, bool reuse)
{
    slot *best = NULL, *empty = NULL, *unborn = NULL, *lru = NULL;
    int32_t bk = 0, held = 0;
    for (int32_t i = 0; i < s->c.parallel; i++) {
        slot *x = &s->slots[i];
        bool holds = x->s && sl_session_n_past(x->s) > 0;
        held += holds;
        if (x->job) continue;
        if (!x->s) { if (!unborn) unborn = x; continue; }
        if (!holds) { if (!empty) empty = x; continue; }
        int32_t k = reuse && n > 0 ? sl_session_prefix_reusable(x->s, ids, n) : 0;
        if (k > bk) { bk = k; best = x; }
        if (!lru || x->t_used < lru->t_used) lru = x;
    }
    if (best) return best;
    if (empty) return empty;
    if (unborn && (held < s->c.prefix_cache || !lru)) return unborn;
    return lru;
}

/* Tokenize, prefill alone (what no free cache holds), join the batch.
 * Called without the lock. */
static void admit(sl_srv *s, sl_srv_job *j)
{
    char msg[256];
    int status = 0;
    const char *code = NULL;
    slot *sl = NULL;
    int32_t kept = 0;
    sl_model_info mi;
    sl_model_get_info(s->m, &mi);
    bool chat = j->g.chat;
    size_t plen = strlen(j->g.prompt);
    int n = chat && !j->g.special_in_content
          ? sl_model_tokenize_plain(s->m, j->g.prompt, plen, false, j->g.plain, j->g.n_plain, s->ids, s->n_ctx)
          : sl_model_tokenize(s->m, j->g.prompt, plen, chat ? false : mi.add_bos, chat, s->ids, s->n_ctx);
    sl_harmony_init(&j->harmony);
    if (n == SL_ERANGE || n >= s->n_ctx) {
        snprintf(msg, sizeof msg, "the prompt is longer than the context (%d tokens)", s->n_ctx);
        status = 400; code = "context_length_exceeded";
    } else if (n < 0) {
        snprintf(msg, sizeof msg, "cannot tokenize the prompt: %s", sl_model_errmsg(s->m));
        status = 400;
    } else if (n == 0) {
        snprintf(msg, sizeof msg, "the prompt is empty");
        status = 400;
    }
    bool reuse = s->c.prefix_cache > 0 && !j->g.no_cache;
    sl = pick_slot(s, s->ids, status ? 0 : n, reuse);
    sl->t_used = sl_now_ms();
    if (!status && !sl->s && sl_session_create(&sl->s, s->m)) {
        snprintf(msg, sizeof msg, "cannot create a session: %s", sl_last_error());
        status = 503;
    }
    if (!status && s->c.spec_kind != SL_SPEC_OFF && !sl->sp) {
        sl_spec_params p;
        sl_spec_params_init(&p);
        p.kind = s->c.spec_kind;
        p.k_max = s->c.spec_k;
        if ((s->c.draft && !sl->ds && sl_session_create(&sl->ds, s->c.draft)) ||
            (p.draft = sl->ds, sl_spec_create(&sl->sp, sl->s, &p))) {
            snprintf(msg, sizeof msg, "cannot start speculation: %s", sl_last_error());
            status = 503;
        }
    }
    if (!status) {
        sl_sampling sp = j->g.sp;
        if (!j->g.seeded) sp.seed = j->id * 0x9e3779b97f4a7c15ull;
        if (reuse) kept = sl_session_keep_prefix(sl->s, s->ids, n);
        else sl_session_reset(sl->s);
        if (sl_session_set_sampling(sl->s, &sp) || sl_session_feed_tokens(sl->s, s->ids + kept, n - kept) ||
            sl_batch_add(s->b, sl->s)) {
            snprintf(msg, sizeof msg, "prefill failed: %s", sl_session_errmsg(sl->s));
            status = 500;
        }
    }
    pthread_mutex_lock(&s->mu);
    if (status) {
        reject_locked(s, j, status, code, msg);
    } else {
        sl->job = j;
        s->n_active++;
        j->state = SL_SRV_RUNNING;
        j->n_prompt = n;
        j->n_cached = kept;
        s->tok_prompt += (uint64_t)n;
        s->tok_cached += (uint64_t)kept;
        pthread_cond_broadcast(&j->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

static size_t max_stop_len(const sl_srv_gen *g)
{
    size_t m = 0;
    for (int i = 0; i < g->n_stop; i++) if (strlen(g->stop[i]) > m) m = strlen(g->stop[i]);
    return m;
}

/* Appends piece (and its log probabilities, lp); true if a stop string now
 * ends the text (cut there). Lock held. */
static bool append_locked(sl_srv_job *j, const char *piece, size_t len, const sl_srv_lp *lp)
{
    if (j->out_len + len + 1 > j->out_cap) {
        size_t c = (j->out_len + len + 1) * 2 + 64;
        char *o = realloc(j->out, c);
        if (!o) return true;
        j->out = o; j->out_cap = c;
    }
    if (j->n_ends == j->cap_ends) {
        size_t c = j->cap_ends * 2 + 16;
        size_t *e = realloc(j->ends, c * sizeof *e);
        if (!e) return true;
        j->ends = e;
        if (lp) {
            sl_srv_lp *l = realloc(j->lps, c * sizeof *l);
            if (!l) return true;
            j->lps = l;
        }
        j->cap_ends = c;
    }
    if (lp) j->lps[j->n_ends] = *lp;
    size_t old = j->out_len, ms = max_stop_len(&j->g);
    memcpy(j->out + old, piece, len);
    j->out_len += len;
    j->out[j->out_len] = 0;
    j->ends[j->n_ends++] = j->out_len;
    size_t from = old >= ms ? old - ms + 1 : 0, cut = SIZE_MAX;
    for (int i = 0; i < j->g.n_stop; i++) {
        const char *hit = strstr(j->out + from, j->g.stop[i]);
        if (hit && (size_t)(hit - j->out) < cut) cut = (size_t)(hit - j->out);
    }
    if (cut != SIZE_MAX) {
        j->out_len = cut;
        j->out[cut] = 0;
        return true;
    }
    /* text that may still turn out to begin a stop string is held back
     * (a stop string completed later starts at or after out_len - ms + 1) */
    size_t safe = ms == 0 ? j->out_len : j->out_len + 1 >= ms ? j->out_len + 1 - ms : 0;
    if (safe > j->safe_len) j->safe_len = safe;
    return false;
}

/* Harmony: which channel token tok (its text piece[0..plen)) belongs to;
 * text of the analysis channel goes to j->reason. false: out of memory.
 * Lock held. */
static bool channel_locked(const sl_srv *s, sl_srv_job *j, int32_t tok, const char *piece, int plen, int *ch)
{
    char text[256];
    *ch = SL_HARMONY_NONE;
    if (plen == 0 && sl_model_token_piece(s->m, tok, text, sizeof text) == 0) {   /* a control token */
        int tl = sl_model_token_text(s->m, tok, text, sizeof text);
        if (tl > 0) sl_harmony_push(&j->harmony, text, (size_t)tl, true);
        return true;
    }
    *ch = plen > 0 ? sl_harmony_push(&j->harmony, piece, (size_t)plen, false) : SL_HARMONY_NONE;
    if (*ch != SL_HARMONY_ANALYSIS) return true;
    if (j->reason_len + (size_t)plen + 1 > j->reason_cap) {
        size_t c = (j->reason_len + (size_t)plen + 1) * 2 + 64;
        char *r = realloc(j->reason, c);
        if (!r) return false;
        j->reason = r;
        j->reason_cap = c;
    }
    memcpy(j->reason + j->reason_len, piece, (size_t)plen);
    j->reason_len += (size_t)plen;
    j->reason[j->reason_len] = 0;
    return true;
}

/* A generated token's text (and log probabilities, or NULL) into the job; the
 * reason it is done, or NULL. fed: the token is in the cache already (a
 * speculative pass). Harmony replies keep only the final channel in out.
 * Lock held. */
static const char *emit_locked(sl_srv *s, sl_session *ss, sl_srv_job *j, int32_t tok, const char *piece, int plen,
                               const sl_srv_lp *lp, bool fed)
{
    if (j->n_gen == 0) { j->t_first = sl_now_ms(); s->ttft_ms_sum += j->t_first - j->t_submit; s->n_ttft++; }
    j->n_gen++;
    s->tok_gen++;
    int ch = SL_HARMONY_FINAL;
    if (j->g.channels && !channel_locked(s, j, tok, piece, plen, &ch)) return "stop";
    if (append_locked(j, piece, ch == SL_HARMONY_FINAL ? (size_t)plen : 0, lp)) return "stop";
    if (j->g.max_tokens && j->n_gen >= j->g.max_tokens) return "length";
    if (!fed && sl_session_n_past(ss) >= sl_session_n_ctx(ss)) return "length";
    return NULL;
}

/* The one active sequence, speculatively: 1..k+1 tokens from one pass. */
static void spec_pass(sl_srv *s, slot *sl, char *piece, size_t cap)
{
    sl_srv_job *j = sl->job;
    int32_t toks[16], got = 0, lim = 16;
    if (j->g.max_tokens && j->g.max_tokens - j->n_gen < lim) lim = j->g.max_tokens - j->n_gen;
    double t0 = sl_now_ms();
    sl_spec_stats a, z;
    sl_spec_get_stats(sl->sp, &a);
    int rc = sl_spec_step(sl->sp, toks, lim, &got);
    sl_spec_get_stats(sl->sp, &z);
    double t1 = sl_now_ms();
    const char *why = rc ? "error" : NULL;
    pthread_mutex_lock(&s->mu);
    s->gen_ms += t1 - t0;
    s->spec_passes += (uint64_t)(z.n_passes - a.n_passes);
    s->spec_drafted += (uint64_t)(z.n_drafted - a.n_drafted);
    s->spec_accepted += (uint64_t)(z.n_accepted - a.n_accepted);
    pthread_mutex_unlock(&s->mu);
    for (int32_t i = 0; i < got && !why; i++) {
        int plen = 0;
        if (sl_model_token_is_eog(s->m, toks[i])) { why = "stop"; break; }
        if ((plen = sl_session_detok(sl->s, toks[i], piece, cap)) < 0) { why = "error"; break; }
        pthread_mutex_lock(&s->mu);
        why = emit_locked(s, sl->s, j, toks[i], piece, plen, NULL, true);
        if (!why) pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_lock(&s->mu);
    if (why) {
        sl_batch_remove(s->b, sl->s);
        finish_locked(s, sl, why);
    }
    pthread_mutex_unlock(&s->mu);
}

static void *engine_main(void *arg)
{
    sl_srv *s = arg;
    int32_t *toks = malloc((size_t)s->c.parallel * sizeof *toks);
    char piece[1024];
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        /* admit while there are free slots */
        while (s->q_head && s->n_active < s->c.parallel) {
            sl_srv_job *j = s->q_head;
            s->q_head = j->next;
            if (!s->q_head) s->q_tail = NULL;
            s->q_len--;
            if (j->cancelled) {
                j->state = SL_SRV_DONE; j->finish = "cancelled";
                s->n_cancelled++;
                pthread_cond_broadcast(&j->cv);
                sl_srv_unref_locked(s, j);
                continue;
            }
            pthread_mutex_unlock(&s->mu);
            admit(s, j);
            pthread_mutex_lock(&s->mu);
        }
        /* the cancelled leave */
        for (int32_t i = 0; i < s->c.parallel; i++)
            if (s->slots[i].job && s->slots[i].job->cancelled) {
                sl_batch_remove(s->b, s->slots[i].s);
                finish_locked(s, &s->slots[i], "cancelled");
            }
        if (s->n_active == 0) {
            pthread_cond_wait(&s->work, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        int n = sl_batch_n_seqs(s->b);
        slot *alone = NULL;
        for (int32_t k = 0; n == 1 && k < s->c.parallel; k++)
            if (s->slots[k].s == sl_batch_session(s->b, 0)) alone = &s->slots[k];
        /* alone, with room for a draft: a speculative pass (the batch path takes a full context's
         * end, and requests for log probabilities: those come from the sampler before each token) */
        if (alone && alone->sp && alone->job->g.logprobs < 0 &&
            sl_session_n_past(alone->s) + 1 < sl_session_n_ctx(alone->s)) {
            spec_pass(s, alone, piece, sizeof piece);
            pthread_mutex_lock(&s->mu);
            continue;
        }
        /* sample each member; finish those that are done */
        int32_t nt = 0;
        double t0 = sl_now_ms();
        for (int i = 0; i < n; i++) {
            sl_session *ss = sl_batch_session(s->b, i);
            slot *sl = NULL;
            for (int32_t k = 0; k < s->c.parallel; k++) if (s->slots[k].s == ss) sl = &s->slots[k];
            sl_srv_job *j = sl->job;
            int32_t tok;
            const char *why = NULL;
            int plen = 0;
            sl_srv_lp lp = { .n_top = 0 };
            bool want_lp = j->g.logprobs >= 0;
            /* speculation: a draw a rejected draft left pending comes first */
            if (sl->sp ? sl_spec_sample(sl->sp, &tok) : sl_session_sample(ss, &tok)) why = "error";
            else if (sl_model_token_is_eog(s->m, tok)) why = "stop";
            else if (want_lp && (lp.id = tok, lp.n_top = sl_session_logprobs(ss, tok, j->g.logprobs, lp.top,
                                                                            lp.top_lp, &lp.lp)) < 0) why = "error";
            else if ((plen = sl_session_detok(ss, tok, piece, sizeof piece)) < 0) why = "error";
            pthread_mutex_lock(&s->mu);
            if (!why) why = emit_locked(s, ss, j, tok, piece, plen, want_lp ? &lp : NULL, false);
            if (why) {
                finish_locked(s, sl, why);
                pthread_mutex_unlock(&s->mu);
                sl->tok = -1;
            } else {
                pthread_cond_broadcast(&j->cv);
                pthread_mutex_unlock(&s->mu);
                sl->tok = tok;
            }
        }
        /* members in batch order; the finished ones leave first */
        for (int32_t k = 0; k < s->c.parallel; k++)
            if (s->slots[k].s && !s->slots[k].job && s->slots[k].tok == -1) {
                sl_batch_remove(s->b, s->slots[k].s);
                s->slots[k].tok = -2;
            }
        n = sl_batch_n_seqs(s->b);
        for (int i = 0; i < n; i++) {
            sl_session *ss = sl_batch_session(s->b, i);
            for (int32_t k = 0; k < s->c.parallel; k++) if (s->slots[k].s == ss) toks[nt++] = s->slots[k].tok;
        }
        int rc = nt ? sl_batch_accept(s->b, toks) : 0;
        double t1 = sl_now_ms();
        pthread_mutex_lock(&s->mu);
        s->gen_ms += t1 - t0;
        sl_batch_get_stats(s->b, &s->bs);
        if (rc) {   /* a failed pass: its members cannot go on */
            for (int32_t k = 0; k < s->c.parallel; k++)
                if (s->slots[k].job) {
                    sl_batch_remove(s->b, s->slots[k].s);
                    finish_locked(s, &s->slots[k], "error");
                }
        }
    }
    pthread_mutex_unlock(&s->mu);
    free(toks);
    return NULL;
}

int sl_srv_create(sl_srv **out, sl_model *m, const sl_srv_config *c)
{
    *out = NULL;
    if (c->parallel < 1 || c->queue < 0) return SL_EINVAL;
    sl_srv *s = calloc(1, sizeof *s);
    if (!s) return SL_ENOMEM;
    s->m = m;
    s->c = *c;
    sl_model_info mi;
    sl_model_get_info(m, &mi);
    s->n_ctx = mi.n_ctx;
    s->n_vocab = mi.n_vocab;
    sl_batch_params bp;
    sl_batch_params_init(&bp);
    bp.max_seqs = c->parallel;
    int rc = sl_batch_create(&s->b, m, &bp);
    s->slots = calloc((size_t)c->parallel, sizeof *s->slots);
    s->ids = malloc((size_t)s->n_ctx * sizeof *s->ids);
    if (rc || !s->slots || !s->ids) {
        sl_batch_destroy(s->b);
        free(s->slots); free(s->ids); free(s);
        return rc ? rc : SL_ENOMEM;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    if (pthread_create(&s->th, NULL, engine_main, s)) {
        sl_batch_destroy(s->b);
        free(s->slots); free(s->ids); free(s);
        return SL_ENOMEM;
    }
    *out = s;
    return 0;
}

/* After the HTTP side has stopped (no job is referenced by it any more). */
void sl_srv_destroy(sl_srv *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    sl_batch_destroy(s->b);
    for (int32_t i = 0; i < s->c.parallel; i++) {
        if (s->slots[i].job) sl_srv_unref_locked(s, s->slots[i].job);
        sl_spec_destroy(s->slots[i].sp);
        sl_session_destroy(s->slots[i].ds);
        sl_session_destroy(s->slots[i].s);
    }
    while (s->q_head) {
        sl_srv_job *j = s->q_head;
        s->q_head = j->next;
        sl_srv_unref_locked(s, j);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    free(s->slots);
    free(s->ids);
    free(s);
}

char *sl_srv_metrics(sl_srv *s)
{
    size_t cap = 4096;
    char *b = malloc(cap);
    if (!b) return NULL;
    pthread_mutex_lock(&s->mu);
    double tps = s->bs.pass_ms > 0 ? (double)s->bs.n_rows * 1e3 / s->bs.pass_ms : 0;
    snprintf(b, cap,
             "# HELP sluice_requests_total HTTP requests answered, by status class.\n"
             "# TYPE sluice_requests_total counter\n"
             "sluice_requests_total{status=\"2xx\"} %llu\n"
             "sluice_requests_total{status=\"4xx\"} %llu\n"
             "sluice_requests_total{status=\"429\"} %llu\n"
             "sluice_requests_total{status=\"5xx\"} %llu\n"
             "# TYPE sluice_generations_total counter\n"
             "sluice_generations_total{result=\"done\"} %llu\n"
             "sluice_generations_total{result=\"cancelled\"} %llu\n"
             "sluice_generations_total{result=\"rejected\"} %llu\n"
             "# TYPE sluice_prompt_tokens_total counter\nsluice_prompt_tokens_total %llu\n"
             "# HELP sluice_prompt_tokens_cached_total Prompt tokens an earlier request's cache served (not prefilled).\n"
             "# TYPE sluice_prompt_tokens_cached_total counter\nsluice_prompt_tokens_cached_total %llu\n"
             "# TYPE sluice_generated_tokens_total counter\nsluice_generated_tokens_total %llu\n"
             "# HELP sluice_decode_tokens_per_second Tokens fed per second of batched pass time.\n"
             "# TYPE sluice_decode_tokens_per_second gauge\nsluice_decode_tokens_per_second %.3f\n"
             "# TYPE sluice_queue_length gauge\nsluice_queue_length %d\n"
             "# TYPE sluice_active_sequences gauge\nsluice_active_sequences %d\n"
             "# TYPE sluice_batch_passes_total counter\nsluice_batch_passes_total %lld\n"
             "# TYPE sluice_stall_seconds_total counter\nsluice_stall_seconds_total %.6f\n"
             "# TYPE sluice_bytes_read_total counter\nsluice_bytes_read_total %llu\n"
             "# TYPE sluice_ttft_seconds_sum counter\nsluice_ttft_seconds_sum %.6f\n"
             "# TYPE sluice_ttft_seconds_count counter\nsluice_ttft_seconds_count %llu\n"
             "# HELP sluice_spec_passes_total Speculative passes (one sequence alone, drafts as extra rows).\n"
             "# TYPE sluice_spec_passes_total counter\nsluice_spec_passes_total %llu\n"
             "# TYPE sluice_spec_drafted_total counter\nsluice_spec_drafted_total %llu\n"
             "# TYPE sluice_spec_accepted_total counter\nsluice_spec_accepted_total %llu\n",
             (unsigned long long)s->n_req_ok, (unsigned long long)s->n_req_4xx,
             (unsigned long long)s->n_req_429, (unsigned long long)s->n_req_5xx,
             (unsigned long long)s->n_done, (unsigned long long)s->n_cancelled,
             (unsigned long long)s->n_rejected, (unsigned long long)s->tok_prompt,
             (unsigned long long)s->tok_cached,
             (unsigned long long)s->tok_gen, tps, s->q_len, s->n_active, (long long)s->bs.n_passes,
             s->bs.stall_ms / 1e3, (unsigned long long)s->bs.bytes_read, s->ttft_ms_sum / 1e3,
             (unsigned long long)s->n_ttft, (unsigned long long)s->spec_passes,
             (unsigned long long)s->spec_drafted, (unsigned long long)s->spec_accepted);
    pthread_mutex_unlock(&s->mu);
    return b;
}
