/* The pressure ladder's KV_WINDOW rung (engine/session_shift.c sl_session_kv_window,
 * engine/kv.c sl_kv_release), driven by an injected source of available
 * bytes. Reference: a second session of the same model without a ladder
 * whose cache the test shifts itself (sl_forward_kv_shift, the one shift
 * path) with the keep / discard a window of sinks + W must use: when the
 * rung fires, then each time the window is full. Tokens and logits must be
 * bitwise equal, for F16 and q8_0 caches and for gemma3's sliding-window
 * rings; the rung's pages must leave the KV buffer (mincore) and the RSS;
 * lifting the window lets the cache grow past it again without shifts.
 * SL_HOST_ONLY (madvise / mincore figures are the host kernel's). */
#include "sl_test.h"
#include "session_testutil.h"
#include "pressure_testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../engine/session_obj.h"
#include "../engine/sluice.h"
#include "../gguf/gguf_type.h"
#include "../gguf/base/sl_status.h"

#define MODELS SL_SHARED_DIR "/models"
#define GiB (1ll << 30)

/* Resident pages of the whole pages inside [p, p + len). */
static size_t resident_pages(const void *p, size_t len)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t b = ((uintptr_t)p + ps - 1) & ~(uintptr_t)(ps - 1), e = ((uintptr_t)p + len) & ~(uintptr_t)(ps - 1);
    if (e <= b) return 0;
    size_t n = (e - b) / ps, r = 0;
    unsigned char *vec = malloc(n);
    cr_assert_not_null(vec);
    cr_assert_eq(mincore((void *)b, e - b, vec), 0);
    for (size_t i = 0; i < n; i++) r += vec[i] & 1;
    free(vec);
    return r;
}

static size_t kv_resident_pages(const sl_kv *kv)
{
    size_t rows = 0;
    for (int32_t l = 0; l < kv->n_layer; l++) rows += (size_t)kv->cap[l] * (size_t)kv->n_head_kv;
    return resident_pages(kv->k, rows * kv->row_k) + resident_pages(kv->v, rows * kv->row_v);
}

/* The reference's explicit context shift, as the session keeps its history. */
static void ref_shift(sl_model *m, sl_session *s, int32_t keep, int32_t n_discard)
{
    sl_kv *kv = &s->kv;
    int32_t *hist = s->hist;
    cr_assert_eq(sl_forward_kv_shift(&m->fw, kv, keep, n_discard), 0, "%s", sl_last_error());
    memmove(hist + keep, hist + keep + n_discard, (size_t)(kv->n_past - keep) * sizeof *hist);
}

static void same_logits(sl_session *a, sl_session *b, int n_vocab, const char *what, int i)
{
    cr_assert_not_null(sl_session_logits(a));
    cr_assert_eq(memcmp(sl_session_logits(a), sl_session_logits(b), (size_t)n_vocab * sizeof(float)), 0,
                 "%s: logits differ at step %d", what, i);
}

typedef struct wcase {
    const char *model;
    int type;               /* K and V cache type */
    int32_t n_keep;         /* model param; the sinks are BOS + n_keep */
    int32_t window, prompt, n_gen, n_after;
    bool context_shift;
} wcase;

static void run_case(const wcase *c)
{
    enum { CTX = 1024 };
    sl_model_params mp = st_params(CTX, 0, 2);
    mp.mode = SL_MODE_RESIDENT;
    mp.type_k = mp.type_v = c->type;
    mp.n_keep = c->n_keep;
    mp.context_shift = c->context_shift;
    sl_model *m = st_open(c->model, &mp);
    sl_model_info mi;
    sl_model_get_info(m, &mi);
    const int V = mi.n_vocab;
    sl_session *a = st_session(m, false), *b = st_session(m, false);
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = 0;
    sp.repeat_penalty = 1.3f;   /* reads the history: it must follow the shifts too */
    cr_assert_eq(sl_session_set_sampling(a, &sp), 0);
    cr_assert_eq(sl_session_set_sampling(b, &sp), 0);

    pt_fake f = { .avail = 100 * GiB };
    sl_pressure_params pp = pt_params(&f);
    pp.emergency_window = c->window;
    cr_assert_eq(sl_session_set_pressure(a, &pp), 0, "%s", sl_session_errmsg(a));

    int32_t *ids = malloc((size_t)c->prompt * sizeof *ids);
    cr_assert_not_null(ids);
    uint64_t x = 11;
    ids[0] = mi.bos_id;
    for (int i = 1; i < c->prompt; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = 3 + (int32_t)((x >> 33) % (uint64_t)(V - 3));
    }
    cr_assert_eq(sl_session_feed_tokens(a, ids, c->prompt), 0, "%s", sl_session_errmsg(a));
    cr_assert_eq(sl_session_feed_tokens(b, ids, c->prompt), 0);
    free(ids);

    /* pressure: resident mode has one rung, the window */
    const int32_t keep = 1 + c->n_keep, cap = keep + c->window;
    int32_t held = c->prompt - keep;
    while (held > c->window) held -= held / 2;
    sl_kv *kva = &a->kv;
    size_t pages0 = kv_resident_pages(kva);
    int64_t rss0 = pt_rss_bytes();
    f.avail = 0;
    cr_assert_eq(sl_session_pressure_poll(a), 1, "%s", sl_session_errmsg(a));
    int64_t rss1 = pt_rss_bytes();
    size_t pages1 = kv_resident_pages(kva);
    sl_stats st;
    sl_session_get_stats(a, &st);
    const sl_pressure_event *e = &f.ev[0];
    cr_assert_eq(e->rung, SL_RUNG_KV_WINDOW);
    cr_assert_eq(e->dir, -1);
    cr_assert_eq(e->status, 0, "%s", sl_session_errmsg(a));
    cr_assert_eq(e->from, c->prompt);
    cr_assert_eq(e->to, keep + held, "%s: kept %d, expected %d", c->model, e->to, keep + held);
    cr_assert_eq(sl_session_n_past(a), keep + held);
    cr_assert_leq(sl_session_n_past(a), cap);
    cr_assert_eq(st.pressure_kv_window, cap);
    cr_assert_eq(st.n_ctx_shift, 1);
    cr_assert_eq(st.n_ctx_dropped, c->prompt - keep - held);
    /* what the rung gave back left the buffer and the process */
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    cr_assert_gt(e->freed_bytes, 0);
    cr_assert_eq((uint64_t)e->freed_bytes, st.pressure_kv_released);
    cr_assert_eq((pages0 - pages1) * ps, (size_t)e->freed_bytes, "%s: %zu -> %zu resident KV pages, freed %lld",
                 c->model, pages0, pages1, (long long)e->freed_bytes);
    cr_log_info("%s %s: kept %d of %d positions, released %lld bytes; KV pages %zu -> %zu; RSS %lld -> %lld",
                c->model, sl_gguf_type_name((uint32_t)c->type), e->to, e->from, (long long)e->freed_bytes,
                pages0, pages1, (long long)rss0, (long long)rss1);
    cr_assert_leq(rss1, rss0 - e->freed_bytes + 64 * 1024, "RSS %lld -> %lld, freed %lld", (long long)rss0,
                  (long long)rss1, (long long)e->freed_bytes);

    /* the reference does the same shift by hand */
    ref_shift(m, b, keep, c->prompt - keep - held);
    int n_shift = 0;
    for (int i = 0; i < c->n_gen; i++) {
        int32_t ta, tb;
        if (sl_session_n_past(b) + 1 > cap) {   /* window full: drop half of the unkept */
            ref_shift(m, b, keep, (sl_session_n_past(b) - keep) / 2);
            n_shift++;
        }
        cr_assert_eq(sl_session_step(a, &ta), 0, "%s step %d: %s", c->model, i, sl_session_errmsg(a));
        cr_assert_eq(sl_session_step(b, &tb), 0, "%s", sl_session_errmsg(b));
        cr_assert_eq(ta, tb, "%s: step %d: %d vs %d", c->model, i, ta, tb);
        cr_assert_leq(sl_session_n_past(a), cap);
        cr_assert_eq(sl_session_n_past(a), sl_session_n_past(b));
        same_logits(a, b, V, c->model, i);
    }
    cr_assert_geq(n_shift, 2, "the generation must fill the window more than once");
    sl_session_get_stats(a, &st);
    cr_assert_eq(st.n_ctx_shift, 1 + n_shift);

    /* memory back: the window lifts, the cache grows past it without shifting */
    f.avail = 100 * GiB;
    int n_ev = f.n_events;
    cr_assert_eq(sl_session_pressure_poll(a), 1);
    cr_assert_eq(f.ev[n_ev].rung, SL_RUNG_KV_WINDOW);
    cr_assert_eq(f.ev[n_ev].dir, 1);
    cr_assert_eq(f.ev[n_ev].from, cap);
    cr_assert_eq(f.ev[n_ev].to, mi.n_ctx);
    sl_session_get_stats(a, &st);
    cr_assert_eq(st.pressure_kv_window, 0);
    cr_assert_eq(st.pressure_depth, 0);
    int64_t shifts = st.n_ctx_shift;
    for (int i = 0; i < c->n_after; i++) {
        int32_t ta, tb;
        cr_assert_eq(sl_session_step(a, &ta), 0, "%s", sl_session_errmsg(a));
        cr_assert_eq(sl_session_step(b, &tb), 0);
        cr_assert_eq(ta, tb);
        same_logits(a, b, V, c->model, c->n_gen + i);
    }
    cr_assert_gt(sl_session_n_past(a), cap + c->n_after / 2, "lifted: %d positions", sl_session_n_past(a));
    sl_session_get_stats(a, &st);
    cr_assert_eq(st.n_ctx_shift, shifts, "no shift after the window lifted");
    sl_session_destroy(a);
    sl_session_destroy(b);
    sl_model_close(m);
}

Test(pressure_window, f16_cache, .timeout = 120)
{
    wcase c = { MODELS "/synth-tiny-q8_0.gguf", SL_GGML_F16, 0, 32, 600, 60, 48, false };
    run_case(&c);
}

/* q8_0 rows are re-rotated through their Hadamard basis; sinks BOS + 3. */
Test(pressure_window, q8_0_cache_with_sinks, .timeout = 120)
{
    wcase c = { MODELS "/synth-tiny-q8_0.gguf", SL_GGML_Q8_0, 3, 40, 600, 70, 48, true };
    run_case(&c);
}

/* gemma3: five sliding-window layers (window 16) hold rings of 79 rows, which
 * the shift and the release handle per layer; the global layer gives back. */
Test(pressure_window, gemma3_window_rings, .timeout = 120)
{
    wcase c = { MODELS "/synth2-gemma3-q4_k_m.gguf", SL_GGML_F16, 0, 24, 300, 50, 40, true };
    run_case(&c);
}

/* Under the window a feed of more tokens than the window holds still goes
 * in (up to n_ctx), after the halvings; and a window over n_ctx keeps all. */
Test(pressure_window, long_feed_and_wide_window, .timeout = 60)
{
    sl_model_params mp = st_params(64, 0, 2);
    sl_model *m = st_open(MODELS "/stories260K.gguf", &mp);
    sl_session *s = st_session(m, false);
    pt_fake f = { .avail = 0 };
    sl_pressure_params pp = pt_params(&f);
    pp.emergency_window = 100;   /* wider than n_ctx: nothing to drop */
    cr_assert_eq(sl_session_set_pressure(s, &pp), 0);
    int32_t ids[40];
    ids[0] = 1;
    for (int i = 1; i < 40; i++) ids[i] = 3 + (i * 37) % 500;
    cr_assert_eq(sl_session_feed_tokens(s, ids, 40), 0);
    cr_assert_eq(sl_session_pressure_poll(s), 1);
    cr_assert_eq(f.ev[0].status, 0);
    cr_assert_eq(f.ev[0].to, 40);
    sl_stats st;
    sl_session_get_stats(s, &st);
    cr_assert_eq(st.pressure_kv_window, 64, "capped by n_ctx");
    cr_assert_eq(st.n_ctx_shift, 0);
    sl_session_reset_stats(s);
    sl_session_get_stats(s, &st);
    cr_assert_eq(st.pressure_kv_window, 64, "a state, kept by a reset of the counters");
    /* a narrow window: 40 -> BOS + 39 -> 20 -> 10 held */
    cr_assert_eq(sl_session_set_pressure(s, NULL), 0);
    pp.emergency_window = 10;
    f.n_events = 0;
    cr_assert_eq(sl_session_set_pressure(s, &pp), 0);
    cr_assert_eq(sl_session_pressure_poll(s), 1);
    cr_assert_eq(f.ev[0].to, 1 + 10);
    cr_assert_eq(sl_session_feed_tokens(s, ids + 1, 30), 0, "%s", sl_session_errmsg(s));
    /* 11 -> 6 -> 4 -> 3 -> 2 (halving stops at one unkept), then all 30 */
    cr_assert_eq(sl_session_n_past(s), 2 + 30);
    cr_assert_eq(sl_session_feed_tokens(s, ids + 1, 1), 0);
    cr_assert_eq(sl_session_n_past(s), 9 + 1, "32 -> 17 -> 9, then the token");
    st_close(s, m);
}
