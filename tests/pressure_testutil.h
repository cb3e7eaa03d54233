/* Helpers for the memory-pressure tests: an injected source of available
 * bytes that records the ladder's steps, and the process's RSS. Header-only
 * (static inline). */
#ifndef SL_PRESSURE_TESTUTIL_H
#define SL_PRESSURE_TESTUTIL_H

#include "sl_test.h"
#include "../engine/sluice.h"

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define PT_MAX_EVENTS 64

typedef struct pt_fake {
    int64_t avail;          /* what the source reports */
    int n_events;           /* steps seen (may exceed PT_MAX_EVENTS) */
    sl_pressure_event ev[PT_MAX_EVENTS];
} pt_fake;

static inline int64_t pt_fake_source(void *ctx) { return ((pt_fake *)ctx)->avail; }

static inline void pt_record(void *ctx, const sl_pressure_event *e)
{
    pt_fake *f = ctx;
    if (f->n_events < PT_MAX_EVENTS) f->ev[f->n_events] = *e;
    f->n_events++;
}

/* Params of a ladder polled only when the test says (interval 0), fed by f's
 * avail and recording its steps in f. */
static inline sl_pressure_params pt_params(pt_fake *f)
{
    sl_pressure_params p;
    sl_pressure_params_init(&p);
    p.interval_ms = 0;
    p.source = pt_fake_source; p.source_ctx = f;
    p.on_step = pt_record; p.step_ctx = f;
    return p;
}

/* Resident set of this process, bytes (/proc/self/statm). */
static inline int64_t pt_rss_bytes(void)
{
    long long size, rss;
    FILE *f = fopen("/proc/self/statm", "r");
    cr_assert_not_null(f);
    cr_assert_eq(fscanf(f, "%lld %lld", &size, &rss), 2);
    fclose(f);
    return rss * sysconf(_SC_PAGESIZE);
}

#endif
