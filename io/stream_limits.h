/* The streamer's named limits: defaults of sl_stream_config's fields and the
 * ranges open accepts (the loader clamps to them too). Macros only. */
#ifndef SL_STREAM_LIMITS_H
#define SL_STREAM_LIMITS_H

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

#endif
