/* The ground floor's platform helpers: the one clock, huge-page-aligned
 * buffers and the kernel's memory figures. libc only; every folder may use
 * them (library-internal, not installed). */
#ifndef SL_PLATFORM_H
#define SL_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#define SL_HUGE_PAGE (2u << 20)

/* CLOCK_MONOTONIC in milliseconds: every duration Sluice reports. */
double sl_now_ms(void);

/* Bytes a buffer of n takes: whole 2 MiB pages from SL_HUGE_PAGE on (THP), else 4 KiB pages. */
uint64_t sl_buf_round(uint64_t n);
/* Anonymous buffer, 2 MiB-aligned + MADV_HUGEPAGE when large; free with
 * sl_buf_free(*mapbase, *maplen). NULL when mmap fails. */
void *sl_buf_alloc(size_t len, size_t *maplen, void **mapbase);
void sl_buf_free(void *mapbase, size_t maplen);

/* MemAvailable in bytes (0 when /proc/meminfo has no such line). */
uint64_t sl_mem_available(void);
/* The first value of a line matching fmt ("MemAvailable: %llu kB") in a text
 * file under /proc: 0, or -1 if the file or the line is missing (*out = 0). */
int sl_proc_value(const char *path, const char *fmt, uint64_t *out);

#endif
