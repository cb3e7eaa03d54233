/* The Gated DeltaNet block (SL_ATTN_RECURRENT) of the Qwen3.5 families: its
 * keys, which layers have it (attention.recurrent_layers, else all but every
 * full_attention_interval-th), and its tensors: the fused q | k | v
 * projection and the gate z, the causal conv taps, the decay (ssm_a,
 * ssm_dt.bias), the beta / alpha projections, the per-head output norm and
 * the output projection (qwen3next: grouped v heads, fused ssm_ba, maybe
 * fused ssm_in; forward_gdn_proj.c). The other layers keep the row's attention block:
 * gated (q | gate per head), q/k norms, partial rope (IMROPE whose sections
 * all carry the token position for text: NEOX on rope.dimension_count dims).
 * The trailing MTP blocks (nextn_predict_layers) are such attention blocks
 * plus the NextN tensors: checked, then left out as every family's NextN
 * blocks are (d->n_layer_nextn). */
#include "arch.h"
#include "../model_internal.h"

#include <stdio.h>

#include "../../gguf/base/sl_internal.h"

#define SL_MAX_SSM_HEADS 1024
#define SL_MAX_SSM_DIM 1024
#define SL_MAX_SSM_CONV 64

/* attention.recurrent_layers: one bool (or integer 0/1) per layer. */
static int recurrent_array(sl_model_desc *d, const sl_gguf *g, int64_t ki, bool *rec)
{
    const sl_gguf_value *v = sl_gguf_kv_value(g, ki);
    const char *a = d->arch_name;
    if (!v || sl_gguf_value_type(v) != SL_GGUF_ARRAY || sl_gguf_value_arr_len(v) != (uint64_t)d->n_layer)
        return sl_err_set(SL_ETYPE, "model metadata: key '%s.attention.recurrent_layers' is not an array of "
                          "%d values (one per layer)", a, d->n_layer);
    for (int32_t l = 0; l < d->n_layer; l++) {
        sl_gguf_value tmp;
        const sl_gguf_value *e;
        if (sl_gguf_value_arr_at(v, (uint64_t)l, &tmp, &e)) return sl_err_set(SL_EFORMAT, "model metadata: "
                                   "key '%s.attention.recurrent_layers': element %d unreadable", a, l);
        uint32_t t = sl_gguf_value_type(e);
        if (t == SL_GGUF_BOOL || t == SL_GGUF_U8 || t == SL_GGUF_U16 || t == SL_GGUF_U32 || t == SL_GGUF_U64)
            rec[l] = sl_gguf_value_u64(e) != 0;
        else if (t == SL_GGUF_I8 || t == SL_GGUF_I16 || t == SL_GGUF_I32 || t == SL_GGUF_I64)
            rec[l] = sl_gguf_value_i64(e) != 0;
        else
            return sl_err_set(SL_ETYPE, "model metadata: key '%s.attention.recurrent_layers': element %d is "
                              "not a bool or integer", a, l);
    }
    return 0;
}

/* The Gated DeltaNet sizes: q/k heads (group_count), v heads
 * (time_step_rank), head size (state_size; v heads as wide: inner_size =
 * v heads x state_size), conv taps. */
static int ssm_keys(sl_model_desc *d, const sl_gguf *g)
{
    const char *a = d->arch_name;
    uint32_t conv, dk, nk, nv, inner;
    int rc;
    if ((rc = sl_model_key_u32(g, a, "ssm.conv_kernel", &conv, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "ssm.state_size", &dk, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "ssm.group_count", &nk, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "ssm.time_step_rank", &nv, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "ssm.inner_size", &inner, true, 0)))
        return rc;
    if (conv < 1 || conv > SL_MAX_SSM_CONV)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.ssm.conv_kernel' is %u (1..%d)", a, conv,
                          SL_MAX_SSM_CONV);
    if (dk < 1 || dk > SL_MAX_SSM_DIM)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.ssm.state_size' is %u (1..%d)", a, dk,
                          SL_MAX_SSM_DIM);
    if (nk < 1 || nk > SL_MAX_SSM_HEADS || nv < 1 || nv > SL_MAX_SSM_HEADS || nv % nk)
        return sl_err_set(SL_ERANGE, "model metadata: keys '%s.ssm.group_count' %u / '%s.ssm.time_step_rank' "
                          "%u: q/k and v heads 1..%d, v heads a multiple of q/k heads", a, nk, a, nv,
                          SL_MAX_SSM_HEADS);
    if ((uint64_t)inner != (uint64_t)nv * dk)
        return sl_err_set(SL_EUNSUPPORTED, "model metadata: key '%s.ssm.inner_size' %u is not time_step_rank "
                          "%u x state_size %u (v heads as wide as q/k heads)", a, inner, nv, dk);
    d->ssm_conv = (int32_t)conv;
    d->ssm_dk = d->ssm_dv = (int32_t)dk;
    d->ssm_nk = (int32_t)nk;
    d->ssm_nv = (int32_t)nv;
    return 0;
}

int sl_arch_gdn_keys(sl_model_desc *d, const sl_gguf *g)
{
    const char *a = d->arch_name;
    uint32_t interval, nextn;
    int rc;
    if ((rc = sl_model_key_u32(g, a, "nextn_predict_layers", &nextn, false, 0))) return rc;
    if (nextn >= (uint32_t)d->n_layer)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.nextn_predict_layers' is %u of %d blocks", a, nextn,
                          d->n_layer);
    if ((rc = ssm_keys(d, g))) return rc;
    /* kind 0: Gated DeltaNet; kind 1: the row's (softmax) attention */
    d->kind[1] = d->kind[0];
    d->kind[0].attn = (sl_attn_block){ .kind = SL_ATTN_RECURRENT };
    d->n_kinds = 2;
    /* the trailing MTP blocks are full-attention blocks, checked with the
     * others, then left out like every family's NextN blocks; the interval
     * counts over the main stack (the array, as llama.cpp reads it, covers
     * every block) */
    const int32_t n_main = d->n_layer - (int32_t)nextn;
    bool rec[SL_MAX_LAYERS];
    char key[96];
    snprintf(key, sizeof key, "%s.attention.recurrent_layers", a);
    int64_t ki = sl_gguf_find_key(g, key);
    if (ki >= 0) {
        if ((rc = recurrent_array(d, g, ki, rec))) return rc;
    } else {
        if ((rc = sl_model_key_u32(g, a, "full_attention_interval", &interval, false, 4))) return rc;
        if (interval < 1 || interval > SL_MAX_LAYERS)
            return sl_err_set(SL_ERANGE, "model metadata: key '%s.full_attention_interval' is %u", a, interval);
        for (int32_t l = 0; l < n_main; l++) rec[l] = (uint32_t)(l + 1) % interval != 0;
    }
    for (int32_t l = 0; l < d->n_layer; l++) d->layer_kind[l] = l < n_main && rec[l] ? 0 : 1;
    d->n_layer = n_main;
    d->n_layer_nextn = (int32_t)nextn;
    return sl_arch_nextn_check(d, g);
}

/* The projections: attn_qkv + attn_gate, else (grouped) the older fused
 * ssm_in; beta / alpha as two matrices, or (grouped) one ssm_ba. */
static int check_proj(const sl_model_desc *d, const sl_gguf *g, uint32_t l, uint64_t CH)
{
    const uint64_t E = (uint64_t)d->n_embd, NV = (uint64_t)d->ssm_nv, V = NV * (uint64_t)d->ssm_dv;
    char name[96];
    int rc;
    snprintf(name, sizeof name, "blk.%u.attn_qkv.weight", l);
    if (d->ssm_grouped && !sl_gguf_find_tensor(g, name)) {
        snprintf(name, sizeof name, "blk.%u.ssm_in.weight", l);
        if (!sl_gguf_find_tensor(g, name))
            return sl_err_set(SL_ENOENT, "tensor 'blk.%u.attn_qkv.weight' missing from the model (nor the fused "
                              "'blk.%u.ssm_in.weight')", l, l);
        if ((rc = sl_model_check_layer_tensor(g, l, "ssm_in.weight", E, CH + V, T_MATRIX))) return rc;
    } else if ((rc = sl_model_check_layer_tensor(g, l, "attn_qkv.weight", E, CH, T_MATRIX)) ||
               (rc = sl_model_check_layer_tensor(g, l, "attn_gate.weight", E, V, T_MATRIX))) {
        return rc;
    }
    if (d->ssm_grouped) return sl_model_check_layer_tensor(g, l, "ssm_ba.weight", E, 2 * NV, T_MATRIX);
    if ((rc = sl_model_check_layer_tensor(g, l, "ssm_beta.weight", E, NV, T_MATRIX)) ||
        (rc = sl_model_check_layer_tensor(g, l, "ssm_alpha.weight", E, NV, T_MATRIX)))
        return rc;
    return 0;
}

int sl_arch_check_gdn(const sl_model_desc *d, const sl_gguf *g, uint32_t l)
{
    const uint64_t E = (uint64_t)d->n_embd, NV = (uint64_t)d->ssm_nv, DV = (uint64_t)d->ssm_dv;
    const uint64_t CH = 2 * (uint64_t)d->ssm_nk * (uint64_t)d->ssm_dk + NV * DV;
    int rc;
    if ((rc = sl_model_check_layer_tensor(g, l, "attn_norm.weight", E, 0, T_F32)) ||
        (rc = check_proj(d, g, l, CH)) ||
        (rc = sl_model_check_layer_tensor(g, l, "ssm_conv1d.weight", (uint64_t)d->ssm_conv, CH, T_F32)) ||
        (rc = sl_model_check_layer_tensor(g, l, "ssm_dt.bias", NV, 0, T_F32)) ||
        (rc = sl_model_check_layer_tensor(g, l, "ssm_a", NV, 0, T_F32)) ||
        (rc = sl_model_check_layer_tensor(g, l, "ssm_norm.weight", DV, 0, T_F32)) ||
        (rc = sl_model_check_layer_tensor(g, l, "ssm_out.weight", NV * DV, E, T_MATRIX)))
        return rc;
    return 0;
}
