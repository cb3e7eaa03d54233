/* The rows8 policy (model_rows8.h): by name and the layer's blocks. Left
 * plain: the token embedding (rows read one at a time), fused matrices whose
 * cuts need not fall on group bounds (attn_qkv, a fused gate|up), MLA and
 * Gated DeltaNet projections (cut per head), routers, and the NextN blocks
 * past n_layer. */
#include <stdio.h>
#include <string.h>

#include "model_rows8.h"

static bool one_of(const char *s, const char *const *names)
{
    for (; *names; names++)
        if (!strcmp(s, *names)) return true;
    return false;
}

int sl_model_rows8_pick(void *ctx, const sl_stream_tensor *t)
{
    const sl_rows8_policy *p = ctx;
    const int type = (int)t->type;
    if (!p || !p->k || type < 0 || type >= SL_GGML_TYPE_COUNT || !p->k->rows8_fast[type]) return 0;
    if (!strcmp(t->name, "output.weight")) return 1;   /* the untied lm head */
    int l, n = 0;
    if (sscanf(t->name, "blk.%d.%n", &l, &n) != 1 || n == 0 || l < 0 || l >= p->d->n_layer) return 0;
    const char *rest = t->name + n;
    const sl_layer_desc *ld = sl_model_layer(p->d, l);
    /* attn_qkv, its fused form, is another name */
    static const char *const attn[] = { "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
                                        NULL };
    if (ld->attn.kind == SL_ATTN_SOFTMAX && one_of(rest, attn)) return 1;
    /* fused: the gate | up halves are cut by rows (ffn_up, ffn_gate_up_exps); down stays whole */
    static const char *const down[] = { "ffn_down.weight", "ffn_down_exps.weight", "ffn_down_shexp.weight", NULL };
    static const char *const gate_up[] = { "ffn_gate.weight", "ffn_up.weight", "ffn_gate_exps.weight",
                                           "ffn_up_exps.weight", "ffn_gate_shexp.weight", "ffn_up_shexp.weight",
                                           NULL };
    if (ld->ffn.kind != SL_FFN_GATED && ld->ffn.kind != SL_FFN_MOE) return 0;
    return one_of(rest, down) || (!ld->ffn.fused_gate_up && one_of(rest, gate_up));
}
