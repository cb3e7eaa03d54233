/* Units and the memory planner. Units 0..L-1 are the layers, then the lm head
 * cut into row chunks no larger than the largest layer. The planner decides
 * resident / stream / mmap and, in stream mode, which units to pin (spread
 * evenly through the schedule) so that everything it counts stays within the
 * budget: reserve (caller's KV + arena) + metadata + globals + slots + pinned
 * units + the embedding table if pinned. */
#include "stream_internal.h"

#include <stdio.h>
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

void sl_layout_free(sl_model_layout *lo)
{
    if (!lo->units) return;
    for (int32_t i = 0; i < lo->n_units; i++) {
        free(lo->units[i].tensors);
        free(lo->units[i].tofs);
    }
    free(lo->units);
    memset(lo, 0, sizeof *lo);
}

int sl_layout_build(sl_model_layout *lo, const sl_gguf *g, uint32_t align)
{
    memset(lo, 0, sizeof *lo);
    int32_t L = sl_gguf_n_layers(g);
    int64_t T = sl_gguf_n_tensors(g);
    lo->embd = sl_gguf_find_tensor(g, "token_embd.weight");
    lo->head = sl_gguf_find_tensor(g, "output.weight");
    if (!lo->head) lo->head = lo->embd;          /* tied embeddings */
    /* the reader's in-memory metadata (strings + value nodes: measured ~1.8x
     * the on-disk header for a 128k vocab) plus the streamer's own tables
     * and I/O thread stacks */
    lo->meta_bytes = 2 * sl_gguf_data_offset(g) + (1u << 20);

    uint64_t max_layer = 0;
    for (int32_t l = 0; l < L; l++) {
        sl_gguf_extent e;
        if (sl_gguf_layer_extent(g, l, &e) == 0 && e.end - e.begin > max_layer)
            max_layer = e.end - e.begin;
    }
    uint64_t head_rows = 0, row_bytes = 0, rows_per_chunk = 0;
    int32_t n_chunks = 0;
    if (lo->head && lo->head->nbytes > 0) {
        head_rows = rows_of(lo->head);
        row_bytes = lo->head->nbytes / head_rows;
        rows_per_chunk = max_layer / (row_bytes ? row_bytes : 1);
        if (rows_per_chunk == 0 || max_layer == 0) rows_per_chunk = head_rows;
        if (rows_per_chunk > head_rows) rows_per_chunk = head_rows;
        n_chunks = (int32_t)((head_rows + rows_per_chunk - 1) / rows_per_chunk);
    }
    lo->n_layers = L;
    lo->n_head_chunks = n_chunks;
    lo->n_units = L + n_chunks;
    lo->units = calloc((size_t)(lo->n_units ? lo->n_units : 1), sizeof *lo->units);
    if (!lo->units) return sl_err_set(SL_ENOMEM, "streamer: out of memory for %d units", (int)lo->n_units);

    /* layer tensors: count, then fill */
    for (int64_t i = 0; i < T; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (t->layer >= 0 && t->layer < L) lo->units[t->layer].n_tensors++;
        else if (t != lo->head && t != lo->embd) lo->globals_bytes += t->nbytes;
    }
    for (int32_t u = 0; u < lo->n_units; u++) {
        sl_unit *un = &lo->units[u];
        uint32_t n = u < L ? un->n_tensors : 1;
        un->tensors = calloc(n ? n : 1, sizeof *un->tensors);
        un->tofs = calloc(n ? n : 1, sizeof *un->tofs);
        un->slot = -1;
        if (!un->tensors || !un->tofs) { sl_layout_free(lo); return sl_err_set(SL_ENOMEM, "streamer: out of memory"); }
        un->n_tensors = 0;
    }
    for (int64_t i = 0; i < T; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (t->layer < 0 || t->layer >= L) continue;
        sl_unit *un = &lo->units[t->layer];
        sl_stream_tensor *st = &un->tensors[un->n_tensors];
        st->name = t->name; st->type = t->type; st->n_dims = t->n_dims;
        memcpy(st->ne, t->ne, sizeof st->ne);
        st->nbytes = t->nbytes;
        un->tofs[un->n_tensors++] = t->file_offset;
    }
    for (int32_t l = 0; l < L; l++) {
        sl_unit *un = &lo->units[l];
        sl_gguf_extent e;
        un->info.kind = SL_UNIT_LAYER; un->info.layer = l;
        if (sl_gguf_layer_extent(g, l, &e) == 0 && e.n_tensors > 0) { un->begin = e.begin; un->end = e.end; }
        un->info.bytes = 0;
        widen(un, align);
        un->info.bytes = un->aend - un->abeg;
    }
    for (int32_t c = 0; c < n_chunks; c++) {
        sl_unit *un = &lo->units[L + c];
        uint64_t r0 = (uint64_t)c * rows_per_chunk, r1 = r0 + rows_per_chunk;
        if (r1 > head_rows) r1 = head_rows;
        un->info.kind = SL_UNIT_HEAD; un->info.layer = -1;
        un->info.row_begin = r0; un->info.row_end = r1;
        sl_stream_tensor *st = &un->tensors[0];
        st->name = lo->head->name; st->type = lo->head->type; st->n_dims = 2;
        st->ne[0] = lo->head->ne[0]; st->ne[1] = r1 - r0; st->ne[2] = st->ne[3] = 1;
        st->nbytes = (r1 - r0) * row_bytes;
        un->tofs[0] = lo->head->file_offset + r0 * row_bytes;
        un->n_tensors = 1;
        un->begin = un->tofs[0]; un->end = un->begin + st->nbytes;
        widen(un, align);
        un->info.bytes = un->aend - un->abeg;
    }
    for (int32_t u = 0; u < lo->n_units; u++)
        if (lo->units[u].aend - lo->units[u].abeg > lo->max_unit_span)
            lo->max_unit_span = lo->units[u].aend - lo->units[u].abeg;
    return 0;
}

static uint64_t unit_span(const sl_unit *u) { return u->aend - u->abeg; }

/* k positions spread evenly over n (distinct for k <= n) */
static int32_t spread_pos(int32_t i, int32_t k, int32_t n)
{
    return (int32_t)(((int64_t)2 * i + 1) * n / (2 * (int64_t)k));
}

int sl_plan_compute(sl_model_layout *lo, const sl_gguf *g, const sl_stream_config *c,
                    uint32_t align, sl_stream_plan *p, char *err, size_t err_len)
{
    memset(p, 0, sizeof *p);
    if (err && err_len) err[0] = 0;
    uint64_t a = align > 1 ? align : 1;
    p->align = (uint32_t)a;
    p->direct = align > 1;
    p->io = c->io;
    p->depth = c->depth > 0 ? c->depth : SL_DEFAULT_DEPTH;
    p->model_bytes = sl_gguf_total_tensor_bytes(g);
    p->globals_bytes = lo->globals_bytes;
    p->embd_bytes = lo->embd ? lo->embd->nbytes : 0;
    p->head_bytes = lo->head ? lo->head->nbytes : 0;
    p->reserve_bytes = c->reserve_bytes;
    p->meta_bytes = lo->meta_bytes;
    p->n_units = lo->n_units; p->n_layers = lo->n_layers; p->n_head_chunks = lo->n_head_chunks;
    p->mem_available = sl_mem_available();
    if (c->mem_budget) {
        p->budget = c->mem_budget;
    } else {
        uint64_t m = p->mem_available / 10;
        if (m < (256ull << 20)) m = 256ull << 20;
        p->margin_bytes = m;
        p->budget = p->mem_available > m ? p->mem_available - m : 0;
    }
    for (int32_t u = 0; u < lo->n_units; u++) lo->units[u].info.pinned = false;

    /* globals are kept in one buffer each; embd/head may alias globals when tied */
    uint64_t fixed = p->reserve_bytes + p->meta_bytes + sl_buf_round(p->globals_bytes);
    uint64_t fsize = sl_gguf_file_size(g);
    uint64_t res_beg = sl_gguf_data_offset(g) / a * a, res_end = (fsize + a - 1) / a * a;
    uint64_t resident_need = fixed - sl_buf_round(p->globals_bytes) + sl_buf_round(res_end - res_beg);

    int mode = c->mode;
    if (mode == SL_MODE_AUTO) mode = resident_need <= p->budget ? SL_MODE_RESIDENT : SL_MODE_STREAM;
    p->mode = mode;

    if (mode == SL_MODE_RESIDENT) {
        for (int32_t u = 0; u < lo->n_units; u++) lo->units[u].info.pinned = true;
        p->n_pinned = lo->n_units; p->embd_pinned = p->head_pinned = true;
        p->pinned_bytes = res_end - res_beg;
        p->peak_bytes = resident_need;
        p->fits = resident_need <= p->budget;
        return 0;
    }
    if (mode == SL_MODE_MMAP) {
        /* file-backed pages: the kernel may evict them; RSS is the OS's choice */
        for (int32_t u = 0; u < lo->n_units; u++) p->streamed_bytes_per_token += lo->units[u].end - lo->units[u].begin;
        p->peak_bytes = fixed;
        p->fits = fixed <= p->budget;
        p->align = 1; p->direct = false;
        return 0;
    }

    /* stream */
    uint64_t slot = sl_buf_round(lo->max_unit_span);
    int32_t n_slots = p->depth + 1;
    while (n_slots > 2 && fixed + (uint64_t)n_slots * slot > p->budget) n_slots--;
    if (lo->n_units < n_slots) n_slots = lo->n_units;
    p->slot_bytes = slot;
    int32_t cap = c->max_pinned >= 0 ? c->max_pinned : lo->n_units;
    if (cap > lo->n_units) cap = lo->n_units;
    uint64_t need_min = fixed + (uint64_t)n_slots * slot;
    if (need_min > p->budget) {
        p->n_slots = n_slots;
        p->peak_bytes = need_min;
        p->fits = false;
        for (int32_t u = 0; u < lo->n_units; u++) p->streamed_bytes_per_token += unit_span(&lo->units[u]);
        if (err && err_len)
            snprintf(err, err_len,
                     "memory budget %llu bytes is too small to stream this model: it needs at least "
                     "%llu (reserve %llu + metadata %llu + globals %llu + %d slots x %llu)",
                     (unsigned long long)p->budget, (unsigned long long)need_min,
                     (unsigned long long)p->reserve_bytes, (unsigned long long)p->meta_bytes,
                     (unsigned long long)p->globals_bytes, (int)n_slots, (unsigned long long)slot);
        return sl_err_set(SL_ENOMEM, "%s", err && err_len ? err : "memory budget too small");
    }
    uint64_t room = p->budget - need_min;
    int32_t k = cap;
    for (; k > 0; k--) {
        uint64_t cost = 0;
        for (int32_t i = 0; i < k; i++) cost += sl_buf_round(unit_span(&lo->units[spread_pos(i, k, lo->n_units)]));
        /* pinning everything frees the slots */
        uint64_t avail = k == lo->n_units ? room + (uint64_t)n_slots * slot : room;
        if (cost <= avail) break;
    }
    for (int32_t i = 0; i < k; i++) {
        sl_unit *u = &lo->units[spread_pos(i, k, lo->n_units)];
        u->info.pinned = true;
        p->pinned_bytes += sl_buf_round(unit_span(u));
    }
    p->n_pinned = k;
    int32_t n_streamed = lo->n_units - k;
    if (n_slots > n_streamed) n_slots = n_streamed;
    p->n_slots = n_slots;
    if (n_slots == 0) p->slot_bytes = 0;
    uint64_t used = fixed + (uint64_t)n_slots * slot + p->pinned_bytes;
    bool head_all = lo->n_head_chunks > 0;
    for (int32_t u = lo->n_layers; u < lo->n_units; u++) head_all = head_all && lo->units[u].info.pinned;
    p->head_pinned = head_all;
    /* token_embd: pinned when it fits in what is left (else one row read per token) */
    bool embd_is_head = lo->embd && lo->embd == lo->head;
    if (lo->embd && !embd_is_head && used + sl_buf_round(p->embd_bytes) <= p->budget) {
        p->embd_pinned = true;
        used += sl_buf_round(p->embd_bytes);
    }
    for (int32_t u = 0; u < lo->n_units; u++)
        if (!lo->units[u].info.pinned) p->streamed_bytes_per_token += unit_span(&lo->units[u]);
    if (lo->embd && !p->embd_pinned && rows_of(lo->embd) > 0) {
        uint64_t rb = lo->embd->nbytes / rows_of(lo->embd);
        p->streamed_bytes_per_token += rb;
    }
    p->peak_bytes = used;
    p->fits = true;
    return 0;
}

int32_t sl_stream_plan_pinned_unit(const sl_stream_plan *p, int32_t i)
{
    if (!p || i < 0 || i >= p->n_pinned || p->n_units <= 0) return -1;
    if (p->mode == SL_MODE_RESIDENT || p->n_pinned == p->n_units) return i;
    return spread_pos(i, p->n_pinned, p->n_units);
}
