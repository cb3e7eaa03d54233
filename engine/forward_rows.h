/* Rows of a token table read on demand through the streamer: token_embd and
 * per_layer_token_embd go through the same reader. A pass's rows are read
 * once per distinct token (a repeat copies the row already made) and a
 * small direct-mapped cache of raw rows keeps recent tokens across passes,
 * so a decode step reads only a row it has not seen lately. */
#ifndef SL_ENGINE_FORWARD_ROWS_H
#define SL_ENGINE_FORWARD_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "../io/sluice_stream.h"

#define SL_ROWS_SLOTS 64      /* cached raw rows per table */

typedef struct sl_rows {
    const char *name;         /* the tensor */
    int type;                 /* its ggml type */
    int64_t n;                /* values per row */
    size_t row_bytes;
    int32_t *slot_id;         /* [SL_ROWS_SLOTS] token held, -1 none */
    uint8_t *slot;            /* [SL_ROWS_SLOTS][row_bytes] */
    uint64_t bytes_read;      /* raw bytes read from the streamer (cache misses) */
} sl_rows;

/* Memory sl_rows_init lays out for rows of row_bytes. */
size_t sl_rows_mem_bytes(size_t row_bytes);
/* Over mem (sl_rows_mem_bytes bytes); rows of n values of tensor `name` in st.
 * SL_ENOENT / SL_EUNSUPPORTED naming the tensor. */
int sl_rows_init(sl_rows *r, sl_stream *st, const char *name, int64_t n, void *mem, size_t mem_bytes);
/* dst[j * ld ..] = row ids[j] dequantized, times scale (scale 0: none). */
int sl_rows_read(sl_rows *r, sl_stream *st, const int32_t *ids, int32_t n, float *dst, int64_t ld, float scale);

#endif
