/* Test front-end: real Criterion on the host; under qemu-aarch64 (where
 * Criterion hangs) the same test files build against a minimal runner
 * (SL_MINI_TEST, tests/mini_runner.c) that prints "N passed, N failed".
 * Use only: Test(suite, name[, .timeout = s]), cr_assert, cr_assert_eq/neq/lt/
 * leq/gt/geq, cr_assert_float_eq, cr_assert_str_eq/neq, cr_assert_null,
 * cr_assert_not_null, cr_assert_fail, cr_skip_test, cr_log_info, and the
 * cr_expect_* twins (same meaning, not fatal). */
#ifndef SL_TEST_H
#define SL_TEST_H

#ifndef SL_SHARED_DIR
#define SL_SHARED_DIR "../shared"
#endif

#ifndef SL_MINI_TEST
#include <criterion/criterion.h>
#include <criterion/logging.h>
#else
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef void (*sl_mt_fn)(void);
void sl_mt_register(const char *suite, const char *name, sl_mt_fn fn);
void sl_mt_fail(const char *file, int line, int fatal, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void sl_mt_skip(void);

struct sl_mt_opts { double timeout; int disabled; };

#define Test(suite, name, ...)                                                   \
    static void sl_mt_##suite##_##name(void);                                    \
    __attribute__((constructor)) static void sl_mt_reg_##suite##_##name(void)    \
    {                                                                            \
        struct sl_mt_opts o = { __VA_ARGS__ }; (void)o; /* {} ok in GNU C */ \
        if (!o.disabled) sl_mt_register(#suite, #name, sl_mt_##suite##_##name);  \
    }                                                                            \
    static void sl_mt_##suite##_##name(void)

#define SL_MT_MSG(...) "" __VA_ARGS__
/* The condition is printed first, separately: the message's own arguments
 * must not be consumed by the "%s" of the condition. */
#define sl_mt_check(fatal, cond, ...)                                            \
    do { if (!(cond)) { sl_mt_fail(__FILE__, __LINE__, 0, "%s", #cond);          \
                        sl_mt_fail(__FILE__, __LINE__, fatal, "  " SL_MT_MSG(__VA_ARGS__)); } } while (0)

#define cr_assert(cond, ...)          sl_mt_check(1, (cond), __VA_ARGS__)
#define cr_expect(cond, ...)          sl_mt_check(0, (cond), __VA_ARGS__)
#define cr_assert_fail(...)           sl_mt_fail(__FILE__, __LINE__, 1, "failed " SL_MT_MSG(__VA_ARGS__))
#define cr_assert_eq(a, b, ...)       cr_assert((a) == (b), __VA_ARGS__)
#define cr_assert_neq(a, b, ...)      cr_assert((a) != (b), __VA_ARGS__)
#define cr_assert_lt(a, b, ...)       cr_assert((a) < (b), __VA_ARGS__)
#define cr_assert_leq(a, b, ...)      cr_assert((a) <= (b), __VA_ARGS__)
#define cr_assert_gt(a, b, ...)       cr_assert((a) > (b), __VA_ARGS__)
#define cr_assert_geq(a, b, ...)      cr_assert((a) >= (b), __VA_ARGS__)
#define cr_assert_null(p, ...)        cr_assert((p) == NULL, __VA_ARGS__)
#define cr_assert_not_null(p, ...)    cr_assert((p) != NULL, __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...)   cr_assert(strcmp((a), (b)) == 0, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...)  cr_assert(strcmp((a), (b)) != 0, __VA_ARGS__)
#define cr_assert_float_eq(a, b, eps, ...) cr_assert(fabs((double)(a) - (double)(b)) <= (eps), __VA_ARGS__)
#define cr_expect_eq(a, b, ...)       cr_expect((a) == (b), __VA_ARGS__)
#define cr_expect_neq(a, b, ...)      cr_expect((a) != (b), __VA_ARGS__)
#define cr_expect_lt(a, b, ...)       cr_expect((a) < (b), __VA_ARGS__)
#define cr_expect_leq(a, b, ...)      cr_expect((a) <= (b), __VA_ARGS__)
#define cr_expect_gt(a, b, ...)       cr_expect((a) > (b), __VA_ARGS__)
#define cr_expect_geq(a, b, ...)      cr_expect((a) >= (b), __VA_ARGS__)
#define cr_expect_null(p, ...)        cr_expect((p) == NULL, __VA_ARGS__)
#define cr_expect_not_null(p, ...)    cr_expect((p) != NULL, __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...)   cr_expect(strcmp((a), (b)) == 0, __VA_ARGS__)
#define cr_expect_float_eq(a, b, eps, ...) cr_expect(fabs((double)(a) - (double)(b)) <= (eps), __VA_ARGS__)
#define cr_skip_test(...)             do { sl_mt_skip(); return; } while (0)
#define cr_log_info(...)              do { fprintf(stderr, "  info: "); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } while (0)
#define cr_log_warn                   cr_log_info
#endif

#endif
