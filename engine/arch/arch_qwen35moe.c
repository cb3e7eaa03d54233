/* qwen35moe (Qwen3.5 / Qwen3.6 MoE): the hybrid layers of Gated DeltaNet and
 * gated attention (arch_gdn.c), every layer routed experts renormalized plus
 * a sigmoid-gated shared expert, the FFN's pre-norm stored as
 * post_attention_norm. As llama.cpp 2026-08 (../shared/golden/README.md,
 * synth3). */
#include "arch.h"

static int qwen35moe_keys(sl_model_desc *d, const sl_gguf *g)
{
    int rc = sl_arch_gdn_keys(d, g);
    return rc ? rc : sl_arch_moe_keys(d, g);
}

const sl_arch sl_arch_qwen35moe = { .name = "qwen35moe", .rope_neox = true, .keys = qwen35moe_keys,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .qk_norm = true, .out_gate = true },
               .ffn = { .kind = SL_FFN_MOE, .act = SL_ACT_SILU, .shared_expert = true, .weights_norm = true,
                        .norm_post_attn = true } } };
