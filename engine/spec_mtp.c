/* MTP drafts (spec_mtp.h). The block's cache is valid over positions
 * [lo, hi): a pass that does not continue it (a reset, a rollback before lo,
 * a gap such as a restored prompt cache) starts it over at its first row, so
 * the block attends only over rows it computed (kv base = lo). */
#include "spec_mtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"
#include "../gguf/gguf.h"
#include "forward_mtp.h"
#include "model_handle.h"
#include "../gguf/base/sl_platform.h"

struct sl_mtp {
    sl_session *s;
    sl_forward *f;
    sl_kv kv;                   /* the block's cache (forward_mtp.h) */
    int32_t lo, hi;             /* its valid positions */
    float *h;                   /* [n_batch][E] the hook's rows: the target's hidden states of the last pass */
    int32_t h_pos0, h_n;        /* their positions */
    float *prev;                /* [E] hidden state of position prev_pos (-1: none) */
    int32_t prev_pos;
    float *hin, *hout, *cat;    /* [n_batch][E], [n_batch][E], [n_batch][2E] */
    float *logits;              /* [n_vocab] */
    double follow_ms;
};

static void set_lo(sl_mtp *mt, int32_t lo)
{
    const sl_model_desc *d = mt->f->d;
    mt->lo = lo;
    for (int32_t l = d->n_layer; l < mt->kv.n_layer; l++) mt->kv.base[l] = lo;
}

/* The hook: the block's rows of the pass's tokens, each with the hidden
 * state before it (the previous pass's last, then the pass's own). */
static int mtp_follow(void *ctx, const int32_t *ids, const float *h, int32_t n, int32_t pos0)
{
    sl_mtp *mt = ctx;
    const int32_t E = mt->f->d->n_embd;
    mt->h_pos0 = pos0;
    mt->h_n = n;
    if (pos0 < mt->lo || pos0 > mt->hi) set_lo(mt, pos0);
    if (mt->prev_pos == pos0 - 1) memcpy(mt->hin, mt->prev, (size_t)E * sizeof *h);
    else memset(mt->hin, 0, (size_t)E * sizeof *h);   /* unknown (position 0: none) */
    memcpy(mt->hin + E, h, (size_t)(n - 1) * (size_t)E * sizeof *h);
    mt->kv.n_past = pos0;
    const double t0 = sl_now_ms();
    int rc = sl_forward_mtp(mt->f, &mt->kv, ids, mt->hin, n, mt->cat, mt->hout, NULL);
    mt->follow_ms += sl_now_ms() - t0;
    if (rc) { mt->hi = mt->lo; mt->prev_pos = -1; return rc; }
    mt->hi = pos0 + n;
    memcpy(mt->prev, h + (int64_t)(n - 1) * E, (size_t)E * sizeof *h);
    mt->prev_pos = pos0 + n - 1;
    return 0;
}

int sl_mtp_create(sl_mtp **out, sl_session *s)
{
    *out = NULL;
    sl_forward *f = &s->m->fw;
    const sl_model_desc *d = f->d;
    if (d->n_layer_nextn < 1)
        return sl_err_set(SL_EUNSUPPORTED, "spec mtp: the %s file has no NextN (MTP) block (nextn_predict_layers)",
                          d->arch_name);
    /* llama.cpp reads these where a file has them; none of the four families' converters writes them */
    static const char *const own[] = { "nextn.embed_tokens.weight", "nextn.shared_head_head.weight" };
    for (int i = 0; i < 2; i++) {
        char name[96];
        snprintf(name, sizeof name, "blk.%d.%s", d->n_layer, own[i]);
        if (sl_gguf_find_tensor(sl_stream_gguf(f->st), name))
            return sl_err_set(SL_EUNSUPPORTED, "spec mtp: tensor '%s' (the block's own embedding or head) is not "
                              "supported", name);
    }
    sl_model_info mi;
    sl_model_get_info(s->m, &mi);
    if (mi.mode != SL_MODE_RESIDENT && !s->m->p.keep_nextn)
        return sl_err_set(SL_EINVAL, "spec mtp: the model streams without its MTP block (open it with keep_nextn)");
    if (f->n_hooks >= SL_FORWARD_MAX_HOOKS) return sl_err_set(SL_EBUSY, "spec mtp: %d MTP sessions on one model",
                                                              SL_FORWARD_MAX_HOOKS);
    for (int32_t i = 0; i < f->n_hooks; i++)
        if (f->hooks[i].kv == &s->kv) return sl_err_set(SL_EBUSY, "spec mtp: the session has an MTP spec already");
    sl_mtp *mt = calloc(1, sizeof *mt);
    if (!mt) return sl_err_set(SL_ENOMEM, "spec mtp: out of memory");
    const size_t E = (size_t)d->n_embd, B = (size_t)f->n_batch;
    mt->s = s;
    mt->f = f;
    mt->prev_pos = -1;
    mt->h = malloc(B * E * sizeof(float));
    mt->hin = malloc(B * E * sizeof(float));
    mt->hout = malloc(B * E * sizeof(float));
    mt->cat = malloc(2 * B * E * sizeof(float));
    mt->prev = malloc(E * sizeof(float));
    mt->logits = malloc((size_t)d->n_vocab * sizeof(float));
    int rc = 0;
    if (!mt->h || !mt->hin || !mt->hout || !mt->cat || !mt->prev || !mt->logits)
        rc = sl_err_set(SL_ENOMEM, "spec mtp: out of memory");
    if (!rc) rc = sl_forward_mtp_kv_init(d, &s->kv, &mt->kv);
    if (rc) { sl_mtp_destroy(mt); return rc; }
    set_lo(mt, 0);
    f->hooks[f->n_hooks++] = (sl_forward_hook){ .kv = &s->kv, .fn = mtp_follow, .ctx = mt, .h = mt->h };
    *out = mt;
    return 0;
}

void sl_mtp_destroy(sl_mtp *mt)
{
    if (!mt) return;
    sl_forward *f = mt->f;
    for (int32_t i = 0; i < f->n_hooks; i++)
        if (f->hooks[i].ctx == mt) {
            f->hooks[i] = f->hooks[--f->n_hooks];
            break;
        }
    if (mt->kv.cap) sl_kv_free(&mt->kv);
    free(mt->h); free(mt->hin); free(mt->hout); free(mt->cat); free(mt->prev); free(mt->logits);
    free(mt);
}

static int32_t argmax(const float *x, int32_t n)
{
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

int sl_mtp_draft(sl_mtp *mt, int32_t tok, int32_t pos, int32_t k, int32_t *out)
{
    const int32_t E = mt->f->d->n_embd, V = mt->f->d->n_vocab;
    if (mt->prev_pos != pos - 1 || pos < mt->lo || pos > mt->hi) return 0;
    if (k > mt->kv.n_ctx - pos) k = mt->kv.n_ctx - pos;
    /* the rows it writes past hi are overwritten by the verify pass */
    memcpy(mt->hin, mt->prev, (size_t)E * sizeof(float));
    int32_t n = 0, t = tok;
    while (n < k) {
        mt->kv.n_past = pos + n;
        int rc = sl_forward_mtp(mt->f, &mt->kv, &t, mt->hin, 1, mt->cat, mt->hout, mt->logits);
        if (rc) { mt->hi = pos; return rc; }
        t = out[n++] = argmax(mt->logits, V);
        memcpy(mt->hin, mt->hout, (size_t)E * sizeof(float));
    }
    if (mt->hi > pos) mt->hi = pos;   /* drafted rows stand until the pass rewrites them */
    return n;
}

void sl_mtp_keep(sl_mtp *mt, int32_t pos0, int32_t last)
{
    const int32_t E = mt->f->d->n_embd;
    if (mt->hi > last + 1) mt->hi = last + 1;
    if (mt->h_pos0 != pos0 || last < pos0 || last >= pos0 + mt->h_n) return;   /* replayed: set by the hook */
    memcpy(mt->prev, mt->h + (int64_t)(last - pos0) * E, (size_t)E * sizeof(float));
    mt->prev_pos = last;
}

double sl_mtp_follow_ms(const sl_mtp *mt) { return mt->follow_ms; }
