/* pread thread-pool backend: where io_uring is unavailable (old kernels,
 * seccomp-filtered Android apps) or chosen with --io pread. Each worker takes
 * one request at a time from the loader's queue. */
#include "stream_loader.h"
#include "../gguf/base/sl_internal.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct pool { pthread_t *threads; int n; sl_loader *L; } pool;

static void *worker(void *arg)
{
    sl_loader *L = arg;
    sl_io_req r;
    (void)pthread_setname_np(pthread_self(), "sl-pread");
    while (sl_loader_take(L, &r, true))
        while (sl_loader_result(L, &r, sl_loader_read(L, &r))) { }
    return NULL;
}

static void pool_stop(void *state)
{
    pool *P = state;
    if (!P) return;
    for (int i = 0; i < P->n; i++) pthread_join(P->threads[i], NULL);
    free(P->threads);
    free(P);
}

static int pool_start(sl_loader *L, const sl_loader_cfg *cfg, void **state, bool *fixed)
{
    *state = NULL; *fixed = false;
    pool *P = calloc(1, sizeof *P);
    if (P) P->threads = calloc((size_t)cfg->n_threads, sizeof *P->threads);
    if (!P || !P->threads) { free(P); return sl_err_set(SL_ENOMEM, "streamer: out of memory for io threads"); }
    for (int i = 0; i < cfg->n_threads; i++) {
        int e = pthread_create(&P->threads[i], NULL, worker, L);
        if (e) {   /* *state set: the loader stops the workers already running */
            *state = P;
            return sl_err_set(-e, "streamer: cannot start pread thread %d: errno %d", i, e);
        }
        P->n++;
    }
    *state = P;
    return 0;
}

const sl_io_backend sl_io_pread_backend = { pool_start, pool_stop };
