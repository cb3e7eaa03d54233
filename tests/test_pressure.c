/* Memory-pressure ladder (engine/pressure.c, io/stream_pressure.c) with an
 * injected source of available bytes: the order of the rungs, enough steps
 * to cover a deficit, hysteresis on the way up, external levels (Android
 * onTrimMemory), the streamer's plan following each step, and generation that
 * goes on with bitwise the same logits while layers are unpinned and slots
 * dropped (a KV hook stands in for the window rung, tested by
 * tests/test_pressure_window.c). Also the /proc parsers. SL_HOST_ONLY (writes temp files). */
#include "sl_test.h"
#include "pressure_testutil.h"
#include "session_testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../engine/pressure.h"
#include "../engine/sluice.h"
#include "../gguf/base/sl_status.h"
#include "../io/sluice_stream.h"

#define Q4K SL_SHARED_DIR "/models/synth-tiny-q4_k.gguf"
#define GiB (1ll << 30)

static struct { int calls; int32_t n; } g_kv;   /* the KV hook has no context argument */
static int kv_hook(sl_session *s, int32_t n)
{
    (void)s;
    g_kv.calls++;
    g_kv.n = n;
    return 0;
}

static sl_model *open_stream(int32_t max_pinned)
{
    sl_model_params mp = st_params(64, 0, 2);
    mp.mode = SL_MODE_STREAM;
    mp.max_pinned = max_pinned;
    return st_open(Q4K, &mp);
}

static const sl_stream_plan *plan_of(sl_model *m)
{
    return sl_stream_get_plan(sl_model_stream(m));
}

static void start(sl_session *s, pt_fake *f)
{
    sl_pressure_params p = pt_params(f);
    cr_assert_eq(p.floor_bytes, 1ull << 30);
    cr_assert_eq(p.emergency_window, 256);
    p.kv_window = kv_hook;
    g_kv.calls = g_kv.n = 0;
    cr_assert_eq(sl_session_set_pressure(s, &p), 0, "%s", sl_session_errmsg(s));
}

static int depth_of(sl_session *s)
{
    sl_stats st;
    sl_session_get_stats(s, &st);
    return st.pressure_depth;
}

Test(pressure, ladder_down_and_up, .timeout = 60)
{
    sl_model *m = open_stream(4), *ref_m = open_stream(4);
    cr_assert_eq(plan_of(m)->n_pinned, 4);
    cr_assert_eq(plan_of(m)->n_slots, 4);
    int32_t slots0 = plan_of(m)->n_slots;
    sl_session *s = st_session(m, false), *ref = st_session(ref_m, false);
    pt_fake f = { .avail = 10 * GiB };
    start(s, &f);
    int32_t ids[24];
    for (int i = 0; i < 24; i++) ids[i] = 1 + (i * 977) % 31000;

    cr_assert_eq(sl_session_pressure_poll(s), 0, "plenty of memory: nothing to do");
    /* just under the floor: one step (the last pinned unit) covers it */
    f.avail = GiB - 1;
    cr_assert_eq(sl_session_pressure_poll(s), 1);
    cr_assert_eq(f.ev[0].dir, -1);
    cr_assert_eq(f.ev[0].rung, SL_RUNG_PINS);
    cr_assert_eq(f.ev[0].from, 4);
    cr_assert_eq(f.ev[0].to, 3);
    cr_assert_gt(f.ev[0].freed_bytes, 0);
    cr_assert_eq(f.ev[0].status, 0);
    cr_assert_eq(plan_of(m)->n_pinned, 3);

    /* generation goes on, same logits as an unpressured model */
    cr_assert_eq(sl_session_feed_tokens(s, ids, 12), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_feed_tokens(ref, ids, 12), 0);
    cr_assert_eq(memcmp(sl_session_logits(s), sl_session_logits(ref), 32000 * sizeof(float)), 0);

    /* nothing left: every rung, in order: pins, slots down to 1, KV window */
    f.avail = 0;
    int steps = sl_session_pressure_poll(s);
    cr_assert_eq(steps, 3 + (slots0 - 1) + 1, "%d steps", steps);
    for (int i = 1; i <= 3; i++) cr_assert_eq(f.ev[i].rung, SL_RUNG_PINS, "event %d", i);
    for (int i = 4; i < 4 + slots0 - 1; i++) cr_assert_eq(f.ev[i].rung, SL_RUNG_SLOTS, "event %d", i);
    cr_assert_eq(f.ev[4 + slots0 - 1].rung, SL_RUNG_KV_WINDOW);
    cr_assert_eq(g_kv.calls, 1);
    cr_assert_eq(g_kv.n, 256);
    cr_assert_eq(plan_of(m)->n_pinned, 0);
    cr_assert_eq(plan_of(m)->n_slots, 1);
    cr_assert_eq(depth_of(s), 4 + slots0 - 1 + 1);
    cr_assert_eq(sl_session_pressure_poll(s), 0, "at the bottom");

    /* still generating, still the same numbers, with everything streamed through one slot */
    cr_assert_eq(sl_session_feed_tokens(s, ids + 12, 12), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_feed_tokens(ref, ids + 12, 12), 0);
    cr_assert_eq(memcmp(sl_session_logits(s), sl_session_logits(ref), 32000 * sizeof(float)), 0);
    int32_t ta, tb;
    cr_assert_eq(sl_session_step(s, &ta), 0);
    cr_assert_eq(sl_session_step(ref, &tb), 0);

    /* hysteresis: above the floor but within it, no climb */
    f.avail = GiB + 256ll * 1024 * 1024;
    cr_assert_eq(sl_session_pressure_poll(s), 0);
    /* memory back: one step up per poll, in reverse order */
    f.avail = 10 * GiB;
    int before = f.n_events, d = depth_of(s);
    for (int i = 0; i < d; i++) cr_assert_eq(sl_session_pressure_poll(s), 1, "climb %d", i);
    cr_assert_eq(sl_session_pressure_poll(s), 0);
    cr_assert_eq(f.ev[before].rung, SL_RUNG_KV_WINDOW);
    cr_assert_eq(f.ev[before].dir, 1);
    cr_assert_eq(f.ev[before + 1].rung, SL_RUNG_SLOTS);
    cr_assert_eq(f.ev[f.n_events - 1].rung, SL_RUNG_PINS);
    cr_assert_lt(f.ev[f.n_events - 1].freed_bytes, 0, "re-pinning takes memory");
    cr_assert_eq(plan_of(m)->n_pinned, 4);
    cr_assert_eq(plan_of(m)->n_slots, slots0);
    cr_assert_eq(depth_of(s), 0);
    cr_assert_eq(sl_session_feed_tokens(s, &ta, 1), 0);
    cr_assert_eq(sl_session_feed_tokens(ref, &tb, 1), 0);
    cr_assert_eq(memcmp(sl_session_logits(s), sl_session_logits(ref), 32000 * sizeof(float)), 0);
    sl_stats st;
    sl_session_get_stats(s, &st);
    cr_assert_eq(st.n_pressure_down, 4 + slots0 - 1 + 1);
    cr_assert_eq(st.n_pressure_up, 4 + slots0 - 1 + 1);
    sl_session_destroy(s);
    sl_session_destroy(ref);
    sl_model_close(m);
    sl_model_close(ref_m);
}

Test(pressure, external_levels, .timeout = 60)
{
    sl_model *m = open_stream(4);
    sl_session *s = st_session(m, false);
    pt_fake f = { .avail = 10 * GiB };
    start(s, &f);
    int32_t slots0 = plan_of(m)->n_slots;
    cr_assert_eq(sl_session_pressure_level(s, SL_PRESSURE_MODERATE), 2, "half of 4 pins");
    cr_assert_eq(plan_of(m)->n_pinned, 2);
    cr_assert_eq(sl_session_pressure_poll(s), 0, "plenty of memory does not undo a level");
    cr_assert_eq(sl_session_pressure_level(s, SL_PRESSURE_LOW), 2);
    cr_assert_eq(plan_of(m)->n_pinned, 0);
    cr_assert_eq(sl_session_pressure_level(s, SL_PRESSURE_CRITICAL), slots0 - 1 + 1);
    cr_assert_eq(g_kv.calls, 1);
    cr_assert_eq(sl_session_pressure_level(s, 7), SL_EINVAL);
    cr_assert_eq(sl_session_pressure_level(s, SL_PRESSURE_NONE), 0, "a level only allows the climb");
    cr_assert_eq(sl_session_pressure_poll(s), 1);
    /* turning the ladder off climbs all the way back */
    cr_assert_eq(sl_session_set_pressure(s, NULL), 0);
    cr_assert_eq(plan_of(m)->n_pinned, 4);
    cr_assert_eq(plan_of(m)->n_slots, slots0);
    cr_assert_eq(sl_session_pressure_poll(s), SL_EINVAL, "off");
    int32_t id = 5, t;
    cr_assert_eq(sl_session_feed_tokens(s, &id, 1), 0);
    cr_assert_eq(sl_session_step(s, &t), 0);
    st_close(s, m);
}

/* Resident mode has only the KV rung, and by default it acts (the rung
 * itself: tests/test_pressure_window.c). */
Test(pressure, resident_has_only_the_window)
{
    sl_model_params mp = st_params(32, 0, 2);
    mp.mode = SL_MODE_RESIDENT;
    sl_model *m = st_open(Q4K, &mp);
    sl_session *s = st_session(m, false);
    int32_t ids[20];
    for (int i = 0; i < 20; i++) ids[i] = 1 + (i * 977) % 31000;
    cr_assert_eq(sl_session_feed_tokens(s, ids, 20), 0);
    pt_fake f = { .avail = 0 };
    sl_pressure_params p = pt_params(&f);
    p.emergency_window = 8;
    cr_assert_eq(sl_session_set_pressure(s, &p), 0);
    cr_assert_eq(sl_session_pressure_poll(s), 1);
    cr_assert_eq(f.ev[0].rung, SL_RUNG_KV_WINDOW);
    cr_assert_eq(f.ev[0].status, 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(f.ev[0].from, 20);
    cr_assert_eq(f.ev[0].to, 1 + 5, "BOS + 19 -> 10 -> 5 held");
    cr_assert_eq(sl_session_n_past(s), 1 + 5);
    p.min_slots = 0;
    cr_assert_eq(sl_session_set_pressure(s, &p), SL_EINVAL);
    st_close(s, m);
}

Test(pressure, proc_parsers)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/sl_test_pressure_%d", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("MemTotal:       24000000 kB\nMemFree:         1000 kB\nMemAvailable:    2048 kB\n", f);
    fclose(f);
    cr_assert_eq(sl_pressure_meminfo(path), 2048 * 1024);
    f = fopen(path, "w");
    fputs("some avg10=12.50 avg60=3.00 avg300=1.00 total=123\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=9\n", f);
    fclose(f);
    cr_assert_float_eq(sl_pressure_psi(path), 12.5, 1e-9);
    cr_assert_eq(sl_pressure_meminfo(path), -1, "no MemAvailable line");
    unlink(path);
    cr_assert_eq(sl_pressure_meminfo(path), -1);
    cr_assert_lt(sl_pressure_psi(path), 0);
    cr_assert_gt(sl_pressure_meminfo("/proc/meminfo"), 0);
}

/* A plan that pinned every unit has no slot: the first unpin makes one, and
 * the numbers stay the same. */
Test(pressure, all_pinned_gets_a_slot, .timeout = 60)
{
    sl_model *m = open_stream(-1), *ref_m = open_stream(-1);
    cr_assert_eq(plan_of(m)->n_slots, 0);
    int32_t pins = plan_of(m)->n_pinned;
    cr_assert_gt(pins, 2);
    sl_session *s = st_session(m, false), *ref = st_session(ref_m, false);
    pt_fake f = { .avail = 0 };
    start(s, &f);
    cr_assert_eq(sl_session_pressure_poll(s), pins + 1, "every pin, then the KV window");
    cr_assert_eq(plan_of(m)->n_pinned, 0);
    cr_assert_eq(plan_of(m)->n_slots, 1);
    int32_t ids[10];
    for (int i = 0; i < 10; i++) ids[i] = 1 + (i * 3571) % 31000;
    cr_assert_eq(sl_session_feed_tokens(s, ids, 10), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_feed_tokens(ref, ids, 10), 0);
    cr_assert_eq(memcmp(sl_session_logits(s), sl_session_logits(ref), 32000 * sizeof(float)), 0);
    f.avail = 100 * GiB;
    for (int i = 0; i < pins + 1; i++) cr_assert_eq(sl_session_pressure_poll(s), 1, "climb %d", i);
    cr_assert_eq(plan_of(m)->n_pinned, pins);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 3), 0);
    cr_assert_eq(sl_session_feed_tokens(ref, ids, 3), 0);
    cr_assert_eq(memcmp(sl_session_logits(s), sl_session_logits(ref), 32000 * sizeof(float)), 0);
    sl_session_destroy(s);
    sl_session_destroy(ref);
    sl_model_close(m);
    sl_model_close(ref_m);
}
