/* Model description from GGUF metadata + tensor validation (llama, qwen2;
 * the dense 2026 families in model_dense.c). */
#include "model.h"
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../quant/quant.h"
#include "../gguf/base/sl_internal.h"

/* True if the kernels can multiply with weights of this type. */
static bool matrix_type_ok(uint32_t type)
{
    /* unknown ids and the activation-only Q8_1 / Q8_K are not weight types */
    return type < SL_GGML_TYPE_COUNT && sl_quant_is_supported((int)type);
}

int sl_model_key_u32(const sl_gguf *g, const char *arch, const char *suffix, uint32_t *out,
                   bool required, uint32_t def)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int rc = sl_gguf_get_u32(g, key, out);
    if (rc == SL_ENOENT && !required) { *out = def; return 0; }
    if (rc == SL_ENOENT) return sl_err_set(SL_ENOENT, "model metadata: key '%s' missing", key);
    if (rc) return sl_err_set(rc, "model metadata: key '%s': %s", key, sl_strerror(rc));
    return 0;
}

int sl_model_key_f32(const sl_gguf *g, const char *arch, const char *suffix, float *out,
                   bool required, float def)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int rc = sl_gguf_get_f32(g, key, out);
    if (rc == SL_ENOENT && !required) { *out = def; return 0; }
    if (rc == SL_ENOENT) return sl_err_set(SL_ENOENT, "model metadata: key '%s' missing", key);
    if (rc) return sl_err_set(rc, "model metadata: key '%s': %s", key, sl_strerror(rc));
    if (!isfinite(*out)) return sl_err_set(SL_ERANGE, "model metadata: key '%s' is not finite", key);
    return 0;
}

/* Checks presence, shape [ne0, ne1] (ne1 = 0: 1-D) and type class of a tensor. */
int sl_model_check_tensor(const sl_gguf *g, const char *name, uint64_t ne0, uint64_t ne1, int cls,
                        bool optional, const sl_gguf_tensor **out)
{
    const sl_gguf_tensor *t = sl_gguf_find_tensor(g, name);
    if (out) *out = t;
    if (!t) {
        if (optional) return 0;
        return sl_err_set(SL_ENOENT, "tensor '%s' missing from the model", name);
    }
    uint64_t want[4] = { ne0, ne1 ? ne1 : 1, 1, 1 };
    bool ok = true;
    for (int i = 0; i < 4; i++) {
        uint64_t have = i < (int)t->n_dims ? t->ne[i] : 1;
        if (have != want[i]) ok = false;
    }
    if (!ok) {
        char have_s[96] = "", want_s[64];
        int o = 0;
        for (uint32_t i = 0; i < t->n_dims && o < (int)sizeof have_s - 24; i++)
            o += snprintf(have_s + o, sizeof have_s - (size_t)o, "%s%llu", i ? ", " : "",
                          (unsigned long long)t->ne[i]);
        if (ne1) snprintf(want_s, sizeof want_s, "%llu, %llu", (unsigned long long)ne0,
                          (unsigned long long)ne1);
        else snprintf(want_s, sizeof want_s, "%llu", (unsigned long long)ne0);
        return sl_err_set(SL_ESHAPE, "tensor '%s': shape [%s], expected [%s]", name, have_s, want_s);
    }
    if (cls == T_F32 && t->type != SL_GGML_F32) {
        const char *tn = sl_gguf_type_name(t->type);
        return sl_err_set(SL_EUNSUPPORTED, "tensor '%s': type %s, expected f32", name,
                          tn ? tn : "unknown");
    }
    if (cls == T_MATRIX && !matrix_type_ok(t->type)) {
        const char *tn = sl_gguf_type_name(t->type);
        return sl_err_set(SL_EUNSUPPORTED, "tensor '%s': type %s (%u) not supported for a matrix",
                          name, tn ? tn : "unknown", t->type);
    }
    return 0;
}

static int load_rope_scaling(sl_model_desc *d, const sl_gguf *g, const char *a)
{
    char key[128];
    const char *st = NULL;
    uint64_t sl = 0;
    d->rope_scaling = SL_ROPE_SCALE_NONE;
    d->rope_scale_factor = 1.0f;
    snprintf(key, sizeof key, "%s.rope.scaling.type", a);
    int rc = sl_gguf_get_str(g, key, &st, &sl);
    if (rc && rc != SL_ENOENT) return sl_err_set(rc, "model metadata: key '%s': %s", key, sl_strerror(rc));
    float factor = 0;
    int r2 = sl_model_key_f32(g, a, "rope.scaling.factor", &factor, false, 0.0f);
    if (r2) return r2;
    if (factor == 0.0f) {   /* legacy key */
        r2 = sl_model_key_f32(g, a, "rope.scale_linear", &factor, false, 0.0f);
        if (r2) return r2;
        if (factor != 0.0f && rc == SL_ENOENT) st = "linear";
    }
    if (!st || !strcmp(st, "none")) return 0;
    if (!strcmp(st, "linear")) {
        if (factor <= 0.0f) return 0;   /* factor 0 or absent: no scaling (as llama.cpp) */
        d->rope_scaling = SL_ROPE_SCALE_LINEAR;
        d->rope_scale_factor = factor;
        return 0;
    }
    if (!strcmp(st, "llama3")) {
        d->rope_scaling = SL_ROPE_SCALE_LLAMA3;
        d->rope_scale_factor = factor > 0 ? factor : 8.0f;
        uint32_t oc;
        if ((rc = sl_model_key_f32(g, a, "rope.scaling.low_freq_factor", &d->ll3_low_freq, false, 1.0f)) ||
            (rc = sl_model_key_f32(g, a, "rope.scaling.high_freq_factor", &d->ll3_high_freq, false, 4.0f)) ||
            (rc = sl_model_key_u32(g, a, "rope.scaling.original_context_length", &oc, false, 8192)))
            return rc;
        if (!(d->ll3_high_freq > d->ll3_low_freq) || oc == 0)
            return sl_err_set(SL_ERANGE, "model metadata: llama3 rope scaling factors invalid");
        d->ll3_orig_ctx = (int32_t)oc;
        return 0;
    }
    return sl_err_set(SL_EUNSUPPORTED, "rope scaling type '%s' not supported (none, linear, llama3)", st);
}

int sl_model_desc_load(sl_model_desc *d, const sl_gguf *g)
{
    memset(d, 0, sizeof *d);
    const char *arch = NULL;
    uint64_t alen = 0;
    int rc = sl_gguf_get_str(g, "general.architecture", &arch, &alen);
    if (rc == SL_ENOENT) return sl_err_set(SL_ENOENT, "model metadata: general.architecture missing");
    if (rc) return sl_err_set(rc, "model metadata: general.architecture: %s", sl_strerror(rc));
    if (!strcmp(arch, "llama")) d->arch = SL_ARCH_LLAMA;
    else if (!strcmp(arch, "qwen2")) d->arch = SL_ARCH_QWEN2;
    else if (!strcmp(arch, "qwen3")) d->arch = SL_ARCH_QWEN3;
    else if (!strcmp(arch, "phi3")) d->arch = SL_ARCH_PHI3;
    else if (!strcmp(arch, "gemma3")) d->arch = SL_ARCH_GEMMA3;
    else if (!strcmp(arch, "qwen2moe")) d->arch = SL_ARCH_QWEN2MOE;
    else if (!strcmp(arch, "qwen3moe")) d->arch = SL_ARCH_QWEN3MOE;
    else return sl_err_set(SL_EUNSUPPORTED, "architecture '%.64s' not supported (llama, qwen2, qwen3, "
                           "phi3, gemma3, qwen2moe, qwen3moe; llama with experts: mixtral)", arch);
    snprintf(d->arch_name, sizeof d->arch_name, "%s", arch);
    const char *a = d->arch_name;

    uint32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_rot, n_ctx, vdim;
    if ((rc = sl_model_key_u32(g, a, "block_count", &n_layer, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "embedding_length", &n_embd, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "feed_forward_length", &n_ff, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "attention.head_count", &n_head, true, 0)) ||
        (rc = sl_model_key_u32(g, a, "context_length", &n_ctx, true, 0)))
        return rc;
    if (n_layer < 1 || n_layer > 4096 || n_embd < 1 || n_embd > (1u << 20) || n_ff < 1 ||
        n_ff > (1u << 22) || n_head < 1 || n_head > 4096 || n_ctx < 1 || n_ctx > (1u << 30))
        return sl_err_set(SL_ERANGE, "model metadata: implausible hyper-parameters (layers %u, "
                          "embd %u, ff %u, heads %u, ctx %u)", n_layer, n_embd, n_ff, n_head, n_ctx);
    if ((rc = sl_model_key_u32(g, a, "attention.head_count_kv", &n_head_kv, false, n_head)) ||
        (rc = sl_model_key_u32(g, a, "attention.key_length", &head_dim, false, n_embd / n_head)) ||
        (rc = sl_model_key_u32(g, a, "attention.value_length", &vdim, false, head_dim)))
        return rc;
    if (n_head_kv < 1 || n_head % n_head_kv)
        return sl_err_set(SL_ERANGE, "model metadata: head_count %u not a multiple of head_count_kv %u",
                          n_head, n_head_kv);
    if (head_dim < 2 || head_dim % 2 || head_dim > 1024 || vdim != head_dim)
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
    if ((rc = load_rope_scaling(d, g, a))) return rc;

    d->n_layer = (int32_t)n_layer; d->n_embd = (int32_t)n_embd; d->n_ff = (int32_t)n_ff;
    d->n_head = (int32_t)n_head; d->n_head_kv = (int32_t)n_head_kv; d->head_dim = (int32_t)head_dim;
    d->n_rot = (int32_t)n_rot; d->n_ctx_train = (int32_t)n_ctx;
    d->q_dim = d->n_head * d->head_dim; d->kv_dim = d->n_head_kv * d->head_dim;
    d->rope_neox = d->arch == SL_ARCH_QWEN2;
    d->has_qkv_bias = d->arch == SL_ARCH_QWEN2;
    d->rope_attn_factor = 1.0f;
    if ((rc = sl_model_dense_keys(d, g))) return rc;
    if ((rc = sl_model_moe_keys(d, g))) return rc;

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

    /* per layer */
    /* only: 0 always, BIAS with qkv biases, QKV unless fused qkv, FFN unless fused gate/up */
    enum { ALL = 0, BIAS, QKV, FFN };
    struct { const char *n; uint32_t ne0, ne1; int cls; int only; } spec[] = {
        { "attn_norm.weight", n_embd, 0, T_F32, ALL },
        { "attn_q.weight", n_embd, (uint32_t)d->q_dim, T_MATRIX, QKV },
        { "attn_k.weight", n_embd, (uint32_t)d->kv_dim, T_MATRIX, QKV },
        { "attn_v.weight", n_embd, (uint32_t)d->kv_dim, T_MATRIX, QKV },
        { "attn_output.weight", (uint32_t)d->q_dim, n_embd, T_MATRIX, ALL },
        { "ffn_norm.weight", n_embd, 0, T_F32, ALL },
        { "ffn_gate.weight", n_embd, n_ff, T_MATRIX, FFN },
        { "ffn_up.weight", n_embd, n_ff, T_MATRIX, FFN },
        { "ffn_down.weight", n_ff, n_embd, T_MATRIX, ALL },
        { "attn_q.bias", (uint32_t)d->q_dim, 0, T_F32, BIAS },
        { "attn_k.bias", (uint32_t)d->kv_dim, 0, T_F32, BIAS },
        { "attn_v.bias", (uint32_t)d->kv_dim, 0, T_F32, BIAS },
    };
    for (uint32_t l = 0; l < n_layer; l++) {
        if ((rc = sl_model_dense_layer(d, g, l))) return rc;
        if ((rc = sl_model_moe_layer(d, g, l))) return rc;
        for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++) {
            if ((spec[i].only == BIAS && !d->has_qkv_bias) || (spec[i].only == QKV && d->fused_qkv) ||
                (spec[i].only == FFN && d->fused_gate_up))
                continue;
            if (d->n_expert && !strncmp(spec[i].n, "ffn_", 4) && strcmp(spec[i].n, "ffn_norm.weight"))
                continue;   /* experts instead of the dense FFN */
            char name[96];
            snprintf(name, sizeof name, "blk.%u.%s", l, spec[i].n);
            if ((rc = sl_model_check_tensor(g, name, spec[i].ne0, spec[i].ne1, spec[i].cls, false, NULL)))
                return rc;
        }
    }
    if (sl_gguf_n_layers(g) != d->n_layer)
        return sl_err_set(SL_ESHAPE, "model has tensors for %d layers but %s.block_count is %d",
                          sl_gguf_n_layers(g), a, d->n_layer);
    return 0;
}

void sl_model_rope_inv_freq(const sl_model_desc *d, const float *freqs, float *inv_freq)
{
    /* As llama.cpp: theta_scale = base^(-2/n_rot), angle_i = p * theta_scale^i
     * (the power built by repeated float multiplication). */
    const float theta_scale = powf(d->rope_base, -2.0f / (float)d->n_rot);
    float f = 1.0f;
    for (int i = 0; i < d->n_rot / 2; i++) {
        float v = f;
        if (freqs) {
            v = v / freqs[i];
        } else if (d->rope_scaling == SL_ROPE_SCALE_LLAMA3) {
            const double pi = 3.14159265358979323846;
            double wavelen = 2 * pi / (double)f;
            double lo = (double)d->ll3_orig_ctx / d->ll3_low_freq;
            double hi = (double)d->ll3_orig_ctx / d->ll3_high_freq;
            double div;
            if (wavelen < hi) div = 1.0;
            else if (wavelen > lo) div = d->rope_scale_factor;
            else {
                double smooth = ((double)d->ll3_orig_ctx / wavelen - d->ll3_low_freq) /
                                (d->ll3_high_freq - d->ll3_low_freq);
                div = 1.0 / ((1 - smooth) / d->rope_scale_factor + smooth);
            }
            v = v / (float)div;
        }
        if (d->rope_scaling == SL_ROPE_SCALE_LINEAR) v = (1.0f / d->rope_scale_factor) * v;
        inv_freq[i] = v;
        f *= theta_scale;
    }
}
