/* The loader: a FIFO of read jobs cut into requests of req_bytes, served by
 * a backend (io_uring thread or pread pool) it is handed (stream_io.c picks). Jobs
 * queued by submit_front (needed now) and submit_next (read-ahead) go first;
 * read-ahead is handed out only while fewer than SL_READAHEAD_QD requests are
 * in flight, so a device that serves its queue in parallel does not make the
 * reads needed now share it with a deep backlog of guesses. Retry
 * and error policy lives here so every backend behaves the same: short reads
 * and EAGAIN/EINTR are resubmitted, anything else fails the job with a message
 * naming the unit, file offset, length and errno. A job is "done" only when
 * every request has finished, so nobody sees a half-filled buffer as complete. */
#include "stream_loader.h"
#include "stream_limits.h"
#include "../gguf/base/sl_internal.h"
#include "../gguf/base/sl_platform.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct sl_loader {
    sl_loader_cfg cfg;
    const sl_io_backend *be;
    int io;                  /* what the caller calls be (sl_loader_backend) */
    void *be_state;
    bool fixed;              /* cfg.fixed registered by the backend */
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    sl_io_job *qhead, *qtail;
    bool stop;
    int active;              /* counted requests being served */
    double busy_t0;
    sl_loader_stats st;
};

/* First failure of a job wins; "unit N: " when the job is a unit. Mutex held. */
__attribute__((format(printf, 3, 4)))
static void job_fail(sl_io_job *j, int status, const char *fmt, ...)
{
    if (j->status != 0) return;
    j->status = status;
    int n = j->unit >= 0 ? snprintf(j->err, sizeof j->err, "unit %d: ", (int)j->unit) : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->err + n, sizeof j->err - (size_t)n, fmt, ap);
    va_end(ap);
}

/* Removes j from the queue wherever it is. A done job must not stay queued:
 * its owner may free it (a stack job) or resubmit it (a slot job). */
static void job_unlink(sl_loader *L, sl_io_job *j)
{
    if (!j->queued) return;
    sl_io_job **pp = &L->qhead, *prev = NULL;
    while (*pp && *pp != j) { prev = *pp; pp = &(*pp)->qnext; }
    if (*pp) { *pp = j->qnext; if (L->qtail == j) L->qtail = prev; }
    j->qnext = NULL;
    j->queued = false;
}

static void job_pop(sl_loader *L)
{
    sl_io_job *j = L->qhead;
    L->qhead = j->qnext;
    if (!L->qhead) L->qtail = NULL;
    j->qnext = NULL;
    j->queued = false;
}

/* The file of a split model holding model offset off, or the first one after
 * it (off in a gap); NULL past the last. */
static const sl_io_file *file_at(const sl_loader *L, uint64_t off)
{
    int lo = 0, hi = L->cfg.n_files;   /* first file ending after off */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (L->cfg.files[mid].end <= off) lo = mid + 1; else hi = mid;
    }
    return lo < L->cfg.n_files ? &L->cfg.files[lo] : NULL;
}

/* Split model: r's file and the end of its range in it (aligned up: the
 * padding before the next file's base is never data); the job's next moves
 * over a gap. false: nothing of the job is left to read. */
static bool split_req(const sl_loader *L, sl_io_job *j, sl_io_req *r, uint64_t *end)
{
    const sl_io_file *f = file_at(L, j->next);
    if (!f) return false;
    if (j->next < f->base) j->next = f->base;
    if (j->next >= *end) return false;
    uint64_t a = L->cfg.align > 1 ? L->cfg.align : 1, fend = (f->end + a - 1) / a * a;
    if (fend < *end) *end = fend;
    r->fd = f->fd; r->base = f->base;
    r->need_end = j->need_end < f->end ? j->need_end : f->end;
    return true;
}

/* Mutex held. */
static bool take_locked(sl_loader *L, sl_io_req *r)
{
    while (L->qhead) {
        sl_io_job *j = L->qhead;
        uint64_t end = j->off + j->len;
        if (j->status != 0 || j->next >= end) { job_pop(L); continue; }
        /* read-ahead waits while SL_READAHEAD_QD requests are in flight */
        if (j->prio == SL_PRIO_NEXT && L->active >= SL_READAHEAD_QD) return false;
        r->fd = L->cfg.fd; r->base = 0; r->need_end = j->need_end;
        if (L->cfg.n_files && !split_req(L, j, r, &end)) {
            j->next = j->off + j->len;   /* only gaps left */
            job_pop(L);
            if (j->outstanding == 0) { j->done = true; pthread_cond_broadcast(&L->cv_done); }
            continue;
        }
        uint64_t n = end - j->next;
        if (n > L->cfg.req_bytes) n = L->cfg.req_bytes;
        r->job = j; r->off = j->next; r->len = n; r->tries = 0;
        r->direct = L->cfg.direct; r->counted = true;
        j->next += n;
        j->outstanding++;
        if (j->next >= j->off + j->len) job_pop(L);
        if (L->active++ == 0) L->busy_t0 = sl_now_ms();
        return true;
    }
    return false;
}

bool sl_loader_take(sl_loader *L, sl_io_req *r, bool wait)
{
    pthread_mutex_lock(&L->mu);
    bool got = false;
    for (;;) {
        if (L->stop) break;
        if ((got = take_locked(L, r)) || !wait) break;
        pthread_cond_wait(&L->cv_work, &L->mu);
    }
    pthread_mutex_unlock(&L->mu);
    return got;
}

int64_t sl_loader_read(sl_loader *L, const sl_io_req *r)
{
    uint8_t *dst = sl_io_req_dst(r);
    if (L->cfg.hook) return L->cfg.hook(L->cfg.hook_ctx, r->fd, dst, (size_t)r->len, r->off - r->base);
    ssize_t n = pread(r->fd, dst, (size_t)r->len, (off_t)(r->off - r->base));
    return n < 0 ? -(int64_t)errno : (int64_t)n;
}

static void finish_locked(sl_loader *L, sl_io_job *j)
{
    j->outstanding--;
    bool handed_all = j->status != 0 || j->next >= j->off + j->len;
    if (j->outstanding == 0 && handed_all) {
        job_unlink(L, j);   /* a failed job can still be queued with parts never handed out */
        j->done = true;
        pthread_cond_broadcast(&L->cv_done);
    }
}

bool sl_loader_result(sl_loader *L, sl_io_req *r, int64_t res)
{
    sl_io_job *j = r->job;
    sl_loader_stats *st = &L->st, uncounted;
    if (!r->counted) st = &uncounted;
    pthread_mutex_lock(&L->mu);
    if (res == -EAGAIN || res == -EINTR) {
        st->retries++;
        if (++r->tries <= SL_MAX_RETRIES) { pthread_mutex_unlock(&L->mu); return true; }
    }
    if (res > 0) {
        st->bytes += (uint64_t)res;
        st->reads++;
        if ((uint64_t)res > r->len) res = (int64_t)r->len;
        r->off += (uint64_t)res; r->len -= (uint64_t)res;
        if (r->len > 0 && r->off < r->need_end) {
            /* short read: resubmit the rest (from an aligned offset for O_DIRECT) */
            st->retries++;
            if (r->direct && L->cfg.align > 1) {
                uint64_t a = r->off & ~(uint64_t)(L->cfg.align - 1);
                r->len += r->off - a; r->off = a;
            }
            if (++r->tries <= SL_MAX_RETRIES) { pthread_mutex_unlock(&L->mu); return true; }
            res = -EIO;
        } else {
            res = 0;
        }
    } else if (res == 0 && r->off >= r->need_end) {
        res = 0;  /* EOF inside the alignment padding past the data */
    } else if (res == 0) {
        job_fail(j, SL_ETRUNC, "unexpected end of file reading %llu bytes at file offset %llu",
                 (unsigned long long)r->len, (unsigned long long)r->off);
    }
    if (res < 0) {
        int e = (int)-res;
        bool again = e == EAGAIN || e == EINTR;
        job_fail(j, again ? SL_EIO : -e, "read of %llu bytes at file offset %llu failed: %s (errno %d%s)",
                 (unsigned long long)r->len, (unsigned long long)r->off, strerror(e), e,
                 again ? ", retries exhausted" : "");
    }
    if (r->counted && --L->active == 0) L->st.busy_ms += sl_now_ms() - L->busy_t0;
    /* pool threads may be blocked on read-ahead held back by the cap */
    if (r->counted && L->qhead && L->qhead->prio == SL_PRIO_NEXT && L->active == SL_READAHEAD_QD - 1)
        pthread_cond_broadcast(&L->cv_work);
    finish_locked(L, j);
    pthread_mutex_unlock(&L->mu);
    return false;
}

void sl_loader_submit(sl_loader *L, sl_io_job *j)
{
    pthread_mutex_lock(&L->mu);
    j->next = j->off; j->outstanding = 0; j->status = 0; j->err[0] = 0;
    j->done = j->len == 0; j->qnext = NULL; j->queued = !j->done; j->prio = SL_PRIO_PLAIN;
    if (!j->done) {
        if (L->qtail) L->qtail->qnext = j; else L->qhead = j;
        L->qtail = j;
        pthread_cond_broadcast(&L->cv_work);
    }
    pthread_mutex_unlock(&L->mu);
}

/* jobs queued as one run: at the head (SL_PRIO_FRONT), or behind the queued
 * jobs of the same or a higher prio at the head (SL_PRIO_NEXT) */
static void insert_run(sl_loader *L, sl_io_job *const *jobs, int n, uint8_t prio)
{
    sl_io_job *after = NULL;
    pthread_mutex_lock(&L->mu);
    sl_io_job *head = NULL, *tail = NULL;
    for (int i = 0; i < n; i++) {
        sl_io_job *j = jobs[i];
        j->next = j->off; j->outstanding = 0; j->status = 0; j->err[0] = 0;
        j->done = j->len == 0; j->qnext = NULL; j->queued = !j->done; j->prio = prio;
        if (j->done) continue;
        if (tail) tail->qnext = j; else head = j;
        tail = j;
    }
    if (head) {
        if (prio < SL_PRIO_FRONT)   /* behind the front and earlier next jobs still queued */
            for (sl_io_job *q = L->qhead; q && q->prio >= prio; q = q->qnext) after = q;
        sl_io_job **link = after ? &after->qnext : &L->qhead;
        tail->qnext = *link;
        if (!*link) L->qtail = tail;
        *link = head;
        pthread_cond_broadcast(&L->cv_work);
    }
    pthread_mutex_unlock(&L->mu);
}

void sl_loader_submit_front(sl_loader *L, sl_io_job *const *jobs, int n) { insert_run(L, jobs, n, SL_PRIO_FRONT); }

void sl_loader_submit_next(sl_loader *L, sl_io_job *const *jobs, int n) { insert_run(L, jobs, n, SL_PRIO_NEXT); }

int sl_loader_read_now(sl_loader *L, sl_io_job *j, int fd, uint64_t base)
{
    pthread_mutex_lock(&L->mu);
    j->next = j->off + j->len; j->outstanding = 1; j->status = 0; j->err[0] = 0;
    j->done = false; j->queued = false; j->qnext = NULL;
    pthread_mutex_unlock(&L->mu);
    sl_io_req r = { .job = j, .fd = fd, .base = base, .need_end = j->need_end, .off = j->off, .len = j->len,
                    .direct = false, .counted = false };
    while (sl_loader_result(L, &r, sl_loader_read(L, &r))) { }
    return j->status;
}

int sl_loader_wait(sl_loader *L, sl_io_job *j)
{
    pthread_mutex_lock(&L->mu);
    while (!j->done) pthread_cond_wait(&L->cv_done, &L->mu);
    int st = j->status;
    pthread_mutex_unlock(&L->mu);
    return st;
}

int sl_loader_wait_progress(sl_loader *L, sl_io_job *j, void (*progress)(void *, uint64_t, uint64_t), void *ctx)
{
    pthread_mutex_lock(&L->mu);
    while (!j->done) {
        uint64_t issued = j->next - j->off;
        pthread_mutex_unlock(&L->mu);
        progress(ctx, issued, j->len);
        pthread_mutex_lock(&L->mu);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        if (!j->done) pthread_cond_timedwait(&L->cv_done, &L->mu, &ts);
    }
    int st = j->status;
    pthread_mutex_unlock(&L->mu);
    progress(ctx, j->len, j->len);
    return st;
}

void sl_loader_cancel(sl_loader *L, sl_io_job *j)
{
    pthread_mutex_lock(&L->mu);
    if (!j->done) {
        job_fail(j, SL_ECANCELED, "read cancelled");
        job_unlink(L, j);
        if (j->outstanding == 0) { j->done = true; pthread_cond_broadcast(&L->cv_done); }
    }
    pthread_mutex_unlock(&L->mu);
}

bool sl_loader_is_done(sl_loader *L, sl_io_job *j)
{
    pthread_mutex_lock(&L->mu);
    bool d = j->done;
    pthread_mutex_unlock(&L->mu);
    return d;
}

void sl_loader_get_stats(sl_loader *L, sl_loader_stats *st)
{
    pthread_mutex_lock(&L->mu);
    *st = L->st;
    if (L->active > 0) st->busy_ms += sl_now_ms() - L->busy_t0;
    pthread_mutex_unlock(&L->mu);
}

void sl_loader_reset_stats(sl_loader *L)
{
    pthread_mutex_lock(&L->mu);
    memset(&L->st, 0, sizeof L->st);
    if (L->active > 0) L->busy_t0 = sl_now_ms();
    pthread_mutex_unlock(&L->mu);
}

int sl_loader_backend(const sl_loader *L) { return L->io; }
bool sl_loader_fixed(const sl_loader *L) { return L->fixed; }

static void stop_threads(sl_loader *L, const sl_io_backend *be)
{
    pthread_mutex_lock(&L->mu);
    L->stop = true;
    pthread_cond_broadcast(&L->cv_work);
    pthread_mutex_unlock(&L->mu);
    be->stop(L->be_state);
    L->be_state = NULL;
    L->stop = false;
}

/* A backend that fails part-way may leave state (threads running): stopped here. */
int sl_loader_start(sl_loader *L, const sl_io_backend *be, int io)
{
    L->be_state = NULL;
    int rc = be->start(L, &L->cfg, &L->be_state, &L->fixed);
    if (rc == 0) { L->be = be; L->io = io; }
    else if (L->be_state) stop_threads(L, be);
    return rc;
}

int sl_loader_new(sl_loader **out, const sl_loader_cfg *cfg)
{
    *out = NULL;
    sl_loader *L = calloc(1, sizeof *L);
    if (!L) return sl_err_set(SL_ENOMEM, "streamer: out of memory for the loader");
    L->cfg = *cfg;
    if (L->cfg.req_bytes == 0) L->cfg.req_bytes = SL_DEFAULT_REQ_BYTES;
    if (L->cfg.align > 1)   /* requests must stay aligned */
        L->cfg.req_bytes = (L->cfg.req_bytes + L->cfg.align - 1) & ~(L->cfg.align - 1);
    if (L->cfg.queue_depth <= 0) L->cfg.queue_depth = SL_DEFAULT_QD;
    if (L->cfg.queue_depth > SL_MAX_QD) L->cfg.queue_depth = SL_MAX_QD;
    if (L->cfg.n_threads <= 0) L->cfg.n_threads = SL_DEFAULT_IO_THREADS;
    if (L->cfg.n_threads > SL_MAX_IO_THREADS) L->cfg.n_threads = SL_MAX_IO_THREADS;
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->cv_work, NULL);
    pthread_cond_init(&L->cv_done, NULL);
    *out = L;
    return 0;
}

void sl_loader_destroy(sl_loader *L)
{
    if (!L) return;
    if (L->be) stop_threads(L, L->be);
    pthread_mutex_destroy(&L->mu);
    pthread_cond_destroy(&L->cv_work);
    pthread_cond_destroy(&L->cv_done);
    free(L);
}
