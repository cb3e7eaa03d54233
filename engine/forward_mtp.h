/* The NextN / MTP block of a file with nextn_predict_layers (DeepSeek-V3's
 * multi-token prediction as llama.cpp 2026-08 computes it for qwen35,
 * qwen35moe and deepseek2; glm4moe's block has the same form): a token's
 * embedding and the hidden state that preceded it, each RMS-normed (enorm,
 * hnorm), side by side [e, h] through eh_proj, one decoder layer of the
 * block's own kind (attention over a cache of its own, FFN or experts), the
 * shared head norm (output_norm where the file has none) and the lm head. */
#ifndef SL_ENGINE_FORWARD_MTP_H
#define SL_ENGINE_FORWARD_MTP_H

#include <stdint.h>

#include "forward_pass.h"

/* A cache for the block's attention: kv's geometry and types, n_layer +
 * n_layer_nextn layers of which only the NextN ones hold rows. */
int sl_forward_mtp_kv_init(const sl_model_desc *d, const sl_kv *like, sl_kv *kv);

/* Rows ids[0..n) at positions kv->n_past.., row i paired with the hidden
 * state h[i] (n_embd floats): the block's output rows, head-normed, into
 * h_out (n x n_embd; the h of the next step), and when logits is not NULL
 * the lm head of the last row (n_vocab floats). kv->n_past is not moved.
 * cat: scratch of n x 2 n_embd floats. */
int sl_forward_mtp(sl_forward *f, sl_kv *kv, const int32_t *ids, const float *h, int32_t n, float *cat,
                   float *h_out, float *logits);

#endif
