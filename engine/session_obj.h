/* The session behind sluice.h's sl_session, for the library files that make
 * it up: session.c (create, feed, sample, stages), session_shift.c (context
 * shift and the pressure window), session_pressure.c (applies the pressure
 * ladder's steps), session_state.c (save / load), batch.c and spec.c (which
 * run passes for sessions and report them with sl_session_fed). The one
 * internal way into a session: outside the library only tests that compare
 * cache rows (test_pressure_window.c) include it. */
#ifndef SL_ENGINE_SESSION_OBJ_H
#define SL_ENGINE_SESSION_OBJ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../gguf/base/sl_internal.h"
#include "forward.h"
#include "kv.h"
#include "model_handle.h"
#include "sampler.h"
#include "sluice.h"
#include "tok/tokenizer.h"

struct sl_pressure;

struct sl_session {
    sl_model *m;
    sl_kv kv;
    sl_sampler smp;
    float *logits;              /* [n_vocab] after the last fed token */
    bool have_logits;
    int32_t *hist;              /* [n_ctx] tokens in the cache */
    sl_detok dt;
    sl_stats stats;
    double t_first_feed;        /* < 0: no feed pending a first token */
    int32_t first_len;          /* tokens of the first feed after a reset (n_keep = -1) */
    char err[SL_MSG];
    struct sl_pressure *pressure;   /* memory-pressure ladder (pressure.c), NULL when off */
    int32_t window;             /* its KV_WINDOW rung: positions kept past the sinks, 0 = none */
    uint64_t epoch;             /* bumped by every feed and reset (spec.c: is a pending draw still valid) */
    /* Prefix reuse: the leading positions whose rows are bitwise those a fresh
     * prefill of hist[0..fresh_len) computes — written by prompt feeds in whole
     * n_batch chunks starting at a multiple of n_batch (the chunks a fresh
     * prefill cuts). Decode rows (other batch shapes), shifted rows and rows
     * restored from files are not counted. Always <= kv.n_past. */
    int32_t fresh_len;
    /* Recurrent-state snapshots (session_snap.c): snap_n states of snap_pos[i]
     * positions, each a multiple of snap_every (a multiple of n_batch) and
     * <= fresh_len; snap: rec_snapshots states, allocated at the first one. */
    float *snap;
    int32_t *snap_pos;
    int32_t snap_n, snap_every;
    bool refill;                /* keep_prefix: the next feed completes the "first prompt" (n_keep -1) */
    /* decode profile (sl_session_set_profile); prof.thread_ns NULL until first on */
    sl_forward_prof prof;
    bool prof_on;
    int64_t prof_tokens, prof_samples;
    double prof_fwd_ms;
};

/* ---- recurrent-state snapshots for prefix reuse (session_snap.c) ---------
 * Taken after a prompt feed's whole n_batch chunk that extends fresh_len
 * (the state then is the one a fresh prefill has there). Bounded by
 * rec_snapshots: when full, every other one goes and the spacing doubles. */
/* Forgets rows from len on: fresh_len and the snapshots past it. */
void sl_session_fresh_cut(sl_session *s, int32_t len);
/* A snapshot of the state as it is now, at kv.n_past (a fresh chunk's end). */
void sl_session_snap_take(sl_session *s);
/* The largest snapshot position <= c (0: none). */
int32_t sl_session_snap_below(const sl_session *s, int32_t c);
/* The state set to the snapshot at pos (one sl_session_snap_below gave). */
void sl_session_snap_restore(sl_session *s, int32_t pos);
void sl_session_snap_free(sl_session *s);

/* Keeps the last error as the session's message (sl_session_errmsg); returns rc. */
static inline int sl_session_fail(sl_session *s, int rc)
{
    snprintf(s->err, sizeof s->err, "%s", sl_last_error());
    return rc;
}

/* session.c. A decode pass over n rows run for s points the forward pass and
 * the pool at s's profile when it has one on (true then); _end counts the
 * pass's rows and wall time when it succeeded (rc 0). */
bool sl_session_prof_begin(sl_session *s);
void sl_session_prof_end(sl_session *s, int rc, int n, double ms);
/* session.c. After a pass that fed ids[0..n) (kv.n_past already advanced when
 * ok): history, logits flag and decode statistics; on failure, the error. */
void sl_session_fed(sl_session *s, const int32_t *ids, int n, bool ok, double ms, double stall_ms);

/* session_shift.c. Before n new tokens: context shifts until they fit (when
 * params.context_shift is on or a pressure window is set); 0 also when no
 * room can be made (the caller reports SL_ECTX). */
int sl_session_make_room(sl_session *s, int n);
/* session_shift.c. The pressure ladder's KV_WINDOW rung: n > 0 keeps the
 * sinks (BOS / n_keep, as a context shift) plus at most the last n positions
 * (one context shift dropping what make_room's halvings would drop with that
 * context), gives back the pages of the rows past them (sl_kv_release) and
 * caps the cache there until n = 0 lifts the cap. */
int sl_session_kv_window(sl_session *s, int32_t n);
/* session_shift.c. Positions the window caps the cache at (sinks + window), 0 without one. */
int32_t sl_session_kv_cap(const sl_session *s);

/* session_pressure.c. Before a forward pass: polls the ladder when it is on
 * and its interval has passed, and applies its steps. */
void sl_session_pressure_tick(sl_session *s);

#endif
