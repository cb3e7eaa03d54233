/* Library-internal helpers shared by every module; not installed (the public
 * headers are engine/sluice.h, io/sluice_stream.h, gguf/gguf.h, gguf/base/sl_status.h
 * and gguf/base/sl_api.h). */
#ifndef SL_INTERNAL_H
#define SL_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

#include "sl_status.h"

/* Record a message for this thread and return status. */
int sl_err_set(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int sl_err_vset(int status, const char *fmt, va_list ap);
void sl_err_clear(void);

/* Versioned caller structs (first member size_t struct_size, fields only ever
 * appended; README "Library"). Both return SL_EINVAL with a message naming
 * `what` when the size is below min (no release had a smaller layout) or
 * above full (the caller's header is newer than this library). */

/* The library side of T_init: fills the caller's size bytes from defaults
 * (full bytes) and sets struct_size = size. On a bad size it still stores
 * struct_size (when there is room), so the call taking the struct fails too. */
int sl_struct_init(void *dst, size_t size, const void *defaults, size_t full, size_t min,
                   const char *what);
/* Copies a caller's struct over dst (full bytes, holding the defaults): only
 * the first struct_size bytes, so fields the caller does not know keep their
 * defaults. */
int sl_struct_in(void *dst, size_t full, const void *src, size_t min, const char *what);
/* The library side of a getter into a caller's struct (T_sized(..., size); the
 * header's inline passes sizeof): check the size before any side effect, then
 * copy the first size bytes of the full result. */
int sl_struct_check(size_t size, size_t min, size_t full, const char *what);
int sl_struct_out(void *dst, size_t size, const void *src, size_t full, size_t min,
                  const char *what);

#endif
