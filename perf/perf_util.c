/* Small helpers shared by the perf tools: time, /proc readers, page-cache
 * eviction of one file, JSON string output. */
#include "perf.h"
#include "../gguf/base/sl_platform.h"   /* sl_proc_value, sl_now_ms */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

double perf_now(void)
{
    return sl_now_ms() * 1e-3;   /* the one clock (sl_platform.h), in seconds */
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void perf_sort(double *x, int n) { qsort(x, (size_t)n, sizeof *x, cmp_d); }

int perf_meminfo(uint64_t *avail, uint64_t *total)
{
    uint64_t a, t;
    int ra = sl_proc_value("/proc/meminfo", "MemAvailable: %llu kB", &a);
    int rt = sl_proc_value("/proc/meminfo", "MemTotal: %llu kB", &t);
    if (!ra) *avail = a * 1024;
    if (!rt) *total = t * 1024;
    return ra || rt ? -1 : 0;
}

uint64_t perf_vmhwm(int pid)
{
    char path[64];
    if (pid) snprintf(path, sizeof path, "/proc/%d/status", pid);
    else snprintf(path, sizeof path, "/proc/self/status");
    uint64_t kb = 0;
    sl_proc_value(path, "VmHWM: %llu kB", &kb);
    return kb * 1024;
}

uint64_t perf_rss_of(const char *field)
{
    char fmt[64];
    snprintf(fmt, sizeof fmt, "%s: %%llu kB", field);
    uint64_t kb = 0;
    sl_proc_value("/proc/self/status", fmt, &kb);
    return kb * 1024;
}

int perf_evict(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    return -rc;
}

uint64_t perf_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) ? 0 : (uint64_t)st.st_size;
}

void perf_fmt_bytes(char *buf, size_t len, double b)
{
    if (b >= 1e9) snprintf(buf, len, "%.2f GB", b / 1e9);
    else if (b >= 1e6) snprintf(buf, len, "%.1f MB", b / 1e6);
    else if (b >= 1e3) snprintf(buf, len, "%.1f kB", b / 1e3);
    else snprintf(buf, len, "%.0f B", b);
}

const char *perf_cache_dir(char *buf, size_t len)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg) snprintf(buf, len, "%s/sluice", xdg);
    else snprintf(buf, len, "%s/.cache/sluice", home && *home ? home : "/tmp");
    /* mkdir -p of the last two components */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", buf);
    char *slash = strrchr(tmp, '/');
    if (slash) { *slash = 0; mkdir(tmp, 0755); }
    mkdir(buf, 0755);
    return buf;
}

void perf_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

uint64_t perf_proc_read_bytes(void)
{
    uint64_t v = 0;
    sl_proc_value("/proc/self/io", "read_bytes: %llu", &v);
    return v;
}
