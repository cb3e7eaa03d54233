/* Memory and file facts for the streamer: huge-page-aligned buffers, the
 * O_DIRECT alignment of a file, MemAvailable. */
#include "stream_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

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

uint32_t sl_dio_align(int dfd, uint64_t file_size)
{
#ifdef STATX_DIOALIGN
    struct statx sx;
    if (statx(dfd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
        if (sx.stx_dio_offset_align == 0) return 0;     /* O_DIRECT not supported */
        uint32_t a = sx.stx_dio_offset_align;
        if (sx.stx_dio_mem_align > a) a = sx.stx_dio_mem_align;
        if (a < 512) a = 512;
        if (a <= 65536 && (a & (a - 1)) == 0) return a;
    }
#endif
    /* Probe: the smallest power of two an O_DIRECT read at that offset accepts. */
    void *buf = NULL;
    if (posix_memalign(&buf, 65536, 65536) != 0) return 4096;
    uint32_t found = 0;
    for (uint32_t a = 512; a <= 65536; a <<= 1) {
        uint64_t off = file_size >= 2ull * a ? a : 0;
        ssize_t n = pread(dfd, (char *)buf + a % 65536, a, (off_t)off);
        if (n >= 0) { found = a; break; }
        if (errno != EINVAL) { found = 4096; break; }
    }
    free(buf);
    return found;
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
