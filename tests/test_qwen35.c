/* qwen35moe and qwen35 (engine/arch/arch_qwen35moe.c, arch_qwen35.c,
 * arch_gdn.c, engine/forward_gdn.c, engine/kv_rec.c) on the synth3 file and
 * files made from it (dense, with an MTP block): the description (which layers are Gated
 * DeltaNet, their sizes, the gated attention layer, the FFN), a hostile
 * variant of each key and of the block's tensors refused with a message naming it;
 * an MTP block checked, then never run: the logits of the file without it;
 * the recurrent state of a sequence: zeroed with the sequence, carried
 * across feeds, never rolled back silently (a cut prefix, a context shift,
 * a pressure window are refused or start over), restored bitwise from a
 * prompt cache, rolled back by speculative decoding, one per batch member.
 * SL_HOST_ONLY (the synth3 files; slow under qemu). */
#include "model_testutil.h"
#include "session_testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../engine/session_obj.h"
#include "../io/sluice_stream.h"

#define Q35 MODELS "/synth3-qwen35moe-q4_k_m.gguf"
#define Q3MOE MODELS "/synth2-qwen3moe-q4_k_m.gguf"

Test(qwen35, description)
{
    sl_model_desc d;
    mt_load_arch(Q35, "qwen35moe", &d);
    cr_assert(d.n_layer == 4 && d.n_ff == 0 && d.head_dim == 128 && d.n_rot == 32 && d.rope_neox);
    cr_assert(d.ssm_conv == 4 && d.ssm_nk == 2 && d.ssm_nv == 4 && d.ssm_dk == 64 && d.ssm_dv == 64);
    cr_assert(d.n_expert == 8 && d.n_expert_used == 2 && d.n_ff_exp == 256 && d.n_ff_shexp == 256);
    for (int32_t l = 0; l < 4; l++) {
        const sl_attn_block *a = mt_attn(&d, l);
        const sl_ffn_block *f = mt_ffn(&d, l);
        cr_assert_eq(a->kind, l == 3 ? SL_ATTN_SOFTMAX : SL_ATTN_RECURRENT, "layer %d", l);
        if (l == 3) cr_assert(a->out_gate && a->qk_norm);
        cr_assert(f->kind == SL_FFN_MOE && f->shared_expert && f->weights_norm && f->norm_post_attn, "layer %d", l);
    }
}

/* A key set to a bad value: "model metadata: key '<key>' <tail>". */
static const struct { const char *key; uint32_t val; int want; const char *tail; } bad_keys[] = {
    { "qwen35moe.ssm.conv_kernel", 0, SL_ERANGE, "is 0 (1..64)" },
    { "qwen35moe.ssm.state_size", 5000, SL_ERANGE, "is 5000 (1..1024)" },
    { "qwen35moe.ssm.inner_size", 512, SL_EUNSUPPORTED, "512 is not time_step_rank 4 x state_size 64 (v heads as "
      "wide as q/k heads)" },
    { "qwen35moe.full_attention_interval", 0, SL_ERANGE, "is 0" },
    { "qwen35moe.nextn_predict_layers", 4, SL_ERANGE, "is 4 of 4 blocks" },
};

/* A tensor of another shape: its dimension dim is ne, [want] expected. */
static const struct { const char *name; int dim; uint64_t ne; const char *have, *want; } bad_shapes[] = {
    { "blk.0.ssm_conv1d.weight", 0, 3, "3, 512", "4, 512" },
    { "blk.1.ssm_dt.bias", 0, 2, "2", "4" },
    { "blk.2.ssm_norm.weight", 0, 128, "128", "64" },
    { "blk.3.attn_q.weight", 1, 512, "256, 512", "256, 1024" },   /* the gate rows missing */
};

/* Each tensor of the blocks, left out. */
static const char *const required[] = {
    "blk.1.ssm_a", "blk.2.attn_qkv.weight", "blk.0.attn_gate.weight", "blk.0.ssm_beta.weight",
    "blk.0.ssm_alpha.weight", "blk.1.ssm_out.weight", "blk.2.post_attention_norm.weight",
    "blk.3.ffn_gate_inp_shexp.weight",
};

static void refused(const char *what, mt_mutation mu, int want, const char *msg)
{
    cr_log_info("%s", what);
    mu.src = Q35;
    mt_expect_refused(what, &mu, want, msg, NULL);
}

Test(qwen35, hostile_variants_refused, .timeout = 120)
{
    char msg[256];
    for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++) {
        snprintf(msg, sizeof msg, "model metadata: key '%s' %s", bad_keys[i].key, bad_keys[i].tail);
        refused(bad_keys[i].key, (mt_mutation){ .u32_key = bad_keys[i].key, .u32_val = bad_keys[i].val },
                bad_keys[i].want, msg);
    }
    for (size_t i = 0; i < sizeof bad_shapes / sizeof bad_shapes[0]; i++) {
        snprintf(msg, sizeof msg, "tensor '%s': shape [%s], expected [%s]", bad_shapes[i].name, bad_shapes[i].have,
                 bad_shapes[i].want);
        refused(bad_shapes[i].name,
                (mt_mutation){ .shape_name = bad_shapes[i].name, .dim = bad_shapes[i].dim, .ne = bad_shapes[i].ne },
                SL_ESHAPE, msg);
    }
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        snprintf(msg, sizeof msg, "tensor '%s' missing from the model", required[i]);
        refused(required[i], (mt_mutation){ .drop = required[i] }, SL_ENOENT, msg);
    }
    refused("conv_kernel_missing", (mt_mutation){ .drop_key = "qwen35moe.ssm.conv_kernel" }, SL_ENOENT,
            "model metadata: key 'qwen35moe.ssm.conv_kernel' missing");
    refused("v_heads_not_multiple", (mt_mutation){ .u32_key = "qwen35moe.ssm.time_step_rank", .u32_val = 3 },
            SL_ERANGE, "model metadata: keys 'qwen35moe.ssm.group_count' 2 / 'qwen35moe.ssm.time_step_rank' 3: "
            "q/k and v heads 1..1024, v heads a multiple of q/k heads");
    /* every other layer full attention: layer 1 has no attention tensors */
    refused("interval_two", (mt_mutation){ .u32_key = "qwen35moe.full_attention_interval", .u32_val = 2 },
            SL_ENOENT, "tensor 'blk.1.attn_q.weight' missing from the model");
    refused("conv_f16", (mt_mutation){ .type_name = "blk.2.ssm_conv1d.weight" }, SL_EUNSUPPORTED,
            "tensor 'blk.2.ssm_conv1d.weight': type f16, expected f32");
}

#define NV 2048
#define NB 8
static float *fed_logits(sl_model *m, const int32_t *ids, int n, const int *cuts);

/* ---- variants written from the synth3 file ----------------------------------
 * dense: keys renamed, the experts and the router left out, the shared
 * expert as the dense FFN (feed_forward_length 256). (Checked once against
 * ref_forward3.py's qwen35moe pass with the dense FFN in float64: max 0.22,
 * RMS 0.040 logits_sd over ids32, the activation-quantization distance the
 * MoE file shows too.)
 * mtp: one MTP block appended (blk.4: blk.3's full-attention tensors and
 * the NextN ones, F32), nextn_predict_layers 1, block_count 5.
 * Less one key or tensor; halve: an F32 NextN tensor of half its width. */
typedef struct { bool dense, mtp; const char *drop_key, *drop_tensor, *halve; } q35_variant;

static bool dense_skips(const char *name) { return strstr(name, "_exps") || strstr(name, "ffn_gate_inp"); }

static void variant_name(const q35_variant *v, const char *name, char *out, size_t n)
{
    const char *sh = v->dense ? strstr(name, "_shexp") : NULL;
    if (sh) snprintf(out, n, "%.*s%s", (int)(sh - name), name, sh + 6);
    else snprintf(out, n, "%s", name);
}

static void variant_keys(sl_gguf_writer *w, const sl_gguf *g, const q35_variant *v)
{
    const char *A = v->dense ? "qwen35" : "qwen35moe";
    for (int64_t i = 0; i < sl_gguf_n_kv(g); i++) {
        const char *k = sl_gguf_kv_key(g, i);
        char nk[128];
        if (!strcmp(k, "general.architecture")) {
            cr_assert_eq(sl_gguf_writer_set_str(w, k, A), 0);
            continue;
        }
        if (!strncmp(k, "qwen35moe.", 10)) {
            if (v->dense && strstr(k, "expert")) continue;
            snprintf(nk, sizeof nk, "%s.%s", A, k + 10);
        } else {
            snprintf(nk, sizeof nk, "%s", k);
        }
        if ((v->drop_key && !strcmp(nk, v->drop_key)) || (v->mtp && strstr(nk, ".block_count"))) continue;
        cr_assert_eq(sl_gguf_writer_set_value(w, nk, sl_gguf_kv_value(g, i)), 0, "%s", sl_gguf_writer_errmsg(w));
    }
    char key[64];
    snprintf(key, sizeof key, "%s.feed_forward_length", A);
    if (v->dense && (!v->drop_key || strcmp(v->drop_key, key)))
        cr_assert_eq(sl_gguf_writer_set_u32(w, key, 256), 0);
    if (!v->mtp) return;
    snprintf(key, sizeof key, "%s.block_count", A);
    cr_assert_eq(sl_gguf_writer_set_u32(w, key, 5), 0);
    snprintf(key, sizeof key, "%s.nextn_predict_layers", A);
    if (!v->drop_key || strcmp(v->drop_key, key)) cr_assert_eq(sl_gguf_writer_set_u32(w, key, 1), 0);
}

/* One tensor: declared in pass 0, its bytes in pass 1 (src's, else an F32 ramp). */
static void variant_tensor(sl_gguf_writer *w, int pass, const q35_variant *v, const char *name, const sl_gguf *g,
                           const sl_gguf_tensor *src, uint64_t ne0, uint64_t ne1)
{
    if (v->drop_tensor && !strcmp(name, v->drop_tensor)) return;
    uint64_t ne[4] = { ne0, ne1 };
    uint32_t nd = ne1 ? 2 : 1;
    if (src) memcpy(ne, src->ne, sizeof ne), nd = src->n_dims;
    else if (v->halve && !strcmp(name, v->halve)) ne[0] /= 2;
    if (!pass) {
        cr_assert_eq(sl_gguf_writer_add_tensor(w, name, src ? src->type : SL_GGML_F32, nd, ne), 0, "%s",
                     sl_gguf_writer_errmsg(w));
        return;
    }
    size_t nb = src ? src->nbytes : (size_t)(ne[0] * (nd > 1 ? ne[1] : 1)) * sizeof(float);
    void *buf = malloc(nb);
    cr_assert_not_null(buf);
    if (src) {
        cr_assert_eq(sl_gguf_read(g, buf, nb, src->file_offset), 0);
    } else {
        for (size_t i = 0; i < nb / sizeof(float); i++) ((float *)buf)[i] = 1.0f + 0.01f * (float)(i % 17);
    }
    cr_assert_eq(sl_gguf_writer_write(w, buf, nb), 0, "%s", sl_gguf_writer_errmsg(w));
    free(buf);
}

static void write_variant(const char *dst, const q35_variant *v)
{
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, Q35), 0);
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, dst, 3), 0, "%s", sl_last_error());
    variant_keys(w, g, v);
    const int64_t nt = sl_gguf_n_tensors(g);
    const uint64_t E = 256;
    for (int pass = 0; pass < 2; pass++) {
        if (pass) cr_assert_eq(sl_gguf_writer_begin_data(w), 0, "%s", sl_gguf_writer_errmsg(w));
        /* the file's tensors, then blk.3's again as blk.4 */
        for (int64_t i = 0; i < (v->mtp ? 2 * nt : nt); i++) {
            const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i % nt);
            char name[128], blk4[128];
            if (dense_skips(t->name) && v->dense) continue;
            if (i >= nt) {
                if (strncmp(t->name, "blk.3.", 6)) continue;
                snprintf(blk4, sizeof blk4, "blk.4.%s", t->name + 6);
                variant_name(v, blk4, name, sizeof name);
            } else {
                variant_name(v, t->name, name, sizeof name);
            }
            variant_tensor(w, pass, v, name, g, t, 0, 0);
        }
        if (!v->mtp) continue;
        variant_tensor(w, pass, v, "blk.4.nextn.eh_proj.weight", g, NULL, 2 * E, E);
        variant_tensor(w, pass, v, "blk.4.nextn.enorm.weight", g, NULL, E, 0);
        variant_tensor(w, pass, v, "blk.4.nextn.hnorm.weight", g, NULL, E, 0);
        variant_tensor(w, pass, v, "blk.4.nextn.shared_head_norm.weight", g, NULL, E, 0);
    }
    cr_assert_eq(sl_gguf_writer_close(w), 0);
    sl_gguf_close(g);
}

static void write_dense(const char *dst, const char *drop_key, const char *drop_tensor)
{
    write_variant(dst, &(q35_variant){ .dense = true, .drop_key = drop_key, .drop_tensor = drop_tensor });
}

Test(qwen35, dense_row)
{
    char dir[] = "/tmp/sl_q35_dense_XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/d.gguf", dir);
    write_dense(path, NULL, NULL);
    sl_model_desc d;
    mt_load_arch(path, "qwen35", &d);
    cr_assert(d.n_ff == 256 && d.n_expert == 0 && d.ssm_nv == 4);
    for (int32_t l = 0; l < 4; l++) {
        cr_assert_eq(mt_attn(&d, l)->kind, l == 3 ? SL_ATTN_SOFTMAX : SL_ATTN_RECURRENT);
        cr_assert(mt_ffn(&d, l)->kind == SL_FFN_GATED && mt_ffn(&d, l)->norm_post_attn);
    }
    sl_model *m = st_open_ctx(path, 64, NB);
    int32_t ids[16];
    st_some_ids(ids, 16, NV, 16);
    float *a = fed_logits(m, ids, 16, NULL), *b = fed_logits(m, ids, 16, (const int[]){ 8, 0 });
    cr_assert_eq(memcmp(a, b, NV * sizeof *a), 0);
    free(a); free(b);
    sl_model_close(m);
    /* the dense FFN's key and tensors are required */
    write_dense(path, "qwen35.feed_forward_length", NULL);
    cr_assert_eq(mt_load_desc(path, &d), SL_ENOENT);
    cr_assert_str_eq(sl_last_error(), "model metadata: key 'qwen35.feed_forward_length' missing");
    write_dense(path, NULL, "blk.1.ffn_down.weight");
    cr_assert_eq(mt_load_desc(path, &d), SL_ENOENT);
    cr_assert_str_eq(sl_last_error(), "tensor 'blk.1.ffn_down.weight' missing from the model");
    unlink(path);
    rmdir(dir);
}

/* ---- MTP blocks ----------------------------------------------------------------
 * A file with an MTP block runs as the same file without it: the block is
 * checked, then left out of the layers, the schedule and the pass. */

static void logits_equal(const char *with, const char *without, int mode)
{
    sl_model_params mp = st_params(64, NB, 2);
    mp.mode = mode;
    sl_model *a = st_open(with, &mp), *b = st_open(without, &mp);
    int32_t ids[16];
    st_some_ids(ids, 16, NV, 21);
    float *la = fed_logits(a, ids, 16, (const int[]){ 8, 0 }), *lb = fed_logits(b, ids, 16, (const int[]){ 8, 0 });
    cr_assert_eq(memcmp(la, lb, NV * sizeof *la), 0, "mode %d: the MTP block changed the logits", mode);
    if (mode != SL_MODE_RESIDENT) {
        sl_stream_view sv;
        cr_assert_eq(sl_stream_acquire(sl_model_stream(a), 4, &sv), SL_EINVAL, "mode %d: the MTP unit", mode);
    }
    free(la); free(lb);
    sl_model_close(a);
    sl_model_close(b);
}

Test(qwen35, mtp_block_runs_as_without, .timeout = 120)
{
    char dir[] = "/tmp/sl_q35_mtp_XXXXXX", path[64], dense[64], dense_mtp[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    snprintf(dense, sizeof dense, "%s/d.gguf", dir);
    snprintf(dense_mtp, sizeof dense_mtp, "%s/dm.gguf", dir);
    write_variant(path, &(q35_variant){ .mtp = true });
    sl_model_desc d;
    mt_load_arch(path, "qwen35moe", &d);
    cr_assert(d.n_layer == 4 && d.n_layer_nextn == 1, "%d + %d", d.n_layer, d.n_layer_nextn);
    for (int32_t l = 0; l < 5; l++)
        cr_assert_eq(mt_attn(&d, l)->kind, l < 3 ? SL_ATTN_RECURRENT : SL_ATTN_SOFTMAX, "layer %d", l);
    cr_assert(mt_ffn(&d, 4)->kind == SL_FFN_MOE && mt_ffn(&d, 4)->shared_expert);
    logits_equal(path, Q35, SL_MODE_RESIDENT);
    logits_equal(path, Q35, SL_MODE_STREAM);
    /* the dense family's MTP block has the dense FFN */
    write_variant(dense, &(q35_variant){ .dense = true });
    write_variant(dense_mtp, &(q35_variant){ .dense = true, .mtp = true });
    mt_load_arch(dense_mtp, "qwen35", &d);
    cr_assert(d.n_layer == 4 && d.n_layer_nextn == 1 && mt_ffn(&d, 4)->kind == SL_FFN_GATED);
    logits_equal(dense_mtp, dense, SL_MODE_RESIDENT);
    logits_equal(dense_mtp, dense, SL_MODE_STREAM);
    /* shared_head_norm is optional (as in llama.cpp) */
    write_variant(path, &(q35_variant){ .mtp = true, .drop_tensor = "blk.4.nextn.shared_head_norm.weight" });
    cr_assert_eq(mt_load_desc(path, &d), 0, "%s", sl_last_error());
    unlink(path); unlink(dense); unlink(dense_mtp);
    rmdir(dir);
}

/* Each MTP tensor left out or of another width: refused, named. */
static const struct { const char *drop, *halve; int want; const char *msg; } bad_mtp[] = {
    { "blk.4.nextn.eh_proj.weight", NULL, SL_ENOENT, "tensor 'blk.4.nextn.eh_proj.weight' missing from the model" },
    { "blk.4.nextn.enorm.weight", NULL, SL_ENOENT, "tensor 'blk.4.nextn.enorm.weight' missing from the model" },
    { "blk.4.attn_k_norm.weight", NULL, SL_ENOENT, "tensor 'blk.4.attn_k_norm.weight' missing from the model" },
    { "blk.4.ffn_gate_inp_shexp.weight", NULL, SL_ENOENT,
      "tensor 'blk.4.ffn_gate_inp_shexp.weight' missing from the model" },
    { NULL, "blk.4.nextn.eh_proj.weight", SL_ESHAPE,
      "tensor 'blk.4.nextn.eh_proj.weight': shape [256, 256], expected [512, 256]" },
    { NULL, "blk.4.nextn.hnorm.weight", SL_ESHAPE,
      "tensor 'blk.4.nextn.hnorm.weight': shape [128], expected [256]" },
    { NULL, "blk.4.nextn.shared_head_norm.weight", SL_ESHAPE,
      "tensor 'blk.4.nextn.shared_head_norm.weight': shape [128], expected [256]" },
};

Test(qwen35, mtp_block_checked, .timeout = 120)
{
    char dir[] = "/tmp/sl_q35_mtpbad_XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    sl_model_desc d;
    for (size_t i = 0; i < sizeof bad_mtp / sizeof bad_mtp[0]; i++) {
        write_variant(path, &(q35_variant){ .mtp = true, .drop_tensor = bad_mtp[i].drop, .halve = bad_mtp[i].halve });
        cr_assert_eq(mt_load_desc(path, &d), bad_mtp[i].want, "case %zu: %s", i, sl_last_error());
        cr_assert_str_eq(sl_last_error(), bad_mtp[i].msg);
    }
    /* without the key the fifth block is a Gated DeltaNet layer, whose tensors it lacks */
    write_variant(path, &(q35_variant){ .mtp = true, .drop_key = "qwen35moe.nextn_predict_layers" });
    cr_assert_eq(mt_load_desc(path, &d), SL_ENOENT);
    cr_assert_str_eq(sl_last_error(), "tensor 'blk.4.attn_qkv.weight' missing from the model");
    unlink(path);
    rmdir(dir);
}

/* ---- the recurrent state of a sequence ------------------------------------- */

static float *logits_copy(const sl_session *s)
{
    float *l = malloc(NV * sizeof *l);
    cr_assert_not_null(l);
    memcpy(l, sl_session_logits(s), NV * sizeof *l);
    return l;
}

/* Logits after feeding ids[0..n) to a fresh session of m, in feeds split at
 * the given points (ascending, 0-terminated). */
static float *fed_logits(sl_model *m, const int32_t *ids, int n, const int *cuts)
{
    sl_session *s = st_session(m, true);
    int at = 0;
    for (int i = 0; cuts && cuts[i]; i++) {
        cr_assert_eq(sl_session_feed_tokens(s, ids + at, cuts[i] - at), 0, "%s", sl_session_errmsg(s));
        at = cuts[i];
    }
    cr_assert_eq(sl_session_feed_tokens(s, ids + at, n - at), 0, "%s", sl_session_errmsg(s));
    float *l = logits_copy(s);
    sl_session_destroy(s);
    return l;
}

/* A reset zeroes the state: the same prompt again gives the same logits;
 * the state carries across feeds at chunk boundaries bitwise. */
Test(qwen35, state_reset_and_carried)
{
    sl_model *m = st_open_ctx(Q35, 64, NB);
    int32_t ids[24];
    st_some_ids(ids, 24, NV, 7);
    sl_session *s = st_session(m, true);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 24), 0, "%s", sl_session_errmsg(s));
    float *a = logits_copy(s);
    sl_session_reset(s);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 24), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(memcmp(a, sl_session_logits(s), NV * sizeof *a), 0, "state not reset with the sequence");
    float *b = fed_logits(m, ids, 24, (const int[]){ 8, 16, 0 });
    cr_assert_eq(memcmp(a, b, NV * sizeof *a), 0, "state not carried across feeds");
    /* another prompt's state must not leak into it */
    int32_t other[24];
    st_some_ids(other, 24, NV, 8);
    sl_session_reset(s);
    cr_assert_eq(sl_session_feed_tokens(s, other, 24), 0);
    sl_session_reset(s);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 24), 0);
    cr_assert_eq(memcmp(a, sl_session_logits(s), NV * sizeof *a), 0);
    free(a); free(b);
    st_close(s, m);
}

/* Only the attention layer holds KV rows; each Gated DeltaNet layer its
 * state: 3 conv rows of 512 channels and 4 heads of 64 x 64. */
Test(qwen35, state_in_place_of_rows)
{
    sl_model *m = st_open_ctx(Q35, 64, NB);
    sl_session *s = st_session(m, true);
    for (int32_t l = 0; l < 4; l++) {
        cr_assert_eq(s->kv.cap[l], l == 3 ? 64 : 0, "layer %d", l);
        cr_assert_eq(sl_kv_rec_layer(&s->kv, l), l != 3, "layer %d", l);
    }
    cr_assert_eq(s->kv.rec_conv, 3 * 512);
    cr_assert_eq(s->kv.rec_len, 3 * 512 + 4 * 64 * 64);
    cr_assert_eq(sl_kv_rec_total(&s->kv), 3u * (3 * 512 + 4 * 64 * 64) * sizeof(float));
    st_close(s, m);
}

/* A sequence moved back without its state is refused, never continued. */
Test(qwen35, rollback_refused)
{
    sl_model *m = st_open_ctx(Q35, 64, NB);
    int32_t ids[16];
    st_some_ids(ids, 16, NV, 9);
    sl_session *s = st_session(m, true);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 16), 0);
    s->kv.n_past = 12;   /* what a KV-only rollback would do */
    cr_assert_eq(sl_session_feed_tokens(s, ids + 12, 4), SL_EINVAL);
    cr_assert_not_null(strstr(sl_session_errmsg(s), "recurrent state: it holds 16 positions but the sequence "
                                                    "continues at 12"), "%s", sl_session_errmsg(s));
    st_close(s, m);
}

/* Prefix reuse keeps all of the history or nothing, and what it keeps
 * continues bitwise as a fresh prefill. */
Test(qwen35, prefix_reuse)
{
    sl_model *m = st_open_ctx(Q35, 64, NB);
    int32_t ids[24];
    st_some_ids(ids, 24, NV, 10);
    float *fresh = fed_logits(m, ids, 24, NULL);
    sl_session *s = st_session(m, true);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 16), 0);
    cr_assert_eq(sl_session_prefix_reusable(s, ids, 24), 16);
    int32_t cut[24];
    memcpy(cut, ids, sizeof cut);
    cut[12] ^= 1;   /* shares only 12 (8 in whole chunks): the state cannot go back */
    cr_assert_eq(sl_session_prefix_reusable(s, cut, 24), 0);
    cr_assert_eq(sl_session_keep_prefix(s, ids, 24), 16);
    cr_assert_eq(sl_session_feed_tokens(s, ids + 16, 8), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(memcmp(fresh, sl_session_logits(s), NV * sizeof *fresh), 0);
    cr_assert_eq(sl_session_keep_prefix(s, cut, 24), 0);   /* starts over */
    cr_assert_eq(sl_session_feed_tokens(s, ids, 24), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(memcmp(fresh, sl_session_logits(s), NV * sizeof *fresh), 0);
    free(fresh);
    st_close(s, m);
}

/* Context shift and a pressure window would drop positions from a sum that
 * cannot give them back: refused with a message, the state untouched. */
Test(qwen35, context_shift_refused)
{
    sl_model_params mp = st_params(16, NB, 2);
    mp.context_shift = true;
    sl_model *m = st_open(Q35, &mp);
    int32_t ids[20];
    st_some_ids(ids, 20, NV, 11);
    sl_session *s = st_session(m, true);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 16), 0);
    cr_assert_eq(sl_session_feed_tokens(s, ids + 16, 1), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(sl_session_errmsg(s), "recurrent layers"), "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_n_past(s), 16);
    sl_session_reset(s);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 8), 0);
    cr_assert_eq(sl_session_kv_window(s, 4), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(sl_session_errmsg(s), "recurrent layers"), "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_feed_tokens(s, ids + 8, 8), 0, "%s", sl_session_errmsg(s));
    float *a = logits_copy(s);
    float *b = fed_logits(m, ids, 16, (const int[]){ 8, 0 });
    cr_assert_eq(memcmp(a, b, NV * sizeof *a), 0);
    free(a); free(b);
    st_close(s, m);
}

static void tmp_path(char *buf, size_t n, const char *name)
{
    const char *d = getenv("TMPDIR");
    snprintf(buf, n, "%s/sl_q35_%d_%s", d ? d : "/tmp", (int)getpid(), name);
}

/* A prompt cache holds the recurrent state: a restored prefix continues
 * bitwise as the session that computed it; a shorter prefix cannot use it;
 * a cache of another model is refused. */
Test(qwen35, prompt_cache_state)
{
    char path[256], other[256];
    tmp_path(path, sizeof path, "pc");
    tmp_path(other, sizeof other, "pc3moe");
    sl_model *m = st_open_ctx(Q35, 64, NB);
    int32_t ids[24];
    st_some_ids(ids, 24, NV, 12);
    sl_session *s = st_session(m, true);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 16), 0);
    cr_assert_eq(sl_session_save(s, path), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_feed_tokens(s, ids + 16, 8), 0);
    float *want = logits_copy(s);
    sl_session *r = st_session(m, true);
    int32_t n_reused = -1;
    cr_assert_eq(sl_session_load_prefix(r, path, ids, 24, &n_reused), 0, "%s", sl_session_errmsg(r));
    cr_assert_eq(n_reused, 16);
    cr_assert_eq(sl_session_feed_tokens(r, ids + 16, 8), 0, "%s", sl_session_errmsg(r));
    cr_assert_eq(memcmp(want, sl_session_logits(r), NV * sizeof *want), 0, "restored state differs");
    /* a prompt sharing 12 of the 16: the state is of all 16, nothing restored */
    int32_t cut[24];
    memcpy(cut, ids, sizeof cut);
    cut[12] ^= 1;
    cr_assert_eq(sl_session_load_prefix(r, path, cut, 24, &n_reused), 0, "%s", sl_session_errmsg(r));
    cr_assert_eq(n_reused, 0);
    cr_assert_eq(sl_session_n_past(r), 0);
    cr_assert_eq(sl_session_load(r, path), 0);
    cr_assert_eq(sl_session_n_past(r), 16);
    /* a cache written by another model */
    sl_model *m3 = st_open_ctx(Q3MOE, 64, NB);
    sl_session *s3 = st_session(m3, true);
    cr_assert_eq(sl_session_feed_tokens(s3, ids, 8), 0);
    cr_assert_eq(sl_session_save(s3, other), 0, "%s", sl_session_errmsg(s3));
    cr_assert_eq(sl_session_load(r, other), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(sl_session_errmsg(r), "written for another model file"), "%s", sl_session_errmsg(r));
    cr_assert_eq(sl_session_n_past(r), 0);
    unlink(path);
    unlink(other);
    free(want);
    st_close(s3, m3);
    sl_session_destroy(r);
    st_close(s, m);
}

/* Greedy speculative decoding with a draft model gives the tokens of plain
 * decoding: a recurrent target's state goes back to the last accepted token
 * at each rejection (the other model's drafts are mostly rejected), and a
 * recurrent draft's state is rebuilt when the target rejects its tokens. */
static void spec_identical(const char *target, const char *draft)
{
    sl_model *m = st_open_ctx(target, 128, NB), *dm = st_open_ctx(draft, 128, NB);
    int32_t ids[16];
    st_some_ids(ids, 16, NV, 13);
    enum { GEN = 32 };
    int32_t plain[GEN], fast[GEN + 9];
    sl_session *s = st_session(m, true), *ds = st_session(dm, true);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 16), 0);
    for (int i = 0; i < GEN; i++) cr_assert_eq(sl_session_step(s, &plain[i]), 0, "%s", sl_session_errmsg(s));
    sl_session_reset(s);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 16), 0);
    sl_spec_params sp;
    sl_spec_params_init(&sp);
    sp.kind = SL_SPEC_DRAFT, sp.draft = ds, sp.k_max = 3, sp.adaptive = false;
    sl_spec *spec;
    cr_assert_eq(sl_spec_create(&spec, s, &sp), 0, "%s", sl_last_error());
    for (int32_t got = 0, n = 0; got < GEN; got += n)
        cr_assert_eq(sl_spec_step(spec, fast + got, GEN + 9 - got, &n), 0, "%s", sl_spec_errmsg(spec));
    cr_assert_eq(memcmp(plain, fast, GEN * sizeof *plain), 0, "speculative tokens differ (%s / %s)", target, draft);
    sl_spec_stats st;
    cr_assert_eq(sl_spec_get_stats(spec, &st), 0);
    cr_assert_gt(st.n_drafted, st.n_accepted, "no rejection: the rollback was not exercised (%lld drafted, %lld "
                 "accepted)", (long long)st.n_drafted, (long long)st.n_accepted);
    sl_spec_destroy(spec);
    st_close(ds, dm);
    st_close(s, m);
}

Test(qwen35, spec_recurrent_target, .timeout = 60) { spec_identical(Q35, Q3MOE); }
Test(qwen35, spec_recurrent_draft, .timeout = 60) { spec_identical(Q3MOE, Q35); }

/* Batch members each carry their own state: the batch gives each the
 * logits it gets alone. */
Test(qwen35, batch_own_state)
{
    sl_model *m = st_open_ctx(Q35, 64, NB);
    int32_t a[16], b[16];
    st_some_ids(a, 16, NV, 14);
    st_some_ids(b, 16, NV, 15);
    sl_session *sa = st_session(m, true), *sb = st_session(m, true);
    cr_assert_eq(sl_session_feed_tokens(sa, a, 15), 0);
    cr_assert_eq(sl_session_feed_tokens(sb, b, 15), 0);
    sl_batch *bt;
    cr_assert_eq(sl_batch_create(&bt, m, NULL), 0, "%s", sl_last_error());
    cr_assert_eq(sl_batch_add(bt, sa), 0);
    cr_assert_eq(sl_batch_add(bt, sb), 0);
    cr_assert_eq(sl_batch_accept(bt, (const int32_t[]){ a[15], b[15] }), 0, "%s", sl_batch_errmsg(bt));
    float *wa = fed_logits(m, a, 16, (const int[]){ 15, 0 }), *wb = fed_logits(m, b, 16, (const int[]){ 15, 0 });
    cr_assert_eq(memcmp(wa, sl_session_logits(sa), NV * sizeof *wa), 0);
    cr_assert_eq(memcmp(wb, sl_session_logits(sb), NV * sizeof *wb), 0);
    free(wa); free(wb);
    sl_batch_destroy(bt);
    sl_session_destroy(sb);
    st_close(sa, m);
}

/* ---- prompts: the chunked delta rule, snapshots for prefix reuse ---------- */
#define NBC 16   /* passes of this many rows run the delta rule chunkwise (SL_GDN_CHUNK_MIN) */

static float *eval_logits(sl_model *m, const int32_t *ids, int n, const int *cuts)
{
    sl_session *s = st_session(m, true);
    float *l = malloc((size_t)n * NV * sizeof *l);
    cr_assert_not_null(l);
    int at = 0;
    for (int i = 0;; i++) {
        const int to = cuts && cuts[i] ? cuts[i] : n;
        cr_assert_eq(sl_session_eval(s, ids + at, to - at, l + (size_t)at * NV), 0, "%s", sl_session_errmsg(s));
        if ((at = to) == n) break;
    }
    sl_session_destroy(s);
    return l;
}

/* The first layer's (Gated DeltaNet) output rows over a prompt of n in one
 * pass, the delta rule chunkwise (chunk_min 16) or token by token; x gets
 * them, [n][n_embd]. */
static void gdn_rows(sl_model *m, int32_t chunk_min, const int32_t *ids, int n, float *x)
{
    sl_session *s = st_session(m, true);
    m->fw.gdn_chunk_min = chunk_min;
    cr_assert_eq(sl_forward_embed(&m->fw, ids, n, x), 0, "%s", sl_last_error());
    cr_assert_eq(sl_forward_layers(&m->fw, &s->kv, 0, 1, 0, x, n), 0, "%s", sl_last_error());
    sl_session_destroy(s);
}

/* A prompt of 100 through the first recurrent layer in one pass: chunkwise
 * (64 + 36 tokens) against token by token, the same rows otherwise. Each
 * row agrees to rounding: max 1e-5 of the row's RMS (measured 1.6e-6; a
 * wrong decay or correction moves them by a good part of it). Deeper
 * layers and logits are no measure: this random MoE's routing turns a
 * rounding into a jump (0.04 sd at the logits here).
 * And the chunked prompt is reproducible bitwise in its own passes. */
Test(qwen35, chunked_prompt_matches_recurrence, .timeout = 60)
{
    sl_model *m = st_open_ctx(Q35, 128, 128);
    enum { N = 100, E = 256 };
    cr_assert_eq(m->d.n_embd, E);
    int32_t ids[N];
    st_some_ids(ids, N, NV, 31);
    float *a = malloc(N * E * sizeof *a), *b = malloc(N * E * sizeof *b);
    cr_assert(a && b);
    gdn_rows(m, 16, ids, N, a);
    gdn_rows(m, INT32_MAX, ids, N, b);
    double worst = 0;
    for (int t = 0; t < N; t++) {
        double ss = 0, dmax = 0;
        for (int i = 0; i < E; i++) {
            ss += (double)b[t * E + i] * b[t * E + i];
            dmax = fmax(dmax, fabs(a[t * E + i] - b[t * E + i]));
        }
        worst = fmax(worst, dmax / sqrt(ss / E));
    }
    cr_log_info("chunked vs token by token: worst max |d| %.3g of the row's RMS", worst);
    cr_assert_lt(worst, 1e-5, "chunked delta rule: rows %.3g RMS from the recurrence", worst);
    free(a); free(b);
    sl_model_close(m);
    sl_model *m64 = st_open_ctx(Q35, 128, 64);
    float *c = eval_logits(m64, ids, N, NULL), *d = eval_logits(m64, ids, N, (const int[]){ 64, 0 });
    cr_assert_eq(memcmp(c, d, (size_t)N * NV * sizeof *c), 0, "chunked prompt not reproducible in its own passes");
    free(c); free(d);
    sl_model_close(m64);
}

/* A prompt cache of a chunkwise prefix: restoring it and going on gives
 * bitwise the logits of going on from the computed one. */
Test(qwen35, prompt_cache_chunked)
{
    char path[256];
    tmp_path(path, sizeof path, "pcchunk");
    sl_model *m = st_open_ctx(Q35, 128, 32);
    int32_t ids[56];
    st_some_ids(ids, 56, NV, 32);
    sl_session *s = st_session(m, true), *r = st_session(m, true);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 48), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_save(s, path), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_feed_tokens(s, ids + 48, 8), 0);
    int32_t n_reused = -1;
    cr_assert_eq(sl_session_load_prefix(r, path, ids, 56, &n_reused), 0, "%s", sl_session_errmsg(r));
    cr_assert_eq(n_reused, 48);
    cr_assert_eq(sl_session_feed_tokens(r, ids + 48, 8), 0, "%s", sl_session_errmsg(r));
    cr_assert_eq(memcmp(sl_session_logits(s), sl_session_logits(r), NV * sizeof(float)), 0);
    unlink(path);
    sl_session_destroy(r);
    st_close(s, m);
}

static sl_model *open_snaps(int32_t n_snaps)
{
    sl_model_params mp = st_params(256, NBC, 2);
    mp.rec_snapshots = n_snaps;
    return st_open(Q35, &mp);
}

/* A shared start (a system prompt of 40) then another user turn: the
 * snapshot at 32 (the last n_batch boundary in it) is restored, and the
 * rest fed gives bitwise the logits of a fresh prefill — after the first
 * request also decoded tokens. Without snapshots nothing is kept. */
Test(qwen35, prefix_snapshot_shared_start, .timeout = 60)
{
    sl_model *m = open_snaps(4), *m0 = open_snaps(0);
    int32_t a[70], b[90], tok;
    st_some_ids(a, 70, NV, 33);
    st_some_ids(b, 90, NV, 34);
    memcpy(b, a, 40 * sizeof *a);
    float *fresh = fed_logits(m, b, 90, NULL);
    sl_session *s = st_session(m, true), *s0 = st_session(m0, true);
    cr_assert_eq(sl_session_feed_tokens(s, a, 70), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_feed_tokens(s0, a, 70), 0, "%s", sl_session_errmsg(s0));
    for (int i = 0; i < 5; i++) cr_assert_eq(sl_session_step(s, &tok), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_prefix_reusable(s0, b, 90), 0);
    cr_assert_eq(sl_session_prefix_reusable(s, b, 90), 32);
    cr_assert_eq(sl_session_keep_prefix(s, b, 90), 32);
    cr_assert_eq(sl_session_feed_tokens(s, b + 32, 58), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(memcmp(fresh, sl_session_logits(s), NV * sizeof *fresh), 0, "restored snapshot differs");
    /* the same prompt again: fresh up to 80, snapshots at 32 and 64 (the
     * four at 16 .. 64 thinned when 80 came) */
    cr_assert_eq(sl_session_keep_prefix(s, b, 90), 64);
    cr_assert_eq(sl_session_feed_tokens(s, b + 64, 26), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(memcmp(fresh, sl_session_logits(s), NV * sizeof *fresh), 0);
    free(fresh);
    sl_session_destroy(s0);
    sl_model_close(m0);
    st_close(s, m);
}

/* At most rec_snapshots are kept, spread over the prompt (every other one
 * goes when full), and they count in the session's reserve. */
Test(qwen35, prefix_snapshot_bounded, .timeout = 60)
{
    sl_model *m = open_snaps(2), *m0 = open_snaps(0);
    sl_model_info i2, i0;
    cr_assert_eq(sl_model_get_info(m, &i2), 0);
    cr_assert_eq(sl_model_get_info(m0, &i0), 0);
    int32_t ids[140];
    st_some_ids(ids, 140, NV, 35);
    sl_session *s = st_session(m, true);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 128), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(i2.kv_bytes - i0.kv_bytes, 2 * sl_kv_rec_total(&s->kv));
    cr_assert_eq(s->snap_n, 2);
    cr_assert_eq(s->snap_pos[0], 64);
    cr_assert_eq(s->snap_pos[1], 128);
    int32_t other[140];
    memcpy(other, ids, sizeof other);
    other[100] ^= 1;   /* shares 100: the snapshot at 64 */
    float *fresh = fed_logits(m, other, 140, NULL);
    cr_assert_eq(sl_session_keep_prefix(s, other, 140), 64);
    cr_assert_eq(s->snap_n, 1, "snapshots past the kept prefix are dropped");
    cr_assert_eq(sl_session_feed_tokens(s, other + 64, 76), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(memcmp(fresh, sl_session_logits(s), NV * sizeof *fresh), 0);
    free(fresh);
    sl_model_close(m0);
    st_close(s, m);
}
