/* Decoder forward pass: embedding -> each layer's blocks by kind (the
 * model description's attention and FFN blocks) -> output norm -> lm head,
 * numerically as llama.cpp's CPU backend (activations quantized to the
 * weight's vec_dot_type before each matmul; K and V stored in the cache's
 * types). */
#include "forward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"
#include "forward_gdn.h"
#include "forward_layer.h"
#include "forward_moe.h"
#include "forward_ops.h"
#include "forward_ple.h"
#include "forward_rows.h"

/* Re-states a streamer failure with our context. The message is copied first:
 * it may live in the same thread-local buffer sl_err_set writes. */
static int stream_err(int rc, const sl_stream *st, const char *what, long idx)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", sl_stream_errmsg(st));
    if (!what) return sl_err_set(rc, "%s", msg);
    return sl_err_set(rc, "%s %ld: %s", what, idx, msg);
}

#define A64(x) (((x) + 63) & ~(uint64_t)63)

static int32_t max3(int32_t a, int32_t b, int32_t c)
{
    int32_t m = a > b ? a : b;
    return m > c ? m : c;
}

/* Activation rows are at most 4 bytes per element (F32); quantized types are
 * smaller. Checked against sl_kern_act_bytes at init. */
static uint64_t act_bound(const sl_model_desc *d, int32_t n_batch)
{
    int32_t w = max3(d->n_embd, d->q_dim, d->n_ff);
    w = max3(w, d->n_ff_exp, d->n_ff_shexp);   /* expert widths (0 when dense) */
    w = max3(w, d->ssm_nv * d->ssm_dv, 0);      /* a Gated DeltaNet's output rows */
    return (uint64_t)n_batch * (uint64_t)w * 4 + 4096;
}

/* Floats per row of gate and up: the dense FFN's width; MLA keeps its q
 * LoRA rows in up and its heads' value rows in gate (forward_mla.h). */
static int32_t ff_width(const sl_model_desc *d)
{
    return max3(d->n_ff, d->q_lora_rank, d->n_head * d->mla_v_dim);
}

/* Scratch floats per row of the Gated DeltaNet blocks and of a gated
 * attention's q | gate rows. */
static uint64_t rec_row_floats(const sl_model_desc *d)
{
    uint64_t r = sl_forward_gdn_row_floats(d);
    for (int32_t i = 0; i < d->n_kinds; i++)
        if (d->kind[i].attn.out_gate && 2 * (uint64_t)d->q_dim > r) r = 2 * (uint64_t)d->q_dim;
    return r;
}

uint64_t sl_forward_arena_bytes(const sl_model_desc *d, int32_t n_batch, int32_t n_ctx,
                                int n_threads)
{
    uint64_t B = (uint64_t)n_batch, sz = 0;
    sz += 2 * A64(B * (uint64_t)d->n_embd * 4);          /* x, xn */
    sz += 2 * A64(B * (uint64_t)d->q_dim * 4);           /* q, att */
    sz += 2 * A64(B * (uint64_t)d->kv_dim * 4);          /* kx, vx */
    sz += 2 * A64(B * (uint64_t)ff_width(d) * 4);       /* gate, up */
    sz += A64(act_bound(d, n_batch));
    sz += A64(sl_kern_attn_scratch(n_threads, d->head_dim, n_ctx));
    sz += A64(sl_rows_mem_bytes(sl_gguf_row_bytes((int)d->embd_type, d->n_embd)));   /* embedding rows */
    sz += A64((uint64_t)(d->n_rot / 2) * 4);            /* inv_freq */
    sz += A64((uint64_t)(sl_model_n_rot_swa(d) / 2) * 4);   /* inv_freq_swa */
    sz += A64((uint64_t)d->head_dim * 4);                /* ones (v norm) */
    sz += A64(sl_forward_ple_arena_bytes(d, n_batch));
    sz += A64(sl_forward_moe_arena_bytes(d, n_batch));
    sz += A64(B * rec_row_floats(d) * 4);
    sz += A64(sl_forward_gdn_ws_bytes(d, n_threads));
    return sz + 64;
}

static int check_kernel_types(sl_forward *f)
{
    const sl_gguf *g = sl_stream_gguf(f->st);
    for (int64_t i = 0; i < sl_gguf_n_tensors(g); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (t->n_dims < 2 || !strcmp(t->name, "rope_freqs.weight")) continue;
        if (!strcmp(t->name, "token_embd.weight") && !f->d->tied_output) continue;  /* rows only */
        if (!strcmp(t->name, "per_layer_token_embd.weight")) continue;              /* rows only */
        if (t->type >= SL_GGML_TYPE_COUNT || !f->k->vec_dot[t->type])
            return sl_err_set(SL_EUNSUPPORTED, "tensor '%s': type %s has no %s kernel", t->name,
                              sl_gguf_type_name(t->type) ? sl_gguf_type_name(t->type) : "?",
                              f->k->name);
        size_t need = sl_kern_act_bytes((int)t->type, (int64_t)t->ne[0], f->n_batch);
        if (need > f->act_bytes)
            return sl_err_set(SL_EUNSUPPORTED, "tensor '%s': activation rows need %zu bytes (> %zu)",
                              t->name, need, f->act_bytes);
    }
    return 0;
}

int sl_forward_init(sl_forward *f, const sl_model_desc *d, sl_stream *st, const sl_kern *k,
                    sl_pool *pool, int32_t n_batch, int32_t n_ctx)
{
    memset(f, 0, sizeof *f);
    f->d = d; f->st = st; f->k = k; f->pool = pool;
    f->n_batch = n_batch; f->n_ctx = n_ctx;
    int nth = sl_pool_n_threads(pool);

    /* units: layers first (the NextN blocks last, never acquired), then head chunks */
    int32_t nu = sl_stream_n_units(st), nl = d->n_layer + d->n_layer_nextn;
    f->head_unit0 = nl;
    f->n_head_units = nu - nl;
    if (f->n_head_units < 1)
        return sl_err_set(SL_EFORMAT, "streamer has %d units for %d layers (no lm head)", nu, nl);
    for (int32_t u = 0; u < nu; u++) {
        sl_stream_unit ui;
        int rc = sl_stream_unit_info(st, u, &ui);
        if (rc) return stream_err(rc, st, "stream unit", u);
        bool want_layer = u < nl;
        if ((ui.kind == SL_UNIT_LAYER) != want_layer || (want_layer && ui.layer != u) ||
            (!want_layer && (ui.row_end <= ui.row_begin || ui.row_end > (uint64_t)d->n_vocab)))
            return sl_err_set(SL_EFORMAT, "stream unit %d: unexpected kind %d / layer %d / rows %llu..%llu",
                              u, ui.kind, ui.layer, (unsigned long long)ui.row_begin,
                              (unsigned long long)ui.row_end);
    }
    f->head_name = d->tied_output ? "token_embd.weight" : "output.weight";

    const sl_stream_tensor *on = sl_stream_global(st, "output_norm.weight");
    if (!on || on->type != SL_GGML_F32 || on->ne[0] != (uint64_t)d->n_embd)
        return sl_err_set(SL_ENOENT, "output_norm.weight not available from the streamer");
    f->out_norm = on->data;
    const sl_gguf *g = sl_stream_gguf(st);
    const sl_gguf_tensor *te = sl_gguf_find_tensor(g, "token_embd.weight");
    f->embd_row_bytes = sl_gguf_row_bytes((int)te->type, d->n_embd);
    if (!f->embd_row_bytes || f->embd_row_bytes > (size_t)d->n_embd * 4 + 64)
        return sl_err_set(SL_EUNSUPPORTED, "token_embd.weight: type %u rows not supported", te->type);

    /* arena */
    f->arena_bytes = sl_forward_arena_bytes(d, n_batch, n_ctx, nth);
    f->arena = aligned_alloc(64, A64(f->arena_bytes));
    if (!f->arena)
        return sl_err_set(SL_ENOMEM, "compute arena: cannot allocate %zu bytes", f->arena_bytes);
    char *p = f->arena;
    uint64_t B = (uint64_t)n_batch;
#define CARVE(ptr, bytes) do { ptr = (void *)p; p += A64(bytes); } while (0)
    CARVE(f->x, B * (uint64_t)d->n_embd * 4);
    CARVE(f->xn, B * (uint64_t)d->n_embd * 4);
    CARVE(f->q, B * (uint64_t)d->q_dim * 4);
    CARVE(f->att, B * (uint64_t)d->q_dim * 4);
    CARVE(f->kx, B * (uint64_t)d->kv_dim * 4);
    CARVE(f->vx, B * (uint64_t)d->kv_dim * 4);
    CARVE(f->gate, B * (uint64_t)ff_width(d) * 4);
    CARVE(f->up, B * (uint64_t)ff_width(d) * 4);
    f->act_bytes = act_bound(d, n_batch);
    CARVE(f->act, f->act_bytes);
    CARVE(f->attn_scratch, sl_kern_attn_scratch(nth, d->head_dim, n_ctx));
    const size_t embd_mem = sl_rows_mem_bytes(sl_gguf_row_bytes((int)d->embd_type, d->n_embd));
    CARVE(f->row_buf, embd_mem);
    CARVE(f->inv_freq, (uint64_t)(d->n_rot / 2) * 4);
    CARVE(f->inv_freq_swa, (uint64_t)(sl_model_n_rot_swa(d) / 2) * 4);
    CARVE(f->ones, (uint64_t)d->head_dim * 4);
    if (d->n_embd_ple) CARVE(f->ple, sl_forward_ple_arena_bytes(d, n_batch));
    if (d->n_expert) CARVE(f->moe, sl_forward_moe_arena_bytes(d, n_batch));
    if (rec_row_floats(d)) CARVE(f->rec_buf, B * rec_row_floats(d) * 4);
    if (d->ssm_nv) CARVE(f->gdn_ws, sl_forward_gdn_ws_bytes(d, nth));
    f->gdn_chunk_min = SL_GDN_CHUNK_MIN;
#undef CARVE

    const float *freqs = NULL;
    const char *fname = sl_model_rope_factors_name(d, n_ctx);
    if (fname) {
        const sl_stream_tensor *rf = sl_stream_global(st, fname);
        if (!rf) { sl_forward_free(f); return sl_err_set(SL_ENOENT, "%s not available", fname); }
        freqs = rf->data;
    }
    sl_model_rope_inv_freq(d, d->rope_base, freqs, f->inv_freq);
    if (d->rope_base_swa > 0) sl_model_rope_inv_freq_swa(d, freqs, f->inv_freq_swa);
    for (int32_t i = 0; i < d->head_dim; i++) f->ones[i] = 1.0f;
    int rc = check_kernel_types(f);
    if (!rc) rc = sl_rows_init(&f->embd_rows, st, "token_embd.weight", d->n_embd, f->row_buf, embd_mem);
    if (!rc && d->n_embd_ple) rc = sl_forward_ple_init(f);
    if (rc) { sl_forward_free(f); return rc; }
    const char *fz = getenv("SLUICE_FUSE");   /* the A/B switch of the fused decode matvecs */
    f->fuse = !(fz && !strcmp(fz, "0"));
    f->pg_layer = -1;
    return 0;
}

void sl_forward_free(sl_forward *f)
{
    free(f->arena);
    memset(f, 0, sizeof *f);
}

static int acquire(sl_forward *f, int32_t u, sl_stream_view *v)
{
    int rc;
    SL_TIMED(f, SL_PROF_STREAM, 0, rc = sl_stream_acquire(f->st, u, v));
    if (rc) return stream_err(rc, f->st, NULL, 0);
    return 0;
}

static int release(sl_forward *f, int32_t u)
{
    int rc;
    SL_TIMED(f, SL_PROF_STREAM, 0, rc = sl_stream_release(f->st, u));
    return rc;
}

/* lm head over rows [r0, r0+nr) of f->xn (already normed), chunk by chunk. */
static int head_forward(sl_forward *f, int32_t r0, int32_t nr, float *logits)
{
    const sl_model_desc *d = f->d;
    sl_act_cache c = { 0 };
    for (int32_t h = 0; h < f->n_head_units; h++) {
        int32_t u = f->head_unit0 + h;
        sl_stream_unit ui;
        sl_stream_view v;
        int rc = sl_stream_unit_info(f->st, u, &ui);
        if (rc) return stream_err(rc, f->st, "stream unit", u);
        if ((rc = acquire(f, u, &v))) return rc;
        const sl_stream_tensor *w = sl_stream_view_find(&v, f->head_name);
        uint64_t rows = ui.row_end - ui.row_begin;
        const uint8_t *data = NULL;
        if (w && w->ne[0] == (uint64_t)d->n_embd) {
            size_t rb = sl_gguf_row_bytes(sl_quant_base_type((int)w->type), d->n_embd);
            if (w->ne[1] == rows) data = w->data;
            else if (w->ne[1] == (uint64_t)d->n_vocab) data = (const uint8_t *)w->data + ui.row_begin * rb;
        }
        if (!data) {
            release(f, u);
            return sl_err_set(SL_ESHAPE, "lm head unit %d: tensor '%s' missing or of unexpected shape",
                              u, f->head_name);
        }
        sl_stream_tensor part = *w;
        part.data = data;
        part.ne[1] = rows;
        rc = sl_forward_mm(f, &c, f->xn + (int64_t)r0 * d->n_embd, nr, &part, logits + ui.row_begin, d->n_vocab,
                SL_PROF_MV_HEAD);
        int rr = release(f, u);
        if (rc) return rc;
        if (rr) return stream_err(rr, f->st, NULL, 0);
    }
    return 0;
}

/* x[n][n_embd] = the embedding rows of ids (scaled where the family says). */
static int embed_rows(sl_forward *f, const int32_t *ids, int32_t n, float *x)
{
    const sl_model_desc *d = f->d;
    for (int32_t j = 0; j < n; j++)
        if (ids[j] < 0 || ids[j] >= d->n_vocab)
            return sl_err_set(SL_EINVAL, "token id %d out of range (vocab %d)", ids[j], d->n_vocab);
    int rc;   /* profiled as a row a token, cached or not */
    SL_TIMED(f, SL_PROF_EMBD, (uint64_t)n * f->embd_rows.row_bytes,
             rc = sl_rows_read(&f->embd_rows, f->st, ids, n, x, d->n_embd, d->embd_scale > 0 ? d->embd_scale : 0));
    return rc;
}

/* Layers [first, last) over f->x's n rows, each unit acquired in order. */
static int layers_forward(sl_forward *f, const sl_forward_seq *sq, int32_t ns, int32_t first, int32_t last,
                          int32_t n)
{
    for (int32_t l = first; l < last; l++) {
        sl_stream_view v;
        int rc = acquire(f, l, &v);
        if (rc) return rc;
        rc = sl_forward_layer(f, sq, ns, l, &v, n);
        int rr = release(f, l);
        if (rc) return rc;
        if (rr) return stream_err(rr, f->st, NULL, 0);
    }
    return 0;
}

/* logits = cap * tanh(logit / cap) */
static void softcap(float *logits, int64_t n, float cap)
{
    for (int64_t i = 0; i < n; i++) logits[i] = cap * tanhf(logits[i] / cap);
}

/* lm head over the nr rows of f->xn (normed), then the soft cap. */
static int logits_forward(sl_forward *f, int32_t nr, float *logits)
{
    const sl_model_desc *d = f->d;
    int rc = head_forward(f, 0, nr, logits);
    if (rc) return rc;
    if (d->logit_softcap > 0)
        SL_TIMED(f, SL_PROF_ADD, 0, softcap(logits, (int64_t)nr * d->n_vocab, d->logit_softcap));
    return 0;
}

/* The rows that want logits, output-normed into consecutive rows of xn (row
 * nr <= row i: a row is read before it could be overwritten); their count. */
static int32_t out_norm_rows(sl_forward *f, const sl_forward_seq *sq, int32_t ns)
{
    const int32_t E = f->d->n_embd;
    int32_t nr = 0;
    for (int32_t s = 0, i = 0; s < ns; i += sq[s].n, s++) {
        int32_t r0 = sq[s].mode == SL_LOGITS_ALL ? 0 : sq[s].mode == SL_LOGITS_LAST ? sq[s].n - 1 : sq[s].n;
        for (int32_t r = r0; r < sq[s].n; r++, nr++)
            f->k->rmsnorm(f->xn + (int64_t)nr * E, f->x + (int64_t)(i + r) * E, f->out_norm, E, f->d->rms_eps);
    }
    return nr;
}

/* One pass over the units for the rows of sq[0..ns) (<= n_batch rows in
 * all); logits: for each sequence in order, its last row (LAST) or all its
 * rows (ALL), n_vocab floats each. */
/* The hooks' rows (forward_pass.h) out of x, before the lm head reuses xn. */
static void hook_rows(sl_forward *f, const sl_forward_seq *sq, int32_t ns)
{
    const int32_t E = f->d->n_embd;
    for (int32_t h = 0; h < f->n_hooks; h++)
        for (int32_t s = 0, i = 0; s < ns; i += sq[s].n, s++) {
            if (sq[s].kv != f->hooks[h].kv) continue;
            for (int32_t r = 0; r < sq[s].n; r++)
                f->k->rmsnorm(f->hooks[h].h + (int64_t)r * E, f->x + (int64_t)(i + r) * E, f->out_norm, E,
                              f->d->rms_eps);
        }
}

static int hook_call(sl_forward *f, const sl_forward_seq *sq, int32_t ns)
{
    int rc = 0;
    for (int32_t h = 0; h < f->n_hooks && !rc; h++)
        for (int32_t s = 0; s < ns && !rc; s++)
            if (sq[s].kv == f->hooks[h].kv)
                rc = f->hooks[h].fn(f->hooks[h].ctx, sq[s].ids, f->hooks[h].h, sq[s].n, sq[s].kv->n_past);
    return rc;
}

static int chunk_forward(sl_forward *f, const sl_forward_seq *sq, int32_t ns, int32_t n, float *logits)
{
    const sl_model_desc *d = f->d;
    const int32_t E = d->n_embd;
    int rc;
    for (int32_t s = 0, i = 0; s < ns; i += sq[s].n, s++)
        if ((rc = embed_rows(f, sq[s].ids, sq[s].n, f->x + (int64_t)i * E))) return rc;
    if (d->n_embd_ple && (rc = sl_forward_ple_inputs(f, sq, ns, n))) return rc;
    if ((rc = layers_forward(f, sq, ns, 0, d->n_layer, n))) return rc;
    int32_t nr;
    SL_TIMED(f, SL_PROF_NORM, 0, nr = out_norm_rows(f, sq, ns); hook_rows(f, sq, ns));
    if (nr == 0) {
        /* the lm head is skipped: restart the cyclic schedule at layer 0 */
        sl_stream_prefetch(f->st, 0);
    } else if ((rc = logits_forward(f, nr, logits))) {
        return rc;
    }
    return hook_call(f, sq, ns);
}

/* The cache is indexed by layer, kv head and position, attention scratch by n_ctx. */
static int check_kv(const sl_forward *f, const sl_kv *kv)
{
    const sl_model_desc *d = f->d;
    if (kv->n_layer != d->n_layer || kv->n_head_kv != d->n_head_kv || kv->head_dim != d->head_dim ||
        kv->n_ctx > f->n_ctx)
        return sl_err_set(SL_EINVAL, "kv cache (%d layers, %d kv heads x %d, %d ctx) does not fit "
                          "the model (%d, %d x %d) or the forward pass (%d ctx)", kv->n_layer,
                          kv->n_head_kv, kv->head_dim, kv->n_ctx, d->n_layer, d->n_head_kv,
                          d->head_dim, f->n_ctx);
    return 0;
}

int sl_forward_run_batch(sl_forward *f, const sl_forward_seq *sq, int32_t ns, float *logits)
{
    int64_t n = 0;
    if (ns <= 0) return 0;
    for (int32_t s = 0; s < ns; s++) {
        int rc = check_kv(f, sq[s].kv);
        if (rc) return rc;
        if (sq[s].n < 1 || !sq[s].ids || (sq[s].mode != SL_LOGITS_LAST && sq[s].mode != SL_LOGITS_ALL))
            return sl_err_set(SL_EINVAL, "batch sequence %d: %d rows, mode %d", s, sq[s].n, sq[s].mode);
        for (int32_t t = 0; t < s; t++)
            if (sq[t].kv == sq[s].kv)
                return sl_err_set(SL_EINVAL, "batch sequences %d and %d share a kv cache", t, s);
        if ((int64_t)sq[s].kv->n_past + sq[s].n > sq[s].kv->n_ctx)
            return sl_err_set(SL_ECTX, "batch sequence %d: context full: %d positions used + %d new > n_ctx %d",
                              s, sq[s].kv->n_past, sq[s].n, sq[s].kv->n_ctx);
        n += sq[s].n;
    }
    if (n > f->n_batch)
        return sl_err_set(SL_EINVAL, "batch of %lld rows > n_batch %d", (long long)n, f->n_batch);
    int rc = 0;
    for (int32_t s = 0; s < ns && !rc; s++) rc = sl_kv_rec_begin(sq[s].kv);
    if (rc || (rc = chunk_forward(f, sq, ns, (int32_t)n, logits))) return rc;
    for (int32_t s = 0; s < ns; s++) {
        sq[s].kv->n_past += sq[s].n;
        sl_kv_rec_end(sq[s].kv);
    }
    return 0;
}

int sl_forward_run(sl_forward *f, sl_kv *kv, const int32_t *ids, int32_t n, int mode, float *logits)
{
    if (n <= 0) return 0;
    int rc = check_kv(f, kv);
    if (rc) return rc;
    if ((int64_t)kv->n_past + n > kv->n_ctx)
        return sl_err_set(SL_ECTX, "context full: %d positions used + %d new > n_ctx %d", kv->n_past,
                          n, kv->n_ctx);
    for (int32_t i0 = 0; i0 < n; i0 += f->n_batch) {
        int32_t m = n - i0 < f->n_batch ? n - i0 : f->n_batch;
        bool last = i0 + m == n;
        sl_forward_seq one = { .kv = kv, .ids = ids + i0, .n = m,
                               .mode = mode == SL_LOGITS_ALL ? SL_LOGITS_ALL : (last ? mode : SL_LOGITS_NONE) };
        float *out = mode == SL_LOGITS_ALL ? logits + (int64_t)i0 * f->d->n_vocab : logits;
        if ((rc = sl_kv_rec_begin(kv)) || (rc = chunk_forward(f, &one, 1, m, out))) return rc;
        kv->n_past += m;
        sl_kv_rec_end(kv);
    }
    return 0;
}

/* ---- pipeline stages (sluice.h: sl_session_forward_layers) ---------------- */

int sl_forward_embed(sl_forward *f, const int32_t *ids, int32_t n, float *x)
{
    if (n < 1 || n > f->n_batch || !ids || !x)
        return sl_err_set(SL_EINVAL, "embed: %d rows (1..n_batch %d)", n, f->n_batch);
    return embed_rows(f, ids, n, x);
}

int sl_forward_layers(sl_forward *f, sl_kv *kv, int32_t first, int32_t last, int32_t pos0, float *x, int32_t n)
{
    const sl_model_desc *d = f->d;
    int rc = check_kv(f, kv);
    if (rc) return rc;
    if (d->n_embd_ple)   /* a stage receives x only, not the per-layer inputs */
        return sl_err_set(SL_EUNSUPPORTED, "forward layers: %s per-layer embeddings need the whole pass",
                          d->arch_name);
    if (n < 1 || n > f->n_batch || !x || first < 0 || last > d->n_layer || first >= last)
        return sl_err_set(SL_EINVAL, "forward layers [%d, %d) of %d over %d rows (1..n_batch %d)", first, last,
                          d->n_layer, n, f->n_batch);
    for (int32_t l = first; l < last; l++)
        if (kv->cap[l] == 0 && !sl_kv_rec_layer(kv, l))
            return sl_err_set(SL_EINVAL, "forward layers: layer %d is not one of this stage's", l);
    if (pos0 < 0 || (int64_t)pos0 + n > kv->n_ctx)
        return sl_err_set(SL_ECTX, "context full: positions %d..%d past n_ctx %d", pos0, pos0 + n - 1, kv->n_ctx);
    /* the rows of one sequence: the same pass chunk_forward makes over these
     * layers, at pos0 (the layers read positions from n_past) */
    sl_forward_seq one = { .kv = kv, .n = n, .mode = SL_LOGITS_NONE };
    const size_t bytes = (size_t)n * (size_t)d->n_embd * sizeof(float);
    memcpy(f->x, x, bytes);
    int32_t past = kv->n_past;
    kv->n_past = pos0;
    if (!(rc = sl_kv_rec_begin(kv))) rc = layers_forward(f, &one, 1, first, last, n);
    if (!rc && kv->rec) kv->rec_pos = pos0 + n;   /* this stage's layers moved on */
    kv->n_past = past;
    if (!rc) memcpy(x, f->x, bytes);
    return rc;
}

int sl_forward_head_normed(sl_forward *f, const float *xn, int32_t n, float *logits)
{
    if (n < 1 || n > f->n_batch) return sl_err_set(SL_EINVAL, "lm head: %d rows (1..n_batch %d)", n, f->n_batch);
    if (xn != f->xn) memcpy(f->xn, xn, (size_t)n * (size_t)f->d->n_embd * sizeof *xn);
    return logits_forward(f, n, logits);
}

int sl_forward_head(sl_forward *f, const float *x, float *logits)
{
    const sl_model_desc *d = f->d;
    SL_TIMED(f, SL_PROF_NORM, 0, f->k->rmsnorm(f->xn, x, f->out_norm, d->n_embd, d->rms_eps));
    return logits_forward(f, 1, logits);
}
