/* Bench runner "stream": the io/ streamer alone (io/sluice_stream.h), no
 * compute. A decode step acquires and releases every unit of the cyclic
 * schedule (layers, then lm-head chunks) and reads one token_embd row, so the
 * figures are the streamer's own: bytes read, time blocked in acquire, plan. */
#include "../io/sluice_stream.h"
#include "bench.h"
#include "perf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One pass over the schedule; returns 0 or -1 with err. */
static int one_token(sl_stream *s, int32_t n_units, uint64_t row, uint8_t *rowbuf, size_t rowlen,
                     volatile uint64_t *sink, char *err, size_t err_len)
{
    if (rowbuf && sl_stream_read_row(s, "token_embd.weight", row, rowbuf, rowlen) == 0) *sink += rowbuf[0];
    for (int32_t u = 0; u < n_units; u++) {
        sl_stream_view v;
        if (sl_stream_acquire(s, u, &v)) {
            snprintf(err, err_len, "acquire unit %d: %s", u, sl_stream_errmsg(s));
            return -1;
        }
        for (uint32_t t = 0; t < v.n_tensors; t++)
            if (v.tensors[t].nbytes) *sink += ((const uint8_t *)v.tensors[t].data)[v.tensors[t].nbytes - 1];
        if (sl_stream_release(s, u)) {
            snprintf(err, err_len, "release unit %d: %s", u, sl_stream_errmsg(s));
            return -1;
        }
    }
    return 0;
}

static int run_stream(const bench_cfg *c, bench_sample *o, char *err, size_t err_len)
{
    sl_stream_config sc;
    sl_stream_config_init(&sc);
    sc.mode = c->mode;
    sc.io = c->io;
    sc.mem_budget = c->mem_budget;
    sc.req_bytes = c->req_bytes;
    sc.queue_depth = c->queue_depth;
    double t0 = bench_cold_start(c->model);
    sl_stream *s = NULL;
    if (sl_stream_open(&s, c->model, &sc)) {
        snprintf(err, err_len, "%s", sl_stream_open_errmsg());
        return -1;
    }
    const sl_stream_plan *pl = sl_stream_get_plan(s);
    bench_sample_names(o, pl->mode, pl->io);
    o->model_bytes = pl->model_bytes;
    o->budget_bytes = pl->budget;
    int32_t nu = sl_stream_n_units(s), n_pinned = pl->n_pinned;   /* pl dies with s */
    /* one token_embd row per step (1 MiB holds any row of a real model) */
    size_t rowlen = 1u << 20;
    uint8_t *rowbuf = malloc(rowlen);
    volatile uint64_t sink = 0;
    int rc = one_token(s, nu, 1, rowbuf, rowlen, &sink, err, err_len);   /* prompt: one pass */
    double t1 = perf_now();
    if (!rc) {
        sl_stream_reset_stats(s);
        for (int i = 0; i < c->n_gen && !rc; i++)
            rc = one_token(s, nu, (uint64_t)(i * 7919 + 3) % 1000, rowbuf, rowlen, &sink, err, err_len);
    }
    double t2 = perf_now();
    sl_stream_stats st;
    sl_stream_get_stats(s, &st);
    double t3 = t2;
    if (!rc) { rc = one_token(s, nu, 2, rowbuf, rowlen, &sink, err, err_len); t3 = perf_now(); }
    sl_stream_close(s);
    free(rowbuf);
    if (rc) return -1;
    o->ttft_cold_ms = (t1 - t0) * 1e3;
    o->ttft_warm_ms = (t3 - t2) * 1e3;   /* a prompt pass with the stream already open */
    o->prompt_ms = o->ttft_warm_ms;
    o->decode_ms = (t2 - t1) * 1e3;
    o->n_decode = c->n_gen;
    o->stall_ms = st.stall_ms;
    o->decode_bytes = st.bytes_read;
    o->compute_included = false;
    snprintf(o->note, sizeof o->note, "streamer only (%d units, %d pinned), no compute", nu, n_pinned);
    return 0;
}

BENCH_RUNNER(bench_runner_stream, "stream", 1, false, run_stream)
