/* The memory planner. It decides resident / stream / mmap and, in stream
 * mode, which units to pin (spread evenly through the schedule) so that
 * everything it counts stays within the budget: reserve (caller's KV +
 * arena) + metadata + globals + slots + pinned units + the embedding table
 * if pinned. With an MoE file's experts split off, the layer units are the
 * dense parts; what is left after pinning them goes to the expert cache
 * (at least k slots: one token's experts of a layer). */
#include "stream_plan.h"
#include "stream_limits.h"
#include "../gguf/base/sl_internal.h"
#include "../gguf/base/sl_platform.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* bytes of its buffer: the packed segments of a split layer */
static uint64_t unit_span(const sl_unit *u) { return u->info.bytes; }

/* k positions spread evenly over n (distinct for k <= n) */
static int32_t spread_pos(int32_t i, int32_t k, int32_t n)
{
    return (int32_t)(((int64_t)2 * i + 1) * n / (2 * (int64_t)k));
}

/* The expert cache takes what the budget leaves (the k slots of the minimum
 * are in `used` already), at most every expert once or the configured cap. */
static void expert_cache(const sl_unit_map *um, const sl_stream_config *c, sl_stream_plan *p,
                         uint64_t *used)
{
    const sl_unit_moe *mo = &um->moe;
    uint64_t total = (uint64_t)um->n_layers * (uint64_t)mo->n_expert, es = mo->slot_bytes;
    uint64_t base = sl_buf_round((uint64_t)p->n_expert_slots * es);
    uint64_t room = p->budget > *used ? p->budget - *used + base : base;
    uint64_t n = room / es;
    if (c->expert_cache_bytes && n > c->expert_cache_bytes / es) n = c->expert_cache_bytes / es;
    if (n > total) n = total;
    if (n < (uint64_t)mo->n_expert_used) n = (uint64_t)mo->n_expert_used;
    while (n > (uint64_t)mo->n_expert_used && sl_buf_round(n * es) > room) n--;
    p->n_expert_slots = (int32_t)n;
    *used = *used - base + sl_buf_round(n * es);
    p->expected_hit_rate = total ? (double)n / (double)total : 0;
    double per = (double)mo->n_expert_used * (double)mo->slice_bytes_sum * (1.0 - p->expected_hit_rate);
    p->expert_bytes_per_token = (uint64_t)per;
    p->streamed_bytes_per_token += p->expert_bytes_per_token;
}

/* The units a layer subset keeps (stream_units.c: sl_unit_map_keep), in
 * schedule order; *n of them. NULL on allocation failure. */
static int32_t *kept_units(const sl_unit_map *um, int32_t *n)
{
    int32_t *k = malloc((size_t)(um->n_units ? um->n_units : 1) * sizeof *k);
    *n = 0;
    if (!k) return NULL;
    for (int32_t u = 0; u < um->n_units; u++)
        if (!um->units[u].unused) k[(*n)++] = u;
    return k;
}

int sl_plan_compute(sl_unit_map *um, const sl_gguf *g, const sl_stream_config *c,
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
    p->globals_bytes = um->globals_bytes;
    p->embd_bytes = um->embd ? um->embd->nbytes : 0;
    p->head_bytes = um->head ? um->head->nbytes : 0;
    p->ple_bytes = um->ple ? um->ple->nbytes : 0;
    p->ple_row_bytes = um->ple_row_bytes;
    p->reserve_bytes = c->reserve_bytes;
    p->meta_bytes = um->meta_bytes;
    p->n_units = um->n_units; p->n_layers = um->n_layers; p->n_head_chunks = um->n_head_chunks;
    p->mem_available = sl_mem_available();
    if (c->mem_budget) {
        p->budget = c->mem_budget;
    } else {
        uint64_t m = p->mem_available / 10;
        if (m < (256ull << 20)) m = 256ull << 20;
        p->margin_bytes = m;
        p->budget = p->mem_available > m ? p->mem_available - m : 0;
    }
    for (int32_t u = 0; u < um->n_units; u++) um->units[u].info.pinned = false;
    const sl_unit_moe *mo = &um->moe;
    p->n_expert = mo->n_expert; p->n_expert_used = mo->n_expert_used;
    p->expert_bytes = mo->expert_bytes;
    p->dense_bytes = p->model_bytes - mo->expert_bytes - p->globals_bytes - p->embd_bytes - p->ple_bytes -
                     (um->head != um->embd ? p->head_bytes : 0);

    /* globals are kept in one buffer each; embd/head may alias globals when tied */
    uint64_t fixed = p->reserve_bytes + p->meta_bytes + sl_buf_round(p->globals_bytes);
    uint64_t fsize = sl_gguf_file_size(g);
    uint64_t res_beg = sl_gguf_data_offset(g) / a * a, res_end = (fsize + a - 1) / a * a;
    uint64_t resident_need = fixed - sl_buf_round(p->globals_bytes) + sl_buf_round(res_end - res_beg);

    int mode = c->mode;
    bool subset = false;
    for (int32_t u = 0; u < um->n_units; u++) subset = subset || um->units[u].unused;
    if (mode == SL_MODE_AUTO) mode = resident_need <= p->budget ? SL_MODE_RESIDENT : SL_MODE_STREAM;
    if (subset && mode == SL_MODE_RESIDENT) mode = SL_MODE_STREAM;   /* pins all it keeps if they fit */
    p->mode = mode;

    if (mode == SL_MODE_RESIDENT) {
        for (int32_t u = 0; u < um->n_units; u++) um->units[u].info.pinned = true;
        p->n_pinned = um->n_units; p->embd_pinned = p->head_pinned = true;
        p->pinned_bytes = res_end - res_beg;
        p->peak_bytes = resident_need;
        p->fits = resident_need <= p->budget;
        return 0;
    }
    if (mode == SL_MODE_MMAP) {
        /* file-backed pages: the kernel may evict them; RSS is the OS's choice */
        for (int32_t u = 0; u < um->n_units; u++) p->streamed_bytes_per_token += um->units[u].end - um->units[u].begin;
        p->peak_bytes = fixed;
        p->fits = fixed <= p->budget;
        p->align = 1; p->direct = false;
        return 0;
    }

    /* stream: over the units kept (all of them without a layer subset) */
    int32_t nk = 0, *kept = kept_units(um, &nk);
    if (!kept) return sl_err_set(SL_ENOMEM, "streamer: out of memory");
    uint64_t span = 0;
    for (int32_t i = 0; i < nk; i++) if (unit_span(&um->units[kept[i]]) > span) span = unit_span(&um->units[kept[i]]);
    uint64_t slot = sl_buf_round(span);
    int32_t n_slots = p->depth + 1;
    if (mo->split) {
        p->experts_split = true;
        p->expert_slot_bytes = mo->slot_bytes;
        p->n_expert_slots = mo->n_expert_used;
        fixed += sl_buf_round((uint64_t)p->n_expert_slots * mo->slot_bytes);
    }
    while (n_slots > 2 && fixed + (uint64_t)n_slots * slot > p->budget) n_slots--;
    if (nk < n_slots) n_slots = nk;
    p->slot_bytes = slot;
    int32_t cap = c->max_pinned >= 0 ? c->max_pinned : nk;
    if (cap > nk) cap = nk;
    uint64_t need_min = fixed + (uint64_t)n_slots * slot;
    if (need_min > p->budget) {
        p->n_slots = n_slots;
        p->peak_bytes = need_min;
        p->fits = false;
        for (int32_t i = 0; i < nk; i++) p->streamed_bytes_per_token += unit_span(&um->units[kept[i]]);
        free(kept);
        if (err && err_len)
            snprintf(err, err_len,
                     "memory budget %llu bytes is too small to stream this model: it needs at least "
                     "%llu (reserve %llu + metadata %llu + globals %llu + %d slots x %llu + "
                     "%d expert slots x %llu)",
                     (unsigned long long)p->budget, (unsigned long long)need_min,
                     (unsigned long long)p->reserve_bytes, (unsigned long long)p->meta_bytes,
                     (unsigned long long)p->globals_bytes, (int)n_slots, (unsigned long long)slot,
                     (int)p->n_expert_slots, (unsigned long long)p->expert_slot_bytes);
        return sl_err_set(SL_ENOMEM, "%s", err && err_len ? err : "memory budget too small");
    }
    uint64_t room = p->budget - need_min;
    int32_t k = cap;
    for (; k > 0; k--) {
        uint64_t cost = 0;
        for (int32_t i = 0; i < k; i++) cost += sl_buf_round(unit_span(&um->units[kept[spread_pos(i, k, nk)]]));
        /* pinning everything frees the slots */
        uint64_t avail = k == nk ? room + (uint64_t)n_slots * slot : room;
        if (cost <= avail) break;
    }
    for (int32_t i = 0; i < k; i++) {
        sl_unit *u = &um->units[kept[spread_pos(i, k, nk)]];
        u->info.pinned = true;
        p->pinned_bytes += sl_buf_round(unit_span(u));
    }
    free(kept);
    p->n_pinned = k;
    int32_t n_streamed = nk - k;
    if (n_slots > n_streamed) n_slots = n_streamed;
    p->n_slots = n_slots;
    if (n_slots == 0) p->slot_bytes = 0;
    uint64_t used = fixed + (uint64_t)n_slots * slot + p->pinned_bytes;
    bool head_all = um->n_head_chunks > 0 && !c->skip_head;
    for (int32_t u = um->n_layers; u < um->n_units && head_all; u++) head_all = um->units[u].info.pinned;
    p->head_pinned = head_all;
    /* The expert cache before token_embd: a pinned table saves one row read
     * a token, the same bytes as cache slots save a share of every layer's
     * expert reads. */
    if (mo->split) expert_cache(um, c, p, &used);
    /* token_embd: pinned when it fits in what is left (else one row read per token) */
    bool embd_is_head = um->embd && um->embd == um->head;
    if (um->embd && !embd_is_head && !c->skip_embd && used + sl_buf_round(p->embd_bytes) <= p->budget) {
        p->embd_pinned = true;
        used += sl_buf_round(p->embd_bytes);
    }
    for (int32_t u = 0; u < um->n_units; u++)
        if (!um->units[u].info.pinned && !um->units[u].unused) p->streamed_bytes_per_token += um->units[u].info.bytes;
    if (um->embd && !p->embd_pinned && !c->skip_embd) p->streamed_bytes_per_token += um->embd_row_bytes;
    p->streamed_bytes_per_token += um->ple_row_bytes;   /* a row per token, never pinned */
    p->peak_bytes = used;
    p->fits = true;
    return 0;
}

/* (Without a layer subset: the kept units are all units.) */
int32_t sl_stream_plan_pinned_unit(const sl_stream_plan *p, int32_t i)
{
    if (!p || i < 0 || i >= p->n_pinned || p->n_units <= 0) return -1;
    if (p->mode == SL_MODE_RESIDENT || p->n_pinned == p->n_units) return i;
    return spread_pos(i, p->n_pinned, p->n_units);
}
