/* Model description of the DeepSeek-V3-style families (engine/arch/:
 * arch_glm4moe.c, arch_deepseek2.c, arch_moe.c's lead keys): the synth3 files
 * read as the golden README describes them (leading dense layer, sigmoid
 * routing with the selection bias, scale, groups, ungated shared expert,
 * NextN block, MLA shapes, YaRN and the attention scale), the NextN block
 * never acquirable from the streamer, the MLA cache holding one [c, k_rope]
 * row per position, and a hostile variant of each new key and tensor refused
 * with a message naming it. */
#include "model_testutil.h"
#include "session_testutil.h"

#include <math.h>

#include "../engine/kv.h"
#include "../io/sluice_stream.h"

#define GLM MODELS "/synth3-glm4moe-q4_k_m.gguf"
#define DS2 MODELS "/synth3-deepseek2-q4_k_m.gguf"

/* Block 0 dense SwiGLU (768), blocks 1.. MoE: sigmoid, bias, norm, x2.5, ungated shared 256. */
static void check_lead_moe(const sl_model_desc *d, bool post_attn_norm)
{
    cr_assert(d->n_expert == 8 && d->n_expert_used == 2 && d->n_ff_exp == 256 && d->n_ff_shexp == 256);
    const sl_ffn_block *f0 = mt_ffn(d, 0);
    cr_assert(f0->kind == SL_FFN_GATED && f0->act == SL_ACT_SILU && f0->norm_post_attn == post_attn_norm);
    for (int32_t l = 1; l < d->n_layer + d->n_layer_nextn; l++) {
        const sl_ffn_block *f = mt_ffn(d, l);
        cr_assert(f->kind == SL_FFN_MOE && f->gating == SL_GATING_SIGMOID && f->sel_bias && f->weights_norm &&
                  f->shared_expert && f->shared_ungated && f->norm_post_attn == post_attn_norm, "layer %d", l);
        cr_assert_float_eq(f->weights_scale, 2.5f, 0);
    }
}

Test(model_synth3, glm4moe)
{
    sl_model_desc d;
    mt_load_arch(GLM, "glm4moe", &d);
    cr_assert(d.n_layer == 3 && d.n_layer_nextn == 1, "%d + %d", d.n_layer, d.n_layer_nextn);
    cr_assert(d.n_head == 4 && d.n_head_kv == 2 && d.head_dim == 128 && d.n_rot == 64 && d.rope_neox);
    cr_assert(d.n_expert_group == 0, "one group is no group limit");
    const sl_attn_block *a = mt_attn(&d, 2);
    cr_assert(a->kind == SL_ATTN_SOFTMAX && a->qkv_bias && a->qk_norm);
    check_lead_moe(&d, true);
}

Test(model_synth3, deepseek2)
{
    sl_model_desc d;
    mt_load_arch(DS2, "deepseek2", &d);
    cr_assert(d.n_layer == 3 && d.n_layer_nextn == 0);
    cr_assert(d.n_head == 4 && d.n_head_kv == 1 && d.head_dim == 320 && d.kv_dim == 320 && d.q_dim == 1280);
    cr_assert(d.q_lora_rank == 256 && d.kv_lora_rank == 256 && d.mla_k_dim == 192 && d.mla_v_dim == 128);
    cr_assert(d.n_rot == 64 && !d.rope_neox && d.rope_scaling == SL_ROPE_SCALE_YARN && d.yarn_orig_ctx == 64);
    cr_assert_float_eq(d.rope_attn_factor, 1.0f, 0, "the rope magnitude cancels to 1");
    cr_assert_float_eq(d.mla_kq_scale, 0.10530f, 1e-5, "mscale^2 / sqrt(192): %g", (double)d.mla_kq_scale);
    cr_assert(d.n_expert_group == 4 && d.n_expert_group_used == 2);
    cr_assert_eq(mt_attn(&d, 0)->kind, SL_ATTN_MLA);
    check_lead_moe(&d, false);
}

/* YaRN for deepseek2 (factor 8 over 64, base 1e4, n_rot 64): pairs up to
 * lo = 0 keep their frequency, pairs from hi = 9 on are divided by 8. */
Test(model_synth3, yarn_ramp)
{
    sl_model_desc d;
    mt_load_arch(DS2, "deepseek2", &d);
    float f[32];
    sl_model_rope_inv_freq(&d, d.rope_base, NULL, f);
    cr_assert_float_eq(f[0], 1.0f, 0);
    for (int i = 9; i < 32; i++) {
        float ext = powf(10000.0f, -2.0f * (float)i / 64.0f);
        cr_assert_float_eq(f[i], ext / 8, ext * 1e-5f, "pair %d", i);
    }
    float ext4 = powf(10000.0f, -8.0f / 64.0f), r = 1.0f - 4.0f / 9.0f;
    cr_assert_float_eq(f[4], ext4 / 8 * (1 - r) + ext4 * r, ext4 * 1e-5f, "pair 4 on the ramp");
}

/* The NextN block is never streamed: outside resident mode (which reads
 * the whole file once) the streamer refuses to acquire its unit. */
Test(model_synth3, nextn_never_streamed)
{
    const int modes[] = { SL_MODE_STREAM, SL_MODE_MMAP, SL_MODE_AUTO };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        sl_model_params mp = st_params(64, 0, 1);
        mp.mode = modes[i];
        sl_model *m = st_open(GLM, &mp);
        sl_stream *st = sl_model_stream(m);
        sl_stream_view v;
        cr_assert_eq(sl_stream_acquire(st, 3, &v), SL_EINVAL, "mode %d: the NextN unit", modes[i]);
        cr_assert_eq(sl_stream_acquire(st, 2, &v), 0, "mode %d: %s", modes[i], sl_stream_errmsg(st));
        cr_assert_eq(sl_stream_release(st, 2), 0);
        sl_model_close(m);
    }
}

/* MLA's cache: one [c, k_rope] row (kv_lora_rank + rope dims, F16) per
 * position and layer, no V rows; quantized K rows as well. */
Test(model_synth3, mla_cache_bytes)
{
    sl_model *m = st_open_ctx(DS2, 64, 0);
    sl_model_info mi;
    cr_assert_eq(sl_model_get_info(m, &mi), 0);
    cr_assert_eq(mi.kv_pos_bytes, 3 * 320 * 2, "%llu", (unsigned long long)mi.kv_pos_bytes);
    cr_assert_eq(mi.kv_bytes, 64 * 3 * 320 * 2);
    sl_model_close(m);
    cr_assert_eq(sl_kv_pos_bytes(320, SL_GGML_Q8_0, SL_KV_NONE), 10 * 34);
    cr_assert_eq(sl_kv_pos_bytes(320, SL_GGML_F16, SL_KV_NONE), 640);
    cr_assert_eq(sl_kv_type_check(SL_KV_NONE, 320, "K"), SL_EINVAL, "only V may be absent");
}

/* Logits of 12 prompt positions of DS2 with a K cache of type tk (the V type
 * is ignored: the values are the K rows), and its bytes per position. */
static float *mla_logits(int tk, uint64_t *pos_bytes)
{
    sl_model_params mp = st_params(64, 0, 1);
    mp.type_k = tk;
    mp.type_v = SL_GGML_Q4_0;
    sl_model *m = st_open(DS2, &mp);
    sl_model_info mi;
    cr_assert_eq(sl_model_get_info(m, &mi), 0);
    *pos_bytes = mi.kv_pos_bytes;
    sl_session *s = st_session(m, true);
    int32_t ids[12];
    st_some_ids(ids, 12, 2048, 7);
    float *lg = malloc(sizeof(float) * 12 * 2048);
    cr_assert_eq(sl_session_eval(s, ids, 12, lg), 0, "%s", sl_session_errmsg(s));
    st_close(s, m);
    return lg;
}

/* A Q8_0 latent cache (10 blocks of 32 per row, no rotation) holds 340
 * bytes per row and stays close to the F16 one: RMS below 0.1 sd (measured
 * 0.03-0.05, as glm4moe's rotated Q8_0 K; a wrong row layout gives ~1; a
 * near-tie router swap can move single positions far, so no max bound). */
Test(model_synth3, mla_cache_q8_0)
{
    uint64_t b16, b8;
    float *a = mla_logits(SL_GGML_F16, &b16), *b = mla_logits(SL_GGML_Q8_0, &b8);
    cr_assert(b16 == 3 * 640 && b8 == 3 * 340, "%llu %llu", (unsigned long long)b16, (unsigned long long)b8);
    double sq = 0;
    bool differ = false;
    for (int p = 0; p < 12; p++) {
        const float *x = a + p * 2048, *y = b + p * 2048;
        double m = 0, v = 0;
        for (int i = 0; i < 2048; i++) m += x[i];
        m /= 2048;
        for (int i = 0; i < 2048; i++) v += (x[i] - m) * (x[i] - m);
        const double sd = sqrt(v / 2048);
        for (int i = 0; i < 2048; i++) {
            sq += (x[i] - y[i]) * (x[i] - y[i]) / (sd * sd);
            differ |= x[i] != y[i];
        }
    }
    cr_assert(differ, "the Q8_0 cache is used");
    const double rms = sqrt(sq / (12 * 2048));
    cr_log_info("Q8_0 vs F16 latent cache: RMS %.4f sd", rms);
    cr_assert_lt(rms, 0.1, "RMS %g sd", rms);
    free(a);
    free(b);
}

/* ---- hostile variants ------------------------------------------------------ */

static const mt_case hostile[] = {
    { "gating_func_unknown", { .src = GLM, .u32_key = "glm4moe.expert_gating_func", .u32_val = 3 },
      SL_EUNSUPPORTED, "model metadata: key 'glm4moe.expert_gating_func' is 3 (1 softmax, 2 sigmoid)", NULL },
    { "groups_not_dividing", { .src = DS2, .u32_key = "deepseek2.expert_group_count", .u32_val = 3 },
      SL_ERANGE, "model metadata: 3 expert groups, 2 used, do not fit 8 experts (top 2)", NULL },
    { "groups_used_above_count", { .src = DS2, .u32_key = "deepseek2.expert_group_used_count", .u32_val = 5 },
      SL_ERANGE, "model metadata: 4 expert groups, 5 used, do not fit 8 experts (top 2)", NULL },
    { "lead_and_nextn_exceed_blocks", { .src = GLM, .u32_key = "glm4moe.leading_dense_block_count", .u32_val = 4 },
      SL_ERANGE, "model metadata: 4 leading dense and 1 NextN blocks of 4", NULL },
    { "nextn_all_blocks", { .src = GLM, .u32_key = "glm4moe.nextn_predict_layers", .u32_val = 4 },
      SL_ERANGE, "model metadata: 1 leading dense and 4 NextN blocks of 4", NULL },
    { "weights_scale_negative", { .src = GLM, .f32_key = "glm4moe.expert_weights_scale", .f32_val = -1.0f },
      SL_ERANGE, "model metadata: key 'glm4moe.expert_weights_scale' is -1", NULL },
    { "nextn_eh_proj_missing", { .src = GLM, .drop = "blk.3.nextn.eh_proj.weight", NULL },
      SL_ENOENT, "tensor 'blk.3.nextn.eh_proj.weight' missing from the model", NULL },
    { "nextn_block_expert_missing", { .src = GLM, .drop = "blk.3.ffn_down_exps.weight", NULL },
      SL_ENOENT, "tensor 'blk.3.ffn_down_exps.weight' missing from the model", NULL },
    { "selection_bias_wrong_shape", { .src = GLM, .shape_name = "blk.2.exp_probs_b.bias", .dim = 0, .ne = 7 },
      SL_ESHAPE, "tensor 'blk.2.exp_probs_b.bias': shape [7], expected [8]", NULL },
    { "dense_ffn_missing", { .src = GLM, .drop = "blk.0.ffn_up.weight", NULL },
      SL_ENOENT, "tensor 'blk.0.ffn_up.weight' missing from the model", NULL },
    { "mla_keys_missing", { .src = DS2, .drop_key = "deepseek2.attention.key_length_mla", NULL },
      SL_EUNSUPPORTED, "model metadata: 'deepseek2.attention.key_length_mla' / value_length_mla missing (a DeepSeek file in "
      "the older attn_kv_b layout; reconvert it)", NULL },
    { "mla_row_mismatch", { .src = DS2, .u32_key = "deepseek2.attention.kv_lora_rank", .u32_val = 128 },
      SL_ERANGE, "model metadata: MLA shape invalid (kv heads 1, kv_lora_rank 128, rope 64, key_length 320, value_length "
      "256, key/value_length_mla 192/128, q_lora_rank 256)", NULL },
    { "k_b_missing", { .src = DS2, .drop = "blk.1.attn_k_b.weight", NULL },
      SL_ENOENT, "tensor 'blk.1.attn_k_b.weight' missing from the model", NULL },
    { "v_b_wrong_heads", { .src = DS2, .shape_name = "blk.2.attn_v_b.weight", .dim = 2, .ne = 3 },
      SL_ESHAPE, "tensor 'blk.2.attn_v_b.weight': shape [256, 128, 3] (3 dims), expected [256, 128, 4]", NULL },
    { "kv_a_norm_missing", { .src = DS2, .drop = "blk.0.attn_kv_a_norm.weight", NULL },
      SL_ENOENT, "tensor 'blk.0.attn_kv_a_norm.weight' missing from the model", NULL },
    { "q_a_wrong_rank", { .src = DS2, .u32_key = "deepseek2.attention.q_lora_rank", .u32_val = 128 },
      SL_ESHAPE, "tensor 'blk.0.attn_q_a.weight': shape [256, 256], expected [256, 128]", NULL },
};

Test(model_synth3, hostile_variants_refused, .timeout = 120)
{
    mt_expect_refused_all(hostile, sizeof hostile / sizeof hostile[0]);
}
