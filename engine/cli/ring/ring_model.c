/* The model part of a cluster from a GGUF file (`sluice plan --ring C -m MODEL`):
 * layer bytes by type averaged over the layers, the lm head, KV bytes per token
 * and layer and the engine's reserve, all as `sluice run` would count them. */
#include "ring_plan.h"
#include "../../reserve.h"
#include "../../../gguf/gguf.h"
#include "../../../gguf/base/sl_internal.h"
#include "../../../gguf/base/sl_status.h"

#include <stdio.h>
#include <string.h>

int sl_ring_model_from_gguf(sl_ring_model *m, double *reserve, const char *path, const struct sl_model_params *p)
{
    sl_reserve rs;
    int rc = sl_reserve_compute_file(&rs, path, p);
    if (rc) return rc;
    sl_gguf *g = NULL;
    if ((rc = sl_gguf_open_path(&g, path))) return rc;
    sl_model_desc d;
    if ((rc = sl_model_desc_load(&d, g))) { sl_gguf_close(g); return rc; }
    if (d.n_layer < 1 || d.n_layer > SL_RING_MAX_LAYERS) {
        sl_gguf_close(g);
        return sl_err_set(SL_ERANGE, "%s: %d layers (the ring plans 1..%d)", path, d.n_layer, SL_RING_MAX_LAYERS);
    }
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
    m->n_layers = d.n_layer;
    m->n_embd = d.n_embd;
    m->n_ctx = rs.n_ctx;
    m->ctx = rs.n_ctx / 2;
    const char *head = d.tied_output ? "token_embd.weight" : "output.weight";
    for (int64_t i = 0; i < sl_gguf_n_tensors(g); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (t->type >= SL_RING_NTYPE) continue;   /* the model description rejected unknown types already */
        if (!strncmp(t->name, "blk.", 4)) m->layer_bytes[t->type] += (double)t->nbytes / d.n_layer;
        else if (!strcmp(t->name, head) || !strcmp(t->name, "output_norm.weight")) m->head_bytes[t->type] += (double)t->nbytes;
    }
    sl_gguf_close(g);
    m->kv_bytes_per_token_layer = rs.n_ctx > 0 ? (double)rs.kv_bytes / ((double)rs.n_ctx * d.n_layer) : 0;
    *reserve = (double)(rs.total - rs.kv_bytes);
    return 0;
}
