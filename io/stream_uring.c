/* io_uring backend: one thread owns the ring (so SINGLE_ISSUER/DEFER_TASKRUN
 * apply), keeps up to queue_depth requests in flight, reaps completions and
 * refills. Slot buffers are registered as fixed buffers when the kernel and
 * RLIMIT_MEMLOCK allow (READ_FIXED), else plain READ. Builds without
 * liburing (cross builds) compile to stubs that report ENOSYS. */
#include "stream_internal.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#if defined(SL_HAVE_LIBURING) && SL_HAVE_LIBURING
#include <liburing.h>

/* Probe io_uring_setup with a SIGSYS guard: a seccomp filter with
 * SECCOMP_RET_TRAP (Android apps) would otherwise kill us. The handler is
 * process-wide, so it is installed only around the one syscall. */
static __thread sigjmp_buf probe_env;
static void probe_sigsys(int sig) { (void)sig; siglongjmp(probe_env, 1); }

int sl_uring_probe(void)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = probe_sigsys;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, &old) != 0) return -errno;
    int rc;
    if (sigsetjmp(probe_env, 1) == 0) {
        struct io_uring_params p;
        memset(&p, 0, sizeof p);
        long fd = syscall(__NR_io_uring_setup, 1, &p);
        rc = fd < 0 ? -errno : 0;
        if (fd >= 0) close((int)fd);
    } else {
        rc = -ENOSYS;   /* trapped by seccomp */
    }
    sigaction(SIGSYS, &old, NULL);
    return rc;
}

typedef struct uring_state {
    struct io_uring ring;
    bool ring_ok;
    int init_rc;
    bool init_done;
    char init_msg[200];
    sl_io_req *reqs, *free_reqs;
    int inflight;
} uring_state;

static void submit_req(sl_loader *L, uring_state *U, sl_io_req *r)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&U->ring);
    if (!sqe) { io_uring_submit(&U->ring); sqe = io_uring_get_sqe(&U->ring); }
    uint8_t *dst = r->job->dst + (r->off - r->job->off);
    if (r->job->buf_index >= 0 && L->fixed_ok)
        io_uring_prep_read_fixed(sqe, L->cfg.fd, dst, (unsigned)r->len, r->off, r->job->buf_index);
    else
        io_uring_prep_read(sqe, L->cfg.fd, dst, (unsigned)r->len, r->off);
    io_uring_sqe_set_data(sqe, r);
    U->inflight++;
}

static int ring_init(sl_loader *L, uring_state *U)
{
    unsigned entries = (unsigned)L->cfg.queue_depth;
    static const unsigned flag_sets[] = {
#ifdef IORING_SETUP_DEFER_TASKRUN
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
#endif
#ifdef IORING_SETUP_SINGLE_ISSUER
        IORING_SETUP_SINGLE_ISSUER,
#endif
        0 };
    int rc = -EINVAL;
    for (size_t i = 0; i < sizeof flag_sets / sizeof flag_sets[0]; i++) {
        struct io_uring_params p;
        memset(&p, 0, sizeof p);
        p.flags = flag_sets[i];
        rc = io_uring_queue_init_params(entries, &U->ring, &p);
        if (rc != -EINVAL) break;
    }
    if (rc < 0) {
        snprintf(U->init_msg, sizeof U->init_msg, "io_uring_queue_init: %s", strerror(-rc));
        return rc;
    }
    U->ring_ok = true;
    if (L->cfg.n_fixed > 0 && !L->cfg.hook) {
        /* fails with ENOMEM under a small RLIMIT_MEMLOCK: plain reads then */
        L->fixed_ok = io_uring_register_buffers(&U->ring, L->cfg.fixed,
                                                (unsigned)L->cfg.n_fixed) == 0;
    }
    return 0;
}

static void *uring_thread(void *arg)
{
    sl_loader *L = arg;
    uring_state *U = L->impl;
    int rc = ring_init(L, U);
    pthread_mutex_lock(&L->mu);
    U->init_rc = rc; U->init_done = true;
    pthread_cond_broadcast(&L->cv_done);
    pthread_mutex_unlock(&L->mu);
    if (rc < 0) return NULL;

    for (;;) {
        pthread_mutex_lock(&L->mu);
        while (!L->stop && U->inflight == 0 && !L->qhead)
            pthread_cond_wait(&L->cv_work, &L->mu);
        if (L->stop && U->inflight == 0) { pthread_mutex_unlock(&L->mu); break; }
        int taken = 0;
        sl_io_req *hooked[1024]; int n_hooked = 0;
        while (U->free_reqs) {
            sl_io_req *r = U->free_reqs;
            if (L->stop || !sl_loader_take(L, r)) break;
            U->free_reqs = r->free_next;
            if (L->cfg.hook) hooked[n_hooked++] = r;
            else { submit_req(L, U, r); taken++; }
        }
        pthread_mutex_unlock(&L->mu);

        /* fault-injection / custom storage: the hook stands in for the read */
        for (int i = 0; i < n_hooked; i++) {
            sl_io_req *r = hooked[i];
            for (;;) {
                uint8_t *dst = r->job->dst + (r->off - r->job->off);
                int64_t res = L->cfg.hook(L->cfg.hook_ctx, L->cfg.fd, dst, (size_t)r->len, r->off);
                if (!sl_loader_result(L, r, res)) break;
            }
            pthread_mutex_lock(&L->mu);
            r->free_next = U->free_reqs; U->free_reqs = r;
            pthread_mutex_unlock(&L->mu);
        }
        if (U->inflight == 0) continue;

        struct io_uring_cqe *cqe;
        /* errors of the wait itself (EINTR, EBUSY) just mean: look again */
        (void)io_uring_submit_and_wait(&U->ring, 1);
        unsigned head, n = 0;
        sl_io_req *resub[1024]; int n_resub = 0;
        io_uring_for_each_cqe(&U->ring, head, cqe) {
            sl_io_req *r = io_uring_cqe_get_data(cqe);
            n++;
            U->inflight--;
            if (sl_loader_result(L, r, cqe->res)) resub[n_resub++] = r;
            else {
                pthread_mutex_lock(&L->mu);
                r->free_next = U->free_reqs; U->free_reqs = r;
                pthread_mutex_unlock(&L->mu);
            }
        }
        io_uring_cq_advance(&U->ring, n);
        for (int i = 0; i < n_resub; i++) submit_req(L, U, resub[i]);
        (void)taken;
    }
    return NULL;
}

int sl_uring_start(sl_loader *L)
{
    int pr = sl_uring_probe();
    if (pr < 0)
        return sl_err_set(SL_ENOSYS, "io_uring_setup: %s", strerror(-pr));
    uring_state *U = calloc(1, sizeof *U);
    if (!U) return sl_err_set(SL_ENOMEM, "streamer: out of memory (io_uring state)");
    int qd = L->cfg.queue_depth;
    U->reqs = calloc((size_t)qd, sizeof *U->reqs);
    if (!U->reqs) { free(U); return sl_err_set(SL_ENOMEM, "streamer: out of memory (requests)"); }
    for (int i = 0; i < qd; i++) { U->reqs[i].free_next = U->free_reqs; U->free_reqs = &U->reqs[i]; }
    L->impl = U;
    L->threads = calloc(1, sizeof *L->threads);
    int e = L->threads ? pthread_create(&L->threads[0], NULL, uring_thread, L) : ENOMEM;
    if (e) {
        free(L->threads); L->threads = NULL;
        free(U->reqs); free(U); L->impl = NULL;
        return sl_err_set(-e, "streamer: cannot start the io_uring thread: errno %d", e);
    }
    L->n_threads = 1;
    pthread_mutex_lock(&L->mu);
    while (!U->init_done) pthread_cond_wait(&L->cv_done, &L->mu);
    int rc = U->init_rc;
    pthread_mutex_unlock(&L->mu);
    if (rc < 0) {
        pthread_join(L->threads[0], NULL);
        int st = sl_err_set(rc == -ENOMEM ? SL_ENOMEM : SL_ENOSYS, "%s", U->init_msg);
        free(L->threads); L->threads = NULL; L->n_threads = 0;
        free(U->reqs); free(U); L->impl = NULL;
        return st;
    }
    return 0;
}

void sl_uring_stop(sl_loader *L)
{
    uring_state *U = L->impl;
    if (!U) return;
    pthread_mutex_lock(&L->mu);
    L->stop = true;
    pthread_cond_broadcast(&L->cv_work);
    pthread_mutex_unlock(&L->mu);
    if (L->n_threads) pthread_join(L->threads[0], NULL);
    if (U->ring_ok) io_uring_queue_exit(&U->ring);
    free(L->threads); L->threads = NULL; L->n_threads = 0;
    free(U->reqs); free(U); L->impl = NULL;
}

#else  /* no liburing: the pread pool serves everything */

int sl_uring_probe(void) { return -ENOSYS; }
int sl_uring_start(sl_loader *L)
{
    (void)L;
    return sl_err_set(SL_ENOSYS, "io_uring: not compiled in (built without liburing)");
}
void sl_uring_stop(sl_loader *L) { (void)L; }

#endif
