/* Library-internal view of a session's state for the code that saves and
 * restores it (session_state.c) without session.c's struct definitions
 * leaking: pointers into the live session, valid until it is destroyed. */
#ifndef SL_ENGINE_SESSION_PARTS_H
#define SL_ENGINE_SESSION_PARTS_H

#include <stdbool.h>
#include <stdint.h>

#include "../io/sluice_stream.h"
#include "kv.h"
#include "model.h"
#include "sampler.h"
#include "sluice.h"

typedef struct sl_session_parts {
    const sl_model_desc *d;
    const char *model_path;     /* as given to sl_model_open */
    uint64_t *model_ident;      /* 0 until session_state.c computes it (cached on the model) */
    uint64_t data_offset, file_size;   /* of that GGUF: header + tensor table = [0, data_offset) */
    sl_kv *kv;
    sl_sampler *smp;
    float *logits;              /* [n_vocab] */
    bool *have_logits;
    int32_t *hist;              /* [n_ctx] tokens in the cache */
    double *t_first_feed;       /* TTFT clock start (< 0: none pending) */
    sl_stats *stats;
    sl_stream *st;              /* the model's streamer */
    int32_t n_ctx;
    struct sl_pressure **pressure;   /* the ladder (pressure.c), NULL when off */
    char *err;                  /* the session's message buffer */
    size_t err_cap;
} sl_session_parts;

void sl_session_parts_get(sl_session *s, sl_session_parts *p);

/* The pressure ladder's KV_WINDOW rung (session.c): n > 0 keeps the sinks
 * (BOS / n_keep, as a context shift) plus at most the last n positions (one
 * context shift dropping what make_room's halvings would drop with that
 * context), gives back the pages of the rows past them (sl_kv_release) and
 * caps the cache there until n = 0 lifts the cap. */
int sl_session_kv_window(sl_session *s, int32_t n);

#endif
