/* deepseek2 (DeepSeek-V2/V3, Kimi-K2): multi-head latent attention (q
 * through the q LoRA or attn_q; the kv latent c and one shared rope key from
 * attn_kv_a_mqa; per-head k_b / v_b applied in the absorbed form, so the
 * cache holds one [c, k_rope] row per position), NORM rope with YaRN whose
 * cos/sin keep magnitude 1 and whose mscale^2 goes into the attention scale;
 * leading dense layers, then routed experts (softmax or sigmoid, selection
 * bias, groups, renormalized, scaled) with ungated shared experts. As
 * llama.cpp 2026-08 computes it (../shared/golden/README.md, synth3). */
#include "arch.h"
#include "../model_internal.h"

#include <math.h>
#include <stdio.h>

#include "../../gguf/base/sl_internal.h"

static int deepseek2_keys(sl_model_desc *d, const sl_gguf *g)
{
    const char *a = d->arch_name;
    /* absent q_lora_rank: q straight from attn_q (V2-Lite) */
    static const char *const keys[] = { "q_lora_rank", "kv_lora_rank", "key_length_mla", "value_length_mla",
                                        "value_length" };
    uint32_t k[5];
    for (int i = 0; i < 5; i++) {
        char key[48];
        snprintf(key, sizeof key, "attention.%s", keys[i]);
        int rc = sl_model_key_u32(g, a, key, &k[i], i == 1, 0);
        if (rc) return rc;
    }
    const uint32_t ql = k[0], kvl = k[1], kd = k[2], vd = k[3], vlen = k[4];
    if (kd == 0 || vd == 0)   /* files converted before the absorbed form: attn_kv_b */
        return sl_err_set(SL_EUNSUPPORTED, "model metadata: '%s.attention.key_length_mla' / value_length_mla "
                          "missing (a DeepSeek file in the older attn_kv_b layout; reconvert it)", a);
    /* the cache row [c, k_rope] of the single kv head is key_length, c alone value_length */
    if (d->n_head_kv != 1 || kvl < 1 || (int64_t)kvl + d->n_rot != d->head_dim || vlen != kvl ||
        kd <= (uint32_t)d->n_rot || kd > 1024 || vd > 1024 || ql > (1u << 16))
        return sl_err_set(SL_ERANGE, "model metadata: MLA shape invalid (kv heads %d, kv_lora_rank %u, rope %d, "
                          "key_length %d, value_length %u, key/value_length_mla %u/%u, q_lora_rank %u)",
                          d->n_head_kv, kvl, d->n_rot, d->head_dim, vlen, kd, vd, ql);
    d->q_lora_rank = (int32_t)ql;
    d->kv_lora_rank = (int32_t)kvl;
    d->mla_k_dim = (int32_t)kd;
    d->mla_v_dim = (int32_t)vd;
    /* llama.cpp passes rope the attention factor 1 / (1 + 0.1 ln factor), which
     * cancels rope_yarn's own; the YaRN mscale goes into the attention scale */
    d->rope_attn_factor = 1.0f;
    const float ms = d->rope_scaling == SL_ROPE_SCALE_YARN ? 1.0f + d->yarn_log_mul * logf(d->rope_scale_factor)
                                                           : 1.0f;
    d->mla_kq_scale = ms * ms / sqrtf((float)kd);
    return sl_arch_moe_lead_keys(d, g, SL_GATING_SOFTMAX);
}

const sl_arch sl_arch_deepseek2 = { .name = "deepseek2", .keys = deepseek2_keys,
    .layer = { .attn = { .kind = SL_ATTN_MLA }, .ffn = { .kind = SL_FFN_MOE, .act = SL_ACT_SILU } } };
