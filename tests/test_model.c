/* Model description: hyper-parameters of the shared models, defaults, rope
 * scaling, and clear errors for broken files (written with the GGUF writer
 * into a temp dir: unknown architecture, wrong shape, missing tensor, bad type). */
#include "sl_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../engine/model.h"
#include "../engine/sluice.h"
#include "../gguf/gguf.h"
#include "../gguf/base/sl_internal.h"

#define MODELS SL_SHARED_DIR "/models"

static int load_desc(const char *path, sl_model_desc *d)
{
    sl_gguf *g;
    int rc = sl_gguf_open_path(&g, path);
    cr_assert_eq(rc, 0, "open %s: %s", path, sl_gguf_errmsg(NULL));
    rc = sl_model_desc_load(d, g);
    sl_gguf_close(g);
    return rc;
}

Test(model, stories260k)
{
    sl_model_desc d;
    cr_assert_eq(load_desc(MODELS "/stories260K.gguf", &d), 0, "%s", sl_last_error());
    cr_assert_eq(d.arch, SL_ARCH_LLAMA);
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
    cr_assert(!d.rope_neox && !d.has_qkv_bias && !d.tied_output);
    cr_assert_eq(d.rope_scaling, SL_ROPE_SCALE_NONE);
    cr_assert_eq(d.head_type, SL_GGML_F32);
}

Test(model, tinystories_tied)
{
    sl_model_desc d;
    cr_assert_eq(load_desc(MODELS "/TinyStories-656K-Q8_0.gguf", &d), 0, "%s", sl_last_error());
    cr_assert(d.tied_output);
    cr_assert_eq(d.head_type, SL_GGML_Q8_0);
    cr_assert_eq(d.n_vocab, 2048);
    cr_assert_float_eq(d.rms_eps, 1e-6f, 1e-10);
    cr_assert_eq(d.n_rot, 16);
}

Test(model, qwen2)
{
    sl_model_desc d;
    cr_assert_eq(load_desc(MODELS "/synth-tiny-qwen2-q4_k.gguf", &d), 0, "%s", sl_last_error());
    cr_assert_eq(d.arch, SL_ARCH_QWEN2);
    cr_assert(d.rope_neox && d.has_qkv_bias && !d.tied_output);
    cr_assert_float_eq(d.rope_base, 1e6f, 0);
    cr_assert_eq(d.q_dim, 256);
    cr_assert_eq(d.kv_dim, 128);
    cr_assert_eq(d.head_type, SL_GGML_Q6_K);
    float inv[32];
    sl_model_rope_inv_freq(&d, NULL, inv);
    cr_assert_float_eq(inv[0], 1.0f, 0);
    for (int i = 1; i < 32; i++)
        cr_assert_float_eq(inv[i], pow(1e6, -2.0 * i / 64), 1e-6 * pow(1e6, -2.0 * i / 64) + 1e-12);
}

/* ---- broken files ---------------------------------------------------------- */

typedef struct mutation {
    const char *arch;             /* replace general.architecture */
    const char *shape_name;       /* tensor whose ne[1] becomes new_ne1 */
    uint64_t new_ne1;
    const char *drop;             /* tensor left out */
    const char *type_name;        /* tensor re-declared as F16 */
    const char *extra_str_key, *extra_str_val;
    const char *extra_f32_key; float extra_f32_val;
    const char *extra_f32_key2; float extra_f32_val2;
    const char *src;              /* model to mutate (NULL: stories260K) */
    const char *ne0_name;         /* tensor whose ne[0] becomes new_ne0 */
    uint64_t new_ne0;
    const char *extra_u32_key; uint32_t extra_u32_val;
} mutation;

/* A key the mutation sets itself is not copied from the source. */
static bool overridden(const mutation *mu, const char *k)
{
    const char *keys[] = { mu->extra_str_key, mu->extra_f32_key, mu->extra_f32_key2, mu->extra_u32_key };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (keys[i] && !strcmp(keys[i], k)) return true;
    return false;
}

static char tmpdir[256];

static void mk_tmp(void)
{
    if (tmpdir[0]) return;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sl_test_model_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void write_mutated(const char *src, const char *dst, const mutation *mu)
{
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, src), 0);
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, dst, 3), 0, "%s", sl_last_error());
    for (int64_t i = 0; i < sl_gguf_n_kv(g); i++) {
        const char *k = sl_gguf_kv_key(g, i);
        if (mu->arch && !strcmp(k, "general.architecture"))
            cr_assert_eq(sl_gguf_writer_set_str(w, k, mu->arch), 0);
        else if (overridden(mu, k))
            continue;
        else
            cr_assert_eq(sl_gguf_writer_copy_kv(w, g, i), 0, "%s", sl_gguf_writer_errmsg(w));
    }
    if (mu->extra_str_key) cr_assert_eq(sl_gguf_writer_set_str(w, mu->extra_str_key, mu->extra_str_val), 0);
    if (mu->extra_f32_key) cr_assert_eq(sl_gguf_writer_set_f32(w, mu->extra_f32_key, mu->extra_f32_val), 0);
    if (mu->extra_f32_key2) cr_assert_eq(sl_gguf_writer_set_f32(w, mu->extra_f32_key2, mu->extra_f32_val2), 0);
    if (mu->extra_u32_key) cr_assert_eq(sl_gguf_writer_set_u32(w, mu->extra_u32_key, mu->extra_u32_val), 0);
    int64_t nt = sl_gguf_n_tensors(g);
    uint64_t *sizes = calloc((size_t)nt, sizeof *sizes);
    for (int64_t i = 0; i < nt; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (mu->drop && !strcmp(t->name, mu->drop)) continue;
        uint64_t ne[4];
        memcpy(ne, t->ne, sizeof ne);
        uint32_t type = t->type;
        if (mu->shape_name && !strcmp(t->name, mu->shape_name)) ne[1] = mu->new_ne1;
        if (mu->ne0_name && !strcmp(t->name, mu->ne0_name)) ne[0] = mu->new_ne0;
        if (mu->type_name && !strcmp(t->name, mu->type_name)) type = SL_GGML_F16;
        cr_assert_eq(sl_gguf_writer_add_tensor(w, t->name, type, t->n_dims, ne), 0, "%s",
                     sl_gguf_writer_errmsg(w));
        cr_assert_eq(sl_gguf_tensor_size(type, t->n_dims, ne, &sizes[i]), 0);
    }
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0, "%s", sl_gguf_writer_errmsg(w));
    for (int64_t i = 0; i < nt; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (mu->drop && !strcmp(t->name, mu->drop)) continue;
        void *buf = calloc(1, sizes[i] > t->nbytes ? sizes[i] : t->nbytes);
        cr_assert_eq(sl_gguf_read(g, buf, t->nbytes, t->file_offset), 0);
        cr_assert_eq(sl_gguf_writer_write(w, buf, sizes[i]), 0, "%s", sl_gguf_writer_errmsg(w));
        free(buf);
    }
    cr_assert_eq(sl_gguf_writer_close(w), 0);
    free(sizes);
    sl_gguf_close(g);
}

static int broken(const char *name, const mutation *mu, sl_model_desc *d, int *open_rc, char *open_msg,
                  size_t msg_len)
{
    mk_tmp();
    char path[512];
    snprintf(path, sizeof path, "%s/%s.gguf", tmpdir, name);
    write_mutated(mu->src ? mu->src : MODELS "/stories260K.gguf", path, mu);
    int rc = load_desc(path, d);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", sl_last_error());
    if (open_rc) {
        /* the public API reports the same failure */
        sl_model_params mp;
        sl_model_params_init(&mp);
        mp.n_threads = 1;
        mp.n_ctx = 64;
        sl_model *m = NULL;
        *open_rc = sl_model_open(&m, path, &mp);
        snprintf(open_msg, msg_len, "%s", sl_last_error());
        if (!*open_rc) sl_model_close(m);
    }
    unlink(path);
    rmdir(tmpdir);
    tmpdir[0] = 0;
    sl_err_set(rc, "%s", msg);
    return rc;
}

/* The mutation fails the description with exactly desc_msg and the whole
 * open with a message containing open_msg, both with status want. */
static void expect_broken(const char *name, const mutation *mu, int want, const char *desc_msg,
                          const char *open_msg)
{
    sl_model_desc d;
    int orc;
    char omsg[512];
    int rc = broken(name, mu, &d, &orc, omsg, sizeof omsg);
    cr_assert_eq(rc, want, "%s: status %d, want %d (%s)", name, rc, want, sl_last_error());
    cr_assert_str_eq(sl_last_error(), desc_msg, "%s: message '%s'", name, sl_last_error());
    cr_assert_eq(orc, want, "%s: open status %d, want %d", name, orc, want);
    cr_assert_not_null(strstr(omsg, open_msg), "%s: %s", name, omsg);
}

Test(model, unknown_architecture)
{
    mutation mu = { .arch = "xyz" };
    expect_broken("arch", &mu, SL_EUNSUPPORTED,
                  "architecture 'xyz' not supported (llama, qwen2, qwen3, phi3, gemma3, qwen2moe, qwen3moe; "
                  "llama with experts: mixtral)",
                  "architecture 'xyz' not supported");
}

Test(model, wrong_tensor_shape)
{
    mutation mu = { .shape_name = "blk.2.attn_k.weight", .new_ne1 = 64 };
    expect_broken("shape", &mu, SL_ESHAPE,
                  "tensor 'blk.2.attn_k.weight': shape [64, 64], expected [64, 32]", "blk.2.attn_k.weight");
}

Test(model, wrong_vocab_rows)
{
    mutation mu = { .shape_name = "output.weight", .new_ne1 = 500 };
    sl_model_desc d;
    cr_assert_eq(broken("vocab", &mu, &d, NULL, NULL, 0), SL_ESHAPE);
    cr_assert_str_eq(sl_last_error(), "tensor 'output.weight': shape [64, 500], expected [64, 512]");
}

Test(model, missing_tensor)
{
    mutation mu = { .drop = "blk.1.ffn_up.weight" };
    sl_model_desc d;
    cr_assert_eq(broken("missing", &mu, &d, NULL, NULL, 0), SL_ENOENT);
    cr_assert_str_eq(sl_last_error(), "tensor 'blk.1.ffn_up.weight' missing from the model");
}

Test(model, norm_must_be_f32)
{
    mutation mu = { .type_name = "blk.0.ffn_norm.weight" };
    sl_model_desc d;
    cr_assert_eq(broken("normtype", &mu, &d, NULL, NULL, 0), SL_EUNSUPPORTED);
    cr_assert_str_eq(sl_last_error(), "tensor 'blk.0.ffn_norm.weight': type f16, expected f32");
}

Test(model, rope_scaling_linear)
{
    mutation mu = { .extra_str_key = "llama.rope.scaling.type", .extra_str_val = "linear",
                    .extra_f32_key = "llama.rope.scaling.factor", .extra_f32_val = 4.0f };
    sl_model_desc d;
    cr_assert_eq(broken("linear", &mu, &d, NULL, NULL, 0), 0, "%s", sl_last_error());
    cr_assert_eq(d.rope_scaling, SL_ROPE_SCALE_LINEAR);
    float inv[4];
    sl_model_rope_inv_freq(&d, NULL, inv);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(inv[i], 0.25 * pow(10000.0, -2.0 * i / 8), 1e-6);
}

Test(model, rope_scaling_llama3)
{
    mutation mu = { .extra_str_key = "llama.rope.scaling.type", .extra_str_val = "llama3",
                    .extra_f32_key = "llama.rope.scaling.factor", .extra_f32_val = 8.0f };
    sl_model_desc d;
    cr_assert_eq(broken("llama3", &mu, &d, NULL, NULL, 0), 0, "%s", sl_last_error());
    cr_assert_eq(d.rope_scaling, SL_ROPE_SCALE_LLAMA3);
    /* head dim 8, base 1e4: wavelengths 2pi*{1, 10, 100, 1000}; original ctx 8192,
     * low 1, high 4: bounds 2048 and 8192: the first three keep their
     * frequency, the last (6283) is in the smoothed band */
    float inv[4];
    sl_model_rope_inv_freq(&d, NULL, inv);
    for (int i = 0; i < 3; i++)
        cr_assert_float_eq(inv[i], pow(10000.0, -2.0 * i / 8), 1e-6);
    double sm = (8192 / (2 * M_PI * 1000) - 1) / 3;
    cr_assert_float_eq(inv[3], (1 - sm) * 1e-3 / 8 + sm * 1e-3, 1e-8);
    /* per-dimension divisors from a rope_freqs tensor take precedence */
    float ff[4] = { 1, 2, 4, 8 };
    sl_model_rope_inv_freq(&d, ff, inv);
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
    sl_model_rope_inv_freq(&d, NULL, inv);
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
    mutation mu = { .extra_str_key = "llama.rope.scaling.type", .extra_str_val = "yarn",
                    .extra_f32_key = "llama.rope.scaling.factor", .extra_f32_val = 4.0f };
    sl_model_desc d;
    cr_assert_eq(broken("yarn", &mu, &d, NULL, NULL, 0), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(sl_last_error(), "yarn"));
}

/* ---- dense families of 2026: qwen3, phi3 ---------------------------------- */
#define QWEN3 MODELS "/synth2-qwen3-q4_k_m.gguf"
#define PHI3 MODELS "/synth2-phi3-q4_k_m.gguf"
#define GEMMA3 MODELS "/synth2-gemma3-q4_k_m.gguf"

Test(model, qwen3)
{
    sl_model_desc d;
    cr_assert_eq(load_desc(QWEN3, &d), 0, "%s", sl_last_error());
    cr_assert_eq(d.arch, SL_ARCH_QWEN3);
    cr_assert_eq(d.head_dim, 128, "head dim from attention.key_length, not n_embd / n_head");
    cr_assert_eq(d.q_dim, 512);
    cr_assert_eq(d.kv_dim, 256);
    cr_assert(d.rope_neox && d.has_qk_norm && !d.has_qkv_bias && !d.fused_qkv && !d.fused_gate_up);
    cr_assert(d.q_scale == 0 && !d.has_rope_factors && d.swa_period == 0 && !d.ffn_gelu);
    cr_assert_float_eq(d.rope_attn_factor, 1.0f, 0);
    cr_assert_float_eq(d.rope_base, 1e6f, 0);
    cr_assert_null(sl_model_rope_factors_name(&d, 512));
}

Test(model, phi3)
{
    sl_model_desc d;
    cr_assert_eq(load_desc(PHI3, &d), 0, "%s", sl_last_error());
    cr_assert_eq(d.arch, SL_ARCH_PHI3);
    cr_assert(d.rope_neox && d.fused_qkv && d.fused_gate_up && d.has_rope_factors);
    cr_assert_float_eq(d.q_scale, 0.125f, 0);
    cr_assert(d.swa_period == 0 && !d.has_post_norms && !d.ffn_gelu && d.embd_scale == 0);
    cr_assert(!d.has_qk_norm && !d.has_qkv_bias);
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
    cr_assert_eq(load_desc(GEMMA3, &d), 0, "%s", sl_last_error());
    cr_assert_eq(d.arch, SL_ARCH_GEMMA3);
    cr_assert(d.rope_neox && d.has_qk_norm && d.has_post_norms && d.ffn_gelu && d.tied_output);
    cr_assert(!d.fused_qkv && !d.has_qkv_bias);
    cr_assert_eq(d.head_dim, 128);
    cr_assert_eq(d.n_head_kv, 1);
    cr_assert_eq(d.n_swa, 16);
    cr_assert_eq(d.swa_period, 6);          /* sliding_window_pattern absent */
    cr_assert_float_eq(d.rope_base, 1e6f, 0);
    cr_assert_float_eq(d.rope_base_swa, 1e4f, 0);
    cr_assert_float_eq(d.embd_scale, 16.0f, 0);
    cr_assert_float_eq(d.q_scale, 1.0f / sqrtf(128.0f), 0);
    cr_assert_float_eq(d.logit_softcap, 0.0f, 0);
    for (int l = 0; l < 6; l++)
        cr_assert_eq(sl_model_layer_swa(&d, l), l < 5, "layer %d", l);
}

/* Real Phi-3-128k: original context 4096, short factors up to a padded 4096. */
Test(model, phi3_factors_switch)
{
    mutation mu = { .src = PHI3, .extra_u32_key = "phi3.rope.scaling.original_context_length",
                    .extra_u32_val = 4096 };
    sl_model_desc d;
    cr_assert_eq(broken("phi3orig", &mu, &d, NULL, NULL, 0), 0, "%s", sl_last_error());
    cr_assert_str_eq(sl_model_rope_factors_name(&d, 4000), "rope_factors_short.weight");
    cr_assert_str_eq(sl_model_rope_factors_name(&d, 4096), "rope_factors_short.weight");
    cr_assert_str_eq(sl_model_rope_factors_name(&d, 4097), "rope_factors_long.weight");
}

/* The window is read and checked but not applied (as llama.cpp for phi3). */
Test(model, phi3_sliding_window_read)
{
    mutation mu = { .src = PHI3, .extra_u32_key = "phi3.attention.sliding_window", .extra_u32_val = 2047 };
    sl_model_desc d;
    cr_assert_eq(broken("phi3swa", &mu, &d, NULL, NULL, 0), 0, "%s", sl_last_error());
    cr_assert_eq(d.n_swa, 2047);
}

/* Hostile variants of every qwen3 / phi3 / gemma3 key and tensor: the description
 * and the whole open both refuse them with a message naming the culprit. */
Test(model, dense_hostile_variants)
{
    static const struct {
        const char *name;
        mutation mu;
        int want;
        const char *desc_msg, *open_msg;
    } cases[] = {
        { "q3noq", { .src = QWEN3, .drop = "blk.1.attn_q_norm.weight" }, SL_ENOENT,
          "tensor 'blk.1.attn_q_norm.weight' missing from the model", "blk.1.attn_q_norm.weight" },
        { "q3knorm", { .src = QWEN3, .ne0_name = "blk.2.attn_k_norm.weight", .new_ne0 = 64 }, SL_ESHAPE,
          "tensor 'blk.2.attn_k_norm.weight': shape [64], expected [128]", "blk.2.attn_k_norm.weight" },
        { "q3klen", { .src = QWEN3, .extra_u32_key = "qwen3.attention.key_length", .extra_u32_val = 64 },
          SL_EUNSUPPORTED, "model metadata: head dimension 64 (value 128) not supported", "head dimension 64" },
        { "p3qkv", { .src = PHI3, .shape_name = "blk.0.attn_qkv.weight", .new_ne1 = 384 }, SL_ESHAPE,
          "tensor 'blk.0.attn_qkv.weight': shape [256, 384], expected [256, 512]", "blk.0.attn_qkv.weight" },
        { "p3noqkv", { .src = PHI3, .drop = "blk.2.attn_qkv.weight" }, SL_ENOENT,
          "tensor 'blk.2.attn_qkv.weight' missing from the model", "blk.2.attn_qkv.weight" },
        { "p3up", { .src = PHI3, .shape_name = "blk.3.ffn_up.weight", .new_ne1 = 768 }, SL_ESHAPE,
          "tensor 'blk.3.ffn_up.weight': shape [256, 768], expected [256, 1536]", "blk.3.ffn_up.weight" },
        { "p3short", { .src = PHI3, .drop = "rope_factors_short.weight" }, SL_ENOENT,
          "tensor 'rope_factors_short.weight' missing from the model (LongRoPE needs both factor tensors)",
          "rope_factors_short.weight" },
        { "p3long", { .src = PHI3, .ne0_name = "rope_factors_long.weight", .new_ne0 = 64 }, SL_ESHAPE,
          "tensor 'rope_factors_long.weight': shape [64], expected [32]", "rope_factors_long.weight" },
        { "p3af", { .src = PHI3, .extra_f32_key = "phi3.rope.scaling.attn_factor", .extra_f32_val = 0.0f },
          SL_ERANGE, "model metadata: key 'phi3.rope.scaling.attn_factor' = 0 invalid", "attn_factor" },
        { "p3oc", { .src = PHI3, .extra_u32_key = "phi3.rope.scaling.original_context_length",
                    .extra_u32_val = 0 },
          SL_ERANGE, "model metadata: key 'phi3.rope.scaling.original_context_length' = 0 invalid",
          "original_context_length" },
        { "g3win0", { .src = GEMMA3, .extra_u32_key = "gemma3.attention.sliding_window", .extra_u32_val = 0 },
          SL_ERANGE, "model metadata: key 'gemma3.attention.sliding_window' = 0 invalid", "sliding_window" },
        { "g3pat0", { .src = GEMMA3, .extra_u32_key = "gemma3.attention.sliding_window_pattern",
                      .extra_u32_val = 0 },
          SL_ERANGE, "model metadata: key 'gemma3.attention.sliding_window_pattern' = 0 invalid",
          "sliding_window_pattern" },
        { "g3nopost", { .src = GEMMA3, .drop = "blk.4.post_ffw_norm.weight" }, SL_ENOENT,
          "tensor 'blk.4.post_ffw_norm.weight' missing from the model", "blk.4.post_ffw_norm.weight" },
        { "g3noqn", { .src = GEMMA3, .drop = "blk.0.attn_q_norm.weight" }, SL_ENOENT,
          "tensor 'blk.0.attn_q_norm.weight' missing from the model", "blk.0.attn_q_norm.weight" },
        { "g3pan", { .src = GEMMA3, .ne0_name = "blk.5.post_attention_norm.weight", .new_ne0 = 128 }, SL_ESHAPE,
          "tensor 'blk.5.post_attention_norm.weight': shape [128], expected [256]",
          "blk.5.post_attention_norm.weight" },
        { "g3cap", { .src = GEMMA3, .extra_f32_key = "gemma3.final_logit_softcapping", .extra_f32_val = -1.0f },
          SL_ERANGE, "model metadata: key 'gemma3.final_logit_softcapping' = -1 invalid", "softcapping" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_broken(cases[i].name, &cases[i].mu, cases[i].want, cases[i].desc_msg, cases[i].open_msg);
}
