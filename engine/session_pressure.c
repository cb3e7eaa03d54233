/* The memory-pressure ladder of a session (sluice.h "memory pressure"): the
 * ladder (pressure.c) decides each step; this file carries it out on the
 * model's streamer or the session's cache and hands it back. */
#include "session_obj.h"

#include "pressure.h"

/* Carries out d and fills in what it did (pressure.h). */
static void apply(sl_session *s, sl_pressure_step *d)
{
    sl_stream *st = s->m->st;
    bool down = d->dir < 0;
    switch (d->rung) {
    case SL_RUNG_EXPERTS:
        d->status = sl_stream_set_expert_slots(st, d->expert_slots, down ? &d->released : NULL);
        break;
    case SL_RUNG_PINS:
        d->status = sl_stream_set_pinned(st, d->unit, !down);
        break;
    case SL_RUNG_SLOTS:
        d->status = sl_stream_set_slots(st, d->slots, down ? &d->returned : NULL);
        break;
    default:   /* KV_WINDOW */
        if (down) {
            uint64_t rel = s->stats.pressure_kv_released;
            d->from = s->kv.n_past;
            sl_err_clear();
            d->status = d->kv_window ? d->kv_window(s, d->window) : sl_session_kv_window(s, d->window);
            d->released = s->stats.pressure_kv_released - rel;
            d->to = s->kv.n_past;
        } else {
            d->from = sl_session_kv_cap(s);
            (void)sl_session_kv_window(s, 0);   /* lifting cannot fail */
            d->to = s->m->n_ctx;
        }
        break;
    }
}

/* The steps of the run begun on the ladder; returns how many were taken. */
static int run_ladder(sl_session *s, struct sl_pressure *pr)
{
    int steps = 0;
    sl_pressure_step d;
    while (sl_pressure_next(pr, &d)) {
        apply(s, &d);
        sl_pressure_done(pr, &d, &s->stats);
        steps++;
    }
    return steps;
}

int sl_session_set_pressure(sl_session *s, const sl_pressure_params *pp)
{
    if (s->pressure) {   /* climb back to where the ladder started */
        sl_pressure_begin_reset(s->pressure);
        run_ladder(s, s->pressure);
        sl_pressure_free(s->pressure);
        s->pressure = NULL;
        s->stats.pressure_depth = 0;
    }
    if (!pp) return 0;
    int rc = sl_pressure_create(&s->pressure, pp, s->m->st);
    return rc ? sl_session_fail(s, rc) : 0;
}

/* The session's ladder; NULL with the session's message set when it is off. */
static struct sl_pressure *ladder(sl_session *s, const char *what)
{
    if (!s->pressure) sl_session_fail(s, sl_err_set(SL_EINVAL, "%s: the ladder is off (set_pressure)", what));
    return s->pressure;
}

int sl_session_pressure_poll(sl_session *s)
{
    struct sl_pressure *pr = ladder(s, "pressure_poll");
    if (!pr) return SL_EINVAL;
    return sl_pressure_begin_poll(pr) ? run_ladder(s, pr) : 0;
}

int sl_session_pressure_level(sl_session *s, int level)
{
    struct sl_pressure *pr = ladder(s, "pressure_level");
    if (!pr) return SL_EINVAL;
    if (level < SL_PRESSURE_NONE || level > SL_PRESSURE_CRITICAL)
        return sl_session_fail(s, sl_err_set(SL_EINVAL, "pressure_level: %d is not an sl_pressure_level", level));
    return sl_pressure_begin_level(pr, level) ? run_ladder(s, pr) : 0;
}

void sl_session_pressure_tick(sl_session *s)
{
    if (s->pressure && sl_pressure_due(s->pressure) && sl_pressure_begin_poll(s->pressure)) run_ladder(s, s->pressure);
}
