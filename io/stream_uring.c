/* io_uring backend: one thread owns the ring (so SINGLE_ISSUER/DEFER_TASKRUN
 * apply), keeps up to queue_depth requests in flight, reaps completions and
 * refills. Slot buffers are registered as fixed buffers when the kernel and
 * RLIMIT_MEMLOCK allow (READ_FIXED), else plain READ. With a read hook the
 * thread serves each request through the loader's read instead. Builds
 * without liburing (cross builds) report ENOSYS. */
#include "stream_loader.h"
#include "../gguf/base/sl_internal.h"

#include <errno.h>
#include <pthread.h>
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
 * process-wide, so it is installed once per process (pthread_once), around
 * the one syscall, and the caller's handler is put back. A SIGSYS another
 * thread takes meanwhile goes on to that handler (or the default action). */
static sigjmp_buf probe_env;
static int probe_rc;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static struct sigaction probe_old;
static __thread volatile sig_atomic_t probing;

static void probe_sigsys(int sig, siginfo_t *si, void *uc)
{
    if (probing) siglongjmp(probe_env, 1);
    if (probe_old.sa_flags & SA_SIGINFO) probe_old.sa_sigaction(sig, si, uc);
    else if (probe_old.sa_handler == SIG_DFL) { signal(SIGSYS, SIG_DFL); raise(SIGSYS); }
    else if (probe_old.sa_handler != SIG_IGN) probe_old.sa_handler(sig);
}

static void probe_run(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = probe_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, &probe_old) != 0) { probe_rc = -errno; return; }
    probing = 1;
    if (sigsetjmp(probe_env, 1) == 0) {
        struct io_uring_params p;
        memset(&p, 0, sizeof p);
        long fd = syscall(__NR_io_uring_setup, 1, &p);
        probe_rc = fd < 0 ? -errno : 0;
        if (fd >= 0) close((int)fd);
    } else {
        probe_rc = -ENOSYS;   /* trapped by seccomp */
    }
    probing = 0;
    sigaction(SIGSYS, &probe_old, NULL);
}

int sl_uring_probe(void)
{
    pthread_once(&probe_once, probe_run);
    return probe_rc;
}

typedef struct uring_state {
    sl_loader *L;
    const sl_loader_cfg *cfg;
    struct io_uring ring;
    bool ring_ok, fixed;
    pthread_t thread;
    pthread_mutex_t mu;      /* start handshake */
    pthread_cond_t cv;
    bool init_done;
    int init_rc;
    char init_msg[200];
    sl_io_req *reqs, *free_reqs;   /* free list: the ring thread's alone */
    int inflight;
} uring_state;

static void submit_req(uring_state *U, sl_io_req *r)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&U->ring);
    if (!sqe) { io_uring_submit(&U->ring); sqe = io_uring_get_sqe(&U->ring); }
    if (r->job->buf_index >= 0 && U->fixed)
        io_uring_prep_read_fixed(sqe, r->fd, sl_io_req_dst(r), (unsigned)r->len, r->off - r->base, r->job->buf_index);
    else
        io_uring_prep_read(sqe, r->fd, sl_io_req_dst(r), (unsigned)r->len, r->off - r->base);
    io_uring_sqe_set_data(sqe, r);
    U->inflight++;
}

/* A request just taken: into the ring, or (read hook) served right here. */
static void start_req(uring_state *U, sl_io_req *r)
{
    if (!U->cfg->hook) { submit_req(U, r); return; }
    while (sl_loader_result(U->L, r, sl_loader_read(U->L, r))) { }
    r->free_next = U->free_reqs; U->free_reqs = r;
}

static int ring_init(uring_state *U)
{
    unsigned entries = (unsigned)U->cfg->queue_depth;
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
    if (U->cfg->n_fixed > 0 && !U->cfg->hook) {
        /* fails with ENOMEM under a small RLIMIT_MEMLOCK: plain reads then */
        U->fixed = io_uring_register_buffers(&U->ring, U->cfg->fixed, (unsigned)U->cfg->n_fixed) == 0;
    }
    return 0;
}

static void *uring_thread(void *arg)
{
    uring_state *U = arg;
    (void)pthread_setname_np(pthread_self(), "sl-io");   /* for top -H, perf */
    int rc = ring_init(U);
    pthread_mutex_lock(&U->mu);
    U->init_rc = rc; U->init_done = true;
    pthread_cond_signal(&U->cv);
    pthread_mutex_unlock(&U->mu);
    if (rc < 0) return NULL;

    for (;;) {
        sl_io_req *r;
        /* idle: block until there is work (false: the loader stops) */
        if (U->inflight == 0) {
            r = U->free_reqs;
            if (!sl_loader_take(U->L, r, true)) break;
            U->free_reqs = r->free_next;
            start_req(U, r);
        }
        while ((r = U->free_reqs) && sl_loader_take(U->L, r, false)) {
            U->free_reqs = r->free_next;
            start_req(U, r);
        }
        if (U->inflight == 0) continue;

        struct io_uring_cqe *cqe;
        /* errors of the wait itself (EINTR, EBUSY) just mean: look again */
        (void)io_uring_submit_and_wait(&U->ring, 1);
        unsigned head, n = 0;
        sl_io_req *resub = NULL;
        io_uring_for_each_cqe(&U->ring, head, cqe) {
            r = io_uring_cqe_get_data(cqe);
            n++;
            U->inflight--;
            bool again = sl_loader_result(U->L, r, cqe->res);
            if (again) { r->free_next = resub; resub = r; }
            else { r->free_next = U->free_reqs; U->free_reqs = r; }
        }
        io_uring_cq_advance(&U->ring, n);
        while ((r = resub)) { resub = r->free_next; submit_req(U, r); }
    }
    return NULL;
}

static void uring_free(uring_state *U)
{
    if (U->ring_ok) io_uring_queue_exit(&U->ring);
    pthread_mutex_destroy(&U->mu);
    pthread_cond_destroy(&U->cv);
    free(U->reqs);
    free(U);
}

static void uring_stop(void *state)
{
    uring_state *U = state;
    if (!U) return;
    pthread_join(U->thread, NULL);
    uring_free(U);
}

static int uring_start(sl_loader *L, const sl_loader_cfg *cfg, void **state, bool *fixed)
{
    *state = NULL; *fixed = false;
    int pr = sl_uring_probe();
    if (pr < 0) return sl_err_set(SL_ENOSYS, "io_uring_setup: %s", strerror(-pr));
    uring_state *U = calloc(1, sizeof *U);
    if (!U) return sl_err_set(SL_ENOMEM, "streamer: out of memory (io_uring state)");
    U->L = L; U->cfg = cfg;
    pthread_mutex_init(&U->mu, NULL);
    pthread_cond_init(&U->cv, NULL);
    U->reqs = calloc((size_t)cfg->queue_depth, sizeof *U->reqs);
    if (!U->reqs) { uring_free(U); return sl_err_set(SL_ENOMEM, "streamer: out of memory (requests)"); }
    for (int i = 0; i < cfg->queue_depth; i++) { U->reqs[i].free_next = U->free_reqs; U->free_reqs = &U->reqs[i]; }
    int e = pthread_create(&U->thread, NULL, uring_thread, U);
    if (e) { uring_free(U); return sl_err_set(-e, "streamer: cannot start the io_uring thread: errno %d", e); }
    pthread_mutex_lock(&U->mu);
    while (!U->init_done) pthread_cond_wait(&U->cv, &U->mu);
    int rc = U->init_rc;
    pthread_mutex_unlock(&U->mu);
    if (rc < 0) {
        pthread_join(U->thread, NULL);
        int st = sl_err_set(rc == -ENOMEM ? SL_ENOMEM : SL_ENOSYS, "%s", U->init_msg);
        uring_free(U);
        return st;
    }
    *fixed = U->fixed;
    *state = U;
    return 0;
}

#else  /* no liburing: the pread pool serves everything */

int sl_uring_probe(void) { return -ENOSYS; }

static int uring_start(sl_loader *L, const sl_loader_cfg *cfg, void **state, bool *fixed)
{
    (void)L; (void)cfg; *state = NULL; *fixed = false;
    return sl_err_set(SL_ENOSYS, "io_uring: not compiled in (built without liburing)");
}

static void uring_stop(void *state) { (void)state; }

#endif

const sl_io_backend sl_io_uring_backend = { uring_start, uring_stop };
