/* The model handle behind sluice.h's sl_model (model_handle.c): the loaded
 * description, streamer, tokenizer, thread pool and forward pass that the
 * sessions of one model share. Library-internal: the session files
 * (session_obj.h) read it; nothing else should. */
#ifndef SL_ENGINE_MODEL_HANDLE_H
#define SL_ENGINE_MODEL_HANDLE_H

#include <stdint.h>

#include "../io/sluice_stream.h"
#include "../kernels/kernels.h"
#include "forward.h"
#include "model.h"
#include "sluice.h"
#include "tok/tokenizer.h"

#define SL_MSG 512   /* a handle's error message buffer */

struct sl_model {
    sl_model_desc d;
    sl_model_params p;
    int32_t n_ctx, n_batch;
    sl_stream *st;
    sl_tok *tok;
    char tok_err[SL_MSG];       /* why the tokenizer did not load, if it did not */
    const sl_kern *k;
    sl_pool *pool;
    sl_forward fw;
    uint64_t model_bytes;
    uint64_t kv_bytes;          /* one session's cache (the reserve's figure) */
    uint64_t kv_pos_bytes;      /* of which per position (the reserve's figure) */
    char err[SL_MSG];
    /* prompt cache (session_state.c): the file a cache is tied to */
    char *path;
    uint64_t ident;             /* 0 until first needed */
    uint8_t *layer_mask;        /* p.layer_mask's copy (p points here), NULL: every layer */
};

/* 0 if the model has a tokenizer, else SL_EUNSUPPORTED with why it has none. */
int sl_model_need_tok(const sl_model *m);

#endif
