/* qwen2moe: qwen2 attention; routed experts used with their probabilities as
 * they are (no renormalization), plus a sigmoid-gated shared expert. */
#include "arch.h"

const sl_arch sl_arch_qwen2moe = { .name = "qwen2moe", .rope_neox = true, .keys = sl_arch_moe_keys,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .qkv_bias = true },
               .ffn = { .kind = SL_FFN_MOE, .act = SL_ACT_SILU, .shared_expert = true } } };
