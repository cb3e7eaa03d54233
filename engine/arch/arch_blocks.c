/* The tensors each block kind reads, checked for one layer: the attention
 * block's norm, projections (separate or fused), biases, q/k norms, sinks
 * and post-norm, or latent attention's LoRA, latent and per-head tensors;
 * the FFN block's norm, gate/up/down (separate or fused) or the router (and
 * its bias), its selection bias, experts (and their biases) and shared
 * expert, and post-norm. */
#include "arch.h"
#include "../model_internal.h"

#include "../../gguf/base/sl_internal.h"

/* Multi-head latent attention (forward_mla.c). */
static int check_mla(const sl_model_desc *d, const sl_gguf *g, uint32_t l)
{
    const uint64_t E = (uint64_t)d->n_embd, H = (uint64_t)d->n_head, QL = (uint64_t)d->q_lora_rank;
    const uint64_t KVL = (uint64_t)d->kv_lora_rank, R = (uint64_t)d->n_rot;
    const uint64_t KD = (uint64_t)d->mla_k_dim, VD = (uint64_t)d->mla_v_dim;
    int rc;
    if (QL) {
        if ((rc = sl_model_check_layer_tensor(g, l, "attn_q_a.weight", E, QL, T_MATRIX)) ||
            (rc = sl_model_check_layer_tensor(g, l, "attn_q_a_norm.weight", QL, 0, T_F32)) ||
            (rc = sl_model_check_layer_tensor(g, l, "attn_q_b.weight", QL, H * KD, T_MATRIX)))
            return rc;
    } else if ((rc = sl_model_check_layer_tensor(g, l, "attn_q.weight", E, H * KD, T_MATRIX))) {
        return rc;
    }
    if ((rc = sl_model_check_layer_tensor(g, l, "attn_kv_a_mqa.weight", E, KVL + R, T_MATRIX)) ||
        (rc = sl_model_check_layer_tensor(g, l, "attn_kv_a_norm.weight", KVL, 0, T_F32)) ||
        (rc = sl_model_check_experts(g, l, "attn_k_b.weight", KD - R, KVL, H)) ||
        (rc = sl_model_check_experts(g, l, "attn_v_b.weight", KVL, VD, H)))
        return rc;
    return sl_model_check_layer_tensor(g, l, "attn_output.weight", H * VD, E, T_MATRIX);
}

static int check_attn(const sl_model_desc *d, const sl_attn_block *b, const sl_gguf *g, uint32_t l)
{
    const uint64_t HD = (uint64_t)(b->head_dim > 0 ? b->head_dim : d->head_dim);
    const uint64_t E = (uint64_t)d->n_embd, Q = (uint64_t)d->n_head * HD;
    const uint64_t KV = (uint64_t)(b->n_head_kv > 0 ? b->n_head_kv : d->n_head_kv) * HD;
    int rc;
    if (b->kind == SL_ATTN_RECURRENT) return sl_arch_check_gdn(d, g, l);
    if (b->kind != SL_ATTN_SOFTMAX && b->kind != SL_ATTN_MLA)
        return sl_err_set(SL_EUNSUPPORTED, "layer %u: attention block kind %d not supported", l, b->kind);
    if ((rc = sl_model_check_layer_tensor(g, l, "attn_norm.weight", E, 0, T_F32))) return rc;
    if (b->kind == SL_ATTN_MLA) return check_mla(d, g, l);
    if (b->kv_shared) {   /* q only: K/V come from an earlier layer's cache */
        if ((rc = sl_model_check_layer_tensor(g, l, "attn_q.weight", E, Q, T_MATRIX))) return rc;
    } else if (b->out_gate) {   /* q | gate per head, then k, v */
        if ((rc = sl_model_check_layer_tensor(g, l, "attn_q.weight", E, 2 * Q, T_MATRIX)) ||
            (rc = sl_model_check_layer_tensor(g, l, "attn_k.weight", E, KV, T_MATRIX)) ||
            (rc = sl_model_check_layer_tensor(g, l, "attn_v.weight", E, KV, T_MATRIX)))
            return rc;
    } else if (b->fused_qkv) {
        if ((rc = sl_model_check_layer_tensor(g, l, "attn_qkv.weight", E, Q + 2 * KV, T_MATRIX))) return rc;
    } else if ((rc = sl_model_check_layer_tensor(g, l, "attn_q.weight", E, Q, T_MATRIX)) ||
               (rc = sl_model_check_layer_tensor(g, l, "attn_k.weight", E, KV, T_MATRIX)) ||
               (!b->v_from_k && (rc = sl_model_check_layer_tensor(g, l, "attn_v.weight", E, KV, T_MATRIX)))) {
        return rc;
    }
    if ((rc = sl_model_check_layer_tensor(g, l, "attn_output.weight", Q, E, T_MATRIX))) return rc;
    if (b->o_bias && (rc = sl_model_check_layer_tensor(g, l, "attn_output.bias", E, 0, T_F32))) return rc;
    if (b->sinks &&
        (rc = sl_model_check_layer_tensor(g, l, "attn_sinks.weight", (uint64_t)d->n_head, 0, T_F32)))
        return rc;
    if (b->qkv_bias &&
        ((rc = sl_model_check_layer_tensor(g, l, "attn_q.bias", Q, 0, T_F32)) ||
         (rc = sl_model_check_layer_tensor(g, l, "attn_k.bias", KV, 0, T_F32)) ||
         (rc = sl_model_check_layer_tensor(g, l, "attn_v.bias", KV, 0, T_F32))))
        return rc;
    if (b->qk_norm &&
        ((rc = sl_model_check_layer_tensor(g, l, "attn_q_norm.weight", HD, 0, T_F32)) ||
         (!b->kv_shared && (rc = sl_model_check_layer_tensor(g, l, "attn_k_norm.weight", HD, 0, T_F32)))))
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
        (b->fused_gate_up ? (rc = sl_model_check_experts(g, l, "ffn_gate_up_exps.weight", E, 2 * FE, NE))
                          : ((rc = sl_model_check_experts(g, l, "ffn_gate_exps.weight", E, FE, NE)) ||
                             (rc = sl_model_check_experts(g, l, "ffn_up_exps.weight", E, FE, NE)))) ||
        (rc = sl_model_check_experts(g, l, "ffn_down_exps.weight", FE, E, NE)))
        return rc;
    if (b->down_scale && (rc = sl_model_check_layer_tensor(g, l, "ffn_down_exps.scale", NE, 0, T_F32))) return rc;
    if (b->dense_moe) {   /* gemma4: the dense FFN beside the experts, the norms of both */
        const uint64_t FF = (uint64_t)(b->n_ff > 0 ? b->n_ff : d->n_ff);
        static const char *const norms[] = { "ffn_gate_inp.scale", "post_ffw_norm_1.weight", "pre_ffw_norm_2.weight",
                                             "post_ffw_norm_2.weight" };
        for (int i = 0; i < 4; i++)
            if ((rc = sl_model_check_layer_tensor(g, l, norms[i], E, 0, T_F32))) return rc;
        if ((rc = sl_model_check_layer_tensor(g, l, "ffn_gate.weight", E, FF, T_MATRIX)) ||
            (rc = sl_model_check_layer_tensor(g, l, "ffn_up.weight", E, FF, T_MATRIX)) ||
            (rc = sl_model_check_layer_tensor(g, l, "ffn_down.weight", FF, E, T_MATRIX)))
            return rc;
    }
    if (b->router_bias && (rc = sl_model_check_layer_tensor(g, l, "ffn_gate_inp.bias", NE, 0, T_F32))) return rc;
    /* one bias row per expert, applied in F32 (small: they stay with the layer, not the expert reads) */
    if (b->expert_bias &&
        ((rc = sl_model_check_layer_tensor(g, l, "ffn_gate_exps.bias", FE, NE, T_F32)) ||
         (rc = sl_model_check_layer_tensor(g, l, "ffn_up_exps.bias", FE, NE, T_F32)) ||
         (rc = sl_model_check_layer_tensor(g, l, "ffn_down_exps.bias", E, NE, T_F32))))
        return rc;
    if (b->sel_bias && (rc = sl_model_check_layer_tensor(g, l, "exp_probs_b.bias", NE, 0, T_F32))) return rc;
    if (b->shared_expert && !b->shared_ungated &&
        (rc = sl_model_check_layer_tensor(g, l, "ffn_gate_inp_shexp.weight", E, 0, T_F32)))
        return rc;
    if (b->shared_expert &&
        ((rc = sl_model_check_layer_tensor(g, l, "ffn_gate_shexp.weight", E, FS, T_MATRIX)) ||
         (rc = sl_model_check_layer_tensor(g, l, "ffn_up_shexp.weight", E, FS, T_MATRIX)) ||
         (rc = sl_model_check_layer_tensor(g, l, "ffn_down_shexp.weight", FS, E, T_MATRIX))))
        return rc;
    return 0;
}

static int check_ffn(const sl_model_desc *d, const sl_ffn_block *b, const sl_gguf *g, uint32_t l)
{
    const uint64_t E = (uint64_t)d->n_embd, FF = (uint64_t)(b->n_ff > 0 ? b->n_ff : d->n_ff);
    int rc;
    if ((rc = sl_model_check_layer_tensor(g, l, sl_ffn_norm_name(b), E, 0, T_F32))) return rc;
    switch (b->kind) {
    case SL_FFN_GATED:
        if (b->fused_gate_up) rc = sl_model_check_layer_tensor(g, l, "ffn_up.weight", E, 2 * FF, T_MATRIX);
        else if (!(rc = sl_model_check_layer_tensor(g, l, "ffn_gate.weight", E, FF, T_MATRIX)))
            rc = sl_model_check_layer_tensor(g, l, "ffn_up.weight", E, FF, T_MATRIX);
        if (!rc) rc = sl_model_check_layer_tensor(g, l, "ffn_down.weight", FF, E, T_MATRIX);
        break;
    case SL_FFN_MOE:
        if (b->post_norm && !b->dense_moe)   /* the expert sum goes straight into the residual (forward_moe.c) */
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

/* The per-layer embedding input and the output scale. */
static int check_ple(const sl_model_desc *d, const sl_layer_desc *ld, const sl_gguf *g, uint32_t l)
{
    const uint64_t E = (uint64_t)d->n_embd, P = (uint64_t)d->n_embd_ple;
    int rc;
    if (ld->ple &&
        ((rc = sl_model_check_layer_tensor(g, l, "inp_gate.weight", E, P, T_MATRIX)) ||
         (rc = sl_model_check_layer_tensor(g, l, "proj.weight", P, E, T_MATRIX)) ||
         (rc = sl_model_check_layer_tensor(g, l, "post_norm.weight", E, 0, T_F32))))
        return rc;
    if (ld->out_scale) return sl_model_check_layer_tensor(g, l, "layer_output_scale.weight", 1, 0, T_F32);
    return 0;
}

int sl_arch_check_layer(const sl_model_desc *d, const sl_gguf *g, uint32_t l)
{
    const sl_layer_desc *ld = sl_model_layer(d, (int32_t)l);
    int rc = check_attn(d, &ld->attn, g, l);
    if (!rc) rc = check_ffn(d, &ld->ffn, g, l);
    return rc ? rc : check_ple(d, ld, g, l);
}
