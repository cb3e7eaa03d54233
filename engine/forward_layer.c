/* One layer of the forward pass: its blocks by kind (model.h), each
 * pre-norm -> block -> optional post-norm -> residual add. Softmax
 * attention (biases, q/k norms, rope, q scale, sliding window, sinks, the
 * KV cache's types and bases); latent attention (forward_mla.c); the gated
 * FFN (SiLU / GELU, fused gate|up); the MoE FFN (forward_moe.c). A new block
 * kind is a function here and a case
 * in sl_forward_layer. */
#include "forward_layer.h"

#include <math.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"
#include "forward_gdn.h"
#include "forward_mla.h"
#include "forward_moe.h"
#include "forward_ops.h"
#include "forward_ple.h"
#include "forward_qknorm.h"

/* xn = rmsnorm(src) * w over n rows */
static void norm_rows(sl_forward *f, float *xn, const float *src, const float *w, int32_t n)
{
    const int32_t E = f->d->n_embd;
    for (int32_t i = 0; i < n; i++)
        f->k->rmsnorm(xn + (int64_t)i * E, src + (int64_t)i * E, w, E, f->d->rms_eps);
}

/* A block's end: its output rows (f->xn) RMS-normed by post (if any), then
 * added to the residual stream x. */
static void block_out(sl_forward *f, const sl_stream_tensor *post, int32_t n)
{
    if (post) SL_TIMED(f, SL_PROF_NORM, 0, norm_rows(f, f->xn, f->xn, post->data, n));
    SL_TIMED(f, SL_PROF_ADD, 0, f->k->add(f->x, f->x, f->xn, (int64_t)n * f->d->n_embd));
}

/* A block's start: xn = its pre-norm (tensor `name`) of x. */
static int block_in(sl_forward *f, const sl_stream_view *v, int32_t l, const char *name, int32_t n)
{
    const sl_stream_tensor *w;
    int rc = sl_forward_find(v, l, name, &w);
    if (!rc) SL_TIMED(f, SL_PROF_NORM, 0, norm_rows(f, f->xn, f->x, w->data, n));
    return rc;
}

/* ---- attention blocks ------------------------------------------------------ */

/* A block's head dim, kv heads and the widths of its q and k/v rows; the
 * Walsh-Hadamard blocks of a quantized cache's K / V basis for heads of hd
 * (kv.h; llama.cpp keeps a cache per head dim: a narrower head rotates by
 * its own size, not the cache row's). */
typedef struct attn_dims { int32_t hd, nkv, qd, kd, rot_k, rot_v; } attn_dims;

static attn_dims dims_of(const sl_model_desc *d, const sl_attn_block *b)
{
    attn_dims a;
    a.hd = b->head_dim > 0 ? b->head_dim : d->head_dim;
    a.nkv = b->n_head_kv > 0 ? b->n_head_kv : d->n_head_kv;
    a.qd = d->n_head * a.hd;
    a.kd = a.nkv * a.hd;
    return a;
}

/* The weights of a softmax attention block (a fused attn_qkv split into its
 * q, k, v row blocks); the optional ones NULL when the block has none (k, v
 * and the k norm of a block that reads another layer's cache). */
typedef struct attn_w {
    const sl_stream_tensor *q, *k, *v, *o, *bq, *bk, *bv, *bo, *nq, *nk, *sinks, *post;
    sl_stream_tensor part[3];
} attn_w;

static int attn_weights(const sl_attn_block *b, attn_dims dm, const sl_stream_view *v, int32_t l, attn_w *w)
{
    const sl_stream_tensor *qkv;
    int rc;
    memset(w, 0, sizeof *w);
    if ((rc = sl_forward_find(v, l, "attn_output.weight", &w->o))) return rc;
    if (b->kv_shared) {
        if ((rc = sl_forward_find(v, l, "attn_q.weight", &w->q))) return rc;
    } else if (b->fused_qkv && !b->out_gate) {
        if ((rc = sl_forward_find(v, l, "attn_qkv.weight", &qkv)) ||
            (rc = sl_forward_split_rows(l, qkv, (int64_t[]){ dm.qd, dm.kd, dm.kd }, 3, w->part)))
            return rc;
        w->q = &w->part[0]; w->k = &w->part[1]; w->v = &w->part[2];
    } else if ((rc = sl_forward_find(v, l, "attn_q.weight", &w->q)) ||
               (rc = sl_forward_find(v, l, "attn_k.weight", &w->k)) ||
               (!b->v_from_k && (rc = sl_forward_find(v, l, "attn_v.weight", &w->v)))) {
        return rc;
    }
    if (b->qkv_bias &&
        ((rc = sl_forward_find(v, l, "attn_q.bias", &w->bq)) ||
         (rc = sl_forward_find(v, l, "attn_k.bias", &w->bk)) ||
         (rc = sl_forward_find(v, l, "attn_v.bias", &w->bv))))
        return rc;
    if (b->qk_norm &&
        ((rc = sl_forward_find(v, l, "attn_q_norm.weight", &w->nq)) ||
         (!b->kv_shared && (rc = sl_forward_find(v, l, "attn_k_norm.weight", &w->nk)))))
        return rc;
    if ((b->o_bias && (rc = sl_forward_find(v, l, "attn_output.bias", &w->bo))) ||
        (b->sinks && (rc = sl_forward_find(v, l, "attn_sinks.weight", &w->sinks))))
        return rc;
    if (b->post_norm && (rc = sl_forward_find(v, l, "post_attention_norm.weight", &w->post))) return rc;
    return 0;
}

static void add_bias(sl_forward *f, const attn_w *w, attn_dims dm, float *qi, float *ki, float *vi)
{
    f->k->add(qi, qi, w->bq->data, dm.qd);
    f->k->add(ki, ki, w->bk->data, dm.kd);
    f->k->add(vi, vi, w->bv->data, dm.kd);
}

/* Per-head norms: q and k with their weights, v without (v_norm). */
static void norm_qkv(sl_forward *f, const sl_attn_block *b, const attn_w *w, attn_dims dm, float *qi, float *ki,
                     float *vi)
{
    const sl_model_desc *d = f->d;
    if (w->nq) sl_forward_qknorm(f->k, qi, d->n_head, dm.hd, w->nq->data, d->rms_eps);
    if (w->nk) sl_forward_qknorm(f->k, ki, dm.nkv, dm.hd, w->nk->data, d->rms_eps);
    if (b->v_norm && !b->kv_shared) sl_forward_qknorm(f->k, vi, dm.nkv, dm.hd, f->ones, d->rms_eps);
}

/* Rope of q and k at pos, their scales, then q, k, v into the cache's bases
 * (k and v only when the block stores them). */
static void rope_qk(sl_forward *f, const sl_attn_block *b, attn_dims dm, int32_t pos, float *qi,
                    float *ki, float *vi)
{
    const sl_model_desc *d = f->d;
    const bool swa = b->window > 0;
    const float *inv_freq = swa ? f->inv_freq_swa : f->inv_freq;
    const int32_t n_rot = swa ? sl_model_n_rot_swa(d) : d->n_rot;
    /* phi3: cos/sin times the LongRoPE attention factor (rope is linear in
     * them: scaling its result is the same product); q_scale: q scaled
     * before the F16 rounding of q, with attention scale 1 */
    const float qmul = d->rope_attn_factor * (b->q_scale > 0 ? b->q_scale : 1.0f);
    const float kmul = d->rope_attn_factor;
    f->k->rope(qi, d->n_head, dm.hd, n_rot, pos, inv_freq, d->rope_neox);
    if (qmul != 1.0f) sl_forward_scale_row(qi, dm.qd, qmul);
    if (dm.rot_k) sl_kv_rotate(qi, dm.qd, dm.rot_k);
    if (b->kv_shared) return;
    f->k->rope(ki, dm.nkv, dm.hd, n_rot, pos, inv_freq, d->rope_neox);
    if (kmul != 1.0f) sl_forward_scale_row(ki, dm.kd, kmul);
    if (dm.rot_k) sl_kv_rotate(ki, dm.kd, dm.rot_k);
    if (dm.rot_v) sl_kv_rotate(vi, dm.kd, dm.rot_v);   /* quantized caches: kv.h */
}

/* A row of n_head_kv heads of hd values spread in place to heads of the
 * cache's head dim, zero-filled, and the cache's further heads zero (the
 * row has room for the cache's kv_dim). */
static void pad_heads(float *row, int32_t n_head_kv, int32_t hd, int32_t cache_hd, int32_t cache_heads)
{
    for (int32_t h = n_head_kv - 1; h >= 0; h--) {
        memmove(row + (int64_t)h * cache_hd, row + (int64_t)h * hd, (size_t)hd * sizeof *row);
        memset(row + (int64_t)h * cache_hd + hd, 0, (size_t)(cache_hd - hd) * sizeof *row);
    }
    memset(row + (int64_t)n_head_kv * cache_hd, 0, (size_t)(cache_heads - n_head_kv) * (size_t)cache_hd * sizeof *row);
}

/* One token's q, k, v rows (row i of the pass) at pos, then k and v stored
 * in layer l of kv (in the cache's types) unless the block reads another
 * layer's cache. */
static void attn_row(sl_forward *f, const sl_attn_block *b, const attn_w *w, attn_dims dm, sl_kv *kv, int32_t l,
                     int32_t pos, int64_t i)
{
    const sl_model_desc *d = f->d;
    float *qi = f->q + i * dm.qd, *ki = f->kx + i * d->kv_dim, *vi = f->vx + i * d->kv_dim;
    if (b->v_from_k) memcpy(vi, ki, (size_t)dm.kd * sizeof *vi);   /* before k's norm and rope */
    if (w->bq) SL_TIMED(f, SL_PROF_ROPE, 0, add_bias(f, w, dm, qi, ki, vi));
    if (w->nq || b->v_norm) SL_TIMED(f, SL_PROF_NORM, 0, norm_qkv(f, b, w, dm, qi, ki, vi));
    SL_TIMED(f, SL_PROF_ROPE, 0, rope_qk(f, b, dm, pos, qi, ki, vi));
    if (b->kv_shared) return;
    if (dm.hd < kv->head_dim || dm.nkv < kv->n_head_kv) {
        pad_heads(ki, dm.nkv, dm.hd, kv->head_dim, kv->n_head_kv);
        pad_heads(vi, dm.nkv, dm.hd, kv->head_dim, kv->n_head_kv);
    }
    SL_TIMED(f, SL_PROF_KV, 0, sl_kv_store(kv, f->k, l, pos, ki, vi));
}

/* A gated attention's projection rows (f->rec_buf) hold per head q then
 * its output gate: the q halves into f->q, the gates stay. */
static void gate_split(sl_forward *f, int32_t n)
{
    const int32_t HD = f->d->head_dim, QD = f->d->q_dim;
    for (int64_t i = 0; i < n; i++)
        for (int32_t h = 0; h < f->d->n_head; h++)
            memcpy(f->q + i * QD + (int64_t)h * HD, f->rec_buf + i * 2 * QD + (int64_t)h * 2 * HD,
                   (size_t)HD * sizeof(float));
}

/* The attention output times sigmoid(gate), per head and value. */
static void gate_apply(sl_forward *f, int32_t n)
{
    const int32_t HD = f->d->head_dim, QD = f->d->q_dim;
    for (int64_t i = 0; i < n; i++)
        for (int32_t h = 0; h < f->d->n_head; h++) {
            const float *g = f->rec_buf + i * 2 * QD + (int64_t)h * 2 * HD + HD;
            float *o = f->att + i * QD + (int64_t)h * HD;
            for (int32_t j = 0; j < HD; j++) o[j] *= 1.0f / (1.0f + expf(-g[j]));
        }
}

/* Softmax GQA/MHA attention of layer l over the rows of sq[0..ns), each
 * sequence against its own cache (layer l's, or the one it shares); x += its
 * output. */
static int attn_softmax(sl_forward *f, const sl_forward_seq *sq, int32_t ns, int32_t l, const sl_attn_block *b,
                        const sl_stream_view *v, int32_t n)
{
    const sl_model_desc *d = f->d;
    attn_dims dm = dims_of(d, b);
    const int32_t kl = sl_model_kv_layer(d, l);
    attn_w w;
    int rc = attn_weights(b, dm, v, l, &w);
    if (rc) return rc;
    const sl_kv *kv0 = sq[0].kv;   /* every sequence's cache has these types */
    dm.rot_k = kv0->rot_k ? sl_kv_rot_size(kv0->type_k, dm.hd, 0) : 0;
    dm.rot_v = kv0->rot_v ? sl_kv_rot_size(kv0->type_v, dm.hd, 1) : 0;
    if (dm.hd < kv0->head_dim && (kv0->type_k != SL_GGML_F16 || kv0->type_v != SL_GGML_F16) && dm.hd % 32)
        return sl_err_set(SL_EUNSUPPORTED, "layer %d: head dim %d below the cache's %d: a quantized KV cache needs "
                          "it a multiple of 32", l, dm.hd, kv0->head_dim);
    /* a sliding-window layer's ring keeps only the window (kv.h) */
    for (int32_t s = 0; s < ns && !rc && !b->kv_shared; s++)
        SL_TIMED(f, SL_PROF_KV, 0, rc = sl_kv_ring_advance(sq[s].kv, l, sq[s].kv->n_past, sq[s].n, b->window));
    if (rc || (rc = block_in(f, v, l, "attn_norm.weight", n))) return rc;
    sl_act_cache c = { 0 };
    if (b->kv_shared) rc = sl_forward_mm(f, &c, f->xn, n, w.q, f->q, dm.qd, SL_PROF_MV_Q);
    else rc = sl_forward_mm_fused(f, &c, f->xn, n, b->v_from_k ? 2 : 3,   /* v_from_k: q, k */
                                  (const sl_stream_tensor *[]){ w.q, w.k, w.v },
                                  (float *[]){ b->out_gate ? f->rec_buf : f->q, f->kx, f->vx },
                                  (int64_t[]){ b->out_gate ? 2 * dm.qd : dm.qd, d->kv_dim, d->kv_dim },
                                  (int[]){ SL_PROF_MV_Q, SL_PROF_MV_K, SL_PROF_MV_V }, SL_PROF_MV_QKV);
    if (rc) return rc;
    if (b->out_gate) SL_TIMED(f, SL_PROF_ROPE, 0, gate_split(f, n));
    for (int32_t s = 0, i = 0; s < ns; s++)
        for (int32_t j = 0; j < sq[s].n; j++, i++) attn_row(f, b, &w, dm, sq[s].kv, l, sq[s].kv->n_past + j, i);
    for (int32_t s = 0, i = 0; s < ns; i += sq[s].n, s++) {
        const sl_kv *kv = sq[s].kv;
        sl_attn a = {
            .q = f->q + (int64_t)i * dm.qd, .q_stride = dm.qd,
            .k = sl_kv_k(kv, kl, 0, kv->base[kl]), .v = sl_kv_v(kv, kl, 0, kv->base[kl]), .kv_stride = kv->head_dim,
            .out = f->att + (int64_t)i * dm.qd, .out_stride = dm.qd,
            .n_q = sq[s].n, .n_head = d->n_head, .n_head_kv = dm.nkv, .head_dim = dm.hd,
            .pos0 = kv->n_past - kv->base[kl], .scale = b->q_scale > 0 ? 1.0f : 1.0f / sqrtf((float)dm.hd),
            .kv_head_stride = sl_kv_head_stride(kv, kl), .window = b->window,
            .type_k = kv->type_k, .type_v = kv->type_v, .sinks = w.sinks ? w.sinks->data : NULL,
        };
        SL_TIMED(f, SL_PROF_ATTN, 0, rc = sl_kern_attention(f->k, f->pool, &a, f->attn_scratch));
        if (rc) return sl_err_set(rc, "layer %d: attention failed", l);
        if (dm.rot_v)   /* back from V's basis */
            SL_TIMED(f, SL_PROF_ROPE, 0,
                     sl_kv_rotate(f->att + (int64_t)i * dm.qd, (int64_t)sq[s].n * dm.qd, dm.rot_v));
    }
    if (b->out_gate) SL_TIMED(f, SL_PROF_ACT, 0, gate_apply(f, n));
    if ((rc = sl_forward_mm(f, &c, f->att, n, w.o, f->xn, d->n_embd, SL_PROF_MV_O))) return rc;
    if (w.bo)
        for (int32_t i = 0; i < n; i++)
            f->k->add(f->xn + (int64_t)i * d->n_embd, f->xn + (int64_t)i * d->n_embd, w.bo->data, d->n_embd);
    block_out(f, w.post, n);
    return 0;
}

/* Gated DeltaNet (forward_gdn.c): x += its output. */
static int attn_recurrent(sl_forward *f, const sl_forward_seq *sq, int32_t ns, int32_t l, const sl_stream_view *v,
                          int32_t n)
{
    int rc = block_in(f, v, l, "attn_norm.weight", n);
    if (!rc) rc = sl_forward_gdn(f, sq, ns, l, v, n);
    if (!rc) block_out(f, NULL, n);
    return rc;
}

/* ---- FFN blocks -------------------------------------------------------------- */

/* Dense gated FFN: xn = down(act(gate . xn) * (up . xn)) with xn the
 * pre-norm of x, act SiLU or GELU; a fused ffn_up holds gate | up (not in
 * a dense_moe block: there it names the experts). */
static int gated_core(sl_forward *f, int32_t l, const sl_ffn_block *b, const sl_stream_view *v, int32_t n)
{
    const int32_t FF = b->n_ff > 0 ? b->n_ff : f->d->n_ff;
    const sl_stream_tensor *wg = NULL, *wu, *wd;
    sl_stream_tensor part[2];
    int rc;
    if ((rc = sl_forward_find(v, l, "ffn_up.weight", &wu)) ||
        (rc = sl_forward_find(v, l, "ffn_down.weight", &wd)))
        return rc;
    if (b->fused_gate_up && !b->dense_moe) {
        if ((rc = sl_forward_split_rows(l, wu, (int64_t[]){ FF, FF }, 2, part))) return rc;
        wg = &part[0]; wu = &part[1];   /* the gate half comes first */
    } else if ((rc = sl_forward_find(v, l, "ffn_gate.weight", &wg))) {
        return rc;
    }
    if ((rc = block_in(f, v, l, sl_ffn_norm_name(b), n))) return rc;
    sl_act_cache c = { 0 };
    if ((rc = sl_forward_mm_fused(f, &c, f->xn, n, 2, (const sl_stream_tensor *[]){ wg, wu },
                                  (float *[]){ f->gate, f->up }, (int64_t[]){ FF, FF },
                                  (int[]){ SL_PROF_MV_GATE, SL_PROF_MV_UP }, SL_PROF_MV_GATE_UP)))
        return rc;
    void (*act)(float *, const float *, const float *, int64_t) =
        b->act == SL_ACT_GELU ? f->k->gelu_mul : f->k->silu_mul;
    SL_TIMED(f, SL_PROF_ACT, 0, act(f->gate, f->gate, f->up, (int64_t)n * FF));
    return sl_forward_mm(f, &c, f->gate, n, wd, f->xn, f->d->n_embd, SL_PROF_MV_DOWN);
}

/* x += post_norm(the gated FFN of x). */
static int ffn_gated(sl_forward *f, int32_t l, const sl_ffn_block *b, const sl_stream_view *v, int32_t n)
{
    const sl_stream_tensor *post = NULL;
    int rc;
    if ((b->post_norm && (rc = sl_forward_find(v, l, "post_ffw_norm.weight", &post))) ||
        (rc = gated_core(f, l, b, v, n)))
        return rc;
    block_out(f, post, n);
    return 0;
}

/* gemma4's MoE block: x += post_ffw_norm(post_ffw_norm_1(dense(ffn_norm x))
 * + post_ffw_norm_2(experts(pre_ffw_norm_2 x))). The experts are routed
 * and requested first; in decode the dense FFN then runs while their reads
 * land (sl_moe_side), otherwise after them, its rows in f->xn while the
 * experts' sum waits in the MoE scratch. */
typedef struct dense_side { int32_t l; const sl_ffn_block *b; const sl_stream_view *v; } dense_side;

static int dense_side_run(sl_forward *f, void *ctx)
{
    const dense_side *c = ctx;
    return gated_core(f, c->l, c->b, c->v, 1);
}

static int ffn_dense_moe(sl_forward *f, int32_t l, const sl_ffn_block *b, const sl_stream_view *v, int32_t n)
{
    const int32_t E = f->d->n_embd;
    const sl_stream_tensor *p1, *p2, *post;
    float *moe;
    int rc;
    if ((rc = sl_forward_find(v, l, "post_ffw_norm_1.weight", &p1)) ||
        (rc = sl_forward_find(v, l, "post_ffw_norm_2.weight", &p2)) ||
        (rc = sl_forward_find(v, l, "post_ffw_norm.weight", &post)) ||
        (rc = block_in(f, v, l, "pre_ffw_norm_2.weight", n)))
        return rc;
    dense_side dc = { l, b, v };
    sl_moe_side side = { dense_side_run, &dc, NULL };
    SL_TIMED(f, SL_PROF_MOE, 0, rc = sl_forward_moe_ffn(f, l, b, v, n, &moe, &side));
    if (rc) return rc;
    if (side.res) memcpy(f->xn, side.res, (size_t)E * sizeof *f->xn);
    else if ((rc = gated_core(f, l, b, v, n))) return rc;
    SL_TIMED(f, SL_PROF_NORM, 0, norm_rows(f, moe, moe, p2->data, n); norm_rows(f, f->xn, f->xn, p1->data, n));
    SL_TIMED(f, SL_PROF_ADD, 0, f->k->add(f->xn, f->xn, moe, (int64_t)n * E));
    block_out(f, post, n);
    return 0;
}

/* Routed experts (forward_moe.c, which adds to x itself). */
static int ffn_moe(sl_forward *f, int32_t l, const sl_ffn_block *b, const sl_stream_view *v, int32_t n)
{
    if (b->dense_moe) return ffn_dense_moe(f, l, b, v, n);
    int rc = block_in(f, v, l, sl_ffn_norm_name(b), n);
    if (!rc) SL_TIMED(f, SL_PROF_MOE, 0, rc = sl_forward_moe_ffn(f, l, b, v, n, NULL, NULL));
    return rc;
}

/* ---- per-layer embedding input ---------------------------------------------- */

/* x += post_norm(proj(GELU(inp_gate . x) * P_l)) with P_l each row's slice
 * (forward_ple.c); x is the residual itself, not normed. */
static int ple_block(sl_forward *f, int32_t l, const sl_stream_view *v, int32_t n)
{
    const int32_t P = f->d->n_embd_ple;
    const sl_stream_tensor *wg, *wp, *post;
    int rc;
    if ((rc = sl_forward_find(v, l, "inp_gate.weight", &wg)) || (rc = sl_forward_find(v, l, "proj.weight", &wp)) ||
        (rc = sl_forward_find(v, l, "post_norm.weight", &post)))
        return rc;
    sl_act_cache c = { 0 };
    if ((rc = sl_forward_mm(f, &c, f->x, n, wg, f->gate, P, SL_PROF_MV_GATE))) return rc;
    for (int32_t i = 0; i < n; i++)
        SL_TIMED(f, SL_PROF_ACT, 0,
                 f->k->gelu_mul(f->gate + (int64_t)i * P, f->gate + (int64_t)i * P, sl_forward_ple_slice(f, i, l), P));
    if ((rc = sl_forward_mm(f, &c, f->gate, n, wp, f->xn, f->d->n_embd, SL_PROF_MV_DOWN))) return rc;
    block_out(f, post, n);
    return 0;
}

/* x *= layer_output_scale (one F32 value). */
static int out_scale(sl_forward *f, int32_t l, const sl_stream_view *v, int32_t n)
{
    const sl_stream_tensor *w;
    int rc = sl_forward_find(v, l, "layer_output_scale.weight", &w);
    const int64_t nx = (int64_t)n * f->d->n_embd;
    if (!rc) SL_TIMED(f, SL_PROF_ADD, 0, sl_forward_scale_row(f->x, nx, *(const float *)w->data));
    return rc;
}

static int ffn_block(sl_forward *f, int32_t l, const sl_ffn_block *b, const sl_stream_view *v, int32_t n)
{
    switch (b->kind) {
    case SL_FFN_GATED: return ffn_gated(f, l, b, v, n);
    case SL_FFN_MOE: return ffn_moe(f, l, b, v, n);
    default: return sl_err_set(SL_EUNSUPPORTED, "layer %d: FFN block kind %d has no forward", l, b->kind);
    }
}

int sl_forward_layer(sl_forward *f, const sl_forward_seq *sq, int32_t ns, int32_t l, const sl_stream_view *v,
                     int32_t n)
{
    const sl_layer_desc *ld = sl_model_layer(f->d, l);
    int rc;
    switch (ld->attn.kind) {
    case SL_ATTN_SOFTMAX: rc = attn_softmax(f, sq, ns, l, &ld->attn, v, n); break;
    case SL_ATTN_MLA:
        if (!(rc = block_in(f, v, l, "attn_norm.weight", n)) && !(rc = sl_forward_mla(f, sq, ns, l, v, n)))
            block_out(f, NULL, n);
        break;
    case SL_ATTN_RECURRENT: rc = attn_recurrent(f, sq, ns, l, v, n); break;
    default:
        rc = sl_err_set(SL_EUNSUPPORTED, "layer %d: attention block kind %d has no forward", l, ld->attn.kind);
    }
    if (rc || (rc = ffn_block(f, l, &ld->ffn, v, n))) return rc;
    if (ld->ple && (rc = ple_block(f, l, v, n))) return rc;
    return ld->out_scale ? out_scale(f, l, v, n) : 0;
}
