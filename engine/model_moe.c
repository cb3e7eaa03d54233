/* Model description of the MoE FFN families: Mixtral (llama with
 * llama.expert_count > 0), qwen2moe (routed + sigmoid-gated shared expert)
 * and qwen3moe (qwen3 attention with per-head q/k norms). Facts as llama.cpp
 * 2026-08 applies them (../shared/golden/README.md, synth2): the
 * renormalization of the chosen weights is fixed per architecture, not read
 * from a key. */
#include "model.h"
#include "model_internal.h"

#include <stdio.h>
#include <string.h>

#include "../quant/quant.h"
#include "../gguf/base/sl_internal.h"

#define SL_MAX_EXPERTS 512   /* llama.cpp's limit; keeps per-token routing scratch small */

int sl_model_moe_keys(sl_model_desc *d, const sl_gguf *g)
{
    const char *a = d->arch_name;
    const bool moe_arch = d->arch == SL_ARCH_QWEN2MOE || d->arch == SL_ARCH_QWEN3MOE;
    if (!moe_arch && d->arch != SL_ARCH_LLAMA) return 0;
    uint32_t ne, nu, ffe, ffs = 0;
    int rc = sl_model_key_u32(g, a, "expert_count", &ne, moe_arch, 0);
    if (rc) return rc;
    if (!moe_arch && ne == 0) return 0;   /* a dense llama */
    if (ne < 1 || ne > SL_MAX_EXPERTS)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.expert_count' is %u (1..%d)", a, ne,
                          SL_MAX_EXPERTS);
    if ((rc = sl_model_key_u32(g, a, "expert_used_count", &nu, true, 0))) return rc;
    if (nu < 1 || nu > ne)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.expert_used_count' is %u (1..expert_count "
                          "%u)", a, nu, ne);
    if (d->arch == SL_ARCH_LLAMA) {
        ffe = (uint32_t)d->n_ff;   /* the llama loader has no expert-width key */
    } else {
        /* absent: n_ff / expert_used_count, as llama.cpp */
        if ((rc = sl_model_key_u32(g, a, "expert_feed_forward_length", &ffe, false,
                                   (uint32_t)d->n_ff / nu)))
            return rc;
        if (ffe < 1 || ffe > (1u << 22))
            return sl_err_set(SL_ERANGE, "model metadata: key '%s.expert_feed_forward_length' is %u",
                              a, ffe);
    }
    if (d->arch == SL_ARCH_QWEN2MOE) {
        if ((rc = sl_model_key_u32(g, a, "expert_shared_feed_forward_length", &ffs, false,
                                   (uint32_t)d->n_ff)))
            return rc;
        if (ffs < 1 || ffs > (1u << 22))
            return sl_err_set(SL_ERANGE, "model metadata: key '%s.expert_shared_feed_forward_length' "
                              "is %u", a, ffs);
    }
    d->n_expert = (int32_t)ne;
    d->n_expert_used = (int32_t)nu;
    d->n_ff_exp = (int32_t)ffe;
    d->n_ff_shexp = (int32_t)ffs;
    /* qwen2moe uses the k probabilities as they are; mixtral and qwen3moe renormalize */
    d->expert_weights_norm = d->arch != SL_ARCH_QWEN2MOE;
    if (moe_arch) d->rope_neox = true;
    if (d->arch == SL_ARCH_QWEN2MOE) d->has_qkv_bias = true;
    if (d->arch == SL_ARCH_QWEN3MOE) d->has_qk_norm = true;   /* tensors: model_dense.c */
    return 0;
}

/* A 3-D expert tensor [ne0, ne1, n_expert] of a weight type the kernels multiply. */
static int check_experts(const sl_gguf *g, const char *name, uint64_t ne0, uint64_t ne1, uint64_t ne2)
{
    const sl_gguf_tensor *t = sl_gguf_find_tensor(g, name);
    if (!t) return sl_err_set(SL_ENOENT, "tensor '%s' missing from the model", name);
    if (t->n_dims != 3 || t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != ne2)
        return sl_err_set(SL_ESHAPE, "tensor '%s': shape [%llu, %llu, %llu] (%u dims), expected "
                          "[%llu, %llu, %llu]", name, (unsigned long long)t->ne[0],
                          (unsigned long long)(t->n_dims > 1 ? t->ne[1] : 1),
                          (unsigned long long)(t->n_dims > 2 ? t->ne[2] : 1), t->n_dims,
                          (unsigned long long)ne0, (unsigned long long)ne1, (unsigned long long)ne2);
    if (t->type >= SL_GGML_TYPE_COUNT || !sl_quant_is_supported((int)t->type)) {
        const char *tn = sl_gguf_type_name(t->type);
        return sl_err_set(SL_EUNSUPPORTED, "tensor '%s': type %s (%u) not supported for a matrix",
                          name, tn ? tn : "unknown", t->type);
    }
    return 0;
}

int sl_model_moe_layer(const sl_model_desc *d, const sl_gguf *g, uint32_t l)
{
    if (!d->n_expert) return 0;
    const uint64_t E = (uint64_t)d->n_embd, FE = (uint64_t)d->n_ff_exp, NE = (uint64_t)d->n_expert;
    const uint64_t FS = (uint64_t)d->n_ff_shexp;
    char name[96];
    int rc;
#define NAME(s) (snprintf(name, sizeof name, "blk.%u.%s", l, s), name)
    if ((rc = sl_model_check_tensor(g, NAME("ffn_gate_inp.weight"), E, NE, T_MATRIX, false, NULL)) ||
        (rc = check_experts(g, NAME("ffn_gate_exps.weight"), E, FE, NE)) ||
        (rc = check_experts(g, NAME("ffn_up_exps.weight"), E, FE, NE)) ||
        (rc = check_experts(g, NAME("ffn_down_exps.weight"), FE, E, NE)))
        return rc;
    if (FS &&
        ((rc = sl_model_check_tensor(g, NAME("ffn_gate_inp_shexp.weight"), E, 0, T_F32, false, NULL)) ||
         (rc = sl_model_check_tensor(g, NAME("ffn_gate_shexp.weight"), E, FS, T_MATRIX, false, NULL)) ||
         (rc = sl_model_check_tensor(g, NAME("ffn_up_shexp.weight"), E, FS, T_MATRIX, false, NULL)) ||
         (rc = sl_model_check_tensor(g, NAME("ffn_down_shexp.weight"), FS, E, T_MATRIX, false, NULL))))
        return rc;
#undef NAME
    return 0;
}
