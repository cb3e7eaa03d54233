/* The sliding-window keys of the families that interleave windowed and
 * full layers (gemma3, gpt-oss): the window (required) and its period (the
 * family's default without the key); all but the last layer of every period
 * attend to the window only. */
#include "arch.h"
#include "../model_internal.h"

#include "../../gguf/base/sl_internal.h"

int sl_arch_window_set(sl_model_desc *d, uint32_t swa)
{
    if (swa < 1 || swa > (1u << 30))
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.attention.sliding_window' = %u invalid",
                          d->arch_name, swa);
    d->n_swa = (int32_t)swa;
    return 0;
}

int sl_arch_window_keys(sl_model_desc *d, const sl_gguf *g, uint32_t def_period, uint32_t min_period)
{
    const char *a = d->arch_name;
    uint32_t swa, period;
    int rc;
    if ((rc = sl_model_key_u32(g, a, "attention.sliding_window", &swa, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "attention.sliding_window_pattern", &period, false, def_period)))
        return rc;
    if ((rc = sl_arch_window_set(d, swa))) return rc;
    if (period < min_period || period > 4096)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.attention.sliding_window_pattern' = %u invalid",
                          a, period);
    /* kind 1: the sliding-window layers */
    d->kind[1] = d->kind[0];
    d->kind[1].attn.window = d->n_swa;
    d->n_kinds = 2;
    for (int32_t l = 0; l < d->n_layer; l++) d->layer_kind[l] = l % (int32_t)period < (int32_t)period - 1;
    return 0;
}
