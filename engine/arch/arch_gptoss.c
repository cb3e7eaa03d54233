/* gpt-oss (llama.cpp's openai-moe): q/k/v/o biases, learned per-head
 * attention sinks, sliding-window and full layers alternating (window on
 * the first of every sliding_window_pattern layers, period 2 without the
 * key), YaRN rope in every layer with one base, post_attention_norm as the
 * FFN's pre-norm, a biased router whose top k logits are softmaxed among
 * themselves, expert biases, the clamped SwiGLU. Numerics as llama.cpp
 * 2026-08 applies them (../shared/golden/README.md, synth3). */
#include "arch.h"
#include "../model_internal.h"

#include "../../gguf/base/sl_internal.h"

static int gptoss_keys(sl_model_desc *d, const sl_gguf *g)
{
    const char *a = d->arch_name;
    uint32_t swa, period;
    int rc;
    if ((rc = sl_arch_moe_keys(d, g)) ||
        (rc = sl_model_key_u32(g, a, "attention.sliding_window", &swa, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "attention.sliding_window_pattern", &period, false, 2)))
        return rc;
    if (swa < 1 || swa > (1u << 30))
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.attention.sliding_window' = %u invalid", a, swa);
    if (period < 2 || period > 4096)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.attention.sliding_window_pattern' = %u invalid",
                          a, period);
    /* llama.cpp reads no scaling keys but the factor and original context
     * here: the ramp ends are its defaults whatever the file says */
    if (d->rope_scaling == SL_ROPE_SCALE_YARN) {
        d->yarn_beta_fast = 32.0f;
        d->yarn_beta_slow = 1.0f;
    }
    d->n_swa = (int32_t)swa;
    d->rope_base_swa = d->rope_base;
    /* kind 1: the sliding-window layers */
    d->kind[1] = d->kind[0];
    d->kind[1].attn.window = d->n_swa;
    d->n_kinds = 2;
    for (int32_t l = 0; l < d->n_layer; l++) d->layer_kind[l] = l % (int32_t)period < (int32_t)period - 1;
    return 0;
}

const sl_arch sl_arch_gptoss = { .name = "gpt-oss", .rope_neox = true, .keys = gptoss_keys,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .qkv_bias = true, .o_bias = true, .sinks = true },
               .ffn = { .kind = SL_FFN_MOE, .act = SL_ACT_SWIGLU_OAI, .norm_post_attn = true,
                        .router_bias = true, .softmax_k = true, .expert_bias = true } } };
