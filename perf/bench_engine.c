/* Bench runner "engine": the real forward pass through engine/sluice.h.
 * Cold: file evicted, model opened, prompt fed, first token sampled. Then
 * n_gen decode steps (greedy), then — warm — the session is reset and the
 * same prompt fed again with the weights/streamer already up. Prompt tokens
 * are fixed pseudo-random ids (no tokenizer dependence). */
#include "../engine/sluice.h"
#include "../gguf/base/sl_status.h"
#include "../io/sluice_stream.h"
#include "bench.h"
#include "perf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run_engine(const bench_cfg *c, bench_sample *o, char *err, size_t err_len)
{
    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.n_threads = c->threads;
    mp.n_ctx = c->n_prompt + c->n_gen + 8;
    mp.mode = c->mode;
    mp.io = c->io;
    mp.mem_budget = c->mem_budget;
    double t0 = bench_cold_start(c->model);
    sl_model *m = NULL;
    sl_session *s = NULL;
    int32_t *ids = NULL;
    if (sl_model_open(&m, c->model, &mp)) { snprintf(err, err_len, "open: %s", sl_last_error()); return -1; }
    if (sl_session_create(&s, m)) { snprintf(err, err_len, "session: %s", sl_last_error()); sl_model_close(m); return -1; }
    sl_model_info mi;
    sl_model_get_info(m, &mi);
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = 0;
    sl_session_set_sampling(s, &sp);
    ids = malloc(sizeof *ids * (size_t)c->n_prompt);
    uint64_t x = 0x2545f4914f6cdd1dull;
    int32_t lo = mi.n_vocab > 1000 ? 256 : 0;
    for (int i = 0; i < c->n_prompt && ids; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        ids[i] = lo + (int32_t)(x % (uint64_t)(mi.n_vocab - lo));
    }
    if (ids && mi.bos_id >= 0 && mi.add_bos) ids[0] = mi.bos_id;
    int rc = ids ? 0 : -1;
    int32_t tok = 0;
    /* cold: open + prompt + first token */
    if (!rc) rc = sl_session_feed_tokens(s, ids, c->n_prompt);
    if (!rc) rc = sl_session_sample(s, &tok);
    double t1 = perf_now();
    /* decode */
    sl_stats st;
    memset(&st, 0, sizeof st);
    uint64_t rb0 = 0, rb1 = 0;
    if (!rc) {
        sl_session_reset_stats(s);
        rb0 = perf_proc_read_bytes();
        rc = sl_session_accept(s, tok);
        for (int i = 1; i < c->n_gen && !rc; i++) rc = sl_session_step(s, &tok);
        sl_session_get_stats(s, &st);
        rb1 = perf_proc_read_bytes();
    }
    double t2 = perf_now();
    /* warm: same prompt, fresh KV, weights already up */
    sl_stats sw;
    memset(&sw, 0, sizeof sw);
    double t3 = t2, t4 = t2;
    if (!rc) {
        sl_session_reset(s);
        sl_session_reset_stats(s);
        t3 = perf_now();
        rc = sl_session_feed_tokens(s, ids, c->n_prompt);
        if (!rc) rc = sl_session_sample(s, &tok);
        t4 = perf_now();
        sl_session_get_stats(s, &sw);
    }
    if (rc) snprintf(err, err_len, "run: %s", sl_session_errmsg(s));
    const sl_stream_plan *pl = sl_model_stream(m) ? sl_stream_get_plan(sl_model_stream(m)) : NULL;
    bench_sample_names(o, mi.mode, mi.io);
    o->model_bytes = mi.model_bytes;
    o->budget_bytes = pl ? pl->budget : c->mem_budget;
    o->ttft_cold_ms = (t1 - t0) * 1e3;
    o->ttft_warm_ms = (t4 - t3) * 1e3;
    o->prompt_ms = sw.prompt_ms > 0 ? sw.prompt_ms : o->ttft_warm_ms;
    o->n_decode = (int)st.n_decode;
    o->decode_ms = st.decode_ms > 0 ? st.decode_ms : (t2 - t1) * 1e3;
    if (!o->n_decode) { o->n_decode = c->n_gen; }
    o->stall_ms = st.stall_ms;
    o->decode_bytes = st.bytes_read;
    /* mmap mode: the streamer does not see page faults; the kernel's per-task count does */
    if (!o->decode_bytes && mi.mode == SL_MODE_MMAP && rb1 > rb0) o->decode_bytes = rb1 - rb0;
    o->compute_included = true;
    uint64_t xr = st.expert_hits + st.expert_misses;
    o->expert_hit_rate = xr ? (double)st.expert_hits / (double)xr : NAN;
    if (pl && pl->n_expert > 0)
        o->token_bytes = mi.model_bytes - (uint64_t)((double)pl->expert_bytes *
                                                     (1.0 - (double)pl->n_expert_used / pl->n_expert));
    snprintf(o->note, sizeof o->note, "%s, %d pinned of %d layers", mi.isa ? mi.isa : "?", pl ? pl->n_pinned : -1,
             mi.n_layer);
    free(ids);
    sl_session_destroy(s);
    sl_model_close(m);
    return rc ? -1 : 0;
}

BENCH_RUNNER(bench_runner_engine, "engine", 2, true, run_engine)
