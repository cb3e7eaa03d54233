/* The loader: a FIFO of read jobs cut into requests of req_bytes, served by
 * a backend (io_uring thread or pread pool). Retry and error policy lives
 * here so every backend behaves the same: short reads and EAGAIN/EINTR are
 * resubmitted, anything else fails the job with a message naming the unit,
 * file offset, length and errno. A job is "done" only when every request has
 * finished, so nobody sees a half-filled buffer as complete. */
#include "stream_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double sl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void sl_loader_busy_begin(sl_loader *L)
{
    if (L->active++ == 0) L->busy_t0 = sl_now_ms();
}

void sl_loader_busy_end(sl_loader *L)
{
    if (--L->active == 0) L->st.busy_ms += sl_now_ms() - L->busy_t0;
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

bool sl_loader_take(sl_loader *L, sl_io_req *r)
{
    while (L->qhead) {
        sl_io_job *j = L->qhead;
        uint64_t end = j->off + j->len;
        if (j->status != 0 || j->next >= end) { job_pop(L); continue; }
        uint64_t n = end - j->next;
        if (n > L->cfg.req_bytes) n = L->cfg.req_bytes;
        r->job = j; r->off = j->next; r->len = n; r->tries = 0;
        j->next += n;
        j->outstanding++;
        if (j->next >= end) job_pop(L);
        sl_loader_busy_begin(L);
        return true;
    }
    return false;
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
    pthread_mutex_lock(&L->mu);
    if (res == -EAGAIN || res == -EINTR) {
        L->st.retries++;
        if (++r->tries <= SL_MAX_RETRIES) { pthread_mutex_unlock(&L->mu); return true; }
    }
    if (res > 0) {
        L->st.bytes += (uint64_t)res;
        L->st.reads++;
        if ((uint64_t)res > r->len) res = (int64_t)r->len;
        r->off += (uint64_t)res; r->len -= (uint64_t)res;
        if (r->len > 0 && r->off < j->need_end) {
            /* short read: resubmit the rest (from an aligned offset for O_DIRECT) */
            L->st.retries++;
            if (L->cfg.direct && L->cfg.align > 1) {
                uint64_t a = r->off & ~(uint64_t)(L->cfg.align - 1);
                r->len += r->off - a; r->off = a;
            }
            if (++r->tries <= SL_MAX_RETRIES) { pthread_mutex_unlock(&L->mu); return true; }
            res = -EIO;
        } else {
            res = 0;
        }
    } else if (res == 0 && r->off >= j->need_end) {
        res = 0;  /* EOF inside the alignment padding past the data */
    } else if (res == 0) {
        if (j->status == 0) {
            j->status = SL_ETRUNC;
            snprintf(j->err, sizeof j->err,
                     "unit %d: unexpected end of file reading %llu bytes at file offset %llu",
                     (int)j->unit, (unsigned long long)r->len, (unsigned long long)r->off);
        }
        res = 1;
    }
    if (res < 0 && j->status == 0) {
        int e = (int)-res;
        j->status = e == EAGAIN || e == EINTR ? SL_EIO : -e;
        snprintf(j->err, sizeof j->err,
                 "unit %d: read of %llu bytes at file offset %llu failed: %s (errno %d%s)",
                 (int)j->unit, (unsigned long long)r->len, (unsigned long long)r->off,
                 strerror(e), e, e == EAGAIN || e == EINTR ? ", retries exhausted" : "");
    }
    sl_loader_busy_end(L);
    finish_locked(L, j);
    pthread_mutex_unlock(&L->mu);
    return false;
}

void sl_loader_submit(sl_loader *L, sl_io_job *j)
{
    pthread_mutex_lock(&L->mu);
    j->next = j->off; j->outstanding = 0; j->status = 0; j->err[0] = 0;
    j->done = j->len == 0; j->qnext = NULL; j->queued = !j->done;
    if (!j->done) {
        if (L->qtail) L->qtail->qnext = j; else L->qhead = j;
        L->qtail = j;
        pthread_cond_broadcast(&L->cv_work);
    }
    pthread_mutex_unlock(&L->mu);
}

int sl_loader_wait(sl_loader *L, sl_io_job *j)
{
    pthread_mutex_lock(&L->mu);
    while (!j->done) pthread_cond_wait(&L->cv_done, &L->mu);
    int st = j->status;
    pthread_mutex_unlock(&L->mu);
    return st;
}

void sl_loader_cancel(sl_loader *L, sl_io_job *j)
{
    pthread_mutex_lock(&L->mu);
    if (!j->done) {
        if (j->status == 0) {
            j->status = SL_EINVAL;
            snprintf(j->err, sizeof j->err, "unit %d: read cancelled", (int)j->unit);
        }
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

int sl_loader_backend(const sl_loader *L) { return L->backend; }
bool sl_loader_fixed(const sl_loader *L) { return L->fixed_ok; }

int sl_loader_create(sl_loader **out, const sl_loader_cfg *cfg, char *notice, size_t notice_len)
{
    *out = NULL;
    sl_loader *L = calloc(1, sizeof *L);
    if (!L) return sl_err_set(SL_ENOMEM, "streamer: out of memory for the loader");
    L->cfg = *cfg;
    if (L->cfg.req_bytes == 0) L->cfg.req_bytes = SL_DEFAULT_REQ_BYTES;
    if (L->cfg.align > 1)   /* requests must stay aligned */
        L->cfg.req_bytes = (L->cfg.req_bytes + L->cfg.align - 1) & ~(L->cfg.align - 1);
    if (L->cfg.queue_depth <= 0) L->cfg.queue_depth = SL_DEFAULT_QD;
    if (L->cfg.queue_depth > 1024) L->cfg.queue_depth = 1024;
    if (L->cfg.n_threads <= 0) L->cfg.n_threads = SL_DEFAULT_IO_THREADS;
    if (L->cfg.n_threads > 64) L->cfg.n_threads = 64;
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->cv_work, NULL);
    pthread_cond_init(&L->cv_done, NULL);

    int rc = SL_ENOSYS;
    if (cfg->io != SL_IO_PREAD) {
        rc = sl_uring_start(L);
        if (rc == 0) L->backend = SL_IO_URING;
        else if (cfg->io == SL_IO_URING) {
            sl_loader_destroy(L);
            return rc;
        } else if (notice && notice_len) {
            snprintf(notice, notice_len, "io_uring unavailable (%s); using the pread pool",
                     sl_last_error());
        }
    }
    if (rc != 0) {
        rc = sl_pread_start(L);
        if (rc != 0) { sl_loader_destroy(L); return rc; }
        L->backend = SL_IO_PREAD;
    }
    *out = L;
    return 0;
}

void sl_loader_destroy(sl_loader *L)
{
    if (!L) return;
    if (L->backend == SL_IO_URING) sl_uring_stop(L);
    else if (L->backend == SL_IO_PREAD) sl_pread_stop(L);
    pthread_mutex_destroy(&L->mu);
    pthread_cond_destroy(&L->cv_work);
    pthread_cond_destroy(&L->cv_done);
    free(L);
}
