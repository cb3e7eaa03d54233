/* The streamer: open (plan, then the mode's open), globals and embedding
 * rows, views, and acquire/release/prefetch handed to the mode's operations
 * (the table of stream_modes.h). All sl_stream_* calls come from one thread;
 * the loader's threads touch only the jobs. */
#include "stream_core.h"
#include "stream_experts.h"
#include "stream_io.h"
#include "stream_limits.h"
#include "stream_loader.h"
#include "stream_modes.h"
#include "stream_numa.h"
#include "stream_plan.h"
#include "stream_units.h"
#include "../gguf/base/sl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __thread char open_err[512];

const char *sl_stream_open_errmsg(void) { return open_err; }
const char *sl_stream_errmsg(const sl_stream *s) { return s ? s->err : open_err; }
const char *sl_stream_notice(const sl_stream *s) { return s ? s->notice : ""; }
const sl_stream_plan *sl_stream_get_plan(const sl_stream *s) { return &s->plan; }
const void *sl_stream_gguf(const sl_stream *s) { return s->g; }
int32_t sl_stream_n_units(const sl_stream *s) { return s->um.n_units; }

static int fail(sl_stream *s, int st)
{
    snprintf(s->err, sizeof s->err, "%s", sl_last_error());
    return st;
}

int sl_stream_config_init_sized(sl_stream_config *c, size_t struct_size)
{
    const sl_stream_config d = { .io = SL_IO_AUTO, .mode = SL_MODE_AUTO, .depth = SL_DEFAULT_DEPTH,
                                 .req_bytes = SL_DEFAULT_REQ_BYTES, .queue_depth = SL_DEFAULT_QD,
                                 .n_io_threads = SL_DEFAULT_IO_THREADS, .max_pinned = -1 };
    return sl_struct_init(c, struct_size, &d, sizeof d, SL_STREAM_CONFIG_MIN_SIZE, "sl_stream_config");
}

/* The caller's config (NULL: defaults) as this library's layout. */
static int config_in(sl_stream_config *dst, const sl_stream_config *c)
{
    sl_stream_config_init(dst);
    if (!c) return 0;
    return sl_struct_in(dst, sizeof *dst, c, SL_STREAM_CONFIG_MIN_SIZE, "sl_stream_config");
}

static int check_config(const sl_stream_config *c)
{
    if (c->io < 0 || c->io >= SL_IO_COUNT)
        return sl_err_set(SL_EINVAL, "streamer: bad io backend %d", c->io);
    if (c->mode < 0 || c->mode >= SL_MODE_COUNT)
        return sl_err_set(SL_EINVAL, "streamer: bad mode %d", c->mode);
    if (c->depth < 0 || c->depth > SL_MAX_DEPTH)
        return sl_err_set(SL_EINVAL, "streamer: prefetch depth %d out of range 1..%d", c->depth, SL_MAX_DEPTH);
    if (c->queue_depth < 0 || c->queue_depth > SL_MAX_QD)
        return sl_err_set(SL_EINVAL, "streamer: queue depth %d out of range 1..%d", c->queue_depth, SL_MAX_QD);
    if (c->n_io_threads < 0 || c->n_io_threads > SL_MAX_IO_THREADS)
        return sl_err_set(SL_EINVAL, "streamer: io threads %d out of range 1..%d", c->n_io_threads,
                          SL_MAX_IO_THREADS);
    if (c->expert_stream < SL_EXPERTS_AUTO || c->expert_stream > SL_EXPERTS_OFF)
        return sl_err_set(SL_EINVAL, "streamer: bad expert_stream %d", c->expert_stream);
    if (c->expert_policy < SL_EVICT_AUTO || c->expert_policy > SL_EVICT_DECAY)
        return sl_err_set(SL_EINVAL, "streamer: bad expert eviction policy %d", c->expert_policy);
    if (c->numa < SL_NUMA_NONE || c->numa > SL_NUMA_DISTRIBUTE)
        return sl_err_set(SL_EINVAL, "streamer: bad numa policy %d (0 none, 1 local, 2 distribute)", c->numa);
    if (c->n_layer_mask < 0 || (c->n_layer_mask && !c->layer_mask))
        return sl_err_set(SL_EINVAL, "streamer: layer mask of %d entries at %p", c->n_layer_mask,
                          (const void *)c->layer_mask);
    if (c->req_bytes > SL_MAX_REQ_BYTES)
        return sl_err_set(SL_EINVAL, "streamer: request size %u above %u bytes", c->req_bytes, SL_MAX_REQ_BYTES);
    return 0;
}

/* An MoE file or a split model planned for stream mode is planned again
 * with stream mode's unit layout: experts split off, layers cut at the files'
 * bounds (unless the config says experts off). */
static int plan_for(sl_stream *s, const sl_gguf *g, char *err, size_t err_len)
{
    int rc = sl_unit_map_init(&s->um, g, s->align, false);
    if (rc) return rc;
    sl_unit_map_keep(&s->um, &s->cfg);
    rc = sl_plan_compute(&s->um, g, &s->cfg, s->align, &s->plan, err, err_len);
    /* also when whole layers do not fit: expert units are much smaller */
    if ((rc && rc != SL_ENOMEM) || s->plan.mode != SL_MODE_STREAM ||
        (s->um.moe.n_expert == 0 && sl_gguf_n_shards(g) <= 1) || s->cfg.expert_stream == SL_EXPERTS_OFF)
        return rc;
    sl_unit_map_free(&s->um);
    rc = sl_unit_map_init(&s->um, g, s->align, true);
    if (rc) return rc;
    sl_unit_map_keep(&s->um, &s->cfg);
    return sl_plan_compute(&s->um, g, &s->cfg, s->align, &s->plan, err, err_len);
}

static int plan_model(const char *path, const sl_stream_config *c, sl_stream_plan *out,
                      char *err, size_t err_len)
{
    sl_stream_config def;
    int rc = config_in(&def, c);
    c = &def;
    if (err && err_len) err[0] = 0;
    memset(out, 0, sizeof *out);
    if (!rc) rc = check_config(c);
    if (rc) { if (err && err_len) snprintf(err, err_len, "%s", sl_last_error()); return rc; }
    sl_stream s;
    memset(&s, 0, sizeof s);
    s.cfg = *c;
    s.dfd = -1;
    rc = sl_gguf_open_path(&s.g, path);
    if (rc == 0) rc = sl_stream_open_files(&s);
    if (rc == 0) {
        rc = plan_for(&s, s.g, err, err_len);
        *out = s.plan;
        if (out->io == SL_IO_AUTO) out->io = sl_io_auto();
    }
    if (rc && err && err_len && !err[0]) snprintf(err, err_len, "%s", sl_last_error());
    sl_unit_map_free(&s.um);
    if (s.g) sl_stream_close_files(&s);
    if (s.g) sl_gguf_close(s.g);
    return rc;
}

int sl_stream_plan_model_sized(const char *path, const sl_stream_config *c, sl_stream_plan *out,
                               size_t size, char *err, size_t err_len)
{
    sl_stream_plan full;
    int rc = sl_struct_check(size, SL_STREAM_PLAN_MIN_SIZE, sizeof full, "sl_stream_plan");
    if (rc) { if (err && err_len) snprintf(err, err_len, "%s", sl_last_error()); return rc; }
    rc = plan_model(path, c, &full, err, err_len);
    memcpy(out, &full, size);
    return rc;
}

static int load_globals(sl_stream *s)
{
    int64_t T = sl_gguf_n_tensors(s->g);
    uint32_t n = 0;
    for (int64_t i = 0; i < T; i++) n += sl_gguf_tensor_at(s->g, i)->layer < 0;
    s->globals = calloc(n ? n : 1, sizeof *s->globals);
    if (!s->globals) return sl_err_set(SL_ENOMEM, "streamer: out of memory for globals");
    uint8_t *buf = NULL;
    if (!s->ops->file_at) {
        /* only the small ones are copied; embd/head are handled apart */
        uint64_t bytes = s->um.globals_bytes;
        buf = sl_owned_alloc(&s->gmem, bytes ? bytes : 1);
        if (!buf) return sl_err_set(SL_ENOMEM, "streamer: cannot allocate %llu bytes of globals",
                                    (unsigned long long)bytes);
    }
    uint64_t pos = 0;
    for (int64_t i = 0; i < T; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(s->g, i);
        if (t->layer >= 0) continue;
        sl_stream_tensor *g = &s->globals[s->n_globals++];
        g->name = t->name; g->type = t->type; g->n_dims = t->n_dims;
        memcpy(g->ne, t->ne, sizeof g->ne);
        g->nbytes = t->nbytes;
        if (s->ops->file_at) g->data = s->ops->file_at(s, t->file_offset);
        else if (t == s->um.embd) g->data = s->embd_data;       /* NULL unless pinned */
        else if (t == s->um.head) g->data = NULL;               /* streamed as head units */
        else if (t == s->um.ple) g->data = NULL;                /* rows read on demand */
        else {
            int rc = sl_gguf_read(s->g, buf + pos, (size_t)t->nbytes, t->file_offset);
            if (rc) return sl_err_set(rc, "tensor %s: %s", t->name, sl_gguf_errmsg(s->g));
            g->data = buf + pos;
            pos += t->nbytes;
        }
    }
    return 0;
}

int sl_stream_open(sl_stream **out, const char *path, const sl_stream_config *c)
{
    *out = NULL;
    open_err[0] = 0;
    sl_stream_config def;
    int rc = config_in(&def, c);
    c = &def;
    if (!rc) rc = check_config(c);
    if (rc) { snprintf(open_err, sizeof open_err, "%s", sl_last_error()); return rc; }
    sl_stream *s = calloc(1, sizeof *s);
    if (!s) { snprintf(open_err, sizeof open_err, "streamer: out of memory"); return SL_ENOMEM; }
    s->cfg = *c;
    if (s->cfg.depth == 0) s->cfg.depth = SL_DEFAULT_DEPTH;
    s->dfd = -1;
    rc = sl_gguf_open_path(&s->g, path);
    if (!rc) rc = sl_stream_open_files(s);
    if (rc) goto bad;
    char perr[512];
    rc = plan_for(s, s->g, perr, sizeof perr);
    s->cfg.layer_mask = NULL;   /* the caller's: the units' flags keep what it said */
    if (rc) goto bad;
    sl_numa_decide_here(s->cfg.numa, &s->numa);
    s->ops = sl_stream_mode_ops_of(s->plan.mode);
    rc = s->ops->open(s);
    s->cfg.rows8 = NULL;        /* the caller's pick and its context: open only */
    s->cfg.rows8_ctx = NULL;
    if (rc) goto bad;
    if (s->ops->file_at && s->um.embd) s->embd_data = s->ops->file_at(s, s->um.embd->file_offset);
    rc = load_globals(s);
    if (rc) goto bad;
    *out = s;
    return 0;
bad:
    snprintf(open_err, sizeof open_err, "%s", sl_last_error());
    sl_stream_close(s);
    return rc;
}

void sl_stream_close(sl_stream *s)
{
    if (!s) return;
    if (s->ops) s->ops->close(s);   /* first: it waits for its reads */
    sl_loader_destroy(s->L);
    sl_owned_free(&s->gmem);
    sl_owned_free(&s->rstage);
    free(s->globals);
    free(s->xviews);
    free(s->xheld);
    sl_unit_map_free(&s->um);
    if (s->g) sl_stream_close_files(s);
    if (s->g) sl_gguf_close(s->g);
    free(s);
}

int sl_stream_unit_info_sized(const sl_stream *s, int32_t unit, sl_stream_unit *out, size_t size)
{
    if (!s || !out) return sl_err_set(SL_EINVAL, "sl_stream_unit_info: NULL %s", s ? "out" : "stream");
    if (unit < 0 || unit >= s->um.n_units)   /* s is const: the message is the thread's (sl_last_error) */
        return sl_err_set(SL_EINVAL, "unit %d out of range 0..%d", (int)unit, (int)s->um.n_units - 1);
    return sl_struct_out(out, size, &s->um.units[unit].info, sizeof *out, SL_STREAM_UNIT_MIN_SIZE,
                         "sl_stream_unit");
}

static int acquire(sl_stream *s, int32_t unit, sl_stream_view *view)
{
    if (!s || !view) return SL_EINVAL;
    if (unit < 0 || unit >= s->um.n_units)
        return fail(s, sl_err_set(SL_EINVAL, "acquire: unit %d out of range 0..%d", (int)unit,
                                  (int)s->um.n_units - 1));
    sl_unit *un = &s->um.units[unit];
    if (un->acquired)
        return fail(s, sl_err_set(SL_EINVAL, "acquire: unit %d is already acquired", (int)unit));
    if (un->unused)
        return fail(s, sl_err_set(SL_EINVAL, "acquire: unit %d is outside this stream's layer subset", (int)unit));
    s->acquires++;
    const uint8_t *base;
    int st = s->ops->acquire(s, unit, &base);
    if (st) return fail(s, st);
    for (uint32_t i = 0; i < un->n_tensors; i++) un->tensors[i].data = sl_unit_tensor_at(un, i, base);
    view->unit = unit; view->n_tensors = un->n_tensors; view->tensors = un->tensors;
    un->acquired = true;
    return 0;
}

int sl_stream_acquire_sized(sl_stream *s, int32_t unit, sl_stream_view *view, size_t size)
{
    sl_stream_view full;
    int rc = sl_struct_check(size, SL_STREAM_VIEW_MIN_SIZE, sizeof full, "sl_stream_view");
    if (rc) return s ? fail(s, rc) : rc;
    rc = acquire(s, unit, view ? &full : NULL);
    if (rc == 0) memcpy(view, &full, size);
    return rc;
}

int sl_stream_release(sl_stream *s, int32_t unit)
{
    if (!s) return SL_EINVAL;
    if (unit < 0 || unit >= s->um.n_units || !s->um.units[unit].acquired)
        return fail(s, sl_err_set(SL_EINVAL, "release: unit %d is not acquired", (int)unit));
    s->um.units[unit].acquired = false;
    if (s->ops->release) s->ops->release(s, unit);
    return 0;
}

int sl_stream_prefetch(sl_stream *s, int32_t unit)
{
    if (!s || unit < 0 || unit >= s->um.n_units) {
        sl_err_set(SL_EINVAL, "prefetch: unit %d out of range", (int)unit);
        return s ? fail(s, SL_EINVAL) : SL_EINVAL;
    }
    if (s->ops->prefetch) s->ops->prefetch(s, unit);
    return 0;
}

const sl_stream_tensor *sl_stream_view_find(const sl_stream_view *v, const char *name)
{
    if (!v || !name) return NULL;
    size_t nl = strlen(name);
    for (uint32_t i = 0; i < v->n_tensors; i++) {
        const char *tn = v->tensors[i].name;
        size_t tl = strlen(tn);
        if (tl == nl && memcmp(tn, name, nl) == 0) return &v->tensors[i];
        /* suffix match at a '.' boundary: "attn_q.weight" in "blk.3.attn_q.weight" */
        if (tl > nl && tn[tl - nl - 1] == '.' && memcmp(tn + tl - nl, name, nl) == 0) return &v->tensors[i];
    }
    return NULL;
}

const sl_stream_tensor *sl_stream_global(const sl_stream *s, const char *name)
{
    if (!s || !name) return NULL;
    for (uint32_t i = 0; i < s->n_globals; i++)
        if (strcmp(s->globals[i].name, name) == 0) return &s->globals[i];
    return NULL;
}

/* Tensor `name` (not of a layer), its row count and row bytes; checks row. */
static int row_tensor(sl_stream *s, const char *what, const char *name, uint64_t row, size_t dst_len,
                      const sl_gguf_tensor **out, uint64_t *rb)
{
    const sl_gguf_tensor *t = sl_gguf_find_tensor(s->g, name);
    if (!t || t->layer >= 0)
        return fail(s, sl_err_set(SL_ENOENT, "%s: no non-layer tensor '%s'", what, name));
    uint64_t rows = 1;
    for (uint32_t d = 1; d < t->n_dims; d++) rows *= t->ne[d];
    if (row >= rows)
        return fail(s, sl_err_set(SL_ERANGE, "%s: %s row %llu out of range (%llu rows)", what, name,
                                  (unsigned long long)row, (unsigned long long)rows));
    *rb = t->nbytes / rows;
    if (dst_len < *rb)
        return fail(s, sl_err_set(SL_EINVAL, "%s: %s rows are %llu bytes, buffer has %zu", what, name,
                                  (unsigned long long)*rb, dst_len));
    *out = t;
    return 0;
}

/* Row `row` of t where it is in RAM (mapped file, resident embedding or global), else NULL. */
static const uint8_t *row_in_ram(sl_stream *s, const char *name, const sl_gguf_tensor *t, uint64_t row,
                                 uint64_t rb)
{
    const sl_stream_tensor *g = sl_stream_global(s, name);
    if (s->ops->file_at) return s->ops->file_at(s, t->file_offset + row * rb);
    if (t == s->um.embd && s->embd_data) return s->embd_data + row * rb;
    if (g && g->data) return (const uint8_t *)g->data + row * rb;
    return NULL;
}

int sl_stream_read_rows(sl_stream *s, const char *name, const uint64_t *rows, int32_t n, void *const *dst,
                        size_t dst_len)
{
    if (!s || !name || (n > 0 && (!rows || !dst)) || n < 0) return SL_EINVAL;
    const sl_gguf_tensor *t = NULL;
    uint64_t rb = 0;
    int rc;
    for (int32_t i = 0; i < n; i++)
        if ((rc = row_tensor(s, "read_rows", name, rows[i], dst_len, &t, &rb))) return rc;
    if (n == 0 || rb == 0) return 0;
    if (!s->L || row_in_ram(s, name, t, rows[0], rb)) {   /* in RAM, or no loader: row by row */
        for (int32_t i = 0; i < n; i++)
            if ((rc = sl_stream_read_row(s, name, rows[i], dst[i], dst_len))) return rc;
        return 0;
    }
    /* one loader job a row into aligned staging (O_DIRECT), all submitted at once */
    /* each row's span a multiple of 64: the job table after them stays aligned */
    const uint64_t a = s->align > 1 ? s->align : 1, span = ((rb + 2 * a - 1) / a * a + a + 63) & ~(uint64_t)63;
    const size_t need = (size_t)(span * (uint64_t)n) + (size_t)n * sizeof(sl_io_job) + (size_t)n * sizeof(void *);
    if (s->rstage.len < need) {
        sl_owned_free(&s->rstage);
        if (!sl_owned_alloc(&s->rstage, need))
            return fail(s, sl_err_set(SL_ENOMEM, "read_rows: %zu bytes of staging", need));
    }
    uint8_t *stage = s->rstage.map;
    sl_io_job *jobs = (sl_io_job *)(stage + span * (uint64_t)n);
    sl_io_job **jp = (sl_io_job **)(jobs + n);
    for (int32_t i = 0; i < n; i++) {
        const uint64_t off = t->file_offset + rows[i] * rb, abeg = off / a * a, aend = (off + rb + a - 1) / a * a;
        sl_stream_job_init(s, &jobs[i], stage + span * (uint64_t)i, abeg, aend, off + rb, -1, -1);
        jp[i] = &jobs[i];
    }
    sl_loader_submit_front(s->L, jp, n);
    int st = 0;
    for (int32_t i = 0; i < n; i++) {
        int r = sl_loader_wait(s->L, &jobs[i]);
        if (r && !st) {
            st = r;
            rc = fail(s, sl_err_set(r, "read_rows: %s row %llu: %s", name, (unsigned long long)rows[i],
                                    jobs[i].err));
        }
        if (!r) {
            const uint64_t off = t->file_offset + rows[i] * rb;
            memcpy(dst[i], stage + span * (uint64_t)i + (off - jobs[i].off), (size_t)rb);
        }
    }
    return st ? rc : 0;
}

int sl_stream_read_row(sl_stream *s, const char *name, uint64_t row, void *dst, size_t dst_len)
{
    if (!s || !name || !dst) return SL_EINVAL;
    const sl_gguf_tensor *t;
    uint64_t rb;
    int rc = row_tensor(s, "read_row", name, row, dst_len, &t, &rb);
    if (rc) return rc;
    uint64_t off = t->file_offset + row * rb;
    const uint8_t *src = row_in_ram(s, name, t, row, rb);
    if (src) { memcpy(dst, src, (size_t)rb); return 0; }
    if (rb == 0) return 0;
    /* one small read through the page cache (not the O_DIRECT descriptor) */
    sl_io_job j;
    memset(&j, 0, sizeof j);
    j.dst = dst; j.off = off; j.len = rb; j.need_end = off + rb; j.unit = -1; j.buf_index = -1;
    uint64_t base;
    int fd = sl_stream_buffered_fd(s, off, &base);
    int st = sl_loader_read_now(s->L, &j, fd, base);
    if (st)
        return fail(s, sl_err_set(st, "read_row: %s row %llu: %s", name, (unsigned long long)row, j.err));
    return 0;
}

static void get_stats(const sl_stream *s, sl_stream_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!s) return;
    if (s->L) {
        sl_loader_stats ls;
        sl_loader_get_stats(s->L, &ls);
        out->bytes_read = ls.bytes; out->n_reads = ls.reads; out->n_retries = ls.retries;
        out->io_busy_ms = ls.busy_ms;
    }
    out->stall_ms = s->stall_ms;
    out->acquires = s->acquires;
    if (s->ex) sl_experts_get_stats(s, out);
}

int sl_stream_get_stats_sized(const sl_stream *s, sl_stream_stats *out, size_t size)
{
    sl_stream_stats full;
    get_stats(s, &full);
    return sl_struct_out(out, size, &full, sizeof full, SL_STREAM_STATS_MIN_SIZE, "sl_stream_stats");
}

void sl_stream_reset_stats(sl_stream *s)
{
    if (!s) return;
    if (s->L) sl_loader_reset_stats(s->L);
    if (s->ex) sl_experts_reset_stats(s);
    s->stall_ms = 0;
    s->acquires = 0;
}
