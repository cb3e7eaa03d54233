/* Persistent thread pool. A job is published by bumping `gen`; workers spin on
 * it for a short while (decode issues ~200 small jobs per token back to back,
 * so a sleeping worker would cost a futex wake-up of several µs per job), then
 * sleep on a futex. The caller runs share 0 itself and waits for `pending` to
 * reach zero the same way (spin, then futex). Linux only (futex).
 * One caller at a time per pool; a job must not call sl_pool_run on its own pool.
 * Profiling (sl_pool_set_profile): each thread adds the time it spends inside
 * a job to its own row of the caller's array, under the caller's current tag;
 * off, it costs one predictable branch and no clock read. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kernels.h"

#define SPIN_NS 30000   /* how long an idle thread polls before sleeping */

struct sl_pool {
    int n;
    pthread_t *th;
    sl_pool_fn fn;
    void *ctx;
    _Atomic uint32_t gen;        /* job counter; futex word of idle workers */
    _Atomic uint32_t pending;    /* workers still running the job; futex word of the caller */
    _Atomic int sleepers;        /* workers in futex_wait on gen */
    _Atomic int caller_sleeping;
    _Atomic int stop;
    uint64_t *prof;              /* [n][prof_stride] ns per tag, or NULL (off) */
    int prof_stride, prof_tag;   /* published to workers by the gen bump */
};

struct worker_arg { sl_pool *p; int ith; };

static void futex_wait(_Atomic uint32_t *addr, uint32_t val)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr, int n)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#endif
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spin until *w != val or SPIN_NS passed; returns the last value seen. */
static uint32_t spin_while_eq(_Atomic uint32_t *w, uint32_t val)
{
    uint32_t v = atomic_load_explicit(w, memory_order_acquire);
    if (v != val) return v;
    uint64_t t0 = now_ns();
    for (;;) {
        for (int i = 0; i < 64; i++) {
            cpu_relax();
            v = atomic_load_explicit(w, memory_order_acquire);
            if (v != val) return v;
        }
        if (now_ns() - t0 > SPIN_NS) return v;
    }
}

static void *worker(void *varg)
{
    struct worker_arg *arg = varg;
    sl_pool *p = arg->p;
    int ith = arg->ith;
    free(arg);
    (void)pthread_setname_np(pthread_self(), "sl-pool");   /* for top -H, perf */
    uint32_t seen = 0;
    for (;;) {
        uint32_t g = spin_while_eq(&p->gen, seen);
        while (g == seen) {
            atomic_fetch_add(&p->sleepers, 1);          /* seq_cst: pairs with run() */
            if (atomic_load(&p->gen) == seen) futex_wait(&p->gen, seen);
            atomic_fetch_sub(&p->sleepers, 1);
            g = atomic_load_explicit(&p->gen, memory_order_acquire);
        }
        seen = g;
        if (atomic_load_explicit(&p->stop, memory_order_acquire)) return NULL;
        if (p->prof) {
            uint64_t t0 = now_ns();
            p->fn(p->ctx, ith, p->n);
            p->prof[(size_t)ith * (size_t)p->prof_stride + (size_t)p->prof_tag] += now_ns() - t0;
        } else {
            p->fn(p->ctx, ith, p->n);
        }
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1
            && atomic_load(&p->caller_sleeping))
            futex_wake(&p->pending, 1);
    }
}

int sl_pool_create(sl_pool **out, int n_threads)
{
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024) return -EINVAL;
    sl_pool *p = calloc(1, sizeof *p);
    if (!p) return -ENOMEM;
    p->n = n_threads;
    p->th = calloc((size_t)n_threads, sizeof *p->th);
    if (!p->th) { free(p); return -ENOMEM; }
    for (int i = 1; i < n_threads; i++) {
        struct worker_arg *a = malloc(sizeof *a);
        if (a) { a->p = p; a->ith = i; }
        int rc = a ? pthread_create(&p->th[i], NULL, worker, a) : ENOMEM;
        if (rc != 0) {
            free(a);
            p->n = i;             /* tear down the ones already running */
            sl_pool_destroy(p);
            return -rc;
        }
    }
    *out = p;
    return 0;
}

void sl_pool_destroy(sl_pool *p)
{
    if (!p) return;
    atomic_store(&p->stop, 1);
    atomic_fetch_add(&p->gen, 1);
    futex_wake(&p->gen, INT_MAX);
    for (int i = 1; i < p->n; i++) pthread_join(p->th[i], NULL);
    free(p->th);
    free(p);
}

int sl_pool_n_threads(const sl_pool *p) { return p ? p->n : 1; }

void sl_pool_set_profile(sl_pool *p, uint64_t *acc, int stride)
{
    if (!p) return;
    p->prof = stride > 0 ? acc : NULL;
    p->prof_stride = stride;
    p->prof_tag = 0;
}

void sl_pool_set_tag(sl_pool *p, int tag)
{
    if (p && p->prof && tag >= 0 && tag < p->prof_stride) p->prof_tag = tag;
}

/* The caller's share of a job, timed into row 0 when profiling. */
static void run_share0(sl_pool *p, sl_pool_fn fn, void *ctx, int nth)
{
    if (p && p->prof) {
        uint64_t t0 = now_ns();
        fn(ctx, 0, nth);
        p->prof[p->prof_tag] += now_ns() - t0;
    } else {
        fn(ctx, 0, nth);
    }
}

void sl_pool_run(sl_pool *p, sl_pool_fn fn, void *ctx)
{
    if (!p || p->n == 1) { run_share0(p, fn, ctx, 1); return; }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->pending, (uint32_t)(p->n - 1), memory_order_relaxed);
    atomic_fetch_add(&p->gen, 1);                       /* seq_cst publish */
    if (atomic_load(&p->sleepers) > 0) futex_wake(&p->gen, INT_MAX);
    run_share0(p, fn, ctx, p->n);
    uint32_t v;
    while ((v = atomic_load_explicit(&p->pending, memory_order_acquire)) != 0) {
        uint32_t w = spin_while_eq(&p->pending, v);
        if (w != v) continue;                 /* progress: spin again */
        atomic_store(&p->caller_sleeping, 1); /* seq_cst: pairs with the worker's check */
        if (atomic_load(&p->pending) == v) futex_wait(&p->pending, v);
        atomic_store(&p->caller_sleeping, 0);
    }
}
