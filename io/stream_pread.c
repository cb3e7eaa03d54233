/* pread thread-pool backend: where io_uring is unavailable (old kernels,
 * seccomp-filtered Android apps) or chosen with --io pread. Each worker takes
 * one request at a time from the loader's queue. */
#include "stream_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static int64_t do_read(sl_loader *L, sl_io_req *r)
{
    uint8_t *dst = r->job->dst + (r->off - r->job->off);
    if (L->cfg.hook) return L->cfg.hook(L->cfg.hook_ctx, L->cfg.fd, dst, (size_t)r->len, r->off);
    ssize_t n = pread(L->cfg.fd, dst, (size_t)r->len, (off_t)r->off);
    return n < 0 ? -(int64_t)errno : (int64_t)n;
}

static void *worker(void *arg)
{
    sl_loader *L = arg;
    for (;;) {
        sl_io_req r;
        pthread_mutex_lock(&L->mu);
        while (!L->stop && !sl_loader_take(L, &r)) pthread_cond_wait(&L->cv_work, &L->mu);
        if (L->stop) { pthread_mutex_unlock(&L->mu); return NULL; }
        pthread_mutex_unlock(&L->mu);
        while (sl_loader_result(L, &r, do_read(L, &r))) { }
    }
}

int sl_pread_start(sl_loader *L)
{
    L->threads = calloc((size_t)L->cfg.n_threads, sizeof *L->threads);
    if (!L->threads) return sl_err_set(SL_ENOMEM, "streamer: out of memory for io threads");
    for (int i = 0; i < L->cfg.n_threads; i++) {
        int e = pthread_create(&L->threads[i], NULL, worker, L);
        if (e) {
            sl_pread_stop(L);
            return sl_err_set(-e, "streamer: cannot start pread thread %d: errno %d", i, e);
        }
        L->n_threads++;
    }
    return 0;
}

void sl_pread_stop(sl_loader *L)
{
    pthread_mutex_lock(&L->mu);
    L->stop = true;
    pthread_cond_broadcast(&L->cv_work);
    pthread_mutex_unlock(&L->mu);
    for (int i = 0; i < L->n_threads; i++) pthread_join(L->threads[i], NULL);
    free(L->threads);
    L->threads = NULL; L->n_threads = 0;
}
