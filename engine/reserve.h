/* What the engine needs besides the weights, settled before the streamer
 * plans: threads, context, batch, kernels and the reserve (KV cache, compute
 * arena, logits/sampler/history, prefill panel scratch). sl_model_open and
 * `sluice plan` both start here, so the plan `plan` prints is the plan `run`
 * follows. */
#ifndef SL_ENGINE_RESERVE_H
#define SL_ENGINE_RESERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "../io/sluice_stream.h"
#include "../kernels/kernels.h"
#include "model.h"
#include "sluice.h"
#include "tok/tokenizer.h"

typedef struct sl_reserve {
    int32_t n_ctx, n_batch;     /* params resolved (0 = default) */
    int n_threads;
    const sl_kern *k;           /* kernel level the forward pass uses */
    uint64_t kv_bytes;          /* KV cache of one session */
    uint64_t kv_pos_bytes;      /* of which per position (all layers, K + V, in their types) */
    int32_t kv_latent, kv_rope; /* > 0: an MLA cache of K rows only, [latent | rope key] values each */
    int32_t n_swa_layers;       /* layers whose cache keeps only their sliding window ... */
    int32_t swa_window;         /* ... of this many positions (0: none) */
    uint64_t arena_bytes;       /* forward pass arena */
    uint64_t logits_bytes;      /* logits, sampler scratch, token history */
    uint64_t panel_bytes;       /* prefill panel buffers (per thread) */
    uint64_t tok_bytes;         /* the tokenizer's tables (sl_reserve_add_tok; 0 before) */
    uint64_t total;             /* saturating sum: the streamer's reserve_bytes */
    /* the streamer's layer mask when the model has NextN blocks (never read): the
     * layers run that p's mask keeps; n_keep 0 = p's mask as it is */
    int32_t n_keep;
    uint8_t keep[SL_MAX_LAYERS];
} sl_reserve;

/* Fills r for a model of description d opened with p. Fails when the
 * kernel level asked for (SLUICE_ISA) is not available or a KV cache type
 * does not fit the model (sl_kv_type_check). */
int sl_reserve_compute(sl_reserve *r, const sl_model_desc *d, const sl_model_params *p);
/* Rows per kv head of each layer's cache (cap[n_layer]): n_ctx, or for a
 * sliding-window layer the ring sl_kv_ring_cap(n_ctx, n_swa, n_batch); 0 for a
 * layer p's layer_mask leaves out and for a recurrent layer (its state: kv.h). */
void sl_reserve_kv_caps(const sl_model_desc *d, const sl_model_params *p, int32_t n_ctx, int32_t n_batch,
                        int32_t *cap);
/* The cache's V type: SL_KV_NONE when the model's attention is latent
 * (MLA: the values are read from the K rows), else p->type_v. */
int sl_reserve_type_v(const sl_model_desc *d, const sl_model_params *p);
/* Whether p's layer mask keeps layer l (no mask: every layer). */
bool sl_reserve_layer_kept(const sl_model_params *p, int32_t l);
/* Counts the tokenizer t in r (tok_bytes and total; NULL: none). */
void sl_reserve_add_tok(sl_reserve *r, const sl_tok *t);
/* The same from a file's metadata (no weights read), its tokenizer counted. */
int sl_reserve_compute_file(sl_reserve *r, const char *path, const sl_model_params *p);
/* The streamer config sl_model_open uses: p's mode/io/budget/pins/mlock + r->total
 * (sc points into r: r must outlive sl_stream_open). */
void sl_reserve_stream_config(const sl_reserve *r, const sl_model_params *p, sl_stream_config *sc);

#endif
