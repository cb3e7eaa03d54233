/* Helpers of the session tests: model params with a test's context, opening
 * a model, a session (greedy or not), pseudo-random prompts. Header-only
 * (static inline). */
#ifndef SL_SESSION_TESTUTIL_H
#define SL_SESSION_TESTUTIL_H

#include "sl_test.h"

#include <stdbool.h>
#include <stdint.h>

#include "../engine/sluice.h"
#include "../gguf/base/sl_status.h"

/* The defaults with n_ctx positions, n_batch (0: the default) and n_threads. */
static inline sl_model_params st_params(int32_t n_ctx, int32_t n_batch, int n_threads)
{
    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.n_ctx = n_ctx;
    mp.n_batch = n_batch;
    mp.n_threads = n_threads;
    return mp;
}

/* Opens path, or fails the test saying which file and why. */
static inline sl_model *st_open(const char *path, const sl_model_params *mp)
{
    sl_model *m = NULL;
    cr_assert_eq(sl_model_open(&m, path, mp), 0, "open %s: %s", path, sl_last_error());
    return m;
}

/* Opens path with n_ctx positions, n_batch (0: the default) and 2 threads. */
static inline sl_model *st_open_ctx(const char *path, int32_t n_ctx, int32_t n_batch)
{
    sl_model_params mp = st_params(n_ctx, n_batch, 2);
    return st_open(path, &mp);
}

/* A session of m; greedy: sampling at temperature 0. */
static inline sl_session *st_session(sl_model *m, bool greedy)
{
    sl_session *s = NULL;
    cr_assert_eq(sl_session_create(&s, m), 0, "%s", sl_last_error());
    if (greedy) {
        sl_sampling sp;
        sl_sampling_init(&sp);
        sp.temp = 0;
        cr_assert_eq(sl_session_set_sampling(s, &sp), 0);
    }
    return s;
}

/* The end of a test: its session, then its model. */
static inline void st_close(sl_session *s, sl_model *m)
{
    sl_session_destroy(s);
    sl_model_close(m);
}

static inline uint64_t st_lcg(uint64_t x) { return x * 6364136223846793005ull + 1442695040888963407ull; }

/* ids[0] = 1 (BOS of the test vocabularies), then n - 1 ids in [3, n_vocab)
 * from an LCG started at seed. */
static inline void st_some_ids(int32_t *ids, int n, int32_t n_vocab, uint64_t seed)
{
    uint64_t x = seed;
    ids[0] = 1;
    for (int i = 1; i < n; i++) {
        x = st_lcg(x);
        ids[i] = 3 + (int32_t)((x >> 33) % (uint64_t)(n_vocab - 3));
    }
}

#endif
