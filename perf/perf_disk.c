/* Raw device figures for the profiler and the bench: sequential O_DIRECT read
 * bandwidth of one file (request size x queue depth) through the streamer's
 * own loader, without slots or GGUF units, and memory read bandwidth. */
#include "perf.h"
#include "../io/stream_dio.h"
#include "../io/stream_io.h"
#include "../gguf/base/sl_platform.h"
#include "../gguf/base/sl_status.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK_MAX (64ull << 20)   /* bytes per loader job; two jobs alternate */

/* Reads [begin, end) — once, or wrapping until max_s / max_bytes — through the
 * streamer's own loader (io/: io_uring with fixed 2 MiB-aligned huge-page
 * buffers, or its pread pool), so the profile measures the code that streams
 * the weights: two chunk jobs alternate, one filling while the other completes. */
static int disk_core(const char *path, uint64_t begin, uint64_t end, int once, uint32_t req, int qd,
                     double max_s, uint64_t max_bytes, perf_disk_result *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (req < 4096 || req % 4096 || qd < 1 || qd > 256) {
        snprintf(err, err_len, "bad request size %u / queue depth %d", req, qd);
        return -EINVAL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
    out->direct = fd >= 0;
    if (fd < 0 && errno == EINVAL) fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, err_len, "%s: %s", path, strerror(errno));
        return -errno;
    }
    struct stat st;
    uint64_t fsize = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : end;
    uint32_t align = out->direct ? sl_dio_align(fd, fsize) : 1;
    if (align < 4096) align = 4096;
    begin &= ~(uint64_t)(align - 1);
    end = (end + align - 1) & ~(uint64_t)(align - 1);   /* reads past EOF come back short: fine */
    if (end <= begin) { close(fd); snprintf(err, err_len, "%s: empty range", path); return -EINVAL; }
    uint64_t chunk = end - begin < CHUNK_MAX ? end - begin : CHUNK_MAX;
    chunk = sl_buf_round(chunk);
    size_t ml[2] = { 0, 0 };
    void *mb[2] = { NULL, NULL };
    uint8_t *buf[2];
    struct iovec iov[2];
    for (int b = 0; b < 2; b++) {
        buf[b] = sl_buf_alloc((size_t)chunk, &ml[b], &mb[b]);
        if (!buf[b]) {
            if (b) sl_buf_free(mb[0], ml[0]);
            close(fd);
            snprintf(err, err_len, "out of memory for %llu-byte read buffers", (unsigned long long)chunk);
            return -ENOMEM;
        }
        memset(buf[b], 0, (size_t)chunk);   /* fault the huge pages in before timing */
        iov[b].iov_base = buf[b];
        iov[b].iov_len = (size_t)chunk;
    }
    sl_loader_cfg lc;
    memset(&lc, 0, sizeof lc);
    lc.io = sl_io_auto();
    lc.fd = fd; lc.direct = out->direct; lc.align = align;
    lc.req_bytes = req; lc.queue_depth = qd; lc.n_threads = qd;
    lc.fixed = iov; lc.n_fixed = 2;
    sl_loader *L;
    char notice[256] = "";
    int rc = sl_loader_create(&L, &lc, notice, sizeof notice);
    if (rc) {
        snprintf(err, err_len, "%s: %s", path, sl_last_error());
        for (int b = 0; b < 2; b++) sl_buf_free(mb[b], ml[b]);
        close(fd);
        return rc;
    }
    out->engine = sl_loader_backend(L) == SL_IO_URING ? "io_uring" : "pread";
    sl_io_job jobs[2];
    int in_flight[2] = { 0, 0 }, stop = 0;
    uint64_t off = begin, bytes = 0;
    double t0 = perf_now();
    for (int k = 0; !stop || in_flight[0] || in_flight[1]; k++) {
        int b = k & 1;
        if (in_flight[b]) {
            in_flight[b] = 0;
            if (sl_loader_wait(L, &jobs[b]) != 0 && !rc) {
                rc = jobs[b].status ? jobs[b].status : -EIO;
                snprintf(err, err_len, "%s: %s", path, jobs[b].err);
                stop = 1;
            } else {
                bytes += jobs[b].need_end - jobs[b].off;
            }
        }
        if (stop) continue;
        if (off >= end) {
            if (once) { stop = 1; continue; }
            off = begin;
        }
        uint64_t n = end - off < chunk ? end - off : chunk;
        memset(&jobs[b], 0, sizeof jobs[b]);
        jobs[b].dst = buf[b]; jobs[b].off = off; jobs[b].len = n; jobs[b].need_end = off + n < fsize ? off + n : (fsize > off ? fsize : off);
        jobs[b].buf_index = sl_loader_fixed(L) ? b : -1; jobs[b].unit = k;
        sl_loader_submit(L, &jobs[b]);
        in_flight[b] = 1;
        off += n;
        if (!once && (bytes + n >= max_bytes || perf_now() - t0 >= max_s)) stop = 1;
    }
    out->seconds = perf_now() - t0;
    out->bytes = bytes;
    out->bytes_per_s = out->seconds > 0 ? (double)bytes / out->seconds : 0;
    sl_loader_destroy(L);
    for (int b = 0; b < 2; b++) sl_buf_free(mb[b], ml[b]);
    close(fd);
    return rc;
}

int perf_disk_read(const char *path, uint32_t req, int qd, double max_s, uint64_t max_bytes,
                   perf_disk_result *out, char *err, size_t err_len)
{
    uint64_t size = perf_file_size(path);
    perf_evict(path);
    int rc = disk_core(path, 0, size & ~4095ull, 0, req, qd, max_s, max_bytes, out, err, err_len);
    if (!out->direct) perf_evict(path);
    return rc;
}

int perf_disk_read_range(const char *path, uint64_t begin, uint64_t end, uint32_t req, int qd,
                         perf_disk_result *out, char *err, size_t err_len)
{
    return disk_core(path, begin, end, 1, req, qd, 1e9, UINT64_MAX, out, err, err_len);
}

/* ---- memory bandwidth -------------------------------------------------- */
typedef struct {
    const uint64_t *p;
    uint64_t n;
    uint64_t sum;
} mem_job;

static void *mem_worker(void *arg)
{
    mem_job *j = arg;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    const uint64_t *p = j->p;
    uint64_t n = j->n & ~7ull;
    for (uint64_t i = 0; i < n; i += 8) {
        s0 += p[i] ^ p[i + 4];
        s1 += p[i + 1] ^ p[i + 5];
        s2 += p[i + 2] ^ p[i + 6];
        s3 += p[i + 3] ^ p[i + 7];
    }
    j->sum = s0 + s1 + s2 + s3;
    return NULL;
}

double perf_mem_read_bw(void *buf, uint64_t bytes, int nt, int reps)
{
    if (nt < 1) nt = 1;
    if (nt > 256) nt = 256;
    mem_job jobs[256];
    pthread_t th[256];
    uint64_t words = bytes / 8, per = words / (uint64_t)nt;
    double best = 0;
    volatile uint64_t sink = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = perf_now();
        for (int i = 0; i < nt; i++) {
            jobs[i] = (mem_job){ (const uint64_t *)buf + (uint64_t)i * per, per, 0 };
            th[i] = 0;
            if (i && pthread_create(&th[i], NULL, mem_worker, &jobs[i])) { th[i] = 0; mem_worker(&jobs[i]); }
        }
        mem_worker(&jobs[0]);
        for (int i = 1; i < nt; i++) if (th[i]) pthread_join(th[i], NULL);
        double dt = perf_now() - t0;
        for (int i = 0; i < nt; i++) sink += jobs[i].sum;
        double bw = (double)(per * 8 * (uint64_t)nt) / dt;
        if (bw > best) best = bw;
    }
    (void)sink;
    return best;
}
