/* File helpers shared by the tests (tests/util_file.c is linked into every test). */
#ifndef SL_TEST_UTIL_FILE_H
#define SL_TEST_UTIL_FILE_H

#include <stddef.h>

/* The whole file in a malloc'ed buffer with a NUL after the last byte; its
 * length in *len (len may be NULL). NULL if the file cannot be read. */
void *sl_test_slurp(const char *path, size_t *len);

#endif
