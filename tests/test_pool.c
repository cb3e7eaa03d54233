/* kernels/pool.c: every thread runs every job exactly once with the right
 * (ith, nth), jobs are complete when sl_pool_run returns, across many quick
 * jobs (spinning path) and jobs separated by pauses (futex sleep path). */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "../kernels/kernels.h"
#include "sl_test.h"

struct job { int nth; _Atomic int hits[16]; _Atomic int bad; long sum[16]; int iter; };

static void fn(void *ctx, int ith, int nth)
{
    struct job *j = ctx;
    if (nth != j->nth || ith < 0 || ith >= nth) atomic_fetch_add(&j->bad, 1);
    else {
        atomic_fetch_add(&j->hits[ith], 1);
        long s = 0;                                  /* some work of uneven length */
        for (int i = 0; i < 100 * (ith + 1); i++) s += i ^ j->iter;
        j->sum[ith] = s;
    }
}

static void run_many(int nthreads, int njobs, int sleep_every)
{
    sl_pool *p = NULL;
    cr_assert_eq(sl_pool_create(&p, nthreads), 0);
    cr_assert_eq(sl_pool_n_threads(p), nthreads);
    struct job j = {.nth = nthreads};
    for (int it = 0; it < njobs; it++) {
        j.iter = it;
        for (int t = 0; t < nthreads; t++) j.sum[t] = -1;
        sl_pool_run(p, fn, &j);
        for (int t = 0; t < nthreads; t++) {       /* all work visible on return */
            long s = 0;
            for (int i = 0; i < 100 * (t + 1); i++) s += i ^ it;
            cr_assert_eq(j.sum[t], s, "job %d thread %d", it, t);
            cr_assert_eq(atomic_load(&j.hits[t]), it + 1, "job %d thread %d", it, t);
        }
        if (sleep_every && it % sleep_every == 0) {
            struct timespec ts = {0, 2000000};         /* 2 ms: workers go to sleep */
            nanosleep(&ts, NULL);
        }
    }
    cr_assert_eq(atomic_load(&j.bad), 0);
    sl_pool_destroy(p);
}

Test(pool, single_thread) { run_many(1, 1000, 0); }
Test(pool, two_threads_many_jobs) { run_many(2, 20000, 0); }
Test(pool, sleeping_workers) { run_many(2, 40, 1); }
Test(pool, oversubscribed) { run_many(5, 2000, 500); }

Test(pool, bad_arguments)
{
    sl_pool *p = (sl_pool *)1;
    cr_assert_eq(sl_pool_create(&p, 0), -EINVAL);
    cr_assert_null(p);
    cr_assert_eq(sl_pool_n_threads(NULL), 1);
    sl_pool_destroy(NULL);
}

static void nap_fn(void *ctx, int ith, int nth)
{
    (void)ctx; (void)nth;
    struct timespec ts = { 0, 200000L * (ith + 1) };   /* 0.2 ms x (ith + 1) */
    nanosleep(&ts, NULL);
}

/* Profiling: each thread's time inside a job lands in its own row under the
 * tag current at sl_pool_run; off, nothing is written. */
Test(pool, profile_rows_and_tags)
{
    for (int nthreads = 1; nthreads <= 3; nthreads++) {
        sl_pool *p = NULL;
        cr_assert_eq(sl_pool_create(&p, nthreads), 0);
        enum { STRIDE = 8 };
        uint64_t acc[3 * STRIDE] = { 0 };
        sl_pool_run(p, nap_fn, NULL);                 /* off: nothing recorded */
        sl_pool_set_profile(p, acc, STRIDE);
        sl_pool_set_tag(p, 2);
        sl_pool_run(p, nap_fn, NULL);
        sl_pool_set_tag(p, 5);
        sl_pool_run(p, nap_fn, NULL);
        sl_pool_run(p, nap_fn, NULL);
        sl_pool_set_tag(p, STRIDE);                   /* out of range: ignored */
        sl_pool_set_profile(p, NULL, 0);
        sl_pool_run(p, nap_fn, NULL);
        for (int t = 0; t < nthreads; t++)
            for (int g = 0; g < STRIDE; g++) {
                uint64_t v = acc[t * STRIDE + g], lo = (g == 2 ? 1u : g == 5 ? 2u : 0u) * 200000u * (uint64_t)(t + 1);
                if (!lo) cr_assert_eq(v, 0, "%d threads: thread %d tag %d: %llu ns", nthreads, t, g,
                                      (unsigned long long)v);
                else cr_assert_geq(v, lo, "%d threads: thread %d tag %d: %llu ns < %llu", nthreads, t, g,
                                   (unsigned long long)v, (unsigned long long)lo);
            }
        sl_pool_destroy(p);
    }
}
