/* Model description of gpt-oss (engine/arch/arch_gptoss.c, YaRN in
 * engine/model_rope.c): the synth3 file read as the golden README describes
 * it (blocks and options per layer, the window on even layers, YaRN's
 * angles and cos/sin factor against the README's formula in double), and a
 * hostile variant of each gpt-oss key and tensor refused with a message
 * naming it, by the description and by sl_model_open alike. */
#include "model_testutil.h"

#include <math.h>

#define GPTOSS MODELS "/synth3-gpt-oss-q4_k_m.gguf"

Test(model_gptoss, description)
{
    sl_model_desc d;
    mt_load_arch(GPTOSS, "gpt-oss", &d);
    cr_assert(d.n_layer == 4 && d.n_head == 8 && d.n_head_kv == 2 && d.head_dim == 64 && d.q_dim == 512);
    cr_assert(d.n_expert == 16 && d.n_expert_used == 4 && d.n_ff_exp == 128 && d.n_ff_shexp == 0);
    cr_assert(d.rope_neox && d.n_swa == 16 && d.rope_base_swa == d.rope_base && d.rope_base == 150000.0f);
    for (int32_t l = 0; l < d.n_layer; l++) {
        const sl_attn_block *a = mt_attn(&d, l);
        const sl_ffn_block *f = mt_ffn(&d, l);
        cr_assert(a->kind == SL_ATTN_SOFTMAX && a->qkv_bias && a->o_bias && a->sinks && !a->qk_norm &&
                  !a->post_norm && a->q_scale == 0, "layer %d", l);
        cr_assert_eq(a->window, l % 2 == 0 ? 16 : 0, "layer %d: window %d", l, a->window);
        cr_assert(f->kind == SL_FFN_MOE && f->act == SL_ACT_SWIGLU_OAI && f->norm_post_attn && f->router_bias &&
                  f->softmax_k && f->expert_bias && !f->weights_norm && !f->shared_expert && !f->post_norm,
                  "layer %d", l);
        cr_assert_str_eq(sl_ffn_norm_name(f), "post_attention_norm.weight");
    }
}

/* The README's YaRN for this file: theta_ext = p 150000^(-2i/64), theta_int
 * = theta_ext / 8, theta = theta_int (1 - r_i) + theta_ext r_i with the ramp
 * r_i = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1), lo = 0, hi = 7;
 * cos and sin times 1 + 0.1 ln 8. The file's beta keys are not used. */
Test(model_gptoss, yarn_rope)
{
    sl_model_desc d;
    mt_load_arch(GPTOSS, "gpt-oss", &d);
    cr_assert_eq(d.rope_scaling, SL_ROPE_SCALE_YARN);
    cr_assert(d.rope_scale_factor == 8.0f && d.yarn_orig_ctx == 64);
    cr_assert(d.yarn_beta_fast == 32.0f && d.yarn_beta_slow == 1.0f);
    cr_assert_float_eq(d.rope_attn_factor, 1.0 + 0.1 * log(8.0), 1e-6);
    double c32 = 64 * log(64 / (2 * M_PI * 32)) / (2 * log(150000.0));
    double c1 = 64 * log(64 / (2 * M_PI * 1)) / (2 * log(150000.0));
    double lo = fmax(0, floor(c32)), hi = fmin(63, ceil(c1));
    cr_assert(lo == 0 && hi == 7);
    float inv[32];
    sl_model_rope_inv_freq(&d, d.rope_base, NULL, inv);
    for (int i = 0; i < 32; i++) {
        double ext = pow(150000.0, -2.0 * i / 64), r = 1 - fmin(1, fmax(0, (i - lo) / fmax(0.001, hi - lo)));
        double want = ext / 8 * (1 - r) + ext * r;
        cr_assert_float_eq(inv[i], want, 2e-6 * want, "pair %d: %g vs %g", i, inv[i], want);
    }
    cr_assert_float_eq(inv[0], 1.0, 1e-7);                             /* pair 0 unscaled */
    cr_assert_float_eq(inv[7], pow(150000.0, -14.0 / 64) / 8, 1e-9);  /* pairs >= 7 interpolated */
}

/* Each tensor gpt-oss adds, left out: refused with its name. */
static const char *const needed[] = {
    "blk.1.attn_sinks.weight", "blk.3.attn_output.bias", "blk.0.attn_v.bias", "blk.2.post_attention_norm.weight",
    "blk.1.ffn_gate_inp.bias", "blk.0.ffn_gate_exps.bias", "blk.3.ffn_down_exps.bias",
};

Test(model_gptoss, missing_tensors_refused, .timeout = 120)
{
    for (size_t i = 0; i < sizeof needed / sizeof needed[0]; i++) {
        char msg[128];
        snprintf(msg, sizeof msg, "tensor '%s' missing from the model", needed[i]);
        mt_mutation mu = { .src = GPTOSS, .drop = needed[i] };
        mt_expect_refused(needed[i], &mu, SL_ENOENT, msg, NULL);
    }
}

/* One hostile variant per gpt-oss key and tensor shape or type: what is
 * changed, the status and the exact message. */
static const struct {
    const char *what;
    int want;
    mt_mutation mu;
    const char *msg;
} hostile[] = {
    { "sinks_wrong_shape", SL_ESHAPE, { .shape_name = "blk.0.attn_sinks.weight", .dim = 0, .ne = 4 },
      "tensor 'blk.0.attn_sinks.weight': shape [4], expected [8]" },
    { "sinks_not_f32", SL_EUNSUPPORTED, { .type_name = "blk.2.attn_sinks.weight" },
      "tensor 'blk.2.attn_sinks.weight': type f16, expected f32" },
    { "router_bias_wrong_shape", SL_ESHAPE, { .shape_name = "blk.0.ffn_gate_inp.bias", .dim = 0, .ne = 15 },
      "tensor 'blk.0.ffn_gate_inp.bias': shape [15], expected [16]" },
    { "up_bias_wrong_experts", SL_ESHAPE, { .shape_name = "blk.3.ffn_up_exps.bias", .dim = 1, .ne = 8 },
      "tensor 'blk.3.ffn_up_exps.bias': shape [128, 8], expected [128, 16]" },
    { "down_bias_wrong_width", SL_ESHAPE, { .shape_name = "blk.2.ffn_down_exps.bias", .dim = 0, .ne = 128 },
      "tensor 'blk.2.ffn_down_exps.bias': shape [128, 16], expected [256, 16]" },
    { "window_missing", SL_ENOENT, { .drop_key = "gpt-oss.attention.sliding_window" },
      "model metadata: key 'gpt-oss.attention.sliding_window' missing" },
    { "window_zero", SL_ERANGE, { .u32_key = "gpt-oss.attention.sliding_window", .u32_val = 0 },
      "model metadata: key 'gpt-oss.attention.sliding_window' = 0 invalid" },
    { "pattern_one", SL_ERANGE, { .u32_key = "gpt-oss.attention.sliding_window_pattern", .u32_val = 1 },
      "model metadata: key 'gpt-oss.attention.sliding_window_pattern' = 1 invalid" },
    { "yarn_factor_negative", SL_ERANGE, { .f32_key = "gpt-oss.rope.scaling.factor", .f32_val = -2.0f },
      "model metadata: key 'gpt-oss.rope.scaling.factor' = -2 invalid for yarn" },
    { "yarn_beta_zero", SL_ERANGE, { .f32_key = "gpt-oss.rope.scaling.yarn_beta_fast", .f32_val = 0.0f },
      "model metadata: yarn_beta_fast 0 / yarn_beta_slow 1 invalid" },
    { "expert_count_missing", SL_ENOENT, { .drop_key = "gpt-oss.expert_count" },
      "model metadata: key 'gpt-oss.expert_count' missing" },
};

Test(model_gptoss, hostile_variants_refused, .timeout = 120)
{
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        cr_log_info("%s", hostile[i].what);
        mt_mutation mu = hostile[i].mu;
        mu.src = GPTOSS;
        mt_expect_refused(hostile[i].what, &mu, hostile[i].want, hostile[i].msg, NULL);
    }
}
