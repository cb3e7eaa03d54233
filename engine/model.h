/* Model description: the global hyper-parameters from GGUF metadata, and each
 * layer as the blocks it is made of (an attention block, an FFN block), each
 * block a kind plus the options of that kind. The architecture table
 * (arch/arch.h) says which blocks a family's layers have; the forward pass
 * dispatches on the block kinds. Every tensor the pass will touch is
 * validated at load (presence, shape, type). */
#ifndef SL_ENGINE_MODEL_H
#define SL_ENGINE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "../gguf/gguf.h"
#include "model_desc.h"

/* Reads metadata and validates all tensors. SL_EUNSUPPORTED for an unknown
 * architecture or tensor type, SL_ESHAPE / SL_ENOENT for a bad or missing tensor. */
int sl_model_desc_load(sl_model_desc *d, const sl_gguf *g);

/* Whether layer l attends only within a sliding window (of n_swa). */
bool sl_model_layer_swa(const sl_model_desc *d, int32_t l);

/* Name of the global rope-divisor tensor for a context of n_ctx positions
 * (rope_freqs.weight, or the LongRoPE long/short factors), NULL if none. */
const char *sl_model_rope_factors_name(const sl_model_desc *d, int32_t n_ctx);

/* inv_freq[i], i < n_rot/2: angle per position of pair i for rope base
 * `base`, scaling and rope_freqs divisors included (freqs may be NULL). */
void sl_model_rope_inv_freq(const sl_model_desc *d, float base, const float *freqs, float *inv_freq);
/* The same for the sliding-window layers: rope_base_swa over n_rot_swa (or
 * n_rot) pairs, the divisors only unless they are the full layers' alone. */
void sl_model_rope_inv_freq_swa(const sl_model_desc *d, const float *freqs, float *inv_freq);

#endif
