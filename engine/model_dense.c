/* Model description of the dense families of 2026: qwen3 (per-head q/k
 * RMSNorm) and phi3 (fused qkv and gate/up, LongRoPE). Numerics as
 * llama.cpp 2026-08 applies them (../shared/golden/README.md, synth2). */
#include "model.h"
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"

/* phi3: LongRoPE factor tensors, their switch-over context and attention factor. */
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
    d->fused_qkv = d->fused_gate_up = true;
    d->q_scale = 1.0f / sqrtf((float)d->head_dim);
    return 0;
}

/* gemma3: interleaved sliding-window layers with their own rope base,
 * embedding scale, post-norms, GeGLU, q scaled by 1/sqrt(key_length). */
static int gemma3_keys(sl_model_desc *d, const sl_gguf *g)
{
    const char *a = d->arch_name;
    uint32_t swa, period;
    int rc;
    if ((rc = sl_model_key_u32(g, a, "attention.sliding_window", &swa, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "attention.sliding_window_pattern", &period, false, 6)) ||
        (rc = sl_model_key_f32(g, a, "rope.freq_base_swa", &d->rope_base_swa, false, 10000.0f)) ||
        (rc = sl_model_key_f32(g, a, "final_logit_softcapping", &d->logit_softcap, false, 0.0f)))
        return rc;
    if (swa < 1 || swa > (1u << 30))
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.attention.sliding_window' = %u invalid", a, swa);
    if (period < 1 || period > 4096)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.attention.sliding_window_pattern' = %u invalid",
                          a, period);
    if (!(d->rope_base_swa > 0))
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.rope.freq_base_swa' = %g invalid", a,
                          (double)d->rope_base_swa);
    if (d->logit_softcap < 0)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.final_logit_softcapping' = %g invalid", a,
                          (double)d->logit_softcap);
    d->n_swa = (int32_t)swa;
    d->swa_period = (int32_t)period;
    d->rope_neox = true;
    d->has_qk_norm = d->has_post_norms = d->ffn_gelu = true;
    d->embd_scale = sqrtf((float)d->n_embd);
    /* llama.cpp scales by 1/sqrt(n_embd/n_head) only for the 62-layer (27B) model */
    d->q_scale = 1.0f / sqrtf((float)(d->n_layer == 62 ? d->n_embd / d->n_head : d->head_dim));
    return 0;
}

int sl_model_dense_keys(sl_model_desc *d, const sl_gguf *g)
{
    switch (d->arch) {
    case SL_ARCH_QWEN3:
        d->rope_neox = true;
        d->has_qk_norm = true;
        return 0;
    case SL_ARCH_PHI3:
        d->rope_neox = true;
        return phi3_keys(d, g);
    case SL_ARCH_GEMMA3:
        return gemma3_keys(d, g);
    default:
        return 0;
    }
}

int sl_model_dense_layer(const sl_model_desc *d, const sl_gguf *g, uint32_t layer)
{
    char name[96];
    int rc;
    if (d->has_qk_norm) {
        snprintf(name, sizeof name, "blk.%u.attn_q_norm.weight", layer);
        if ((rc = sl_model_check_tensor(g, name, (uint64_t)d->head_dim, 0, T_F32, false, NULL))) return rc;
        snprintf(name, sizeof name, "blk.%u.attn_k_norm.weight", layer);
        if ((rc = sl_model_check_tensor(g, name, (uint64_t)d->head_dim, 0, T_F32, false, NULL))) return rc;
    }
    if (d->has_post_norms) {
        snprintf(name, sizeof name, "blk.%u.post_attention_norm.weight", layer);
        if ((rc = sl_model_check_tensor(g, name, (uint64_t)d->n_embd, 0, T_F32, false, NULL))) return rc;
        snprintf(name, sizeof name, "blk.%u.post_ffw_norm.weight", layer);
        if ((rc = sl_model_check_tensor(g, name, (uint64_t)d->n_embd, 0, T_F32, false, NULL))) return rc;
    }
    if (d->fused_qkv) {
        snprintf(name, sizeof name, "blk.%u.attn_qkv.weight", layer);
        if ((rc = sl_model_check_tensor(g, name, (uint64_t)d->n_embd,
                                        (uint64_t)d->q_dim + 2 * (uint64_t)d->kv_dim, T_MATRIX, false, NULL)))
            return rc;
    }
    if (d->fused_gate_up) {
        snprintf(name, sizeof name, "blk.%u.ffn_up.weight", layer);
        if ((rc = sl_model_check_tensor(g, name, (uint64_t)d->n_embd, 2 * (uint64_t)d->n_ff, T_MATRIX,
                                        false, NULL)))
            return rc;
    }
    return 0;
}

bool sl_model_layer_swa(const sl_model_desc *d, int32_t l)
{
    return d->swa_period > 0 && l % d->swa_period < d->swa_period - 1;
}

const char *sl_model_rope_factors_name(const sl_model_desc *d, int32_t n_ctx)
{
    if (d->has_rope_freqs) return "rope_freqs.weight";
    if (!d->has_rope_factors) return NULL;
    /* llama.cpp pads the context to a multiple of 256 before it compares */
    int64_t padded = ((int64_t)n_ctx + 255) / 256 * 256;
    return padded > d->rope_orig_ctx ? "rope_factors_long.weight" : "rope_factors_short.weight";
}
