/* The model description as data: global hyper-parameters and the layers,
 * each an attention block and an FFN block of a kind with its options. Filled
 * by model.c and the architecture rows (engine/arch/), read by the forward
 * pass, the reserve and the KV cache; no functions of its own. */
#ifndef SL_ENGINE_MODEL_DESC_H
#define SL_ENGINE_MODEL_DESC_H

#include <stdbool.h>
#include <stdint.h>

#define SL_MAX_LAYERS 4096       /* block_count above it is refused */
#define SL_MAX_LAYER_KINDS 4     /* distinct layer shapes of one model (gemma3: 2) */

enum sl_rope_scaling { SL_ROPE_SCALE_NONE = 0, SL_ROPE_SCALE_LINEAR, SL_ROPE_SCALE_LLAMA3 };

/* Attention block kinds. Each: pre-RMSNorm (attn_norm), the block, optional
 * post-RMSNorm, residual add. MLA is reserved: no family has it yet and the
 * forward pass refuses it. RECURRENT is the Gated DeltaNet block
 * (forward_gdn.c): a per-sequence state (kv.h) instead of KV rows. */
enum sl_attn_kind {
    SL_ATTN_NONE = 0,
    SL_ATTN_SOFTMAX,    /* softmax attention over the KV cache, GQA / MHA */
    SL_ATTN_MLA,        /* multi-head latent attention (compressed KV) */
    SL_ATTN_RECURRENT,  /* linear-recurrent: a state instead of a KV cache */
};

/* FFN block kinds. Each: pre-RMSNorm (ffn_norm), the block, optional
 * post-RMSNorm, residual add. */
enum sl_ffn_kind {
    SL_FFN_NONE = 0,
    SL_FFN_GATED,       /* dense act(gate) * up -> down */
    SL_FFN_MOE,         /* routed experts (gated, SiLU), optional shared expert */
};
enum sl_ffn_act { SL_ACT_SILU = 0, SL_ACT_GELU };

typedef struct sl_attn_block {
    int kind;                 /* enum sl_attn_kind */
    bool qkv_bias;            /* attn_{q,k,v}.bias added after the projections */
    bool qk_norm;             /* per-head RMSNorm of q and k before rope */
    bool fused_qkv;           /* one attn_qkv matrix, rows q | k | v */
    bool post_norm;           /* post_attention_norm before the residual */
    bool sinks;               /* reserved: per-head attention sink logits */
    int32_t window;           /* > 0: attends to the last `window` positions (rope: rope_base_swa) */
    float q_scale;            /* > 0: q *= q_scale before attention, attention scale 1 */
    bool out_gate;            /* attn_q rows per head q | gate; output *= sigmoid(gate) (qwen35) */
} sl_attn_block;

typedef struct sl_ffn_block {
    int kind;                 /* enum sl_ffn_kind */
    int act;                  /* enum sl_ffn_act (GATED) */
    bool fused_gate_up;       /* one ffn_up matrix, rows gate | up (GATED) */
    bool post_norm;           /* post_ffw_norm before the residual */
    bool shared_expert;       /* MoE: plus a sigmoid-gated shared expert (n_ff_shexp wide) */
    bool weights_norm;        /* MoE: the k chosen probabilities renormalized to sum 1 */
    bool norm_post_attn;      /* its pre-norm is stored as post_attention_norm (qwen35moe) */
} sl_ffn_block;

/* One layer's blocks, in order. Room: a per-layer embedding input joins
 * here as a third block when a family needs it. */
typedef struct sl_layer_desc {
    sl_attn_block attn;
    sl_ffn_block ffn;
} sl_layer_desc;

struct sl_arch;

typedef struct sl_model_desc {
    const struct sl_arch *arch;   /* the architecture table's row */
    char arch_name[16];
    /* global hyper-parameters */
    int32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_rot;
    int32_t n_vocab, n_ctx_train;
    int32_t q_dim, kv_dim;    /* n_head * head_dim, n_head_kv * head_dim */
    float rms_eps;
    uint32_t embd_type, head_type;   /* token_embd / lm head types (arena sizing) */
    bool tied_output;         /* no output.weight: token_embd is the lm head */
    float embd_scale;         /* > 0: token embeddings multiplied by it */
    float logit_softcap;      /* > 0: logits = cap * tanh(logit / cap) */
    /* rope, shared by every attention block */
    float rope_base, rope_base_swa;   /* rope base of full / sliding-window layers */
    bool rope_neox;
    int rope_scaling;         /* enum sl_rope_scaling */
    float rope_scale_factor;  /* linear: positions divided by it */
    float ll3_low_freq, ll3_high_freq;   /* llama3-style factors, used when no rope_freqs tensor */
    int32_t ll3_orig_ctx;
    bool has_rope_freqs;      /* rope_freqs.weight tensor (per-dim divisors) */
    bool has_rope_factors;    /* LongRoPE: rope_factors_long/short.weight */
    int32_t rope_orig_ctx;    /* LongRoPE: long factors iff padded n_ctx exceeds it */
    float rope_attn_factor;   /* cos/sin multiplier (1 except LongRoPE) */
    int32_t n_swa;            /* sliding window the file declares (0: none; applied per layer) */
    /* experts of the MoE FFN blocks (0 when no layer has one) */
    int32_t n_expert, n_expert_used;
    int32_t n_ff_exp;         /* width of one routed expert */
    int32_t n_ff_shexp;       /* width of the shared expert (0: none) */
    /* Gated DeltaNet blocks (SL_ATTN_RECURRENT; 0 when no layer has one):
     * q/k heads of ssm_dk values, v heads of ssm_dv, causal conv of ssm_conv
     * taps over the q | k | v channels */
    int32_t ssm_conv, ssm_nk, ssm_nv, ssm_dk, ssm_dv;
    /* the layers: layer l is kind[layer_kind[l]] */
    int32_t n_kinds;
    sl_layer_desc kind[SL_MAX_LAYER_KINDS];
    uint8_t layer_kind[SL_MAX_LAYERS];
} sl_model_desc;

static inline const sl_layer_desc *sl_model_layer(const sl_model_desc *d, int32_t l)
{
    return &d->kind[d->layer_kind[l]];
}

#endif
