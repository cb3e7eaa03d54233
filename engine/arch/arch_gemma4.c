/* gemma4: a bool per layer says sliding window or full; the two layer kinds
 * have their own head dims (key_length_swa vs key_length), rope dims and
 * bases, the full layers' angles divided by rope_freqs (proportional rope);
 * q/k norms, v RMS-normed without weight (a layer without attn_v: v is
 * the k projection before k's norm and rope), attention scale 1, post-norms;
 * a per-layer FFN width; the last shared_kv_layers layers have no K/V of
 * their own (sl_model_kv_layer); per-layer embeddings (per_layer_token_embd
 * rows plus a projection of the embedding, one slice per layer) added after
 * each FFN; optional layer output scale; final logit soft cap; tied output.
 * A layer with a router (ffn_gate_inp, the 26B-A4B) is an MoE block with the
 * dense FFN beside its experts (sl_ffn_block.dense_moe): GELU experts,
 * softmax router renormalized over the chosen k, fused or separate gate/up
 * experts, optional per-expert down scales. */
#include "arch.h"
#include "../model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../gguf/base/sl_internal.h"

/* Layer l's kind: an existing kind with the same blocks, or a new one. */
static int add_kind(sl_model_desc *d, const sl_layer_desc *ld, int32_t l)
{
    int32_t k = 0;
    while (k < d->n_kinds && memcmp(&d->kind[k], ld, sizeof *ld)) k++;
    if (k == d->n_kinds) {
        if (k == SL_MAX_LAYER_KINDS)
            return sl_err_set(SL_EUNSUPPORTED, "gemma4: layer %d: more than %d distinct layer shapes", l,
                              SL_MAX_LAYER_KINDS);
        memcpy(&d->kind[d->n_kinds++], ld, sizeof *ld);   /* padding too: kinds compare by memcmp */
    }
    d->layer_kind[l] = (uint8_t)k;
    return 0;
}

static int key_err(const char *a, const char *key, uint32_t v)
{
    return sl_err_set(SL_ERANGE, "model metadata: key '%s.%s' = %u invalid", a, key, v);
}

/* The keys of the two layer kinds; hd_swa: the sliding layers' head dim. */
static int kind_keys(sl_model_desc *d, const sl_gguf *g, uint32_t *hd_swa)
{
    const char *a = d->arch_name;
    uint32_t swa, vd_swa, rot_swa;
    bool moe;
    int rc;
    if ((rc = sl_model_key_u32(g, a, "attention.sliding_window", &swa, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "attention.key_length_swa", hd_swa, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "attention.value_length_swa", &vd_swa, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "rope.dimension_count_swa", &rot_swa, false, *hd_swa)) ||
        (rc = sl_model_key_f32(g, a, "rope.freq_base_swa", &d->rope_base_swa, false, d->rope_base)) ||
        (rc = sl_model_key_f32(g, a, "final_logit_softcapping", &d->logit_softcap, false, 0.0f)) ||
        (rc = sl_arch_moe_read(d, g, false, true, false, &moe)))
        return rc;
    /* the cache row is the full layers' head dim; a sliding layer uses its start */
    if (*hd_swa < 2 || *hd_swa % 2 || (int32_t)*hd_swa > d->head_dim)
        return sl_err_set(SL_EUNSUPPORTED, "model metadata: key '%s.attention.key_length_swa' = %u not "
                          "supported (even, at most key_length %d)", a, *hd_swa, d->head_dim);
    if (vd_swa != *hd_swa)
        return sl_err_set(SL_EUNSUPPORTED, "model metadata: '%s.attention.value_length_swa' %u differs from "
                          "key_length_swa %u", a, vd_swa, *hd_swa);
    if (rot_swa < 2 || rot_swa % 2 || rot_swa > *hd_swa) return key_err(a, "rope.dimension_count_swa", rot_swa);
    d->n_rot_swa = (int32_t)rot_swa;
    if ((rc = sl_arch_window_set(d, swa))) return rc;
    return sl_arch_gemma_common(d);
}

/* Layer l's FFN: dense, or (a router present) the dense FFN beside the
 * experts, as llama.cpp decides per layer. */
static int ffn_kind(sl_model_desc *d, const sl_gguf *g, uint32_t l, sl_ffn_block *b)
{
    char name[64];
    snprintf(name, sizeof name, "blk.%u.ffn_gate_inp.weight", l);
    if (!sl_gguf_find_tensor(g, name)) return 0;
    if (!d->n_expert)
        return sl_err_set(SL_ENOENT, "gemma4: layer %u has a router but '%s.expert_count' is missing", l,
                          d->arch_name);
    b->kind = SL_FFN_MOE;
    b->dense_moe = true;
    b->gating = SL_GATING_SOFTMAX;
    b->weights_norm = true;
    snprintf(name, sizeof name, "blk.%u.ffn_gate_up_exps.weight", l);
    b->fused_gate_up = sl_gguf_find_tensor(g, name) != NULL;
    snprintf(name, sizeof name, "blk.%u.ffn_down_exps.scale", l);
    b->down_scale = sl_gguf_find_tensor(g, name) != NULL;   /* optional in llama.cpp */
    return 0;
}

/* The per-layer embedding globals (n_embd_ple wide per layer). */
static int ple_keys(sl_model_desc *d, const sl_gguf *g)
{
    const char *a = d->arch_name;
    uint32_t ple;
    int rc = sl_model_key_u32(g, a, "embedding_length_per_layer_input", &ple, true, 0);
    if (rc || ple == 0) return rc;   /* 0: no per-layer embeddings (the 31B) */
    if (ple > (1u << 16)) return key_err(a, "embedding_length_per_layer_input", ple);
    const uint64_t E = (uint64_t)d->n_embd, LP = (uint64_t)ple * (uint64_t)d->n_layer;
    const sl_gguf_tensor *te = sl_gguf_find_tensor(g, "token_embd.weight");
    if (!te || te->n_dims != 2)
        return sl_err_set(SL_ENOENT, "tensor 'token_embd.weight' missing from the model");
    const sl_gguf_tensor *pt;
    if ((rc = sl_model_check_tensor(g, "per_layer_token_embd.weight", LP, te->ne[1], T_MATRIX, false, &pt)) ||
        (rc = sl_model_check_tensor(g, "per_layer_model_proj.weight", E, LP, T_MATRIX, false, NULL)) ||
        (rc = sl_model_check_tensor(g, "per_layer_proj_norm.weight", ple, 0, T_F32, false, NULL)))
        return rc;
    d->n_embd_ple = (int32_t)ple;
    d->ple_type = pt->type;
    return 0;
}

static int gemma4_keys(sl_model_desc *d, const sl_gguf *g)
{
    const char *a = d->arch_name;
    const uint32_t L = (uint32_t)d->n_layer;
    uint32_t hd_swa, n_shared, mx;
    int rc;
    if ((rc = kind_keys(d, g, &hd_swa)) || (rc = ple_keys(d, g)) ||
        (rc = sl_model_key_u32(g, a, "attention.shared_kv_layers", &n_shared, false, 0)))
        return rc;
    uint32_t *swa = malloc(3 * (size_t)L * sizeof *swa);
    if (!swa) return sl_err_set(SL_ENOMEM, "gemma4: out of memory");
    uint32_t *ff = swa + L, *kvh = ff + L;
    if ((rc = sl_model_key_u32_layers(g, a, "attention.sliding_window_pattern", L, swa, &mx, true, 0)) ||
        (rc = sl_model_key_u32_layers(g, a, "feed_forward_length", L, ff, &mx, true, 0)) ||
        (rc = sl_model_key_u32_layers(g, a, "attention.head_count_kv", L, kvh, &mx, false, (uint32_t)d->n_head)))
        goto out;
    d->n_layer_kv = d->n_layer - (int32_t)n_shared;
    if (n_shared >= L || (n_shared && d->n_layer_kv < 2)) {
        rc = sl_err_set(SL_ERANGE, "model metadata: key '%s.attention.shared_kv_layers' = %u invalid for %u "
                        "layers", a, n_shared, L);
        goto out;
    }
    /* a shared layer reads layer n_layer_kv - 2 (sliding) or - 1 (full): they
     * must be of those kinds */
    if (n_shared && (!swa[d->n_layer_kv - 2] || swa[d->n_layer_kv - 1])) {
        rc = sl_err_set(SL_EUNSUPPORTED, "gemma4: shared KV layers need layer %d sliding and layer %d full",
                        d->n_layer_kv - 2, d->n_layer_kv - 1);
        goto out;
    }
    d->rope_freqs_full = true;
    d->n_kinds = 0;
    for (uint32_t l = 0; l < L && !rc; l++) {
        if (ff[l] < 1 || ff[l] > (1u << 22)) { rc = key_err(a, "feed_forward_length", ff[l]); break; }
        sl_layer_desc ld;
        char name[64];
        memcpy(&ld, &d->arch->layer, sizeof ld);
        ld.attn.window = swa[l] ? d->n_swa : 0;
        ld.attn.head_dim = swa[l] ? (int32_t)hd_swa : d->head_dim;
        ld.attn.kv_shared = (int32_t)l >= d->n_layer_kv;
        /* no attn_v (the 26B's and 31B's full layers): llama.cpp takes V = K */
        snprintf(name, sizeof name, "blk.%u.attn_v.weight", l);
        ld.attn.v_from_k = !ld.attn.kv_shared && !sl_gguf_find_tensor(g, name);
        snprintf(name, sizeof name, "blk.%u.layer_output_scale.weight", l);
        /* fewer kv heads than the cache's (the 31B's full layers): the block's own count */
        ld.attn.n_head_kv = kvh[l] && (int32_t)kvh[l] < d->n_head_kv ? (int32_t)kvh[l] : 0;
        ld.ffn.n_ff = (int32_t)ff[l];
        ld.ple = d->n_embd_ple > 0;
        ld.out_scale = sl_gguf_find_tensor(g, name) != NULL;   /* optional in llama.cpp */
        if (!(rc = ffn_kind(d, g, l, &ld.ffn))) rc = add_kind(d, &ld, (int32_t)l);
    }
    if (!rc && (rc = sl_model_check_tensor(g, "rope_freqs.weight", (uint64_t)d->n_rot / 2, 0, T_F32, false, NULL)))
        sl_err_set(rc, "gemma4: the full layers' rope_freqs.weight [%d] is required", d->n_rot / 2);
out:
    free(swa);
    return rc;
}

const sl_arch sl_arch_gemma4 = { .name = "gemma4", .rope_neox = true, .keys = gemma4_keys,
    .layer = { .attn = { .kind = SL_ATTN_SOFTMAX, .qk_norm = true, .post_norm = true, .q_scale = 1.0f,
                         .v_norm = true },
               .ffn = { .kind = SL_FFN_GATED, .act = SL_ACT_GELU, .post_norm = true },
               .ple = true } };
