/* Per-head RMSNorm of query / key rows (qwen3, qwen3moe, gemma3): each
 * head's head_dim values normalized with one [head_dim] weight shared by all
 * heads, before RoPE. */
#ifndef SL_ENGINE_FORWARD_QKNORM_H
#define SL_ENGINE_FORWARD_QKNORM_H

#include "../kernels/kernels.h"

/* In place over n_head heads of head_dim floats (one token's row). */
void sl_forward_qknorm(const sl_kern *k, float *x, int n_head, int head_dim, const float *w, float eps);

#endif
