/* Memory-pressure ladder (sluice.h "memory pressure"). The ladder is a list
 * of steps taken one at a time, deepest last:
 *   EXPERTS    one step per sl_stream_expert_slots step of the expert cache,
 *              down to n_expert_used slots (MoE files with experts streamed).
 *              First: a slot's bytes are read again only when its expert is
 *              routed to (k / n_expert of the tokens under uniform routing),
 *              a pinned unit's on every token.
 *   PINS       one step per pinned unit (layer or lm-head chunk; last first)
 *   SLOTS      one step per slot above min_slots
 *   KV_WINDOW  one step (a context shift down to the sinks + emergency_window,
 *              the rows past them released: session_shift.c)
 * depth = steps taken. Down: while the source is below the floor, enough steps
 * in one poll to cover the deficit (a shortage is urgent). Up: one step per
 * poll, only when the source exceeds floor + hysteresis + what the step takes
 * back (so climbing cannot itself push memory under the floor), and never
 * above the depth an external level asks for. This file decides; the session
 * carries each step out and hands it back (pressure.h). */
#include "pressure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"
#include "../gguf/base/sl_platform.h"

/* What a run of steps is doing (begun by sl_pressure_begin_*). */
enum { RUN_IDLE, RUN_LEVEL, RUN_DEFICIT, RUN_UP, RUN_RESET };

struct sl_pressure {
    sl_pressure_params p;
    sl_stream *st;
    double t0, last_poll;
    int level;
    int32_t *pins;           /* units (layers, lm-head chunks) pinned when the ladder started */
    int32_t n_pins;
    int32_t slots0;          /* slots when the ladder started */
    int32_t unpinned;        /* PINS steps taken: pins[n_pins - unpinned ..] are streamed */
    int32_t slots;           /* slots in use */
    int32_t x0, xs, xmin, xstep;   /* expert slots: at the start, in use, floor, per step */
    bool window;             /* KV_WINDOW step taken */
    int64_t window_freed;    /* bytes it gave back (what lifting it may take again) */
    bool busy;               /* a step is running (the KV action may feed tokens) */
    /* the run in progress */
    int run;
    int64_t avail;           /* the source's bytes (-1: none, a level or a reset) */
    bool psi_short;          /* PSI says short whatever the bytes */
    int64_t deficit, got;    /* RUN_DEFICIT: bytes to free, freed so far */
    int32_t run_depth;       /* RUN_RESET: depth before the step (no change: stop) */
};


/* ---- sources ---------------------------------------------------------------- */

int64_t sl_pressure_meminfo(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
    fclose(f);
    return kb < 0 ? -1 : (int64_t)kb * 1024;
}

double sl_pressure_psi(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    double v = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "some avg10=%lf", &v) == 1) break;
    fclose(f);
    return v;
}

static int64_t source_bytes(const sl_pressure *pr, bool *psi_short)
{
    *psi_short = false;
    if (pr->p.source) return pr->p.source(pr->p.source_ctx);
    if (pr->p.psi_avg10 > 0) {
        double v = sl_pressure_psi(pr->p.psi_path ? pr->p.psi_path : "/proc/pressure/memory");
        *psi_short = v > pr->p.psi_avg10;
    }
    return sl_pressure_meminfo(pr->p.meminfo_path ? pr->p.meminfo_path : "/proc/meminfo");
}

/* ---- params ------------------------------------------------------------------ */

int sl_pressure_params_init_sized(sl_pressure_params *p, size_t struct_size)
{
    sl_pressure_params d;
    memset(&d, 0, sizeof d);
    d.floor_bytes = 1ull << 30;
    d.hysteresis_bytes = 512ull << 20;
    d.psi_avg10 = 10;
    d.emergency_window = 256;
    d.min_slots = 1;
    d.interval_ms = 100;
    return sl_struct_init(p, struct_size, &d, sizeof d, SL_PRESSURE_PARAMS_MIN_SIZE, "sl_pressure_params");
}

/* ---- depth ------------------------------------------------------------------- */

/* EXPERTS steps between x0 and xs slots (the last one may be short). */
static int32_t xsteps(const sl_pressure *pr, int32_t xs)
{
    return pr->xstep > 0 ? (pr->x0 - xs + pr->xstep - 1) / pr->xstep : 0;
}

static int32_t max_depth(const sl_pressure *pr)
{
    int32_t slots = pr->slots0 > pr->p.min_slots ? pr->slots0 - pr->p.min_slots : 0;
    return xsteps(pr, pr->xmin) + pr->n_pins + slots + 1;
}

static int32_t depth(const sl_pressure *pr)
{
    return xsteps(pr, pr->xs) + pr->unpinned + (pr->slots0 - pr->slots) + pr->window;
}

static int32_t level_depth(const sl_pressure *pr)
{
    switch (pr->level) {
    case SL_PRESSURE_MODERATE: return xsteps(pr, pr->xmin) + (pr->n_pins + 1) / 2;
    case SL_PRESSURE_LOW: return xsteps(pr, pr->xmin) + pr->n_pins;
    case SL_PRESSURE_CRITICAL: return max_depth(pr);
    default: return 0;
    }
}

/* Expert slots one step up from xs (steps are counted from x0). */
static int32_t xslots_up(const sl_pressure *pr)
{
    int32_t n = pr->x0 - (xsteps(pr, pr->xs) - 1) * pr->xstep;
    return n > pr->x0 ? pr->x0 : n;
}

static int64_t unit_bytes(sl_stream *st, int32_t u)
{
    sl_stream_unit ui;
    return sl_stream_unit_info(st, u, &ui) ? 0 : (int64_t)ui.bytes;
}

static uint64_t expert_slot_bytes(sl_stream *st)
{
    const sl_stream_plan *pl = sl_stream_get_plan(st);
    return pl ? pl->expert_slot_bytes : 0;
}

static int64_t slot_bytes(sl_stream *st)
{
    const sl_stream_plan *pl = sl_stream_get_plan(st);
    return pl ? (int64_t)pl->slot_bytes : 0;
}

/* ---- decisions ----------------------------------------------------------------- */

/* The next step down; false at the bottom. */
static bool decide_down(const sl_pressure *pr, sl_pressure_step *d)
{
    d->dir = -1;
    if (pr->xs > pr->xmin) {
        int32_t to = pr->x0 - (xsteps(pr, pr->xs) + 1) * pr->xstep;
        d->rung = SL_RUNG_EXPERTS;
        d->expert_slots = to < pr->xmin ? pr->xmin : to;
    } else if (pr->unpinned < pr->n_pins) {
        d->rung = SL_RUNG_PINS;
        d->unit = pr->pins[pr->n_pins - 1 - pr->unpinned];
    } else if (pr->slots > pr->p.min_slots) {
        d->rung = SL_RUNG_SLOTS;
        d->slots = pr->slots - 1;
    } else if (!pr->window) {
        d->rung = SL_RUNG_KV_WINDOW;
        d->window = pr->p.emergency_window;
        d->kv_window = pr->p.kv_window;
    } else {
        return false;
    }
    return true;
}

/* The next step up (the window first, the expert cache last); false at the top. */
static bool decide_up(const sl_pressure *pr, sl_pressure_step *d)
{
    d->dir = +1;
    if (pr->window) {
        d->rung = SL_RUNG_KV_WINDOW;
    } else if (pr->slots < pr->slots0) {
        d->rung = SL_RUNG_SLOTS;
        d->slots = pr->slots + 1;
    } else if (pr->unpinned > 0) {
        d->rung = SL_RUNG_PINS;
        d->unit = pr->pins[pr->n_pins - pr->unpinned];
    } else if (pr->xs < pr->x0) {   /* the new slots' pages come back as experts are read in */
        d->rung = SL_RUNG_EXPERTS;
        d->expert_slots = xslots_up(pr);
    } else {
        return false;
    }
    return true;
}

/* Bytes the next step up takes back (-1: none left). */
static int64_t up_cost(const sl_pressure *pr)
{
    if (pr->window) return pr->window_freed;
    if (pr->slots < pr->slots0) return slot_bytes(pr->st);
    if (pr->unpinned > 0) return unit_bytes(pr->st, pr->pins[pr->n_pins - pr->unpinned]);
    if (pr->xs < pr->x0) return (int64_t)(xslots_up(pr) - pr->xs) * (int64_t)expert_slot_bytes(pr->st);
    return -1;
}

/* A run: down to at least the level's depth; then, with a source reading, down
 * by its deficit, or else up by one step when there is room for it. */
bool sl_pressure_next(sl_pressure *pr, sl_pressure_step *d)
{
    memset(d, 0, sizeof *d);
    int64_t floor = (int64_t)pr->p.floor_bytes;
    switch (pr->run) {
    case RUN_LEVEL:
        if (depth(pr) < level_depth(pr) && decide_down(pr, d)) return true;
        if (pr->avail < 0) break;
        if (pr->avail < floor || pr->psi_short) {
            pr->run = RUN_DEFICIT;
            pr->deficit = pr->avail < floor ? floor - pr->avail : 1;
            pr->got = 0;
            return sl_pressure_next(pr, d);
        }
        if (up_cost(pr) >= 0 && depth(pr) > level_depth(pr) &&
            pr->avail > floor + (int64_t)pr->p.hysteresis_bytes + up_cost(pr)) {
            pr->run = RUN_UP;   /* one step up at most */
            return decide_up(pr, d);
        }
        break;
    case RUN_DEFICIT:
        if (pr->got < pr->deficit && decide_down(pr, d)) return true;
        break;
    case RUN_RESET:
        pr->run_depth = depth(pr);
        if (pr->run_depth > 0 && decide_up(pr, d)) return true;
        break;
    default:
        break;
    }
    pr->run = RUN_IDLE;
    pr->busy = false;
    return false;
}

/* ---- records ------------------------------------------------------------------- */

static void emit(sl_pressure *pr, sl_stats *stats, const sl_pressure_step *d, int32_t from, int32_t to,
                 int64_t freed)
{
    if (d->status == 0) {
        if (d->dir < 0) stats->n_pressure_down++;
        else stats->n_pressure_up++;
    }
    stats->pressure_depth = depth(pr);
    if (!pr->p.on_step) return;
    sl_pressure_event e = { sizeof e, d->dir, d->rung, from, to, pr->avail, freed, d->status, sl_now_ms() - pr->t0 };
    pr->p.on_step(pr->p.step_ctx, &e);
}

static void done_down(sl_pressure *pr, const sl_pressure_step *d, sl_stats *stats)
{
    bool ok = d->status == 0;
    int64_t freed = 0;
    int32_t from, to;
    switch (d->rung) {
    case SL_RUNG_EXPERTS:
        from = pr->xs;
        if (ok) { pr->xs = d->expert_slots; freed = (int64_t)d->released; }
        else pr->xmin = pr->x0 = pr->xs;   /* cannot: drop the rung */
        to = pr->xs;
        break;
    case SL_RUNG_PINS:
        from = pr->n_pins - pr->unpinned;
        if (ok) { pr->unpinned++; freed = unit_bytes(pr->st, d->unit); }
        else pr->unpinned = pr->n_pins;   /* cannot: skip the rung, do not retry each poll */
        to = ok ? from - 1 : from;
        break;
    case SL_RUNG_SLOTS:
        from = pr->slots;
        if (ok) { pr->slots--; freed = d->returned ? slot_bytes(pr->st) : 0; }
        else pr->slots0 = pr->slots;   /* this mode cannot: drop the rung */
        to = pr->slots;
        break;
    default:   /* KV_WINDOW: taken also when refused (the bottom was reached) */
        pr->window = true;
        freed = pr->window_freed = (int64_t)d->released;
        from = d->from;
        to = ok ? d->to : d->from;
        break;
    }
    if (pr->run == RUN_DEFICIT) pr->got += freed;
    emit(pr, stats, d, from, to, freed);
}

static void done_up(sl_pressure *pr, const sl_pressure_step *d, sl_stats *stats)
{
    bool ok = d->status == 0;
    int64_t taken = 0;
    int32_t from, to;
    switch (d->rung) {
    case SL_RUNG_KV_WINDOW:   /* the window lifts; dropped positions stay dropped */
        pr->window = false;
        from = d->from ? d->from : pr->p.emergency_window;
        to = d->to;
        break;
    case SL_RUNG_SLOTS:
        from = pr->slots;
        if (ok) { pr->slots++; taken = slot_bytes(pr->st); }
        to = pr->slots;
        break;
    case SL_RUNG_PINS:
        from = pr->n_pins - pr->unpinned;
        if (ok) { pr->unpinned--; taken = unit_bytes(pr->st, d->unit); }
        to = ok ? from + 1 : from;
        break;
    default:   /* EXPERTS */
        from = pr->xs;
        if (ok) {
            pr->xs = d->expert_slots;
            taken = (int64_t)(d->expert_slots - from) * (int64_t)expert_slot_bytes(pr->st);
        }
        to = pr->xs;
        break;
    }
    emit(pr, stats, d, from, to, -taken);
}

void sl_pressure_done(sl_pressure *pr, const sl_pressure_step *d, sl_stats *stats)
{
    if (d->dir < 0) done_down(pr, d, stats);
    else done_up(pr, d, stats);
    if (pr->run == RUN_UP || (pr->run == RUN_RESET && depth(pr) == pr->run_depth))
        pr->run = RUN_IDLE;   /* one step up per poll; a reset stops at a step that failed */
}

/* ---- runs ------------------------------------------------------------------------ */

bool sl_pressure_due(const sl_pressure *pr)
{
    return !pr->busy && pr->p.interval_ms > 0 && sl_now_ms() - pr->last_poll >= pr->p.interval_ms;
}

bool sl_pressure_begin_poll(sl_pressure *pr)
{
    if (pr->busy) return false;
    pr->busy = true;
    pr->last_poll = sl_now_ms();
    pr->avail = source_bytes(pr, &pr->psi_short);
    pr->run = RUN_LEVEL;
    return true;
}

bool sl_pressure_begin_level(sl_pressure *pr, int level)
{
    pr->level = level;
    if (pr->busy) return false;
    pr->busy = true;
    pr->avail = -1;
    pr->psi_short = false;
    pr->run = RUN_LEVEL;
    return true;
}

void sl_pressure_begin_reset(sl_pressure *pr)
{
    pr->level = SL_PRESSURE_NONE;
    pr->avail = -1;
    pr->run = RUN_RESET;
}

/* ---- the ladder ------------------------------------------------------------------- */

void sl_pressure_free(sl_pressure *pr)
{
    if (!pr) return;
    free(pr->pins);
    free(pr);
}

int sl_pressure_create(sl_pressure **out, const sl_pressure_params *pp, sl_stream *st)
{
    *out = NULL;
    sl_pressure_params p;
    sl_pressure_params_init(&p);
    if (sl_struct_in(&p, sizeof p, pp, SL_PRESSURE_PARAMS_MIN_SIZE, "sl_pressure_params")) return SL_EINVAL;
    if (p.min_slots < 1 || p.emergency_window < 1 || p.interval_ms < 0 || p.interval_ms != p.interval_ms)
        return sl_err_set(SL_EINVAL, "pressure: min_slots and emergency_window must be >= 1, interval_ms >= 0");
    sl_pressure *pr = calloc(1, sizeof *pr);
    int32_t U = sl_stream_n_units(st);
    if (pr) pr->pins = malloc((size_t)(U > 0 ? U : 1) * sizeof *pr->pins);
    if (!pr || !pr->pins) {
        sl_pressure_free(pr);
        return sl_err_set(SL_ENOMEM, "pressure: out of memory");
    }
    pr->p = p;
    pr->st = st;
    const sl_stream_plan *pl = sl_stream_get_plan(st);
    bool streamed = pl && pl->mode == SL_MODE_STREAM;
    /* a plan without slots gets one at the first unpin (stream_ring.c) */
    for (int32_t u = 0; streamed && u < U; u++) {
        sl_stream_unit ui;
        if (!sl_stream_unit_info(st, u, &ui) && ui.pinned) pr->pins[pr->n_pins++] = u;
    }
    pr->slots0 = pr->slots = streamed ? pl->n_slots : 0;
    if (pr->slots0 < p.min_slots) pr->slots0 = pr->slots = p.min_slots;   /* no SLOTS rung */
    pr->x0 = pr->xs = sl_stream_expert_slots(st, NULL, &pr->xstep);
    pr->xmin = pl && pl->n_expert_used > 0 ? pl->n_expert_used : 1;
    if (pr->xmin > pr->x0) pr->xmin = pr->x0;   /* 0 slots (no expert cache): no EXPERTS rung */
    pr->t0 = sl_now_ms();
    pr->last_poll = -1e300;
    *out = pr;
    return 0;
}
