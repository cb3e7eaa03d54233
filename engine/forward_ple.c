/* Per-layer embedding inputs, as llama.cpp computes them for gemma4: with
 * E = n_embd, P = n_embd_ple, L = n_layer, for each token
 *   e = its per_layer_token_embd row (L x P values) * sqrt(P),
 *   m = per_layer_model_proj . x / sqrt(E) (x: the scaled token embedding),
 *       each P-slice RMS-normed with per_layer_proj_norm,
 *   inputs = (m + e) / sqrt(2), slice l for layer l. */
#include "forward_ple.h"

#include <math.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"
#include "../gguf/gguf.h"
#include "forward_ops.h"

#define A64(x) (((x) + 63) & ~(uint64_t)63)

/* The layout of f->ple: this header, then the buffers it points at. */
typedef struct ple_scratch {
    float *in;                          /* [n_batch][L * P] the inputs */
    float *m;                           /* [n_batch][L * P] the projection */
    sl_rows rows;                       /* per_layer_token_embd rows (forward_rows.h) */
    const sl_stream_tensor *proj;       /* per_layer_model_proj.weight */
    const float *norm;                  /* per_layer_proj_norm.weight */
} ple_scratch;

static uint64_t lp(const sl_model_desc *d) { return (uint64_t)d->n_layer * (uint64_t)d->n_embd_ple; }

uint64_t sl_forward_ple_arena_bytes(const sl_model_desc *d, int32_t n_batch)
{
    if (!d->n_embd_ple) return 0;
    return A64(sizeof(ple_scratch)) + 2 * A64((uint64_t)n_batch * lp(d) * 4) +
           A64(sl_rows_mem_bytes(sl_gguf_row_bytes((int)d->ple_type, (int64_t)lp(d))));
}

int sl_forward_ple_init(sl_forward *f)
{
    const sl_model_desc *d = f->d;
    ple_scratch *ps = f->ple;
    char *p = (char *)f->ple + A64(sizeof *ps);
    memset(ps, 0, sizeof *ps);
    ps->in = (float *)p; p += A64((uint64_t)f->n_batch * lp(d) * 4);
    ps->m = (float *)p; p += A64((uint64_t)f->n_batch * lp(d) * 4);
    ps->proj = sl_stream_global(f->st, "per_layer_model_proj.weight");
    const sl_stream_tensor *nw = sl_stream_global(f->st, "per_layer_proj_norm.weight");
    if (!ps->proj || !nw || nw->type != SL_GGML_F32)
        return sl_err_set(SL_ENOENT, "per-layer embeddings: per_layer_model_proj or per_layer_proj_norm (F32) "
                          "not available from the streamer");
    ps->norm = nw->data;
    return sl_rows_init(&ps->rows, f->st, "per_layer_token_embd.weight", (int64_t)lp(d), p,
                        sl_rows_mem_bytes(sl_gguf_row_bytes((int)d->ple_type, (int64_t)lp(d))));
}

uint64_t sl_forward_ple_bytes_read(const sl_forward *f)
{
    return f->ple ? ((const ple_scratch *)f->ple)->rows.bytes_read : 0;
}

const float *sl_forward_ple_slice(const sl_forward *f, int32_t i, int32_t l)
{
    const ple_scratch *ps = f->ple;
    return ps->in + (uint64_t)i * lp(f->d) + (uint64_t)l * (uint64_t)f->d->n_embd_ple;
}

int sl_forward_ple_inputs(sl_forward *f, const sl_forward_seq *sq, int32_t ns, int32_t n)
{
    const sl_model_desc *d = f->d;
    const int64_t LP = (int64_t)lp(d), P = d->n_embd_ple;
    ple_scratch *ps = f->ple;
    int rc;
    for (int32_t s = 0, i = 0; s < ns; i += sq[s].n, s++) {   /* e, times sqrt(P); profiled a row a token */
        SL_TIMED(f, SL_PROF_EMBD, (uint64_t)sq[s].n * ps->rows.row_bytes,
                 rc = sl_rows_read(&ps->rows, f->st, sq[s].ids, sq[s].n, ps->in + i * LP, LP, sqrtf((float)P)));
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
