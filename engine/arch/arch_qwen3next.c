/* qwen3next (Qwen3-Next-80B-A3B): the hybrid stack of qwen35moe (arch_gdn.c:
 * Gated DeltaNet layers, every full_attention_interval-th layer gated
 * attention with q/k norms and NEOX rope on rope.dimension_count dims;
 * routed experts renormalized plus a sigmoid-gated shared expert, the FFN's
 * pre-norm stored as post_attention_norm) with the Gated DeltaNet tensors of
 * its own converter: v heads grouped by q/k head, beta | alpha fused as
 * ssm_ba, q | k | v | z either split (attn_qkv, attn_gate) or in the older
 * fused ssm_in (forward_gdn_proj.c). As llama.cpp 2026-08
 * src/models/qwen3next.cpp computes it. */
#include "arch.h"

static int qwen3next_keys(sl_model_desc *d, const sl_gguf *g)
{
    int rc = sl_arch_gdn_keys(d, g);
    if (rc) return rc;
    d->ssm_grouped = true;
    return sl_arch_moe_keys(d, g);
}

const sl_arch sl_arch_qwen3next = { .name = "qwen3next", .rope_neox = true, .keys = qwen3next_keys,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .qk_norm = true, .out_gate = true },
               .ffn = { .kind = SL_FFN_MOE, .act = SL_ACT_SILU, .shared_expert = true, .weights_norm = true,
                        .norm_post_attn = true } } };
