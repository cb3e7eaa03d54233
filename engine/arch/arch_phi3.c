/* phi3: fused attn_qkv and gate|up ffn_up, LongRoPE factor tensors with
 * their switch-over context and attention factor, q scaled by
 * 1/sqrt(head_dim) before the F16 rounding. Numerics as llama.cpp 2026-08
 * applies them (../shared/golden/README.md, synth2). */
#include "arch.h"
#include "../model_internal.h"

#include <math.h>

#include "../../gguf/base/sl_internal.h"

static int phi3_keys(sl_model_desc *d, const sl_gguf *g)
{
    const char *a = d->arch_name;
    const uint64_t half = (uint64_t)d->n_rot / 2;
    const sl_gguf_tensor *lo, *sh;
    uint32_t orig, swa;
    int rc;
    if ((rc = sl_model_check_tensor(g, "rope_factors_long.weight", half, 0, T_F32, true, &lo)) ||
        (rc = sl_model_check_tensor(g, "rope_factors_short.weight", half, 0, T_F32, true, &sh)))
        return rc;
    if (!lo != !sh)
        return sl_err_set(SL_ENOENT, "tensor '%s' missing from the model (LongRoPE needs both factor "
                          "tensors)", lo ? "rope_factors_short.weight" : "rope_factors_long.weight");
    d->has_rope_factors = lo != NULL;
    /* without the key llama.cpp switches at the training context */
    if ((rc = sl_model_key_u32(g, a, "rope.scaling.original_context_length", &orig, false,
                               (uint32_t)d->n_ctx_train)) ||
        (rc = sl_model_key_f32(g, a, "rope.scaling.attn_factor", &d->rope_attn_factor, false, 1.0f)))
        return rc;
    if (orig < 1 || orig > (1u << 30))
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.rope.scaling.original_context_length' "
                          "= %u invalid", a, orig);
    if (!(d->rope_attn_factor > 0.0f) || d->rope_attn_factor > 16.0f)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.rope.scaling.attn_factor' = %g invalid", a,
                          (double)d->rope_attn_factor);
    d->rope_orig_ctx = (int32_t)orig;
    /* Read and checked, not applied: llama.cpp disables Phi-3's sliding
     * window (its converters wrote windows the models were not trained with),
     * so every layer attends to the whole context there, and here. */
    if ((rc = sl_model_key_u32(g, a, "attention.sliding_window", &swa, false, 0))) return rc;
    if (swa > (1u << 30))
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.attention.sliding_window' = %u invalid", a,
                          swa);
    d->n_swa = (int32_t)swa;
    d->kind[0].attn.q_scale = 1.0f / sqrtf((float)d->head_dim);
    return 0;
}

const sl_arch sl_arch_phi3 = { .name = "phi3", .rope_neox = true, .keys = phi3_keys,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .fused_qkv = true },
               .ffn = { .kind = SL_FFN_GATED, .act = SL_ACT_SILU, .fused_gate_up = true } } };
