/* The library's version and the size check of versioned caller structs. */
#include "sl_internal.h"

#include <stdint.h>
#include <string.h>

#define SL_STR_(x) #x
#define SL_STR(x) SL_STR_(x)

const char *sl_version(void)
{
    return SL_STR(SLUICE_VERSION_MAJOR) "." SL_STR(SLUICE_VERSION_MINOR) "."
           SL_STR(SLUICE_VERSION_PATCH);
}

int sl_version_number(void) { return SLUICE_VERSION_NUMBER; }

static int bad_size(const char *what, size_t size, size_t min, size_t full)
{
    return sl_err_set(SL_EINVAL,
                      "%s: struct_size %zu outside %zu..%zu (not set by its _init function or "
                      "the header's inline, or built against another Sluice version; this "
                      "library is %s)", what, size, min, full, sl_version());
}

int sl_struct_init(void *dst, size_t size, const void *defaults, size_t full, size_t min,
                   const char *what)
{
    if (!dst) return sl_err_set(SL_EINVAL, "%s: NULL", what);
    if (size < min || size > full) {
        if (size >= sizeof(size_t)) memcpy(dst, &size, sizeof size);
        return bad_size(what, size, min, full);
    }
    memcpy(dst, defaults, size);
    memcpy(dst, &size, sizeof size);
    return 0;
}

int sl_struct_check(size_t size, size_t min, size_t full, const char *what)
{
    return size < min || size > full ? bad_size(what, size, min, full) : 0;
}

int sl_struct_out(void *dst, size_t size, const void *src, size_t full, size_t min,
                  const char *what)
{
    if (!dst) return sl_err_set(SL_EINVAL, "%s: NULL", what);
    int rc = sl_struct_check(size, min, full, what);
    if (rc) return rc;
    memcpy(dst, src, size);
    return 0;
}

int sl_struct_in(void *dst, size_t full, const void *src, size_t min, const char *what)
{
    size_t size;
    memcpy(&size, src, sizeof size);
    if (size < min || size > full) return bad_size(what, size, min, full);
    memcpy(dst, src, size);
    return 0;
}
