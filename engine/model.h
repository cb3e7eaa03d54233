/* Model description: hyper-parameters from GGUF metadata and validation of
 * every tensor the forward pass will touch (presence, shape, type). */
#ifndef SL_ENGINE_MODEL_H
#define SL_ENGINE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "../gguf/gguf.h"

enum sl_arch { SL_ARCH_LLAMA = 0, SL_ARCH_QWEN2, SL_ARCH_QWEN3, SL_ARCH_PHI3, SL_ARCH_GEMMA3,
               SL_ARCH_QWEN2MOE, SL_ARCH_QWEN3MOE };
enum sl_rope_scaling { SL_ROPE_SCALE_NONE = 0, SL_ROPE_SCALE_LINEAR, SL_ROPE_SCALE_LLAMA3 };

typedef struct sl_model_desc {
    int arch;                 /* enum sl_arch */
    char arch_name[16];
    int32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_rot;
    int32_t n_vocab, n_ctx_train;
    int32_t q_dim, kv_dim;    /* n_head * head_dim, n_head_kv * head_dim */
    float rope_base, rms_eps;
    bool rope_neox;
    int rope_scaling;         /* enum sl_rope_scaling */
    float rope_scale_factor;  /* linear: positions divided by it */
    bool has_rope_freqs;      /* rope_freqs.weight tensor (per-dim divisors) */
    bool has_qkv_bias;        /* qwen2 */
    bool tied_output;         /* no output.weight: token_embd is the lm head */
    /* llama3-style factors from keys, used when no rope_freqs tensor */
    float ll3_low_freq, ll3_high_freq;
    int32_t ll3_orig_ctx;
    /* types of the big matrices of layer 0 / globals (for arena sizing) */
    uint32_t embd_type, head_type;
    /* dense families of 2026 (qwen3, phi3, gemma3: engine/model_dense.c) */
    bool has_qk_norm;         /* qwen3, qwen3moe: per-head RMSNorm of q and k before rope */
    bool fused_qkv;           /* phi3: attn_qkv rows = q | k | v */
    bool fused_gate_up;       /* phi3: ffn_up rows = gate | up */
    float q_scale;            /* > 0: q *= q_scale before attention, scale 1 (phi3, gemma3) */
    bool has_rope_factors;    /* phi3 LongRoPE: rope_factors_long/short.weight */
    int32_t rope_orig_ctx;    /* LongRoPE: long factors iff padded n_ctx exceeds it */
    float rope_attn_factor;   /* cos/sin multiplier (1 except LongRoPE) */
    int32_t n_swa;            /* sliding window the file declares (0: none) */
    int32_t swa_period;       /* > 0: window applied to layer l iff l % period < period - 1 */
    float rope_base_swa;      /* rope base of the sliding-window layers */
    float embd_scale;         /* > 0: token embeddings multiplied by it (gemma3: sqrt(n_embd)) */
    bool has_post_norms;      /* gemma3: RMSNorm of the attention / FFN output before the residual */
    bool ffn_gelu;            /* gemma3: GELU(gate) * up instead of SiLU */
    float logit_softcap;      /* > 0: logits = cap * tanh(logit / cap) */
    /* MoE FFN families (mixtral = llama with experts, qwen2moe, qwen3moe:
     * engine/model_moe.c, forward_moe.c); n_expert 0 = dense FFN */
    int32_t n_expert, n_expert_used;
    int32_t n_ff_exp;         /* width of one routed expert */
    int32_t n_ff_shexp;       /* width of the shared expert (0: none; qwen2moe) */
    bool expert_weights_norm; /* the k chosen probabilities renormalized to sum 1 */
} sl_model_desc;

/* Reads metadata and validates all tensors. SL_EUNSUPPORTED for an unknown
 * architecture or tensor type, SL_ESHAPE / SL_ENOENT for a bad or missing tensor. */
int sl_model_desc_load(sl_model_desc *d, const sl_gguf *g);

/* Architecture part for qwen3 / phi3 (model_dense.c): keys and flags, after
 * the common keys are read; then the per-layer tensors of those families. */
int sl_model_dense_keys(sl_model_desc *d, const sl_gguf *g);
int sl_model_dense_layer(const sl_model_desc *d, const sl_gguf *g, uint32_t layer);
/* Whether layer l attends only within the sliding window n_swa. */
bool sl_model_layer_swa(const sl_model_desc *d, int32_t l);
/* Name of the global rope-divisor tensor for a context of n_ctx positions
 * (rope_freqs.weight, or the LongRoPE long/short factors), NULL if none. */
const char *sl_model_rope_factors_name(const sl_model_desc *d, int32_t n_ctx);
/* MoE part (model_moe.c): keys and flags after the common keys (also
 * llama.expert_count for Mixtral), then each layer's expert tensors. */
int sl_model_moe_keys(sl_model_desc *d, const sl_gguf *g);
int sl_model_moe_layer(const sl_model_desc *d, const sl_gguf *g, uint32_t layer);

/* inv_freq[i], i < n_rot/2: angle per position of pair i, scaling and
 * rope_freqs divisors included (freqs may be NULL when absent). */
void sl_model_rope_inv_freq(const sl_model_desc *d, const float *freqs, float *inv_freq);

#endif
