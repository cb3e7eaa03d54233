/* qwen3moe: qwen3 attention (per-head q/k norms); routed experts with the
 * chosen weights renormalized, no shared expert. */
#include "arch.h"

const sl_arch sl_arch_qwen3moe = { .name = "qwen3moe", .rope_neox = true, .keys = sl_arch_moe_keys,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .qk_norm = true },
               .ffn = { .kind = SL_FFN_MOE, .act = SL_ACT_SILU, .weights_norm = true } } };
