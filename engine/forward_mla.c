/* Multi-head latent attention in the absorbed form llama.cpp 2026-08 uses
 * (../shared/golden/README.md, synth3 "deepseek2"): per row, q (through the
 * q LoRA and its norm, or attn_q) split per head into q_nope and q_rope; the
 * latent kv = attn_kv_a_mqa . h, c = RMSNorm(kv[0:kvl]) and the one shared
 * k_rope = kv[kvl:]; NORM rope (YaRN: model_rope.c) on q_rope and k_rope.
 * The cache row is [c, k_rope] (one kv head); the query row of head h is
 * [k_b_h^T q_nope_h, q_rope_h], so q . row = q_nope . k_nope + q_rope . k_rope
 * without ever forming k_nope; the values are the same rows, of which the
 * first kvl (c) are used: o_h = v_b_h . (sum_t w_t c_t), then attn_output.
 * Every matmul quantizes its input to the weight's vec_dot_type, per head
 * where llama.cpp multiplies per head (k_b, v_b). */
#include "forward_mla.h"

#include <string.h>

#include "../gguf/base/sl_internal.h"
#include "forward_ops.h"

typedef struct mla_w {
    const sl_stream_tensor *qa, *qan, *qb, *kva, *kvan, *kb, *vb, *o;
} mla_w;

static int mla_weights(const sl_model_desc *d, const sl_stream_view *v, int32_t l, mla_w *w)
{
    int rc;
    memset(w, 0, sizeof *w);
    if (d->q_lora_rank) {
        if ((rc = sl_forward_find(v, l, "attn_q_a.weight", &w->qa)) ||
            (rc = sl_forward_find(v, l, "attn_q_a_norm.weight", &w->qan)) ||
            (rc = sl_forward_find(v, l, "attn_q_b.weight", &w->qb)))
            return rc;
    } else if ((rc = sl_forward_find(v, l, "attn_q.weight", &w->qb))) {
        return rc;
    }
    if ((rc = sl_forward_find(v, l, "attn_kv_a_mqa.weight", &w->kva)) ||
        (rc = sl_forward_find(v, l, "attn_kv_a_norm.weight", &w->kvan)) ||
        (rc = sl_forward_find(v, l, "attn_k_b.weight", &w->kb)) ||
        (rc = sl_forward_find(v, l, "attn_v_b.weight", &w->vb)) ||
        (rc = sl_forward_find(v, l, "attn_output.weight", &w->o)))
        return rc;
    return 0;
}

/* y (row stride ldy) = head h's matrix of the 3-D per-head tensor t . the n
 * rows at x (row stride ldx; gathered into tmp when ldx is not the width). */
static int head_mm(sl_forward *f, const sl_stream_tensor *t, int32_t h, const float *x, int64_t ldx, int32_t n,
                   float *tmp, float *y, int64_t ldy, int op)
{
    const int64_t cols = (int64_t)t->ne[0], rows = (int64_t)t->ne[1];
    sl_stream_tensor ht = *t;
    ht.n_dims = 2;
    ht.ne[2] = 1;
    ht.nbytes = sl_gguf_row_bytes((int)t->type, cols) * (uint64_t)rows;
    ht.data = (const char *)t->data + (size_t)h * ht.nbytes;
    if (n > 1 && ldx != cols) {
        for (int32_t i = 0; i < n; i++) memcpy(tmp + (int64_t)i * cols, x + (int64_t)i * ldx, (size_t)cols * 4);
        x = tmp;
    }
    sl_act_cache c = { 0 };
    return sl_forward_mm(f, &c, x, n, &ht, y, ldy, op);
}

/* The first len values of each of n rows (stride ld) RMS-normed by w, in place. */
static void norm_each(sl_forward *f, float *x, int64_t ld, int32_t n, const float *w, int32_t len)
{
    for (int32_t i = 0; i < n; i++) f->k->rmsnorm(x + i * ld, x + i * ld, w, len, f->d->rms_eps);
}

/* Row i of the pass at pos: rope of q_rope (in f->att, per head) and k_rope,
 * the cache row [c, k_rope] stored, q_rope copied after q_abs in f->q. */
static void mla_row(sl_forward *f, sl_kv *kv, int32_t l, int32_t pos, int64_t i)
{
    const sl_model_desc *d = f->d;
    const int32_t H = d->n_head, R = d->n_rot, KD = d->mla_k_dim, KVL = d->kv_lora_rank, HD = d->head_dim;
    float *qb = f->att + i * (int64_t)H * KD, *kr = f->kx + i * (int64_t)HD;
    for (int32_t h = 0; h < H; h++) {
        float *qr = qb + (int64_t)h * KD + (KD - R);
        f->k->rope(qr, 1, R, R, pos, f->inv_freq, false);
        memcpy(f->q + i * (int64_t)d->q_dim + (int64_t)h * HD + KVL, qr, (size_t)R * 4);
    }
    f->k->rope(kr + KVL, 1, R, R, pos, f->inv_freq, false);
    sl_kv_store(kv, f->k, l, pos, kr, NULL);
}

int sl_forward_mla(sl_forward *f, const sl_forward_seq *sq, int32_t ns, int32_t l, const sl_stream_view *v,
                   int32_t n)
{
    const sl_model_desc *d = f->d;
    const int32_t H = d->n_head, KD = d->mla_k_dim, VD = d->mla_v_dim;
    const int32_t KVL = d->kv_lora_rank, HD = d->head_dim, QD = d->q_dim, QL = d->q_lora_rank;
    mla_w w;
    int rc = mla_weights(d, v, l, &w);
    if (rc) return rc;
    /* q rows [n][H * KD] in f->att, the latent rows [n][KVL + R] in f->kx */
    sl_act_cache c = { 0 };
    if (QL) {
        if ((rc = sl_forward_mm_fused(f, &c, f->xn, n, 2, (const sl_stream_tensor *[]){ w.qa, w.kva },
                                      (float *[]){ f->up, f->kx }, (int64_t[]){ QL, HD },
                                      (int[]){ SL_PROF_MV_Q, SL_PROF_MV_K }, SL_PROF_MV_QKV)))
            return rc;
        SL_TIMED(f, SL_PROF_NORM, 0, norm_each(f, f->up, QL, n, w.qan->data, QL));
        sl_act_cache cq = { 0 };
        if ((rc = sl_forward_mm(f, &cq, f->up, n, w.qb, f->att, (int64_t)H * KD, SL_PROF_MV_Q))) return rc;
    } else if ((rc = sl_forward_mm_fused(f, &c, f->xn, n, 2, (const sl_stream_tensor *[]){ w.qb, w.kva },
                                         (float *[]){ f->att, f->kx }, (int64_t[]){ (int64_t)H * KD, HD },
                                         (int[]){ SL_PROF_MV_Q, SL_PROF_MV_K }, SL_PROF_MV_QKV))) {
        return rc;
    }
    SL_TIMED(f, SL_PROF_NORM, 0, norm_each(f, f->kx, HD, n, w.kvan->data, KVL));
    /* q_abs of each head: k_b_h (KVL x nope) . q_nope_h, into the head's row start */
    for (int32_t h = 0; h < H && !rc; h++)
        rc = head_mm(f, w.kb, h, f->att + (int64_t)h * KD, (int64_t)H * KD, n, f->vx, f->q + (int64_t)h * HD, QD,
                     SL_PROF_MV_K);
    if (rc) return rc;
    for (int32_t s = 0, i = 0; s < ns; s++)
        for (int32_t j = 0; j < sq[s].n; j++, i++)
            SL_TIMED(f, SL_PROF_ROPE, 0, mla_row(f, sq[s].kv, l, sq[s].kv->n_past + j, i));
    for (int32_t s = 0, i = 0; s < ns; i += sq[s].n, s++) {
        const sl_kv *kv = sq[s].kv;
        const void *rows = sl_kv_k(kv, l, 0, kv->base[l]);
        sl_attn a = {
            .q = f->q + (int64_t)i * QD, .q_stride = QD,
            .k = rows, .v = rows, .kv_stride = HD,   /* the values: the same rows (c, then k_rope unused) */
            .out = f->att + (int64_t)i * QD, .out_stride = QD,
            .n_q = sq[s].n, .n_head = H, .n_head_kv = 1, .head_dim = HD,
            .pos0 = kv->n_past - kv->base[l], .scale = d->mla_kq_scale,
            .kv_head_stride = sl_kv_head_stride(kv, l),
            .type_k = kv->type_k, .type_v = kv->type_k,
        };
        SL_TIMED(f, SL_PROF_ATTN, 0, rc = sl_kern_attention(f->k, f->pool, &a, f->attn_scratch));
        if (rc) return sl_err_set(rc, "layer %d: attention failed", l);
    }
    /* o_h = v_b_h (VD x KVL) . (the head's weighted c), heads side by side */
    for (int32_t h = 0; h < H && !rc; h++)
        rc = head_mm(f, w.vb, h, f->att + (int64_t)h * HD, QD, n, f->vx, f->gate + (int64_t)h * VD,
                     (int64_t)H * VD, SL_PROF_MV_V);
    if (rc) return rc;
    sl_act_cache co = { 0 };
    return sl_forward_mm(f, &co, f->gate, n, w.o, f->xn, d->n_embd, SL_PROF_MV_O);
}
