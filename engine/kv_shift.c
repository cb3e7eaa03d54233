/* Context shift of the KV cache, as llama.cpp's: the kept rows after the
 * dropped range move down and their K is rotated by the position change.
 * RoPE is a rotation by pos * theta_i, so rotating a stored K by -n_discard
 * gives the K of its new position (phi3's attention factor scales K after
 * rope and commutes with it). A quantized K is dequantized, taken out of its
 * Hadamard basis (kv.h), rotated in f32, put back and requantized with the
 * cache's rule: what llama.cpp does (cast to f32, rotate back, rope, rotate,
 * copy). An F16 K is rotated in f32 and rounded to F16 again. V rows only
 * move (bytes copied). */
#include <string.h>

#include "../gguf/base/sl_internal.h"
#include "forward.h"

int sl_kv_shift(sl_kv *kv, const sl_kern *k, int32_t n_keep, int32_t n_discard, const sl_kv_rope *r,
                float *row)
{
    if (n_keep < 0 || n_discard < 1 || (int64_t)n_keep + n_discard > kv->n_past)
        return sl_err_set(SL_EINVAL, "kv shift: keep %d, discard %d of %d positions", n_keep, n_discard,
                          kv->n_past);
    if (kv->rec)   /* the state sums the dropped positions: nothing can take them out */
        return sl_err_set(SL_EUNSUPPORTED, "kv shift: the model has recurrent layers, whose state cannot drop "
                          "positions: context shift is not possible (use a larger n_ctx)");
    const int32_t hd = kv->head_dim;
    for (int32_t l = 0; l < kv->n_layer; l++) {
        if (kv->cap[l] == 0) continue;   /* a layer this stage does not hold */
        const float *inv_freq = r->layer_swa && r->layer_swa(r->ctx, l) ? r->inv_freq_swa : r->inv_freq;
        /* in slots: the layer holds positions [base, n_past) (a ring may
         * start after the kept or even the dropped positions) */
        const int32_t base = kv->base[l], held = kv->n_past - base;
        const int32_t s_keep = n_keep - base < 0 ? 0 : n_keep - base;
        const int32_t s_end = n_keep + n_discard - base < 0 ? 0 : n_keep + n_discard - base;
        const int32_t n_move = held - s_end;
        for (int32_t g = 0; g < kv->n_head_kv; g++) {
            for (int32_t j = 0; j < n_move; j++) {
                int rc = sl_quant_dequantize_row(kv->type_k, sl_kv_k(kv, l, g, base + s_end + j), row, hd);
                if (rc) return sl_err_set(rc, "kv shift: layer %d: cannot read a K row", l);
                if (kv->rot_k) sl_kv_rotate(row, hd, kv->rot_k);
                k->rope(row, 1, hd, r->n_rot, -n_discard, inv_freq, r->neox);
                if (kv->rot_k) sl_kv_rotate(row, hd, kv->rot_k);
                sl_kv_store_row(kv->type_k, k, sl_kv_k(kv, l, g, base + s_keep + j), row, hd);
            }
            memmove(sl_kv_v(kv, l, g, base + s_keep), sl_kv_v(kv, l, g, base + s_end),
                    (size_t)n_move * kv->row_v);
        }
        kv->base[l] = base < n_keep ? base : base < n_keep + n_discard ? n_keep : base - n_discard;
    }
    kv->n_past -= n_discard;
    return 0;
}

static bool layer_swa(const void *ctx, int32_t l) { return sl_model_layer_swa(ctx, l); }

int sl_forward_kv_shift(sl_forward *f, sl_kv *kv, int32_t n_keep, int32_t n_discard)
{
    if (kv->type_v == SL_KV_NONE)   /* its rope part sits after c, rotated by NORM pairs */
        return sl_err_set(SL_EUNSUPPORTED, "context shift: not supported for a latent-attention (MLA) cache");
    for (int32_t i = 0; i < f->d->n_kinds; i++)   /* one head dim and rope width for every layer below */
        if ((f->d->kind[i].attn.head_dim > 0 && f->d->kind[i].attn.head_dim != f->d->head_dim) || f->d->n_rot_swa)
            return sl_err_set(SL_EUNSUPPORTED, "kv shift: %s layers of several head dims not supported",
                              f->d->arch_name);
    const sl_kv_rope r = { .n_rot = f->d->n_rot, .neox = f->d->rope_neox, .inv_freq = f->inv_freq,
                           .inv_freq_swa = f->inv_freq_swa, .layer_swa = layer_swa, .ctx = f->d };
    return sl_kv_shift(kv, f->k, n_keep, n_discard, &r, f->kx);   /* kx: >= head_dim floats */
}
