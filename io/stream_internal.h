/* Internals shared by the streamer's files: the loader (a queue of read jobs
 * served by an io_uring thread or a pread pool), the unit table and the planner. */
#ifndef SL_STREAM_INTERNAL_H
#define SL_STREAM_INTERNAL_H

#include "sluice_stream.h"
#include "../gguf/gguf.h"
#include "../gguf/sl_internal.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define SL_HUGE_PAGE (2u << 20)
#define SL_DEFAULT_DEPTH 3
/* iobench/stream_checksum on this virtio disk: 1-4 MiB x QD 8-16 all reach
 * 2-2.8 GB/s; 2 MiB (one huge page) halves the completions of 1 MiB */
#define SL_DEFAULT_REQ_BYTES (2u << 20)
/* deep queue: the engine's compute threads share the cores with the I/O
 * thread; 64 MiB in flight keeps the disk busy while it waits for a CPU.
 * `sluice run` 8B Q4_K, 2.5G budget, -t 2: QD 8 1.19 s/token, QD 32 0.90 */
#define SL_DEFAULT_QD 32
/* pread pool: one request in flight per thread (4: 1.84 GB/s, 8: 2.74) */
#define SL_DEFAULT_IO_THREADS 8
#define SL_MAX_RETRIES 64

/* ---- loader ------------------------------------------------------------ */

/* One contiguous file range read into dst. Widened to the direct-I/O
 * alignment by the caller; reads past need_end may come back short (EOF). */
typedef struct sl_io_job {
    uint8_t *dst;            /* buffer byte 0 = file offset off */
    uint64_t off, len;
    uint64_t need_end;       /* bytes up to here must arrive */
    int buf_index;           /* registered buffer, or -1 */
    int32_t unit;            /* for messages */
    /* loader-private progress (under the loader mutex) */
    uint64_t next;           /* next offset to hand out */
    uint32_t outstanding;
    bool queued, done;
    int status;
    char err[256];
    struct sl_io_job *qnext;
} sl_io_job;

typedef struct sl_io_req {
    sl_io_job *job;
    uint64_t off, len;       /* remaining range of this request */
    uint32_t tries;
    struct sl_io_req *free_next;
} sl_io_req;

typedef struct sl_loader sl_loader;

typedef struct sl_loader_cfg {
    int io;                  /* SL_IO_URING or SL_IO_PREAD (AUTO resolved by caller or loader) */
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
/* Waits until job done; returns job->status. */
int sl_loader_wait(sl_loader *L, sl_io_job *job);
bool sl_loader_is_done(sl_loader *L, sl_io_job *job);
/* Stops handing out the job's remaining requests; it is done (status < 0)
 * once those already in flight complete. */
void sl_loader_cancel(sl_loader *L, sl_io_job *job);
void sl_loader_get_stats(sl_loader *L, sl_loader_stats *st);
void sl_loader_reset_stats(sl_loader *L);

/* Backend-neutral parts (stream_loader.c), used by the backends. */
struct sl_loader {
    sl_loader_cfg cfg;
    int backend;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    sl_io_job *qhead, *qtail;
    bool stop;
    int active;              /* requests being served */
    double busy_t0;
    sl_loader_stats st;
    void *impl;              /* backend state */
    pthread_t *threads; int n_threads;
    bool fixed_ok;
};
double sl_now_ms(void);
/* Hands out the next request (mutex held). false when no work queued. */
bool sl_loader_take(sl_loader *L, sl_io_req *r);
/* Outcome of one read of r (res = bytes or -errno). Returns true when r must
 * be resubmitted (short read, EAGAIN, EINTR); else the request is finished
 * and accounted. Takes the mutex itself. */
bool sl_loader_result(sl_loader *L, sl_io_req *r, int64_t res);
void sl_loader_busy_begin(sl_loader *L);   /* mutex held */
void sl_loader_busy_end(sl_loader *L);     /* mutex held */

int sl_uring_start(sl_loader *L);          /* ENOSYS etc. when unavailable */
void sl_uring_stop(sl_loader *L);
int sl_uring_probe(void);                  /* 0 if io_uring_setup works here */
int sl_pread_start(sl_loader *L);
void sl_pread_stop(sl_loader *L);

/* ---- units ------------------------------------------------------------- */

typedef struct sl_unit {
    sl_stream_unit info;
    uint64_t begin, end;     /* exact file range of the unit's tensors */
    uint64_t abeg, aend;     /* widened to the alignment (aend may pass EOF) */
    uint32_t n_tensors;
    sl_stream_tensor *tensors;
    uint64_t *tofs;          /* file offset of each tensor */
    uint8_t *pinned_buf;     /* pinned: data of abeg.. */
    size_t pinned_len;
    int slot;                /* stream: slot holding it, -1 */
    bool acquired;
} sl_unit;

typedef struct sl_model_layout {
    sl_unit *units; int32_t n_units, n_layers, n_head_chunks;
    const sl_gguf_tensor *head;     /* lm head tensor (output.weight or tied token_embd) */
    const sl_gguf_tensor *embd;     /* token_embd or NULL */
    uint64_t globals_bytes;         /* non-layer tensors except head and embd */
    uint64_t meta_bytes;            /* header + metadata (what the reader keeps) */
    uint64_t max_unit_span;         /* largest widened unit */
} sl_model_layout;

int sl_layout_build(sl_model_layout *lo, const sl_gguf *g, uint32_t align);
void sl_layout_free(sl_model_layout *lo);
/* Fills plan, sets units' pinned flags. path used for messages only. */
int sl_plan_compute(sl_model_layout *lo, const sl_gguf *g, const sl_stream_config *c,
                    uint32_t align, sl_stream_plan *p, char *err, size_t err_len);
uint64_t sl_buf_round(uint64_t n);
uint64_t sl_mem_available(void);

/* Buffers: 2 MiB-aligned + MADV_HUGEPAGE when large. */
void *sl_buf_alloc(size_t len, size_t *maplen, void **mapbase);
void sl_buf_free(void *mapbase, size_t maplen);

/* O_DIRECT alignment of fd (statx DIOALIGN, else probing); 0 = refused. */
uint32_t sl_dio_align(int dfd, uint64_t file_size);

#endif
