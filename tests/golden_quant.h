/* The llama.cpp block vectors in shared/golden/quant/, for the quant and
 * kernel tests: a file of exactly `want` bytes, or the test fails. */
#ifndef SL_TEST_GOLDEN_QUANT_H
#define SL_TEST_GOLDEN_QUANT_H

#include <stdio.h>

#include "sl_test.h"
#include "util_file.h"

#define SL_GOLDEN_QUANT SL_SHARED_DIR "/golden/quant/"

static inline void *sl_test_golden_quant(const char *name, size_t want)
{
    char path[512];
    snprintf(path, sizeof path, SL_GOLDEN_QUANT "%s", name);
    size_t sz = 0;
    void *p = sl_test_slurp(path, &sz);
    cr_assert_not_null(p, "cannot read %s", path);
    cr_assert_eq(sz, want, "%s: %zu bytes, expected %zu", path, sz, want);
    return p;
}

#endif
