/* `sluice bench` runners: one configuration, one repetition, run inside a
 * forked child. A runner registers itself (constructor) with a priority; the
 * bench uses the best one linked in: engine (real forward pass) > stream
 * (io/ streamer, weights only) > raw (plain O_DIRECT / mmap reads, weights
 * only). The last two say so in every output (compute_included = false). */
#ifndef SL_PERF_BENCH_H
#define SL_PERF_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bench_cfg {
    const char *model;
    int mode;                  /* enum sl_stream_mode */
    int io;                    /* enum sl_stream_io */
    uint64_t mem_budget;       /* 0 = planner default (MemAvailable - margin) */
    int threads;
    int n_prompt, n_gen;
    uint32_t req_bytes;        /* 0 = default */
    int queue_depth;           /* 0 = default */
} bench_cfg;

/* One repetition. Times in ms. "token" = one decode step. */
typedef struct bench_sample {
    char mode[16], io[16];     /* what actually ran (after auto) */
    double ttft_cold_ms;       /* evicted file -> open -> prompt -> first token */
    double ttft_warm_ms;       /* same session, prompt again -> first token */
    double prompt_ms;          /* warm prompt processing (n_prompt tokens) */
    double decode_ms;          /* n_gen decode steps after the first token */
    int n_decode;
    double stall_ms;           /* time blocked on I/O during decode */
    uint64_t decode_bytes;     /* bytes read from disk during decode */
    uint64_t model_bytes;      /* tensor bytes of the model */
    uint64_t budget_bytes;     /* budget the plan used (0 = n/a) */
    uint64_t peak_rss;         /* VmHWM at the end of the child */
    uint64_t base_rss;         /* what the budget does not cover: the program's code and shared libraries
                                * (RssFile at the end) and its heap before the model opened (RssAnon) */
    bool compute_included;
    char note[160];
    /* MoE */
    double expert_hit_rate;    /* decode requests found in the expert cache; NAN: no expert cache */
    uint64_t token_bytes;      /* weight bytes one token reads from RAM (MoE: dense + k/n experts); 0 = model_bytes */
} bench_sample;

typedef struct bench_runner {
    const char *name;          /* "engine", "stream", "raw" */
    int priority;              /* highest linked in wins */
    bool compute_included;
    /* 0 or -1 with err filled. Runs in the child. */
    int (*run)(const bench_cfg *cfg, bench_sample *out, char *err, size_t err_len);
} bench_runner;

void bench_register(const bench_runner *r);

/* Cold start: drops the model's pages from the page cache, then returns the
 * clock (perf_now) that TTFT cold counts from. */
double bench_cold_start(const char *model);

/* o->mode and o->io: the names of what ran (io "mmap" in mmap mode). */
void bench_sample_names(bench_sample *o, int mode, int io);

/* [begin, end): file range of all tensors but token_embd (what a decode step reads
 * when nothing is pinned); model_bytes = all tensor bytes. 0 or -1 with err. */
int bench_weight_range(const char *path, uint64_t *begin, uint64_t *end, uint64_t *model_bytes,
                       char *err, size_t err_len);

#define BENCH_RUNNER(ident, name_, prio_, compute_, fn_)                              \
    static const bench_runner ident = { name_, prio_, compute_, fn_ };               \
    __attribute__((constructor)) static void ident##_register(void) { bench_register(&ident); }

#endif
