/* gemma4's description (arch_gemma4.c): the per-layer kinds from the
 * sliding pattern, head dims, widths and shared-KV layers of the synth3
 * file, the cache rows a shared layer does not get, and every key and
 * tensor refused with a message naming it. */
#include "model_testutil.h"

#include <math.h>

#include "../engine/kv.h"
#include "../engine/reserve.h"

#define GEMMA4 MODELS "/synth3-gemma4-q4_k_m.gguf"

Test(model_gemma4, layers)
{
    sl_model_desc d;
    mt_load_arch(GEMMA4, "gemma4", &d);
    cr_assert_eq(d.n_kinds, 4);   /* sliding / full x own KV / shared KV (with their widths) */
    cr_assert(d.tied_output && d.rope_neox && d.rope_freqs_full && d.has_rope_freqs);
    /* full / sliding: head dims 128 / 64, rope dims 128 / 64, bases 1e6 / 1e4 */
    cr_assert(d.head_dim == 128 && d.n_rot == 128 && d.n_rot_swa == 64 && d.n_swa == 16);
    cr_assert(d.rope_base == 1e6f && d.rope_base_swa == 1e4f);
    cr_assert(d.n_layer_kv == 2 && d.n_embd_ple == 64 && d.embd_scale == 16.0f && d.logit_softcap == 30.0f);
    static const int hd[4] = { 64, 128, 64, 128 }, ff[4] = { 256, 256, 512, 512 }, kvl[4] = { 0, 1, 0, 1 };
    for (int32_t l = 0; l < 4; l++) {
        const sl_layer_desc *ld = sl_model_layer(&d, l);
        cr_assert_eq(ld->attn.window, l % 2 ? 0 : 16, "layer %d", l);
        cr_assert_eq(ld->attn.head_dim, hd[l], "layer %d", l);
        cr_assert_eq(ld->ffn.n_ff, ff[l], "layer %d", l);
        cr_assert_eq(ld->attn.kv_shared, l >= 2, "layer %d", l);
        cr_assert_eq(sl_model_kv_layer(&d, l), kvl[l], "layer %d", l);
        cr_assert(ld->attn.qk_norm && ld->attn.v_norm && ld->attn.post_norm && ld->ffn.post_norm);
        cr_assert(ld->ple && ld->out_scale && ld->ffn.act == SL_ACT_GELU);
        cr_assert_float_eq(ld->attn.q_scale, 1.0f, 0);   /* attention scale 1 */
    }
    /* the shared layers get no cache rows; the sliding one a ring */
    sl_model_params p;
    sl_model_params_init(&p);
    int32_t cap[4];
    sl_reserve_kv_caps(&d, &p, 512, 64, cap);
    cr_assert_eq(cap[1], 512);
    cr_assert(cap[0] > 0 && cap[0] < 512);
    cr_assert_eq(cap[2], 0);
    cr_assert_eq(cap[3], 0);
}

/* A model with shared-KV layers sizes its cache without them. */
Test(model_gemma4, kv_bytes_without_shared_layers)
{
    sl_model_desc d;
    mt_load_arch(GEMMA4, "gemma4", &d);
    sl_model_params p;
    sl_model_params_init(&p);
    p.n_ctx = 512;
    p.n_threads = 1;
    sl_reserve r;
    cr_assert_eq(sl_reserve_compute(&r, &d, &p), 0, "%s", sl_last_error());
    int32_t cap[4];
    sl_reserve_kv_caps(&d, &p, r.n_ctx, r.n_batch, cap);
    cr_assert_eq(r.kv_bytes, sl_kv_bytes_layers(4, cap, d.kv_dim, p.type_k, p.type_v));
    cr_assert_eq(r.kv_pos_bytes, 2 * sl_kv_pos_bytes(d.kv_dim, p.type_k, p.type_v));   /* 2 own-KV layers */
}

Test(model_gemma4, hostile_variants)
{
    /* kinds interleaved: keys replaced, tensors dropped, tensors reshaped */
    static const mt_case cases[] = {
        { "shared4", { .src = GEMMA4, .u32_key = "gemma4.attention.shared_kv_layers", .u32_val = 4 }, SL_ERANGE,
          "model metadata: key 'gemma4.attention.shared_kv_layers' = 4 invalid for 4 layers", "shared_kv_layers" },
        { "noplenorm", { .src = GEMMA4, .drop = "per_layer_proj_norm.weight" }, SL_ENOENT,
          "tensor 'per_layer_proj_norm.weight' missing from the model", "per_layer_proj_norm.weight" },
        { "k1", { .src = GEMMA4, .shape_name = "blk.1.attn_k.weight", .dim = 1, .ne = 64 }, SL_ESHAPE,
          "tensor 'blk.1.attn_k.weight': shape [256, 64], expected [256, 128]", "blk.1.attn_k.weight" },
        { "noklswa", { .src = GEMMA4, .drop_key = "gemma4.attention.key_length_swa" }, SL_ENOENT,
          "model metadata: key 'gemma4.attention.key_length_swa' missing", "key_length_swa" },
        { "shared3", { .src = GEMMA4, .u32_key = "gemma4.attention.shared_kv_layers", .u32_val = 3 }, SL_ERANGE,
          "model metadata: key 'gemma4.attention.shared_kv_layers' = 3 invalid for 4 layers", "shared_kv_layers" },
        { "noplproj", { .src = GEMMA4, .drop = "per_layer_model_proj.weight" }, SL_ENOENT,
          "tensor 'per_layer_model_proj.weight' missing from the model", "per_layer_model_proj.weight" },
        { "q0", { .src = GEMMA4, .shape_name = "blk.0.attn_q.weight", .dim = 1, .ne = 512 }, SL_ESHAPE,
          "tensor 'blk.0.attn_q.weight': shape [256, 512], expected [256, 256]", "blk.0.attn_q.weight" },
        { "nopat", { .src = GEMMA4, .drop_key = "gemma4.attention.sliding_window_pattern" }, SL_ENOENT,
          "model metadata: key 'gemma4.attention.sliding_window_pattern' missing", "sliding_window_pattern" },
        { "allswa", { .src = GEMMA4, .u32_key = "gemma4.attention.sliding_window_pattern", .u32_val = 1 },
          SL_EUNSUPPORTED, "gemma4: shared KV layers need layer 0 sliding and layer 1 full", "shared KV layers" },
        { "klswa", { .src = GEMMA4, .u32_key = "gemma4.attention.key_length_swa", .u32_val = 256 }, SL_EUNSUPPORTED,
          "model metadata: key 'gemma4.attention.key_length_swa' = 256 not supported (even, at most key_length 128)",
          "key_length_swa" },
        { "norope", { .src = GEMMA4, .drop = "rope_freqs.weight" }, SL_ENOENT,
          "gemma4: the full layers' rope_freqs.weight [64] is required", "rope_freqs.weight" },
        { "up2", { .src = GEMMA4, .shape_name = "blk.2.ffn_up.weight", .dim = 1, .ne = 256 }, SL_ESHAPE,
          "tensor 'blk.2.ffn_up.weight': shape [256, 256], expected [256, 512]", "blk.2.ffn_up.weight" },
        { "vlswa", { .src = GEMMA4, .u32_key = "gemma4.attention.value_length_swa", .u32_val = 32 }, SL_EUNSUPPORTED,
          "model metadata: 'gemma4.attention.value_length_swa' 32 differs from key_length_swa 64", "value_length_swa" },
        { "nok0", { .src = GEMMA4, .drop = "blk.0.attn_k_norm.weight" }, SL_ENOENT,
          "tensor 'blk.0.attn_k_norm.weight' missing from the model", "blk.0.attn_k_norm.weight" },
        { "scale2", { .src = GEMMA4, .shape_name = "blk.2.layer_output_scale.weight", .dim = 0, .ne = 2 }, SL_ESHAPE,
          "tensor 'blk.2.layer_output_scale.weight': shape [2], expected [1]", "blk.2.layer_output_scale.weight" },
        { "rotswa", { .src = GEMMA4, .u32_key = "gemma4.rope.dimension_count_swa", .u32_val = 65 }, SL_ERANGE,
          "model metadata: key 'gemma4.rope.dimension_count_swa' = 65 invalid", "dimension_count_swa" },
        { "noqn3", { .src = GEMMA4, .drop = "blk.3.attn_q_norm.weight" }, SL_ENOENT,
          "tensor 'blk.3.attn_q_norm.weight' missing from the model", "blk.3.attn_q_norm.weight" },
        { "win0", { .src = GEMMA4, .u32_key = "gemma4.attention.sliding_window", .u32_val = 0 }, SL_ERANGE,
          "model metadata: key 'gemma4.attention.sliding_window' = 0 invalid", "sliding_window" },
        { "nogate3", { .src = GEMMA4, .drop = "blk.3.inp_gate.weight" }, SL_ENOENT,
          "tensor 'blk.3.inp_gate.weight' missing from the model", "blk.3.inp_gate.weight" },
        { "moe", { .src = GEMMA4, .u32_key = "gemma4.expert_count", .u32_val = 8 }, SL_ENOENT,
          "model metadata: key 'gemma4.expert_used_count' missing", "expert_used_count" },
        { "nopn1", { .src = GEMMA4, .drop = "blk.1.post_norm.weight" }, SL_ENOENT,
          "tensor 'blk.1.post_norm.weight' missing from the model", "blk.1.post_norm.weight" },
        { "ple32", { .src = GEMMA4, .u32_key = "gemma4.embedding_length_per_layer_input", .u32_val = 32 }, SL_ESHAPE,
          "tensor 'per_layer_token_embd.weight': shape [256, 2048], expected [128, 2048]", "per_layer_token_embd" },
    };
    mt_expect_refused_all(cases, sizeof cases / sizeof cases[0]);
}

/* The per-layer output scale is optional (llama.cpp): without it a layer has none. */
Test(model_gemma4, output_scale_optional)
{
    mt_mutation mu = { .src = GEMMA4, .drop = "blk.2.layer_output_scale.weight" };
    sl_model_desc d;
    cr_assert_eq(mt_mutated_desc(&mu, &d, NULL, NULL, 0), 0, "%s", sl_last_error());
    for (int32_t l = 0; l < 4; l++) cr_assert_eq(sl_model_layer(&d, l)->out_scale, l != 2, "layer %d", l);
}
