/* gemma3: interleaved sliding-window layers with their own rope base (all
 * but the last of every sliding_window_pattern layers), embeddings scaled by
 * sqrt(n_embd), per-head q/k norms, post-norms around attention and FFN,
 * GeGLU, q scaled by 1/sqrt(key_length), optional final logit soft cap. */
#include "arch.h"
#include "../model_internal.h"

#include <math.h>

#include "../../gguf/base/sl_internal.h"

int sl_arch_gemma_common(sl_model_desc *d, uint32_t swa)
{
    const char *a = d->arch_name;
    if (swa < 1 || swa > (1u << 30))
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.attention.sliding_window' = %u invalid", a, swa);
    if (!(d->rope_base_swa > 0))
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.rope.freq_base_swa' = %g invalid", a,
                          (double)d->rope_base_swa);
    if (d->logit_softcap < 0)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.final_logit_softcapping' = %g invalid", a,
                          (double)d->logit_softcap);
    d->n_swa = (int32_t)swa;
    d->embd_scale = sqrtf((float)d->n_embd);
    return 0;
}

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
    if ((rc = sl_arch_gemma_common(d, swa))) return rc;
    if (period < 1 || period > 4096)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.attention.sliding_window_pattern' = %u invalid",
                          a, period);
    /* llama.cpp scales by 1/sqrt(n_embd/n_head) only for the 62-layer (27B) model */
    d->kind[0].attn.q_scale = 1.0f / sqrtf((float)(d->n_layer == 62 ? d->n_embd / d->n_head : d->head_dim));
    /* kind 1: the sliding-window layers */
    d->kind[1] = d->kind[0];
    d->kind[1].attn.window = d->n_swa;
    d->n_kinds = 2;
    for (int32_t l = 0; l < d->n_layer; l++) d->layer_kind[l] = l % (int32_t)period < (int32_t)period - 1;
    return 0;
}

const sl_arch sl_arch_gemma3 = { .name = "gemma3", .rope_neox = true, .keys = gemma3_keys,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .qk_norm = true, .post_norm = true },
               .ffn = { .kind = SL_FFN_GATED, .act = SL_ACT_GELU, .post_norm = true } } };
