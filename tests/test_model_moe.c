/* Model description of the MoE families (engine/arch/: arch_moe.c and the
 * llama, qwen2moe, qwen3moe rows): the synth2
 * Mixtral / qwen2moe / qwen3moe files read as the golden README describes
 * them, and a hostile variant of each MoE key and tensor (written with the
 * GGUF writer into a temp dir) refused with a message naming it, by the
 * description and by sl_model_open alike. */
#include "model_testutil.h"

#define MIXTRAL MODELS "/synth2-mixtral-q4_k_m.gguf"
#define QWEN2MOE MODELS "/synth2-qwen2moe-q4_k_m.gguf"
#define QWEN3MOE MODELS "/synth2-qwen3moe-q4_k_m.gguf"

/* The synth2 MoE files: experts, FFN block options, attention options. */
static const struct {
    const char *path, *arch;
    int32_t n_expert, n_used, n_ff_exp, n_ff_shexp;
    bool weights_norm, shared, neox, qkv_bias, qk_norm;
} families[] = {
    /* llama: n_ff_exp from feed_forward_length (no expert-width key) */
    { MIXTRAL, "llama", 8, 2, 512, 0, true, false, false, false, false },
    { QWEN2MOE, "qwen2moe", 8, 2, 256, 512, false, true, true, true, false },
    { QWEN3MOE, "qwen3moe", 16, 4, 256, 0, true, false, true, false, true },
};

Test(model_moe, families)
{
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        sl_model_desc d;
        mt_load_arch(families[i].path, families[i].arch, &d);
        cr_assert(d.n_expert == families[i].n_expert && d.n_expert_used == families[i].n_used, "%s", d.arch_name);
        cr_assert(d.n_ff_exp == families[i].n_ff_exp && d.n_ff_shexp == families[i].n_ff_shexp, "%s", d.arch_name);
        cr_assert_eq(d.rope_neox, families[i].neox, "%s", d.arch_name);
        for (int32_t l = 0; l < d.n_layer; l++) {
            const sl_ffn_block *ff = mt_ffn(&d, l);
            const sl_attn_block *a = mt_attn(&d, l);
            cr_assert(ff->kind == SL_FFN_MOE && ff->weights_norm == families[i].weights_norm &&
                      ff->shared_expert == families[i].shared, "%s layer %d", d.arch_name, l);
            cr_assert(a->qkv_bias == families[i].qkv_bias && a->qk_norm == families[i].qk_norm,
                      "%s layer %d", d.arch_name, l);
        }
    }
    sl_model_desc d;   /* head dim from key_length */
    cr_assert_eq(mt_load_desc(QWEN3MOE, &d), 0, "%s", sl_last_error());
    cr_assert(d.head_dim == 128 && d.q_dim == 512);
}

/* A dense llama keeps its dense FFN (no expert key read as experts). */
Test(model_moe, dense_llama_unchanged)
{
    sl_model_desc d;
    cr_assert_eq(mt_load_desc(MODELS "/synth-tiny-q4_k.gguf", &d), 0, "%s", sl_last_error());
    cr_assert_eq(d.n_expert, 0);
    cr_assert_eq(d.n_ff_exp, 0);
    cr_assert_eq(mt_ffn(&d, 0)->kind, SL_FFN_GATED);
}

/* ---- hostile variants ------------------------------------------------------ */

/* One hostile variant per MoE key and tensor: the file, what is changed,
 * the status and the exact message. */
static const mt_case hostile[] = {
    { "used_count_above_expert_count", { .src = QWEN3MOE, .u32_key = "qwen3moe.expert_used_count", .u32_val = 17 },
      SL_ERANGE, "model metadata: key 'qwen3moe.expert_used_count' is 17 (1..expert_count 16)", NULL },
    { "used_count_zero", { .src = MIXTRAL, .u32_key = "llama.expert_used_count", .u32_val = 0 },
      SL_ERANGE, "model metadata: key 'llama.expert_used_count' is 0 (1..expert_count 8)", NULL },
    { "expert_count_zero", { .src = QWEN2MOE, .u32_key = "qwen2moe.expert_count", .u32_val = 0 },
      SL_ERANGE, "model metadata: key 'qwen2moe.expert_count' is 0 (1..512)", NULL },
    { "expert_count_huge", { .src = QWEN3MOE, .u32_key = "qwen3moe.expert_count", .u32_val = 0x40000000u },
      SL_ERANGE, "model metadata: key 'qwen3moe.expert_count' is 1073741824 (1..512)", NULL },
    { "expert_count_missing", { .src = QWEN3MOE, .drop_key = "qwen3moe.expert_count", NULL },
      SL_ENOENT, "model metadata: key 'qwen3moe.expert_count' missing", NULL },
    { "used_count_missing", { .src = MIXTRAL, .drop_key = "llama.expert_used_count", NULL },
      SL_ENOENT, "model metadata: key 'llama.expert_used_count' missing", NULL },
    { "mixtral_without_expert_count", { .src = MIXTRAL, .drop_key = "llama.expert_count", NULL },
      SL_ENOENT, "tensor 'blk.0.ffn_gate.weight' missing from the model", NULL },
    { "wrong_expert_count", { .src = QWEN2MOE, .u32_key = "qwen2moe.expert_count", .u32_val = 9 },
      SL_ESHAPE, "tensor 'blk.0.ffn_gate_inp.weight': shape [256, 8], expected [256, 9]", NULL },
    { "wrong_expert_width", { .src = QWEN3MOE, .u32_key = "qwen3moe.expert_feed_forward_length", .u32_val = 128 },
      SL_ESHAPE, "tensor 'blk.0.ffn_gate_exps.weight': shape [256, 256, 16] (3 dims), expected [256, 128, 16]", NULL },
    { "expert_width_zero", { .src = QWEN3MOE, .u32_key = "qwen3moe.expert_feed_forward_length", .u32_val = 0 },
      SL_ERANGE, "model metadata: key 'qwen3moe.expert_feed_forward_length' is 0", NULL },
    { "wrong_shared_width",
      { .src = QWEN2MOE, .u32_key = "qwen2moe.expert_shared_feed_forward_length", .u32_val = 256 },
      SL_ESHAPE, "tensor 'blk.0.ffn_gate_shexp.weight': shape [256, 512], expected [256, 256]", NULL },
    { "expert_tensor_wrong_third_dim",
      { .src = QWEN3MOE, .shape_name = "blk.3.ffn_down_exps.weight", .dim = 2, .ne = 15 },
      SL_ESHAPE, "tensor 'blk.3.ffn_down_exps.weight': shape [256, 256, 15] (3 dims), expected [256, 256, 16]", NULL },
    { "expert_tensor_missing", { .src = MIXTRAL, .drop = "blk.1.ffn_up_exps.weight", NULL },
      SL_ENOENT, "tensor 'blk.1.ffn_up_exps.weight' missing from the model", NULL },
    { "router_missing", { .src = QWEN2MOE, .drop = "blk.2.ffn_gate_inp.weight", NULL },
      SL_ENOENT, "tensor 'blk.2.ffn_gate_inp.weight' missing from the model", NULL },
    { "shared_gate_missing", { .src = QWEN2MOE, .drop = "blk.0.ffn_gate_inp_shexp.weight", NULL },
      SL_ENOENT, "tensor 'blk.0.ffn_gate_inp_shexp.weight' missing from the model", NULL },
    { "q_norm_missing", { .src = QWEN3MOE, .drop = "blk.1.attn_q_norm.weight", NULL },
      SL_ENOENT, "tensor 'blk.1.attn_q_norm.weight' missing from the model", NULL },
    { "k_norm_wrong_shape", { .src = QWEN3MOE, .shape_name = "blk.0.attn_k_norm.weight", .dim = 0, .ne = 64 },
      SL_ESHAPE, "tensor 'blk.0.attn_k_norm.weight': shape [64], expected [128]", NULL },
};

Test(model_moe, hostile_variants_refused, .timeout = 120)
{
    mt_expect_refused_all(hostile, sizeof hostile / sizeof hostile[0]);
}
