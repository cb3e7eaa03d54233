/* The streamer: open (plan, load pinned/resident data), the slot ring with
 * its eager cyclic prefetch, acquire/release, globals and embedding rows.
 * All sl_stream_* calls come from one thread; the loader's threads touch
 * only the jobs. */
#include "stream_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>

/* STALE: the unit is no longer wanted (schedule restarted) but reads into
 * the slot may still be in flight: it is reused only once they are done. */
enum { SLOT_FREE = 0, SLOT_LOADING, SLOT_ACQUIRED, SLOT_STALE };

typedef struct sl_slot {
    uint8_t *buf;
    int32_t unit;
    int state;
    uint64_t seq;            /* issue order: the oldest loading slot is next in the schedule */
    sl_io_job job;
} sl_slot;

typedef struct sl_owned_buf { void *map; size_t len; } sl_owned_buf;

struct sl_stream {
    sl_gguf *g;
    int fd, dfd;
    sl_stream_config cfg;
    sl_stream_plan plan;
    sl_model_layout lo;
    uint32_t align;
    bool direct;
    char notice[512];
    char err[512];
    sl_loader *L;
    /* globals */
    sl_stream_tensor *globals; uint32_t n_globals;
    sl_owned_buf gmem;
    /* token_embd when pinned/resident/mapped */
    const uint8_t *embd_data;
    sl_owned_buf emem;
    /* resident */
    sl_owned_buf rmem; uint8_t *rbuf; uint64_t rbase;
    /* mmap */
    uint8_t *map; size_t map_len;
    /* pinned unit buffers */
    sl_owned_buf *pmem;
    /* slots */
    sl_slot *slots; int32_t n_slots; uint64_t slot_bytes; sl_owned_buf smem;
    int32_t next_sched; uint64_t seq;
    /* telemetry */
    double stall_ms; uint64_t acquires;
};

static __thread char open_err[512];

const char *sl_stream_open_errmsg(void) { return open_err; }
const char *sl_stream_errmsg(const sl_stream *s) { return s ? s->err : open_err; }
const char *sl_stream_notice(const sl_stream *s) { return s ? s->notice : ""; }
const sl_stream_plan *sl_stream_get_plan(const sl_stream *s) { return &s->plan; }
const void *sl_stream_gguf(const sl_stream *s) { return s->g; }
int32_t sl_stream_n_units(const sl_stream *s) { return s->lo.n_units; }

static int fail(sl_stream *s, int st)
{
    snprintf(s->err, sizeof s->err, "%s", sl_last_error());
    return st;
}

static void add_notice(sl_stream *s, const char *msg)
{
    size_t n = strlen(s->notice);
    snprintf(s->notice + n, sizeof s->notice - n, "%s%s", n ? "; " : "", msg);
}

int sl_stream_config_init_sized(sl_stream_config *c, size_t struct_size)
{
    sl_stream_config d;
    memset(&d, 0, sizeof d);
    d.io = SL_IO_AUTO;
    d.mode = SL_MODE_AUTO;
    d.depth = SL_DEFAULT_DEPTH;
    d.req_bytes = SL_DEFAULT_REQ_BYTES;
    d.queue_depth = SL_DEFAULT_QD;
    d.n_io_threads = SL_DEFAULT_IO_THREADS;
    d.max_pinned = -1;
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
    if (c->io < SL_IO_AUTO || c->io > SL_IO_PREAD)
        return sl_err_set(SL_EINVAL, "streamer: bad io backend %d", c->io);
    if (c->mode < SL_MODE_AUTO || c->mode > SL_MODE_MMAP)
        return sl_err_set(SL_EINVAL, "streamer: bad mode %d", c->mode);
    if (c->depth < 0 || c->depth > 64)
        return sl_err_set(SL_EINVAL, "streamer: prefetch depth %d out of range 1..64", c->depth);
    if (c->queue_depth < 0 || c->queue_depth > 1024)
        return sl_err_set(SL_EINVAL, "streamer: queue depth %d out of range 1..1024", c->queue_depth);
    if (c->n_io_threads < 0 || c->n_io_threads > 64)
        return sl_err_set(SL_EINVAL, "streamer: io threads %d out of range 1..64", c->n_io_threads);
    if (c->req_bytes > (1u << 30))
        return sl_err_set(SL_EINVAL, "streamer: request size %u above 1 GiB", c->req_bytes);
    return 0;
}

/* Opens O_DIRECT when allowed; sets s->dfd/align/direct and a notice otherwise. */
static void open_direct(sl_stream *s, const char *path)
{
    s->dfd = -1; s->align = 1; s->direct = false;
    if (s->cfg.no_direct || s->cfg.mode == SL_MODE_MMAP) return;
    int dfd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (dfd < 0) {
        char m[200];
        snprintf(m, sizeof m, "O_DIRECT refused by the filesystem (%s): buffered reads", strerror(errno));
        add_notice(s, m);
        return;
    }
    uint32_t a = sl_dio_align(dfd, sl_gguf_file_size(s->g));
    if (a == 0) {
        close(dfd);
        add_notice(s, "O_DIRECT not supported on this file: buffered reads");
        return;
    }
    s->dfd = dfd; s->align = a; s->direct = true;
}

static int plan_for(sl_stream *s, const sl_gguf *g, char *err, size_t err_len)
{
    int rc = sl_layout_build(&s->lo, g, s->align);
    if (rc) return rc;
    return sl_plan_compute(&s->lo, g, &s->cfg, s->align, &s->plan, err, err_len);
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
    s.fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s.fd < 0) {
        rc = sl_err_set(-errno, "%s: %s", path, strerror(errno));
        if (err && err_len) snprintf(err, err_len, "%s", sl_last_error());
        return rc;
    }
    rc = sl_gguf_open_fd(&s.g, s.fd, path);
    if (rc == 0) {
        open_direct(&s, path);
        rc = plan_for(&s, s.g, err, err_len);
        *out = s.plan;
        if (out->io == SL_IO_AUTO) out->io = sl_uring_probe() == 0 ? SL_IO_URING : SL_IO_PREAD;
    }
    if (rc && err && err_len && !err[0]) snprintf(err, err_len, "%s", sl_last_error());
    sl_layout_free(&s.lo);
    if (s.g) sl_gguf_close(s.g);
    if (s.dfd >= 0) close(s.dfd);
    close(s.fd);
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

static void *alloc_owned(sl_owned_buf *b, size_t len)
{
    return sl_buf_alloc(len, &b->len, &b->map);
}

static void free_owned(sl_owned_buf *b)
{
    sl_buf_free(b->map, b->len);
    b->map = NULL; b->len = 0;
}

static void job_init(sl_stream *s, sl_io_job *j, uint8_t *dst, uint64_t abeg, uint64_t aend,
                     uint64_t need_end, int32_t unit, int buf_index)
{
    memset(j, 0, sizeof *j);
    uint64_t fsize = sl_gguf_file_size(s->g);
    uint64_t a = s->align;
    uint64_t fend = (fsize + a - 1) / a * a;   /* never ask past the aligned EOF */
    j->dst = dst; j->off = abeg; j->len = (aend < fend ? aend : fend) - abeg;
    j->need_end = need_end; j->unit = unit; j->buf_index = buf_index;
}

static int load_globals(sl_stream *s)
{
    int64_t T = sl_gguf_n_tensors(s->g);
    uint32_t n = 0;
    uint64_t bytes = 0;
    for (int64_t i = 0; i < T; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(s->g, i);
        if (t->layer < 0) { n++; bytes += t->nbytes; }
    }
    s->globals = calloc(n ? n : 1, sizeof *s->globals);
    if (!s->globals) return sl_err_set(SL_ENOMEM, "streamer: out of memory for globals");
    uint8_t *buf = NULL;
    if (!s->rbuf && !s->map) {
        /* only the small ones are copied; embd/head are handled apart */
        bytes = s->lo.globals_bytes;
        buf = alloc_owned(&s->gmem, bytes ? bytes : 1);
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
        if (s->rbuf) g->data = s->rbuf + (t->file_offset - s->rbase);
        else if (s->map) g->data = s->map + t->file_offset;
        else if (t == s->lo.embd) g->data = s->embd_data;       /* NULL unless pinned */
        else if (t == s->lo.head) g->data = NULL;               /* streamed as head units */
        else {
            int rc = sl_gguf_read(s->g, buf + pos, (size_t)t->nbytes, t->file_offset);
            if (rc) return sl_err_set(rc, "tensor %s: %s", t->name, sl_gguf_errmsg(s->g));
            g->data = buf + pos;
            pos += t->nbytes;
        }
    }
    return 0;
}

static int open_mmap(sl_stream *s)
{
    uint64_t fsize = sl_gguf_file_size(s->g);
    void *m = mmap(NULL, (size_t)fsize, PROT_READ, MAP_SHARED, s->fd, 0);
    if (m == MAP_FAILED)
        return sl_err_set(-errno, "mmap of %llu bytes: %s", (unsigned long long)fsize, strerror(errno));
    s->map = m; s->map_len = (size_t)fsize;
    if (s->lo.embd) s->embd_data = s->map + s->lo.embd->file_offset;
    return 0;
}

static int make_loader(sl_stream *s, const struct iovec *fixed, int n_fixed)
{
    sl_loader_cfg lc;
    memset(&lc, 0, sizeof lc);
    lc.io = s->cfg.io;
    lc.fd = s->direct ? s->dfd : s->fd;
    lc.direct = s->direct;
    lc.align = s->align;
    lc.req_bytes = s->cfg.req_bytes;
    lc.queue_depth = s->cfg.queue_depth;
    lc.n_threads = s->cfg.n_io_threads;
    lc.hook = s->cfg.read_hook; lc.hook_ctx = s->cfg.read_hook_ctx;
    lc.fixed = fixed; lc.n_fixed = n_fixed;
    char notice[256] = "";
    int rc = sl_loader_create(&s->L, &lc, notice, sizeof notice);
    if (notice[0]) add_notice(s, notice);
    if (rc == 0) s->plan.io = sl_loader_backend(s->L);
    return rc;
}

static int open_resident(sl_stream *s)
{
    uint64_t a = s->align, fsize = sl_gguf_file_size(s->g);
    uint64_t beg = sl_gguf_data_offset(s->g) / a * a, end = (fsize + a - 1) / a * a;
    s->rbuf = alloc_owned(&s->rmem, (size_t)(end - beg));
    if (!s->rbuf) return sl_err_set(SL_ENOMEM, "resident mode: cannot allocate %llu bytes",
                                    (unsigned long long)(end - beg));
    s->rbase = beg;
    int rc = make_loader(s, NULL, 0);
    if (rc) return rc;
    sl_io_job j;
    job_init(s, &j, s->rbuf, beg, end, fsize, -1, -1);
    sl_loader_submit(s->L, &j);
    rc = sl_loader_wait(s->L, &j);
    if (rc) return sl_err_set(rc, "resident load: %s", j.err);
    if (s->cfg.mlock && mlock(s->rbuf, (size_t)(end - beg)) != 0) {
        char m[160];
        snprintf(m, sizeof m, "mlock of %llu bytes failed (%s): memory not locked",
                 (unsigned long long)(end - beg), strerror(errno));
        add_notice(s, m);
    }
    if (s->lo.embd) s->embd_data = s->rbuf + (s->lo.embd->file_offset - beg);
    return 0;
}

static void refill(sl_stream *s);

static int open_stream(sl_stream *s)
{
    int32_t U = s->lo.n_units;
    s->n_slots = s->plan.n_slots;
    s->slot_bytes = s->plan.slot_bytes;
    struct iovec *iov = NULL;
    if (s->n_slots > 0) {
        s->slots = calloc((size_t)s->n_slots, sizeof *s->slots);
        iov = calloc((size_t)s->n_slots, sizeof *iov);
        uint8_t *m = alloc_owned(&s->smem, (size_t)(s->slot_bytes * (uint64_t)s->n_slots));
        if (!s->slots || !iov || !m) {
            free(iov);
            return sl_err_set(SL_ENOMEM, "streamer: cannot allocate %d slots of %llu bytes",
                              (int)s->n_slots, (unsigned long long)s->slot_bytes);
        }
        for (int32_t i = 0; i < s->n_slots; i++) {
            s->slots[i].buf = m + (uint64_t)i * s->slot_bytes;
            s->slots[i].unit = -1;
            iov[i].iov_base = s->slots[i].buf; iov[i].iov_len = (size_t)s->slot_bytes;
        }
    }
    /* a registered buffer is at most 1 GiB */
    int n_fixed = s->slot_bytes <= (1ull << 30) ? s->n_slots : 0;
    int rc = make_loader(s, iov, n_fixed);
    free(iov);
    if (rc) return rc;
    if (n_fixed > 0 && sl_loader_backend(s->L) == SL_IO_URING && !sl_loader_fixed(s->L) && !s->cfg.read_hook)
        add_notice(s, "io_uring fixed buffers not registered (RLIMIT_MEMLOCK?): plain reads");

    /* pinned units and the embedding table: all submitted, then waited */
    s->pmem = calloc((size_t)(U ? U : 1), sizeof *s->pmem);
    sl_io_job *jobs = calloc((size_t)U + 1, sizeof *jobs);
    if (!s->pmem || !jobs) { free(jobs); return sl_err_set(SL_ENOMEM, "streamer: out of memory"); }
    int n_jobs = 0;
    for (int32_t u = 0; u < U; u++) {
        sl_unit *un = &s->lo.units[u];
        if (!un->info.pinned || un->aend == un->abeg) continue;
        un->pinned_buf = alloc_owned(&s->pmem[u], (size_t)(un->aend - un->abeg));
        if (!un->pinned_buf) { rc = sl_err_set(SL_ENOMEM, "streamer: cannot allocate pinned unit %d", (int)u); break; }
        job_init(s, &jobs[n_jobs], un->pinned_buf, un->abeg, un->aend, un->end, u, -1);
        sl_loader_submit(s->L, &jobs[n_jobs++]);
    }
    if (rc == 0 && s->plan.embd_pinned && s->lo.embd) {
        uint64_t a = s->align, b = s->lo.embd->file_offset / a * a;
        uint64_t e = (s->lo.embd->file_offset + s->lo.embd->nbytes + a - 1) / a * a;
        uint8_t *buf = alloc_owned(&s->emem, (size_t)(e - b));
        if (!buf) rc = sl_err_set(SL_ENOMEM, "streamer: cannot allocate the embedding table");
        else {
            job_init(s, &jobs[n_jobs], buf, b, e, s->lo.embd->file_offset + s->lo.embd->nbytes, -1, -1);
            sl_loader_submit(s->L, &jobs[n_jobs++]);
            s->embd_data = buf + (s->lo.embd->file_offset - b);
        }
    }
    for (int i = 0; i < n_jobs; i++) {
        int st = sl_loader_wait(s->L, &jobs[i]);
        if (st && rc == 0) rc = sl_err_set(st, "loading pinned data: %s", jobs[i].err);
    }
    free(jobs);
    if (rc) return rc;
    if (s->cfg.mlock) {
        for (int32_t u = 0; u < U; u++)
            if (s->lo.units[u].pinned_buf && mlock(s->pmem[u].map, s->pmem[u].len) != 0) {
                add_notice(s, "mlock of pinned units failed: memory not locked");
                break;
            }
    }
    s->next_sched = 0;
    refill(s);
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
    s->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0) {
        rc = sl_err_set(-errno, "%s: %s", path, strerror(errno));
        goto bad;
    }
    rc = sl_gguf_open_fd(&s->g, s->fd, path);
    if (rc) goto bad;
    open_direct(s, path);
    char perr[512];
    rc = plan_for(s, s->g, perr, sizeof perr);
    if (rc) goto bad;
    if (s->plan.mode == SL_MODE_MMAP) rc = open_mmap(s);
    else if (s->plan.mode == SL_MODE_RESIDENT) rc = open_resident(s);
    else rc = open_stream(s);
    if (rc) goto bad;
    rc = load_globals(s);
    if (rc) goto bad;
    if (s->plan.mode == SL_MODE_MMAP) s->plan.io = SL_IO_AUTO;
    *out = s;
    return 0;
bad:
    snprintf(open_err, sizeof open_err, "%s", sl_last_error());
    sl_stream_close(s);
    return rc;
}

static void drain(sl_stream *s)
{
    for (int32_t i = 0; i < s->n_slots; i++) {
        sl_slot *sl = &s->slots[i];
        if (sl->state != SLOT_LOADING && sl->state != SLOT_STALE) continue;
        sl_loader_wait(s->L, &sl->job);
        if (sl->unit >= 0) s->lo.units[sl->unit].slot = -1;
        sl->state = SLOT_FREE; sl->unit = -1;
    }
}

void sl_stream_close(sl_stream *s)
{
    if (!s) return;
    if (s->L) { drain(s); sl_loader_destroy(s->L); }
    free(s->slots);
    free_owned(&s->smem);
    if (s->pmem) for (int32_t u = 0; u < s->lo.n_units; u++) free_owned(&s->pmem[u]);
    free(s->pmem);
    free_owned(&s->emem);
    free_owned(&s->rmem);
    free_owned(&s->gmem);
    if (s->map) munmap(s->map, s->map_len);
    free(s->globals);
    sl_layout_free(&s->lo);
    if (s->g) sl_gguf_close(s->g);
    if (s->dfd >= 0) close(s->dfd);
    if (s->fd >= 0) close(s->fd);
    free(s);
}

int sl_stream_unit_info_sized(const sl_stream *s, int32_t unit, sl_stream_unit *out, size_t size)
{
    if (unit < 0 || unit >= s->lo.n_units)
        return sl_err_set(SL_EINVAL, "unit %d out of range 0..%d", (int)unit, (int)s->lo.n_units - 1);
    return sl_struct_out(out, size, &s->lo.units[unit].info, sizeof *out, SL_STREAM_UNIT_MIN_SIZE,
                         "sl_stream_unit");
}

/* ---- the slot ring ------------------------------------------------------ */

/* Stale slots whose reads have finished become free. */
static void reap_stale(sl_stream *s, bool wait_one)
{
    int32_t oldest = -1;
    for (int32_t i = 0; i < s->n_slots; i++) {
        sl_slot *sl = &s->slots[i];
        if (sl->state != SLOT_STALE) continue;
        if (sl_loader_is_done(s->L, &sl->job)) sl->state = SLOT_FREE;
        else if (oldest < 0 || sl->seq < s->slots[oldest].seq) oldest = i;
    }
    if (wait_one && oldest >= 0) {
        sl_loader_wait(s->L, &s->slots[oldest].job);
        s->slots[oldest].state = SLOT_FREE;
    }
}

static int32_t loading_count(const sl_stream *s)
{
    int32_t n = 0;
    for (int32_t i = 0; i < s->n_slots; i++) n += s->slots[i].state == SLOT_LOADING;
    return n;
}

/* Eager: every free slot gets the next unit of the cyclic schedule, so while
 * the caller computes one unit the other depth slots are loading. */
static void refill(sl_stream *s)
{
    int32_t U = s->lo.n_units;
    if (s->n_slots == 0 || s->plan.mode != SL_MODE_STREAM) return;
    reap_stale(s, false);
    while (loading_count(s) < s->n_slots) {
        int32_t free_i = -1;
        for (int32_t i = 0; i < s->n_slots; i++) if (s->slots[i].state == SLOT_FREE) { free_i = i; break; }
        if (free_i < 0) return;
        int32_t u = s->next_sched, tries = 0;
        while (tries < U && s->lo.units[u].info.pinned) { u = (u + 1) % U; tries++; }
        if (tries == U) return;                 /* everything pinned */
        sl_unit *un = &s->lo.units[u];
        if (un->slot >= 0) return;              /* wrapped onto a unit still held */
        sl_slot *sl = &s->slots[free_i];
        sl->unit = u; sl->state = SLOT_LOADING; sl->seq = s->seq++;
        un->slot = free_i;
        job_init(s, &sl->job, sl->buf, un->abeg, un->aend, un->end, u, sl_loader_fixed(s->L) ? free_i : -1);
        sl_loader_submit(s->L, &sl->job);
        s->next_sched = (u + 1) % U;
    }
}

static int32_t next_streamed(const sl_stream *s, int32_t u)
{
    int32_t U = s->lo.n_units;
    for (int32_t t = 0; t < U; t++, u = (u + 1) % U)
        if (!s->lo.units[u].info.pinned) return u;
    return -1;
}

/* Restart the schedule at unit u (out-of-order access or a prefetch hint)
 * without blocking: units already loading that begin the new schedule are
 * kept, the other loads are cancelled and their slots turn stale. */
static void restart_at(sl_stream *s, int32_t u)
{
    int32_t U = s->lo.n_units, cur = next_streamed(s, u);
    if (cur < 0) return;
    /* the kept prefix: cur, next, ... while each is loading */
    bool keep[66] = { false };   /* n_slots <= depth + 1 <= 65 */
    for (int32_t n = 0; n < U; n++) {
        int32_t sl = s->lo.units[cur].slot;
        if (sl < 0 || s->slots[sl].state != SLOT_LOADING) break;
        keep[sl] = true;
        cur = next_streamed(s, (cur + 1) % U);
    }
    for (int32_t i = 0; i < s->n_slots; i++) {
        sl_slot *sl = &s->slots[i];
        if (sl->state != SLOT_LOADING || keep[i]) continue;
        sl_loader_cancel(s->L, &sl->job);
        s->lo.units[sl->unit].slot = -1;
        sl->unit = -1;
        sl->state = SLOT_STALE;
    }
    s->next_sched = cur;
    refill(s);
}

/* base = the buffer holding file offset un->abeg */
static void fill_view(sl_unit *un, const uint8_t *base, int32_t unit, sl_stream_view *v)
{
    for (uint32_t i = 0; i < un->n_tensors; i++)
        un->tensors[i].data = base + (un->tofs[i] - un->abeg);
    v->unit = unit; v->n_tensors = un->n_tensors; v->tensors = un->tensors;
}

static void mmap_advise(sl_stream *s, const sl_unit *un, int advice)
{
    if (un->end == un->begin) return;
    uintptr_t b = (uintptr_t)(s->map + un->begin), e = (uintptr_t)(s->map + un->end);
    long pg = sysconf(_SC_PAGESIZE);
    if (advice == MADV_DONTNEED) { b = (b + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1); e &= ~(uintptr_t)(pg - 1); }
    else b &= ~(uintptr_t)(pg - 1);
    if (e > b) madvise((void *)b, e - b, advice);
}

static int acquire(sl_stream *s, int32_t unit, sl_stream_view *view)
{
    if (!s || !view) return SL_EINVAL;
    if (unit < 0 || unit >= s->lo.n_units) {
        sl_err_set(SL_EINVAL, "acquire: unit %d out of range 0..%d", (int)unit, (int)s->lo.n_units - 1);
        return fail(s, SL_EINVAL);
    }
    sl_unit *un = &s->lo.units[unit];
    if (un->acquired) {
        sl_err_set(SL_EINVAL, "acquire: unit %d is already acquired", (int)unit);
        return fail(s, SL_EINVAL);
    }
    s->acquires++;
    if (s->plan.mode == SL_MODE_RESIDENT) {
        fill_view(un, un->n_tensors ? s->rbuf + (un->abeg - s->rbase) : NULL, unit, view);
    } else if (s->plan.mode == SL_MODE_MMAP) {
        fill_view(un, s->map + un->abeg, unit, view);
        for (int32_t d = 1; d <= s->cfg.depth; d++)
            mmap_advise(s, &s->lo.units[(unit + d) % s->lo.n_units], MADV_WILLNEED);
    } else if (un->info.pinned) {
        fill_view(un, un->pinned_buf, unit, view);
    } else {
        if (un->slot < 0) restart_at(s, unit);
        while (un->slot < 0) {   /* every slot stale or held: wait for a stale one */
            bool stale = false;
            for (int32_t i = 0; i < s->n_slots; i++) stale |= s->slots[i].state == SLOT_STALE;
            if (!stale) break;
            reap_stale(s, true);
            restart_at(s, unit);
        }
        if (un->slot < 0) {
            sl_err_set(SL_EINVAL, "acquire: no free slot for unit %d (all %d slots acquired)",
                       (int)unit, (int)s->n_slots);
            return fail(s, SL_EINVAL);
        }
        sl_slot *sl = &s->slots[un->slot];
        double t0 = sl_now_ms();
        int st = sl_loader_wait(s->L, &sl->job);
        s->stall_ms += sl_now_ms() - t0;
        if (st) {
            sl_err_set(st, "%s", sl->job.err);
            sl->state = SLOT_FREE; sl->unit = -1; un->slot = -1;
            return fail(s, st);
        }
        sl->state = SLOT_ACQUIRED;
        fill_view(un, sl->buf, unit, view);
        refill(s);
    }
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
    if (unit < 0 || unit >= s->lo.n_units || !s->lo.units[unit].acquired) {
        sl_err_set(SL_EINVAL, "release: unit %d is not acquired", (int)unit);
        return fail(s, SL_EINVAL);
    }
    sl_unit *un = &s->lo.units[unit];
    un->acquired = false;
    if (s->plan.mode == SL_MODE_MMAP) {
        mmap_advise(s, un, MADV_DONTNEED);
        return 0;
    }
    if (s->plan.mode != SL_MODE_STREAM || un->info.pinned) return 0;
    sl_slot *sl = &s->slots[un->slot];
    sl->state = SLOT_FREE; sl->unit = -1; un->slot = -1;
    refill(s);
    return 0;
}

int sl_stream_prefetch(sl_stream *s, int32_t unit)
{
    if (!s || unit < 0 || unit >= s->lo.n_units) {
        sl_err_set(SL_EINVAL, "prefetch: unit %d out of range", (int)unit);
        return s ? fail(s, SL_EINVAL) : SL_EINVAL;
    }
    if (s->plan.mode == SL_MODE_MMAP) {
        mmap_advise(s, &s->lo.units[unit], MADV_WILLNEED);
        return 0;
    }
    if (s->plan.mode != SL_MODE_STREAM) return 0;
    /* next non-pinned unit from `unit` on must be the oldest loading slot */
    int32_t U = s->lo.n_units, u = unit, tries = 0;
    while (tries < U && s->lo.units[u].info.pinned) { u = (u + 1) % U; tries++; }
    if (tries == U) return 0;
    int32_t oldest = -1;
    for (int32_t i = 0; i < s->n_slots; i++)
        if (s->slots[i].state == SLOT_LOADING && (oldest < 0 || s->slots[i].seq < s->slots[oldest].seq))
            oldest = i;
    if (oldest >= 0 && s->slots[oldest].unit == u) return 0;
    if (s->lo.units[u].slot >= 0) return 0;      /* acquired right now */
    restart_at(s, u);
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

int sl_stream_read_row(sl_stream *s, const char *name, uint64_t row, void *dst, size_t dst_len)
{
    if (!s || !name || !dst) return SL_EINVAL;
    const sl_gguf_tensor *t = sl_gguf_find_tensor(s->g, name);
    if (!t || t->layer >= 0) {
        sl_err_set(SL_ENOENT, "read_row: no non-layer tensor '%s'", name);
        return fail(s, SL_ENOENT);
    }
    uint64_t rows = 1;
    for (uint32_t d = 1; d < t->n_dims; d++) rows *= t->ne[d];
    if (row >= rows) {
        sl_err_set(SL_ERANGE, "read_row: %s row %llu out of range (%llu rows)", name,
                   (unsigned long long)row, (unsigned long long)rows);
        return fail(s, SL_ERANGE);
    }
    uint64_t rb = t->nbytes / rows;
    if (dst_len < rb) {
        sl_err_set(SL_EINVAL, "read_row: %s rows are %llu bytes, buffer has %zu", name,
                   (unsigned long long)rb, dst_len);
        return fail(s, SL_EINVAL);
    }
    uint64_t off = t->file_offset + row * rb;
    if (s->rbuf) { memcpy(dst, s->rbuf + (off - s->rbase), (size_t)rb); return 0; }
    if (s->map) { memcpy(dst, s->map + off, (size_t)rb); return 0; }
    if (t == s->lo.embd && s->embd_data) { memcpy(dst, s->embd_data + row * rb, (size_t)rb); return 0; }
    const sl_stream_tensor *g = sl_stream_global(s, name);
    if (g && g->data) { memcpy(dst, (const uint8_t *)g->data + row * rb, (size_t)rb); return 0; }
    /* one small buffered read (page cache), retried on EINTR/EAGAIN/short */
    uint64_t got = 0;
    int tries = 0;
    while (got < rb) {
        int64_t n;
        if (s->cfg.read_hook) n = s->cfg.read_hook(s->cfg.read_hook_ctx, s->fd, (uint8_t *)dst + got, (size_t)(rb - got), off + got);
        else { ssize_t r = pread(s->fd, (uint8_t *)dst + got, (size_t)(rb - got), (off_t)(off + got)); n = r < 0 ? -errno : r; }
        if ((n == -EINTR || n == -EAGAIN || (n > 0 && (uint64_t)n < rb - got)) && ++tries <= SL_MAX_RETRIES) {
            if (n > 0) got += (uint64_t)n;
            continue;
        }
        if (n <= 0) {
            int e = n == 0 ? EIO : (int)-n;
            sl_err_set(n == 0 ? SL_ETRUNC : -e, "read_row: %s row %llu: read of %llu bytes at file offset %llu failed: %s (errno %d)",
                       name, (unsigned long long)row, (unsigned long long)(rb - got),
                       (unsigned long long)(off + got), n == 0 ? "end of file" : strerror(e), e);
            return fail(s, n == 0 ? SL_ETRUNC : -e);
        }
        got += (uint64_t)n;
    }
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
    s->stall_ms = 0;
    s->acquires = 0;
}
