/* Internals shared by the streamer's files: named limits, the loader (a queue
 * of read jobs served by an I/O backend), the backends' table, the unit map
 * and the planner. The stream object and its modes: stream_mode.h. */
#ifndef SL_STREAM_INTERNAL_H
#define SL_STREAM_INTERNAL_H

#include "sluice_stream.h"
#include "../gguf/gguf.h"
#include "../gguf/base/sl_internal.h"
#include "../gguf/base/sl_platform.h"

#include <stdbool.h>
#include <stdint.h>

struct iovec;

#define SL_DEFAULT_DEPTH 3
/* iobench/stream_checksum on this virtio disk: 1-4 MiB x QD 8-16 all reach
 * 2-2.8 GB/s; 2 MiB (one huge page) halves the completions of 1 MiB */
#define SL_DEFAULT_REQ_BYTES (2u << 20)
/* deep queue: the engine's compute threads share the cores with the I/O
 * thread; 64 MiB in flight keeps the disk busy while it waits for a CPU.
 * `sluice run` 8B Q4_K, 2.5G budget, -t 2: QD 8 1.19 s/token, QD 32 0.90 */
#define SL_DEFAULT_QD 32
/* read-ahead (submit_next) requests start only while fewer than this many
 * are in flight: the device serves its queue in parallel, so a miss queued
 * behind 16-20 guessed expert reads finished with them. 30B-A3B, 3.2G budget
 * (2026-11-25, perf/results/2026-11-25-moe-readahead.md): the disk went
 * from 90% to 97% busy; 4 and 8 alike */
#define SL_READAHEAD_QD 8
/* pread pool: one request in flight per thread (4: 1.84 GB/s, 8: 2.74) */
#define SL_DEFAULT_IO_THREADS 8
#define SL_MAX_RETRIES 64

/* Limits of sl_stream_config (checked at open, clamped by the loader). A ring
 * has at most SL_MAX_DEPTH + 1 slots. */
#define SL_MAX_DEPTH 64
#define SL_MAX_QD 1024               /* requests in flight (io_uring entries) */
#define SL_MAX_IO_THREADS 64
#define SL_MAX_REQ_BYTES (1u << 30)
#define SL_MAX_FIXED_BUF (1ull << 30)  /* io_uring: largest registered buffer */

/* ---- loader (stream_loader.c) ------------------------------------------- */

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

/* One read request of a job, as a backend serves it. */
typedef struct sl_io_req {
    sl_io_job *job;
    int fd;
    uint64_t off, len;       /* remaining range of this request */
    uint32_t tries;
    bool direct;             /* O_DIRECT: a short read resumes from an aligned offset */
    bool counted;            /* part of the loader's stats and busy time */
    struct sl_io_req *free_next;
} sl_io_req;

static inline uint8_t *sl_io_req_dst(const sl_io_req *r) { return r->job->dst + (r->off - r->job->off); }

typedef struct sl_loader sl_loader;   /* private to stream_loader.c */

typedef struct sl_loader_cfg {
    int io;                  /* SL_IO_URING, SL_IO_PREAD, or SL_IO_AUTO (io_uring, else the pool) */
    int fd;
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

/* io: SL_IO_AUTO tries io_uring then falls back to the pread pool (notice set). */
int sl_loader_create(sl_loader **out, const sl_loader_cfg *cfg, char *notice, size_t notice_len);
void sl_loader_destroy(sl_loader *L);
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
 * descriptor: no alignment), with the same retry and error policy; not queued
 * behind the background reads and not counted in the stats. */
int sl_loader_read_now(sl_loader *L, sl_io_job *job, int fd);
void sl_loader_get_stats(sl_loader *L, sl_loader_stats *st);
void sl_loader_reset_stats(sl_loader *L);

/* ---- backends (stream_uring.c, stream_pread.c) ------------------------- */

/* A backend serves the loader's queue from its own threads. It calls only the
 * three backend-side functions below; the loader calls it only through its
 * table. */
typedef struct sl_io_backend {
    int io;                  /* SL_IO_URING or SL_IO_PREAD */
    /* Starts the threads; *fixed: cfg->fixed registered. Status + sl_last_error
     * on failure; a failure that leaves *state set is stopped with stop(). */
    int (*start)(sl_loader *L, const sl_loader_cfg *cfg, void **state, bool *fixed);
    /* Joins the threads (the loader has raised stop and woken them), frees state. */
    void (*stop)(void *state);
} sl_io_backend;

extern const sl_io_backend sl_io_uring_backend, sl_io_pread_backend;

/* Next request. wait: block until there is one; false only once the loader
 * stops. !wait: false when nothing is queued (or stopping). */
bool sl_loader_take(sl_loader *L, sl_io_req *r, bool wait);
/* The read of r by pread(2) or the read hook (the only caller of the hook):
 * bytes read or -errno. */
int64_t sl_loader_read(sl_loader *L, const sl_io_req *r);
/* Outcome of one read of r (res = bytes or -errno). Returns true when r must
 * be resubmitted (short read, EAGAIN, EINTR); else the request is finished
 * and accounted. */
bool sl_loader_result(sl_loader *L, sl_io_req *r, int64_t res);

/* 0 if io_uring_setup works in this process. Probed once per process (see
 * sluice_stream.h: the SIGSYS guard). */
int sl_uring_probe(void);

/* ---- the unit map (stream_units.c) ------------------------------------- */

/* A dense unit of an MoE layer whose routed experts are split off may be
 * several file ranges (the experts sit between its tensors), packed one after
 * the other into its buffer. Three expert tensors cut a layer into at most 4. */
#define SL_MAX_SEGS 4
typedef struct sl_seg {
    uint64_t begin, end;     /* exact file range */
    uint64_t abeg, aend;     /* widened to the alignment */
    uint64_t buf_off;        /* where abeg lands in the unit's buffer */
} sl_seg;

typedef struct sl_unit {
    sl_stream_unit info;
    uint64_t begin, end;     /* exact file range of the unit's tensors (first to last segment) */
    uint64_t abeg, aend;     /* widened to the alignment (aend may pass EOF) */
    int n_seg;               /* 1, except split MoE layers */
    sl_seg seg[SL_MAX_SEGS];
    uint32_t n_tensors;
    sl_stream_tensor *tensors;
    uint64_t *tofs;          /* file offset of each tensor */
    uint8_t *pinned_buf;     /* pinned: data of abeg.. */
    int slot;                /* stream: slot holding it, -1 */
    bool acquired;
    bool unused;             /* outside the config's layer subset: never read nor acquired */
} sl_unit;

/* The routed experts of an MoE file: per layer its gate/up/down 3-D tensors
 * ([n_in, n_out, n_expert]); expert e is the e-th slice of each. */
typedef struct sl_unit_moe {
    int32_t n_expert, n_expert_used;
    const sl_gguf_tensor *(*exps)[3];   /* [n_layers][gate, up, down] */
    bool split;                     /* the layer units leave them out */
    uint64_t part_cap[3];           /* a slot's room for each part (aligned, largest layer) */
    uint64_t slot_bytes;            /* one expert slot: the three parts */
    uint64_t expert_bytes;          /* all experts of all layers (exact) */
    uint64_t slice_bytes_sum;       /* one expert of every layer (exact): per-token figures */
} sl_unit_moe;

/* The file cut into units (layers, then lm-head chunks) and the facts the
 * planner counts. */
typedef struct sl_unit_map {
    sl_unit *units; int32_t n_units, n_layers, n_head_chunks;
    const sl_gguf_tensor *head;     /* lm head tensor (output.weight or tied token_embd) */
    const sl_gguf_tensor *embd;     /* token_embd or NULL */
    uint64_t embd_row_bytes;        /* one row of embd (0 without) */
    uint64_t globals_bytes;         /* non-layer tensors except head and embd */
    uint64_t meta_bytes;            /* header + metadata (what the reader keeps) */
    uint64_t max_unit_span;         /* largest widened unit (bytes of its buffer) */
    sl_unit_moe moe;                /* routed experts (n_expert 0: none) */
} sl_unit_map;

/* split_experts: for an MoE file, leave the 3-D expert tensors out of the
 * layer units (they become (layer, expert) units of the expert cache). */
int sl_unit_map_init(sl_unit_map *um, const sl_gguf *g, uint32_t align, bool split_experts);
/* File range of part p (0 gate, 1 up, 2 down) of expert e in layer l. */
void sl_unit_map_expert_range(const sl_unit_map *um, int32_t l, int32_t e, int p, uint64_t *off,
                              uint64_t *len);
void sl_unit_map_free(sl_unit_map *um);
/* Marks the units outside c's layer subset (layer_mask, skip_head) unused. */
void sl_unit_map_keep(sl_unit_map *um, const sl_stream_config *c);

/* ---- planner (stream_plan.c) ------------------------------------------- */

/* Fills plan, sets units' pinned flags. */
int sl_plan_compute(sl_unit_map *um, const sl_gguf *g, const sl_stream_config *c,
                    uint32_t align, sl_stream_plan *p, char *err, size_t err_len);

/* ---- files (stream_mem.c) ----------------------------------------------- */

/* O_DIRECT alignment of fd (statx DIOALIGN, else probing); 0 = refused. */
uint32_t sl_dio_align(int dfd, uint64_t file_size);

#endif
