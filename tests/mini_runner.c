/* Minimal test runner for qemu-aarch64 (Criterion hangs there). Each test runs
 * in-process in registration order; a fatal assertion longjmps out of it. */
#include "sl_test.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>

#define SL_MT_MAX 1024

static struct { const char *suite, *name; sl_mt_fn fn; } tests[SL_MT_MAX];
static int n_tests, cur_failed, cur_skipped;
static jmp_buf cur_jmp;

void sl_mt_register(const char *suite, const char *name, sl_mt_fn fn)
{
    if (n_tests < SL_MT_MAX) {
        tests[n_tests].suite = suite;
        tests[n_tests].name = name;
        tests[n_tests].fn = fn;
        n_tests++;
    }
}

void sl_mt_fail(const char *file, int line, int fatal, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: assertion failed: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    cur_failed = 1;
    if (fatal) longjmp(cur_jmp, 1);
}

void sl_mt_skip(void) { cur_skipped = 1; }

int main(int argc, char **argv)
{
    /* volatile: live across the longjmp of a fatal assertion */
    volatile int passed = 0, failed = 0, skipped = 0;
    const char *only = argc > 1 ? argv[1] : NULL;
    for (volatile int i = 0; i < n_tests; i++) {
        if (only && strcmp(only, tests[i].suite) != 0) continue;
        cur_failed = cur_skipped = 0;
        if (setjmp(cur_jmp) == 0) tests[i].fn();
        if (cur_failed) {
            failed++;
            fprintf(stderr, "[FAIL] %s::%s\n", tests[i].suite, tests[i].name);
        } else if (cur_skipped) {
            skipped++;
        } else {
            passed++;
        }
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
