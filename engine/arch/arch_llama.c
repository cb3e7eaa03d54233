/* llama: softmax GQA attention, SwiGLU FFN; with llama.expert_count > 0 the
 * FFN is routed experts (Mixtral: weights renormalized, expert width n_ff,
 * the llama loader has no expert-width key). */
#include "arch.h"

static int llama_keys(sl_model_desc *d, const sl_gguf *g)
{
    bool moe;
    int rc = sl_arch_moe_read(d, g, false, false, false, &moe);
    if (rc || !moe) return rc;
    d->kind[0].ffn = (sl_ffn_block){ .kind = SL_FFN_MOE, .act = SL_ACT_SILU, .weights_norm = true };
    return 0;
}

const sl_arch sl_arch_llama = { .name = "llama", .keys = llama_keys,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX }, .ffn = { .kind = SL_FFN_GATED, .act = SL_ACT_SILU } } };
