/* The NextN / MTP block (forward_mtp.h). Its unit is the first NextN layer
 * (d->n_layer); its decoder layer runs through sl_forward_layer like any
 * other, against the block's own cache. */
#include "forward_mtp.h"

#include <stdlib.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"
#include "forward.h"
#include "forward_layer.h"
#include "forward_ops.h"

int sl_forward_mtp_kv_init(const sl_model_desc *d, const sl_kv *like, sl_kv *kv)
{
    const int32_t nl = d->n_layer + d->n_layer_nextn;
    int32_t *cap = calloc((size_t)nl, sizeof *cap);
    if (!cap) return sl_err_set(SL_ENOMEM, "MTP cache: out of memory");
    for (int32_t l = d->n_layer; l < nl; l++) cap[l] = like->n_ctx;
    int rc = sl_kv_init_layers(kv, nl, like->n_ctx, like->n_head_kv, like->head_dim, like->type_k, like->type_v, cap);
    free(cap);
    return rc;
}

static int mtp_block(sl_forward *f, sl_kv *kv, const sl_stream_view *v, int32_t l, const int32_t *ids,
                     const float *h, int32_t n, float *cat, float *h_out)
{
    const sl_model_desc *d = f->d;
    const int32_t E = d->n_embd;
    const sl_stream_tensor *eh, *en, *hn, *sn = NULL;
    int rc;
    if ((rc = sl_forward_find(v, l, "nextn.eh_proj.weight", &eh)) ||
        (rc = sl_forward_find(v, l, "nextn.enorm.weight", &en)) ||
        (rc = sl_forward_find(v, l, "nextn.hnorm.weight", &hn)))
        return rc;
    if (sl_forward_find(v, l, "nextn.shared_head_norm.weight", &sn)) sn = NULL;   /* optional */
    if ((rc = sl_forward_embed(f, ids, n, f->x))) return rc;
    for (int32_t i = 0; i < n; i++) {   /* [enorm(e), hnorm(h)] */
        float *c = cat + (int64_t)i * 2 * E;
        f->k->rmsnorm(c, f->x + (int64_t)i * E, en->data, E, d->rms_eps);
        f->k->rmsnorm(c + E, h + (int64_t)i * E, hn->data, E, d->rms_eps);
    }
    sl_act_cache ac = { 0 };
    if ((rc = sl_forward_mm(f, &ac, cat, n, eh, f->x, E, SL_PROF_MV_O))) return rc;
    sl_forward_seq one = { .kv = kv, .ids = ids, .n = n, .mode = SL_LOGITS_LAST };
    if ((rc = sl_forward_layer(f, &one, 1, l, v, n))) return rc;
    const float *w = sn ? sn->data : f->out_norm;
    for (int32_t i = 0; i < n; i++)
        f->k->rmsnorm(h_out + (int64_t)i * E, f->x + (int64_t)i * E, w, E, d->rms_eps);
    return 0;
}

int sl_forward_mtp(sl_forward *f, sl_kv *kv, const int32_t *ids, const float *h, int32_t n, float *cat,
                   float *h_out, float *logits)
{
    const sl_model_desc *d = f->d;
    const int32_t l = d->n_layer;
    if (d->n_layer_nextn < 1) return sl_err_set(SL_EUNSUPPORTED, "%s: the file has no NextN (MTP) block", d->arch_name);
    if (kv->n_layer != l + d->n_layer_nextn || kv->cap[l] < 1 || n < 1 || n > f->n_batch ||
        (int64_t)kv->n_past + n > kv->n_ctx)
        return sl_err_set(SL_EINVAL, "MTP block: %d rows at %d (cache of %d layers, %d positions; n_batch %d)", n,
                          kv->n_past, kv->n_layer, kv->n_ctx, f->n_batch);
    sl_stream_view v;
    int rc = sl_stream_acquire(f->st, l, &v);
    if (rc) return sl_err_set(rc, "MTP block (unit %d): %s (stream modes: open the model with keep_nextn)", l,
                              sl_stream_errmsg(f->st));
    rc = mtp_block(f, kv, &v, l, ids, h, n, cat, h_out);
    int rr = sl_stream_release(f->st, l);
    if (rc) return rc;
    if (rr) return sl_err_set(rr, "MTP block (unit %d): %s", l, sl_stream_errmsg(f->st));
    return logits ? sl_forward_head_normed(f, h_out + (int64_t)(n - 1) * d->n_embd, 1, logits) : 0;
}
