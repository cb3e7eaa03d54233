/* Shared helpers of the perf/ tools (mkmodel, profile, bench). Internal to
 * the `sluice` command; not part of the library. */
#ifndef SL_PERF_H
#define SL_PERF_H

#include <stdint.h>
#include <stdio.h>

/* `sluice mkmodel` argv entry, callable from other commands (profile makes its
 * scratch GGUF with it). */
int perf_mkmodel_main(int argc, char **argv);

double perf_now(void);                         /* monotonic seconds */
void perf_sort(double *x, int n);              /* ascending: medians, min/max of repetitions */
int perf_meminfo(uint64_t *avail, uint64_t *total);   /* bytes; -1 if unreadable */
uint64_t perf_vmhwm(int pid);                  /* VmHWM of /proc/PID/status in bytes (0 = self) */
uint64_t perf_rss_of(const char *field);        /* "RssAnon", "RssFile", ... of this process in bytes */
/* Drops a file's pages from the page cache (posix_fadvise DONTNEED; never
 * anything system-wide). Returns 0 or -errno. */
int perf_evict(const char *path);
/* Bytes this process caused to be read from storage (/proc/self/io read_bytes:
 * page faults and O_DIRECT included, page-cache hits not). */
uint64_t perf_proc_read_bytes(void);
uint64_t perf_file_size(const char *path);
void perf_fmt_bytes(char *buf, size_t len, double bytes);   /* "4.66 GB" */
/* ~/.cache/sluice (created); returns buf. */
const char *perf_cache_dir(char *buf, size_t len);
void perf_json_str(FILE *f, const char *s);   /* quoted, escaped */

/* Sequential read of a file with O_DIRECT (buffered with a notice if the
 * filesystem refuses it), req_bytes per request, queue_depth in flight
 * (io_uring where built with liburing, else a pread thread per slot), for at
 * most max_s seconds or max_bytes, wrapping at the end. The file's cached
 * pages are evicted first. */
typedef struct perf_disk_result {
    double bytes_per_s;
    uint64_t bytes;
    double seconds;
    int direct;           /* 1 if O_DIRECT was used */
    const char *engine;   /* "io_uring" or "pread" */
} perf_disk_result;
int perf_disk_read(const char *path, uint32_t req_bytes, int queue_depth, double max_s,
                   uint64_t max_bytes, perf_disk_result *out, char *err, size_t err_len);

/* Reads [begin, end) of a file once, sequentially (no eviction: the caller's job). */
int perf_disk_read_range(const char *path, uint64_t begin, uint64_t end, uint32_t req_bytes,
                         int queue_depth, perf_disk_result *out, char *err, size_t err_len);

/* Memory read bandwidth with n_threads over a buffer of `bytes`: best of reps. */
double perf_mem_read_bw(void *buf, uint64_t bytes, int n_threads, int reps);

#endif
