/* The session (sluice.h "session"): a model's KV cache, logits, sampler and
 * detokenizer state; feeds, samples, pipeline stages and the decode profile.
 * Its struct and the other files that make it up: session_obj.h. */
#include "session_obj.h"

#include <stdlib.h>
#include <string.h>

#include "../gguf/base/sl_platform.h"
#include "../io/stream_numa.h"
#include "forward_ple.h"
#include "forward_gdn.h"
#include "pressure.h"
#include "reserve.h"

int sl_session_create(sl_session **out, sl_model *m)
{
    *out = NULL;
    sl_session *s = calloc(1, sizeof *s);
    if (!s) return sl_err_set(SL_ENOMEM, "session: out of memory");
    s->m = m;
    int32_t *cap = malloc((size_t)m->d.n_layer * sizeof *cap);
    if (!cap) { free(s); return sl_err_set(SL_ENOMEM, "session: out of memory"); }
    sl_reserve_kv_caps(&m->d, &m->p, m->n_ctx, m->n_batch, cap);   /* window rings: kv.h; a stage's layers */
    int rc = sl_kv_init_layers(&s->kv, m->d.n_layer, m->n_ctx, m->d.n_head_kv, m->d.head_dim, m->p.type_k,
                               sl_reserve_type_v(&m->d, &m->p), cap);
    free(cap);
    if (!rc && (rc = sl_forward_gdn_state_init(&m->d, &s->kv))) sl_kv_free(&s->kv);
    if (rc) { free(s); return rc; }
    if (m->p.numa) {   /* before the first touch of the cache (io/stream_numa.h) */
        sl_numa_place np;
        sl_numa_decide_here(m->p.numa, &np);
        size_t rows = 0;   /* per kv head, over the layers (rings hold fewer) */
        for (int32_t l = 0; l < s->kv.n_layer; l++) rows += (size_t)s->kv.cap[l];
        rows *= (size_t)s->kv.n_head_kv;
        (void)sl_numa_apply(&np, s->kv.k, rows * s->kv.row_k);
        (void)sl_numa_apply(&np, s->kv.v, rows * s->kv.row_v);
    }
    sl_sampling sp;
    sl_sampling_init(&sp);
    if ((rc = sl_sampler_init(&s->smp, m->d.n_vocab, &sp))) { sl_kv_free(&s->kv); free(s); return rc; }
    s->logits = malloc((size_t)m->d.n_vocab * sizeof(float));
    s->hist = malloc((size_t)m->n_ctx * sizeof(int32_t));
    if (!s->logits || !s->hist) {
        sl_session_destroy(s);
        return sl_err_set(SL_ENOMEM, "session: out of memory");
    }
    sl_detok_init(&s->dt, false);
    s->t_first_feed = -1;
    *out = s;
    return 0;
}

void sl_session_destroy(sl_session *s)
{
    if (!s) return;
    sl_session_snap_free(s);
    sl_pressure_free(s->pressure);
    sl_forward_prof_free(&s->prof);
    sl_kv_free(&s->kv);
    sl_sampler_free(&s->smp);
    free(s->logits);
    free(s->hist);
    free(s);
}

const char *sl_session_errmsg(const sl_session *s) { return s->err; }

int sl_session_set_sampling(sl_session *s, const sl_sampling *spp)
{
    sl_sampling in, *sp = spp ? &in : NULL;
    sl_sampling_init(&in);
    if (spp && sl_struct_in(&in, sizeof in, spp, SL_SAMPLING_MIN_SIZE, "sl_sampling"))
        return sl_session_fail(s, SL_EINVAL);
    if (!sp || sp->top_p < 0 || sp->min_p < 0 || sp->repeat_penalty < 0 || sp->temp != sp->temp)
        return sl_session_fail(s, sl_err_set(SL_EINVAL, "sampling: invalid parameters"));
    s->smp.p = *sp;
    sl_sampler_seed(&s->smp, sp->seed);
    return 0;
}

void sl_session_reset(sl_session *s)
{
    sl_kv_clear(&s->kv);
    s->epoch++;
    sl_session_fresh_cut(s, 0);
    s->refill = false;
    s->have_logits = false;
    s->t_first_feed = -1;
    sl_detok_init(&s->dt, false);
}

int32_t sl_session_n_past(const sl_session *s) { return s->kv.n_past; }
int32_t sl_session_n_ctx(const sl_session *s) { return s->kv.n_ctx; }

int32_t sl_session_prefix_reusable(const sl_session *s, const int32_t *ids, int n)
{
    if (n < 2 || !ids) return 0;
    const sl_kv *kv = &s->kv;
    int32_t lim = s->fresh_len < kv->n_past ? s->fresh_len : kv->n_past, c = 0;
    if (lim > n - 1) lim = n - 1;   /* at least one token is computed: fresh logits */
    while (c < lim && s->hist[c] == ids[c]) c++;
    int32_t nb = s->m->n_batch;
    c -= c % nb;                    /* the rest is fed in a fresh prefill's chunks */
    /* a recurrent state holds exactly n_past positions, a snapshot its own */
    if (kv->rec && (c != kv->n_past || kv->rec_pos != kv->n_past)) c = sl_session_snap_below(s, c);
    /* a sliding-window ring must still hold the window before c (its
     * window - 1 = cap - n_batch: sl_kv_ring_cap) */
    for (int32_t l = 0; c > 0 && l < kv->n_layer; l++)
        if (kv->cap[l] < kv->n_ctx && kv->base[l] > 0 && kv->base[l] > c - (kv->cap[l] - nb)) c = 0;
    return c;
}

int32_t sl_session_keep_prefix(sl_session *s, const int32_t *ids, int n)
{
    int32_t c = sl_session_prefix_reusable(s, ids, n);
    if (c == 0) { sl_session_reset(s); return 0; }
    if (s->kv.rec && (c != s->kv.n_past || s->kv.rec_pos != s->kv.n_past)) sl_session_snap_restore(s, c);
    s->kv.n_past = c;               /* rows past it are overwritten by the next feed */
    sl_session_fresh_cut(s, c);
    s->refill = true;
    s->epoch++;
    s->have_logits = false;
    s->t_first_feed = -1;
    sl_detok_init(&s->dt, false);
    s->stats.n_reused += c;
    return c;
}

/* The streamer's counters between a and b over a pass of ms wall time;
 * experts: also the expert cache's. */
static void count_io(sl_stats *st, const sl_stream_stats *a, const sl_stream_stats *b, double ms, bool experts)
{
    double stall = b->stall_ms - a->stall_ms;
    st->stall_ms += stall;
    st->bytes_read += b->bytes_read - a->bytes_read;
    st->compute_ms += ms - stall;
    if (!experts) return;
    st->expert_hits += b->expert_hits - a->expert_hits;
    st->expert_misses += b->expert_misses - a->expert_misses;
    st->expert_bytes_read += b->expert_bytes_read - a->expert_bytes_read;
    st->expert_stall_ms += b->expert_stall_ms - a->expert_stall_ms;
}

/* The forward pass of a feed. A fresh prefill of a model with recurrent
 * layers runs it one n_batch chunk at a time (the chunks sl_forward_run
 * cuts) to snapshot the state at their ends. */
static int forward(sl_session *s, const int32_t *ids, int n, int mode, float *logits)
{
    sl_forward *fw = &s->m->fw;
    const int32_t nb = s->m->n_batch, past = s->kv.n_past;
    if (!s->kv.rec || s->m->p.rec_snapshots <= 0 || s->fresh_len != past || past % nb || n < nb)
        return sl_forward_run(fw, &s->kv, ids, n, mode, logits);
    for (int32_t i0 = 0; i0 < n; i0 += nb) {
        const int32_t k = n - i0 < nb ? n - i0 : nb;
        const bool all = mode == SL_LOGITS_ALL;
        int rc = sl_forward_run(fw, &s->kv, ids + i0, k, all || i0 + k == n ? mode : SL_LOGITS_NONE,
                                all ? logits + (int64_t)i0 * s->m->d.n_vocab : logits);
        if (rc) return rc;
        if (k == nb) sl_session_snap_take(s);
    }
    return 0;
}

/* One forward over ids with timing and streamer stats accounting. */
static int run(sl_session *s, const int32_t *ids, int n, int mode, float *logits, bool decode)
{
    sl_model *m = s->m;
    if (n < 0 || (n > 0 && !ids)) return sl_session_fail(s, sl_err_set(SL_EINVAL, "feed: bad token array"));
    if (n == 0) return 0;
    s->epoch++;
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->d.n_vocab)
            return sl_session_fail(s, sl_err_set(SL_EINVAL, "token id %d at index %d out of range (vocab %d)",
                                           ids[i], i, m->d.n_vocab));
    sl_session_pressure_tick(s);   /* between forward passes: nothing acquired; may set a KV window */
    int rc = sl_session_make_room(s, n);
    if (rc) return sl_session_fail(s, rc);
    if ((int64_t)s->kv.n_past + n > s->kv.n_ctx)
        return sl_session_fail(s, sl_err_set(SL_ECTX, "context full: %d positions used + %d new > n_ctx %d",
                                       s->kv.n_past, n, s->kv.n_ctx));
    if (s->kv.n_past == 0 || s->refill) { s->first_len = s->kv.n_past + n; s->refill = false; }
    sl_stream_stats a, b;
    sl_stream_get_stats(m->st, &a);
    const uint64_t pg_chosen = m->fw.pg_chosen, pg_right = m->fw.pg_right, ple0 = sl_forward_ple_bytes_read(&m->fw);
    double t0 = sl_now_ms();
    if (!decode && s->t_first_feed < 0) s->t_first_feed = t0;
    int32_t past = s->kv.n_past;
    sl_session_fresh_cut(s, past);   /* rows from past on are rewritten */
    bool prof = decode && sl_session_prof_begin(s);
    rc = forward(s, ids, n, mode, logits);
    double t1 = sl_now_ms();
    if (prof) sl_session_prof_end(s, rc, n, t1 - t0);
    sl_stream_get_stats(m->st, &b);
    if (rc) {
        s->kv.n_past = past;     /* a failed chunk's cache rows are not trusted */
        s->have_logits = false;
        return sl_session_fail(s, rc);
    }
    memcpy(s->hist + past, ids, (size_t)n * sizeof *ids);
    int32_t nb = m->n_batch;
    if (s->fresh_len == past && past % nb == 0) s->fresh_len = past + n / nb * nb;
    if (decode) { s->stats.n_decode += n; s->stats.decode_ms += t1 - t0; }
    else { s->stats.n_prompt += n; s->stats.prompt_ms += t1 - t0; }
    count_io(&s->stats, &a, &b, t1 - t0, true);
    s->stats.expert_prefetched += b.expert_prefetched - a.expert_prefetched;
    s->stats.expert_prefetch_used += b.expert_prefetch_used - a.expert_prefetch_used;
    s->stats.pregate_chosen += m->fw.pg_chosen - pg_chosen;
    s->stats.pregate_guessed += m->fw.pg_right - pg_right;
    s->stats.ple_bytes_read += sl_forward_ple_bytes_read(&m->fw) - ple0;
    return 0;
}

int sl_session_feed_tokens(sl_session *s, const int32_t *ids, int n)
{
    int rc = run(s, ids, n, SL_LOGITS_LAST, s->logits, false);
    if (!rc && n > 0) s->have_logits = true;
    return rc;
}

int sl_session_eval(sl_session *s, const int32_t *ids, int n, float *logits)
{
    if (!logits) return sl_session_fail(s, sl_err_set(SL_EINVAL, "eval: logits buffer is NULL"));
    int rc = run(s, ids, n, SL_LOGITS_ALL, logits, false);
    if (!rc && n > 0) {
        memcpy(s->logits, logits + (size_t)(n - 1) * (size_t)s->m->d.n_vocab,
               (size_t)s->m->d.n_vocab * sizeof(float));
        s->have_logits = true;
    }
    return rc;
}

int sl_session_feed_text(sl_session *s, const char *text, bool parse_special)
{
    sl_model *m = s->m;
    int rc = sl_model_need_tok(m);
    if (rc) return sl_session_fail(s, rc);
    size_t len = strlen(text);
    bool bos = s->kv.n_past == 0;
    int64_t cap = (int64_t)len + 8;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids) return sl_session_fail(s, sl_err_set(SL_ENOMEM, "tokenize: out of memory"));
    int64_t n = sl_tok_encode(m->tok, text, len, bos, parse_special, ids, cap);
    if (n > cap) {   /* SPM byte fallback: an invalid byte is U+FFFD, three byte tokens */
        int32_t *more = realloc(ids, (size_t)n * sizeof *ids);
        if (!more) { free(ids); return sl_session_fail(s, sl_err_set(SL_ENOMEM, "tokenize: out of memory")); }
        ids = more;
        cap = n;
        n = sl_tok_encode(m->tok, text, len, bos, parse_special, ids, cap);
    }
    if (n < 0) { free(ids); return sl_session_fail(s, (int)n); }
    if (n > INT32_MAX) n = INT32_MAX;
    rc = sl_session_feed_tokens(s, ids, (int)n);
    free(ids);
    return rc;
}

const float *sl_session_logits(const sl_session *s)
{
    return s->have_logits ? s->logits : NULL;
}

int sl_session_sample(sl_session *s, int32_t *token)
{
    if (!s->have_logits)
        return sl_session_fail(s, sl_err_set(SL_EINVAL, "sample: no logits yet (feed a prompt first)"));
    double t0 = sl_now_ms();
    *token = sl_sampler_sample(&s->smp, s->logits, s->hist, s->kv.n_past);
    double t1 = sl_now_ms();
    s->stats.sample_ms += t1 - t0;
    if (s->prof_on) {
        s->prof.ns[SL_PROF_SAMPLE] += (uint64_t)((t1 - t0) * 1e6);
        s->prof.calls[SL_PROF_SAMPLE]++;
        s->prof_samples++;
    }
    if (s->t_first_feed >= 0) {
        s->stats.ttft_ms = t1 - s->t_first_feed;
        s->t_first_feed = -1;
    }
    return 0;
}

int sl_session_accept(sl_session *s, int32_t token)
{
    int rc = run(s, &token, 1, SL_LOGITS_LAST, s->logits, true);
    if (rc) s->have_logits = false;
    else s->have_logits = true;
    return rc;
}

int sl_session_step(sl_session *s, int32_t *token)
{
    if (!s->m->p.context_shift && s->kv.n_past >= s->kv.n_ctx)
        return sl_session_fail(s, sl_err_set(SL_ECTX, "context full: %d of %d positions used", s->kv.n_past,
                                       s->kv.n_ctx));
    int rc = sl_session_sample(s, token);
    if (rc) return rc;
    return sl_session_accept(s, *token);
}

int sl_session_detok(sl_session *s, int32_t id, char *buf, size_t cap)
{
    int rc = sl_model_need_tok(s->m);
    if (rc) return sl_session_fail(s, rc);
    if (cap < 1) return sl_session_fail(s, sl_err_set(SL_ERANGE, "detok: buffer too small"));
    size_t len = 0;
    rc = sl_detok_push(&s->dt, s->m->tok, id, buf, cap - 1, &len);
    if (rc) return sl_session_fail(s, rc);
    buf[len] = '\0';
    return (int)len;
}

int sl_session_set_profile(sl_session *s, bool on)
{
    if (!s) return sl_err_set(SL_EINVAL, "set_profile: session is NULL");
    if (!on) { s->prof_on = false; return 0; }
    if (!s->prof.thread_ns) {
        int rc = sl_forward_prof_alloc(&s->prof, sl_pool_n_threads(s->m->pool));
        if (rc) return sl_session_fail(s, sl_err_set(rc, "profile: out of memory"));
    }
    sl_forward_prof_clear(&s->prof);
    s->prof_tokens = s->prof_samples = 0;
    s->prof_fwd_ms = 0;
    s->prof_on = true;
    return 0;
}

int sl_session_get_profile_sized(const sl_session *s, sl_profile *out, size_t size)
{
    int rc = sl_struct_check(size, SL_PROFILE_MIN_SIZE, sizeof(sl_profile), "sl_profile");
    if (rc) return rc;
    if (!s || !s->prof.thread_ns)
        return sl_err_set(SL_EINVAL, "get_profile: profiling was never turned on");
    sl_profile p;
    sl_forward_prof_export(&s->prof, &p);
    p.n_tokens = s->prof_tokens;
    p.n_samples = s->prof_samples;
    p.forward_ms = s->prof_fwd_ms;
    return sl_struct_out(out, size, &p, sizeof p, SL_PROFILE_MIN_SIZE, "sl_profile");
}

int sl_session_get_stats_sized(const sl_session *s, sl_stats *out, size_t size)
{
    sl_stats st = s->stats;
    st.pressure_kv_window = sl_session_kv_cap(s);   /* a state, not a counter */
    return sl_struct_out(out, size, &st, sizeof st, SL_STATS_MIN_SIZE, "sl_stats");
}

void sl_session_reset_stats(sl_session *s)
{
    memset(&s->stats, 0, sizeof s->stats);
}

/* ---- pipeline stages (sluice.h) -------------------------------------------- */

int sl_session_embed(sl_session *s, const int32_t *ids, int n, float *hidden)
{
    if (s->m->p.no_head) return sl_session_fail(s, sl_err_set(SL_EINVAL, "embed: this stage has no embedding (no_head)"));
    int rc = sl_forward_embed(&s->m->fw, ids, n, hidden);
    return rc ? sl_session_fail(s, rc) : 0;
}

int sl_session_forward_layers(sl_session *s, int32_t first, int32_t last, int32_t pos0, float *hidden, int n)
{
    sl_model *m = s->m;
    sl_stream_stats a, b;
    sl_stream_get_stats(m->st, &a);
    double t0 = sl_now_ms();
    int rc = sl_forward_layers(&m->fw, &s->kv, first, last, pos0, hidden, n);
    double ms = sl_now_ms() - t0;
    sl_stream_get_stats(m->st, &b);
    if (rc) return sl_session_fail(s, rc);
    count_io(&s->stats, &a, &b, ms, true);
    return 0;
}

int sl_session_head(sl_session *s, const float *hidden)
{
    if (s->m->p.no_head) return sl_session_fail(s, sl_err_set(SL_EINVAL, "head: this stage has no lm head (no_head)"));
    if (!hidden) return sl_session_fail(s, sl_err_set(SL_EINVAL, "head: hidden row is NULL"));
    s->epoch++;
    s->have_logits = false;
    sl_stream_stats a, b;
    sl_stream_get_stats(s->m->st, &a);
    double t0 = sl_now_ms();
    int rc = sl_forward_head(&s->m->fw, hidden, s->logits);
    double ms = sl_now_ms() - t0;
    sl_stream_get_stats(s->m->st, &b);
    if (rc) return sl_session_fail(s, rc);
    count_io(&s->stats, &a, &b, ms, false);
    s->have_logits = true;
    return 0;
}

int sl_session_commit(sl_session *s, const int32_t *ids, int n)
{
    if (n < 0 || (n > 0 && !ids)) return sl_session_fail(s, sl_err_set(SL_EINVAL, "commit: bad token array"));
    if ((int64_t)s->kv.n_past + n > s->kv.n_ctx)
        return sl_session_fail(s, sl_err_set(SL_ECTX, "commit: %d positions used + %d > n_ctx %d", s->kv.n_past, n,
                                       s->kv.n_ctx));
    if (s->kv.n_past == 0) s->first_len = n;
    memcpy(s->hist + s->kv.n_past, ids, (size_t)n * sizeof *ids);
    s->kv.n_past += n;
    s->epoch++;
    return 0;
}

/* ---- for batch.c and spec.c (session_obj.h) ------------------------ */

bool sl_session_prof_begin(sl_session *s)
{
    if (!s->prof_on) return false;
    s->m->fw.prof = &s->prof;
    sl_pool_set_profile(s->m->pool, s->prof.thread_ns, SL_PROF_STRIDE);
    return true;
}

void sl_session_prof_end(sl_session *s, int rc, int n, double ms)
{
    sl_pool_set_profile(s->m->pool, NULL, 0);
    s->m->fw.prof = NULL;
    if (!rc) { s->prof_tokens += n; s->prof_fwd_ms += ms; }
}


void sl_session_fed(sl_session *s, const int32_t *ids, int n, bool ok, double ms, double stall_ms)
{
    s->epoch++;
    int32_t past = ok ? s->kv.n_past - n : s->kv.n_past;   /* rows from past on were written */
    sl_session_fresh_cut(s, past);
    if (!ok) {               /* the pass failed: the cache rows past n_past are not trusted */
        s->have_logits = false;
        snprintf(s->err, sizeof s->err, "%s", sl_last_error());
        return;
    }
    memcpy(s->hist + s->kv.n_past - n, ids, (size_t)n * sizeof *ids);
    s->have_logits = true;
    s->stats.n_decode += n;
    s->stats.decode_ms += ms;
    s->stats.stall_ms += stall_ms;
    s->stats.compute_ms += ms - stall_ms;
}