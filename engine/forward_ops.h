/* What the forward pass's files share (forward.c, forward_layer.c,
 * forward_moe.c): matmuls over quantized activations with their profile
 * class, a layer's tensors by name, row blocks of a fused matrix. */
#ifndef SL_ENGINE_FORWARD_OPS_H
#define SL_ENGINE_FORWARD_OPS_H

#include <stdint.h>

#include "forward_pass.h"

/* Quantized copy of activation rows (in f->act), reused by every matrix
 * that reads the same input with the same vec_dot_type (q/k/v; gate/up). */
typedef struct sl_act_cache {
    const float *src;
    int vdt;
    int64_t cols, rows;
} sl_act_cache;

/* Y[n][rows] = x . W^T (x quantized through c); op: its profile class. */
int sl_forward_mm(sl_forward *f, sl_act_cache *c, const float *x, int64_t n, const sl_stream_tensor *w,
                  float *y, int64_t ldy, int op);
/* Decode: the matvecs of one input (q/k/v; gate/up) as one pool job, each
 * row bit for bit that of sl_forward_mm. Taken when f->fuse, n == 1 and
 * every part has the input's length and the same activation type (profiled
 * as fused_op); else one sl_forward_mm per part (as ops[i]). */
int sl_forward_mm_fused(sl_forward *f, sl_act_cache *c, const float *x, int64_t n, int np,
                        const sl_stream_tensor *const *w, float *const *y, const int64_t *ldy,
                        const int *ops, int fused_op);
/* *out = tensor `suffix` of layer `layer`'s view; SL_ENOENT naming it. */
int sl_forward_find(const sl_stream_view *v, int32_t layer, const char *suffix, const sl_stream_tensor **out);
/* Consecutive row blocks of a fused matrix (phi3's attn_qkv, ffn_up) as
 * tensors of their own: each output row is the same dot product either way. */
int sl_forward_split_rows(int32_t layer, const sl_stream_tensor *w, const int64_t *rows, int n,
                          sl_stream_tensor *out);

static inline void sl_forward_scale_row(float *x, int64_t n, float s)
{
    for (int64_t i = 0; i < n; i++) x[i] *= s;
}

#endif
