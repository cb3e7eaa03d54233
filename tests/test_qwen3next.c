/* qwen3next (engine/arch/arch_qwen3next.c, arch_gdn.c, forward_gdn_proj.c)
 * on mkmodel's qwen3next-tiny (512 tokens, no vocabulary): the description
 * (Gated DeltaNet layers 0-2 with grouped v heads, layer 3 gated attention,
 * routed + gated shared experts), each key and tensor of its own layout
 * refused with a message naming it, and the older fused ssm_in layout giving
 * bitwise the logits of the split attn_qkv / attn_gate one. What it computes
 * is compared with llama.cpp 2026-08 in tests/test_golden.c (preset
 * qwen3next-tiny). SL_HOST_ONLY (writes and runs a model). */
#include "model_testutil.h"
#include "session_testutil.h"

#include "../io/sluice_stream.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NV 512

static char dir[64], model[128];

/* The preset written once per test under a fresh directory. */
static void write_preset(void)
{
    char self[PATH_MAX], cmd[2 * PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert_gt(n, 0);
    self[n] = 0;
    *strrchr(self, '/') = 0;   /* .../build/tests */
    snprintf(dir, sizeof dir, "/tmp/sl_qwen3next_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(model, sizeof model, "%s/q3n.gguf", dir);
    snprintf(cmd, sizeof cmd, "'%s/../sluice' mkmodel --preset qwen3next-tiny --vocab none --n-vocab %d -o '%s' "
             "2>/dev/null", self, NV, model);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(qwen3next, .init = write_preset, .fini = remove_dir);

Test(qwen3next, description)
{
    sl_model_desc d;
    mt_load_arch(model, "qwen3next", &d);
    cr_assert(d.n_layer == 4 && d.head_dim == 128 && d.n_rot == 32 && d.rope_neox && d.ssm_grouped);
    cr_assert(d.ssm_conv == 4 && d.ssm_nk == 2 && d.ssm_nv == 4 && d.ssm_dk == 64 && d.ssm_dv == 64);
    cr_assert(d.n_expert == 8 && d.n_expert_used == 2 && d.n_ff_exp == 256 && d.n_ff_shexp == 256);
    /* kind 0 Gated DeltaNet (layers 0-2), kind 1 the gated attention (layer 3) */
    cr_assert_eq(d.n_kinds, 2);
    for (int32_t l = 0; l < 4; l++) cr_assert_eq(d.layer_kind[l], l == 3, "layer %d", l);
    cr_assert(d.kind[0].attn.kind == SL_ATTN_RECURRENT && d.kind[1].attn.kind == SL_ATTN_SOFTMAX);
    cr_assert(d.kind[1].attn.out_gate && d.kind[1].attn.qk_norm);
    for (int k = 0; k < 2; k++) {
        const sl_ffn_block *f = &d.kind[k].ffn;
        cr_assert(f->kind == SL_FFN_MOE && f->shared_expert && f->weights_norm && f->norm_post_attn, "kind %d", k);
    }
}

Test(qwen3next, hostile_variants_refused, .timeout = 120)
{
    const mt_case h[] = {
        { "ba_missing", { .src = model, .drop = "blk.1.ssm_ba.weight" }, SL_ENOENT,
          "tensor 'blk.1.ssm_ba.weight' missing from the model", NULL },
        { "ba_shape", { .src = model, .shape_name = "blk.0.ssm_ba.weight", .dim = 1, .ne = 4 }, SL_ESHAPE,
          "tensor 'blk.0.ssm_ba.weight': shape [256, 4], expected [256, 8]", NULL },
        { "qkv_missing", { .src = model, .drop = "blk.2.attn_qkv.weight" }, SL_ENOENT,
          "tensor 'blk.2.attn_qkv.weight' missing from the model (nor the fused 'blk.2.ssm_in.weight')", NULL },
        { "gate_missing", { .src = model, .drop = "blk.0.attn_gate.weight" }, SL_ENOENT,
          "tensor 'blk.0.attn_gate.weight' missing from the model", NULL },
        { "conv_shape", { .src = model, .shape_name = "blk.1.ssm_conv1d.weight", .dim = 0, .ne = 3 }, SL_ESHAPE,
          "tensor 'blk.1.ssm_conv1d.weight': shape [3, 512], expected [4, 512]", NULL },
        { "norm_shape", { .src = model, .shape_name = "blk.2.ssm_norm.weight", .dim = 0, .ne = 128 }, SL_ESHAPE,
          "tensor 'blk.2.ssm_norm.weight': shape [128], expected [64]", NULL },
        { "a_f16", { .src = model, .type_name = "blk.0.ssm_a" }, SL_EUNSUPPORTED,
          "tensor 'blk.0.ssm_a': type f16, expected f32", NULL },
        { "gate_rows", { .src = model, .shape_name = "blk.3.attn_q.weight", .dim = 1, .ne = 512 }, SL_ESHAPE,
          "tensor 'blk.3.attn_q.weight': shape [256, 512], expected [256, 1024]", NULL },
        { "shexp_gate_missing", { .src = model, .drop = "blk.3.ffn_gate_inp_shexp.weight" }, SL_ENOENT,
          "tensor 'blk.3.ffn_gate_inp_shexp.weight' missing from the model", NULL },
        { "experts_missing", { .src = model, .drop_key = "qwen3next.expert_count" }, SL_ENOENT,
          "model metadata: key 'qwen3next.expert_count' missing", NULL },
        { "conv_kernel_missing", { .src = model, .drop_key = "qwen3next.ssm.conv_kernel" }, SL_ENOENT,
          "model metadata: key 'qwen3next.ssm.conv_kernel' missing", NULL },
        { "state_size", { .src = model, .u32_key = "qwen3next.ssm.state_size", .u32_val = 0 }, SL_ERANGE,
          "model metadata: key 'qwen3next.ssm.state_size' is 0 (1..1024)", NULL },
        { "v_heads", { .src = model, .u32_key = "qwen3next.ssm.time_step_rank", .u32_val = 3 }, SL_ERANGE,
          "model metadata: keys 'qwen3next.ssm.group_count' 2 / 'qwen3next.ssm.time_step_rank' 3: q/k and v "
          "heads 1..1024, v heads a multiple of q/k heads", NULL },
        { "interval_zero", { .src = model, .u32_key = "qwen3next.full_attention_interval", .u32_val = 0 }, SL_ERANGE,
          "model metadata: key 'qwen3next.full_attention_interval' is 0", NULL },
        /* every other layer full attention: layer 1 has no attention tensors */
        { "interval_two", { .src = model, .u32_key = "qwen3next.full_attention_interval", .u32_val = 2 }, SL_ENOENT,
          "tensor 'blk.1.attn_q.weight' missing from the model", NULL },
    };
    mt_expect_refused_all(h, sizeof h / sizeof h[0]);
}

/* ---- the older fused layout ----------------------------------------------
 * ssm_in [n_embd, 2 nk dk + 2 nv dv]: per q/k head g the rows q_g | k_g |
 * v of its r = nv / nk v heads | z of them, written from the file's
 * attn_qkv and attn_gate rows (with `drop_in` = the layer whose ssm_in is
 * left out). */
static void write_fused(const char *dst, int drop_in)
{
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, model), 0);
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, dst, 3), 0, "%s", sl_last_error());
    for (int64_t i = 0; i < sl_gguf_n_kv(g); i++) cr_assert_eq(sl_gguf_writer_copy_kv(w, g, i), 0);
    const int64_t nt = sl_gguf_n_tensors(g);
    const uint32_t nk = 2, dk = 64, r = 2, dv = 64, ch = 2 * nk * dk + nk * r * dv;
    for (int pass = 0; pass < 2; pass++) {
        if (pass) cr_assert_eq(sl_gguf_writer_begin_data(w), 0, "%s", sl_gguf_writer_errmsg(w));
        for (int64_t i = 0; i < nt; i++) {
            const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
            int l;
            char rest[64];
            if (strstr(t->name, "attn_gate.weight")) continue;
            bool qkv = sscanf(t->name, "blk.%d.%63s", &l, rest) == 2 && !strcmp(rest, "attn_qkv.weight");
            if (!qkv) {
                if (!pass) cr_assert_eq(sl_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne), 0);
                else {
                    void *buf = malloc(t->nbytes);
                    cr_assert_eq(sl_gguf_read(g, buf, t->nbytes, t->file_offset), 0);
                    cr_assert_eq(sl_gguf_writer_write(w, buf, t->nbytes), 0);
                    free(buf);
                }
                continue;
            }
            if (l == drop_in) continue;
            char name[64];
            snprintf(name, sizeof name, "blk.%d.attn_gate.weight", l);
            const sl_gguf_tensor *z = sl_gguf_find_tensor(g, name);
            cr_assert(z && z->type == t->type);
            snprintf(name, sizeof name, "blk.%d.ssm_in.weight", l);
            uint64_t ne[4] = { t->ne[0], ch + (uint64_t)nk * r * dv, 1, 1 };
            if (!pass) {
                cr_assert_eq(sl_gguf_writer_add_tensor(w, name, t->type, 2, ne), 0);
                continue;
            }
            const size_t rb = t->nbytes / t->ne[1];
            uint8_t *q = malloc(t->nbytes), *zb = malloc(z->nbytes), *out = malloc(rb * ne[1]), *o = out;
            cr_assert_eq(sl_gguf_read(g, q, t->nbytes, t->file_offset), 0);
            cr_assert_eq(sl_gguf_read(g, zb, z->nbytes, z->file_offset), 0);
            for (uint32_t gi = 0; gi < nk; gi++) {
                memcpy(o, q + (size_t)gi * dk * rb, dk * rb), o += dk * rb;
                memcpy(o, q + (size_t)(nk + gi) * dk * rb, dk * rb), o += dk * rb;
                memcpy(o, q + (size_t)(2 * nk * dk + gi * r * dv) * rb, r * dv * rb), o += r * dv * rb;
                memcpy(o, zb + (size_t)gi * r * dv * rb, r * dv * rb), o += r * dv * rb;
            }
            cr_assert_eq(sl_gguf_writer_write(w, out, rb * ne[1]), 0);
            free(q); free(zb); free(out);
        }
    }
    cr_assert_eq(sl_gguf_writer_close(w), 0, "%s", sl_last_error());
    sl_gguf_close(g);
}

static float *logits_of(const char *path, const int32_t *ids, int n, int mode)
{
    sl_model_params mp = st_params(64, 8, 2);
    mp.mode = mode;
    sl_model *m = st_open(path, &mp);
    sl_session *s = st_session(m, true);
    cr_assert_eq(sl_session_feed_tokens(s, ids, n), 0, "%s", sl_session_errmsg(s));
    const float *l = sl_session_logits(s);
    cr_assert_not_null(l);
    float *c = malloc(NV * sizeof *c);
    memcpy(c, l, NV * sizeof *c);
    st_close(s, m);
    return c;
}

Test(qwen3next, fused_ssm_in_same_logits, .timeout = 120)
{
    char fused[160];
    snprintf(fused, sizeof fused, "%s/fused.gguf", dir);
    write_fused(fused, -1);
    int32_t ids[20];
    st_some_ids(ids, 20, NV, 3);
    const int modes[] = { SL_MODE_RESIDENT, SL_MODE_STREAM, SL_MODE_MMAP };
    for (int i = 0; i < 3; i++) {
        float *a = logits_of(model, ids, 20, modes[i]), *b = logits_of(fused, ids, 20, modes[i]);
        cr_assert_eq(memcmp(a, b, NV * sizeof *a), 0, "mode %d", modes[i]);
        free(a); free(b);
    }
    /* ssm_in without the z rows */
    mt_mutation mu = { .src = fused, .shape_name = "blk.0.ssm_in.weight", .dim = 1, .ne = 512 };
    mt_expect_refused("ssm_in_shape", &mu, SL_ESHAPE, "tensor 'blk.0.ssm_in.weight': shape [256, 512], expected "
                      "[256, 768]", NULL);
    /* a layer with neither layout */
    write_fused(fused, 1);
    sl_model_desc d;
    cr_assert_eq(mt_load_desc(fused, &d), SL_ENOENT);
    cr_assert_str_eq(sl_last_error(), "tensor 'blk.1.attn_qkv.weight' missing from the model (nor the fused "
                     "'blk.1.ssm_in.weight')");
    unlink(fused);
}
