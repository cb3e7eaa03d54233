/* Memory planner: decisions for budgets from tiny to huge, the numbers
 * behind them (peak within budget, pins spread evenly, streamed bytes), mode
 * overrides, reserve, the lm head split into chunks; `sluice plan` and an
 * opened model agree. Portable (no io_uring). */
#include "stream_testutil.h"
#include "../gguf/base/sl_platform.h"   /* sl_buf_round: the planner's page rounding */
#include "../engine/reserve.h"       /* what `sluice plan` computes */

static const st_model_spec spec = { .n_layers = 8, .ne0 = 256, .rows_q = 64, .rows_up = 150,
                                    .n_vocab = 900, .tied = false };

static void tmp_model(char *path, size_t n, const char *tag, const st_model_spec *sp)
{
    snprintf(path, n, "/tmp/sl_test_planner_%s_%d.gguf", tag, (int)getpid());
    cr_assert_eq(st_make_model(path, sp), 0, "%s", sl_last_error());
}

static int plan(const char *path, uint64_t budget, int mode, uint64_t reserve, int32_t max_pinned,
                sl_stream_plan *p, char *err, size_t err_len)
{
    sl_stream_config c;
    sl_stream_config_init(&c);
    c.no_direct = true;
    c.mem_budget = budget; c.mode = mode; c.reserve_bytes = reserve; c.max_pinned = max_pinned;
    return sl_stream_plan_model(path, &c, p, err, err_len);
}

Test(planner, budgets_tiny_to_huge)
{
    char path[256], err[512];
    tmp_model(path, sizeof path, "sweep", &spec);
    sl_stream_plan p;
    /* tiny: cannot even hold the slots */
    int rc = plan(path, 100000, SL_MODE_AUTO, 0, -1, &p, err, sizeof err);
    cr_assert_eq(rc, SL_ENOMEM);
    cr_assert(!p.fits);
    cr_assert_not_null(strstr(err, "too small"), "%s", err);
    cr_assert_gt(p.peak_bytes, 100000);
    /* huge: resident, nothing streamed */
    cr_assert_eq(plan(path, 64ull << 30, SL_MODE_AUTO, 0, -1, &p, err, sizeof err), 0, "%s", err);
    cr_assert_eq(p.mode, SL_MODE_RESIDENT);
    cr_assert_eq(p.n_pinned, p.n_units);
    cr_assert_eq(p.streamed_bytes_per_token, 0);
    cr_assert(p.embd_pinned && p.head_pinned && p.fits);
    cr_assert_geq(p.pinned_bytes, p.model_bytes);
    uint64_t resident_need = p.peak_bytes;

    /* sweep: the minimum stream budget up to resident */
    cr_assert_eq(plan(path, 100000, SL_MODE_AUTO, 0, -1, &p, err, sizeof err), SL_ENOMEM);
    uint64_t min_stream = p.peak_bytes;
    int32_t last_pinned = -1;
    uint64_t last_streamed = UINT64_MAX;
    int n_stream = 0;
    for (uint64_t b = min_stream; b < resident_need + 200000; b += 37000) {
        rc = plan(path, b, SL_MODE_AUTO, 0, -1, &p, err, sizeof err);
        cr_assert_eq(rc, 0, "budget %llu: %s", (unsigned long long)b, err);
        cr_assert(p.fits);
        cr_assert_leq(p.peak_bytes, b, "budget %llu: peak %llu", (unsigned long long)b,
                      (unsigned long long)p.peak_bytes);
        if (b >= resident_need) { cr_assert_eq(p.mode, SL_MODE_RESIDENT); continue; }
        cr_assert_eq(p.mode, SL_MODE_STREAM);
        n_stream++;
        cr_assert_geq(p.n_pinned, last_pinned);
        cr_assert_leq(p.streamed_bytes_per_token, last_streamed);
        last_pinned = p.n_pinned; last_streamed = p.streamed_bytes_per_token;
        cr_assert_leq(p.n_slots, p.depth + 1);
        cr_assert_eq(p.peak_bytes, p.reserve_bytes + p.meta_bytes + sl_buf_round(p.globals_bytes)
                     + (uint64_t)p.n_slots * p.slot_bytes + p.pinned_bytes
                     + (p.embd_pinned ? sl_buf_round(p.embd_bytes) : 0));
    }
    cr_assert_gt(n_stream, 5);
    cr_assert_gt(last_pinned, 0);
    /* at the minimum nothing is pinned and every unit plus one embedding row streams */
    cr_assert_eq(plan(path, min_stream, SL_MODE_AUTO, 0, -1, &p, err, sizeof err), 0);
    cr_assert_eq(p.n_pinned, 0);
    cr_assert(!p.embd_pinned);
    cr_assert_eq(p.streamed_bytes_per_token, p.model_bytes - p.embd_bytes - p.globals_bytes + spec.ne0 * 4);
    unlink(path);
}

Test(planner, overrides_reserve_and_cap)
{
    char path[256], err[512];
    int rc;
    tmp_model(path, sizeof path, "ovr", &spec);
    sl_stream_plan p;
    cr_assert_eq(plan(path, 64ull << 30, SL_MODE_AUTO, 0, -1, &p, err, sizeof err), 0);
    uint64_t resident_need = p.peak_bytes;
    /* the reserve (KV cache + arena) pushes it out of resident */
    cr_assert_eq(plan(path, resident_need, SL_MODE_AUTO, 0, -1, &p, err, sizeof err), 0);
    cr_assert_eq(p.mode, SL_MODE_RESIDENT);
    cr_assert_eq(plan(path, resident_need, SL_MODE_AUTO, 4096, -1, &p, err, sizeof err), 0);
    cr_assert_eq(p.mode, SL_MODE_STREAM);
    cr_assert_eq(p.reserve_bytes, 4096);
    /* forced modes */
    cr_assert_eq(plan(path, 64ull << 30, SL_MODE_STREAM, 0, -1, &p, err, sizeof err), 0);
    cr_assert_eq(p.mode, SL_MODE_STREAM);
    cr_assert_eq(p.n_pinned, p.n_units);   /* everything fits: all pinned, no slots */
    cr_assert_eq(p.n_slots, 0);
    cr_assert_eq(plan(path, 64ull << 30, SL_MODE_STREAM, 0, 2, &p, err, sizeof err), 0);
    cr_assert_eq(p.n_pinned, 2);
    cr_assert_gt(p.n_slots, 0);
    cr_assert_eq(plan(path, 64ull << 30, SL_MODE_MMAP, 0, -1, &p, err, sizeof err), 0);
    cr_assert_eq(p.mode, SL_MODE_MMAP);
    cr_assert_eq(plan(path, 1000, SL_MODE_RESIDENT, 0, -1, &p, err, sizeof err), 0);
    cr_assert_eq(p.mode, SL_MODE_RESIDENT);
    cr_assert(!p.fits, "forced resident over budget is reported as not fitting");
    /* budget from MemAvailable minus a margin */
    /* (the machine is shared: a balloon may have eaten MemAvailable) */
    rc = plan(path, 0, SL_MODE_AUTO, 0, -1, &p, err, sizeof err);
    cr_assert(rc == 0 || (rc == SL_ENOMEM && !p.fits), "rc %d: %s", rc, err);
    cr_assert_gt(p.mem_available, 0);
    cr_assert_geq(p.margin_bytes, 256ull << 20);
    if (p.mem_available > p.margin_bytes) cr_assert_eq(p.budget + p.margin_bytes, p.mem_available);
    else cr_assert_eq(p.budget, 0);
    /* bad config */
    sl_stream_config c;
    sl_stream_config_init(&c);
    c.mode = 17;
    cr_assert_eq(sl_stream_plan_model(path, &c, &p, err, sizeof err), SL_EINVAL);
    cr_assert_neq(sl_stream_plan_model("/nonexistent/x.gguf", NULL, &p, err, sizeof err), 0);
    cr_assert_not_null(strstr(err, "/nonexistent/x.gguf"), "%s", err);
    unlink(path);
}

Test(planner, pins_spread_evenly_and_head_chunks)
{
    char path[256];
    tmp_model(path, sizeof path, "spread", &spec);
    for (int32_t k = 1; k <= 6; k++) {
        sl_stream_config c;
        sl_stream_config_init(&c);
        c.no_direct = true; c.mode = SL_MODE_STREAM; c.max_pinned = k; c.mem_budget = 64ull << 20;
        sl_stream *s;
        cr_assert_eq(sl_stream_open(&s, path, &c), 0, "%s", sl_stream_open_errmsg());
        int32_t U = sl_stream_n_units(s), first = -1, prev = -1, gmin = U, gmax = 0, n = 0;
        for (int32_t u = 0; u < U; u++) {
            sl_stream_unit info;
            sl_stream_unit_info(s, u, &info);
            if (!info.pinned) continue;
            n++;
            if (first < 0) first = u;
            if (prev >= 0) { gmin = u - prev < gmin ? u - prev : gmin; gmax = u - prev > gmax ? u - prev : gmax; }
            prev = u;
        }
        int32_t wrap = first + U - prev;
        if (n > 1) { gmin = wrap < gmin ? wrap : gmin; gmax = wrap > gmax ? wrap : gmax; }
        cr_assert_eq(n, k);
        for (int32_t i = 0; i < k; i++) {
            sl_stream_unit info;
            int32_t pu = sl_stream_plan_pinned_unit(sl_stream_get_plan(s), i);
            cr_assert_eq(sl_stream_unit_info(s, pu, &info), 0);
            cr_assert(info.pinned, "plan_pinned_unit(%d) = %d is not pinned", (int)i, (int)pu);
        }
        if (n > 1) cr_assert_leq(gmax - gmin, 1, "k=%d gaps %d..%d", (int)k, (int)gmin, (int)gmax);
        /* head chunks: contiguous rows covering the lm head, none larger than a layer */
        const sl_stream_plan *p = sl_stream_get_plan(s);
        uint64_t max_layer = 0, next_row = 0;
        for (int32_t u = 0; u < p->n_layers; u++) {
            sl_stream_unit info; sl_stream_unit_info(s, u, &info);
            if (info.bytes > max_layer) max_layer = info.bytes;
        }
        cr_assert_gt(p->n_head_chunks, 1);
        for (int32_t u = p->n_layers; u < U; u++) {
            sl_stream_unit info; sl_stream_unit_info(s, u, &info);
            cr_assert_eq(info.kind, SL_UNIT_HEAD);
            cr_assert_eq(info.row_begin, next_row);
            cr_assert_leq(info.bytes, max_layer);
            next_row = info.row_end;
        }
        cr_assert_eq(next_row, spec.n_vocab);
        st_run_passes(s, path, 2);
        sl_stream_close(s);
    }
    unlink(path);
}

Test(planner, tied_embeddings_stream_through_head_units)
{
    char path[256];
    st_model_spec t = spec;
    t.tied = true;
    tmp_model(path, sizeof path, "tied", &t);
    sl_stream_config c;
    sl_stream_config_init(&c);
    c.no_direct = true; c.mode = SL_MODE_STREAM; c.max_pinned = 0; c.mem_budget = 1ull << 30;
    sl_stream *s;
    cr_assert_eq(sl_stream_open(&s, path, &c), 0, "%s", sl_stream_open_errmsg());
    const sl_stream_plan *p = sl_stream_get_plan(s);
    cr_assert_gt(p->n_head_chunks, 0);
    st_run_passes(s, path, 2);
    uint8_t row[1024], ref[1024];
    const sl_gguf_tensor *et = sl_gguf_find_tensor(sl_stream_gguf(s), "token_embd.weight");
    cr_assert_eq(sl_stream_read_row(s, "token_embd.weight", 899, row, sizeof row), 0, "%s", sl_stream_errmsg(s));
    cr_assert_eq(sl_gguf_read(sl_stream_gguf(s), ref, sizeof ref, et->file_offset + 899 * 1024), 0);
    cr_assert_eq(memcmp(row, ref, sizeof row), 0);
    sl_stream_close(s);
    unlink(path);
}

/* `sluice plan` (engine/cli/cli_plan.c: sl_reserve_compute_file, then
 * sl_reserve_stream_config, then sl_stream_plan_model) and sl_model_open with
 * the same options arrive at the same plan: mode, slots, the units pinned. */

static void plan_as_cli(const char *path, const sl_model_params *mp, sl_stream_plan *p, int *rc)
{
    sl_reserve r;
    cr_assert_eq(sl_reserve_compute_file(&r, path, mp), 0, "%s", sl_last_error());
    sl_stream_config c;
    sl_reserve_stream_config(&r, mp, &c);
    char err[512];
    *rc = sl_stream_plan_model(path, &c, p, err, sizeof err);
}

static void same_plan(const char *path, const sl_model_params *mp)
{
    sl_stream_plan want;
    int rc;
    plan_as_cli(path, mp, &want, &rc);
    sl_model *m;
    int orc = sl_model_open(&m, path, mp);
    if (rc) {   /* plan says it does not fit: open refuses too */
        cr_assert_neq(orc, 0, "plan refused budget %llu, open accepted it", (unsigned long long)mp->mem_budget);
        return;
    }
    cr_assert_eq(orc, 0, "budget %llu: %s", (unsigned long long)mp->mem_budget, sl_last_error());
    sl_stream *st = sl_model_stream(m);
    const sl_stream_plan *got = sl_stream_get_plan(st);
    unsigned long long b = mp->mem_budget;
    cr_assert_eq(got->mode, want.mode, "budget %llu", b);
    cr_assert_eq(got->io, want.io, "budget %llu", b);
    cr_assert_eq(got->reserve_bytes, want.reserve_bytes, "budget %llu", b);
    cr_assert_eq(got->n_slots, want.n_slots, "budget %llu", b);
    cr_assert_eq(got->slot_bytes, want.slot_bytes, "budget %llu", b);
    cr_assert_eq(got->n_pinned, want.n_pinned, "budget %llu", b);
    cr_assert_eq(got->embd_pinned, want.embd_pinned, "budget %llu", b);
    cr_assert_eq(got->head_pinned, want.head_pinned, "budget %llu", b);
    cr_assert_eq(got->peak_bytes, want.peak_bytes, "budget %llu", b);
    bool pinned[4096] = { false };
    cr_assert_lt(want.n_units, 4096);
    for (int32_t i = 0; i < want.n_pinned; i++) pinned[sl_stream_plan_pinned_unit(&want, i)] = true;
    for (int32_t u = 0; u < want.n_units; u++) {
        sl_stream_unit info;
        cr_assert_eq(sl_stream_unit_info(st, u, &info), 0);
        cr_assert_eq(info.pinned, pinned[u], "budget %llu unit %d", b, (int)u);
    }
    sl_model_close(m);
}

Test(planner, plan_command_and_session_agree)
{
    const char *models[] = { "stories260K.gguf", "synth-tiny-q4_k.gguf" };
    int seen = 0;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char path[512];
        if (!st_shared_model(path, sizeof path, models[i])) continue;
        seen++;
        const struct { int threads, ctx, batch; } opts[] = { { 1, 0, 0 }, { 2, 256, 16 } };
        for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
            sl_model_params mp;
            sl_model_params_init(&mp);
            mp.n_threads = opts[k].threads; mp.n_ctx = opts[k].ctx; mp.n_batch = opts[k].batch;
            mp.mem_budget = 1ull << 30;
            sl_stream_plan top;
            int rc;
            plan_as_cli(path, &mp, &top, &rc);
            cr_assert_eq(rc, 0);
            cr_assert_eq(top.mode, SL_MODE_RESIDENT);
            /* from everything resident down past the smallest stream plan */
            uint64_t hi = top.peak_bytes, step = (top.model_bytes + 7) / 8;
            for (uint64_t b = hi; b > step; b -= step) {
                mp.mem_budget = b;
                same_plan(path, &mp);
                mp.mem_budget = b - 1;
                same_plan(path, &mp);
            }
        }
    }
    if (!seen) cr_skip_test("no models in %s/models", SL_SHARED_DIR);
}
