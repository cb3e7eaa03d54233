/* The Gated DeltaNet block of the forward pass (forward_gdn.c). */
#ifndef SL_ENGINE_FORWARD_GDN_H
#define SL_ENGINE_FORWARD_GDN_H

#include <stdint.h>

#include "forward_pass.h"

/* Layer l's block over the rows of sq[0..ns): f->xn holds the normed input
 * rows; its output rows (before the residual add) into f->xn. Each
 * sequence's recurrent state (kv.h) advances by its rows. */
int sl_forward_gdn(sl_forward *f, const sl_forward_seq *sq, int32_t ns, int32_t l, const sl_stream_view *v,
                   int32_t n);
/* Scratch floats one row needs (f->rec_buf), 0 for a model without the block. */
uint64_t sl_forward_gdn_row_floats(const sl_model_desc *d);
struct sl_act_cache;

/* The block's input projections (forward_gdn_proj.c): rows qkv [n][2 nk dk
 * + nv dv], z [n][nv dv], bg [n][2 nv] (raw beta | raw alpha) from f->xn,
 * whichever layout the file has; scratch holds proj_floats per row. */
int sl_forward_gdn_proj(sl_forward *f, struct sl_act_cache *c, const sl_stream_view *v, int32_t l, int32_t n,
                        float *qkv, float *z, float *bg, float *scratch);
uint64_t sl_forward_gdn_proj_floats(const sl_model_desc *d);
/* Per-thread scratch of the chunked delta rule, all threads' (f->gdn_ws). */
uint64_t sl_forward_gdn_ws_bytes(const sl_model_desc *d, int n_threads);
/* Rows of one sequence from which a pass runs the delta rule chunkwise
 * (fewer: token by token, so that decode, batched decode and speculative
 * verification, 1..9 rows, stay bit for bit one another's). */
#define SL_GDN_CHUNK_MIN 16
/* Values of one layer's recurrent state: the conv rows, the delta state. */
int64_t sl_forward_gdn_conv_len(const sl_model_desc *d);
int64_t sl_forward_gdn_state_len(const sl_model_desc *d);
/* Bytes of a sequence's recurrent state (0: no such layer), and that state
 * allocated in kv for each such layer. */
uint64_t sl_forward_gdn_state_bytes(const sl_model_desc *d);
int sl_forward_gdn_state_init(const sl_model_desc *d, sl_kv *kv);

#endif
