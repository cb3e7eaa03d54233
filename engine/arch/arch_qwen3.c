/* qwen3: per-head q/k RMSNorm before NeoX rope, head dim from key_length. */
#include "arch.h"

const sl_arch sl_arch_qwen3 = { .name = "qwen3", .rope_neox = true,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .qk_norm = true },
               .ffn = { .kind = SL_FFN_GATED, .act = SL_ACT_SILU } } };
