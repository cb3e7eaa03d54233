/* Memory-pressure ladder (sluice.h "memory pressure"). The ladder is a list
 * of steps taken one at a time, deepest last:
 *   EXPERTS    one step per sl_stream_expert_slots step of the expert cache,
 *              down to n_expert_used slots (MoE files with experts streamed).
 *              First: a slot's bytes are read again only when its expert is
 *              routed to (k / n_expert of the tokens under uniform routing),
 *              a pinned unit's on every token.
 *   PINS       one step per pinned unit (layer or lm-head chunk; last first)
 *   SLOTS      one step per slot above min_slots
 *   KV_WINDOW  one step (session.c sl_session_kv_window: a context shift down to
 *              the sinks + emergency_window, the rows past them released)
 * depth = steps taken. Down: while the source is below the floor, enough steps
 * in one poll to cover the deficit (a shortage is urgent). Up: one step per
 * poll, only when the source exceeds floor + hysteresis + what the step takes
 * back (so climbing cannot itself push memory under the floor), and never
 * above the depth an external level asks for. */
#include "pressure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../gguf/base/sl_internal.h"
#include "../io/sluice_stream.h"
#include "session_parts.h"
#include "../gguf/base/sl_platform.h"

struct sl_pressure {
    sl_pressure_params p;
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
    bool busy;               /* a step is running (the KV hook may feed tokens) */
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

/* ---- steps ------------------------------------------------------------------- */

/* EXPERTS steps between x0 and xs slots (the last one may be short). */
static int32_t xsteps(const struct sl_pressure *pr, int32_t xs)
{
    return pr->xstep > 0 ? (pr->x0 - xs + pr->xstep - 1) / pr->xstep : 0;
}

static int32_t max_depth(const struct sl_pressure *pr)
{
    int32_t slots = pr->slots0 > pr->p.min_slots ? pr->slots0 - pr->p.min_slots : 0;
    return xsteps(pr, pr->xmin) + pr->n_pins + slots + 1;
}

static int32_t depth(const struct sl_pressure *pr)
{
    return xsteps(pr, pr->xs) + pr->unpinned + (pr->slots0 - pr->slots) + pr->window;
}

/* Expert slots one step up from xs (steps are counted from x0). */
static int32_t xslots_up(const struct sl_pressure *pr)
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

static void emit(sl_session_parts *sp, struct sl_pressure *pr, int dir, int rung, int32_t from, int32_t to,
                 int64_t avail, int64_t freed, int status)
{
    if (status == 0) {
        if (dir < 0) sp->stats->n_pressure_down++;
        else sp->stats->n_pressure_up++;
    }
    sp->stats->pressure_depth = depth(pr);
    if (!pr->p.on_step) return;
    sl_pressure_event e = { sizeof e, dir, rung, from, to, avail, freed, status, sl_now_ms() - pr->t0 };
    pr->p.on_step(pr->p.step_ctx, &e);
}

/* One step down; its bytes in *freed. 1 if taken, 0 if the ladder is at the bottom. */
static int step_down(sl_session *s, sl_session_parts *sp, struct sl_pressure *pr, int64_t avail, int64_t *freed)
{
    *freed = 0;
    if (pr->xs > pr->xmin) {
        int32_t to = pr->x0 - (xsteps(pr, pr->xs) + 1) * pr->xstep, from = pr->xs;
        if (to < pr->xmin) to = pr->xmin;
        uint64_t fr = 0;
        int rc = sl_stream_set_expert_slots(sp->st, to, &fr);
        if (rc == 0) { pr->xs = to; *freed = (int64_t)fr; }
        else pr->xmin = pr->x0 = pr->xs;   /* cannot: drop the rung */
        emit(sp, pr, -1, SL_RUNG_EXPERTS, from, pr->xs, avail, *freed, rc);
        return 1;
    }
    if (pr->unpinned < pr->n_pins) {
        int32_t u = pr->pins[pr->n_pins - 1 - pr->unpinned];
        int32_t from = pr->n_pins - pr->unpinned;
        int rc = sl_stream_set_pinned(sp->st, u, false);
        if (rc == 0) { pr->unpinned++; *freed = unit_bytes(sp->st, u); }
        else pr->unpinned = pr->n_pins;   /* cannot: skip the rung, do not retry each poll */
        emit(sp, pr, -1, SL_RUNG_PINS, from, rc ? from : from - 1, avail, *freed, rc);
        return 1;
    }
    if (pr->slots > pr->p.min_slots) {
        bool returned = false;
        int rc = sl_stream_set_slots(sp->st, pr->slots - 1, &returned);
        int32_t from = pr->slots;
        if (rc == 0) { pr->slots--; *freed = returned ? slot_bytes(sp->st) : 0; }
        else pr->slots0 = pr->slots;   /* this mode cannot: drop the rung */
        emit(sp, pr, -1, SL_RUNG_SLOTS, from, pr->slots, avail, *freed, rc);
        return 1;
    }
    if (!pr->window) {
        pr->window = true;
        int32_t n = sp->kv->n_past;
        uint64_t rel = sp->stats->pressure_kv_released;
        sl_err_clear();
        int rc = pr->p.kv_window(s, pr->p.emergency_window);
        *freed = pr->window_freed = (int64_t)(sp->stats->pressure_kv_released - rel);
        emit(sp, pr, -1, SL_RUNG_KV_WINDOW, n, rc ? n : sp->kv->n_past, avail, *freed, rc);
        return 1;
    }
    return 0;
}

/* Bytes the next step up takes back (0: none left). */
static int64_t up_cost(sl_session_parts *sp, struct sl_pressure *pr)
{
    if (pr->window) return pr->window_freed;
    if (pr->slots < pr->slots0) return slot_bytes(sp->st);
    if (pr->unpinned > 0) return unit_bytes(sp->st, pr->pins[pr->n_pins - pr->unpinned]);
    if (pr->xs < pr->x0) return (int64_t)(xslots_up(pr) - pr->xs) * (int64_t)expert_slot_bytes(sp->st);
    return -1;
}

static void step_up(sl_session *s, sl_session_parts *sp, struct sl_pressure *pr, int64_t avail)
{
    if (pr->window) {   /* the window lifts; dropped positions stay dropped */
        sl_stats st;
        sl_session_get_stats(s, &st);
        int32_t cap = st.pressure_kv_window;
        pr->window = false;
        (void)sl_session_kv_window(s, 0);   /* cannot fail */
        emit(sp, pr, +1, SL_RUNG_KV_WINDOW, cap ? cap : pr->p.emergency_window, sp->n_ctx, avail, 0, 0);
    } else if (pr->slots < pr->slots0) {
        int rc = sl_stream_set_slots(sp->st, pr->slots + 1, NULL);
        int32_t from = pr->slots;
        if (rc == 0) pr->slots++;
        emit(sp, pr, +1, SL_RUNG_SLOTS, from, pr->slots, avail, rc ? 0 : -slot_bytes(sp->st), rc);
    } else if (pr->unpinned > 0) {
        int32_t u = pr->pins[pr->n_pins - pr->unpinned];
        int32_t from = pr->n_pins - pr->unpinned;
        int rc = sl_stream_set_pinned(sp->st, u, true);
        if (rc == 0) pr->unpinned--;
        emit(sp, pr, +1, SL_RUNG_PINS, from, rc ? from : from + 1, avail, rc ? 0 : -unit_bytes(sp->st, u), rc);
    } else if (pr->xs < pr->x0) {   /* the new slots' pages come back as experts are read in */
        int32_t from = pr->xs, to = xslots_up(pr);
        int rc = sl_stream_set_expert_slots(sp->st, to, NULL);
        if (rc == 0) pr->xs = to;
        emit(sp, pr, +1, SL_RUNG_EXPERTS, from, pr->xs, avail,
             rc ? 0 : -(int64_t)(to - from) * (int64_t)expert_slot_bytes(sp->st), rc);
    }
}

static int32_t level_depth(const struct sl_pressure *pr)
{
    switch (pr->level) {
    case SL_PRESSURE_MODERATE: return xsteps(pr, pr->xmin) + (pr->n_pins + 1) / 2;
    case SL_PRESSURE_LOW: return xsteps(pr, pr->xmin) + pr->n_pins;
    case SL_PRESSURE_CRITICAL: return max_depth(pr);
    default: return 0;
    }
}

/* ---- API --------------------------------------------------------------------- */

void sl_pressure_free(struct sl_pressure *pr)
{
    if (!pr) return;
    free(pr->pins);
    free(pr);
}

static int sess_fail(sl_session_parts *sp, int rc)
{
    snprintf(sp->err, sp->err_cap, "%s", sl_last_error());
    return rc;
}

int sl_session_set_pressure(sl_session *s, const sl_pressure_params *pp)
{
    sl_session_parts sp;
    sl_session_parts_get(s, &sp);
    struct sl_pressure *old = *sp.pressure;
    if (old) {   /* climb back to where the ladder started */
        old->level = SL_PRESSURE_NONE;
        while (depth(old) > 0) {
            int32_t d = depth(old);
            step_up(s, &sp, old, -1);
            if (depth(old) == d) break;   /* a step up failed (e.g. no memory to re-pin) */
        }
        sl_pressure_free(old);
        *sp.pressure = NULL;
        sp.stats->pressure_depth = 0;
    }
    if (!pp) return 0;
    sl_pressure_params p;
    sl_pressure_params_init(&p);
    if (sl_struct_in(&p, sizeof p, pp, SL_PRESSURE_PARAMS_MIN_SIZE, "sl_pressure_params"))
        return sess_fail(&sp, SL_EINVAL);
    if (p.min_slots < 1 || p.emergency_window < 1 || p.interval_ms < 0 || p.interval_ms != p.interval_ms)
        return sess_fail(&sp, sl_err_set(SL_EINVAL, "pressure: min_slots and emergency_window must be >= 1, "
                                         "interval_ms >= 0"));
    if (!p.kv_window) p.kv_window = sl_session_kv_window;
    struct sl_pressure *pr = calloc(1, sizeof *pr);
    int32_t U = sl_stream_n_units(sp.st);
    if (pr) pr->pins = malloc((size_t)(U > 0 ? U : 1) * sizeof *pr->pins);
    if (!pr || !pr->pins) {
        sl_pressure_free(pr);
        return sess_fail(&sp, sl_err_set(SL_ENOMEM, "pressure: out of memory"));
    }
    pr->p = p;
    const sl_stream_plan *pl = sl_stream_get_plan(sp.st);
    bool streamed = pl && pl->mode == SL_MODE_STREAM;
    /* a plan without slots gets one at the first unpin (stream_ring.c) */
    for (int32_t u = 0; streamed && u < U; u++) {
        sl_stream_unit ui;
        if (!sl_stream_unit_info(sp.st, u, &ui) && ui.pinned) pr->pins[pr->n_pins++] = u;
    }
    pr->slots0 = pr->slots = streamed ? pl->n_slots : 0;
    if (pr->slots0 < p.min_slots) pr->slots0 = pr->slots = p.min_slots;   /* no SLOTS rung */
    pr->x0 = pr->xs = sl_stream_expert_slots(sp.st, NULL, &pr->xstep);
    pr->xmin = pl && pl->n_expert_used > 0 ? pl->n_expert_used : 1;
    if (pr->xmin > pr->x0) pr->xmin = pr->x0;   /* 0 slots (no expert cache): no EXPERTS rung */
    pr->t0 = sl_now_ms();
    pr->last_poll = -1e300;
    *sp.pressure = pr;
    return 0;
}

static int64_t source_bytes(const struct sl_pressure *pr, bool *psi_short)
{
    *psi_short = false;
    if (pr->p.source) return pr->p.source(pr->p.source_ctx);
    if (pr->p.psi_avg10 > 0) {
        double v = sl_pressure_psi(pr->p.psi_path ? pr->p.psi_path : "/proc/pressure/memory");
        *psi_short = v > pr->p.psi_avg10;
    }
    return sl_pressure_meminfo(pr->p.meminfo_path ? pr->p.meminfo_path : "/proc/meminfo");
}

/* Steps down to at least `want` (level) and by the source's deficit; up by one. */
static int adjust(sl_session *s, sl_session_parts *sp, struct sl_pressure *pr, int64_t avail, bool psi_short)
{
    int steps = 0;
    int64_t freed, got = 0;
    while (depth(pr) < level_depth(pr) && step_down(s, sp, pr, avail, &freed)) steps++;
    if (avail < 0) return steps;
    int64_t floor = (int64_t)pr->p.floor_bytes;
    if (avail < floor || psi_short) {
        int64_t deficit = avail < floor ? floor - avail : 1;
        while (got < deficit && step_down(s, sp, pr, avail, &freed)) { got += freed; steps++; }
        return steps;
    }
    int64_t cost = up_cost(sp, pr);
    if (cost >= 0 && depth(pr) > level_depth(pr) && avail > floor + (int64_t)pr->p.hysteresis_bytes + cost) {
        step_up(s, sp, pr, avail);
        steps++;
    }
    return steps;
}

static int poll_now(sl_session *s, sl_session_parts *sp, struct sl_pressure *pr)
{
    pr->busy = true;
    pr->last_poll = sl_now_ms();
    bool psi_short;
    int64_t avail = source_bytes(pr, &psi_short);
    int steps = adjust(s, sp, pr, avail, psi_short);
    pr->busy = false;
    return steps;
}

/* The session's ladder; NULL with the session's message set when it is off. */
static struct sl_pressure *ladder(sl_session *s, sl_session_parts *sp, const char *what)
{
    sl_session_parts_get(s, sp);
    if (!*sp->pressure) sess_fail(sp, sl_err_set(SL_EINVAL, "%s: the ladder is off (set_pressure)", what));
    return *sp->pressure;
}

int sl_session_pressure_poll(sl_session *s)
{
    sl_session_parts sp;
    struct sl_pressure *pr = ladder(s, &sp, "pressure_poll");
    if (!pr) return SL_EINVAL;
    return pr->busy ? 0 : poll_now(s, &sp, pr);
}

int sl_session_pressure_level(sl_session *s, int level)
{
    sl_session_parts sp;
    struct sl_pressure *pr = ladder(s, &sp, "pressure_level");
    if (!pr) return SL_EINVAL;
    if (level < SL_PRESSURE_NONE || level > SL_PRESSURE_CRITICAL)
        return sess_fail(&sp, sl_err_set(SL_EINVAL, "pressure_level: %d is not an sl_pressure_level", level));
    pr->level = level;
    if (pr->busy) return 0;
    pr->busy = true;
    int steps = adjust(s, &sp, pr, -1, false);
    pr->busy = false;
    return steps;
}

void sl_pressure_tick(sl_session *s)
{
    sl_session_parts sp;
    sl_session_parts_get(s, &sp);
    struct sl_pressure *pr = *sp.pressure;
    if (!pr || pr->busy || pr->p.interval_ms <= 0) return;
    if (sl_now_ms() - pr->last_poll < pr->p.interval_ms) return;
    poll_now(s, &sp, pr);
}
