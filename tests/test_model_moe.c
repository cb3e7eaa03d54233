/* Model description of the MoE families (engine/model_moe.c): the synth2
 * Mixtral / qwen2moe / qwen3moe files read as the golden README describes
 * them, and a hostile variant of each MoE key and tensor (written with the
 * GGUF writer into a temp dir) refused with a message naming it, by the
 * description and by sl_model_open alike. */
#include "sl_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../engine/model.h"
#include "../engine/sluice.h"
#include "../gguf/gguf.h"
#include "../gguf/base/sl_internal.h"

#define MODELS SL_SHARED_DIR "/models"
#define MIXTRAL MODELS "/synth2-mixtral-q4_k_m.gguf"
#define QWEN2MOE MODELS "/synth2-qwen2moe-q4_k_m.gguf"
#define QWEN3MOE MODELS "/synth2-qwen3moe-q4_k_m.gguf"

static int load_desc(const char *path, sl_model_desc *d)
{
    sl_gguf *g;
    int rc = sl_gguf_open_path(&g, path);
    cr_assert_eq(rc, 0, "open %s: %s", path, sl_gguf_errmsg(NULL));
    rc = sl_model_desc_load(d, g);
    sl_gguf_close(g);
    return rc;
}

Test(model_moe, mixtral)
{
    sl_model_desc d;
    cr_assert_eq(load_desc(MIXTRAL, &d), 0, "%s", sl_last_error());
    cr_assert_eq(d.arch, SL_ARCH_LLAMA);
    cr_assert_eq(d.n_expert, 8);
    cr_assert_eq(d.n_expert_used, 2);
    cr_assert_eq(d.n_ff_exp, 512);       /* feed_forward_length: no expert-width key for llama */
    cr_assert_eq(d.n_ff_shexp, 0);
    cr_assert(d.expert_weights_norm && !d.rope_neox && !d.has_qkv_bias && !d.has_qk_norm);
}

Test(model_moe, qwen2moe)
{
    sl_model_desc d;
    cr_assert_eq(load_desc(QWEN2MOE, &d), 0, "%s", sl_last_error());
    cr_assert_eq(d.arch, SL_ARCH_QWEN2MOE);
    cr_assert_eq(d.n_expert, 8);
    cr_assert_eq(d.n_expert_used, 2);
    cr_assert_eq(d.n_ff_exp, 256);
    cr_assert_eq(d.n_ff_shexp, 512);
    cr_assert(!d.expert_weights_norm && d.rope_neox && d.has_qkv_bias && !d.has_qk_norm);
}

Test(model_moe, qwen3moe)
{
    sl_model_desc d;
    cr_assert_eq(load_desc(QWEN3MOE, &d), 0, "%s", sl_last_error());
    cr_assert_eq(d.arch, SL_ARCH_QWEN3MOE);
    cr_assert_eq(d.n_expert, 16);
    cr_assert_eq(d.n_expert_used, 4);
    cr_assert_eq(d.n_ff_exp, 256);
    cr_assert_eq(d.n_ff_shexp, 0);
    cr_assert_eq(d.head_dim, 128);
    cr_assert_eq(d.q_dim, 512);
    cr_assert(d.expert_weights_norm && d.rope_neox && !d.has_qkv_bias && d.has_qk_norm);
}

/* A dense llama keeps its dense FFN (no expert key read as experts). */
Test(model_moe, dense_llama_unchanged)
{
    sl_model_desc d;
    cr_assert_eq(load_desc(MODELS "/synth-tiny-q4_k.gguf", &d), 0, "%s", sl_last_error());
    cr_assert_eq(d.n_expert, 0);
    cr_assert_eq(d.n_ff_exp, 0);
}

/* ---- hostile variants ------------------------------------------------------ */

typedef struct mutation {
    const char *key;          /* u32 key replaced by val (or added) */
    uint32_t val;
    const char *drop_key;     /* key left out */
    const char *drop;         /* tensor left out */
    const char *shape_name;   /* tensor whose ne[dim] becomes ne */
    int dim;
    uint64_t ne;
} mutation;

static void write_mutated(const char *src, const char *dst, const mutation *mu)
{
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, src), 0);
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, dst, 3), 0, "%s", sl_last_error());
    for (int64_t i = 0; i < sl_gguf_n_kv(g); i++) {
        const char *k = sl_gguf_kv_key(g, i);
        if ((mu->key && !strcmp(k, mu->key)) || (mu->drop_key && !strcmp(k, mu->drop_key))) continue;
        cr_assert_eq(sl_gguf_writer_copy_kv(w, g, i), 0, "%s", sl_gguf_writer_errmsg(w));
    }
    if (mu->key) cr_assert_eq(sl_gguf_writer_set_u32(w, mu->key, mu->val), 0);
    int64_t nt = sl_gguf_n_tensors(g);
    uint64_t *sizes = calloc((size_t)nt, sizeof *sizes);
    for (int64_t i = 0; i < nt; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (mu->drop && !strcmp(t->name, mu->drop)) continue;
        uint64_t ne[4];
        memcpy(ne, t->ne, sizeof ne);
        if (mu->shape_name && !strcmp(t->name, mu->shape_name)) ne[mu->dim] = mu->ne;
        cr_assert_eq(sl_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, ne), 0, "%s",
                     sl_gguf_writer_errmsg(w));
        cr_assert_eq(sl_gguf_tensor_size(t->type, t->n_dims, ne, &sizes[i]), 0);
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

/* The mutated src fails the description with status want and exactly msg,
 * and sl_model_open with the same status and a message containing msg. */
static void expect_refused(const char *src, const mutation *mu, int want, const char *msg)
{
    char dir[] = "/tmp/sl_test_model_moe_XXXXXX", path[128];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    write_mutated(src, path, mu);
    sl_model_desc d;
    int rc = load_desc(path, &d);
    char desc_msg[512];
    snprintf(desc_msg, sizeof desc_msg, "%s", sl_last_error());
    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.n_threads = 1;
    mp.n_ctx = 64;
    sl_model *m = NULL;
    int orc = sl_model_open(&m, path, &mp);
    char open_msg[512];
    snprintf(open_msg, sizeof open_msg, "%s", sl_last_error());
    if (!orc) sl_model_close(m);
    unlink(path);
    rmdir(dir);
    cr_assert_eq(rc, want, "status %d, expected %d (%s)", rc, want, desc_msg);
    cr_assert_str_eq(desc_msg, msg);
    cr_assert_eq(orc, want);
    cr_assert_not_null(strstr(open_msg, msg), "%s", open_msg);
}

/* One hostile variant per MoE key and tensor: the file, what is changed,
 * the status and the exact message. */
static const struct {
    const char *what, *src;
    int want;
    mutation mu;
    const char *msg;
} hostile[] = {
    { "used_count_above_expert_count", QWEN3MOE, SL_ERANGE,
      { .key = "qwen3moe.expert_used_count", .val = 17 },
      "model metadata: key 'qwen3moe.expert_used_count' is 17 (1..expert_count 16)" },
    { "used_count_zero", MIXTRAL, SL_ERANGE,
      { .key = "llama.expert_used_count", .val = 0 },
      "model metadata: key 'llama.expert_used_count' is 0 (1..expert_count 8)" },
    { "expert_count_zero", QWEN2MOE, SL_ERANGE,
      { .key = "qwen2moe.expert_count", .val = 0 },
      "model metadata: key 'qwen2moe.expert_count' is 0 (1..512)" },
    { "expert_count_huge", QWEN3MOE, SL_ERANGE,
      { .key = "qwen3moe.expert_count", .val = 0x40000000u },
      "model metadata: key 'qwen3moe.expert_count' is 1073741824 (1..512)" },
    { "expert_count_missing", QWEN3MOE, SL_ENOENT,
      { .drop_key = "qwen3moe.expert_count" },
      "model metadata: key 'qwen3moe.expert_count' missing" },
    { "used_count_missing", MIXTRAL, SL_ENOENT,
      { .drop_key = "llama.expert_used_count" },
      "model metadata: key 'llama.expert_used_count' missing" },
    { "mixtral_without_expert_count", MIXTRAL, SL_ENOENT,
      { .drop_key = "llama.expert_count" },
      "tensor 'blk.0.ffn_gate.weight' missing from the model" },
    { "wrong_expert_count", QWEN2MOE, SL_ESHAPE,
      { .key = "qwen2moe.expert_count", .val = 9 },
      "tensor 'blk.0.ffn_gate_inp.weight': shape [256, 8], expected [256, 9]" },
    { "wrong_expert_width", QWEN3MOE, SL_ESHAPE,
      { .key = "qwen3moe.expert_feed_forward_length", .val = 128 },
      "tensor 'blk.0.ffn_gate_exps.weight': shape [256, 256, 16] (3 dims), expected [256, 128, 16]" },
    { "expert_width_zero", QWEN3MOE, SL_ERANGE,
      { .key = "qwen3moe.expert_feed_forward_length", .val = 0 },
      "model metadata: key 'qwen3moe.expert_feed_forward_length' is 0" },
    { "wrong_shared_width", QWEN2MOE, SL_ESHAPE,
      { .key = "qwen2moe.expert_shared_feed_forward_length", .val = 256 },
      "tensor 'blk.0.ffn_gate_shexp.weight': shape [256, 512], expected [256, 256]" },
    { "expert_tensor_wrong_third_dim", QWEN3MOE, SL_ESHAPE,
      { .shape_name = "blk.3.ffn_down_exps.weight", .dim = 2, .ne = 15 },
      "tensor 'blk.3.ffn_down_exps.weight': shape [256, 256, 15] (3 dims), expected [256, 256, 16]" },
    { "expert_tensor_missing", MIXTRAL, SL_ENOENT,
      { .drop = "blk.1.ffn_up_exps.weight" },
      "tensor 'blk.1.ffn_up_exps.weight' missing from the model" },
    { "router_missing", QWEN2MOE, SL_ENOENT,
      { .drop = "blk.2.ffn_gate_inp.weight" },
      "tensor 'blk.2.ffn_gate_inp.weight' missing from the model" },
    { "shared_gate_missing", QWEN2MOE, SL_ENOENT,
      { .drop = "blk.0.ffn_gate_inp_shexp.weight" },
      "tensor 'blk.0.ffn_gate_inp_shexp.weight' missing from the model" },
    { "q_norm_missing", QWEN3MOE, SL_ENOENT,
      { .drop = "blk.1.attn_q_norm.weight" },
      "tensor 'blk.1.attn_q_norm.weight' missing from the model" },
    { "k_norm_wrong_shape", QWEN3MOE, SL_ESHAPE,
      { .shape_name = "blk.0.attn_k_norm.weight", .dim = 0, .ne = 64 },
      "tensor 'blk.0.attn_k_norm.weight': shape [64], expected [128]" },
};

Test(model_moe, hostile_variants_refused, .timeout = 120)
{
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        cr_log_info("%s", hostile[i].what);
        expect_refused(hostile[i].src, &hostile[i].mu, hostile[i].want, hostile[i].msg);
    }
}
