/* The architecture table: one row per GGUF general.architecture, each
 * defined in its family's file (arch_<family>.c) and listed once in
 * arch_table.c. A row names the blocks every layer is made of; its key hook
 * reads the family's own metadata and may refine the blocks (per-layer
 * kinds, options that depend on keys). The tensors of a layer follow from
 * its blocks (arch_blocks.c). */
#ifndef SL_ENGINE_ARCH_H
#define SL_ENGINE_ARCH_H

#include <stddef.h>

#include "../../gguf/gguf.h"
#include "../model_desc.h"

typedef struct sl_arch {
    const char *name;         /* general.architecture */
    bool rope_neox;           /* rope on (i, i + n_rot/2) pairs instead of (2i, 2i+1) */
    sl_layer_desc layer;      /* the blocks of every layer, before the key hook */
    /* Family keys after the common ones (NULL: none); a status and message. */
    int (*keys)(sl_model_desc *d, const sl_gguf *g);
} sl_arch;

/* The row of general.architecture `name`, NULL if none. */
const sl_arch *sl_arch_find(const char *name);
/* "llama, qwen2, ..." (for messages), truncated to n bytes. */
void sl_arch_names(char *buf, size_t n);

/* Every tensor of layer l's blocks: presence, shape, type. */
int sl_arch_check_layer(const sl_model_desc *d, const sl_gguf *g, uint32_t l);

/* The Gated DeltaNet families (arch_gdn.c): the block's keys and which
 * layers have it (kind 0; the row's attention becomes kind 1), the trailing
 * MTP blocks (nextn_predict_layers, kind 1) set apart as NextN blocks; the
 * tensors of the block in layer l. */
int sl_arch_gdn_keys(sl_model_desc *d, const sl_gguf *g);
int sl_arch_check_gdn(const sl_model_desc *d, const sl_gguf *g, uint32_t l);

/* The expert keys of a MoE family (arch_moe.c): expert_count (required, or
 * 0 = no experts when optional), expert_used_count, the expert width (key
 * when width_key, else n_ff) and, with shared, the shared expert's width.
 * *found: expert_count was present and non-zero. */
int sl_arch_moe_read(sl_model_desc *d, const sl_gguf *g, bool required, bool width_key, bool shared,
                     bool *found);
/* The sliding-window keys (arch_window.c): attention.sliding_window
 * (required) and attention.sliding_window_pattern (def_period without it,
 * at least min_period); d->n_swa set and the layers split into kind 0 (full)
 * and kind 1 (kind 0 with the window): all but the last of every period. */
int sl_arch_window_keys(sl_model_desc *d, const sl_gguf *g, uint32_t def_period, uint32_t min_period);
/* A sliding window read by the family itself: checked, d->n_swa set. */
int sl_arch_window_set(sl_model_desc *d, uint32_t swa);
/* The key hook of a family whose layers all have a MoE FFN block: the
 * expert keys required, the shared width iff the block has a shared expert. */
int sl_arch_moe_keys(sl_model_desc *d, const sl_gguf *g);
/* The keys of the DeepSeek-V3-style families (deepseek2, glm4moe): the expert
 * keys, leading_dense_block_count (kind 0: dense SwiGLU layers; kind 1: d's
 * MoE block), expert_gating_func (absent: def_gating, enum sl_moe_gating),
 * expert_weights_scale / _norm, expert groups, expert_shared_count ungated
 * shared experts, and nextn_predict_layers trailing blocks that are not run
 * (d->n_layer counts the others). */
int sl_arch_moe_lead_keys(sl_model_desc *d, const sl_gguf *g, int def_gating);
/* The NextN blocks' own tensors (eh_proj, enorm, hnorm; shared_head_norm
 * where present), checked. */
int sl_arch_nextn_check(const sl_model_desc *d, const sl_gguf *g);

/* The Gemma families' shared checks (arch_gemma3.c): rope_base_swa and
 * logit_softcap as read; sets the sqrt(n_embd) embedding scale. */
int sl_arch_gemma_common(sl_model_desc *d);

#endif
