/* The expert keys every MoE family reads (Mixtral as llama with
 * expert_count > 0, qwen2moe, qwen3moe). As llama.cpp 2026-08 applies them
 * (../shared/golden/README.md, synth2): an absent expert width is
 * n_ff / expert_used_count, an absent shared width n_ff. */
#include "arch.h"
#include "../model_internal.h"

#include "../../gguf/base/sl_internal.h"

#define SL_MAX_EXPERTS 512   /* llama.cpp's limit; keeps per-token routing scratch small */

int sl_arch_moe_read(sl_model_desc *d, const sl_gguf *g, bool required, bool width_key, bool shared,
                     bool *found)
{
    const char *a = d->arch_name;
    uint32_t ne, nu, ffe = (uint32_t)d->n_ff, ffs = 0;
    *found = false;
    int rc = sl_model_key_u32(g, a, "expert_count", &ne, required, 0);
    if (rc) return rc;
    if (!required && ne == 0) return 0;   /* a dense model */
    if (ne < 1 || ne > SL_MAX_EXPERTS)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.expert_count' is %u (1..%d)", a, ne,
                          SL_MAX_EXPERTS);
    if ((rc = sl_model_key_u32(g, a, "expert_used_count", &nu, true, 0))) return rc;
    if (nu < 1 || nu > ne)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.expert_used_count' is %u (1..expert_count "
                          "%u)", a, nu, ne);
    if (width_key) {
        if ((rc = sl_model_key_u32(g, a, "expert_feed_forward_length", &ffe, false, (uint32_t)d->n_ff / nu)))
            return rc;
        if (ffe < 1 || ffe > (1u << 22))
            return sl_err_set(SL_ERANGE, "model metadata: key '%s.expert_feed_forward_length' is %u", a, ffe);
    }
    if (shared) {
        if ((rc = sl_model_key_u32(g, a, "expert_shared_feed_forward_length", &ffs, false, (uint32_t)d->n_ff)))
            return rc;
        if (ffs < 1 || ffs > (1u << 22))
            return sl_err_set(SL_ERANGE, "model metadata: key '%s.expert_shared_feed_forward_length' "
                              "is %u", a, ffs);
    }
    d->n_expert = (int32_t)ne;
    d->n_expert_used = (int32_t)nu;
    d->n_ff_exp = (int32_t)ffe;
    d->n_ff_shexp = (int32_t)ffs;
    *found = true;
    return 0;
}

int sl_arch_moe_keys(sl_model_desc *d, const sl_gguf *g)
{
    bool found;
    return sl_arch_moe_read(d, g, true, true, d->kind[0].ffn.shared_expert, &found);
}
