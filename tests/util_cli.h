/* Running the `sluice` command from a test (tests/util_cli.c, linked into every test). */
#ifndef SL_TEST_UTIL_CLI_H
#define SL_TEST_UTIL_CLI_H

#include <stddef.h>

/* Runs `<build>/sluice ARGS 2>&1` (the binary beside the tests' directory),
 * its output in out (NUL-terminated, cut at out_len - 1). Returns the exit
 * status; -1 if it could not run or did not exit. */
int sl_test_sluice(const char *args, char *out, size_t out_len);

#endif
