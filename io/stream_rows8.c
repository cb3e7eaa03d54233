/* Matrices packed by rows of eight (quant/quant_rows8.c) where their data
 * stays in memory: resident mode's buffer and the units stream mode pins.
 * The caller's pick (sl_stream_config.rows8) is asked during open only, so a
 * pinned unit keeps its picks: unpinned, it is read plain into slots (its
 * views lose the flag); pinned again, it is packed again. */
#include "stream_core.h"
#include "stream_rows8.h"
#include "../gguf/base/sl_internal.h"
#include "../quant/quant.h"

#include <stdlib.h>

bool sl_stream_rows8_wanted(const sl_stream *s, const sl_stream_tensor *t)
{
    return s->cfg.rows8 && (t->n_dims == 2 || t->n_dims == 3) && sl_quant_rows8_supported((int)t->type) &&
           t->ne[1] % 8 == 0 && s->cfg.rows8(s->cfg.rows8_ctx, t) != 0;
}

int sl_stream_rows8_pack(sl_stream_tensor *t, uint8_t *data, const char *where)
{
    const int type = sl_quant_base_type((int)t->type);
    int rc = sl_quant_rows8_pack(type, data, (int64_t)(t->ne[1] * (t->n_dims == 3 ? t->ne[2] : 1)),
                                 (int64_t)t->ne[0]);
    if (rc) return sl_err_set(rc, "%s: packing '%s' by rows of eight failed", where, t->name);
    t->type = (uint32_t)type | SL_GGML_ROWS8;
    return 0;
}

int sl_stream_rows8_unit(sl_stream *s, sl_unit *un, const uint8_t *base, const char *where)
{
    for (uint32_t i = 0; i < un->n_tensors; i++) {
        sl_stream_tensor *t = &un->tensors[i];
        bool pick = s->cfg.rows8 ? sl_stream_rows8_wanted(s, t) : un->rows8 && un->rows8[i];
        if (!pick) continue;
        if (!un->rows8 && !(un->rows8 = calloc(un->n_tensors, sizeof *un->rows8)))
            return sl_err_set(SL_ENOMEM, "streamer: out of memory (rows8 picks)");
        un->rows8[i] = true;
        int rc = sl_stream_rows8_pack(t, (uint8_t *)sl_unit_tensor_at(un, i, base), where);
        if (rc) return rc;
    }
    return 0;
}

void sl_stream_rows8_unpin(sl_unit *un)
{
    for (uint32_t i = 0; i < un->n_tensors; i++)
        un->tensors[i].type = (uint32_t)sl_quant_base_type((int)un->tensors[i].type);
}
