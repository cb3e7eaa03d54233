/* The expert keys every MoE family reads (Mixtral as llama with
 * expert_count > 0, qwen2moe, qwen3moe). As llama.cpp 2026-08 applies them
 * (../shared/golden/README.md, synth2): an absent expert width is
 * n_ff / expert_used_count, an absent shared width n_ff. The DeepSeek-V3-style
 * families (synth3: deepseek2, glm4moe) add gating, scale, groups, leading
 * dense layers, ungated shared experts and NextN blocks. */
#include "arch.h"
#include "../model_internal.h"

#include <stdio.h>

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

/* "<arch>.<suffix>" as a bool, def when absent. */
static int key_bool(const sl_gguf *g, const char *a, const char *suffix, bool *out, bool def)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", a, suffix);
    int rc = sl_gguf_get_bool(g, key, out);
    if (rc == SL_ENOENT) { *out = def; return 0; }
    return rc ? sl_err_set(rc, "model metadata: key '%s': %s", key, sl_strerror(rc)) : 0;
}

/* Groups: n_group divides n_expert, each group of at least 2 experts (its
 * score sums its two best), used groups 1..n_group; 0 or 1 group = none. */
static int moe_groups(sl_model_desc *d, const sl_gguf *g)
{
    const char *a = d->arch_name;
    uint32_t ng, nu;
    int rc;
    if ((rc = sl_model_key_u32(g, a, "expert_group_count", &ng, false, 0)) ||
        (rc = sl_model_key_u32(g, a, "expert_group_used_count", &nu, false, 0)))
        return rc;
    if (ng <= 1) return 0;
    if (ng > 64 || ng > (uint32_t)d->n_expert || d->n_expert % (int32_t)ng || d->n_expert / (int32_t)ng < 2 || nu < 1 ||
        nu > ng || (int32_t)(nu * ((uint32_t)d->n_expert / ng)) < d->n_expert_used)
        return sl_err_set(SL_ERANGE, "model metadata: %u expert groups, %u used, do not fit %d experts (top %d)",
                          ng, nu, d->n_expert, d->n_expert_used);
    d->n_expert_group = (int32_t)ng;
    d->n_expert_group_used = (int32_t)nu;
    return 0;
}

int sl_arch_moe_lead_keys(sl_model_desc *d, const sl_gguf *g, int def_gating)
{
    const char *a = d->arch_name;
    sl_ffn_block *f = &d->kind[0].ffn;
    uint32_t lead, nextn, nsh, gf;
    bool found, norm;
    int rc;
    if ((rc = sl_arch_moe_read(d, g, true, true, false, &found)) ||
        (rc = sl_model_key_u32(g, a, "leading_dense_block_count", &lead, false, 0)) ||
        (rc = sl_model_key_u32(g, a, "nextn_predict_layers", &nextn, false, 0)) ||
        (rc = sl_model_key_u32(g, a, "expert_shared_count", &nsh, false, 0)) ||
        (rc = sl_model_key_u32(g, a, "expert_gating_func", &gf, false, (uint32_t)def_gating + 1)) ||
        (rc = sl_model_key_f32(g, a, "expert_weights_scale", &f->weights_scale, false, 0.0f)) ||
        (rc = key_bool(g, a, "expert_weights_norm", &norm, false)) || (rc = moe_groups(d, g)))
        return rc;
    if (nextn >= (uint32_t)d->n_layer || lead > (uint32_t)d->n_layer - nextn)
        return sl_err_set(SL_ERANGE, "model metadata: %u leading dense and %u NextN blocks of %d", lead, nextn,
                          d->n_layer);
    if (nsh > 64 || (uint64_t)nsh * (uint64_t)d->n_ff_exp > (1u << 22))
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.expert_shared_count' is %u", a, nsh);
    if (gf != 1 && gf != 2)
        return sl_err_set(SL_EUNSUPPORTED, "model metadata: key '%s.expert_gating_func' is %u (1 softmax, "
                          "2 sigmoid)", a, gf);
    if (!(f->weights_scale >= 0 && f->weights_scale < 1e6f))
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.expert_weights_scale' is %g", a,
                          (double)f->weights_scale);
    f->gating = gf == 2 ? SL_GATING_SIGMOID : SL_GATING_SOFTMAX;
    f->weights_norm = norm;
    f->shared_expert = f->shared_ungated = nsh > 0;
    d->n_ff_shexp = (int32_t)nsh * d->n_ff_exp;   /* the shared experts side by side */
    /* the selection bias where the first MoE layer has one (DeepSeek-V3, GLM-4.5; not V2) */
    char name[64];
    snprintf(name, sizeof name, "blk.%u.exp_probs_b.bias", lead);
    f->sel_bias = sl_gguf_find_tensor(g, name) != NULL;
    /* the NextN blocks are MoE blocks too (checked, not run) */
    d->n_layer_nextn = (int32_t)nextn;
    d->kind[1] = d->kind[0];
    d->kind[0].ffn = (sl_ffn_block){ .kind = SL_FFN_GATED, .act = SL_ACT_SILU,
                                     .norm_post_attn = f->norm_post_attn };
    d->n_kinds = 2;
    for (int32_t l = 0; l < d->n_layer; l++) d->layer_kind[l] = l >= (int32_t)lead;
    d->n_layer -= (int32_t)nextn;
    return 0;
}

int sl_arch_nextn_check(const sl_model_desc *d, const sl_gguf *g)
{
    const uint64_t E = (uint64_t)d->n_embd;
    int rc = 0;
    for (int32_t l = d->n_layer; l < d->n_layer + d->n_layer_nextn && !rc; l++) {
        const uint32_t u = (uint32_t)l;
        if ((rc = sl_model_check_layer_tensor(g, u, "nextn.eh_proj.weight", 2 * E, E, T_MATRIX)) ||
            (rc = sl_model_check_layer_tensor(g, u, "nextn.enorm.weight", E, 0, T_F32)))
            break;
        if ((rc = sl_model_check_layer_tensor(g, u, "nextn.hnorm.weight", E, 0, T_F32))) break;
        /* optional in llama.cpp: checked where present */
        char name[64];
        snprintf(name, sizeof name, "blk.%u.nextn.shared_head_norm.weight", u);
        rc = sl_model_check_tensor(g, name, E, 0, T_F32, true, NULL);
    }
    return rc;
}
