/* Batched decode (sluice.h "batched decode"): the members' next tokens as the
 * rows of one forward pass (sl_forward_run_batch), each row in its own
 * session's cache. */
#include "session_obj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/base/sl_platform.h"

struct sl_batch {
    sl_model *m;
    sl_forward *fw;             /* the model's */
    int32_t max_seqs, n_vocab;
    int32_t n;                  /* members */
    sl_session **seq;           /* [max_seqs] join order */
    sl_forward_seq *rows;       /* [n_batch] one pass's sequences */
    float *logits;              /* [n_batch][n_vocab] */
    sl_batch_stats stats;
    char err[512];
};


static int batch_fail(sl_batch *b, int rc)
{
    snprintf(b->err, sizeof b->err, "%s", sl_last_error());
    return rc;
}

int sl_batch_params_init_sized(sl_batch_params *p, size_t struct_size)
{
    sl_batch_params d;
    memset(&d, 0, sizeof d);
    return sl_struct_init(p, struct_size, &d, sizeof d, SL_BATCH_PARAMS_MIN_SIZE, "sl_batch_params");
}

int sl_batch_create(sl_batch **out, sl_model *m, const sl_batch_params *pp)
{
    if (!out || !m) return sl_err_set(SL_EINVAL, "batch: NULL argument");
    *out = NULL;
    sl_batch_params p;
    sl_batch_params_init(&p);
    if (pp && sl_struct_in(&p, sizeof p, pp, SL_BATCH_PARAMS_MIN_SIZE, "sl_batch_params"))
        return SL_EINVAL;
    sl_forward *fw = &m->fw;
    int32_t n_vocab = fw->d->n_vocab;
    if (p.max_seqs < 0 || p.max_seqs > (1 << 20))
        return sl_err_set(SL_EINVAL, "batch: max_seqs %d out of range (0..%d)", p.max_seqs, 1 << 20);
    sl_batch *b = calloc(1, sizeof *b);
    if (!b) return sl_err_set(SL_ENOMEM, "batch: out of memory");
    b->m = m;
    b->fw = fw;
    b->n_vocab = n_vocab;
    b->max_seqs = p.max_seqs ? p.max_seqs : fw->n_batch;
    b->seq = calloc((size_t)b->max_seqs, sizeof *b->seq);
    b->rows = calloc((size_t)fw->n_batch, sizeof *b->rows);
    b->logits = malloc((size_t)fw->n_batch * (size_t)n_vocab * sizeof(float));
    if (!b->seq || !b->rows || !b->logits) {
        sl_batch_destroy(b);
        return sl_err_set(SL_ENOMEM, "batch: cannot allocate for %d members (%d x %d logits)",
                          p.max_seqs, fw->n_batch, n_vocab);
    }
    *out = b;
    return 0;
}

void sl_batch_destroy(sl_batch *b)
{
    if (!b) return;
    free(b->seq);
    free(b->rows);
    free(b->logits);
    free(b);
}

const char *sl_batch_errmsg(const sl_batch *b) { return b ? b->err : sl_last_error(); }

static int find(const sl_batch *b, const sl_session *s)
{
    for (int32_t i = 0; i < b->n; i++)
        if (b->seq[i] == s) return i;
    return -1;
}

int sl_batch_add(sl_batch *b, sl_session *s)
{
    if (!s) return batch_fail(b, sl_err_set(SL_EINVAL, "batch add: NULL session"));
    if (s->m != b->m)
        return batch_fail(b, sl_err_set(SL_EINVAL, "batch add: the session belongs to another model"));
    if (find(b, s) >= 0)
        return batch_fail(b, sl_err_set(SL_EINVAL, "batch add: the session is already a member"));
    if (!s->have_logits)
        return batch_fail(b, sl_err_set(SL_EINVAL, "batch add: the session has no logits (feed a prompt first)"));
    if (b->n >= b->max_seqs)
        return batch_fail(b, sl_err_set(SL_ERANGE, "batch add: %d members already (max_seqs)", b->n));
    b->seq[b->n++] = s;
    return 0;
}

int sl_batch_remove(sl_batch *b, sl_session *s)
{
    int i = find(b, s);
    if (i < 0) return batch_fail(b, sl_err_set(SL_ENOENT, "batch remove: the session is not a member"));
    memmove(b->seq + i, b->seq + i + 1, (size_t)(b->n - i - 1) * sizeof *b->seq);
    b->n--;
    return 0;
}

int sl_batch_n_seqs(const sl_batch *b) { return b->n; }

sl_session *sl_batch_session(const sl_batch *b, int i)
{
    return i >= 0 && i < b->n ? b->seq[i] : NULL;
}

/* Members [i0, i0+n) in one pass. */
static int pass(sl_batch *b, int32_t i0, int32_t n, const int32_t *tokens)
{
    sl_stream *st = b->m->st;
    for (int32_t j = 0; j < n; j++)
        b->rows[j] = (sl_forward_seq){ .kv = &b->seq[i0 + j]->kv, .ids = tokens + i0 + j,
                                       .n = 1, .mode = SL_LOGITS_LAST };
    sl_stream_stats a, z;
    sl_stream_get_stats(st, &a);
    bool prof = sl_session_prof_begin(b->seq[i0]);   /* the lead member's profile, if on */
    double t0 = sl_now_ms();
    int rc = sl_forward_run_batch(b->fw, b->rows, n, b->logits);
    double ms = sl_now_ms() - t0;
    if (prof) sl_session_prof_end(b->seq[i0], rc, n, ms);
    sl_stream_get_stats(st, &z);
    double stall = z.stall_ms - a.stall_ms;
    for (int32_t j = 0; j < n; j++) {
        sl_session *s = b->seq[i0 + j];
        if (!rc)
            memcpy(s->logits, b->logits + (size_t)j * (size_t)b->n_vocab,
                   (size_t)b->n_vocab * sizeof(float));
        sl_session_fed(s, tokens + i0 + j, 1, rc == 0, ms, stall);
    }
    b->stats.n_passes++;
    b->stats.pass_ms += ms;
    b->stats.stall_ms += stall;
    b->stats.bytes_read += z.bytes_read - a.bytes_read;
    if (rc) return batch_fail(b, rc);
    b->stats.n_rows += n;
    return 0;
}

int sl_batch_accept(sl_batch *b, const int32_t *tokens)
{
    if (b->n == 0) return 0;
    if (!tokens) return batch_fail(b, sl_err_set(SL_EINVAL, "batch accept: NULL tokens"));
    for (int32_t i = 0; i < b->n; i++) {
        const sl_kv *kv = &b->seq[i]->kv;
        if (tokens[i] < 0 || tokens[i] >= b->n_vocab)
            return batch_fail(b, sl_err_set(SL_EINVAL, "batch member %d: token id %d out of range (vocab %d)",
                                            i, tokens[i], b->n_vocab));
        if (kv->n_past >= kv->n_ctx)
            return batch_fail(b, sl_err_set(SL_ECTX, "batch member %d: context full (%d of %d positions)",
                                            i, kv->n_past, kv->n_ctx));
    }
    for (int32_t i0 = 0; i0 < b->n; i0 += b->fw->n_batch) {
        int32_t n = b->n - i0 < b->fw->n_batch ? b->n - i0 : b->fw->n_batch;
        int rc = pass(b, i0, n, tokens);
        if (rc) return rc;
    }
    return 0;
}

int sl_batch_step(sl_batch *b, int32_t *tokens)
{
    if (!tokens) return batch_fail(b, sl_err_set(SL_EINVAL, "batch step: NULL tokens"));
    for (int32_t i = 0; i < b->n; i++) {
        const sl_kv *kv = &b->seq[i]->kv;
        if (kv->n_past >= kv->n_ctx)   /* checked before any sampler moves */
            return batch_fail(b, sl_err_set(SL_ECTX, "batch member %d: context full (%d of %d positions)",
                                            i, kv->n_past, kv->n_ctx));
    }
    for (int32_t i = 0; i < b->n; i++) {
        int rc = sl_session_sample(b->seq[i], &tokens[i]);
        if (rc) return batch_fail(b, sl_err_set(rc, "batch member %d: %s", i, sl_session_errmsg(b->seq[i])));
    }
    return sl_batch_accept(b, tokens);
}

int sl_batch_get_stats_sized(const sl_batch *b, sl_batch_stats *out, size_t size)
{
    return sl_struct_out(out, size, &b->stats, sizeof b->stats, SL_BATCH_STATS_MIN_SIZE, "sl_batch_stats");
}
