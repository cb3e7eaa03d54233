/* The loader (stream_loader.c): a queue of read jobs, cut into requests that
 * an I/O backend serves from its own threads, with one retry and error policy
 * for every backend. It defines the interface a backend implements
 * (sl_io_backend) and the three calls a backend makes; which backends exist
 * and which one starts is stream_io.h's table. */
#ifndef SL_STREAM_LOADER_H
#define SL_STREAM_LOADER_H

#include "sluice_stream.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct iovec;

/* Queue order of the loader's jobs, highest first: submit_front, submit_next
 * (read-ahead, capped at SL_READAHEAD_QD in flight), submit. */
enum sl_io_prio { SL_PRIO_PLAIN = 0, SL_PRIO_NEXT, SL_PRIO_FRONT };

/* One contiguous file range read into dst. Widened to the direct-I/O
 * alignment by the caller; reads past need_end may come back short (EOF). */
typedef struct sl_io_job {
    uint8_t *dst;            /* buffer byte 0 = file offset off */
    uint64_t off, len;
    uint64_t need_end;       /* bytes up to here must arrive */
    int buf_index;           /* registered buffer, or -1 */
    int32_t unit;            /* for messages; -1: not a unit */
    /* loader-private progress (under the loader mutex) */
    uint64_t next;           /* next offset to hand out */
    uint32_t outstanding;
    bool queued, done;
    uint8_t prio;            /* enum sl_io_prio: how it was queued */
    int status;
    char err[256];
    struct sl_io_job *qnext;
} sl_io_job;

/* One read request of a job, as a backend serves it. Offsets are the
 * model's (gguf.h: a split model's files end to end); the file's own offset
 * is off - base. A request never spans two files. */
typedef struct sl_io_req {
    sl_io_job *job;
    int fd;
    uint64_t base;           /* model offset of fd's byte 0 */
    uint64_t need_end;       /* the job's need_end, clipped to this file's end */
    uint64_t off, len;       /* remaining range of this request */
    uint32_t tries;
    bool direct;             /* O_DIRECT: a short read resumes from an aligned offset */
    bool counted;            /* part of the loader's stats and busy time */
    struct sl_io_req *free_next;
} sl_io_req;

static inline uint8_t *sl_io_req_dst(const sl_io_req *r) { return r->job->dst + (r->off - r->job->off); }

typedef struct sl_loader sl_loader;   /* private to stream_loader.c */

/* One file of a split model: its descriptor and model offsets [base, end). */
typedef struct sl_io_file { int fd; uint64_t base, end; } sl_io_file;

typedef struct sl_loader_cfg {
    int io;                  /* SL_IO_URING, SL_IO_PREAD, or SL_IO_AUTO (io_uring, else the pool) */
    int fd;                  /* a single file (n_files 0) */
    /* a split model: its files by base (ascending; gaps between them are
     * never read); the array must outlive the loader */
    const sl_io_file *files; int n_files;
    bool direct;
    uint32_t align;
    uint32_t req_bytes;
    int queue_depth;
    int n_threads;
    sl_stream_read_hook hook; void *hook_ctx;
    /* buffers to register as fixed buffers (uring only); may be 0 */
    const struct iovec *fixed; int n_fixed;
} sl_loader_cfg;

typedef struct sl_loader_stats {
    uint64_t bytes, reads, retries;
    double busy_ms;
} sl_loader_stats;

/* A backend serves the loader's queue from its own threads. It calls only the
 * three backend-side functions below; the loader calls it only through its
 * row. */
typedef struct sl_io_backend {
    /* Starts the threads; *fixed: cfg->fixed registered. Status + sl_last_error
     * on failure; a failure that leaves *state set is stopped with stop(). */
    int (*start)(sl_loader *L, const sl_loader_cfg *cfg, void **state, bool *fixed);
    /* Joins the threads (the loader has raised stop and woken them), frees state. */
    void (*stop)(void *state);
} sl_io_backend;

/* ---- making one (stream_io.c's sl_loader_create picks the backend) ------ */

/* A queue over cfg (defaults filled in, limits clamped), no backend yet. */
int sl_loader_new(sl_loader **out, const sl_loader_cfg *cfg);
/* Starts be on L; io is what sl_loader_backend reports from then on. On
 * failure the threads it started are stopped and L may try another backend. */
int sl_loader_start(sl_loader *L, const sl_io_backend *be, int io);
void sl_loader_destroy(sl_loader *L);   /* stops the backend; NULL: no-op */

/* ---- the caller's side -------------------------------------------------- */

int sl_loader_backend(const sl_loader *L);   /* SL_IO_URING or SL_IO_PREAD */
bool sl_loader_fixed(const sl_loader *L);    /* fixed buffers registered */
void sl_loader_submit(sl_loader *L, sl_io_job *job);
/* Jobs needed now (routed experts): queued in order ahead of everything
 * queued, under one lock, so the backend takes them as one batch. */
void sl_loader_submit_front(sl_loader *L, sl_io_job *const *jobs, int n);
/* Jobs wanted soon (read-ahead of experts a guess says a layer will use):
 * queued behind the submit_front and earlier submit_next jobs still queued,
 * ahead of the rest; handed out only while fewer than SL_READAHEAD_QD
 * requests are in flight. */
void sl_loader_submit_next(sl_loader *L, sl_io_job *const *jobs, int n);
/* Waits until job done; returns job->status. */
int sl_loader_wait(sl_loader *L, sl_io_job *job);
bool sl_loader_is_done(sl_loader *L, sl_io_job *job);
/* Waits for the job like sl_loader_wait, calling progress(ctx, bytes handed to the
 * backends, job length) every 200 ms and once at the end. */
int sl_loader_wait_progress(sl_loader *L, sl_io_job *job, void (*progress)(void *, uint64_t, uint64_t), void *ctx);
/* Stops handing out the job's remaining requests; it is done (status
 * SL_ECANCELED) once those already in flight complete. */
void sl_loader_cancel(sl_loader *L, sl_io_job *job);
/* A small job as one request on the calling thread, from fd (a buffered
 * descriptor: no alignment; its byte 0 at model offset base), with the same
 * retry and error policy; not queued behind the background reads and not
 * counted in the stats. */
int sl_loader_read_now(sl_loader *L, sl_io_job *job, int fd, uint64_t base);
void sl_loader_get_stats(sl_loader *L, sl_loader_stats *st);
void sl_loader_reset_stats(sl_loader *L);

/* ---- the backend's side ------------------------------------------------- */

/* Next request. wait: block until there is one; false only once the loader
 * stops. !wait: false when nothing is queued (or stopping). */
bool sl_loader_take(sl_loader *L, sl_io_req *r, bool wait);
/* The read of r by pread(2) or the read hook (the only caller of the hook;
 * it gets the file's own offset): bytes read or -errno. */
int64_t sl_loader_read(sl_loader *L, const sl_io_req *r);
/* Outcome of one read of r (res = bytes or -errno). Returns true when r must
 * be resubmitted (short read, EAGAIN, EINTR); else the request is finished
 * and accounted. */
bool sl_loader_result(sl_loader *L, sl_io_req *r, int64_t res);

#endif
