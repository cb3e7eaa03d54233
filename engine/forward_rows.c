/* Token-table rows on demand (forward_rows.h): repeats within a pass copied,
 * misses read through sl_stream_read_row (from RAM when the table is
 * resident or mapped, else a read of the row from the file). */
#include "forward_rows.h"

#include <stdio.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"
#include "../gguf/gguf.h"
#include "../quant/quant.h"

size_t sl_rows_mem_bytes(size_t row_bytes)
{
    return SL_ROWS_SLOTS * sizeof(int32_t) + SL_ROWS_SLOTS * row_bytes;
}

int sl_rows_init(sl_rows *r, sl_stream *st, const char *name, int64_t n, void *mem, size_t mem_bytes)
{
    memset(r, 0, sizeof *r);
    const sl_gguf_tensor *t = sl_gguf_find_tensor(sl_stream_gguf(st), name);
    if (!t) return sl_err_set(SL_ENOENT, "%s not available from the streamer", name);
    r->name = name;
    r->type = (int)t->type;
    r->n = n;
    r->row_bytes = sl_gguf_row_bytes(r->type, n);
    if (!r->row_bytes || sl_rows_mem_bytes(r->row_bytes) > mem_bytes)
        return sl_err_set(SL_EUNSUPPORTED, "%s: type %d rows of %lld values not supported", name, r->type,
                          (long long)n);
    r->slot_id = mem;
    r->slot = (uint8_t *)mem + SL_ROWS_SLOTS * sizeof(int32_t);
    for (int i = 0; i < SL_ROWS_SLOTS; i++) r->slot_id[i] = -1;
    return 0;
}

/* The raw row of token id, from its slot or read into it. */
static int raw_row(sl_rows *r, sl_stream *st, int32_t id, const uint8_t **out)
{
    const int s = (int)((uint32_t)id % SL_ROWS_SLOTS);
    uint8_t *dst = r->slot + (size_t)s * r->row_bytes;
    if (r->slot_id[s] != id) {
        r->slot_id[s] = -1;   /* a failed read leaves the slot empty */
        int rc = sl_stream_read_row(st, r->name, (uint64_t)id, dst, r->row_bytes);
        if (rc) {   /* copied first: it may live in the buffer sl_err_set writes */
            char msg[512];
            snprintf(msg, sizeof msg, "%s", sl_stream_errmsg(st));
            return sl_err_set(rc, "%s row %d: %s", r->name, id, msg);
        }
        r->slot_id[s] = id;
        r->bytes_read += r->row_bytes;
    }
    *out = dst;
    return 0;
}

int sl_rows_read(sl_rows *r, sl_stream *st, const int32_t *ids, int32_t n, float *dst, int64_t ld, float scale)
{
    for (int32_t j = 0; j < n; j++) {
        float *y = dst + (int64_t)j * ld;
        int32_t k = 0;
        while (k < j && ids[k] != ids[j]) k++;
        if (k < j) { memcpy(y, dst + (int64_t)k * ld, (size_t)r->n * sizeof *y); continue; }   /* a repeat */
        const uint8_t *raw;
        int rc = raw_row(r, st, ids[j], &raw);
        if (rc) return rc;
        if ((rc = sl_quant_dequantize_row(r->type, raw, y, r->n)))
            return sl_err_set(rc, "%s row %d: cannot dequantize", r->name, ids[j]);
        if (scale != 0) for (int64_t i = 0; i < r->n; i++) y[i] *= scale;
    }
    return 0;
}
