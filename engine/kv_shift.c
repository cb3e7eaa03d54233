/* Context shift of the KV cache (forward.h: sl_forward_kv_shift), as
 * llama.cpp's: the kept rows after the dropped range move down and their K
 * is rotated by the position change. RoPE is a rotation by pos * theta_i, so
 * rotating a stored K by -n_discard gives the K of its new position (phi3's
 * attention factor scales K after rope and commutes with it). For a
 * quantized K the row is dequantized, rotated in f32 and requantized with the
 * cache's rule (what llama.cpp does too: it casts the quantized K to f32
 * for the rope shift and copies it back; a K stored in the Hadamard basis,
 * kv.h, is taken out of it and back around the rope); an F16 K is rotated in f32 and
 * rounded to F16 again. V rows only move (bytes copied). */
#include <string.h>

#include "../gguf/sl_internal.h"
#include "forward.h"

int sl_forward_kv_shift(sl_forward *f, sl_kv *kv, int32_t n_keep, int32_t n_discard)
{
    const sl_model_desc *d = f->d;
    if (n_keep < 0 || n_discard < 1 || (int64_t)n_keep + n_discard > kv->n_past)
        return sl_err_set(SL_EINVAL, "kv shift: keep %d, discard %d of %d positions", n_keep, n_discard,
                          kv->n_past);
    const int32_t hd = kv->head_dim, n_move = kv->n_past - n_keep - n_discard;
    float *row = f->kx;   /* arena scratch of n_batch * kv_dim >= head_dim floats */
    for (int32_t l = 0; l < kv->n_layer; l++) {
        const float *inv_freq = sl_model_layer_swa(d, l) ? f->inv_freq_swa : f->inv_freq;
        for (int32_t g = 0; g < kv->n_head_kv; g++) {
            for (int32_t j = 0; j < n_move; j++) {
                const int32_t from = n_keep + n_discard + j;
                int rc = sl_quant_dequantize_row(kv->type_k, sl_kv_k(kv, l, g, from), row, hd);
                if (rc) return sl_err_set(rc, "kv shift: layer %d: cannot read a K row", l);
                if (kv->rot_k) sl_kv_rotate(row, hd, kv->rot_k);   /* out of the stored basis */
                f->k->rope(row, 1, hd, d->n_rot, -n_discard, inv_freq, d->rope_neox);
                if (kv->rot_k) sl_kv_rotate(row, hd, kv->rot_k);
                sl_kv_store_row(kv->type_k, f->k, sl_kv_k(kv, l, g, n_keep + j), row, hd);
            }
            memmove(sl_kv_v(kv, l, g, n_keep), sl_kv_v(kv, l, g, n_keep + n_discard),
                    (size_t)n_move * kv->row_v);
        }
    }
    kv->n_past -= n_discard;
    return 0;
}
