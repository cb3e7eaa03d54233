/* Memory-pressure ladder (sluice.h "memory pressure"): decides the steps,
 * one at a time; the session applies each (session_pressure.c) and hands it
 * back with what it did, and the ladder records it (event, counters). The
 * ladder reads the streamer's plan but changes nothing itself. */
#ifndef SL_ENGINE_PRESSURE_H
#define SL_ENGINE_PRESSURE_H

#include <stdbool.h>
#include <stdint.h>

#include "../io/sluice_stream.h"
#include "sluice.h"

typedef struct sl_pressure sl_pressure;

/* One step: the decision (dir .. kv_window), then what applying it did. */
typedef struct sl_pressure_step {
    int dir;                    /* -1 down (give memory back), +1 up (take it again) */
    int rung;                   /* enum sl_pressure_rung */
    int32_t expert_slots;       /* EXPERTS: the expert cache's slots after the step */
    int32_t unit;               /* PINS: the unit to unpin (down) or pin again (up) */
    int32_t slots;              /* SLOTS: the streaming slots after the step */
    int32_t window;             /* KV_WINDOW down: positions kept past the sinks (up lifts the window) */
    sl_pressure_kv_window_fn kv_window;   /* KV_WINDOW down: the params' action, NULL: the engine's */
    /* filled in by the one who applies it */
    int status;                 /* 0, or the SL_E* that refused the step */
    uint64_t released;          /* down, EXPERTS and KV_WINDOW: bytes given back */
    bool returned;              /* down, SLOTS: a slot's buffer went back */
    int32_t from, to;           /* KV_WINDOW: down, cache positions before / after; up, the cap
                                 * lifted (0: none) / n_ctx */
} sl_pressure_step;

/* A ladder over the streamer st with the caller's params (SL_EINVAL with a message for bad ones). */
int  sl_pressure_create(sl_pressure **out, const sl_pressure_params *p, sl_stream *st);
void sl_pressure_free(sl_pressure *pr);

/* A poll is due: not in one, interval_ms on and passed since the last. */
bool sl_pressure_due(const sl_pressure *pr);
/* Starts stepping: a poll of the source, an external level, or back to the
 * top (before the ladder goes). false: a poll runs already (a step's action
 * fed tokens), nothing to do now. */
bool sl_pressure_begin_poll(sl_pressure *pr);
bool sl_pressure_begin_level(sl_pressure *pr, int level);
void sl_pressure_begin_reset(sl_pressure *pr);
/* The next step of what was begun; false when there is none (it is over). */
bool sl_pressure_next(sl_pressure *pr, sl_pressure_step *d);
/* Records the applied step d: the ladder's state, stats' step counters and
 * depth, the on_step event. */
void sl_pressure_done(sl_pressure *pr, const sl_pressure_step *d, sl_stats *stats);

/* The default source: MemAvailable of /proc/meminfo (bytes), -1 if unreadable. */
int64_t sl_pressure_meminfo(const char *path);
/* PSI "some avg10" of /proc/pressure/memory (%), -1 if absent (kernels without PSI). */
double sl_pressure_psi(const char *path);

#endif
