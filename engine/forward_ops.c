/* The ops every block of the forward pass runs: matmuls over activations
 * quantized to the weight's vec_dot_type (one quantized copy per input,
 * timed as SL_PROF_QUANT; decode's matvecs of one input fused into one pool
 * job), a layer's tensors by name, a fused matrix's row blocks. */
#include "forward_ops.h"

#include <string.h>

#include "../gguf/base/sl_internal.h"

static void act_prepare(sl_forward *f, sl_act_cache *c, const float *x, int64_t cols, int64_t rows,
                        int wtype)
{
    int vdt = sl_quant_vec_dot_type(wtype);
    if (c->src == x && c->vdt == vdt && c->cols == cols && c->rows == rows) return;
    SL_TIMED(f, SL_PROF_QUANT, 0, sl_kern_quantize_act(f->k, wtype, x, cols, rows, f->act));
    c->src = x; c->vdt = vdt; c->cols = cols; c->rows = rows;
}

int sl_forward_find(const sl_stream_view *v, int32_t layer, const char *suffix, const sl_stream_tensor **out)
{
    *out = sl_stream_view_find(v, suffix);
    if (!*out) return sl_err_set(SL_ENOENT, "layer %d: tensor '%s' missing from its stream unit",
                                 layer, suffix);
    return 0;
}

int sl_forward_mm(sl_forward *f, sl_act_cache *c, const float *x, int64_t n, const sl_stream_tensor *w,
                  float *y, int64_t ldy, int op)
{
    int64_t cols = (int64_t)w->ne[0], rows = (int64_t)w->ne[1];
    act_prepare(f, c, x, cols, n, (int)w->type);
    int rc;
    SL_TIMED(f, op, (uint64_t)rows * sl_gguf_row_bytes(sl_quant_base_type((int)w->type), cols),
             rc = n == 1 ? sl_kern_matvec(f->k, f->pool, (int)w->type, w->data, rows, cols, f->act, y)
                         : sl_kern_matmul(f->k, f->pool, (int)w->type, w->data, rows, cols, f->act, n, y, ldy));
    if (rc) return sl_err_set(rc, "matmul with '%s' (%lld x %lld, type %u) failed", w->name,
                              (long long)rows, (long long)cols, w->type);
    return 0;
}

int sl_forward_mm_fused(sl_forward *f, sl_act_cache *c, const float *x, int64_t n, int np,
                        const sl_stream_tensor *const *w, float *const *y, const int64_t *ldy,
                        const int *ops, int fused_op)
{
    bool one = f->fuse && n == 1;
    for (int i = 1; i < np && one; i++)
        one = w[i]->ne[0] == w[0]->ne[0] &&
              sl_quant_vec_dot_type((int)w[i]->type) == sl_quant_vec_dot_type((int)w[0]->type);
    if (!one) {
        for (int i = 0; i < np; i++) {
            int rc = sl_forward_mm(f, c, x, n, w[i], y[i], ldy[i], ops[i]);
            if (rc) return rc;
        }
        return 0;
    }
    act_prepare(f, c, x, (int64_t)w[0]->ne[0], 1, (int)w[0]->type);
    sl_mv_part parts[SL_MV_MAX_PARTS];
    uint64_t bytes = 0;
    for (int i = 0; i < np; i++) {
        parts[i] = (sl_mv_part){ .wtype = (int)w[i]->type, .W = w[i]->data, .rows = (int64_t)w[i]->ne[1],
                                 .cols = (int64_t)w[i]->ne[0], .act = f->act, .y = y[i] };
        bytes += w[i]->ne[1] * sl_gguf_row_bytes(sl_quant_base_type((int)w[i]->type), (int64_t)w[i]->ne[0]);
    }
    int rc;
    SL_TIMED(f, fused_op, bytes, rc = sl_kern_matvec_multi(f->k, f->pool, parts, np));
    if (rc) return sl_err_set(rc, "fused matvec with '%s' (%d parts) failed", w[0]->name, np);
    return 0;
}

int sl_forward_split_rows(int32_t layer, const sl_stream_tensor *w, const int64_t *rows, int n,
                          sl_stream_tensor *out)
{
    size_t rb = sl_gguf_row_bytes(sl_quant_base_type((int)w->type), (int64_t)w->ne[0]);
    uint64_t r0 = 0;
    for (int i = 0; i < n; i++) r0 += (uint64_t)rows[i];
    if (!rb || w->ne[1] != r0)
        return sl_err_set(SL_ESHAPE, "layer %d: tensor '%s' has %llu rows, expected %llu", layer, w->name,
                          (unsigned long long)w->ne[1], (unsigned long long)r0);
    for (int i = 0; i < n && (w->type & SL_GGML_ROWS8); i++)   /* packed: cut only between groups */
        if (rows[i] % 8)
            return sl_err_set(SL_ESHAPE, "layer %d: tensor '%s' is packed in rows of eight: cannot cut %lld rows",
                              layer, w->name, (long long)rows[i]);
    r0 = 0;
    for (int i = 0; i < n; i++) {
        out[i] = *w;
        out[i].data = (const uint8_t *)w->data + r0 * rb;
        out[i].ne[1] = (uint64_t)rows[i];
        out[i].nbytes = (uint64_t)rows[i] * rb;
        r0 += (uint64_t)rows[i];
    }
    return 0;
}
