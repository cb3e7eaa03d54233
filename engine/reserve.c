/* The session's memory reserve (reserve.h). */
#include "reserve.h"

#include <stdlib.h>
#include <unistd.h>

#include "../gguf/gguf.h"
#include "../gguf/base/sl_status.h"
#include "../gguf/base/sl_internal.h"
#include "forward.h"
#include "forward_gdn.h"
#include "kv.h"

bool sl_reserve_layer_kept(const sl_model_params *p, int32_t l)
{
    return !p->layer_mask || (l < p->n_layer_mask && p->layer_mask[l]);
}

int sl_reserve_type_v(const sl_model_desc *d, const sl_model_params *p)
{
    for (int32_t k = 0; k < d->n_kinds; k++)
        if (d->kind[k].attn.kind == SL_ATTN_MLA) return SL_KV_NONE;
    return p->type_v;
}

void sl_reserve_kv_caps(const sl_model_desc *d, const sl_model_params *p, int32_t n_ctx, int32_t n_batch,
                        int32_t *cap)
{
    for (int32_t l = 0; l < d->n_layer; l++)
        cap[l] = !sl_reserve_layer_kept(p, l) || !sl_model_layer_has_rows(d, l) ? 0   /* shared, recurrent */
               : sl_model_layer_swa(d, l) ? sl_kv_ring_cap(n_ctx, d->n_swa, n_batch) : n_ctx;
}

int sl_reserve_compute(sl_reserve *r, const sl_model_desc *d, const sl_model_params *p)
{
    int nth = p->n_threads;
    if (nth == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        nth = c > 0 ? (int)c : 1;
    }
    if (nth > 256) nth = 256;
    r->n_threads = nth;
    r->n_ctx = p->n_ctx ? p->n_ctx : (d->n_ctx_train < 4096 ? d->n_ctx_train : 4096);
    r->n_batch = p->n_batch ? p->n_batch : 64;
    if (r->n_batch > r->n_ctx) r->n_batch = r->n_ctx;
    /* kernels/ only returns the code: name the override here, or the user sees
     * whatever message an earlier, recovered lookup left behind. */
    int rc = sl_kern_best_checked(&r->k);
    if (rc)
        return sl_err_set(rc == -ENOSYS ? SL_ENOSYS : SL_EINVAL, "SLUICE_ISA=%s: %s",
                          getenv("SLUICE_ISA"), rc == -ENOSYS ? "not available on this CPU"
                          : "unknown level (scalar, avx2, avx512, avx512vnni, avx512vbmi, neon, dotprod)");
    int32_t max_k = d->n_embd > d->n_ff ? d->n_embd : d->n_ff;
    if (d->q_dim > max_k) max_k = d->q_dim;
    if (d->n_ff_exp > max_k) max_k = d->n_ff_exp;       /* MoE expert widths */
    if (d->n_ff_shexp > max_k) max_k = d->n_ff_shexp;
    if (d->ssm_nv * d->ssm_dv > max_k) max_k = d->ssm_nv * d->ssm_dv;   /* ssm_out */
    /* the cache is sized by its types (a q4_0 cache is 0.28x an f16 one) */
    const int tv = sl_reserve_type_v(d, p);
    if ((rc = sl_kv_type_check(p->type_k, d->head_dim, "K")) || (rc = sl_kv_type_check(tv, d->head_dim, "V")))
        return rc;
    r->kv_pos_bytes = (uint64_t)sl_model_n_row_layers(d) * sl_kv_pos_bytes(d->kv_dim, p->type_k, tv);
    r->kv_latent = tv == SL_KV_NONE ? d->kv_lora_rank : 0;
    r->kv_rope = tv == SL_KV_NONE ? d->n_rot : 0;
    r->kv_bytes = sl_kv_bytes(d->n_layer, r->n_ctx, d->kv_dim, p->type_k, tv);
    r->n_swa_layers = 0;
    for (int32_t l = 0; l < d->n_layer; l++) r->n_swa_layers += sl_model_layer_swa(d, l);
    r->swa_window = r->n_swa_layers ? d->n_swa : 0;
    int32_t *cap = d->n_layer > 0 ? malloc((size_t)d->n_layer * sizeof *cap) : NULL;
    if (cap) {   /* sliding-window layers: their ring only (else the full bound above) */
        sl_reserve_kv_caps(d, p, r->n_ctx, r->n_batch, cap);
        r->kv_bytes = sl_kv_bytes_layers(d->n_layer, cap, d->kv_dim, p->type_k, tv);
        free(cap);
    }
    /* the NextN blocks are left out of the schedule (a subset: the planner's
     * stream mode, every kept unit pinned when they fit); resident mode reads
     * the file once, those blocks included, and keeps its name */
    r->n_keep = d->n_layer_nextn > 0 && p->mode != SL_MODE_RESIDENT && !p->keep_nextn ? d->n_layer : 0;
    for (int32_t l = 0; l < r->n_keep; l++) r->keep[l] = sl_reserve_layer_kept(p, l);
    /* a recurrent model's fixed-size state counts with its cache, and so do
     * its prefix-reuse snapshots (session_snap.c) */
    const uint64_t n_states = 1 + (uint64_t)(p->rec_snapshots > 0 ? p->rec_snapshots : 0);
    uint64_t rec;
    if (__builtin_mul_overflow(sl_forward_gdn_state_bytes(d), n_states, &rec) ||
        __builtin_add_overflow(r->kv_bytes, rec, &r->kv_bytes))
        r->kv_bytes = UINT64_MAX;
    r->arena_bytes = sl_forward_arena_bytes(d, r->n_batch, r->n_ctx, nth);
    r->logits_bytes = (uint64_t)d->n_vocab * (4 + 4 + 8 + 1) + (uint64_t)r->n_ctx * 4;
    r->panel_bytes = sl_kern_matmul_scratch_bound(r->k, max_k, r->n_batch, nth);
    /* saturating: a hostile size must not wrap to a small reserve */
    const uint64_t parts[] = { r->kv_bytes, r->arena_bytes, r->logits_bytes, r->panel_bytes };
    r->total = r->tok_bytes = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (__builtin_add_overflow(r->total, parts[i], &r->total)) r->total = UINT64_MAX;
    return 0;
}

void sl_reserve_add_tok(sl_reserve *r, const sl_tok *t)
{
    r->tok_bytes = sl_tok_mem_bytes(t);
    if (__builtin_add_overflow(r->total, r->tok_bytes, &r->total)) r->total = UINT64_MAX;
}

int sl_reserve_compute_file(sl_reserve *r, const char *path, const sl_model_params *p)
{
    sl_gguf *g;
    int rc = sl_gguf_open_path(&g, path);
    if (rc) return rc;   /* message names the path */
    sl_model_desc d;
    sl_tok *t = NULL;
    rc = sl_model_desc_load(&d, g);
    if (!rc && sl_tok_create(&t, g)) t = NULL;   /* as sl_model_open: a model may have none */
    sl_gguf_close(g);
    if (!rc && !(rc = sl_reserve_compute(r, &d, p))) sl_reserve_add_tok(r, t);
    sl_tok_destroy(t);
    return rc;
}

void sl_reserve_stream_config(const sl_reserve *r, const sl_model_params *p, sl_stream_config *sc)
{
    sl_stream_config_init(sc);
    sc->mode = p->mode;
    sc->io = p->io;
    sc->mem_budget = p->mem_budget;
    sc->max_pinned = p->max_pinned;
    sc->mlock = p->mlock;
    sc->expert_stream = p->expert_stream;
    sc->expert_policy = p->expert_policy;
    sc->expert_cache_bytes = p->expert_cache_bytes;
    sc->numa = p->numa;
    sc->layer_mask = p->layer_mask;
    sc->n_layer_mask = p->layer_mask ? p->n_layer_mask : 0;
    if (r->n_keep > 0) { sc->layer_mask = r->keep; sc->n_layer_mask = r->n_keep; }
    sc->skip_head = sc->skip_embd = p->no_head;
    sc->progress = p->progress;
    sc->progress_ctx = p->progress_ctx;
    sc->reserve_bytes = r->total;
}
