/* What the attention tests (test_kern_attn.c, test_kern_attn_q.c) share:
 * one call of sl_kern_attention with a poisoned scratch and a NaN-filled
 * output, so results cannot depend on either's previous contents, and the
 * pool-against-one-thread check.
 * Header-only (static inline). */
#ifndef SL_ATTN_TESTUTIL_H
#define SL_ATTN_TESTUTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sl_test.h"
#include "../kernels/kernels.h"

static inline int attn_run_poisoned(const sl_kern *k, sl_pool *pool, const sl_attn *a, int32_t n_ctx)
{
    int nt = pool ? sl_pool_n_threads(pool) : 1;
    size_t sz = sl_kern_attn_scratch(nt, a->head_dim, n_ctx);
    cr_assert_gt(sz, 0);
    void *ws = malloc(sz);
    cr_assert_not_null(ws);
    memset(ws, 0xff, sz);
    for (int64_t i = 0; i < a->out_stride * a->n_q; i++) a->out[i] = NAN;
    int rc = sl_kern_attention(k, pool, a, ws);
    free(ws);
    return rc;
}

/* Level k's output through a pool equals its single-thread output bit for bit. */
static inline void attn_check_threads(const sl_kern *k, sl_pool *pool, const sl_attn *a, int32_t n_ctx)
{
    size_t osz = (size_t)(a->out_stride * a->n_q) * sizeof(float);
    float *o1 = malloc(osz);
    cr_assert_not_null(o1);
    cr_assert_eq(attn_run_poisoned(k, NULL, a, n_ctx), 0);
    memcpy(o1, a->out, osz);
    cr_assert_eq(attn_run_poisoned(k, pool, a, n_ctx), 0);
    cr_assert(memcmp(o1, a->out, osz) == 0, "threaded != single thread");
    free(o1);
}

/* Sink logits for n_head heads: spread over [-3, 4) around the scores'
 * scale, and head 1's at 20, far above them (its weights all but vanish). */
static inline void attn_test_sinks(float *sinks, int n_head)
{
    for (int h = 0; h < n_head; h++) sinks[h] = h == 1 ? 20.0f : -3.0f + 7.0f * (float)((h * 37) % 11) / 11.0f;
}

#endif
