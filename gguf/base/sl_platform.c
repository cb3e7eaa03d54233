/* Platform helpers of the ground floor (sl_platform.h). */
#include "sl_platform.h"

#include <stdio.h>
#include <time.h>
#include <sys/mman.h>

double sl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

uint64_t sl_buf_round(uint64_t n)
{
    /* THP backs big buffers with 2 MiB pages: count whole pages */
    uint64_t a = n >= SL_HUGE_PAGE ? SL_HUGE_PAGE : 4096;
    return (n + a - 1) & ~(a - 1);
}

void *sl_buf_alloc(size_t len, size_t *maplen, void **mapbase)
{
    size_t r = (size_t)sl_buf_round(len ? len : 1);
    size_t extra = r >= SL_HUGE_PAGE ? SL_HUGE_PAGE : 0;
    size_t ml = r + extra;
    void *p = mmap(NULL, ml, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    uintptr_t a = ((uintptr_t)p + extra) & ~(uintptr_t)(extra ? extra - 1 : 0);
    if (extra == 0) a = (uintptr_t)p;
    /* give back the unaligned head and tail so RSS/VSZ match the plan */
    if (extra) {
        size_t head = a - (uintptr_t)p, tail = ml - head - r;
        if (head) munmap(p, head);
        if (tail) munmap((void *)(a + r), tail);
        p = (void *)a; ml = r;
#ifdef MADV_HUGEPAGE
        madvise(p, r, MADV_HUGEPAGE);
#endif
    }
    *maplen = ml; *mapbase = p;
    return (void *)a;
}

void sl_buf_free(void *mapbase, size_t maplen)
{
    if (mapbase) munmap(mapbase, maplen);
}

int sl_proc_value(const char *path, const char *fmt, uint64_t *out)
{
    *out = 0;
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char line[256];
    unsigned long long v = 0;
    int found = -1;
    while (found && fgets(line, sizeof line, f))
        if (sscanf(line, fmt, &v) == 1) { *out = v; found = 0; }
    fclose(f);
    return found;
}

uint64_t sl_mem_available(void)
{
    uint64_t kb;
    sl_proc_value("/proc/meminfo", "MemAvailable: %llu kB", &kb);
    return kb * 1024;
}
