/* Per-layer embedding inputs (gemma4): for each token of a pass, one slice
 * of n_embd_ple values per layer, made once before the layers from the
 * token's per_layer_token_embd row and a projection of its embedding; the
 * layers' PLE blocks (forward_layer.c) read their slice. */
#ifndef SL_ENGINE_FORWARD_PLE_H
#define SL_ENGINE_FORWARD_PLE_H

#include <stdint.h>

#include "forward_pass.h"

/* Arena bytes for passes of n_batch rows (0 without per-layer embeddings). */
uint64_t sl_forward_ple_arena_bytes(const sl_model_desc *d, int32_t n_batch);
/* Lays out f->ple and finds the global tensors; a message names what is missing. */
int sl_forward_ple_init(sl_forward *f);
/* The inputs of the pass's n rows (f->x holds their scaled embeddings). */
int sl_forward_ple_inputs(sl_forward *f, const sl_forward_seq *sq, int32_t ns, int32_t n);
/* Bytes of per_layer_token_embd rows read so far (row cache misses). */
uint64_t sl_forward_ple_bytes_read(const sl_forward *f);
/* Row i's slice for layer l (n_embd_ple floats). */
const float *sl_forward_ple_slice(const sl_forward *f, int32_t i, int32_t l);

#endif
