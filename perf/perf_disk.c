/* Raw device figures for the profiler and the bench: sequential O_DIRECT read
 * bandwidth of one file (request size x queue depth) and memory read
 * bandwidth. The disk reader is deliberately plain (no slots, no GGUF): it is
 * the yardstick the streamer's own figures are compared against. */
#include "perf.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if SL_HAVE_LIBURING
#include <liburing.h>
#endif

#define HUGE_ALIGN (2u << 20)

static void *alloc_buf(size_t len)
{
    size_t l = (len + HUGE_ALIGN - 1) & ~(size_t)(HUGE_ALIGN - 1);
    void *p = NULL;
    if (posix_memalign(&p, HUGE_ALIGN, l)) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, l, MADV_HUGEPAGE);   /* O_DIRECT into huge pages is markedly faster here */
#endif
    memset(p, 0, l);
    return p;
}

typedef struct {
    int fd;
    uint64_t begin, end;       /* [begin, end), 4096-aligned */
    uint32_t req;
    int qd, idx, once;
    double deadline;
    uint64_t max_bytes;
    uint8_t *buf;
    uint64_t bytes;
    int err;
} pread_job;

/* Request k of a range cut into req-sized pieces (the last may be shorter). */
static void req_at(uint64_t begin, uint64_t end, uint32_t req, uint64_t k, uint64_t *off, uint32_t *len)
{
    uint64_t nreq = (end - begin + req - 1) / req;
    (void)nreq;   /* only the io_uring path counts requests */
    *off = begin + (k % nreq) * req;
    *len = (uint32_t)(end - *off < req ? end - *off : req);
}

static void *pread_worker(void *arg)
{
    pread_job *j = arg;
    uint64_t nreq = (j->end - j->begin + j->req - 1) / j->req;
    for (uint64_t k = (uint64_t)j->idx;; k += (uint64_t)j->qd) {
        if (j->once && k >= nreq) break;
        uint64_t off; uint32_t len;
        req_at(j->begin, j->end, j->req, k, &off, &len);
        ssize_t n = pread(j->fd, j->buf, len, (off_t)off);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            j->err = errno;
            break;
        }
        j->bytes += (uint64_t)n;
        if (!j->once && (j->bytes * (uint64_t)j->qd >= j->max_bytes || perf_now() >= j->deadline)) break;
    }
    return NULL;
}

/* once: read [begin, end) exactly once; else loop over it until max_s / max_bytes. */
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
    begin &= ~4095ull;
    end = (end + 4095) & ~4095ull;   /* reads past EOF come back short: fine */
    if (end <= begin) { close(fd); snprintf(err, err_len, "%s: empty range", path); return -EINVAL; }
    uint8_t *buf = alloc_buf((size_t)req * (size_t)qd);
    if (!buf) { close(fd); snprintf(err, err_len, "out of memory"); return -ENOMEM; }
    uint64_t nreq = (end - begin + req - 1) / req;
    (void)nreq;   /* only the io_uring path counts requests */
    int rc = 0;
    double t0 = perf_now();
    uint64_t bytes = 0;
#if SL_HAVE_LIBURING
    struct io_uring ring;
    int urc = io_uring_queue_init((unsigned)qd, &ring, 0);
    if (urc == 0) {
        out->engine = "io_uring";
        uint64_t next = 0, inflight = 0, issued = 0;
        double deadline = t0 + max_s;
        int stop = 0, nfree = qd;
        uint64_t free_slot[256];
        for (int i = 0; i < qd; i++) free_slot[i] = (uint64_t)(qd - 1 - i);
        while (!rc) {
            /* keep qd requests in flight */
            while (!stop && inflight < (uint64_t)qd) {
                if (once && next >= nreq) { stop = 1; break; }
                uint64_t off; uint32_t len;
                req_at(begin, end, req, next, &off, &len);
                struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
                if (!sqe) break;
                uint64_t slot = free_slot[--nfree];
                io_uring_prep_read(sqe, fd, buf + slot * req, len, off);
                io_uring_sqe_set_data64(sqe, slot);
                next++; inflight++; issued += len;
                if (!once && (issued >= max_bytes || perf_now() >= deadline)) stop = 1;
            }
            if (!inflight) break;
            io_uring_submit(&ring);
            struct io_uring_cqe *cqe;
            int w = io_uring_wait_cqe(&ring, &cqe);
            if (w == -EINTR) continue;
            if (w < 0) { rc = w; snprintf(err, err_len, "%s: io_uring wait: %s", path, strerror(-w)); break; }
            int res = cqe->res;
            free_slot[nfree++] = io_uring_cqe_get_data64(cqe);
            io_uring_cqe_seen(&ring, cqe);
            inflight--;
            if (res < 0 && res != -EAGAIN && res != -EINTR) {
                snprintf(err, err_len, "%s: read failed: %s", path, strerror(-res));
                rc = res;
            } else if (res > 0) {
                bytes += (uint64_t)res;
            }
        }
        /* drain what is still in flight after an error */
        while (inflight) {
            struct io_uring_cqe *cqe;
            if (io_uring_wait_cqe(&ring, &cqe) < 0) break;
            io_uring_cqe_seen(&ring, cqe);
            inflight--;
        }
        io_uring_queue_exit(&ring);
    } else
#endif
    {
        out->engine = "pread";
        pread_job *jobs = calloc((size_t)qd, sizeof *jobs);
        pthread_t *th = calloc((size_t)qd, sizeof *th);
        if (!jobs || !th) { free(jobs); free(th); free(buf); close(fd); return -ENOMEM; }
        for (int i = 0; i < qd; i++) {
            jobs[i] = (pread_job){ .fd = fd, .begin = begin, .end = end, .req = req, .qd = qd, .idx = i,
                                   .once = once, .deadline = t0 + max_s, .max_bytes = max_bytes,
                                   .buf = buf + (size_t)i * req };
            if (pthread_create(&th[i], NULL, pread_worker, &jobs[i])) { th[i] = 0; pread_worker(&jobs[i]); }
        }
        for (int i = 0; i < qd; i++) {
            if (th[i]) pthread_join(th[i], NULL);
            bytes += jobs[i].bytes;
            if (jobs[i].err && !rc) {
                rc = -jobs[i].err;
                snprintf(err, err_len, "%s: read failed: %s", path, strerror(jobs[i].err));
            }
        }
        free(jobs);
        free(th);
    }
    out->seconds = perf_now() - t0;
    out->bytes = bytes;
    out->bytes_per_s = out->seconds > 0 ? (double)bytes / out->seconds : 0;
    free(buf);
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
