/* The tensors each block kind reads, checked for one layer: the attention
 * block's norm, projections (separate or fused), biases, q/k norms and
 * post-norm; the FFN block's norm, gate/up/down (separate or fused) or the
 * router, experts and shared expert, and post-norm. */
#include "arch.h"
#include "../model_internal.h"

#include "../../gguf/base/sl_internal.h"

static int check_attn(const sl_model_desc *d, const sl_attn_block *b, const sl_gguf *g, uint32_t l)
{
    const uint64_t E = (uint64_t)d->n_embd, Q = (uint64_t)d->q_dim, KV = (uint64_t)d->kv_dim;
    const uint64_t HD = (uint64_t)d->head_dim;
    int rc;
    if (b->kind == SL_ATTN_RECURRENT) return sl_arch_check_gdn(d, g, l);
    if (b->kind != SL_ATTN_SOFTMAX)
        return sl_err_set(SL_EUNSUPPORTED, "layer %u: attention block kind %d not supported", l, b->kind);
    if ((rc = sl_model_check_layer_tensor(g, l, "attn_norm.weight", E, 0, T_F32))) return rc;
    if (b->out_gate) {   /* q | gate per head, then k, v */
        if ((rc = sl_model_check_layer_tensor(g, l, "attn_q.weight", E, 2 * Q, T_MATRIX)) ||
            (rc = sl_model_check_layer_tensor(g, l, "attn_k.weight", E, KV, T_MATRIX)) ||
            (rc = sl_model_check_layer_tensor(g, l, "attn_v.weight", E, KV, T_MATRIX)))
            return rc;
    } else if (b->fused_qkv) {
        if ((rc = sl_model_check_layer_tensor(g, l, "attn_qkv.weight", E, Q + 2 * KV, T_MATRIX))) return rc;
    } else if ((rc = sl_model_check_layer_tensor(g, l, "attn_q.weight", E, Q, T_MATRIX)) ||
               (rc = sl_model_check_layer_tensor(g, l, "attn_k.weight", E, KV, T_MATRIX)) ||
               (rc = sl_model_check_layer_tensor(g, l, "attn_v.weight", E, KV, T_MATRIX))) {
        return rc;
    }
    if ((rc = sl_model_check_layer_tensor(g, l, "attn_output.weight", Q, E, T_MATRIX))) return rc;
    if (b->qkv_bias &&
        ((rc = sl_model_check_layer_tensor(g, l, "attn_q.bias", Q, 0, T_F32)) ||
         (rc = sl_model_check_layer_tensor(g, l, "attn_k.bias", KV, 0, T_F32)) ||
         (rc = sl_model_check_layer_tensor(g, l, "attn_v.bias", KV, 0, T_F32))))
        return rc;
    if (b->qk_norm &&
        ((rc = sl_model_check_layer_tensor(g, l, "attn_q_norm.weight", HD, 0, T_F32)) ||
         (rc = sl_model_check_layer_tensor(g, l, "attn_k_norm.weight", HD, 0, T_F32))))
        return rc;
    if (b->post_norm) return sl_model_check_layer_tensor(g, l, "post_attention_norm.weight", E, 0, T_F32);
    return 0;
}

static int check_moe(const sl_model_desc *d, const sl_ffn_block *b, const sl_gguf *g, uint32_t l)
{
    const uint64_t E = (uint64_t)d->n_embd, FE = (uint64_t)d->n_ff_exp, NE = (uint64_t)d->n_expert;
    const uint64_t FS = (uint64_t)d->n_ff_shexp;
    int rc;
    if ((rc = sl_model_check_layer_tensor(g, l, "ffn_gate_inp.weight", E, NE, T_MATRIX)) ||
        (rc = sl_model_check_experts(g, l, "ffn_gate_exps.weight", E, FE, NE)) ||
        (rc = sl_model_check_experts(g, l, "ffn_up_exps.weight", E, FE, NE)) ||
        (rc = sl_model_check_experts(g, l, "ffn_down_exps.weight", FE, E, NE)))
        return rc;
    if (b->shared_expert &&
        ((rc = sl_model_check_layer_tensor(g, l, "ffn_gate_inp_shexp.weight", E, 0, T_F32)) ||
         (rc = sl_model_check_layer_tensor(g, l, "ffn_gate_shexp.weight", E, FS, T_MATRIX)) ||
         (rc = sl_model_check_layer_tensor(g, l, "ffn_up_shexp.weight", E, FS, T_MATRIX)) ||
         (rc = sl_model_check_layer_tensor(g, l, "ffn_down_shexp.weight", FS, E, T_MATRIX))))
        return rc;
    return 0;
}

static int check_ffn(const sl_model_desc *d, const sl_ffn_block *b, const sl_gguf *g, uint32_t l)
{
    const uint64_t E = (uint64_t)d->n_embd, FF = (uint64_t)d->n_ff;
    int rc;
    if ((rc = sl_model_check_layer_tensor(g, l, b->norm_post_attn ? "post_attention_norm.weight" : "ffn_norm.weight",
                                          E, 0, T_F32)))
        return rc;
    switch (b->kind) {
    case SL_FFN_GATED:
        if (b->fused_gate_up) rc = sl_model_check_layer_tensor(g, l, "ffn_up.weight", E, 2 * FF, T_MATRIX);
        else if (!(rc = sl_model_check_layer_tensor(g, l, "ffn_gate.weight", E, FF, T_MATRIX)))
            rc = sl_model_check_layer_tensor(g, l, "ffn_up.weight", E, FF, T_MATRIX);
        if (!rc) rc = sl_model_check_layer_tensor(g, l, "ffn_down.weight", FF, E, T_MATRIX);
        break;
    case SL_FFN_MOE:
        if (b->post_norm)   /* the expert sum goes straight into the residual (forward_moe.c) */
            return sl_err_set(SL_EUNSUPPORTED, "layer %u: a MoE FFN block with a post-norm not supported", l);
        rc = check_moe(d, b, g, l);
        break;
    default:
        return sl_err_set(SL_EUNSUPPORTED, "layer %u: FFN block kind %d not supported", l, b->kind);
    }
    if (rc) return rc;
    if (b->post_norm) return sl_model_check_layer_tensor(g, l, "post_ffw_norm.weight", E, 0, T_F32);
    return 0;
}

int sl_arch_check_layer(const sl_model_desc *d, const sl_gguf *g, uint32_t l)
{
    const sl_layer_desc *ld = sl_model_layer(d, (int32_t)l);
    int rc = check_attn(d, &ld->attn, g, l);
    return rc ? rc : check_ffn(d, &ld->ffn, g, l);
}
