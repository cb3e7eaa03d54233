/* qwen35 (Qwen3.5 / Qwen3.6 dense): the hybrid layers of qwen35moe
 * (arch_gdn.c) with a dense SwiGLU FFN whose pre-norm is stored as
 * post_attention_norm (llama.cpp 2026-08 src/models/qwen35.cpp: the graph
 * of qwen35moe with build_ffn in place of the experts). */
#include "arch.h"

const sl_arch sl_arch_qwen35 = { .name = "qwen35", .rope_neox = true, .keys = sl_arch_gdn_keys,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .qk_norm = true, .out_gate = true },
               .ffn = { .kind = SL_FFN_GATED, .act = SL_ACT_SILU, .norm_post_attn = true } } };
