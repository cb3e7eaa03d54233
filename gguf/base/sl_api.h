/* What every installed Sluice header shares: the export annotation and the
 * library version (the Makefile reads VERSION and the SONAME from here).
 *
 * The library is built with -fvisibility=hidden: only declarations marked
 * SL_API are exported from libsluice.so. Versioning rules: README "Library". */
#ifndef SL_API_H
#define SL_API_H

#include <stddef.h>

#if defined(__GNUC__) || defined(__clang__)
#define SL_API __attribute__((visibility("default")))
#else
#define SL_API
#endif

/* MAJOR is the SONAME (libsluice.so.MAJOR): it changes only when a binary
 * built against an older release of the same MAJOR could break. */
#define SLUICE_VERSION_MAJOR 0
#define SLUICE_VERSION_MINOR 6
#define SLUICE_VERSION_PATCH 0
#define SLUICE_VERSION_NUMBER \
    (SLUICE_VERSION_MAJOR * 10000 + SLUICE_VERSION_MINOR * 100 + SLUICE_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version at run time ("0.5.0") and as SLUICE_VERSION_NUMBER
 * (compare with the macros to see which header a program was built with). */
SL_API const char *sl_version(void);
SL_API int sl_version_number(void);

#ifdef __cplusplus
}
#endif

/* Bytes of T up to and including member f: the size of a versioned struct
 * whose last member then was f (README "Library": versioned structs). */
#define SL_STRUCT_END(T, f) (offsetof(T, f) + sizeof(((T *)0)->f))

#endif
