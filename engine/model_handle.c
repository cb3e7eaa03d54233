/* The model handle (sluice.h "model"): sl_model_open reads the description
 * and tokenizer, sizes the reserve, then opens the streamer, the thread pool
 * and the forward pass that every session of the model shares; the model's
 * accessors and tokenizer calls. */
#include "model_handle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/gguf.h"
#include "../gguf/base/sl_internal.h"
#include "model_rows8.h"
#include "reserve.h"

static int model_fail(sl_model *m, int rc)
{
    if (m) snprintf(m->err, sizeof m->err, "%s", sl_last_error());
    return rc;
}

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
    if (p.rec_snapshots < 0 || p.rec_snapshots > 4096)
        return sl_err_set(SL_EINVAL, "model params: rec_snapshots %d (0..4096)", p.rec_snapshots);
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
    sl_reserve_add_tok(&r, m->tok);
    m->k = r.k;
    m->n_ctx = r.n_ctx;
    m->n_batch = r.n_batch;
    m->kv_bytes = r.kv_bytes;
    m->kv_pos_bytes = r.kv_pos_bytes;
    if ((rc = sl_pool_create(&m->pool, r.n_threads))) {
        rc = sl_err_set(rc, "thread pool of %d threads: %s", r.n_threads, sl_strerror(rc));
        goto fail;
    }

    sl_stream_config sc;
    sl_reserve_stream_config(&r, &m->p, &sc);
    sl_rows8_policy r8 = { .d = &m->d, .k = m->k };
    sc.rows8 = sl_model_rows8_pick;
    sc.rows8_ctx = &r8;
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
    o->kv_pos_bytes = m->kv_pos_bytes;
    o->kv_bytes = m->kv_bytes;
    return sl_struct_out(out, size, o, sizeof *o, SL_MODEL_INFO_MIN_SIZE, "sl_model_info");
}

void *sl_model_stream(const sl_model *m) { return m->st; }

int sl_model_need_tok(const sl_model *m)
{
    if (m->tok) return 0;
    return sl_err_set(SL_EUNSUPPORTED, "model has no usable tokenizer: %s", m->tok_err);
}

static int tokenize_result(sl_model *m, int64_t n, int cap)
{
    if (n < 0) return model_fail(m, (int)n);
    if (n > cap) return model_fail(m, sl_err_set(SL_ERANGE, "tokenize: %lld tokens > buffer of %d",
                                                 (long long)n, cap));
    return (int)n;
}

int sl_model_tokenize(sl_model *m, const char *text, size_t len, bool add_bos, bool parse_special,
                      int32_t *ids, int cap)
{
    int rc = sl_model_need_tok(m);
    if (rc) return model_fail(m, rc);
    return tokenize_result(m, sl_tok_encode(m->tok, text, len, add_bos, parse_special, ids, cap), cap);
}

int sl_model_tokenize_plain(sl_model *m, const char *text, size_t len, bool add_bos,
                            const size_t *plain, size_t n_plain, int32_t *ids, int cap)
{
    int rc = sl_model_need_tok(m);
    if (rc) return model_fail(m, rc);
    return tokenize_result(m, sl_tok_encode_plain(m->tok, text, len, add_bos, plain, n_plain, ids, cap), cap);
}

bool sl_model_token_is_eog(const sl_model *m, int32_t id)
{
    return m->tok && sl_tok_is_eog(m->tok, id);
}

int sl_model_token_text(const sl_model *m, int32_t id, char *buf, size_t cap)
{
    size_t len = 0;
    int rc = sl_model_need_tok(m);
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
    int rc = sl_model_need_tok(m);
    if (rc) return rc;
    size_t len = 0;
    rc = sl_tok_piece(m->tok, id, false, buf, cap, &len);
    return rc ? rc : (int)len;
}