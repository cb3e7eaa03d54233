/* qwen2: llama with q/k/v biases and NeoX rope. */
#include "arch.h"

const sl_arch sl_arch_qwen2 = { .name = "qwen2", .rope_neox = true,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .qkv_bias = true },
               .ffn = { .kind = SL_FFN_GATED, .act = SL_ACT_SILU } } };
