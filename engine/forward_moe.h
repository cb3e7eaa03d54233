/* Routed-expert FFN (Mixtral, qwen2moe, qwen3moe, deepseek2, glm4moe):
 * router -> softmax over all experts or sigmoids -> top-k (by the biased
 * score, within the best groups, where the architecture says; renormalized
 * and scaled where it says) -> the k chosen experts' SwiGLU FFNs from their
 * slices of the 3-D expert tensors, plus a shared expert (sigmoid-gated in
 * qwen2moe, ungated in deepseek2 / glm4moe). For a batch the rows are
 * grouped by expert, so each chosen expert's weights are multiplied once per
 * batch through sl_kern_matmul. */
#ifndef SL_ENGINE_FORWARD_MOE_H
#define SL_ENGINE_FORWARD_MOE_H

#include <stdint.h>

#include "forward_pass.h"

/* Bytes of the MoE scratch for n_batch rows (0 for a dense model). */
uint64_t sl_forward_moe_arena_bytes(const sl_model_desc *d, int32_t n_batch);

/* Work the caller overlaps with a decode row's expert reads (n == 1): run
 * is called once, after the chosen experts are requested and before any is
 * computed; it may overwrite f->xn, f->gate and f->up and leaves its result
 * row in f->xn, which the MoE keeps and points res at (NULL: run was not
 * called; the caller does the work itself). */
typedef struct sl_moe_side {
    int (*run)(sl_forward *f, void *ctx);
    void *ctx;
    const float *res;
} sl_moe_side;

/* x[i] += MoE-FFN(xn[i]) for i < n (xn: the ffn_norm'ed rows) of layer l's
 * FFN block b; with out, the n rows stay in the scratch at *out instead (x
 * untouched). f->moe holds sl_forward_moe_arena_bytes; v is layer l's
 * stream view. A dense_moe block's router reads x (the residual). side:
 * NULL, or work to run while the experts are read. */
int sl_forward_moe_ffn(sl_forward *f, int32_t l, const sl_ffn_block *b, const sl_stream_view *v, int32_t n,
                       float **out, sl_moe_side *side);

/* Pre-gating's read-ahead depth: how many leading ranks of a k-expert guess
 * to read, those whose measured precision (hit[i] / seen, both decayed, a
 * prior of one right guess) is at least SL_PREGATE_PRECISION. */
int32_t sl_forward_moe_pregate_depth(const float *hit, float seen, int32_t k);
/* Learns from one guessed layer: rank i of guess was among the k chosen. */
void sl_forward_moe_pregate_learn(float *hit, float *seen, const int32_t *guess, int32_t n_guess,
                                  const int32_t *chosen, int32_t k, uint64_t *n_right);

#endif
