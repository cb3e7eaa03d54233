/* The input projections of the Gated DeltaNet block, in the one row layout
 * forward_gdn.c runs on: qkv [n][2 nk dk + nv dv] (q heads | k heads | v
 * heads), z [n][nv dv], bg [n][2 nv] (raw beta | raw alpha, v head order).
 * Two file layouts give them:
 * - qwen35 / qwen35moe: attn_qkv, attn_gate, ssm_beta, ssm_alpha;
 * - qwen3next (d->ssm_grouped): attn_qkv + attn_gate, or the older fused
 *   ssm_in whose rows come per q/k head g as [q | k | v x r | z x r]
 *   (r = nv / nk); beta and alpha always fused as ssm_ba, per g
 *   [beta x r | alpha x r]. A matrix's rows are whole dot products, so
 *   regrouping the outputs gives the values the split matrices would.
 * In both the v heads of group g are g r .. g r + r - 1 (forward_gdn.c maps
 * them to their q/k head). */
#include "forward_gdn.h"

#include <string.h>

#include "../gguf/base/sl_internal.h"
#include "forward_ops.h"

/* Rows of ssm_in [n][ch + nv dv] (per group q | k | v | z) into qkv and z. */
static void ungroup_qkvz(const sl_model_desc *d, const float *in, int32_t n, float *qkv, float *z)
{
    const int32_t nk = d->ssm_nk, dk = d->ssm_dk, dv = d->ssm_dv, r = d->ssm_nv / d->ssm_nk;
    const int64_t inner = (int64_t)d->ssm_nv * dv, ch = 2 * (int64_t)nk * dk + inner, grp = 2 * (int64_t)dk + 2 * (int64_t)r * dv;
    const size_t kb = (size_t)dk * sizeof(float), vb = (size_t)r * dv * sizeof(float);
    for (int32_t t = 0; t < n; t++) {
        const float *src = in + t * (ch + inner);
        float *x = qkv + t * ch, *zt = z + t * inner;
        for (int32_t g = 0; g < nk; g++, src += grp) {
            memcpy(x + (int64_t)g * dk, src, kb);
            memcpy(x + ((int64_t)nk + g) * dk, src + dk, kb);
            memcpy(x + 2 * (int64_t)nk * dk + (int64_t)g * r * dv, src + 2 * dk, vb);
            memcpy(zt + (int64_t)g * r * dv, src + 2 * dk + (int64_t)r * dv, vb);
        }
    }
}

/* Rows of ssm_ba [n][2 nv] (per group beta x r | alpha x r), in place, into
 * beta | alpha. */
static void ungroup_ba(const sl_model_desc *d, float *bg, int32_t n)
{
    const int32_t nv = d->ssm_nv, r = nv / d->ssm_nk;
    float tmp[2 * 1024];   /* nv <= SL_MAX_SSM_HEADS (arch_gdn.c) */
    for (int32_t t = 0; t < n; t++) {
        float *b = bg + (int64_t)t * 2 * nv;
        for (int32_t h = 0; h < nv; h++) {
            const int32_t g = h / r, j = h % r;
            tmp[h] = b[2 * g * r + j];
            tmp[nv + h] = b[2 * g * r + r + j];
        }
        memcpy(b, tmp, (size_t)2 * nv * sizeof(float));
    }
}

uint64_t sl_forward_gdn_proj_floats(const sl_model_desc *d)
{
    /* the ssm_in rows before they are regrouped */
    return d->ssm_grouped ? 2 * (uint64_t)d->ssm_nk * d->ssm_dk + 2 * (uint64_t)d->ssm_nv * d->ssm_dv : 0;
}

int sl_forward_gdn_proj(sl_forward *f, sl_act_cache *c, const sl_stream_view *v, int32_t l, int32_t n, float *qkv,
                        float *z, float *bg, float *scratch)
{
    const sl_model_desc *d = f->d;
    const int64_t nv = d->ssm_nv, inner = nv * d->ssm_dv, ch = 2 * (int64_t)d->ssm_nk * d->ssm_dk + inner;
    const sl_stream_tensor *wq = NULL, *wz = NULL, *wb, *wa;
    int rc;
    if (!d->ssm_grouped) {
        if ((rc = sl_forward_find(v, l, "attn_qkv.weight", &wq)) || (rc = sl_forward_find(v, l, "attn_gate.weight", &wz)) ||
            (rc = sl_forward_find(v, l, "ssm_beta.weight", &wb)) || (rc = sl_forward_find(v, l, "ssm_alpha.weight", &wa)))
            return rc;
        /* beta and alpha side by side in one row per token: [beta | alpha] */
        return sl_forward_mm_fused(f, c, f->xn, n, 4, (const sl_stream_tensor *[]){ wq, wz, wb, wa },
                                   (float *[]){ qkv, z, bg, bg + nv }, (int64_t[]){ ch, inner, 2 * nv, 2 * nv },
                                   (int[]){ SL_PROF_MV_QKV, SL_PROF_MV_GATE, SL_PROF_MV_Q, SL_PROF_MV_Q },
                                   SL_PROF_MV_QKV);
    }
    if ((rc = sl_forward_find(v, l, "ssm_ba.weight", &wb))) return rc;
    const bool fused = !sl_stream_view_find(v, "attn_qkv.weight");   /* the older ssm_in layout */
    if (fused) {
        if ((rc = sl_forward_find(v, l, "ssm_in.weight", &wq))) return rc;
        rc = sl_forward_mm_fused(f, c, f->xn, n, 2, (const sl_stream_tensor *[]){ wq, wb },
                                 (float *[]){ scratch, bg }, (int64_t[]){ ch + inner, 2 * nv },
                                 (int[]){ SL_PROF_MV_QKV, SL_PROF_MV_Q }, SL_PROF_MV_QKV);
    } else {
        if ((rc = sl_forward_find(v, l, "attn_qkv.weight", &wq)) || (rc = sl_forward_find(v, l, "attn_gate.weight", &wz)))
            return rc;
        rc = sl_forward_mm_fused(f, c, f->xn, n, 3, (const sl_stream_tensor *[]){ wq, wz, wb },
                                 (float *[]){ qkv, z, bg }, (int64_t[]){ ch, inner, 2 * nv },
                                 (int[]){ SL_PROF_MV_QKV, SL_PROF_MV_GATE, SL_PROF_MV_Q }, SL_PROF_MV_QKV);
    }
    if (rc) return rc;
    if (fused) ungroup_qkvz(d, scratch, n, qkv, z);
    ungroup_ba(d, bg, n);
    return 0;
}
