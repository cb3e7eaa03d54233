/* Public API (sluice.h): model = streamer + description + tokenizer + pool +
 * compute arena; session = KV cache + logits + sampler + detokenizer state. */
#include "sluice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../gguf/gguf.h"
#include "../gguf/base/sl_internal.h"
#include "../io/sluice_stream.h"
#include "../io/stream_numa.h"
#include "../kernels/kernels.h"
#include "forward.h"
#include "kv.h"
#include "model.h"
#include "pressure.h"
#include "reserve.h"
#include "sampler.h"
#include "session_parts.h"
#include "tok/tokenizer.h"
#include "../gguf/base/sl_platform.h"

#define SL_MSG 512

struct sl_model {
    sl_model_desc d;
    sl_model_params p;
    int32_t n_ctx, n_batch;
    sl_stream *st;
    sl_tok *tok;
    char tok_err[SL_MSG];       /* why the tokenizer did not load, if it did not */
    const sl_kern *k;
    sl_pool *pool;
    sl_forward fw;
    uint64_t model_bytes;
    uint64_t kv_bytes;          /* one session's cache (the reserve's figure) */
    char err[SL_MSG];
    /* prompt cache (session_state.c): the file a cache is tied to */
    char *path;
    uint64_t ident;             /* 0 until first needed */
    uint8_t *layer_mask;        /* p.layer_mask's copy (p points here), NULL: every layer */
};

struct sl_session {
    sl_model *m;
    sl_kv kv;
    sl_sampler smp;
    float *logits;              /* [n_vocab] after the last fed token */
    bool have_logits;
    int32_t *hist;              /* [n_ctx] tokens in the cache */
    sl_detok dt;
    sl_stats stats;
    double t_first_feed;        /* < 0: no feed pending a first token */
    int32_t first_len;          /* tokens of the first feed after a reset (n_keep = -1) */
    char err[SL_MSG];
    struct sl_pressure *pressure;   /* memory-pressure ladder (pressure.c), NULL when off */
    int32_t window;             /* its KV_WINDOW rung: positions kept past the sinks, 0 = none */
    uint64_t epoch;             /* bumped by every feed and reset (spec.c: is a pending draw still valid) */
    /* Prefix reuse: the leading positions whose rows are bitwise those a fresh
     * prefill of hist[0..fresh_len) computes — written by prompt feeds in whole
     * n_batch chunks starting at a multiple of n_batch (the chunks a fresh
     * prefill cuts). Decode rows (other batch shapes), shifted rows and rows
     * restored from files are not counted. Always <= kv.n_past. */
    int32_t fresh_len;
    bool refill;                /* keep_prefix: the next feed completes the "first prompt" (n_keep -1) */
    /* decode profile (sl_session_set_profile); prof.thread_ns NULL until first on */
    sl_forward_prof prof;
    bool prof_on;
    int64_t prof_tokens, prof_samples;
    double prof_fwd_ms;
};


static int model_fail(sl_model *m, int rc)
{
    if (m) snprintf(m->err, sizeof m->err, "%s", sl_last_error());
    return rc;
}

static int sess_fail(sl_session *s, int rc)
{
    snprintf(s->err, sizeof s->err, "%s", sl_last_error());
    return rc;
}

/* ---- model -------------------------------------------------------------- */

int sl_model_params_init_sized(sl_model_params *p, size_t struct_size)
{
    sl_model_params d;
    memset(&d, 0, sizeof d);
    d.max_pinned = -1;
    d.type_k = d.type_v = SL_GGML_F16;
    return sl_struct_init(p, struct_size, &d, sizeof d, SL_MODEL_PARAMS_MIN_SIZE, "sl_model_params");
}

int sl_model_open(sl_model **out, const char *path, const sl_model_params *pp)
{
    *out = NULL;
    sl_err_clear();
    sl_model_params p;
    sl_model_params_init(&p);
    if (pp && sl_struct_in(&p, sizeof p, pp, SL_MODEL_PARAMS_MIN_SIZE, "sl_model_params"))
        return SL_EINVAL;
    if (p.n_threads < 0 || p.n_ctx < 0 || p.n_batch < 0)
        return sl_err_set(SL_EINVAL, "model params: negative n_threads / n_ctx / n_batch");
    if (p.n_keep < -1)
        return sl_err_set(SL_EINVAL, "model params: n_keep %d (-1 = the first prompt, or >= 0)", p.n_keep);
    sl_model *m = calloc(1, sizeof *m);
    if (!m) return sl_err_set(SL_ENOMEM, "model: out of memory");
    m->p = p;
    if (!(m->path = strdup(path))) { free(m); return sl_err_set(SL_ENOMEM, "model: out of memory"); }
    if (p.layer_mask) {   /* a pipeline stage: the caller's array may go after open */
        if (p.n_layer_mask < 0 || !(m->layer_mask = malloc((size_t)p.n_layer_mask + 1))) {
            free(m->path); free(m);
            return sl_err_set(p.n_layer_mask < 0 ? SL_EINVAL : SL_ENOMEM, "model: layer mask of %d entries",
                              p.n_layer_mask);
        }
        memcpy(m->layer_mask, p.layer_mask, (size_t)p.n_layer_mask);
        m->p.layer_mask = m->layer_mask;
    }

    /* Metadata first: the planner needs our KV + arena sizes before it plans. */
    sl_gguf *g = NULL;
    int rc = sl_gguf_open_path(&g, path);
    if (rc) { free(m->path); free(m); return rc; }   /* message names the path */
    rc = sl_model_desc_load(&m->d, g);
    if (rc) { sl_gguf_close(g); free(m->layer_mask); free(m->path); free(m); return rc; }
    m->model_bytes = sl_gguf_total_tensor_bytes(g);
    if (sl_tok_create(&m->tok, g)) {
        snprintf(m->tok_err, sizeof m->tok_err, "%s", sl_last_error());
        m->tok = NULL;
    }
    sl_gguf_close(g);

    sl_reserve r;
    rc = sl_reserve_compute(&r, &m->d, &m->p);
    if (rc) goto fail;
    m->k = r.k;
    m->n_ctx = r.n_ctx;
    m->n_batch = r.n_batch;
    m->kv_bytes = r.kv_bytes;
    if ((rc = sl_pool_create(&m->pool, r.n_threads))) {
        rc = sl_err_set(rc, "thread pool of %d threads: %s", r.n_threads, sl_strerror(rc));
        goto fail;
    }

    sl_stream_config sc;
    sl_reserve_stream_config(&r, &m->p, &sc);
    rc = sl_stream_open(&m->st, path, &sc);
    if (rc) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", sl_stream_open_errmsg());
        rc = sl_err_set(rc, "%s", msg);
        m->st = NULL;
        goto fail;
    }
    rc = sl_forward_init(&m->fw, &m->d, m->st, m->k, m->pool, m->n_batch, m->n_ctx);
    if (rc) goto fail;
    const sl_stream_plan *sp = sl_stream_get_plan(m->st);
    m->fw.pregate = p.moe_pregate != SL_PREGATE_OFF && sp && sp->experts_split;
    *out = m;
    return 0;
fail:
    sl_model_close(m);
    return rc;
}

void sl_model_close(sl_model *m)
{
    if (!m) return;
    sl_forward_free(&m->fw);
    if (m->st) sl_stream_close(m->st);
    if (m->pool) sl_pool_destroy(m->pool);
    if (m->tok) sl_tok_destroy(m->tok);
    free(m->layer_mask);
    free(m->path);
    free(m);
}

const char *sl_model_errmsg(const sl_model *m)
{
    return m ? m->err : sl_last_error();
}

int sl_model_get_info_sized(const sl_model *m, sl_model_info *out, size_t size)
{
    sl_model_info full, *o = &full;
    const sl_model_desc *d = &m->d;
    memset(o, 0, sizeof *o);
    o->arch = d->arch_name;
    o->n_layer = d->n_layer; o->n_embd = d->n_embd; o->n_ff = d->n_ff;
    o->n_head = d->n_head; o->n_head_kv = d->n_head_kv; o->head_dim = d->head_dim;
    o->n_rot = d->n_rot; o->n_vocab = d->n_vocab; o->n_ctx_train = d->n_ctx_train;
    o->n_ctx = m->n_ctx; o->rope_base = d->rope_base; o->rms_eps = d->rms_eps;
    o->rope_neox = d->rope_neox; o->tied_output = d->tied_output;
    o->bos_id = m->tok ? sl_tok_bos(m->tok) : -1;
    o->eos_id = m->tok ? sl_tok_eos(m->tok) : -1;
    o->add_bos = m->tok ? sl_tok_add_bos(m->tok) : false;
    o->model_bytes = m->model_bytes;
    const sl_stream_plan *pl = sl_stream_get_plan(m->st);
    o->mode = pl ? pl->mode : 0;
    o->io = pl ? pl->io : 0;
    o->isa = m->k->name;
    o->n_threads = sl_pool_n_threads(m->pool);
    o->type_k = m->p.type_k; o->type_v = m->p.type_v;
    o->kv_pos_bytes = (uint64_t)d->n_layer * sl_kv_pos_bytes(d->kv_dim, m->p.type_k, m->p.type_v);
    o->kv_bytes = m->kv_bytes;
    return sl_struct_out(out, size, o, sizeof *o, SL_MODEL_INFO_MIN_SIZE, "sl_model_info");
}

void *sl_model_stream(const sl_model *m) { return m->st; }

static int need_tok(const sl_model *m)
{
    if (m->tok) return 0;
    return sl_err_set(SL_EUNSUPPORTED, "model has no usable tokenizer: %s", m->tok_err);
}

int sl_model_tokenize(sl_model *m, const char *text, size_t len, bool add_bos, bool parse_special,
                      int32_t *ids, int cap)
{
    int rc = need_tok(m);
    if (rc) return model_fail(m, rc);
    int64_t n = sl_tok_encode(m->tok, text, len, add_bos, parse_special, ids, cap);
    if (n < 0) return model_fail(m, (int)n);
    if (n > cap) return model_fail(m, sl_err_set(SL_ERANGE, "tokenize: %lld tokens > buffer of %d",
                                                 (long long)n, cap));
    return (int)n;
}

bool sl_model_token_is_eog(const sl_model *m, int32_t id)
{
    return m->tok && sl_tok_is_eog(m->tok, id);
}

int sl_model_token_text(const sl_model *m, int32_t id, char *buf, size_t cap)
{
    size_t len = 0;
    int rc = need_tok(m);
    if (rc) return rc;
    if (id < 0 || id >= sl_tok_n_vocab(m->tok))
        return sl_err_set(SL_EINVAL, "token id %d out of range", id);
    const char *t = sl_tok_text(m->tok, id, &len);
    if (!t || len + 1 > cap) return sl_err_set(SL_ERANGE, "token %d text does not fit", id);
    memcpy(buf, t, len);
    buf[len] = 0;
    return (int)len;
}

const char *sl_model_meta_str(const sl_model *m, const char *key)
{
    const char *s = NULL;
    uint64_t len;
    if (sl_gguf_get_str(sl_stream_gguf(m->st), key, &s, &len)) return NULL;
    return s;
}

int sl_model_token_piece(const sl_model *m, int32_t id, char *buf, size_t cap)
{
    int rc = need_tok(m);
    if (rc) return rc;
    size_t len = 0;
    rc = sl_tok_piece(m->tok, id, false, buf, cap, &len);
    return rc ? rc : (int)len;
}

/* ---- session ------------------------------------------------------------ */

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
                               m->p.type_v, cap);
    free(cap);
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
        return sess_fail(s, SL_EINVAL);
    if (!sp || sp->top_p < 0 || sp->min_p < 0 || sp->repeat_penalty < 0 || sp->temp != sp->temp)
        return sess_fail(s, sl_err_set(SL_EINVAL, "sampling: invalid parameters"));
    s->smp.p = *sp;
    sl_sampler_seed(&s->smp, sp->seed);
    return 0;
}

void sl_session_reset(sl_session *s)
{
    sl_kv_clear(&s->kv);
    s->epoch++;
    s->fresh_len = 0;
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
    s->kv.n_past = c;               /* rows past it are overwritten by the next feed */
    s->fresh_len = c;
    s->refill = true;
    s->epoch++;
    s->have_logits = false;
    s->t_first_feed = -1;
    sl_detok_init(&s->dt, false);
    s->stats.n_reused += c;
    return c;
}

/* Positions a context shift keeps: BOS, if the cache starts with it, plus
 * params.n_keep (-1: the first prompt), never more than the cache holds. */
static int32_t sink_len(const sl_session *s)
{
    const sl_model *m = s->m;
    int32_t keep = m->p.n_keep < 0 ? s->first_len : m->p.n_keep;
    if (m->p.n_keep >= 0 && s->kv.n_past > 0 && m->tok && s->hist[0] == sl_tok_bos(m->tok)) keep++;
    return keep > s->kv.n_past ? s->kv.n_past : keep;
}

static int shift(sl_session *s, int32_t keep, int32_t n_discard)
{
    int rc = sl_forward_kv_shift(&s->m->fw, &s->kv, keep, n_discard);
    if (rc) return rc;
    memmove(s->hist + keep, s->hist + keep + n_discard, (size_t)(s->kv.n_past - keep) * sizeof *s->hist);
    if (s->fresh_len > keep) s->fresh_len = keep;   /* the kept rows were re-rotated */
    s->stats.n_ctx_shift++;
    s->stats.n_ctx_dropped += n_discard;
    return 0;
}

/* Positions the cache may hold: n_ctx, or the sinks plus the pressure window. */
static int64_t room(const sl_session *s, int32_t keep)
{
    return s->window && (int64_t)keep + s->window < s->kv.n_ctx ? (int64_t)keep + s->window : s->kv.n_ctx;
}

/* Context shift (llama.cpp's): while n new tokens do not fit, keep the
 * sinks (sink_len) and drop the older half of the rest. A pressure window
 * shifts the same way with sinks + window as the context, also when
 * params.context_shift is off (the ladder's last rung is a context shift).
 * Returns 0 also when it cannot make room (the caller reports SL_ECTX; a
 * single feed longer than the window is let through up to n_ctx). */
static int make_room(sl_session *s, int n)
{
    if (!s->m->p.context_shift && !s->window) return 0;
    for (;;) {
        int32_t keep = sink_len(s);
        if ((int64_t)s->kv.n_past + n <= room(s, keep)) return 0;
        int32_t n_discard = (s->kv.n_past - keep) / 2;
        if (n_discard < 1) return 0;
        int rc = shift(s, keep, n_discard);
        if (rc) return rc;
    }
}

int sl_session_kv_window(sl_session *s, int32_t n)
{
    if (n < 0) return sess_fail(s, sl_err_set(SL_EINVAL, "kv window: %d positions", n));
    s->window = n;
    if (!n) return 0;
    /* the halvings make_room would do with the window as the context, as one
     * shift: the same rows are kept, rotated once */
    int32_t keep = sink_len(s), held = s->kv.n_past - keep;
    while (held > n) held -= held / 2;
    int rc = held < s->kv.n_past - keep ? shift(s, keep, s->kv.n_past - keep - held) : 0;
    if (rc) { s->window = 0; return sess_fail(s, rc); }
    s->stats.pressure_kv_released += sl_kv_release(&s->kv);
    return 0;
}

/* One forward over ids with timing and streamer stats accounting. */
static int run(sl_session *s, const int32_t *ids, int n, int mode, float *logits, bool decode)
{
    sl_model *m = s->m;
    if (n < 0 || (n > 0 && !ids)) return sess_fail(s, sl_err_set(SL_EINVAL, "feed: bad token array"));
    if (n == 0) return 0;
    s->epoch++;
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->d.n_vocab)
            return sess_fail(s, sl_err_set(SL_EINVAL, "token id %d at index %d out of range (vocab %d)",
                                           ids[i], i, m->d.n_vocab));
    sl_pressure_tick(s);   /* between forward passes: nothing acquired; may set a KV window */
    int rc = make_room(s, n);
    if (rc) return sess_fail(s, rc);
    if ((int64_t)s->kv.n_past + n > s->kv.n_ctx)
        return sess_fail(s, sl_err_set(SL_ECTX, "context full: %d positions used + %d new > n_ctx %d",
                                       s->kv.n_past, n, s->kv.n_ctx));
    if (s->kv.n_past == 0 || s->refill) { s->first_len = s->kv.n_past + n; s->refill = false; }
    sl_stream_stats a, b;
    sl_stream_get_stats(m->st, &a);
    const uint64_t pg_chosen = m->fw.pg_chosen, pg_right = m->fw.pg_right;
    double t0 = sl_now_ms();
    if (!decode && s->t_first_feed < 0) s->t_first_feed = t0;
    int32_t past = s->kv.n_past;
    if (s->fresh_len > past) s->fresh_len = past;   /* rows from past on are rewritten */
    bool prof = decode && s->prof_on;
    if (prof) {
        m->fw.prof = &s->prof;
        sl_pool_set_profile(m->pool, s->prof.thread_ns, SL_PROF_STRIDE);
    }
    rc = sl_forward_run(&m->fw, &s->kv, ids, n, mode, logits);
    double t1 = sl_now_ms();
    if (prof) {
        sl_pool_set_profile(m->pool, NULL, 0);
        m->fw.prof = NULL;
        if (!rc) { s->prof_tokens += n; s->prof_fwd_ms += t1 - t0; }
    }
    sl_stream_get_stats(m->st, &b);
    if (rc) {
        s->kv.n_past = past;     /* a failed chunk's cache rows are not trusted */
        s->have_logits = false;
        return sess_fail(s, rc);
    }
    memcpy(s->hist + past, ids, (size_t)n * sizeof *ids);
    int32_t nb = m->n_batch;
    if (s->fresh_len == past && past % nb == 0) s->fresh_len = past + n / nb * nb;
    if (decode) { s->stats.n_decode += n; s->stats.decode_ms += t1 - t0; }
    else { s->stats.n_prompt += n; s->stats.prompt_ms += t1 - t0; }
    double stall = b.stall_ms - a.stall_ms;
    s->stats.stall_ms += stall;
    s->stats.bytes_read += b.bytes_read - a.bytes_read;
    s->stats.compute_ms += (t1 - t0) - stall;
    s->stats.expert_hits += b.expert_hits - a.expert_hits;
    s->stats.expert_misses += b.expert_misses - a.expert_misses;
    s->stats.expert_bytes_read += b.expert_bytes_read - a.expert_bytes_read;
    s->stats.expert_stall_ms += b.expert_stall_ms - a.expert_stall_ms;
    s->stats.expert_prefetched += b.expert_prefetched - a.expert_prefetched;
    s->stats.expert_prefetch_used += b.expert_prefetch_used - a.expert_prefetch_used;
    s->stats.pregate_chosen += m->fw.pg_chosen - pg_chosen;
    s->stats.pregate_guessed += m->fw.pg_right - pg_right;
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
    if (!logits) return sess_fail(s, sl_err_set(SL_EINVAL, "eval: logits buffer is NULL"));
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
    int rc = need_tok(m);
    if (rc) return sess_fail(s, rc);
    size_t len = strlen(text);
    bool bos = s->kv.n_past == 0;
    int64_t cap = (int64_t)len + 8;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids) return sess_fail(s, sl_err_set(SL_ENOMEM, "tokenize: out of memory"));
    int64_t n = sl_tok_encode(m->tok, text, len, bos, parse_special, ids, cap);
    if (n > cap) {   /* cannot happen for these tokenizers, but be safe */
        free(ids);
        return sess_fail(s, sl_err_set(SL_ERANGE, "tokenize: %lld tokens for %zu bytes", (long long)n, len));
    }
    if (n < 0) { free(ids); return sess_fail(s, (int)n); }
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
        return sess_fail(s, sl_err_set(SL_EINVAL, "sample: no logits yet (feed a prompt first)"));
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
        return sess_fail(s, sl_err_set(SL_ECTX, "context full: %d of %d positions used", s->kv.n_past,
                                       s->kv.n_ctx));
    int rc = sl_session_sample(s, token);
    if (rc) return rc;
    return sl_session_accept(s, *token);
}

int sl_session_detok(sl_session *s, int32_t id, char *buf, size_t cap)
{
    int rc = need_tok(s->m);
    if (rc) return sess_fail(s, rc);
    if (cap < 1) return sess_fail(s, sl_err_set(SL_ERANGE, "detok: buffer too small"));
    size_t len = 0;
    rc = sl_detok_push(&s->dt, s->m->tok, id, buf, cap - 1, &len);
    if (rc) return sess_fail(s, rc);
    buf[len] = '\0';
    return (int)len;
}

int sl_session_set_profile(sl_session *s, bool on)
{
    if (!s) return sl_err_set(SL_EINVAL, "set_profile: session is NULL");
    if (!on) { s->prof_on = false; return 0; }
    if (!s->prof.thread_ns) {
        int rc = sl_forward_prof_alloc(&s->prof, sl_pool_n_threads(s->m->pool));
        if (rc) return sess_fail(s, sl_err_set(rc, "profile: out of memory"));
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
    st.pressure_kv_window = s->window ? (int32_t)room(s, sink_len(s)) : 0;   /* a state, not a counter */
    return sl_struct_out(out, size, &st, sizeof st, SL_STATS_MIN_SIZE, "sl_stats");
}

void sl_session_reset_stats(sl_session *s)
{
    memset(&s->stats, 0, sizeof s->stats);
}

/* ---- pipeline stages (sluice.h) -------------------------------------------- */

int sl_session_embed(sl_session *s, const int32_t *ids, int n, float *hidden)
{
    if (s->m->p.no_head) return sess_fail(s, sl_err_set(SL_EINVAL, "embed: this stage has no embedding (no_head)"));
    int rc = sl_forward_embed(&s->m->fw, ids, n, hidden);
    return rc ? sess_fail(s, rc) : 0;
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
    if (rc) return sess_fail(s, rc);
    double stall = b.stall_ms - a.stall_ms;
    s->stats.stall_ms += stall;
    s->stats.bytes_read += b.bytes_read - a.bytes_read;
    s->stats.compute_ms += ms - stall;
    s->stats.expert_hits += b.expert_hits - a.expert_hits;
    s->stats.expert_misses += b.expert_misses - a.expert_misses;
    s->stats.expert_bytes_read += b.expert_bytes_read - a.expert_bytes_read;
    s->stats.expert_stall_ms += b.expert_stall_ms - a.expert_stall_ms;
    return 0;
}

int sl_session_head(sl_session *s, const float *hidden)
{
    if (s->m->p.no_head) return sess_fail(s, sl_err_set(SL_EINVAL, "head: this stage has no lm head (no_head)"));
    if (!hidden) return sess_fail(s, sl_err_set(SL_EINVAL, "head: hidden row is NULL"));
    s->epoch++;
    s->have_logits = false;
    sl_stream_stats a, b;
    sl_stream_get_stats(s->m->st, &a);
    double t0 = sl_now_ms();
    int rc = sl_forward_head(&s->m->fw, hidden, s->logits);
    double ms = sl_now_ms() - t0;
    sl_stream_get_stats(s->m->st, &b);
    if (rc) return sess_fail(s, rc);
    s->stats.stall_ms += b.stall_ms - a.stall_ms;
    s->stats.bytes_read += b.bytes_read - a.bytes_read;
    s->stats.compute_ms += ms - (b.stall_ms - a.stall_ms);
    s->have_logits = true;
    return 0;
}

int sl_session_commit(sl_session *s, const int32_t *ids, int n)
{
    if (n < 0 || (n > 0 && !ids)) return sess_fail(s, sl_err_set(SL_EINVAL, "commit: bad token array"));
    if ((int64_t)s->kv.n_past + n > s->kv.n_ctx)
        return sess_fail(s, sl_err_set(SL_ECTX, "commit: %d positions used + %d > n_ctx %d", s->kv.n_past, n,
                                       s->kv.n_ctx));
    if (s->kv.n_past == 0) s->first_len = n;
    memcpy(s->hist + s->kv.n_past, ids, (size_t)n * sizeof *ids);
    s->kv.n_past += n;
    s->epoch++;
    return 0;
}

/* ---- internal: state access for session_state.c ------------------------- */

void sl_session_parts_get(sl_session *s, sl_session_parts *p)
{
    p->d = &s->m->d;
    p->model_path = s->m->path;
    p->model_ident = &s->m->ident;
    const sl_gguf *g = sl_stream_gguf(s->m->st);
    p->data_offset = sl_gguf_data_offset(g);
    p->file_size = sl_gguf_file_size(g);
    p->kv = &s->kv;
    p->smp = &s->smp;
    p->logits = s->logits;
    p->have_logits = &s->have_logits;
    p->hist = s->hist;
    p->t_first_feed = &s->t_first_feed;
    p->stats = &s->stats;
    p->st = s->m->st;
    p->n_ctx = s->m->n_ctx;
    p->pressure = &s->pressure;
    p->err = s->err;
    p->err_cap = sizeof s->err;
}

/* ---- hooks for batched decode (batch.c; session_batch.h) ------------------ */

sl_forward *sl_model_batch_forward(sl_model *m) { return &m->fw; }
sl_kv *sl_session_batch_kv(sl_session *s) { return &s->kv; }
float *sl_session_batch_logits(sl_session *s) { return s->logits; }
sl_model *sl_session_batch_model(sl_session *s) { return s->m; }
int32_t sl_session_batch_n_vocab(const sl_session *s) { return s->m->d.n_vocab; }
bool sl_session_batch_has_logits(const sl_session *s) { return s->have_logits; }
sl_sampler *sl_session_batch_sampler(sl_session *s) { return &s->smp; }
int32_t *sl_session_batch_hist(sl_session *s) { return s->hist; }
uint64_t sl_session_batch_epoch(const sl_session *s) { return s->epoch; }
sl_forward_prof *sl_session_batch_prof(sl_session *s) { return s->prof_on ? &s->prof : NULL; }

void sl_session_batch_prof_done(sl_session *s, int n, double ms)
{
    s->prof_tokens += n;
    s->prof_fwd_ms += ms;
}

void sl_session_batch_fed(sl_session *s, const int32_t *ids, int n, bool ok, double ms, double stall_ms)
{
    s->epoch++;
    int32_t past = ok ? s->kv.n_past - n : s->kv.n_past;   /* rows from past on were written */
    if (s->fresh_len > past) s->fresh_len = past;
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
