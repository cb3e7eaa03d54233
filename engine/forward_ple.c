/* Per-layer embedding inputs, as llama.cpp computes them for gemma4: with
 * E = n_embd, P = n_embd_ple, L = n_layer, for each token
 *   e = its per_layer_token_embd row (L x P values) * sqrt(P),
 *   m = per_layer_model_proj . x / sqrt(E) (x: the scaled token embedding),
 *       each P-slice RMS-normed with per_layer_proj_norm,
 *   inputs = (m + e) / sqrt(2), slice l for layer l. */
#include "forward_ple.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"
#include "../gguf/gguf.h"
#include "../quant/quant.h"
#include "forward_ops.h"

#define A64(x) (((x) + 63) & ~(uint64_t)63)

/* The layout of f->ple: this header, then the buffers it points at. */
typedef struct ple_scratch {
    float *in;                          /* [n_batch][L * P] the inputs */
    float *m;                           /* [n_batch][L * P] the projection */
    void *raw;                          /* one raw per_layer_token_embd row */
    size_t row_bytes;
    int type;                           /* per_layer_token_embd's type */
    const sl_stream_tensor *proj;       /* per_layer_model_proj.weight */
    const float *norm;                  /* per_layer_proj_norm.weight */
} ple_scratch;

static uint64_t lp(const sl_model_desc *d) { return (uint64_t)d->n_layer * (uint64_t)d->n_embd_ple; }

uint64_t sl_forward_ple_arena_bytes(const sl_model_desc *d, int32_t n_batch)
{
    if (!d->n_embd_ple) return 0;
    /* a raw row is at most 4 bytes per value (F32) plus a block's slack */
    return A64(sizeof(ple_scratch)) + 2 * A64((uint64_t)n_batch * lp(d) * 4) + A64(lp(d) * 4 + 256);
}

int sl_forward_ple_init(sl_forward *f)
{
    const sl_model_desc *d = f->d;
    ple_scratch *ps = f->ple;
    char *p = (char *)f->ple + A64(sizeof *ps);
    memset(ps, 0, sizeof *ps);
    ps->in = (float *)p; p += A64((uint64_t)f->n_batch * lp(d) * 4);
    ps->m = (float *)p; p += A64((uint64_t)f->n_batch * lp(d) * 4);
    ps->raw = p;
    const sl_gguf_tensor *t = sl_gguf_find_tensor(sl_stream_gguf(f->st), "per_layer_token_embd.weight");
    ps->proj = sl_stream_global(f->st, "per_layer_model_proj.weight");
    const sl_stream_tensor *nw = sl_stream_global(f->st, "per_layer_proj_norm.weight");
    if (!t || !ps->proj || !nw || nw->type != SL_GGML_F32)
        return sl_err_set(SL_ENOENT, "per-layer embeddings: per_layer_token_embd, per_layer_model_proj or "
                          "per_layer_proj_norm (F32) not available from the streamer");
    ps->type = (int)t->type;
    ps->row_bytes = sl_gguf_row_bytes(ps->type, (int64_t)lp(d));
    if (!ps->row_bytes || ps->row_bytes > lp(d) * 4 + 256)
        return sl_err_set(SL_EUNSUPPORTED, "per_layer_token_embd.weight: type %d rows not supported", ps->type);
    ps->norm = nw->data;
    return 0;
}

const float *sl_forward_ple_slice(const sl_forward *f, int32_t i, int32_t l)
{
    const ple_scratch *ps = f->ple;
    return ps->in + (uint64_t)i * lp(f->d) + (uint64_t)l * (uint64_t)f->d->n_embd_ple;
}

/* e of one token into dst (L x P floats). */
static int token_rows(sl_forward *f, int32_t id, float *dst)
{
    const sl_model_desc *d = f->d;
    ple_scratch *ps = f->ple;
    int rc = sl_stream_read_row(f->st, "per_layer_token_embd.weight", (uint64_t)id, ps->raw, ps->row_bytes);
    if (rc) {   /* copied first: it may live in the buffer sl_err_set writes */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", sl_stream_errmsg(f->st));
        return sl_err_set(rc, "per_layer_token_embd row %d: %s", id, msg);
    }
    if ((rc = sl_quant_dequantize_row(ps->type, ps->raw, dst, (int64_t)lp(d))))
        return sl_err_set(rc, "per_layer_token_embd row %d: cannot dequantize", id);
    sl_forward_scale_row(dst, (int64_t)lp(d), sqrtf((float)d->n_embd_ple));
    return 0;
}

int sl_forward_ple_inputs(sl_forward *f, const sl_forward_seq *sq, int32_t ns, int32_t n)
{
    const sl_model_desc *d = f->d;
    const int64_t LP = (int64_t)lp(d), P = d->n_embd_ple;
    ple_scratch *ps = f->ple;
    int rc;
    for (int32_t s = 0, i = 0; s < ns; i += sq[s].n, s++)
        for (int32_t j = 0; j < sq[s].n; j++) {
            SL_TIMED(f, SL_PROF_EMBD, ps->row_bytes, rc = token_rows(f, sq[s].ids[j], ps->in + (i + j) * LP));
            if (rc) return rc;
        }
    sl_act_cache c = { 0 };
    if ((rc = sl_forward_mm(f, &c, f->x, n, ps->proj, ps->m, LP, SL_PROF_MV_UP))) return rc;
    const float ms = 1.0f / sqrtf((float)d->n_embd), is = 1.0f / sqrtf(2.0f);
    for (int64_t r = 0; r < (int64_t)n * LP; r += P) {
        float *m = ps->m + r, *e = ps->in + r;
        sl_forward_scale_row(m, P, ms);
        f->k->rmsnorm(m, m, ps->norm, P, d->rms_eps);
        for (int64_t k = 0; k < P; k++) e[k] = (m[k] + e[k]) * is;
    }
    return 0;
}
