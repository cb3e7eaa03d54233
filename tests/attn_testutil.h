/* What the attention tests (test_kern_attn.c, test_kern_attn_q.c) share:
 * one call of sl_kern_attention with a poisoned scratch and a NaN-filled
 * output, so results cannot depend on either's previous contents.
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

#endif
