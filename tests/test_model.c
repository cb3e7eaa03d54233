/* Model description: hyper-parameters of the shared models, defaults, rope
 * scaling, and clear errors for broken files (written with the GGUF writer
 * into a temp dir: unknown architecture, wrong shape, missing tensor, bad type). */
#include "model_testutil.h"

#include "../engine/arch/arch.h"

#include <math.h>

Test(model, stories260k)
{
    sl_model_desc d;
    mt_load_arch(MODELS "/stories260K.gguf", "llama", &d);
    cr_assert_eq(d.n_layer, 5);
    cr_assert_eq(d.n_embd, 64);
    cr_assert_eq(d.n_ff, 172);
    cr_assert_eq(d.n_head, 8);
    cr_assert_eq(d.n_head_kv, 4);
    cr_assert_eq(d.head_dim, 8);
    cr_assert_eq(d.n_rot, 8);
    cr_assert_eq(d.n_vocab, 512);
    cr_assert_eq(d.n_ctx_train, 2048);
    cr_assert_float_eq(d.rope_base, 10000.0f, 0);   /* key absent: default */
    cr_assert_float_eq(d.rms_eps, 1e-5f, 1e-9);
    cr_assert(!d.rope_neox && !mt_attn(&d, 0)->qkv_bias && !d.tied_output);
    cr_assert(d.n_kinds == 1 && mt_attn(&d, 4)->kind == SL_ATTN_SOFTMAX && mt_ffn(&d, 4)->kind == SL_FFN_GATED);
    cr_assert(mt_ffn(&d, 0)->act == SL_ACT_SILU);
    cr_assert_eq(d.rope_scaling, SL_ROPE_SCALE_NONE);
    cr_assert_eq(d.head_type, SL_GGML_F32);
}

Test(model, tinystories_tied)
{
    sl_model_desc d;
    cr_assert_eq(mt_load_desc(MODELS "/TinyStories-656K-Q8_0.gguf", &d), 0, "%s", sl_last_error());
    cr_assert(d.tied_output);
    cr_assert_eq(d.head_type, SL_GGML_Q8_0);
    cr_assert_eq(d.n_vocab, 2048);
    cr_assert_float_eq(d.rms_eps, 1e-6f, 1e-10);
    cr_assert_eq(d.n_rot, 16);
}

Test(model, qwen2)
{
    sl_model_desc d;
    mt_load_arch(MODELS "/synth-tiny-qwen2-q4_k.gguf", "qwen2", &d);
    cr_assert(d.rope_neox && mt_attn(&d, 0)->qkv_bias && !d.tied_output);
    cr_assert_float_eq(d.rope_base, 1e6f, 0);
    cr_assert_eq(d.q_dim, 256);
    cr_assert_eq(d.kv_dim, 128);
    cr_assert_eq(d.head_type, SL_GGML_Q6_K);
    float inv[32];
    sl_model_rope_inv_freq(&d, d.rope_base, NULL, inv);
    cr_assert_float_eq(inv[0], 1.0f, 0);
    for (int i = 1; i < 32; i++)
        cr_assert_float_eq(inv[i], pow(1e6, -2.0 * i / 64), 1e-6 * pow(1e6, -2.0 * i / 64) + 1e-12);
}

/* ---- broken files ---------------------------------------------------------- */

/* The mutated stories260K (or mu->src) described into d, its status. */
static int broken(const mt_mutation *mu, sl_model_desc *d)
{
    return mt_mutated_desc(mu, d, NULL, NULL, 0);
}

Test(model, unknown_architecture)
{
    /* the message lists the architecture table: each row once */
    char names[1024], wrapped[1100], want[1200];
    sl_arch_names(names, sizeof names);
    cr_assert(strlen(names) < sizeof names - 1, "%s", names);
    snprintf(wrapped, sizeof wrapped, ", %s,", names);
    int n = 0;
    for (const char *p = wrapped + 2; *p; n++) {
        const char *e = strchr(p, ',');
        char one[64], key[72];
        snprintf(one, sizeof one, "%.*s", (int)(e - p), p);
        const sl_arch *a = sl_arch_find(one);
        cr_assert(a && !strcmp(a->name, one), "'%s' is not a row of the table", one);
        snprintf(key, sizeof key, ", %s,", one);
        cr_assert(!strstr(strstr(wrapped, key) + 1, key), "'%s' listed twice", one);
        p = e[1] ? e + 2 : e + 1;
    }
    cr_assert_geq(n, 13);
    cr_assert(strstr(wrapped, ", llama,") && strstr(wrapped, ", gpt-oss,"), "%s", names);
    cr_assert_null(sl_arch_find("xyz"));
    snprintf(want, sizeof want, "architecture 'xyz' not supported (%s)", names);
    mt_mutation mu = { .arch = "xyz" };
    mt_expect_refused("arch", &mu, SL_EUNSUPPORTED, want, "architecture 'xyz' not supported");
}

Test(model, wrong_tensor_shape)
{
    mt_mutation mu = { .shape_name = "blk.2.attn_k.weight", .dim = 1, .ne = 64 };
    mt_expect_refused("shape", &mu, SL_ESHAPE,
                      "tensor 'blk.2.attn_k.weight': shape [64, 64], expected [64, 32]", "blk.2.attn_k.weight");
}

Test(model, wrong_vocab_rows)
{
    mt_mutation mu = { .shape_name = "output.weight", .dim = 1, .ne = 500 };
    sl_model_desc d;
    cr_assert_eq(broken(&mu, &d), SL_ESHAPE);
    cr_assert_str_eq(sl_last_error(), "tensor 'output.weight': shape [64, 500], expected [64, 512]");
}

Test(model, missing_tensor)
{
    mt_mutation mu = { .drop = "blk.1.ffn_up.weight" };
    sl_model_desc d;
    cr_assert_eq(broken(&mu, &d), SL_ENOENT);
    cr_assert_str_eq(sl_last_error(), "tensor 'blk.1.ffn_up.weight' missing from the model");
}

Test(model, norm_must_be_f32)
{
    mt_mutation mu = { .type_name = "blk.0.ffn_norm.weight" };
    sl_model_desc d;
    cr_assert_eq(broken(&mu, &d), SL_EUNSUPPORTED);
    cr_assert_str_eq(sl_last_error(), "tensor 'blk.0.ffn_norm.weight': type f16, expected f32");
}

/* stories260K with <arch>.rope.scaling.type and .factor set: its description
 * and rope angles of base 1e4 (head dim 8: 4 pairs). */
static void rope_scaled(const char *type, float factor, sl_model_desc *d, float inv[4])
{
    mt_mutation mu = { .str_key = "llama.rope.scaling.type", .str_val = type,
                       .f32_key = "llama.rope.scaling.factor", .f32_val = factor };
    cr_assert_eq(broken(&mu, d), 0, "%s", sl_last_error());
    sl_model_rope_inv_freq(d, d->rope_base, NULL, inv);
}

Test(model, rope_scaling_linear_and_llama3)
{
    sl_model_desc d;
    float inv[4];
    rope_scaled("linear", 4.0f, &d, inv);   /* positions / 4 */
    cr_assert_eq(d.rope_scaling, SL_ROPE_SCALE_LINEAR);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(inv[i], 0.25 * pow(10000.0, -2.0 * i / 8), 1e-6);

    rope_scaled("llama3", 8.0f, &d, inv);
    cr_assert_eq(d.rope_scaling, SL_ROPE_SCALE_LLAMA3);
    /* head dim 8, base 1e4: wavelengths 2pi*{1, 10, 100, 1000}; original ctx 8192,
     * low 1, high 4: bounds 2048 and 8192: the first three keep their
     * frequency, the last (6283) is in the smoothed band */
    for (int i = 0; i < 3; i++)
        cr_assert_float_eq(inv[i], pow(10000.0, -2.0 * i / 8), 1e-6);
    double sm = (8192 / (2 * M_PI * 1000) - 1) / 3;
    cr_assert_float_eq(inv[3], (1 - sm) * 1e-3 / 8 + sm * 1e-3, 1e-8);
    /* per-dimension divisors from a rope_freqs tensor take precedence */
    float ff[4] = { 1, 2, 4, 8 };
    sl_model_rope_inv_freq(&d, d.rope_base, ff, inv);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(inv[i], pow(10000.0, -2.0 * i / 8) / ff[i], 1e-6);
}

Test(model, rope_scaling_llama3_smooth)
{
    sl_model_desc d;
    memset(&d, 0, sizeof d);
    d.n_rot = 128; d.rope_base = 500000.0f;
    d.rope_scaling = SL_ROPE_SCALE_LLAMA3; d.rope_scale_factor = 8;
    d.ll3_low_freq = 1; d.ll3_high_freq = 4; d.ll3_orig_ctx = 8192;
    float inv[64];
    sl_model_rope_inv_freq(&d, d.rope_base, NULL, inv);
    for (int i = 0; i < 64; i++) {
        double f = pow(500000.0, -2.0 * i / 128), wl = 2 * M_PI / f, want;
        if (wl < 2048) want = f;
        else if (wl > 8192) want = f / 8;
        else {
            double sm = (8192 / wl - 1) / 3;
            want = (1 - sm) * f / 8 + sm * f;
        }
        cr_assert_float_eq(inv[i], want, 1e-5 * want, "pair %d: %g vs %g", i, inv[i], want);
    }
}

Test(model, unsupported_rope_scaling)
{
    mt_mutation mu = { .str_key = "llama.rope.scaling.type", .str_val = "longrope",
                       .f32_key = "llama.rope.scaling.factor", .f32_val = 4.0f };
    sl_model_desc d;
    cr_assert_eq(broken(&mu, &d), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(sl_last_error(), "longrope"));
}

/* ---- dense families of 2026: qwen3, phi3 ---------------------------------- */
#define QWEN3 MODELS "/synth2-qwen3-q4_k_m.gguf"
#define PHI3 MODELS "/synth2-phi3-q4_k_m.gguf"
#define GEMMA3 MODELS "/synth2-gemma3-q4_k_m.gguf"

Test(model, qwen3)
{
    sl_model_desc d;
    mt_load_arch(QWEN3, "qwen3", &d);
    cr_assert_eq(d.head_dim, 128, "head dim from attention.key_length, not n_embd / n_head");
    cr_assert_eq(d.q_dim, 512);
    cr_assert_eq(d.kv_dim, 256);
    const sl_attn_block *a = mt_attn(&d, 0);
    cr_assert(d.rope_neox && a->qk_norm && !a->qkv_bias && !a->fused_qkv && !mt_ffn(&d, 0)->fused_gate_up);
    cr_assert(a->q_scale == 0 && !d.has_rope_factors && d.n_kinds == 1 && a->window == 0);
    cr_assert(mt_ffn(&d, 0)->act == SL_ACT_SILU);
    cr_assert_float_eq(d.rope_attn_factor, 1.0f, 0);
    cr_assert_float_eq(d.rope_base, 1e6f, 0);
    cr_assert_null(sl_model_rope_factors_name(&d, 512));
}

Test(model, phi3)
{
    sl_model_desc d;
    mt_load_arch(PHI3, "phi3", &d);
    const sl_attn_block *a = mt_attn(&d, 0);
    const sl_ffn_block *ff = mt_ffn(&d, 0);
    cr_assert(d.rope_neox && a->fused_qkv && ff->fused_gate_up && d.has_rope_factors);
    cr_assert_float_eq(a->q_scale, 0.125f, 0);
    cr_assert(d.n_kinds == 1 && a->window == 0 && !a->post_norm && !ff->post_norm && ff->act == SL_ACT_SILU);
    cr_assert(d.embd_scale == 0 && !a->qk_norm && !a->qkv_bias);
    cr_assert_eq(d.head_dim, 64);
    cr_assert_eq(d.n_ff, 768);
    cr_assert_eq(d.rope_orig_ctx, 64);
    cr_assert_float_eq(d.rope_attn_factor, sqrtf(1.5f), 1e-6);
    cr_assert_eq(d.n_swa, 0);
    /* the context is padded to 256 before the comparison with 64: always long here */
    cr_assert_str_eq(sl_model_rope_factors_name(&d, 1), "rope_factors_long.weight");
    cr_assert_str_eq(sl_model_rope_factors_name(&d, 512), "rope_factors_long.weight");
}

Test(model, gemma3)
{
    sl_model_desc d;
    mt_load_arch(GEMMA3, "gemma3", &d);
    const sl_attn_block *a = mt_attn(&d, 0);
    const sl_ffn_block *ff = mt_ffn(&d, 0);
    cr_assert(d.rope_neox && a->qk_norm && a->post_norm && ff->post_norm && ff->act == SL_ACT_GELU);
    cr_assert(d.tied_output && !a->fused_qkv && !a->qkv_bias);
    cr_assert_eq(d.head_dim, 128);
    cr_assert_eq(d.n_head_kv, 1);
    cr_assert_eq(d.n_swa, 16);
    cr_assert_eq(d.n_kinds, 2);             /* sliding-window and full layers */
    cr_assert_float_eq(d.rope_base, 1e6f, 0);
    cr_assert_float_eq(d.rope_base_swa, 1e4f, 0);
    cr_assert_float_eq(d.embd_scale, 16.0f, 0);
    cr_assert_float_eq(a->q_scale, 1.0f / sqrtf(128.0f), 0);
    cr_assert_float_eq(d.logit_softcap, 0.0f, 0);
    for (int l = 0; l < 6; l++) {   /* sliding_window_pattern absent: 6, the last layer of each 6 full */
        cr_assert_eq(sl_model_layer_swa(&d, l), l < 5, "layer %d", l);
        cr_assert_eq(mt_attn(&d, l)->window, l < 5 ? 16 : 0, "layer %d", l);
        cr_assert_float_eq(mt_attn(&d, l)->q_scale, 1.0f / sqrtf(128.0f), 0);
    }
}

/* Real Phi-3-128k: original context 4096, short factors up to a padded 4096. */
Test(model, phi3_factors_switch)
{
    mt_mutation mu = { .src = PHI3, .u32_key = "phi3.rope.scaling.original_context_length",
                    .u32_val = 4096 };
    sl_model_desc d;
    cr_assert_eq(broken(&mu, &d), 0, "%s", sl_last_error());
    cr_assert_str_eq(sl_model_rope_factors_name(&d, 4000), "rope_factors_short.weight");
    cr_assert_str_eq(sl_model_rope_factors_name(&d, 4096), "rope_factors_short.weight");
    cr_assert_str_eq(sl_model_rope_factors_name(&d, 4097), "rope_factors_long.weight");
}

/* The window is read and checked but not applied (as llama.cpp for phi3). */
Test(model, phi3_sliding_window_read)
{
    mt_mutation mu = { .src = PHI3, .u32_key = "phi3.attention.sliding_window", .u32_val = 2047 };
    sl_model_desc d;
    cr_assert_eq(broken(&mu, &d), 0, "%s", sl_last_error());
    cr_assert_eq(d.n_swa, 2047);
}

/* Hostile variants of every qwen3 / phi3 / gemma3 key and tensor: the description
 * and the whole open both refuse them with a message naming the culprit. */
Test(model, dense_hostile_variants)
{
    static const struct {
        const char *name;
        mt_mutation mu;
        int want;
        const char *desc_msg, *open_msg;
    } cases[] = {
        { "q3noq", { .src = QWEN3, .drop = "blk.1.attn_q_norm.weight" }, SL_ENOENT,
          "tensor 'blk.1.attn_q_norm.weight' missing from the model", "blk.1.attn_q_norm.weight" },
        { "q3knorm", { .src = QWEN3, .shape_name = "blk.2.attn_k_norm.weight", .dim = 0, .ne = 64 }, SL_ESHAPE,
          "tensor 'blk.2.attn_k_norm.weight': shape [64], expected [128]", "blk.2.attn_k_norm.weight" },
        { "q3klen", { .src = QWEN3, .u32_key = "qwen3.attention.key_length", .u32_val = 64 },
          SL_EUNSUPPORTED, "model metadata: head dimension 64 (value 128) not supported", "head dimension 64" },
        { "p3qkv", { .src = PHI3, .shape_name = "blk.0.attn_qkv.weight", .dim = 1, .ne = 384 }, SL_ESHAPE,
          "tensor 'blk.0.attn_qkv.weight': shape [256, 384], expected [256, 512]", "blk.0.attn_qkv.weight" },
        { "p3noqkv", { .src = PHI3, .drop = "blk.2.attn_qkv.weight" }, SL_ENOENT,
          "tensor 'blk.2.attn_qkv.weight' missing from the model", "blk.2.attn_qkv.weight" },
        { "p3up", { .src = PHI3, .shape_name = "blk.3.ffn_up.weight", .dim = 1, .ne = 768 }, SL_ESHAPE,
          "tensor 'blk.3.ffn_up.weight': shape [256, 768], expected [256, 1536]", "blk.3.ffn_up.weight" },
        { "p3short", { .src = PHI3, .drop = "rope_factors_short.weight" }, SL_ENOENT,
          "tensor 'rope_factors_short.weight' missing from the model (LongRoPE needs both factor tensors)",
          "rope_factors_short.weight" },
        { "p3long", { .src = PHI3, .shape_name = "rope_factors_long.weight", .dim = 0, .ne = 64 }, SL_ESHAPE,
          "tensor 'rope_factors_long.weight': shape [64], expected [32]", "rope_factors_long.weight" },
        { "p3af", { .src = PHI3, .f32_key = "phi3.rope.scaling.attn_factor", .f32_val = 0.0f },
          SL_ERANGE, "model metadata: key 'phi3.rope.scaling.attn_factor' = 0 invalid", "attn_factor" },
        { "p3oc", { .src = PHI3, .u32_key = "phi3.rope.scaling.original_context_length",
                    .u32_val = 0 },
          SL_ERANGE, "model metadata: key 'phi3.rope.scaling.original_context_length' = 0 invalid",
          "original_context_length" },
        { "g3win0", { .src = GEMMA3, .u32_key = "gemma3.attention.sliding_window", .u32_val = 0 },
          SL_ERANGE, "model metadata: key 'gemma3.attention.sliding_window' = 0 invalid", "sliding_window" },
        { "g3pat0", { .src = GEMMA3, .u32_key = "gemma3.attention.sliding_window_pattern",
                      .u32_val = 0 },
          SL_ERANGE, "model metadata: key 'gemma3.attention.sliding_window_pattern' = 0 invalid",
          "sliding_window_pattern" },
        { "g3nopost", { .src = GEMMA3, .drop = "blk.4.post_ffw_norm.weight" }, SL_ENOENT,
          "tensor 'blk.4.post_ffw_norm.weight' missing from the model", "blk.4.post_ffw_norm.weight" },
        { "g3noqn", { .src = GEMMA3, .drop = "blk.0.attn_q_norm.weight" }, SL_ENOENT,
          "tensor 'blk.0.attn_q_norm.weight' missing from the model", "blk.0.attn_q_norm.weight" },
        { "g3pan", { .src = GEMMA3, .shape_name = "blk.5.post_attention_norm.weight", .dim = 0, .ne = 128 }, SL_ESHAPE,
          "tensor 'blk.5.post_attention_norm.weight': shape [128], expected [256]",
          "blk.5.post_attention_norm.weight" },
        { "g3cap", { .src = GEMMA3, .f32_key = "gemma3.final_logit_softcapping", .f32_val = -1.0f },
          SL_ERANGE, "model metadata: key 'gemma3.final_logit_softcapping' = -1 invalid", "softcapping" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        mt_expect_refused(cases[i].name, &cases[i].mu, cases[i].want, cases[i].desc_msg, cases[i].open_msg);
}
