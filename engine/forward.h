/* Forward pass of a decoder (layers of attention and FFN blocks, by kind:
 * model.h) over the streamer's units.
 * Weights are reached only through sl_stream_acquire/release of one unit at
 * a time (layers 0..L-1, then the lm-head chunks), so resident, streamed and
 * mmap modes run the same code. All intermediate buffers live in one arena
 * allocated at init. */
#ifndef SL_ENGINE_FORWARD_H
#define SL_ENGINE_FORWARD_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "../io/sluice_stream.h"
#include "../kernels/kernels.h"
#include "kv.h"
#include "model.h"
#include "sluice.h"

enum sl_logits_mode {
    SL_LOGITS_NONE = 0,     /* no lm head (intermediate prompt chunk) */
    SL_LOGITS_LAST,         /* only the last token's row */
    SL_LOGITS_ALL,          /* every token's row */
};

/* Profile accumulator of decode passes (sluice.h: sl_profile). thread_ns is
 * the pool's array: [n_threads][SL_PROF_STRIDE], ns inside jobs per op. */
#define SL_PROF_STRIDE 32     /* >= SL_PROF_N_OPS; a thread's row is whole cache lines */
typedef struct sl_forward_prof {
    uint64_t ns[SL_PROF_N_OPS], bytes[SL_PROF_N_OPS], calls[SL_PROF_N_OPS];
    uint64_t *thread_ns;
    int n_threads;
} sl_forward_prof;

int  sl_forward_prof_alloc(sl_forward_prof *p, int n_threads);   /* zeroed; SL_ENOMEM */
void sl_forward_prof_clear(sl_forward_prof *p);
void sl_forward_prof_free(sl_forward_prof *p);
/* Into the public struct (n_tokens, forward_ms, n_samples are the session's). */
void sl_forward_prof_export(const sl_forward_prof *p, sl_profile *out);

static inline uint64_t sl_prof_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct sl_forward {
    const sl_model_desc *d;
    sl_stream *st;
    const sl_kern *k;
    sl_pool *pool;
    int32_t n_batch, n_ctx;
    int32_t head_unit0, n_head_units;   /* units after the layers */
    const char *head_name;              /* "output.weight" or "token_embd.weight" */
    size_t embd_row_bytes;

    float *inv_freq;                    /* [n_rot/2] */
    float *inv_freq_swa;                /* [n_rot/2] sliding-window layers' (rope_base_swa) */
    const float *out_norm;              /* output_norm.weight */

    /* arena */
    void *arena;
    size_t arena_bytes;
    float *x, *xn, *q, *kx, *vx, *att, *gate, *up;
    void *act;                          /* quantized activation rows */
    size_t act_bytes;
    void *attn_scratch;
    void *row_buf;                      /* one raw embedding row */
    /* MoE FFN scratch (forward_moe.c lays it out; NULL for a dense model) */
    void *moe;
    sl_forward_prof *prof;              /* NULL: not profiling (the session sets it per pass) */
    bool fuse;                          /* decode: q/k/v, gate/up as one pool job each (SLUICE_FUSE=0: off) */
    /* MoE pre-gating (forward_moe.c): layer l + 1's router on layer l's input
     * guesses its experts, read ahead while layer l computes */
    bool pregate;
    int32_t pg_layer, pg_n;             /* the layer guessed for (-1: none), guesses */
    int32_t pg_guess[64];
    uint64_t pg_chosen, pg_right;       /* experts chosen in guessed layers, of them guessed */
    /* how often the guess of rank i was among the chosen, decayed per guessed
     * layer: pg_hit[i] / pg_seen is rank i's precision */
    float pg_hit[64], pg_seen;
} sl_forward;

/* Op timing: SL_TIMED(f, op, bytes, statements) runs the statements as op
 * (bytes: weight bytes they read, evaluated after them). Off (f->prof NULL)
 * it costs two branches; begin tags the pool's jobs with op. */
#define SL_TIMED(f, op, bytes, ...)                            \
    do {                                                       \
        const uint64_t sl_t0_ = sl_forward_prof_begin(f, op);  \
        __VA_ARGS__;                                           \
        sl_forward_prof_end(f, op, sl_t0_, bytes);             \
    } while (0)

static inline uint64_t sl_forward_prof_begin(const sl_forward *f, int op)
{
    if (!f->prof) return 0;
    sl_pool_set_tag(f->pool, op);
    return sl_prof_now_ns();
}

static inline void sl_forward_prof_end(const sl_forward *f, int op, uint64_t t0, uint64_t bytes)
{
    if (!f->prof) return;
    f->prof->ns[op] += sl_prof_now_ns() - t0;
    f->prof->bytes[op] += bytes;
    f->prof->calls[op]++;
}

/* Upper bound of the arena init allocates (for the planner's reserve). */
uint64_t sl_forward_arena_bytes(const sl_model_desc *d, int32_t n_batch, int32_t n_ctx,
                                int n_threads);

int  sl_forward_init(sl_forward *f, const sl_model_desc *d, sl_stream *st, const sl_kern *k,
                     sl_pool *pool, int32_t n_batch, int32_t n_ctx);
void sl_forward_free(sl_forward *f);

/* Runs ids[0..n) at positions kv->n_past.. (in chunks of n_batch) and advances
 * kv->n_past. LAST: logits gets n_vocab floats; ALL: logits[n][n_vocab].
 * SL_ECTX if kv has no room (nothing computed). */
int sl_forward_run(sl_forward *f, sl_kv *kv, const int32_t *ids, int32_t n, int mode,
                   float *logits);

/* Context shift (kv_shift.c): sl_kv_shift with this model's rope tables. */
int sl_forward_kv_shift(sl_forward *f, sl_kv *kv, int32_t n_keep, int32_t n_discard);
/* Batched pass (continuous batching, speculative verification): one pass
 * over the weights computes the rows of every sequence. Sequence s feeds
 * ids[0..n) into its own cache at kv->n_past.. (each kv once per call); its
 * logits (mode LAST: one row, ALL: n rows) follow those of sequence s-1 in
 * `logits`. All rows together at most n_batch (SL_EINVAL), every sequence
 * must fit its cache (SL_ECTX; nothing computed). On success each kv->n_past
 * advances by its n. Up to 9 rows in all, each row's logits are bitwise those
 * of the sequence run alone (matmul tiles = vec_dot below the panel size). */
typedef struct sl_forward_seq {
    sl_kv *kv;
    const int32_t *ids;
    int32_t n;
    int mode;               /* SL_LOGITS_LAST or SL_LOGITS_ALL */
} sl_forward_seq;
int sl_forward_run_batch(sl_forward *f, const sl_forward_seq *seqs, int32_t n_seq, float *logits);

/* Parts of a pass for a pipeline stage (sluice.h "pipeline stages"): the
 * embedding rows of ids (n <= n_batch) into x[n][n_embd]; layers [first, last)
 * over x's n rows in place at positions pos0.. (n_past unchanged; each layer
 * must be held by kv); output norm + lm head of the row x -> logits. */
int sl_forward_embed(sl_forward *f, const int32_t *ids, int32_t n, float *x);
int sl_forward_layers(sl_forward *f, sl_kv *kv, int32_t first, int32_t last, int32_t pos0, float *x, int32_t n);
int sl_forward_head(sl_forward *f, const float *x, float *logits);

#endif
