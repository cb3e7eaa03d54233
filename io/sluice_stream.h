/* Sluice streamer: give me layer N's tensors, in RAM, now.
 *
 * Usable without the engine (only gguf/ below it). A model is cut into units:
 * units 0..L-1 are the transformer layers (all "blk.N.*" tensors), followed by
 * the lm head ("output.weight", or token_embd when tied) split into row chunks
 * no larger than the largest layer. The small non-layer tensors (output_norm,
 * ...) are "globals", always resident. token_embd rows are read on demand
 * unless pinned. acquire(u) blocks until unit u is in RAM and returns tensor
 * views into its slot; release(u) hands the slot back and the eager prefetch
 * queue (depth D, default 3) refills it with the next unit of the cyclic
 * schedule 0..U-1, 0..U-1, ... Backends: io_uring (O_DIRECT, fixed buffers),
 * a pread thread pool, and mmap+madvise (baseline). An MoE file streamed
 * has its routed experts split off: layer units are the dense parts and each
 * (layer, expert) is acquired on its own from an expert cache
 * (sl_stream_expert_* below).
 *
 * Threads: the calls on one sl_stream come from one thread at a time (the
 * engine's driver thread); the streamer's own I/O threads never call back.
 * Tensor views of a streamed unit are valid only between acquire and
 * release; at most depth+1 units are held at once (acquire fails with
 * SL_EBUSY, "no free slot", beyond that). Acquiring out of schedule order is
 * allowed: the prefetch queue drains and restarts at that unit.
 *
 * Thread-safe anywhere: the name/parse functions, the _init functions,
 * sl_stream_plan_model (its own reader), sl_stream_open (its own stream),
 * sl_stream_open_errmsg (per thread). Every other call on one sl_stream: one
 * thread at a time, none during or after sl_stream_close.
 *
 * Ownership: the sl_stream * of open is the caller's (sl_stream_close; NULL
 * is a no-op). Everything else returned points into the stream and is never
 * freed by the caller: errmsg (until the next failing call or close), notice,
 * get_plan, gguf and global tensors (until close), a view's tensors and their
 * data (until release of that unit). sl_stream_open_errmsg: the calling
 * thread's, until its next failing open. Name functions: static strings.
 *
 * Status codes (0 on success; the message names unit, offset, length, errno):
 *   config_init_sized, *_sized outputs: SL_EINVAL (NULL, struct_size out of range).
 *   open / plan_model: SL_EINVAL (config out of range), SL_ENOENT, SL_EIO, SL_ENOMEM,
 *     the GGUF reader's SL_EFORMAT/SL_EVERSION/SL_ETRUNC/SL_ETYPE, SL_ERANGE (sizes),
 *     SL_ENOSYS (io_uring asked for and unavailable); SL_ENOMEM also when
 *     mem_budget is below the plan's minimum (the message gives the need).
 *   unit_info, prefetch: SL_EINVAL (unit out of range).
 *   acquire: SL_EINVAL (unit out of range, already held), SL_EBUSY (no free slot),
 *     SL_EIO / SL_ETRUNC (read failed, after the retry policy), SL_ECANCELED.
 *   release: SL_EINVAL (unit not held).  read_row: SL_ENOENT (no such tensor),
 *     SL_ERANGE (row out of range, dst_len too small), SL_EIO.
 *   mode_parse / io_parse: SL_EINVAL.
 *
 * Signals: the first open that may use io_uring (io auto or uring, mode not
 * mmap; also sl_stream_plan_model with io auto) probes io_uring_setup once
 * per process. Where a seccomp filter traps it (SECCOMP_RET_TRAP, as in
 * Android apps) the probe catches the SIGSYS: for the duration of that one
 * syscall it installs its own process-wide SIGSYS handler, then puts the
 * previous one back; a SIGSYS of another thread meanwhile is passed on to that
 * previous handler (or the default action). A host should not change the
 * SIGSYS handler concurrently with its first open (or pass SL_IO_PREAD).
 * Later opens reuse the answer (a filter installed after the probe is not
 * seen). */
#ifndef SLUICE_STREAM_H
#define SLUICE_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "sl_api.h"   /* SL_API, SLUICE_VERSION_*; found through -I (installed: next to this file) */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_stream sl_stream;

/* _COUNT (added in 0.6): how many values this header knows (a range bound, not a value to pass); it
 * follows the last one, so appending a backend or mode keeps every value's number. */
enum sl_stream_io   { SL_IO_AUTO = 0, SL_IO_URING, SL_IO_PREAD, SL_IO_COUNT };
enum sl_stream_mode { SL_MODE_AUTO = 0, SL_MODE_RESIDENT, SL_MODE_STREAM, SL_MODE_MMAP, SL_MODE_COUNT };
enum sl_unit_kind   { SL_UNIT_LAYER = 0, SL_UNIT_HEAD };
/* MoE: stream the routed experts one (layer, expert) at a time (auto: when an
 * MoE file is streamed) or with their layer (off). */
enum sl_expert_stream { SL_EXPERTS_AUTO = 0, SL_EXPERTS_OFF };
/* Eviction of the expert cache: least recently used, least frequently used,
 * or frequency with decay (routing counts lose half their weight every 16
 * tokens). AUTO = decay, the measured default (README: "Routed experts"). */
enum sl_expert_policy { SL_EVICT_AUTO = 0, SL_EVICT_LRU, SL_EVICT_LFU, SL_EVICT_DECAY };

/* Fault injection / custom storage: replaces the data read of one request
 * (also the one-row reads of read_row). Called from the streamer's I/O
 * threads, or from the caller's thread for read_row. Must behave like pread:
 * bytes read, or -errno (EIO, EAGAIN, EINTR). */
typedef int64_t (*sl_stream_read_hook)(void *ctx, int fd, void *buf, size_t len,
                                       uint64_t offset);

struct sl_stream_tensor;   /* below */

typedef struct sl_stream_config {
    size_t struct_size;      /* sizeof, set by the _init function (versioned: README "Library") */
    int io;                  /* enum sl_stream_io */
    int mode;                /* enum sl_stream_mode */
    uint64_t mem_budget;     /* bytes for everything the planner counts; 0 = MemAvailable - margin */
    uint64_t reserve_bytes;  /* bytes the caller needs outside the streamer (KV cache, arena) */
    int depth;               /* prefetch depth 0..64, 0 = default 3 */
    uint32_t req_bytes;      /* bytes per read request (at most 1 GiB), 0 = default */
    int queue_depth;         /* requests in flight 0..1024, 0 = default */
    int n_io_threads;        /* pread pool size 0..64, 0 = default */
    bool mlock;              /* lock resident/pinned memory */
    bool no_direct;          /* buffered reads instead of O_DIRECT */
    int32_t max_pinned;      /* -1 = planner decides; else cap on pinned layers */
    sl_stream_read_hook read_hook; void *read_hook_ctx;
    /* added in 0.3 (MoE expert streaming) */
    int expert_stream;       /* enum sl_expert_stream */
    int expert_policy;       /* enum sl_expert_policy */
    uint64_t expert_cache_bytes;   /* cap on the expert cache; 0 = all the budget leaves */
    /* 0.3 */
    int numa;                /* 0 none, 1 local (the compute threads' node), 2 distribute (interleave) */
    /* added in 0.4: a part of the model (one stage of a pipeline, engine/cli/ring/). Units
     * outside it are never read, planned or acquirable (SL_EINVAL); the cyclic schedule
     * runs over the units kept, so the eager prefetch loads the next kept layer. A
     * subset is planned in stream mode (everything pinned = resident) unless mmap. */
    const uint8_t *layer_mask;   /* NULL: every layer; else n_layer_mask entries, nonzero = kept
                                  * (layers past the end are not kept); read during open only */
    int32_t n_layer_mask;
    bool skip_head;          /* the lm head units are not kept */
    bool skip_embd;          /* token_embd is never pinned (rows are still readable) */
    /* added in 0.6: resident mode's load, reported on the opening thread (bytes read of
     * total, a few times a second and at the end); NULL: not called */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    /* added in 0.6: resident mode packs in place, after the load, each matrix of a layer unit
     * and the lm head (not when it is the token embedding) for which rows8(rows8_ctx, t)
     * returns nonzero, if its type has a rows8 layout (MXFP4, IQ4_NL, Q8_0, IQ4_XS) and its
     * rows (of each expert) are a multiple of 8; its views are then typed t | 0x100
     * (SL_GGML_ROWS8: rows interleaved by eight, the layout quant/quant.h defines). Stream
     * mode does the same in the units it pins (each lm-head chunk by its own rows; routed
     * experts read into the expert cache keep the file's layout); a unit unpinned by
     * sl_stream_set_pinned reads plain again and is packed again when pinned back. Called
     * during open only. NULL: the file's bytes, as everywhere else. */
    int (*rows8)(void *ctx, const struct sl_stream_tensor *t);
    void *rows8_ctx;
} sl_stream_config;
/* The smallest struct_size accepted: the layout of 0.2.0. */
#define SL_STREAM_CONFIG_MIN_SIZE SL_STRUCT_END(sl_stream_config, read_hook_ctx)

typedef struct sl_stream_tensor {
    const char *name;        /* full GGUF name, e.g. "blk.3.attn_q.weight" */
    uint32_t type;           /* ggml type id (| 0x100 where packed: sl_stream_config.rows8) */
    uint32_t n_dims;
    uint64_t ne[4];
    const void *data;        /* valid between acquire and release (globals: until close) */
    uint64_t nbytes;
} sl_stream_tensor;

typedef struct sl_stream_unit {
    int kind;                /* enum sl_unit_kind */
    int32_t layer;           /* layer index, or -1 for head chunks */
    uint64_t row_begin, row_end;   /* head chunks: rows of the lm head in this unit */
    uint64_t bytes;          /* bytes read from disk when streamed */
    bool pinned;             /* resident: never re-read */
} sl_stream_unit;
#define SL_STREAM_UNIT_MIN_SIZE SL_STRUCT_END(sl_stream_unit, pinned)   /* layout of 0.2.0 */

typedef struct sl_stream_view {
    int32_t unit;
    uint32_t n_tensors;
    const sl_stream_tensor *tensors;
} sl_stream_view;
#define SL_STREAM_VIEW_MIN_SIZE SL_STRUCT_END(sl_stream_view, tensors)   /* layout of 0.2.0 */

typedef struct sl_stream_stats {
    uint64_t bytes_read;        /* from disk since open / reset */
    uint64_t n_reads;           /* requests completed */
    uint64_t n_retries;         /* short reads / EAGAIN resubmitted */
    double   stall_ms;          /* time blocked in acquire */
    double   io_busy_ms;        /* wall time with reads in flight */
    uint64_t acquires;
    /* added in 0.3: routed experts (sl_stream_expert_*) */
    uint64_t expert_hits;       /* requested experts found in the cache (or loading already) */
    uint64_t expert_misses;     /* requested experts read from disk */
    uint64_t expert_bytes_read; /* bytes of those reads */
    double   expert_stall_ms;   /* time blocked in sl_stream_expert_acquire */
    /* added in 0.4: read-ahead (sl_stream_expert_prefetch) */
    uint64_t expert_prefetched; /* experts read ahead (their bytes are in expert_bytes_read) */
    uint64_t expert_prefetch_used;   /* of them, requested before being evicted */
} sl_stream_stats;
#define SL_STREAM_STATS_MIN_SIZE SL_STRUCT_END(sl_stream_stats, acquires)   /* layout of 0.2.0 */

typedef struct sl_stream_plan {
    int mode;                   /* chosen mode */
    int io;                     /* chosen backend */
    uint64_t budget;            /* bytes the plan fits in */
    uint64_t model_bytes;       /* all tensor bytes */
    uint64_t globals_bytes, embd_bytes, head_bytes;
    uint64_t reserve_bytes;     /* caller's KV + arena */
    uint64_t slot_bytes;        /* one slot */
    int32_t n_slots;
    int32_t n_units, n_layers, n_head_chunks, n_pinned;
    bool embd_pinned, head_pinned;
    uint64_t pinned_bytes;
    uint64_t streamed_bytes_per_token;
    uint64_t peak_bytes;        /* predicted peak of what the streamer holds + reserve */
    /* added by io: the rest of the numbers `sluice plan` prints */
    uint64_t meta_bytes;        /* GGUF metadata kept by the reader + streamer tables (estimate) */
    uint64_t mem_available;     /* MemAvailable at planning time */
    uint64_t margin_bytes;      /* safety margin subtracted from MemAvailable (0 with mem_budget) */
    int32_t depth;              /* prefetch depth */
    uint32_t align;             /* read alignment (O_DIRECT), 1 = buffered */
    bool direct;                /* O_DIRECT reads */
    bool fits;                  /* false: budget below the minimum (peak_bytes says the need) */
    /* added in 0.3: MoE files (n_expert 0 otherwise) */
    int32_t n_expert, n_expert_used;
    bool experts_split;         /* experts are (layer, expert) units of the expert cache */
    uint64_t dense_bytes;       /* layer tensors other than the routed experts */
    uint64_t expert_bytes;      /* all routed experts */
    uint64_t expert_slot_bytes; /* one cache slot (an expert's three slices, aligned) */
    int32_t n_expert_slots;     /* cache slots */
    double expected_hit_rate;   /* with uniform routing: slots / (layers x experts), a floor */
    uint64_t expert_bytes_per_token;   /* k experts x layers x (1 - expected_hit_rate) */
    /* per-layer token embeddings (gemma4; 0 without): never held as a tensor
     * in stream mode, one row read per token (in streamed_bytes_per_token) */
    uint64_t ple_bytes, ple_row_bytes;
} sl_stream_plan;
#define SL_STREAM_PLAN_MIN_SIZE SL_STRUCT_END(sl_stream_plan, fits)   /* layout of 0.2.0 */

/* Names of modes ("auto" "resident" "stream" "mmap") and backends ("auto"
 * "uring" "pread"), as flags and reports spell them; "?" for other values
 * (bindings list the values 0, 1, ... up to the first "?"). parse: 0 and *out
 * set, or SL_EINVAL (*out untouched) for any other string. */
SL_API const char *sl_stream_mode_name(int mode);
SL_API const char *sl_stream_io_name(int io);
SL_API int sl_stream_mode_parse(const char *s, int *mode);
/* Eviction policies: "auto" "lru" "lfu" "decay". */
SL_API const char *sl_stream_policy_name(int policy);
SL_API int sl_stream_policy_parse(const char *s, int *policy);
SL_API int sl_stream_io_parse(const char *s, int *io);

/* Defaults for every field; the inline passes the caller's sizeof (FFI: call
 * the _sized form with the size of your struct). */
SL_API int sl_stream_config_init_sized(sl_stream_config *c, size_t struct_size);
static inline int sl_stream_config_init(sl_stream_config *c)
{ return sl_stream_config_init_sized(c, sizeof *c); }

/* Plan only (no buffers): the decision `sluice plan` prints. The functions
 * that fill a caller's struct have a _sized form taking its sizeof; the
 * inline passes it (FFI: call the _sized form). */
SL_API int sl_stream_plan_model_sized(const char *path, const sl_stream_config *c,
                                      sl_stream_plan *out, size_t size, char *err, size_t err_len);
static inline int sl_stream_plan_model(const char *path, const sl_stream_config *c,
                                       sl_stream_plan *out, char *err, size_t err_len)
{ return sl_stream_plan_model_sized(path, c, out, sizeof *out, err, err_len); }

/* i-th pinned unit (0 <= i < p->n_pinned) of a plan, in schedule order; -1 if none. */
SL_API int32_t sl_stream_plan_pinned_unit(const sl_stream_plan *p, int32_t i);

SL_API int sl_stream_open(sl_stream **out, const char *path, const sl_stream_config *c);
SL_API void sl_stream_close(sl_stream *s);
SL_API const char *sl_stream_errmsg(const sl_stream *s);   /* last failure; open failures: sl_stream_open_errmsg */
SL_API const char *sl_stream_open_errmsg(void);            /* thread-local message of a failed open */
/* One-line notices about fallbacks taken at open ("O_DIRECT refused by the
 * filesystem: buffered reads", "io_uring unavailable: pread pool"); "" if none.
 * The library never prints: show it if you like. */
SL_API const char *sl_stream_notice(const sl_stream *s);

SL_API const sl_stream_plan *sl_stream_get_plan(const sl_stream *s);
/* The GGUF metadata reader (type: const struct sl_gguf *), for the engine. */
SL_API const void *sl_stream_gguf(const sl_stream *s);

SL_API int32_t sl_stream_n_units(const sl_stream *s);
/* SL_EINVAL for a unit out of range; the handle is const, so the message is the
 * calling thread's (sl_last_error), not sl_stream_errmsg. */
SL_API int sl_stream_unit_info_sized(const sl_stream *s, int32_t unit, sl_stream_unit *out,
                                     size_t size);
static inline int sl_stream_unit_info(const sl_stream *s, int32_t unit, sl_stream_unit *out)
{ return sl_stream_unit_info_sized(s, unit, out, sizeof *out); }

/* Blocks until unit's reads completed (or failed: status < 0, message says
 * unit, file offset, length, errno). At most one acquire per unit at a time. */
SL_API int sl_stream_acquire_sized(sl_stream *s, int32_t unit, sl_stream_view *view, size_t size);
static inline int sl_stream_acquire(sl_stream *s, int32_t unit, sl_stream_view *view)
{ return sl_stream_acquire_sized(s, unit, view, sizeof *view); }
SL_API int sl_stream_release(sl_stream *s, int32_t unit);
/* Tensor of an acquired view by suffix ("attn_q.weight") or full name; NULL if absent. */
SL_API const sl_stream_tensor *sl_stream_view_find(const sl_stream_view *v, const char *name);
/* Hint: the next unit to be acquired will be `unit` (restarts the cyclic schedule there). */
SL_API int sl_stream_prefetch(sl_stream *s, int32_t unit);

/* Routed experts of an MoE file (Mixtral, qwen2moe, qwen3moe: the 3-D tensors
 * blk.N.ffn_{gate,up,down}_exps.weight). n_experts: experts per layer, 0 if
 * the file has none. With experts split (plan.experts_split) a layer unit
 * holds only its dense part and each (layer, expert) is a unit of its own in
 * an expert cache (slot pool, sized by the planner); otherwise the experts
 * are slices of the layer unit, which must be acquired meanwhile.
 *   request: the experts layer l will use (distinct ids, any order): those
 *     not cached are read as one batch ahead of the queued prefetch; reads
 *     that find no free slot start as slots are released. Never blocks.
 *   acquire: blocks until that expert's three slices are in RAM; the view has
 *     3 tensors (gate, up, down), each the 2-D slice [ne0, ne1] of its 3-D
 *     tensor, named as the 3-D tensor; view->unit is the layer. A failed read
 *     (message: layer, expert, file offset, length, errno) leaves nothing of
 *     that expert in the cache. SL_EBUSY: no slot free (too many held).
 *   release: hands the slot back to the cache (kept until evicted).
 * Each acquire needs a request of that expert since the last request of
 * its layer, or is served as a request of one. */
SL_API int32_t sl_stream_n_experts(const sl_stream *s);
SL_API int sl_stream_expert_request(sl_stream *s, int32_t layer, const int32_t *experts, int32_t n);
SL_API int sl_stream_expert_acquire_sized(sl_stream *s, int32_t layer, int32_t expert,
                                          sl_stream_view *view, size_t size);
static inline int sl_stream_expert_acquire(sl_stream *s, int32_t layer, int32_t expert, sl_stream_view *view)
{ return sl_stream_expert_acquire_sized(s, layer, expert, view, sizeof *view); }
SL_API int sl_stream_expert_release(sl_stream *s, int32_t layer, int32_t expert);
/* Added in 0.5: 1 if acquiring (layer, expert) now would not wait for a read
 * (cached, or its reads are done; always with experts not split), 0 if it
 * would (loading, or not requested), else a status. Never blocks: the engine
 * computes the experts already in RAM while the others load. */
SL_API int sl_stream_expert_ready(sl_stream *s, int32_t layer, int32_t expert);
/* Read ahead (added in 0.4): start reading those of layer's experts that are
 * neither cached nor loading, behind the reads a request needs now, into
 * slots that no request wants (the current request's experts are never
 * evicted; nothing is started while the current request waits for slots).
 * A guess: a later request of the expert hits, a wrong one costs only the
 * read. Returns the reads started (0 without an expert cache), or a status. */
SL_API int sl_stream_expert_prefetch(sl_stream *s, int32_t layer, const int32_t *experts, int32_t n);
/* Requests of layer's experts since open / reset that hit / missed the cache. */
SL_API int sl_stream_expert_layer_stats(const sl_stream *s, int32_t layer, uint64_t *hits,
                                        uint64_t *misses);

/* Non-layer tensors, resident until close. token_embd and the lm head
 * ("output.weight") are listed too, but their data is NULL unless they are
 * resident (mode resident/mmap, or embeddings pinned): use read_row for
 * embeddings and the head units for the lm head. per_layer_token_embd is
 * listed with data NULL except in modes resident and mmap: read_row. */
SL_API const sl_stream_tensor *sl_stream_global(const sl_stream *s, const char *name);
/* One row of a non-layer matrix (token_embd): from RAM if resident, else one
 * small read through the page cache on the caller's thread (the loader's retry
 * policy; not counted in the stats). */
SL_API int sl_stream_read_row(sl_stream *s, const char *name, uint64_t row, void *dst, size_t dst_len);
/* Rows rows[0..n) of that matrix into dst[i] (each dst_len bytes at least):
 * from RAM as read_row does, else read as one batch through the loader (the
 * stream's io_uring or pread backend, O_DIRECT where open; counted in the
 * stats), one read a row, all submitted before the first is waited for. */
SL_API int sl_stream_read_rows(sl_stream *s, const char *name, const uint64_t *rows, int32_t n, void *const *dst,
                               size_t dst_len);

/* Memory-pressure adaptation (stream mode; SL_ENOSYS in resident and mmap
 * modes). set_pinned: turn a pinned unit into a streamed one (its
 * buffer is unmapped now) or read a streamed one into a new pinned buffer
 * (blocks for the read). set_slots: use only the first n_slots slots
 * (1..the plan's n_slots); the others' reads are waited for and their pages
 * returned to the kernel (not with io_uring registered buffers: the kernel
 * holds those pages, so only the count shrinks; *returned says whether the
 * memory went back). Neither may be called while a unit concerned is acquired
 * (SL_EBUSY). The plan (get_plan) follows: n_pinned, pinned_bytes, n_slots. */
SL_API int sl_stream_set_pinned(sl_stream *s, int32_t unit, bool pinned);
SL_API int sl_stream_set_slots(sl_stream *s, int32_t n_slots, bool *returned);
/* Slots the plan started with (set_slots cannot go above it). */
SL_API int32_t sl_stream_max_slots(const sl_stream *s);
/* The expert cache's slot pool (added in 0.4). expert_slots: slots in use
 * (0 without an expert cache); *max_slots: allocated; *step: the pressure
 * ladder's step. set_expert_slots: use n (1..max) slots. Shrinking waits for
 * reads in flight, keeps the n experts the eviction policy values most (moved
 * into the first n slots), and gives the other slots' pages back with
 * MADV_DONTNEED; *freed: the bytes of them that were resident (RSS drops by
 * that). Growing adds empty slots (pages come back as they are read into).
 * SL_EBUSY while an expert is acquired. The plan follows (n_expert_slots,
 * expected_hit_rate, expert_bytes_per_token). */
SL_API int32_t sl_stream_expert_slots(const sl_stream *s, int32_t *max_slots, int32_t *step);
SL_API int sl_stream_set_expert_slots(sl_stream *s, int32_t n_slots, uint64_t *freed);

/* Telemetry since open or the last reset (sl_stream_stats above). */
SL_API int sl_stream_get_stats_sized(const sl_stream *s, sl_stream_stats *out, size_t size);
static inline int sl_stream_get_stats(const sl_stream *s, sl_stream_stats *out)
{ return sl_stream_get_stats_sized(s, out, sizeof *out); }
SL_API void sl_stream_reset_stats(sl_stream *s);

#ifdef __cplusplus
}
#endif
#endif
