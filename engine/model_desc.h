/* The model description as data: global hyper-parameters and the layers,
 * each an attention block and an FFN block of a kind with its options. Filled
 * by model.c and the architecture rows (engine/arch/), read by the forward
 * pass, the reserve and the KV cache; no functions of its own. */
#ifndef SL_ENGINE_MODEL_DESC_H
#define SL_ENGINE_MODEL_DESC_H

#include <stdbool.h>
#include <stdint.h>

#define SL_MAX_LAYERS 4096       /* block_count above it is refused */
#define SL_MAX_LAYER_KINDS 8     /* distinct layer shapes of one model (gemma3: 2, gemma4: 4) */

enum sl_rope_scaling { SL_ROPE_SCALE_NONE = 0, SL_ROPE_SCALE_LINEAR, SL_ROPE_SCALE_LLAMA3, SL_ROPE_SCALE_YARN };

/* Attention block kinds. Each: pre-RMSNorm (attn_norm), the block, optional
 * post-RMSNorm, residual add. MLA is latent attention (forward_mla.c): one
 * [c, k_rope] cache row per position. RECURRENT is the Gated DeltaNet block
 * (forward_gdn.c): a per-sequence state (kv.h) instead of KV rows. */
enum sl_attn_kind {
    SL_ATTN_NONE = 0,
    SL_ATTN_SOFTMAX,    /* softmax attention over the KV cache, GQA / MHA */
    SL_ATTN_MLA,        /* multi-head latent attention: one [c, k_rope] cache row (forward_mla.c) */
    SL_ATTN_RECURRENT,  /* linear-recurrent: a state instead of a KV cache */
};

/* FFN block kinds. Each: pre-RMSNorm (ffn_norm), the block, optional
 * post-RMSNorm, residual add. */
enum sl_ffn_kind {
    SL_FFN_NONE = 0,
    SL_FFN_GATED,       /* dense act(gate) * up -> down */
    SL_FFN_MOE,         /* routed experts (gated, SiLU), optional shared expert */
};
/* SWIGLU_OAI: gpt-oss's clamped SwiGLU, min(g,7)*sigmoid(1.702 min(g,7))*(clamp(u,-7,7)+1) */
enum sl_ffn_act { SL_ACT_SILU = 0, SL_ACT_GELU, SL_ACT_SWIGLU_OAI };
/* MoE router probabilities (GGUF expert_gating_func: 1 softmax, 2 sigmoid). */
enum sl_moe_gating { SL_GATING_SOFTMAX = 0, SL_GATING_SIGMOID };

typedef struct sl_attn_block {
    int kind;                 /* enum sl_attn_kind */
    bool qkv_bias;            /* attn_{q,k,v}.bias added after the projections */
    bool qk_norm;             /* per-head RMSNorm of q and k before rope */
    bool fused_qkv;           /* one attn_qkv matrix, rows q | k | v */
    bool post_norm;           /* post_attention_norm before the residual */
    bool sinks;               /* attn_sinks.weight: per-head logits in the softmax denominator */
    bool o_bias;              /* attn_output.bias added after the output projection */
    int32_t window;           /* > 0: attends to the last `window` positions (rope: rope_base_swa) */
    float q_scale;            /* > 0: q *= q_scale before attention, attention scale 1 */
    int32_t head_dim;         /* > 0: this block's head dim (<= d->head_dim, the cache's row); else d->head_dim */
    int32_t n_head_kv;        /* > 0: this block's kv heads (<= d->n_head_kv, the cache's); else d->n_head_kv */
    bool v_norm;              /* v RMS-normed without a weight */
    bool v_from_k;            /* no attn_v: v is the k projection (before k's norm and rope) */
    bool kv_shared;           /* no K/V of its own: attends over sl_model_kv_layer's cache */
    bool out_gate;            /* attn_q rows per head q | gate; output *= sigmoid(gate) (qwen35) */
} sl_attn_block;

typedef struct sl_ffn_block {
    int kind;                 /* enum sl_ffn_kind */
    int act;                  /* enum sl_ffn_act (GATED) */
    bool fused_gate_up;       /* one ffn_up matrix, rows gate | up (GATED) */
    bool post_norm;           /* post_ffw_norm before the residual */
    bool shared_expert;       /* MoE: plus a sigmoid-gated shared expert (n_ff_shexp wide) */
    bool weights_norm;        /* MoE: the k chosen probabilities renormalized to sum 1 */
    int32_t n_ff;             /* > 0: this block's width (GATED; <= d->n_ff, the widest); else d->n_ff */
    bool norm_post_attn;      /* the pre-norm is post_attention_norm, not ffn_norm (gpt-oss) */
    bool router_bias;         /* MoE: ffn_gate_inp.bias added to the router logits */
    bool softmax_k;           /* MoE: top k of the logits, weights a softmax over those k only */
    bool expert_bias;         /* MoE: ffn_{gate,up,down}_exps.bias [width, n_expert] added after the products */
    bool shared_ungated;      /* MoE: the shared expert is added as it is (no ffn_gate_inp_shexp) */
    bool sel_bias;            /* MoE: exp_probs_b.bias added to the probabilities for the choice only */
    int gating;               /* MoE: enum sl_moe_gating */
    float weights_scale;      /* MoE: > 0: the chosen weights times it */
    /* MoE (gemma4): a dense FFN (ffn_norm, n_ff wide, post_ffw_norm_1) beside the experts
     * (pre_ffw_norm_2, post_ffw_norm_2), their sum post-normed (post_ffw_norm); the router
     * reads rmsnorm(x) / sqrt(n_embd) * ffn_gate_inp.scale; fused_gate_up: ffn_gate_up_exps */
    bool dense_moe;
    bool down_scale;          /* MoE: ffn_down_exps.scale [n_expert]: each expert's output times its value */
} sl_ffn_block;

/* One layer's blocks, in order: attention, FFN, then the optional
 * per-layer embedding input (x += post_norm(proj(GELU(inp_gate x) * P_l)),
 * P_l the layer's slice of the token's per-layer input) and output scale. */
typedef struct sl_layer_desc {
    sl_attn_block attn;
    sl_ffn_block ffn;
    bool ple;                 /* per-layer embedding input (d->n_embd_ple wide) */
    bool out_scale;           /* x *= layer_output_scale.weight after the layer */
} sl_layer_desc;

struct sl_arch;

typedef struct sl_model_desc {
    const struct sl_arch *arch;   /* the architecture table's row */
    char arch_name[16];
    /* global hyper-parameters */
    int32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_rot;   /* n_layer: the layers run */
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
    int32_t yarn_orig_ctx;    /* YaRN: the training context the ramp is measured against (0: n_ctx_train) */
    float yarn_beta_fast, yarn_beta_slow;   /* YaRN: the ramp's ends, in rotations over that context */
    bool has_rope_freqs;      /* rope_freqs.weight tensor (per-dim divisors) */
    bool has_rope_factors;    /* LongRoPE: rope_factors_long/short.weight */
    int32_t rope_orig_ctx;    /* LongRoPE: long factors iff padded n_ctx exceeds it */
    float rope_attn_factor;   /* cos/sin multiplier (1 except LongRoPE and YaRN) */
    int32_t n_swa;            /* sliding window the file declares (0: none; applied per layer) */
    int32_t n_rot_swa;        /* > 0: rope dims of the sliding-window layers (else n_rot) */
    bool rope_freqs_full;     /* rope_freqs divide the full layers' angles only, not the window's */
    /* the first n_layer_kv layers have their own K/V; the later ones read an
     * earlier layer's cache (sl_model_kv_layer); 0: every layer its own */
    int32_t n_layer_kv;
    int32_t n_embd_ple;       /* per-layer embedding width (0: none): per_layer_token_embd rows */
    uint32_t ple_type;        /* per_layer_token_embd's type (arena sizing) */
    /* experts of the MoE FFN blocks (0 when no layer has one) */
    int32_t n_expert, n_expert_used;
    int32_t n_ff_exp;         /* width of one routed expert */
    int32_t n_ff_shexp;       /* width of the shared expert (0: none) */
    int32_t n_expert_group;   /* > 1: experts in this many groups, choice only within the best */
    int32_t n_expert_group_used;   /*   groups (by the sum of each group's two best scores) */
    /* multi-head latent attention (SL_ATTN_MLA): head_dim = kv_lora_rank + n_rot is the
     * cache row [c, k_rope] of the one kv head, q_dim = n_head * head_dim the absorbed
     * query rows; q/k heads are mla_k_dim (no-rope part + n_rot), v heads mla_v_dim */
    int32_t q_lora_rank;      /* 0: q straight from attn_q */
    int32_t kv_lora_rank, mla_k_dim, mla_v_dim;
    float mla_kq_scale;       /* attention scale (YaRN's mscale^2 / sqrt(mla_k_dim)) */
    float yarn_log_mul;       /* YaRN: rope.scaling.yarn_log_multiplier (0: none) */
    /* trailing NextN (multi-token prediction) blocks: checked, never run nor streamed */
    int32_t n_layer_nextn;
    /* Gated DeltaNet blocks (SL_ATTN_RECURRENT; 0 when no layer has one):
     * q/k heads of ssm_dk values, v heads of ssm_dv, causal conv of ssm_conv
     * taps over the q | k | v channels */
    int32_t ssm_conv, ssm_nk, ssm_nv, ssm_dk, ssm_dv;
    /* qwen3next: v heads grouped by q/k head (v head h reads q/k head
     * h / (nv / nk), not h mod nk); beta | alpha one ssm_ba matrix and q | k |
     * v | z possibly one ssm_in matrix, both in rows per q/k head */
    bool ssm_grouped;
    /* the layers: layer l is kind[layer_kind[l]] */
    int32_t n_kinds;
    sl_layer_desc kind[SL_MAX_LAYER_KINDS];
    uint8_t layer_kind[SL_MAX_LAYERS];
} sl_model_desc;

static inline const sl_layer_desc *sl_model_layer(const sl_model_desc *d, int32_t l)
{
    return &d->kind[d->layer_kind[l]];
}

/* Rope dims of the sliding-window layers. */
static inline int32_t sl_model_n_rot_swa(const sl_model_desc *d)
{
    return d->n_rot_swa > 0 ? d->n_rot_swa : d->n_rot;
}

/* Layers with a KV cache of their own. */
static inline int32_t sl_model_n_layer_kv(const sl_model_desc *d)
{
    return d->n_layer_kv > 0 ? d->n_layer_kv : d->n_layer;
}

/* The layer whose KV cache layer l attends over: itself, or for a shared
 * layer the last own layer of its kind (n_layer_kv - 2 sliding, - 1 full). */
static inline int32_t sl_model_kv_layer(const sl_model_desc *d, int32_t l)
{
    if (!sl_model_layer(d, l)->attn.kv_shared) return l;
    return d->n_layer_kv - (sl_model_layer(d, l)->attn.window > 0 ? 2 : 1);
}

/* Whether layer l holds KV rows of its own (not a shared-KV layer, not a
 * recurrent one), and how many layers do: what the cache is sized by. */
static inline bool sl_model_layer_has_rows(const sl_model_desc *d, int32_t l)
{
    return sl_model_kv_layer(d, l) == l && sl_model_layer(d, l)->attn.kind != SL_ATTN_RECURRENT;
}

static inline int32_t sl_model_n_row_layers(const sl_model_desc *d)
{
    int32_t n = 0;
    for (int32_t l = 0; l < d->n_layer; l++) n += sl_model_layer_has_rows(d, l);
    return n;
}

/* The tensor of an FFN block's pre-norm. */
static inline const char *sl_ffn_norm_name(const sl_ffn_block *b)
{
    return b->norm_post_attn ? "post_attention_norm.weight" : "ffn_norm.weight";
}

#endif
