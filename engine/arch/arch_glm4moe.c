/* glm4moe (GLM-4.5): q/k/v biases, per-head q/k norms where the file has
 * them, NEOX rope on the first rope.dimension_count dims of each head, the
 * pre-FFN norm named post_attention_norm; leading dense layers, then sigmoid
 * routing (selection bias, renormalized, scaled) with an ungated shared
 * expert; the trailing NextN block is checked but not run. As llama.cpp
 * 2026-08 computes it (../shared/golden/README.md, synth3). */
#include "arch.h"

static int glm4moe_keys(sl_model_desc *d, const sl_gguf *g)
{
    /* optional in llama.cpp: all layers have them or none */
    d->kind[0].attn.qk_norm = sl_gguf_find_tensor(g, "blk.0.attn_q_norm.weight") != NULL;
    int rc = sl_arch_moe_lead_keys(d, g, SL_GATING_SIGMOID);
    return rc ? rc : sl_arch_nextn_check(d, g);
}

const sl_arch sl_arch_glm4moe = { .name = "glm4moe", .rope_neox = true, .keys = glm4moe_keys,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .qkv_bias = true },
               .ffn = { .kind = SL_FFN_MOE, .act = SL_ACT_SILU, .norm_post_attn = true } } };
