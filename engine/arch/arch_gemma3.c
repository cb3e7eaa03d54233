/* gemma3: interleaved sliding-window layers with their own rope base (all
 * but the last of every sliding_window_pattern layers), embeddings scaled by
 * sqrt(n_embd), per-head q/k norms, post-norms around attention and FFN,
 * GeGLU, q scaled by 1/sqrt(key_length), optional final logit soft cap. */
#include "arch.h"
#include "../model_internal.h"

#include <math.h>

#include "../../gguf/base/sl_internal.h"

int sl_arch_gemma_common(sl_model_desc *d)
{
    const char *a = d->arch_name;
    if (!(d->rope_base_swa > 0))
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.rope.freq_base_swa' = %g invalid", a,
                          (double)d->rope_base_swa);
    if (d->logit_softcap < 0)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.final_logit_softcapping' = %g invalid", a,
                          (double)d->logit_softcap);
    d->embd_scale = sqrtf((float)d->n_embd);
    return 0;
}

static int gemma3_keys(sl_model_desc *d, const sl_gguf *g)
{
    const char *a = d->arch_name;
    int rc;
    if ((rc = sl_model_key_f32(g, a, "rope.freq_base_swa", &d->rope_base_swa, false, 10000.0f)) ||
        (rc = sl_model_key_f32(g, a, "final_logit_softcapping", &d->logit_softcap, false, 0.0f)) ||
        (rc = sl_arch_gemma_common(d)))
        return rc;
    /* llama.cpp scales by 1/sqrt(n_embd/n_head) only for the 62-layer (27B) model */
    d->kind[0].attn.q_scale = 1.0f / sqrtf((float)(d->n_layer == 62 ? d->n_embd / d->n_head : d->head_dim));
    return sl_arch_window_keys(d, g, 6, 1);   /* after kind 0 is complete: kind 1 copies it */
}

const sl_arch sl_arch_gemma3 = { .name = "gemma3", .rope_neox = true, .keys = gemma3_keys,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .qk_norm = true, .post_norm = true },
               .ffn = { .kind = SL_FFN_GATED, .act = SL_ACT_GELU, .post_norm = true } } };
