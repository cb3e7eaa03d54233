/* `sluice serve`: an OpenAI-compatible HTTP server (libmicrohttpd + cJSON).
 *   serve_req.c     request bodies -> validated sl_srv_gen (cJSON), response
 *                   and error objects
 *   serve_engine.c  the one thread that calls the model: admission queue,
 *                   sessions (each keeps its cache for prefix reuse: a new
 *                   request takes the free one with the longest reusable
 *                   prefix), continuous batching through sl_batch (or
 *                   speculative passes through sl_spec while one sequence
 *                   runs alone), stop strings, metrics counters
 *   serve_http.c    libmicrohttpd: routes, API key, body limit, SSE,
 *                   cancellation when the client goes away
 *   serve_guard.c   connection caps (per client, global with headroom) and
 *                   header/body deadlines
 * Part of the command (not of libsluice): it uses only engine/sluice.h and
 * engine/chat.h. */
#ifndef SL_SERVE_H
#define SL_SERVE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../../gguf/base/sl_status.h"
#include "../../chat.h"
#include "../../sluice.h"

#define SL_SRV_MAX_STOP 4
#define SL_SRV_STOP_BYTES 256
#define SL_SRV_MAX_TOP 20       /* top_logprobs / completions' logprobs at most */
#define SL_SRV_REC_SNAPSHOTS 4  /* --prefix-snapshots default */

typedef struct sl_srv_limits {
    int32_t max_tokens;     /* cap on a request's max_tokens */
    int32_t n_vocab;        /* top_k bound */
    int32_t max_messages;
} sl_srv_limits;

/* One validated generation request. */
typedef struct sl_srv_gen {
    bool chat, stream;
    bool no_cache;          /* "cache_prompt": false — no prefix reuse for this one */
    char *prompt;           /* completions: the prompt; chat: the rendered conversation */
    size_t *plain;          /* chat: where the messages lie in prompt ((offset, length) pairs):
                             * read as text, so only the template yields control tokens */
    size_t n_plain;
    bool special_in_content; /* "special_in_content": true — control tokens in messages too */
    bool channels;          /* Harmony: the reply's analysis channel is reasoning_content */
    int32_t max_tokens;     /* 0: until the context is full */
    sl_sampling sp;
    bool seeded;            /* else the engine picks a seed */
    char *stop[SL_SRV_MAX_STOP];
    int n_stop;
    int32_t logprobs;       /* -1: none; else each token's log probability and this many top ones */
    bool echo;              /* completions: the prompt comes first in the text */
} sl_srv_gen;

/* One generated token's log probability and the most likely alternatives
 * (sl_session_logprobs: the request's sampling distribution). */
typedef struct sl_srv_lp {
    int32_t id, n_top;
    float lp;
    int32_t top[SL_SRV_MAX_TOP];
    float top_lp[SL_SRV_MAX_TOP];
} sl_srv_lp;

void sl_srv_gen_free(sl_srv_gen *g);

/* Parses and checks a request body. 0 on success; else the HTTP status (400)
 * with the message in err and the offending field in *param (or NULL). Chat
 * messages are rendered with tmpl/bos/eos. Unknown fields are ignored. */
int sl_srv_parse(const char *body, size_t len, bool chat, const sl_srv_limits *lim,
                 enum sl_chat_tmpl tmpl, const char *bos, const char *eos, sl_srv_gen *out,
                 char *err, size_t cap, const char **param);

/* OpenAI-style error object {"error":{"message","type","param","code"}}; malloc'd. */
char *sl_srv_error_json(const char *msg, const char *type, const char *param, const char *code);

/* The "logprobs" object of a choice for lps[0..n) (token texts from m): chat
 * {"content": [{token, logprob, bytes, top_logprobs}]}, completions {tokens,
 * token_logprobs, top_logprobs, text_offset} with token i at offset
 * offset + (i ? ends[i-1] : base) (ends: the text's end after each token). */
struct cJSON;
struct cJSON *sl_srv_logprobs_json(const sl_model *m, bool chat, const sl_srv_lp *lps, const size_t *ends,
                                   size_t n, size_t base, size_t offset);

/* A chat completion (or chunk) with "reasoning_content" (llama-server's field)
 * beside the content, when reasoning is not NULL; otherwise as below. */
char *sl_srv_result_json_r(bool chat, bool chunk, uint64_t id, const char *model, long long created,
                           const char *text, size_t text_len, const char *reasoning, size_t reasoning_len,
                           const char *finish, bool role, int32_t n_prompt, int32_t n_cached, int32_t n_gen,
                           struct cJSON *logprobs);

/* Completion / chat completion object, or (chunk) one SSE chunk of it; text
 * NULL: no content field (chat) / "" (completions); finish NULL: null;
 * role: the chat delta names the assistant; n_cached: prompt tokens a
 * previous request's cache served (usage.prompt_tokens_details.cached_tokens);
 * logprobs: the choice's (taken over; NULL: null). malloc'd. */
char *sl_srv_result_json(bool chat, bool chunk, uint64_t id, const char *model, long long created,
                         const char *text, size_t text_len, const char *finish, bool role,
                         int32_t n_prompt, int32_t n_cached, int32_t n_gen, struct cJSON *logprobs);
char *sl_srv_models_json(const char *model, long long created);

/* ---- engine ---------------------------------------------------------------- */

enum sl_srv_state { SL_SRV_QUEUED, SL_SRV_RUNNING, SL_SRV_DONE, SL_SRV_REJECTED };

typedef struct sl_srv_job {
    sl_srv_gen g;
    uint64_t id;
    /* below: guarded by the server's lock */
    int state;
    int refs;               /* the HTTP side and the engine */
    bool cancelled;         /* the client went away */
    int http_status;        /* REJECTED: 4xx/5xx */
    char err[256];
    const char *err_code;
    char *out;              /* generated text (stop strings cut off); Harmony: the final channel */
    char *reason;           /* Harmony: the analysis channel */
    size_t reason_len, reason_cap;
    sl_harmony harmony;     /* Harmony: the reply's parser */
    size_t out_len, out_cap, safe_len;   /* bytes [0, safe_len) are final */
    size_t *ends;           /* out_len after each token: SSE sends one chunk per token
                             * even when the reader falls behind the generator */
    size_t n_ends, cap_ends;
    sl_srv_lp *lps;         /* g.logprobs >= 0: one per entry of ends */
    int32_t n_prompt, n_gen;
    int32_t n_cached;       /* prompt positions kept from an earlier request's cache */
    const char *finish;     /* "stop" / "length" once DONE */
    double t_submit, t_first;
    pthread_cond_t cv;
    struct sl_srv_job *next;        /* queue */
    void *slot;                     /* engine: its session slot */
} sl_srv_job;

typedef struct sl_srv_config {
    int32_t parallel;       /* sequences decoded together (batch members) */
    int32_t queue;          /* requests waiting beyond those */
    sl_srv_limits lim;
    /* speculative decoding while a single sequence is active (serve_engine.c) */
    int spec_kind;          /* enum sl_spec_kind */
    int32_t spec_k;         /* drafts per pass at most (0: by mode) */
    sl_model *draft;        /* SL_SPEC_DRAFT: the draft model (one session of it per slot) */
    /* prefix reuse: finished requests' caches kept for the next prompts that
     * start the same way (at most this many sessions hold one; 0: off) */
    int32_t prefix_cache;
} sl_srv_config;

typedef struct sl_srv sl_srv;

int  sl_srv_create(sl_srv **out, sl_model *m, const sl_srv_config *c);
void sl_srv_destroy(sl_srv *s);
/* Takes the job (refs = 2: the caller's and the engine's). SL_EBUSY: every
 * slot busy and `queue` jobs waiting already. */
int  sl_srv_submit(sl_srv *s, sl_srv_job *j);
/* The caller's lock on job state. */
void sl_srv_lock(sl_srv *s);
void sl_srv_unlock(sl_srv *s);
/* Waits (lock held) up to ms for a change of j. */
void sl_srv_wait(sl_srv *s, sl_srv_job *j, int ms);
/* Lock held: the client is gone (the engine drops the job at its next pass). */
void sl_srv_cancel_locked(sl_srv *s, sl_srv_job *j);
/* Lock held: drop the caller's reference. */
void sl_srv_unref_locked(sl_srv *s, sl_srv_job *j);
/* The model the engine runs (token texts of logprobs). */
const sl_model *sl_srv_model(const sl_srv *s);
/* Prometheus text exposition; malloc'd. */
char *sl_srv_metrics(sl_srv *s);
/* Lock not held: count a finished HTTP request by status. */
void sl_srv_count_http(sl_srv *s, int status);

/* ---- HTTP ------------------------------------------------------------------ */

/* ---- admission and deadlines ----------------------------------------------- */

typedef struct sl_srv_guard_config {
    int per_client;         /* open connections one client address may hold */
    int max_conns;          /* open connections in all */
    int headroom;           /* of max_conns: places only a client holding none may take */
    int header_s;           /* a request's header must arrive within this (from connect / the last reply) */
    int body_s;             /* its body within this after the header */
} sl_srv_guard_config;

typedef struct sl_srv_guard sl_srv_guard;
typedef struct sl_srv_conn sl_srv_conn;

int  sl_srv_guard_create(sl_srv_guard **out, const sl_srv_guard_config *c);
void sl_srv_guard_destroy(sl_srv_guard *g);
/* Whether a new connection from addr (IPv4, network order) is let in. */
bool sl_srv_guard_admit(sl_srv_guard *g, uint32_t addr);
/* A connection was let in / has closed (NULL from open: out of memory). */
sl_srv_conn *sl_srv_guard_open(sl_srv_guard *g, uint32_t addr, int fd);
void sl_srv_guard_close(sl_srv_guard *g, sl_srv_conn *k);
/* Phases of the connection's current request: header in (body deadline
 * starts), request complete (no deadline while it is answered), reply sent
 * (the next request's header deadline starts). NULL k: no-op. */
void sl_srv_guard_headers_done(sl_srv_guard *g, sl_srv_conn *k);
void sl_srv_guard_request_done(sl_srv_guard *g, sl_srv_conn *k);
void sl_srv_guard_reply_done(sl_srv_guard *g, sl_srv_conn *k);

/* Whether an IPv4 address (dotted) is on the loopback network 127.0.0.0/8. */
bool sl_srv_host_is_loopback(const char *host);

typedef struct sl_srv_http_config {
    const char *host;       /* "127.0.0.1" */
    int port;               /* 0: any free port */
    const char *api_key;    /* NULL: none */
    size_t max_body;
    sl_srv_limits lim;
    const char *model_name;
    enum sl_chat_tmpl tmpl; /* the model's, --chat-template's, or ChatML (logged) */
    char bos[256], eos[256];
    sl_srv_guard_config guard;
} sl_srv_http_config;

typedef struct sl_srv_http sl_srv_http;
/* Starts listening; *port_out: the bound port. */
int  sl_srv_http_start(sl_srv_http **out, sl_srv *engine, const sl_srv_http_config *c, int *port_out);
void sl_srv_http_stop(sl_srv_http *h);

#endif
