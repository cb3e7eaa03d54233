/* The unit map: the file cut into units. Units 0..L-1 are the layers (all
 * "blk.N.*" tensors), then the lm head cut into row chunks no larger than
 * the largest layer. Each unit knows its exact and aligned file range and its
 * tensors' offsets. In an MoE file split for expert streaming, a layer unit
 * is its dense part only (the file ranges between the 3-D expert tensors);
 * the experts are (layer, expert) units of the expert cache (stream_experts.c). */
#include "stream_units.h"
#include "../gguf/base/sl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const exp_names[3] = { "ffn_gate_exps.weight", "ffn_up_exps.weight",
                                          "ffn_down_exps.weight" };
#define EXP_GATE_UP "ffn_gate_up_exps.weight"   /* fused gate | up (gemma4): part 0, part 1 absent */

static uint64_t rows_of(const sl_gguf_tensor *t)
{
    uint64_t r = 1;
    for (uint32_t d = 1; d < t->n_dims; d++) r *= t->ne[d];
    return r;
}

static void widen_seg(sl_seg *sg, uint32_t align)
{
    uint64_t a = align > 1 ? align : 1;
    sg->abeg = sg->begin / a * a;
    sg->aend = (sg->end + a - 1) / a * a;
    if (sg->end == sg->begin) sg->aend = sg->abeg;
}

/* One segment covering [begin, end). */
static void widen(sl_unit *u, uint32_t align)
{
    u->n_seg = 1;
    u->seg[0] = (sl_seg){ .begin = u->begin, .end = u->end };
    widen_seg(&u->seg[0], align);
    u->abeg = u->seg[0].abeg; u->aend = u->seg[0].aend;
}

/* The routed experts: every layer has the three 3-D tensors (or the fused
 * gate|up and down: part 1 NULL) with one expert count or none of them (a
 * dense layer: DeepSeek's and GLM's leading ones), or the file is not split
 * (an odd file streams its experts with the layer, as before). */
static void find_experts(sl_unit_map *um, const sl_gguf *g, int32_t L, uint32_t align)
{
    sl_unit_moe *m = &um->moe;
    const char *arch = NULL;
    uint64_t al = 0;
    char key[96];
    uint32_t k = 0;
    if (L <= 0 || sl_gguf_get_str(g, "general.architecture", &arch, &al) || al > 64) return;
    snprintf(key, sizeof key, "%.*s.expert_used_count", (int)al, arch);
    if (sl_gguf_get_u32(g, key, &k) || k == 0) return;
    m->exps = calloc((size_t)L, sizeof *m->exps);
    if (!m->exps) return;
    uint64_t a = align > 1 ? align : 1;
    int32_t ne = -1;
    for (int32_t l = 0; l < L; l++) {
        uint64_t slice_sum = 0;
        const sl_gguf_tensor *ts[3];
        int present = 0;
        for (int p = 0; p < 3; p++) {
            char name[96];
            snprintf(name, sizeof name, "blk.%d.%s", (int)l, exp_names[p]);
            present += (ts[p] = sl_gguf_find_tensor(g, name)) != NULL;
        }
        if (!ts[0] && !ts[1]) {
            char name[96];
            snprintf(name, sizeof name, "blk.%d.%s", (int)l, EXP_GATE_UP);
            if ((ts[0] = sl_gguf_find_tensor(g, name))) present += 2;
        }
        if (present == 0) continue;
        for (int p = 0; p < 3; p++) {
            const sl_gguf_tensor *t = ts[p];
            if (p == 1 && !t && ts[0] && ts[2] && ts[0]->ne[1] == 2 * ts[2]->ne[0]) continue;   /* fused */
            if (!t || t->n_dims != 3 || t->ne[2] == 0 || t->ne[2] > 4096 || t->nbytes % t->ne[2] ||
                (ne >= 0 && t->ne[2] != (uint64_t)ne))
                goto none;
            ne = (int32_t)t->ne[2];
            m->exps[l][p] = t;
            uint64_t sl = t->nbytes / t->ne[2], cap = (sl + a - 1) / a * a + (a > 1 ? a : 0);
            if (cap > m->part_cap[p]) m->part_cap[p] = cap;
            slice_sum += sl;
            m->expert_bytes += t->nbytes;
        }
        m->slice_bytes_sum += slice_sum;
    }
    if ((uint32_t)ne < k) goto none;
    m->n_expert = ne; m->n_expert_used = (int32_t)k;
    m->slot_bytes = m->part_cap[0] + m->part_cap[1] + m->part_cap[2];
    return;
none:
    free(m->exps);
    memset(m, 0, sizeof *m);
}

static bool is_expert(const sl_unit_map *um, const sl_gguf_tensor *t)
{
    if (!um->moe.split || t->layer < 0) return false;
    for (int p = 0; p < 3; p++) if (um->moe.exps[t->layer][p] == t) return true;
    return false;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The dense part of split layer l: the runs of its other tensors between the
 * expert tensors, each widened and packed into the unit's buffer. A run
 * also ends where a split model's next file begins (a unit's reads never
 * take the gap between files). */
static int split_layer(sl_unit_map *um, const sl_gguf *g, sl_unit *un, int32_t l, uint32_t align)
{
    int64_t T = sl_gguf_n_tensors(g);
    /* (offset, end, is_expert, shard) of the layer's tensors, sorted by offset */
    uint32_t n = 0;
    for (int64_t i = 0; i < T; i++) n += sl_gguf_tensor_at(g, i)->layer == l;
    uint64_t *ev = calloc((size_t)n * 4 + 4, sizeof *ev);
    if (!ev) return sl_err_set(SL_ENOMEM, "streamer: out of memory");
    n = 0;
    for (int64_t i = 0; i < T; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (t->layer != l) continue;
        ev[4 * n] = t->file_offset; ev[4 * n + 1] = t->file_offset + t->nbytes; ev[4 * n + 2] = is_expert(um, t);
        ev[4 * n + 3] = t->shard;
        n++;
    }
    qsort(ev, n, 4 * sizeof *ev, cmp_u64);
    un->n_seg = 0;
    bool open_run = false;
    for (uint32_t i = 0; i < n; i++) {
        if (ev[4 * i + 2]) { open_run = false; continue; }
        if (open_run && i > 0 && ev[4 * i + 3] != ev[4 * (i - 1) + 3]) open_run = false;
        if (!open_run) {
            if (un->n_seg == SL_MAX_SEGS) { un->n_seg--; }   /* cannot happen with 3 experts: merge */
            else un->seg[un->n_seg].begin = ev[4 * i];
            un->n_seg++;
            open_run = true;
        }
        sl_seg *sg = &un->seg[un->n_seg - 1];
        if (ev[4 * i + 1] > sg->end) sg->end = ev[4 * i + 1];
    }
    free(ev);
    uint64_t pos = 0;
    for (int i = 0; i < un->n_seg; i++) {
        widen_seg(&un->seg[i], align);
        un->seg[i].buf_off = pos;
        pos += un->seg[i].aend - un->seg[i].abeg;
    }
    if (un->n_seg == 0) { un->n_seg = 1; un->seg[0] = (sl_seg){ 0 }; }
    un->begin = un->seg[0].begin; un->end = un->seg[un->n_seg - 1].end;
    un->abeg = un->seg[0].abeg; un->aend = un->seg[un->n_seg - 1].aend;
    un->info.bytes = pos;
    return 0;
}

void sl_unit_map_expert_range(const sl_unit_map *um, int32_t l, int32_t e, int p, uint64_t *off,
                              uint64_t *len)
{
    const sl_gguf_tensor *t = um->moe.exps[l][p];
    if (!t) { *off = *len = 0; return; }   /* the absent up of a fused gate|up */
    uint64_t sl = t->nbytes / t->ne[2];
    *off = t->file_offset + (uint64_t)e * sl;
    *len = sl;
}

void sl_unit_map_free(sl_unit_map *um)
{
    for (int32_t i = 0; um->units && i < um->n_units; i++) {
        free(um->units[i].tensors);
        free(um->units[i].tofs);
        free(um->units[i].rows8);
    }
    free(um->units);
    free(um->moe.exps);
    memset(um, 0, sizeof *um);
}

const uint8_t *sl_unit_tensor_at(const sl_unit *un, uint32_t i, const uint8_t *base)
{
    int k = 0;
    while (k + 1 < un->n_seg && un->tofs[i] >= un->seg[k + 1].begin) k++;
    return base + un->seg[k].buf_off + (un->tofs[i] - un->seg[k].abeg);
}

int sl_unit_map_init(sl_unit_map *um, const sl_gguf *g, uint32_t align, bool split_experts)
{
    memset(um, 0, sizeof *um);
    int32_t L = sl_gguf_n_layers(g);
    int64_t T = sl_gguf_n_tensors(g);
    um->embd = sl_gguf_find_tensor(g, "token_embd.weight");
    um->head = sl_gguf_find_tensor(g, "output.weight");
    if (um->embd && rows_of(um->embd) > 0) um->embd_row_bytes = um->embd->nbytes / rows_of(um->embd);
    if (!um->head) um->head = um->embd;          /* tied embeddings */
    um->ple = sl_gguf_find_tensor(g, "per_layer_token_embd.weight");
    if (um->ple && rows_of(um->ple) > 0) um->ple_row_bytes = um->ple->nbytes / rows_of(um->ple);
    /* the reader's in-memory metadata (strings + value nodes: measured ~1.8x
     * the on-disk header for a 128k vocab) plus the streamer's own tables
     * and I/O thread stacks */
    um->meta_bytes = 2 * sl_gguf_data_offset(g) + (1u << 20);

    find_experts(um, g, L, align);
    um->moe.split = split_experts && um->moe.n_expert > 0;
    /* packed segments: the experts' gaps, and a split model's files */
    bool packed = um->moe.split || (split_experts && sl_gguf_n_shards(g) > 1);

    uint64_t max_layer = 0;
    if (um->moe.split) {
        /* head chunks no larger than the largest dense part */
        uint64_t *dense = calloc((size_t)L, sizeof *dense);
        if (!dense) { sl_unit_map_free(um); return sl_err_set(SL_ENOMEM, "streamer: out of memory"); }
        for (int64_t i = 0; i < T; i++) {
            const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
            if (t->layer >= 0 && t->layer < L && !is_expert(um, t)) dense[t->layer] += t->nbytes;
        }
        for (int32_t l = 0; l < L; l++) if (dense[l] > max_layer) max_layer = dense[l];
        free(dense);
    }
    for (int32_t l = 0; l < L && !um->moe.split; l++) {
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
        if (rows_per_chunk >= 8) rows_per_chunk = rows_per_chunk / 8 * 8;   /* whole rows8 groups */
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
        if (t->layer >= 0 && t->layer < L) { if (!is_expert(um, t)) um->units[t->layer].n_tensors++; }
        else if (t != um->head && t != um->embd && t != um->ple) um->globals_bytes += t->nbytes;
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
        if (t->layer < 0 || t->layer >= L || is_expert(um, t)) continue;
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
        if (packed) {
            if (split_layer(um, g, un, l, align)) { sl_unit_map_free(um); return SL_ENOMEM; }
            continue;
        }
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
        if (um->units[u].info.bytes > um->max_unit_span) um->max_unit_span = um->units[u].info.bytes;
    return 0;
}


void sl_unit_map_keep(sl_unit_map *um, const sl_stream_config *c)
{
    for (int32_t u = 0; u < um->n_units; u++) {
        sl_unit *un = &um->units[u];
        if (un->info.kind == SL_UNIT_HEAD) un->unused = c->skip_head;
        else un->unused = c->layer_mask && (u >= c->n_layer_mask || !c->layer_mask[u]);
        /* an unused layer's experts are never read: not in the per-token figures */
        if (un->unused && un->info.kind == SL_UNIT_LAYER && um->moe.n_expert && um->moe.exps[u][0])
            for (int p = 0; p < 3; p++)
                if (um->moe.exps[u][p])
                    um->moe.slice_bytes_sum -= um->moe.exps[u][p]->nbytes / um->moe.exps[u][p]->ne[2];
    }
}
