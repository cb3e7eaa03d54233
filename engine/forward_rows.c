/* Token-table rows on demand (forward_rows.h): repeats within a pass copied,
 * a pass's misses read through sl_stream_read_rows as one batch (from RAM
 * when the table is resident or mapped, else one loader read a row: io_uring
 * where the stream has it, pread otherwise). */
#include "forward_rows.h"

#include <stdbool.h>
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

/* y = raw row dequantized, times scale (0: none). */
static int put_row(const sl_rows *r, const uint8_t *raw, int32_t id, float *y, float scale)
{
    int rc = sl_quant_dequantize_row(r->type, raw, y, r->n);
    if (rc) return sl_err_set(rc, "%s row %d: cannot dequantize", r->name, id);
    if (scale != 0) for (int64_t i = 0; i < r->n; i++) y[i] *= scale;
    return 0;
}

/* The misses of a batch (at most one a slot), read as one streamer batch. */
typedef struct rows_batch {
    int32_t n;
    int32_t j[SL_ROWS_SLOTS];        /* the token's place in the pass */
    uint64_t row[SL_ROWS_SLOTS];
    void *dst[SL_ROWS_SLOTS];        /* its slot */
} rows_batch;

/* Reads the batch's rows into their slots and dequantizes them into their
 * places; the slots then hold those tokens. */
static int flush(sl_rows *r, sl_stream *st, rows_batch *b, const int32_t *ids, float *dst, int64_t ld, float scale)
{
    if (b->n == 0) return 0;
    int rc = sl_stream_read_rows(st, r->name, b->row, b->n, b->dst, r->row_bytes);
    if (rc) {   /* copied first: it may live in the buffer sl_err_set writes */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", sl_stream_errmsg(st));
        b->n = 0;
        return sl_err_set(rc, "%s rows: %s", r->name, msg);
    }
    for (int32_t i = 0; i < b->n && !rc; i++) {
        const int s = (int)(b->row[i] % SL_ROWS_SLOTS);
        r->slot_id[s] = ids[b->j[i]];
        r->bytes_read += r->row_bytes;
        rc = put_row(r, b->dst[i], ids[b->j[i]], dst + (int64_t)b->j[i] * ld, scale);
    }
    b->n = 0;
    return rc;
}

int sl_rows_read(sl_rows *r, sl_stream *st, const int32_t *ids, int32_t n, float *dst, int64_t ld, float scale)
{
    rows_batch b;
    bool claimed[SL_ROWS_SLOTS] = { false };
    int rc = 0;
    b.n = 0;
    /* hits dequantized at once (a later miss may take their slot); misses
     * gathered, one a slot, and read as a batch when a slot is wanted twice
     * or the pass ends; repeats copied last */
    for (int32_t j = 0; j < n && !rc; j++) {
        int32_t k = 0;
        while (k < j && ids[k] != ids[j]) k++;
        if (k < j) continue;
        const int s = (int)((uint32_t)ids[j] % SL_ROWS_SLOTS);
        uint8_t *slot = r->slot + (size_t)s * r->row_bytes;
        if (r->slot_id[s] == ids[j]) {
            rc = put_row(r, slot, ids[j], dst + (int64_t)j * ld, scale);
            continue;
        }
        if (claimed[s]) {
            if ((rc = flush(r, st, &b, ids, dst, ld, scale))) break;
            memset(claimed, 0, sizeof claimed);
        }
        claimed[s] = true;
        r->slot_id[s] = -1;   /* a failed read leaves the slot empty */
        b.j[b.n] = j; b.row[b.n] = (uint64_t)(uint32_t)ids[j]; b.dst[b.n] = slot;
        b.n++;
    }
    if (!rc) rc = flush(r, st, &b, ids, dst, ld, scale);
    for (int32_t j = 0; j < n && !rc; j++) {
        int32_t k = 0;
        while (k < j && ids[k] != ids[j]) k++;
        if (k < j) memcpy(dst + (int64_t)j * ld, dst + (int64_t)k * ld, (size_t)r->n * sizeof *dst);
    }
    return rc;
}
