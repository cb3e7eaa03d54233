/* Stream mode: a ring of slots with an eager cyclic prefetch, plus the units
 * (and the embedding table) the planner pinned, read once at open. Every free
 * slot gets the next unpinned unit of the schedule 0..U-1, 0..U-1, ...; an
 * acquire out of schedule order (or a prefetch hint) restarts the schedule. */
#include "stream_core.h"
#include "stream_experts.h"
#include "stream_limits.h"
#include "stream_loader.h"
#include "stream_rows8.h"
#include "stream_units.h"
#include "../gguf/base/sl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

/* STALE: the unit is no longer wanted (schedule restarted) but reads into
 * the slot may still be in flight: it is reused only once they are done. */
enum { SLOT_FREE = 0, SLOT_LOADING, SLOT_ACQUIRED, SLOT_STALE };

typedef struct sl_slot {
    uint8_t *buf;
    int32_t unit;
    int state;
    bool keep;               /* restart_at: begins the new schedule */
    uint64_t seq;            /* issue order: the oldest loading slot is next in the schedule */
    sl_io_job job[SL_MAX_SEGS];   /* one per segment of the unit */
    int n_job;
} sl_slot;

typedef struct ring {
    sl_slot *slots; int32_t n_slots; uint64_t slot_bytes;
    int32_t n_active;        /* slots in use: n_slots unless the pressure ladder shrank them */
    sl_owned_buf smem;
    sl_owned_buf *pmem;      /* [n_units] pinned unit buffers */
    sl_owned_buf emem;       /* pinned embedding table */
    int32_t next_sched;
    uint64_t seq;
} ring;

/* The first unpinned unit kept from u on, cyclically; -1 if all are pinned. */
static int32_t next_streamed(const sl_stream *s, int32_t u)
{
    int32_t U = s->um.n_units;
    for (int32_t t = 0; t < U; t++, u = (u + 1) % U)
        if (!s->um.units[u].info.pinned && !s->um.units[u].unused) return u;
    return -1;
}

static bool slot_done(sl_stream *s, sl_slot *sl)
{
    for (int k = 0; k < sl->n_job; k++) if (!sl_loader_is_done(s->L, &sl->job[k])) return false;
    return true;
}

/* Waits for every job of the slot; the first failure's status (message in *err). */
static int slot_wait(sl_stream *s, sl_slot *sl, const char **err)
{
    int st = 0;
    for (int k = 0; k < sl->n_job; k++) {
        int r = sl_loader_wait(s->L, &sl->job[k]);
        if (r && !st) { st = r; *err = sl->job[k].err; }
    }
    return st;
}

/* Stale slots whose reads have finished become free. */
static void reap_stale(sl_stream *s, bool wait_one)
{
    ring *R = s->mode_state;
    int32_t oldest = -1;
    for (int32_t i = 0; i < R->n_slots; i++) {
        sl_slot *sl = &R->slots[i];
        if (sl->state != SLOT_STALE) continue;
        if (slot_done(s, sl)) sl->state = SLOT_FREE;
        else if (oldest < 0 || sl->seq < R->slots[oldest].seq) oldest = i;
    }
    if (wait_one && oldest >= 0) {
        const char *e;
        slot_wait(s, &R->slots[oldest], &e);
        R->slots[oldest].state = SLOT_FREE;
    }
}

static int32_t count_state(const ring *R, int state)
{
    int32_t n = 0;
    for (int32_t i = 0; i < R->n_slots; i++) n += R->slots[i].state == state;
    return n;
}

/* Eager: every free slot gets the next unit of the cyclic schedule, so while
 * the caller computes one unit the other depth slots are loading. */
static void refill(sl_stream *s)
{
    ring *R = s->mode_state;
    int32_t U = s->um.n_units;
    if (R->n_active == 0) return;
    reap_stale(s, false);
    while (count_state(R, SLOT_LOADING) < R->n_active) {
        int32_t free_i = -1;
        for (int32_t i = 0; i < R->n_active; i++) if (R->slots[i].state == SLOT_FREE) { free_i = i; break; }
        if (free_i < 0) return;
        int32_t u = next_streamed(s, R->next_sched);
        if (u < 0) return;                      /* everything pinned */
        sl_unit *un = &s->um.units[u];
        if (un->slot >= 0) return;              /* wrapped onto a unit still held */
        sl_slot *sl = &R->slots[free_i];
        sl->unit = u; sl->state = SLOT_LOADING; sl->seq = R->seq++;
        un->slot = free_i;
        sl->n_job = sl_stream_unit_jobs(s, u, sl->job, sl->buf, sl_loader_fixed(s->L) ? free_i : -1);
        for (int k = 0; k < sl->n_job; k++) sl_loader_submit(s->L, &sl->job[k]);
        R->next_sched = (u + 1) % U;
    }
}

/* Restart the schedule at unit u (out-of-order access or a prefetch hint)
 * without blocking: units already loading that begin the new schedule are
 * kept, the other loads are cancelled and their slots turn stale. */
static void restart_at(sl_stream *s, int32_t u)
{
    ring *R = s->mode_state;
    int32_t U = s->um.n_units, cur = next_streamed(s, u);
    if (cur < 0) return;
    for (int32_t i = 0; i < R->n_slots; i++) R->slots[i].keep = false;
    /* the kept prefix: cur, next, ... while each is loading */
    for (int32_t n = 0; n < U; n++) {
        int32_t sl = s->um.units[cur].slot;
        if (sl < 0 || R->slots[sl].state != SLOT_LOADING) break;
        R->slots[sl].keep = true;
        cur = next_streamed(s, (cur + 1) % U);
    }
    for (int32_t i = 0; i < R->n_slots; i++) {
        sl_slot *sl = &R->slots[i];
        if (sl->state != SLOT_LOADING || sl->keep) continue;
        for (int k = 0; k < sl->n_job; k++) sl_loader_cancel(s->L, &sl->job[k]);
        s->um.units[sl->unit].slot = -1;
        sl->unit = -1;
        sl->state = SLOT_STALE;
    }
    R->next_sched = cur;
    refill(s);
}

/* Pinned units and the embedding table: all submitted, then waited. */
static int load_pinned(sl_stream *s)
{
    ring *R = s->mode_state;
    int32_t U = s->um.n_units;
    R->pmem = calloc((size_t)(U ? U : 1), sizeof *R->pmem);
    sl_io_job *jobs = calloc((size_t)U * SL_MAX_SEGS + 1, sizeof *jobs);
    if (!R->pmem || !jobs) { free(jobs); return sl_err_set(SL_ENOMEM, "streamer: out of memory"); }
    int n_jobs = 0, rc = 0;
    for (int32_t u = 0; u < U; u++) {
        sl_unit *un = &s->um.units[u];
        if (!un->info.pinned || un->aend == un->abeg) continue;
        un->pinned_buf = sl_stream_alloc(s, &R->pmem[u], (size_t)un->info.bytes);
        if (!un->pinned_buf) { rc = sl_err_set(SL_ENOMEM, "streamer: cannot allocate pinned unit %d", (int)u); break; }
        int nj = sl_stream_unit_jobs(s, u, jobs + n_jobs, un->pinned_buf, -1);
        for (int k = 0; k < nj; k++) sl_loader_submit(s->L, &jobs[n_jobs++]);
    }
    const sl_gguf_tensor *e = s->um.embd;
    if (rc == 0 && s->plan.embd_pinned && e) {
        uint64_t a = s->align, b = e->file_offset / a * a;
        uint64_t end = (e->file_offset + e->nbytes + a - 1) / a * a;
        uint8_t *buf = sl_stream_alloc(s, &R->emem, (size_t)(end - b));
        if (!buf) rc = sl_err_set(SL_ENOMEM, "streamer: cannot allocate the embedding table");
        else {
            sl_stream_job_init(s, &jobs[n_jobs], buf, b, end, e->file_offset + e->nbytes, -1, -1);
            sl_loader_submit(s->L, &jobs[n_jobs++]);
            s->embd_data = buf + (e->file_offset - b);
        }
    }
    for (int i = 0; i < n_jobs; i++) {
        int st = sl_loader_wait(s->L, &jobs[i]);
        if (st && rc == 0) rc = sl_err_set(st, "loading pinned data: %s", jobs[i].err);
    }
    free(jobs);
    for (int32_t u = 0; u < U && rc == 0; u++)
        if (s->um.units[u].pinned_buf)
            rc = sl_stream_rows8_unit(s, &s->um.units[u], s->um.units[u].pinned_buf, "pinned unit");
    if (rc) return rc;
    if (s->cfg.mlock) {
        for (int32_t u = 0; u < U; u++)
            if (s->um.units[u].pinned_buf && mlock(R->pmem[u].map, R->pmem[u].len) != 0) {
                sl_stream_add_notice(s, "mlock of pinned units failed: memory not locked");
                break;
            }
    }
    return 0;
}

static int ring_open(sl_stream *s)
{
    ring *R = calloc(1, sizeof *R);
    if (!R) return sl_err_set(SL_ENOMEM, "streamer: out of memory");
    s->mode_state = R;
    R->n_slots = R->n_active = s->plan.n_slots;
    R->slot_bytes = s->plan.slot_bytes;
    struct iovec *iov = NULL;
    if (R->n_slots > 0) {
        R->slots = calloc((size_t)R->n_slots, sizeof *R->slots);
        iov = calloc((size_t)R->n_slots, sizeof *iov);
        uint8_t *m = sl_stream_alloc(s, &R->smem, (size_t)(R->slot_bytes * (uint64_t)R->n_slots));
        if (!R->slots || !iov || !m) {
            free(iov);
            return sl_err_set(SL_ENOMEM, "streamer: cannot allocate %d slots of %llu bytes",
                              (int)R->n_slots, (unsigned long long)R->slot_bytes);
        }
        for (int32_t i = 0; i < R->n_slots; i++) {
            R->slots[i].buf = m + (uint64_t)i * R->slot_bytes;
            R->slots[i].unit = -1;
            iov[i].iov_base = R->slots[i].buf; iov[i].iov_len = (size_t)R->slot_bytes;
        }
    }
    int n_fixed = R->slot_bytes <= SL_MAX_FIXED_BUF ? R->n_slots : 0;
    int rc = 0;
    if (s->um.moe.split) rc = sl_experts_create(s);
    if (!rc) rc = sl_stream_make_loader(s, iov, n_fixed);
    free(iov);
    if (rc) return rc;
    if (n_fixed > 0 && sl_loader_backend(s->L) == SL_IO_URING && !sl_loader_fixed(s->L) && !s->cfg.read_hook)
        sl_stream_add_notice(s, "io_uring fixed buffers not registered (RLIMIT_MEMLOCK?): plain reads");
    rc = load_pinned(s);
    if (rc) return rc;
    R->next_sched = 0;
    refill(s);
    return 0;
}

/* Waits for every read into a slot: before the loader goes. */
static void ring_close(sl_stream *s)
{
    sl_experts_destroy(s);
    ring *R = s->mode_state;
    if (!R) return;
    for (int32_t i = 0; s->L && i < R->n_slots; i++) {
        sl_slot *sl = &R->slots[i];
        const char *e;
        if (sl->state == SLOT_LOADING || sl->state == SLOT_STALE) slot_wait(s, sl, &e);
    }
    free(R->slots);
    sl_owned_free(&R->smem);
    if (R->pmem) for (int32_t u = 0; u < s->um.n_units; u++) sl_owned_free(&R->pmem[u]);
    free(R->pmem);
    sl_owned_free(&R->emem);
    free(R);
    s->mode_state = NULL;
}

static int ring_acquire(sl_stream *s, int32_t unit, const uint8_t **base)
{
    ring *R = s->mode_state;
    sl_unit *un = &s->um.units[unit];
    if (un->info.pinned) { *base = un->pinned_buf; return 0; }
    if (un->slot < 0) restart_at(s, unit);
    /* every slot stale or held: wait for a stale one */
    while (un->slot < 0 && count_state(R, SLOT_STALE) > 0) {
        reap_stale(s, true);
        restart_at(s, unit);
    }
    if (un->slot < 0)
        return sl_err_set(SL_EBUSY, "acquire: no free slot for unit %d (all %d slots acquired)",
                          (int)unit, (int)R->n_slots);
    sl_slot *sl = &R->slots[un->slot];
    double t0 = sl_now_ms();
    const char *err = "";
    int st = slot_wait(s, sl, &err);
    s->stall_ms += sl_now_ms() - t0;
    if (st) {
        sl_err_set(st, "%s", err);
        sl->state = SLOT_FREE; sl->unit = -1; un->slot = -1;
        return st;
    }
    sl->state = SLOT_ACQUIRED;
    *base = sl->buf;
    refill(s);
    return 0;
}

static void ring_release(sl_stream *s, int32_t unit)
{
    ring *R = s->mode_state;
    sl_unit *un = &s->um.units[unit];
    if (un->info.pinned) return;
    sl_slot *sl = &R->slots[un->slot];
    sl->state = SLOT_FREE; sl->unit = -1; un->slot = -1;
    refill(s);
}

/* The next unpinned unit from `unit` on must be the oldest loading slot. */
static void ring_prefetch(sl_stream *s, int32_t unit)
{
    ring *R = s->mode_state;
    int32_t u = next_streamed(s, unit);
    if (u < 0) return;
    int32_t oldest = -1;
    for (int32_t i = 0; i < R->n_slots; i++)
        if (R->slots[i].state == SLOT_LOADING && (oldest < 0 || R->slots[i].seq < R->slots[oldest].seq))
            oldest = i;
    if (oldest >= 0 && R->slots[oldest].unit == u) return;
    if (s->um.units[u].slot >= 0) return;      /* acquired right now */
    restart_at(s, u);
}

/* ---- memory-pressure ladder (stream_pressure.c checks the arguments) ---- */

/* A slot's reads are over and it holds nothing: wait for them. */
static void slot_drain(sl_stream *s, sl_slot *sl)
{
    if (sl->state == SLOT_LOADING || sl->state == SLOT_STALE)
        for (int k = 0; k < sl->n_job; k++) (void)sl_loader_wait(s->L, &sl->job[k]);
    if (sl->unit >= 0) s->um.units[sl->unit].slot = -1;
    sl->unit = -1;
    sl->state = SLOT_FREE;
}

/* A plan that pinned everything has no slot; an unpinned unit needs one to
 * stream through: one slot as large as the largest unit (not registered with
 * io_uring: plain reads). */
static int first_slot(sl_stream *s, ring *R)
{
    uint64_t big = 0;
    for (int32_t u = 0; u < s->um.n_units; u++)
        if (s->um.units[u].info.bytes > big) big = s->um.units[u].info.bytes;
    R->slots = calloc(1, sizeof *R->slots);
    uint8_t *m = R->slots ? sl_stream_alloc(s, &R->smem, (size_t)big) : NULL;
    if (!m) {
        free(R->slots);
        R->slots = NULL;
        return sl_err_set(SL_ENOMEM, "unpinning: cannot allocate a slot of %llu bytes", (unsigned long long)big);
    }
    R->slots[0].buf = m;
    R->slots[0].unit = -1;
    R->n_slots = R->n_active = 1;
    R->slot_bytes = big;
    s->plan.n_slots = 1;
    s->plan.slot_bytes = big;
    s->max_slots = 1;
    return 0;
}

static int ring_set_pinned(sl_stream *s, int32_t unit, bool pinned)
{
    ring *R = s->mode_state;
    sl_unit *un = &s->um.units[unit];
    if (!pinned && R->n_slots == 0) {
        int rc = first_slot(s, R);
        if (rc) return rc;
    }
    if (!pinned) {
        sl_stream_rows8_unpin(un);   /* its slots hold the file's layout */
        sl_owned_free(&R->pmem[unit]);
        un->pinned_buf = NULL;
        un->info.pinned = false;
        un->slot = -1;
        refill(s);
        return 0;
    }
    if (un->slot >= 0) slot_drain(s, &R->slots[un->slot]);
    uint8_t *buf = sl_stream_alloc(s, &R->pmem[unit], (size_t)un->info.bytes);
    if (!buf) return sl_err_set(SL_ENOMEM, "re-pinning unit %d: cannot allocate %llu bytes", (int)unit,
                                (unsigned long long)un->info.bytes);
    sl_io_job job[SL_MAX_SEGS];
    int nj = sl_stream_unit_jobs(s, unit, job, buf, -1), st = 0, k_bad = 0;
    for (int k = 0; k < nj; k++) sl_loader_submit(s->L, &job[k]);
    for (int k = 0; k < nj; k++) {
        int r = sl_loader_wait(s->L, &job[k]);
        if (r && !st) { st = r; k_bad = k; }
    }
    if (st) {
        sl_owned_free(&R->pmem[unit]);
        return sl_err_set(st, "re-pinning unit %d: %s", (int)unit, job[k_bad].err);
    }
    un->pinned_buf = buf;
    un->info.pinned = true;
    if (sl_stream_rows8_unit(s, un, buf, "pinned unit")) {   /* what was not packed stays plain and correct */
        char m[300];
        snprintf(m, sizeof m, "re-pinned unit %d partly left plain: %s", (int)unit, sl_last_error());
        sl_stream_add_notice(s, m);
        sl_err_clear();
    }
    refill(s);
    return 0;
}

static int ring_set_slots(sl_stream *s, int32_t n)
{
    ring *R = s->mode_state;
    for (int32_t i = n; i < R->n_active; i++)
        if (R->slots[i].state == SLOT_ACQUIRED)
            return sl_err_set(SL_EBUSY, "set_slots: slot %d holds acquired unit %d", (int)i, (int)R->slots[i].unit);
    for (int32_t i = n; i < R->n_active; i++) {
        slot_drain(s, &R->slots[i]);
        /* registered buffers: the kernel keeps the pages, and a fresh page
         * here would no longer be the one reads land in */
        if (!sl_loader_fixed(s->L)) (void)madvise(R->slots[i].buf, (size_t)R->slot_bytes, MADV_DONTNEED);
    }
    R->n_active = n;
    refill(s);
    return 0;
}

const sl_stream_mode_ops sl_stream_ring_ops = {
    .open = ring_open, .close = ring_close, .file_at = NULL,
    .acquire = ring_acquire, .release = ring_release, .prefetch = ring_prefetch,
    .set_pinned = ring_set_pinned, .set_slots = ring_set_slots,
};
