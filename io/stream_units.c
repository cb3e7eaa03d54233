/* The unit map: the file cut into units. Units 0..L-1 are the layers (all
 * "blk.N.*" tensors), then the lm head cut into row chunks no larger than
 * the largest layer. Each unit knows its exact and aligned file range and its
 * tensors' offsets. */
#include "stream_internal.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rows_of(const sl_gguf_tensor *t)
{
    uint64_t r = 1;
    for (uint32_t d = 1; d < t->n_dims; d++) r *= t->ne[d];
    return r;
}

static void widen(sl_unit *u, uint32_t align)
{
    uint64_t a = align > 1 ? align : 1;
    u->abeg = u->begin / a * a;
    u->aend = (u->end + a - 1) / a * a;
    if (u->end == u->begin) u->aend = u->abeg;
}

void sl_unit_map_free(sl_unit_map *um)
{
    if (!um->units) return;
    for (int32_t i = 0; i < um->n_units; i++) {
        free(um->units[i].tensors);
        free(um->units[i].tofs);
    }
    free(um->units);
    memset(um, 0, sizeof *um);
}

int sl_unit_map_init(sl_unit_map *um, const sl_gguf *g, uint32_t align)
{
    memset(um, 0, sizeof *um);
    int32_t L = sl_gguf_n_layers(g);
    int64_t T = sl_gguf_n_tensors(g);
    um->embd = sl_gguf_find_tensor(g, "token_embd.weight");
    um->head = sl_gguf_find_tensor(g, "output.weight");
    if (um->embd && rows_of(um->embd) > 0) um->embd_row_bytes = um->embd->nbytes / rows_of(um->embd);
    if (!um->head) um->head = um->embd;          /* tied embeddings */
    /* the reader's in-memory metadata (strings + value nodes: measured ~1.8x
     * the on-disk header for a 128k vocab) plus the streamer's own tables
     * and I/O thread stacks */
    um->meta_bytes = 2 * sl_gguf_data_offset(g) + (1u << 20);

    uint64_t max_layer = 0;
    for (int32_t l = 0; l < L; l++) {
        sl_gguf_extent e;
        if (sl_gguf_layer_extent(g, l, &e) == 0 && e.end - e.begin > max_layer)
            max_layer = e.end - e.begin;
    }
    uint64_t head_rows = 0, row_bytes = 0, rows_per_chunk = 0;
    int32_t n_chunks = 0;
    if (um->head && um->head->nbytes > 0) {
        head_rows = rows_of(um->head);
        row_bytes = um->head->nbytes / head_rows;
        rows_per_chunk = max_layer / (row_bytes ? row_bytes : 1);
        if (rows_per_chunk == 0 || max_layer == 0) rows_per_chunk = head_rows;
        if (rows_per_chunk > head_rows) rows_per_chunk = head_rows;
        n_chunks = (int32_t)((head_rows + rows_per_chunk - 1) / rows_per_chunk);
    }
    um->n_layers = L;
    um->n_head_chunks = n_chunks;
    um->n_units = L + n_chunks;
    um->units = calloc((size_t)(um->n_units ? um->n_units : 1), sizeof *um->units);
    if (!um->units) return sl_err_set(SL_ENOMEM, "streamer: out of memory for %d units", (int)um->n_units);

    /* layer tensors: count, then fill */
    for (int64_t i = 0; i < T; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (t->layer >= 0 && t->layer < L) um->units[t->layer].n_tensors++;
        else if (t != um->head && t != um->embd) um->globals_bytes += t->nbytes;
    }
    for (int32_t u = 0; u < um->n_units; u++) {
        sl_unit *un = &um->units[u];
        uint32_t n = u < L ? un->n_tensors : 1;
        un->tensors = calloc(n ? n : 1, sizeof *un->tensors);
        un->tofs = calloc(n ? n : 1, sizeof *un->tofs);
        un->slot = -1;
        if (!un->tensors || !un->tofs) { sl_unit_map_free(um); return sl_err_set(SL_ENOMEM, "streamer: out of memory"); }
        un->n_tensors = 0;
    }
    for (int64_t i = 0; i < T; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (t->layer < 0 || t->layer >= L) continue;
        sl_unit *un = &um->units[t->layer];
        sl_stream_tensor *st = &un->tensors[un->n_tensors];
        st->name = t->name; st->type = t->type; st->n_dims = t->n_dims;
        memcpy(st->ne, t->ne, sizeof st->ne);
        st->nbytes = t->nbytes;
        un->tofs[un->n_tensors++] = t->file_offset;
    }
    for (int32_t l = 0; l < L; l++) {
        sl_unit *un = &um->units[l];
        sl_gguf_extent e;
        un->info.kind = SL_UNIT_LAYER; un->info.layer = l;
        if (sl_gguf_layer_extent(g, l, &e) == 0 && e.n_tensors > 0) { un->begin = e.begin; un->end = e.end; }
        un->info.bytes = 0;
        widen(un, align);
        un->info.bytes = un->aend - un->abeg;
    }
    for (int32_t c = 0; c < n_chunks; c++) {
        sl_unit *un = &um->units[L + c];
        uint64_t r0 = (uint64_t)c * rows_per_chunk, r1 = r0 + rows_per_chunk;
        if (r1 > head_rows) r1 = head_rows;
        un->info.kind = SL_UNIT_HEAD; un->info.layer = -1;
        un->info.row_begin = r0; un->info.row_end = r1;
        sl_stream_tensor *st = &un->tensors[0];
        st->name = um->head->name; st->type = um->head->type; st->n_dims = 2;
        st->ne[0] = um->head->ne[0]; st->ne[1] = r1 - r0; st->ne[2] = st->ne[3] = 1;
        st->nbytes = (r1 - r0) * row_bytes;
        un->tofs[0] = um->head->file_offset + r0 * row_bytes;
        un->n_tensors = 1;
        un->begin = un->tofs[0]; un->end = un->begin + st->nbytes;
        widen(un, align);
        un->info.bytes = un->aend - un->abeg;
    }
    for (int32_t u = 0; u < um->n_units; u++)
        if (um->units[u].aend - um->units[u].abeg > um->max_unit_span)
            um->max_unit_span = um->units[u].aend - um->units[u].abeg;
    return 0;
}

