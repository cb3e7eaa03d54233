/* gpt-oss (llama.cpp's openai-moe): q/k/v/o biases, learned per-head
 * attention sinks, sliding-window and full layers alternating (window on
 * the first of every sliding_window_pattern layers, period 2 without the
 * key), YaRN rope in every layer with one base, post_attention_norm as the
 * FFN's pre-norm, a biased router whose top k logits are softmaxed among
 * themselves, expert biases, the clamped SwiGLU. Numerics as llama.cpp
 * 2026-08 applies them (../shared/golden/README.md, synth3). */
#include "arch.h"

static int gptoss_keys(sl_model_desc *d, const sl_gguf *g)
{
    int rc = sl_arch_moe_keys(d, g);
    if (rc) return rc;
    /* llama.cpp reads no scaling keys but the factor and original context
     * here: the ramp ends are its defaults whatever the file says */
    if (d->rope_scaling == SL_ROPE_SCALE_YARN) {
        d->yarn_beta_fast = 32.0f;
        d->yarn_beta_slow = 1.0f;
    }
    d->rope_base_swa = d->rope_base;
    return sl_arch_window_keys(d, g, 2, 2);
}

const sl_arch sl_arch_gptoss = { .name = "gpt-oss", .rope_neox = true, .keys = gptoss_keys,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .qkv_bias = true, .o_bias = true, .sinks = true },
               .ffn = { .kind = SL_FFN_MOE, .act = SL_ACT_SWIGLU_OAI, .norm_post_attn = true,
                        .router_bias = true, .softmax_k = true, .expert_bias = true } } };
