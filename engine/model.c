/* Model description from GGUF metadata: the common keys and global tensors,
 * the architecture looked up in the table (arch/arch.h) for its blocks and
 * family keys, then every layer's tensors as its blocks name them. */
#include "model.h"
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "../gguf/base/sl_internal.h"

/* general.architecture -> the table's row, d->arch_name. */
static int find_arch(sl_model_desc *d, const sl_gguf *g)
{
    const char *arch = NULL;
    uint64_t alen = 0;
    int rc = sl_gguf_get_str(g, "general.architecture", &arch, &alen);
    if (rc == SL_ENOENT) return sl_err_set(SL_ENOENT, "model metadata: general.architecture missing");
    if (rc) return sl_err_set(rc, "model metadata: general.architecture: %s", sl_strerror(rc));
    d->arch = sl_arch_find(arch);
    if (!d->arch) {
        char names[256];
        sl_arch_names(names, sizeof names);
        return sl_err_set(SL_EUNSUPPORTED, "architecture '%.64s' not supported (%s)", arch, names);
    }
    snprintf(d->arch_name, sizeof d->arch_name, "%s", arch);
    return 0;
}

/* head_count_kv per layer: each softmax layer's count must be the one its
 * block uses (a family that reads the array sets it per kind; the others
 * have one count) and divide head_count. */
static int kv_heads_check(const sl_model_desc *d, const sl_gguf *g, uint32_t n_blocks)
{
    uint32_t *kv = malloc((size_t)n_blocks * sizeof *kv), mx;
    if (!kv) return sl_err_set(SL_ENOMEM, "model: out of memory");
    int rc = sl_model_key_u32_layers(g, d->arch_name, "attention.head_count_kv", n_blocks, kv, &mx, false,
                                     (uint32_t)d->n_head);
    for (int32_t l = 0; l < d->n_layer && !rc; l++) {
        const sl_attn_block *b = &sl_model_layer(d, l)->attn;
        const int32_t have = b->n_head_kv > 0 ? b->n_head_kv : d->n_head_kv;
        if (b->kind != SL_ATTN_SOFTMAX || kv[l] == 0) continue;
        if (d->n_head % (int32_t)kv[l])
            rc = sl_err_set(SL_ERANGE, "model metadata: layer %d: head_count %d not a multiple of head_count_kv %u",
                            l, d->n_head, kv[l]);
        else if ((int32_t)kv[l] != have)
            rc = sl_err_set(SL_EUNSUPPORTED, "model metadata: layer %d: head_count_kv %u, but %s has one count "
                            "(%d) for its layers", l, kv[l], d->arch_name, have);
    }
    free(kv);
    return rc;
}

int sl_model_desc_load(sl_model_desc *d, const sl_gguf *g)
{
    memset(d, 0, sizeof *d);
    int rc = find_arch(d, g);
    if (rc) return rc;
    const char *a = d->arch_name;

    uint32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_rot, n_ctx, vdim;
    if ((rc = sl_model_key_u32(g, a, "block_count", &n_layer, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "embedding_length", &n_embd, true, 0)) ||
        /* a MoE family's experts have widths of their own (qwen35moe has no n_ff) */
        (rc = sl_model_key_u32_layers(g, a, "feed_forward_length", 0, NULL, &n_ff,
                                      d->arch->layer.ffn.kind != SL_FFN_MOE, 0)) ||
        (rc = sl_model_key_u32(g, a, "attention.head_count", &n_head, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "context_length", &n_ctx, true, 0)))
        return rc;
    if (n_layer < 1 || n_layer > SL_MAX_LAYERS || n_embd < 1 || n_embd > (1u << 20) ||
        (n_ff < 1 && d->arch->layer.ffn.kind != SL_FFN_MOE) ||
        n_ff > (1u << 22) || n_head < 1 || n_head > 4096 || n_ctx < 1 || n_ctx > (1u << 30))
        return sl_err_set(SL_ERANGE, "model metadata: implausible hyper-parameters (layers %u, "
                          "embd %u, ff %u, heads %u, ctx %u)", n_layer, n_embd, n_ff, n_head, n_ctx);
    /* per layer (gemma4's 31B): the cache's is the largest, each block says its own */
    if ((rc = sl_model_key_u32_layers(g, a, "attention.head_count_kv", 0, NULL, &n_head_kv, false, n_head)) ||
        (rc = sl_model_key_u32(g, a, "attention.key_length", &head_dim, false, n_embd / n_head)) ||
        (rc = sl_model_key_u32(g, a, "attention.value_length", &vdim, false, head_dim)))
        return rc;
    if (n_head_kv < 1 || n_head % n_head_kv)
        return sl_err_set(SL_ERANGE, "model metadata: head_count %u not a multiple of head_count_kv %u",
                          n_head, n_head_kv);
    /* MLA: key_length / value_length are the latent cache row's (the family checks them) */
    const bool mla = d->arch->layer.attn.kind == SL_ATTN_MLA;
    if (head_dim < 2 || head_dim % 2 || head_dim > 1024 || (vdim != head_dim && !mla))
        return sl_err_set(SL_EUNSUPPORTED, "model metadata: head dimension %u (value %u) not supported",
                          head_dim, vdim);
    if ((rc = sl_model_key_u32(g, a, "rope.dimension_count", &n_rot, false, head_dim))) return rc;
    if (n_rot < 2 || n_rot % 2 || n_rot > head_dim)
        return sl_err_set(SL_ERANGE, "model metadata: rope.dimension_count %u invalid for head dim %u",
                          n_rot, head_dim);
    if ((rc = sl_model_key_f32(g, a, "rope.freq_base", &d->rope_base, false, 10000.0f)) ||
        (rc = sl_model_key_f32(g, a, "attention.layer_norm_rms_epsilon", &d->rms_eps, true, 0)))
        return rc;
    if (!(d->rope_base > 0) || !(d->rms_eps >= 0))
        return sl_err_set(SL_ERANGE, "model metadata: rope base %g / rms eps %g invalid",
                          (double)d->rope_base, (double)d->rms_eps);

    d->n_layer = (int32_t)n_layer; d->n_embd = (int32_t)n_embd; d->n_ff = (int32_t)n_ff;
    d->n_head = (int32_t)n_head; d->n_head_kv = (int32_t)n_head_kv; d->head_dim = (int32_t)head_dim;
    d->n_rot = (int32_t)n_rot; d->n_ctx_train = (int32_t)n_ctx;
    d->rope_attn_factor = 1.0f;   /* before the rope keys: YaRN sets its own */
    if ((rc = sl_model_rope_keys(d, g))) return rc;
    d->q_dim = d->n_head * d->head_dim; d->kv_dim = d->n_head_kv * d->head_dim;
    d->rope_neox = d->arch->rope_neox;
    d->n_kinds = 1;   /* every layer d->kind[0] unless the family's keys say otherwise */
    d->kind[0] = d->arch->layer;
    if (d->arch->keys && (rc = d->arch->keys(d, g))) return rc;
    if ((rc = kv_heads_check(d, g, n_layer))) return rc;

    /* globals */
    const sl_gguf_tensor *te = sl_gguf_find_tensor(g, "token_embd.weight");
    if (!te) return sl_err_set(SL_ENOENT, "tensor 'token_embd.weight' missing from the model");
    if (te->n_dims != 2 || te->ne[1] < 1 || te->ne[1] > (1u << 24))
        return sl_err_set(SL_ESHAPE, "tensor 'token_embd.weight': %u dims / %llu rows invalid",
                          te->n_dims, (unsigned long long)te->ne[1]);
    d->n_vocab = (int32_t)te->ne[1];
    uint32_t nv;
    if ((rc = sl_model_key_u32(g, a, "vocab_size", &nv, false, (uint32_t)d->n_vocab))) return rc;
    if ((int32_t)nv != d->n_vocab)
        return sl_err_set(SL_ESHAPE, "tensor 'token_embd.weight': %d rows but %s.vocab_size is %u",
                          d->n_vocab, a, nv);
    const sl_gguf_tensor *t;
    if ((rc = sl_model_check_tensor(g, "token_embd.weight", n_embd, nv, T_MATRIX, false, &t))) return rc;
    d->embd_type = t->type;
    if ((rc = sl_model_check_tensor(g, "output_norm.weight", n_embd, 0, T_F32, false, NULL))) return rc;
    if ((rc = sl_model_check_tensor(g, "output.weight", n_embd, nv, T_MATRIX, true, &t))) return rc;
    d->tied_output = t == NULL;
    d->head_type = t ? t->type : d->embd_type;
    if ((rc = sl_model_check_tensor(g, "rope_freqs.weight", n_rot / 2, 0, T_F32, true, &t))) return rc;
    if (t && d->has_rope_factors)
        return sl_err_set(SL_EFORMAT, "model has both rope_freqs.weight and LongRoPE factors");
    d->has_rope_freqs = t != NULL;

    for (uint32_t l = 0; l < n_layer; l++)
        if ((rc = sl_arch_check_layer(d, g, l))) return rc;
    if (sl_gguf_n_layers(g) != d->n_layer + d->n_layer_nextn)
        return sl_err_set(SL_ESHAPE, "model has tensors for %d layers but %s.block_count is %d",
                          sl_gguf_n_layers(g), a, d->n_layer + d->n_layer_nextn);
    return 0;
}

bool sl_model_layer_swa(const sl_model_desc *d, int32_t l)
{
    return sl_model_layer(d, l)->attn.window > 0;
}
