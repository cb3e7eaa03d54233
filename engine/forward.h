/* Forward pass of a decoder (layers of attention and FFN blocks, by kind:
 * model.h) over the streamer's units.
 * Weights are reached only through sl_stream_acquire/release of one unit at
 * a time (layers 0..L-1, then the lm-head chunks), so resident, streamed and
 * mmap modes run the same code. All intermediate buffers live in one arena
 * allocated at init. */
#ifndef SL_ENGINE_FORWARD_H
#define SL_ENGINE_FORWARD_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "../io/sluice_stream.h"
#include "../kernels/kernels.h"
#include "forward_pass.h"
#include "kv.h"
#include "model.h"
#include "sluice.h"

/* Upper bound of the arena init allocates (for the planner's reserve). */
uint64_t sl_forward_arena_bytes(const sl_model_desc *d, int32_t n_batch, int32_t n_ctx,
                                int n_threads);

int  sl_forward_init(sl_forward *f, const sl_model_desc *d, sl_stream *st, const sl_kern *k,
                     sl_pool *pool, int32_t n_batch, int32_t n_ctx);
void sl_forward_free(sl_forward *f);

/* Runs ids[0..n) at positions kv->n_past.. (in chunks of n_batch) and advances
 * kv->n_past. LAST: logits gets n_vocab floats; ALL: logits[n][n_vocab].
 * SL_ECTX if kv has no room (nothing computed). */
int sl_forward_run(sl_forward *f, sl_kv *kv, const int32_t *ids, int32_t n, int mode,
                   float *logits);

/* Context shift (kv_shift.c): sl_kv_shift with this model's rope tables. */
int sl_forward_kv_shift(sl_forward *f, sl_kv *kv, int32_t n_keep, int32_t n_discard);
/* Batched pass (continuous batching, speculative verification): one pass
 * over the weights computes the rows of every sequence. Sequence s feeds
 * ids[0..n) into its own cache at kv->n_past.. (each kv once per call); its
 * logits (mode LAST: one row, ALL: n rows) follow those of sequence s-1 in
 * `logits`. All rows together at most n_batch (SL_EINVAL), every sequence
 * must fit its cache (SL_ECTX; nothing computed). On success each kv->n_past
 * advances by its n. Up to 9 rows in all, each row's logits are bitwise those
 * of the sequence run alone (matmul tiles = vec_dot below the panel size). */
int sl_forward_run_batch(sl_forward *f, const sl_forward_seq *seqs, int32_t n_seq, float *logits);

/* Parts of a pass for a pipeline stage (sluice.h "pipeline stages"): the
 * embedding rows of ids (n <= n_batch) into x[n][n_embd]; layers [first, last)
 * over x's n rows in place at positions pos0.. (n_past unchanged; each layer
 * must be held by kv); output norm + lm head of the row x -> logits. */
int sl_forward_embed(sl_forward *f, const int32_t *ids, int32_t n, float *x);
int sl_forward_layers(sl_forward *f, sl_kv *kv, int32_t first, int32_t last, int32_t pos0, float *x, int32_t n);
int sl_forward_head(sl_forward *f, const float *x, float *logits);
/* The lm head (and soft cap) of n rows already normed (the MTP block's). */
int sl_forward_head_normed(sl_forward *f, const float *xn, int32_t n, float *logits);

#endif
