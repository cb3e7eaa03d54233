/* The forward pass as data, shared by its files (forward.c, forward_layer.c,
 * forward_ops.c, forward_moe.c, forward_prof.c): the pass object with its
 * arena, the rows of a batched pass, and the op timer of the profile. The
 * pass's entry points are forward.h. */
#ifndef SL_ENGINE_FORWARD_PASS_H
#define SL_ENGINE_FORWARD_PASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "../io/sluice_stream.h"
#include "../kernels/kernels.h"
#include "forward_rows.h"
#include "kv.h"
#include "model_desc.h"
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

/* A reader of a pass's hidden states (MTP drafting, spec_mtp.c): after
 * every pass that runs kv, fn gets that sequence's ids, its rows output-
 * normed into h (n_batch rows of n_embd, the hook's), their count and the
 * position of the first; its status fails the pass. fn may run passes of
 * its own on the forward (the pass is done with its arena). */
#define SL_FORWARD_MAX_HOOKS 16
typedef struct sl_forward_hook {
    const sl_kv *kv;
    int (*fn)(void *ctx, const int32_t *ids, const float *h, int32_t n, int32_t pos0);
    void *ctx;
    float *h;
} sl_forward_hook;

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
    void *row_buf;                      /* embd_rows' memory */
    sl_rows embd_rows;                  /* token_embd rows (forward_rows.h) */
    float *ones;                        /* [head_dim] 1.0: the weight of a weightless norm */
    /* per-layer embedding inputs (forward_ple.c lays it out; NULL without) */
    void *ple;
    /* Gated DeltaNet rows / gated attention's q | gate rows (NULL: neither) */
    float *rec_buf;
    float *gdn_ws;           /* per thread: the chunked delta rule's scratch (forward_gdn.h) */
    int32_t gdn_chunk_min;   /* SL_GDN_CHUNK_MIN (forward_gdn.h; tests raise it to compare) */
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
    sl_forward_hook hooks[SL_FORWARD_MAX_HOOKS];
    int32_t n_hooks;
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

/* One sequence of a batched pass (forward.h: sl_forward_run_batch). */
typedef struct sl_forward_seq {
    sl_kv *kv;
    const int32_t *ids;
    int32_t n;
    int mode;               /* SL_LOGITS_LAST or SL_LOGITS_ALL */
} sl_forward_seq;

#endif
