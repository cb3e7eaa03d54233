/* Sluice public library API: run a Llama / Qwen2 / Qwen3 / Phi-3 / Gemma 3 GGUF model, resident or
 * streamed layer by layer from disk.
 *
 *   sl_model   the weights (through the streamer), the model description,
 *              the tokenizer and the thread pool. Open once.
 *   sl_session one conversation: KV cache, compute arena, sampler state.
 *
 * Every function returning int returns 0 (SL_OK) or a negative SL_E* status
 * (sl_status.h, installed next to this header: SL_ECTX context full,
 * SL_EUNSUPPORTED architecture/type, SL_ESHAPE bad tensor, SL_EINVAL bad
 * argument, SL_EIO disk error, ...); the message of the last failure is kept on the handle
 * (sl_model_errmsg / sl_session_errmsg) and in sl_last_error() of the calling
 * thread. Nothing here prints or exits.
 *
 * Threading: a model's weights are streamed on one cyclic schedule, so at most
 * one session of a model may be computing at any time (calls on sessions of the
 * same model must not overlap). Different models are independent.
 *   thread-safe anywhere: sl_version*, sl_strerror, sl_last_error (per thread),
 *     the _init functions (they touch only the caller's struct), sl_model_open
 *     (each call builds its own model), sl_stream_mode_name/io_name.
 *   per model: every other call taking an sl_model, or a session of it, must not
 *     overlap with another such call (the bindings hold one lock per model).
 *     sl_model_close / sl_session_destroy: no other call on that object may be
 *     running or follow; destroy a model's sessions before closing the model.
 *
 * Ownership of returned pointers (nothing returned is freed by the caller except
 * through the verb named here):
 *   sl_model * (open)   the caller's; sl_model_close (NULL is a no-op).
 *   sl_session * (create) the caller's; sl_session_destroy (NULL is a no-op).
 *   sl_model_errmsg / sl_session_errmsg: owned by the handle, valid until the
 *     next failing call on it or its close/destroy. sl_last_error: owned by the
 *     calling thread, valid until that thread's next failing call.
 *   sl_model_info.arch / .isa, sl_model_meta_str: owned by the model, valid
 *     until sl_model_close.
 *   sl_model_stream: borrowed (the model's streamer): valid until
 *     sl_model_close; never sl_stream_close it, and do not acquire/release on
 *     it while a session of the model computes.
 *   sl_session_logits: owned by the session, valid (and unchanged) until the
 *     next feed/eval/accept/step/reset or destroy.
 *   sl_version, sl_strerror: static strings.
 *
 * Status codes each call can return (0 on success; the message names the cause):
 *   _init_sized, get_info/get_stats_sized: SL_EINVAL (NULL, struct_size out of range).
 *   sl_model_open: SL_EINVAL (bad params), SL_ENOENT (no file / key / tensor),
 *     SL_EIO, SL_ENOMEM, SL_EFORMAT, SL_EVERSION, SL_ETRUNC, SL_ETYPE (the GGUF),
 *     SL_EUNSUPPORTED (architecture, tensor type), SL_ESHAPE, SL_ERANGE (sizes);
 *     SL_ENOMEM also when mem_budget is below the plan's minimum.
 *   sl_model_tokenize: SL_ERANGE (cap too small), SL_EINVAL, SL_ENOMEM, and
 *     SL_EUNSUPPORTED when the model has no tokenizer. token_text/piece: SL_EINVAL
 *     (bad id), SL_ERANGE (cap).
 *   sl_session_create: SL_EINVAL, SL_ENOMEM.  set_sampling: SL_EINVAL.
 *   feed_tokens/feed_text/eval/accept/step: SL_ECTX (context full; nothing fed),
 *     SL_EINVAL (id outside the vocab, NULL), SL_ENOMEM, and in stream mode the
 *     streamer's read errors (SL_EIO, SL_ETRUNC, SL_EBUSY, SL_ECANCELED).
 *   sample: SL_EINVAL (nothing fed yet).  detok: SL_ERANGE (cap), SL_EINVAL.
 *   Calls returning void, bool, int32_t or a pointer cannot fail (NULL = absent).
 *
 * Example:
 *     sl_model_params mp; sl_model_params_init(&mp);
 *     mp.n_ctx = 512;
 *     sl_model *m; if (sl_model_open(&m, "model.gguf", &mp)) die(sl_last_error());
 *     sl_session *s; if (sl_session_create(&s, m)) die(sl_last_error());
 *     sl_sampling sp; sl_sampling_init(&sp); sp.temp = 0;      // greedy
 *     sl_session_set_sampling(s, &sp);
 *     if (sl_session_feed_text(s, "Once upon a time", false)) die(sl_session_errmsg(s));
 *     for (int i = 0; i < 64; i++) {
 *         int32_t tok; char piece[256];
 *         if (sl_session_step(s, &tok)) break;            // SL_ECTX when full
 *         if (sl_model_token_is_eog(m, tok)) break;
 *         if (sl_session_detok(s, tok, piece, sizeof piece) > 0) fputs(piece, stdout);
 *     }
 *     sl_session_destroy(s); sl_model_close(m);
 */
#ifndef SLUICE_H
#define SLUICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sl_api.h"   /* SL_API, SLUICE_VERSION_*; found through -I (installed: next to this file) */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_model sl_model;
typedef struct sl_session sl_session;

/* ---- model -------------------------------------------------------------- */
enum sl_pregate { SL_PREGATE_AUTO = 0, SL_PREGATE_ON, SL_PREGATE_OFF };   /* moe_pregate */
typedef struct sl_model_params {
    size_t struct_size;     /* sizeof, set by the _init function (versioned: README "Library") */
    int n_threads;          /* compute threads incl. the caller; 0 = all online CPUs */
    int32_t n_ctx;          /* KV cache positions per session; 0 = min(training ctx, 4096) */
    int32_t n_batch;        /* prompt tokens per forward chunk; 0 = 64 */
    int mode;               /* enum sl_stream_mode (io/sluice_stream.h): 0 = planner decides */
    int io;                 /* enum sl_stream_io: 0 = io_uring where it works */
    uint64_t mem_budget;    /* bytes; 0 = MemAvailable minus a margin */
    int32_t max_pinned;     /* -1 = planner decides; else cap on pinned layers (stream mode) */
    bool mlock;             /* lock resident memory */
    /* added in 0.3: MoE routed experts (io/sluice_stream.h) */
    int expert_stream;      /* enum sl_expert_stream: 0 = one (layer, expert) at a time when streaming */
    int expert_policy;      /* enum sl_expert_policy: expert cache eviction, 0 = default */
    uint64_t expert_cache_bytes;   /* cap on the expert cache; 0 = what the budget leaves */
    /* 0.3 */
    int numa;               /* weights, slots and KV cache: 0 leave alone, 1 on the compute threads'
                               node, 2 interleaved over all nodes (no-op on one node) */
    /* added after 0.2.0: KV cache types and context shift (README "KV cache and context shift") */
    int32_t type_k, type_v; /* cache types, enum sl_ggml_type (gguf_type.h): SL_GGML_F16 (default),
                             * SL_GGML_Q8_0, SL_GGML_Q4_0 (these need head_dim % 32 == 0) */
    bool context_shift;     /* true (the CLI's default): a feed that does not fit drops the older
                             * half of the unkept positions and goes on; false (default, as
                             * before): SL_ECTX */
    int32_t n_keep;         /* context shift keeps BOS + this many positions; -1 = the whole
                             * first prompt (llama.cpp's --keep) */
    /* added in 0.4: one stage of a pipeline (engine/cli/ring/; "Pipeline stages" below) */
    const uint8_t *layer_mask;  /* NULL: every layer; else n_layer_mask entries, nonzero = this
                                 * model runs the layer; the others' weights are never read and
                                 * their KV cache is not allocated (copied at open) */
    int32_t n_layer_mask;
    bool no_head;           /* neither the lm head nor the embedding table is loaded (rows are
                             * still readable): a stage that only runs layers */
    int moe_pregate;        /* MoE, experts streamed, decode: while layer l computes, layer l+1's
                             * router on layer l's FFN input guesses l+1's experts and reads them
                             * ahead (README "Pre-gating"). 0 = default (on), 1 on, 2 off */
    /* added in 0.6: called on the opening thread while a resident model's weights are read
     * (bytes done of total, a few times a second and once at the end); NULL: not called */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    /* added in 0.6: stream / mmap modes keep the file's NextN (MTP) blocks in the schedule,
     * for SL_SPEC_MTP (they are left out otherwise; resident mode always reads them) */
    bool keep_nextn;
    /* added in 0.6: a model with recurrent layers: snapshots of a session's recurrent state
     * kept at n_batch boundaries of its prompts for prefix reuse (below), at most this many
     * per session (each the size of the state; counted with the KV cache); 0 = none */
    int32_t rec_snapshots;
} sl_model_params;
/* The smallest struct_size accepted: the layout of 0.2.0. */
#define SL_MODEL_PARAMS_MIN_SIZE SL_STRUCT_END(sl_model_params, mlock)

/* Defaults for every field; the inline passes the caller's sizeof (FFI: call
 * the _sized form with the size of your struct). */
SL_API int sl_model_params_init_sized(sl_model_params *p, size_t struct_size);
static inline int sl_model_params_init(sl_model_params *p)
{ return sl_model_params_init_sized(p, sizeof *p); }
SL_API int  sl_model_open(sl_model **out, const char *path, const sl_model_params *p);
SL_API void sl_model_close(sl_model *m);
SL_API const char *sl_model_errmsg(const sl_model *m);

typedef struct sl_model_info {
    const char *arch;       /* "llama", "qwen2", "qwen3", "phi3", "gemma3" */
    int32_t n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_rot;
    int32_t n_vocab, n_ctx_train, n_ctx;
    float rope_base, rms_eps;
    bool rope_neox, tied_output;
    int32_t bos_id, eos_id; /* -1 if none */
    bool add_bos;
    uint64_t model_bytes;   /* tensor bytes in the file */
    int mode, io;           /* what the planner chose (enum sl_stream_mode / sl_stream_io) */
    const char *isa;        /* kernel level in use ("avx2", ...) */
    int n_threads;
    /* added after 0.2.0 */
    int32_t type_k, type_v; /* KV cache types (enum sl_ggml_type) */
    uint64_t kv_pos_bytes;  /* KV cache bytes per position, all layers, K + V */
    uint64_t kv_bytes;      /* a session's KV cache (sliding-window layers keep only a ring) */
} sl_model_info;
#define SL_MODEL_INFO_MIN_SIZE SL_STRUCT_END(sl_model_info, n_threads)   /* layout of 0.2.0 */
/* Fills size bytes of *out (the inline passes the caller's sizeof). */
SL_API int sl_model_get_info_sized(const sl_model *m, sl_model_info *out, size_t size);
static inline int sl_model_get_info(const sl_model *m, sl_model_info *out)
{ return sl_model_get_info_sized(m, out, sizeof *out); }
/* The streamer underneath (type: sl_stream *), for plan / stats printing. */
SL_API void *sl_model_stream(const sl_model *m);

/* Tokenizer. encode returns the number of ids written (<= cap), or a negative
 * status; SL_ERANGE when cap is too small. */
SL_API int  sl_model_tokenize(sl_model *m, const char *text, size_t len, bool add_bos, bool parse_special,
                              int32_t *ids, int cap);
/* A rendered chat (added in 0.6): control tokens come only from the template's
 * markup. Like tokenize with parse_special = true, except that control-token
 * texts overlapping one of the n_plain byte ranges plain[2i] .. plain[2i] +
 * plain[2i+1] (the messages, as the chat renderer reports them) stay text, so
 * a message cannot fake a turn. */
SL_API int  sl_model_tokenize_plain(sl_model *m, const char *text, size_t len, bool add_bos,
                                    const size_t *plain, size_t n_plain, int32_t *ids, int cap);
SL_API bool sl_model_token_is_eog(const sl_model *m, int32_t id);
/* Vocabulary text of a token as stored ("<s>", "<|im_end|>"), NUL-terminated;
 * returns its length, SL_ERANGE if cap is too small, SL_EINVAL for a bad id. */
SL_API int sl_model_token_text(const sl_model *m, int32_t id, char *buf, size_t cap);
/* A string metadata value (e.g. "tokenizer.chat_template"); NULL if absent. */
SL_API const char *sl_model_meta_str(const sl_model *m, const char *key);
/* The bytes a token stands for, as printed (SPM "▁" -> " ", byte-level characters
 * decoded; control tokens: nothing), not NUL-terminated and not necessarily
 * valid UTF-8 alone (sl_session_detok joins split sequences). Returns the
 * length, SL_ERANGE if cap is too small, SL_EINVAL for a bad id. */
SL_API int  sl_model_token_piece(const sl_model *m, int32_t id, char *buf, size_t cap);

/* ---- sampling -------------------------------------------------------------
 * Order as llama.cpp's default chain: repetition penalty, top-k, top-p, min-p,
 * temperature, then a draw. temp <= 0 is greedy (argmax, ties -> lowest id).
 * The same seed and inputs give the same tokens. */
typedef struct sl_sampling {
    size_t struct_size;     /* sizeof, set by the _init function (versioned: README "Library") */
    float temp;             /* 0.8 */
    int32_t top_k;          /* 40; <= 0 disables */
    float top_p;            /* 0.95; >= 1 disables */
    float min_p;            /* 0.05; <= 0 disables */
    float repeat_penalty;   /* 1.0 = off */
    int32_t repeat_last_n;  /* 64; tokens of history the penalty looks at (-1 = whole context) */
    uint64_t seed;          /* PRNG seed */
} sl_sampling;
#define SL_SAMPLING_MIN_SIZE SL_STRUCT_END(sl_sampling, seed)   /* layout of 0.2.0 */
SL_API int sl_sampling_init_sized(sl_sampling *s, size_t struct_size);
static inline int sl_sampling_init(sl_sampling *s)
{ return sl_sampling_init_sized(s, sizeof *s); }

/* ---- session ------------------------------------------------------------ */
SL_API int  sl_session_create(sl_session **out, sl_model *m);
SL_API void sl_session_destroy(sl_session *s);
SL_API const char *sl_session_errmsg(const sl_session *s);
SL_API int  sl_session_set_sampling(sl_session *s, const sl_sampling *sp);   /* also reseeds */
/* Forget everything fed (KV cache emptied, sampler history cleared). */
SL_API void sl_session_reset(sl_session *s);

/* Feed tokens at the next positions (batched prefill). SL_ECTX if they would
 * not fit in n_ctx (nothing is fed then); SL_EINVAL for an id outside the vocab. */
SL_API int  sl_session_feed_tokens(sl_session *s, const int32_t *ids, int n);
/* Tokenize (special tokens parsed when parse_special; BOS/EOS as the model's
 * metadata asks when the session is empty) and feed. */
SL_API int  sl_session_feed_text(sl_session *s, const char *text, bool parse_special);
/* Like feed_tokens, and also writes the logits of every fed position to
 * logits[n][n_vocab] (row i = prediction for the token after ids[i]). */
SL_API int  sl_session_eval(sl_session *s, const int32_t *ids, int n, float *logits);
/* Logits after the last fed token (n_vocab floats), NULL before any feed. */
SL_API const float *sl_session_logits(const sl_session *s);
/* Sample the next token from the current logits with the session's sampling
 * settings and feed it, so that the logits predict the one after. */
SL_API int  sl_session_step(sl_session *s, int32_t *token);
/* Sample only (no feed): the token the sampler picks from the current logits. */
SL_API int  sl_session_sample(sl_session *s, int32_t *token);
/* Feed one generated token (a decode step: counted in the decode statistics). */
SL_API int  sl_session_accept(sl_session *s, int32_t token);
/* Positions used / available. */
SL_API int32_t sl_session_n_past(const sl_session *s);
SL_API int32_t sl_session_n_ctx(const sl_session *s);

/* Streaming detokenizer: text of `id` given what came before, holding back
 * bytes of an incomplete UTF-8 sequence until it completes. Writes a
 * NUL-terminated string; returns its length (0 allowed) or < 0. */
SL_API int  sl_session_detok(sl_session *s, int32_t id, char *buf, size_t cap);

/* ---- log probabilities and chat templates (servers, bindings; added in 0.6) -
 * logprobs: the distribution the sampler draws the next token from (the
 *   session's settings: repetition penalty, top-k, top-p, min-p, then the
 *   temperature; greedy sessions report it at temperature 1, whose argmax is
 *   the greedy pick), over the current logits: up to k (ids, natural-log
 *   probabilities) pairs, most likely first, and *token_lp = the log
 *   probability of `token` in it (-INFINITY when the filters dropped it).
 *   Returns how many pairs were written. No PRNG draw; nothing changes.
 *   SL_EINVAL before any feed or for a token outside the vocabulary.
 * chat_template: the family the model's tokenizer.chat_template is recognised
 *   as ("llama3", "chatml", ...; names of chat_render), NULL when it has none
 *   or an unrecognised one. Owned by the library.
 * chat_render: messages (roles "system" / "user" / "assistant") in the named
 *   family's form, with the model's BOS/EOS texts, plus the opening of the
 *   assistant turn if add_generation_prompt. Returns its length (nothing
 *   beyond cap is written; a NUL follows if cap > length) or SL_EUNSUPPORTED
 *   (unknown family), SL_EINVAL (role). Tokenizing that text with
 *   parse_special = true would read control tokens in the messages too (a
 *   message could fake a turn): to run a chat use chat_tokenize.
 * chat_tokenize: the same rendering as token ids, the way
 *   `sluice chat` and the server feed it: the template's markers (and BOS)
 *   are control tokens, the messages' text is text, unless special_in_content
 *   (control-token texts in messages become control tokens too, llama.cpp's
 *   default). Returns the number of ids, which may exceed cap (then only cap
 *   are written: call again with that many), or a negative SL_E* as
 *   chat_render, SL_EUNSUPPORTED for a model without a tokenizer. */
SL_API int sl_session_logprobs(sl_session *s, int32_t token, int32_t k, int32_t *ids, float *lps, float *token_lp);
SL_API const char *sl_model_chat_template(const sl_model *m);
SL_API int64_t sl_model_chat_render(const sl_model *m, const char *tmpl, const char *const *roles,
                                    const char *const *contents, size_t n, bool add_generation_prompt,
                                    char *out, size_t cap);
SL_API int sl_model_chat_tokenize(sl_model *m, const char *tmpl, const char *const *roles,
                                  const char *const *contents, size_t n, bool add_generation_prompt,
                                  bool special_in_content, int32_t *ids, int cap);

/* ---- session state files (prompt cache) -----------------------------------
 * A file holds the tokens in the cache, their K/V rows (in the cache's own cell
 * types, so nothing is re-quantized), the logits after the last token and the
 * sampler's PRNG state. It is versioned, checksummed (header and payload), tied
 * to the model file (a hash of the GGUF header + tensor table, the file size and
 * the first and last 64 KiB of tensor data) and to the KV cell types and shape,
 * and written atomically (temp file, fsync, rename, fsync of the directory).
 * A file that does not match or is damaged is rejected: SL_ENOENT (no file),
 * SL_EIO, SL_ETRUNC (shorter/longer than its header says), SL_EVERSION,
 * SL_EFORMAT (bad magic, checksum, token id), SL_EUNSUPPORTED (another model,
 * KV type or shape, more tokens than n_ctx), SL_ENOMEM; the session is then
 * empty (as after sl_session_reset) and the message says why.
 *
 * save: the whole state (n_past positions). SL_EINVAL when nothing was fed.
 * load: the whole state, PRNG included; logits as they were when saved
 *   (bitwise), so sampling continues exactly as it would have.
 * load_prefix: the longest common prefix of the file's tokens and ids[0..n)
 *   (llama.cpp's --prompt-cache). *n_reused = positions restored; the caller
 *   feeds ids[*n_reused..n). When the whole file matched, its logits come
 *   with it; otherwise at most n-1 positions are restored so that at least one
 *   token is computed and the logits are fresh. The PRNG is left alone (the
 *   caller's seed rules). Feeding the rest in the same chunks as the run that
 *   wrote the file gives bitwise the same logits. */
SL_API int sl_session_save(sl_session *s, const char *path);
SL_API int sl_session_load(sl_session *s, const char *path);
SL_API int sl_session_load_prefix(sl_session *s, const char *path, const int32_t *ids, int n,
                                  int32_t *n_reused);

/* ---- prefix reuse in memory (a server's prompt cache) ----------------------
 * A session that served one prompt keeps its cache; the next prompt that
 * starts with the same tokens keeps those positions instead of recomputing
 * them. Exact: the positions kept are only those a fresh prefill of the new
 * prompt would compute bitwise the same — rows written by prompt feeds in
 * whole n_batch chunks from a multiple of n_batch, and the count is rounded
 * down to a multiple of n_batch, so the rest is fed in the very chunks a fresh
 * prefill cuts. Rows of decoded tokens (another batch shape), rows a context
 * shift or the pressure window moved, rows restored from a file and positions
 * a sliding-window ring has dropped are never kept. Feeding ids[kept..n) then
 * gives bitwise the logits of a fresh session fed ids[0..n).
 * A model with recurrent layers keeps only what its state can restore: the
 * whole history, or the largest snapshot position at or below that count
 * (sl_model_params.rec_snapshots; without snapshots: all or nothing).
 * reusable: how many positions keep_prefix would keep (at most n - 1, so
 *   the logits are computed); nothing changes.
 * keep_prefix: keeps them (the cache, history and sampler history up to
 *   there; logits gone; the PRNG left alone) and drops the rest; 0: the
 *   session is reset. Returns the positions kept (sl_stats.n_reused adds them). */
SL_API int32_t sl_session_prefix_reusable(const sl_session *s, const int32_t *ids, int n);
SL_API int32_t sl_session_keep_prefix(sl_session *s, const int32_t *ids, int n);

/* ---- memory pressure -------------------------------------------------------
 * A ladder the session steps down when free memory runs short during a run,
 * without stopping the generation, and back up (with hysteresis) when memory
 * returns. Rungs, in order:
 *   EXPERTS   MoE with experts streamed: a smaller expert cache (the slots the
 *             eviction policy values least go, their pages back to the OS with
 *             MADV_DONTNEED; sl_stream_set_expert_slots), in steps of an eighth of
 *             it (at most 64 MiB), down to n_expert_used slots
 *   PINS      stream mode: unpin units (layers, lm-head chunks), last first (streamed
 *             from then on; each returns its buffer at once)
 *   SLOTS     stream mode: fewer streaming slots, down to min_slots
 *   KV_WINDOW keep the sinks (BOS / n_keep, as a context shift) and at most the
 *             last emergency_window positions: one context shift drops the older ones
 *             (those that halving shifts with sinks + window as the context would
 *             drop), the pages of the cache rows past them go back to the OS
 *             (MADV_DONTNEED), and from then on generation shifts within the window
 *             (also with context_shift off) instead of growing back. Stepping up
 *             lifts the cap (the full n_ctx again); dropped positions are gone for
 *             good. Batched decode (sl_batch) and speculation do not shift, so they
 *             ignore the window. sl_pressure_params.kv_window replaces the action.
 * The watcher polls a source of available bytes (default: MemAvailable from
 * /proc/meminfo, plus PSI /proc/pressure/memory "some avg10" above psi_avg10
 * counted as a shortage where the file exists) before a forward pass, at most
 * every interval_ms; sl_session_pressure_poll polls now. An app can instead (or
 * also) feed levels, e.g. Android's onTrimMemory: RUNNING_MODERATE ->
 * MODERATE (the EXPERTS rung and half the pins go), RUNNING_LOW -> LOW (EXPERTS and all pins), RUNNING_CRITICAL
 * and above -> CRITICAL (every rung); NONE lets the ladder climb again.
 * Resident and mmap modes have no PINS/SLOTS rungs (the kernel pages mmap). */
enum sl_pressure_level { SL_PRESSURE_NONE = 0, SL_PRESSURE_MODERATE, SL_PRESSURE_LOW, SL_PRESSURE_CRITICAL };
enum sl_pressure_rung { SL_RUNG_PINS = 1, SL_RUNG_SLOTS, SL_RUNG_KV_WINDOW, SL_RUNG_EXPERTS };

typedef struct sl_pressure_event {
    size_t struct_size;
    int dir;                /* -1 stepped down, +1 stepped up */
    int rung;               /* enum sl_pressure_rung */
    int32_t from, to;       /* pinned layers / slots / expert slots / KV positions held (down: before and after
                             * the shift; up: the window's cap and n_ctx) */
    int64_t avail_bytes;    /* what the source said (-1 for a fed level) */
    int64_t freed_bytes;    /* bytes given back (negative: taken; KV_WINDOW: resident pages) */
    int status;             /* 0, or why the rung could not act */
    double t_ms;            /* since sl_session_set_pressure */
} sl_pressure_event;
#define SL_PRESSURE_EVENT_MIN_SIZE SL_STRUCT_END(sl_pressure_event, t_ms)

/* Available bytes now, or < 0 if unknown (the poll then does nothing). */
typedef int64_t (*sl_pressure_source)(void *ctx);
typedef void (*sl_pressure_cb)(void *ctx, const sl_pressure_event *e);
/* KV_WINDOW rung: keep at most n positions past the sinks. 0, or a status. */
typedef int (*sl_pressure_kv_window_fn)(sl_session *s, int32_t n);

typedef struct sl_pressure_params {
    size_t struct_size;     /* sizeof, set by the _init function */
    uint64_t floor_bytes;   /* step down while available < floor (1 GiB) */
    uint64_t hysteresis_bytes; /* step up only while available > floor + this + the step's bytes (512 MiB) */
    float psi_avg10;        /* PSI "some avg10" (%) counted as a shortage (10; <= 0 off) */
    int32_t emergency_window; /* KV positions kept past the sinks by the last rung (256) */
    int32_t min_slots;      /* SLOTS rung floor (1) */
    double interval_ms;     /* automatic polls at most this often (100; 0 = only explicit polls) */
    sl_pressure_source source; void *source_ctx;   /* NULL = /proc */
    sl_pressure_cb on_step; void *step_ctx;        /* each step (also refused ones), or NULL */
    sl_pressure_kv_window_fn kv_window;            /* NULL = the engine's (context shift and release);
                                                    * an override is only called on the way down */
    const char *meminfo_path, *psi_path;           /* default source's files (NULL = /proc/...) */
} sl_pressure_params;
#define SL_PRESSURE_PARAMS_MIN_SIZE SL_STRUCT_END(sl_pressure_params, psi_path)
SL_API int sl_pressure_params_init_sized(sl_pressure_params *p, size_t struct_size);
static inline int sl_pressure_params_init(sl_pressure_params *p)
{ return sl_pressure_params_init_sized(p, sizeof *p); }
/* Turn the ladder on (p) or off (NULL: every rung is climbed back first). */
SL_API int sl_session_set_pressure(sl_session *s, const sl_pressure_params *p);
/* Poll the source now; returns the steps taken (>= 0) or a status. */
SL_API int sl_session_pressure_poll(sl_session *s);
/* Feed an external level (enum sl_pressure_level); returns the steps taken. */
SL_API int sl_session_pressure_level(sl_session *s, int level);

typedef struct sl_stats {
    int64_t n_prompt;       /* tokens fed through feed_* / eval */
    double  prompt_ms;      /* wall time of those forward passes */
    int64_t n_decode;       /* tokens fed by step */
    double  decode_ms;
    double  ttft_ms;        /* first feed start -> first token sampled */
    double  sample_ms;
    double  stall_ms;       /* time blocked waiting for weights (streamer) */
    uint64_t bytes_read;    /* weight bytes read from disk */
    double  compute_ms;     /* forward wall time minus stall */
    /* added in 0.3: MoE expert cache (zero unless experts are streamed) */
    uint64_t expert_hits, expert_misses;   /* requested experts found cached / read */
    uint64_t expert_bytes_read;            /* part of bytes_read */
    double  expert_stall_ms;               /* part of stall_ms */
    /* 0.3: prompt cache (sl_session_load*) */
    int64_t n_restored;     /* positions restored from cache files instead of computed */
    double  restore_ms;     /* wall time of those restores (counted in ttft_ms too) */
    /* 0.3: memory-pressure ladder */
    int64_t n_pressure_down, n_pressure_up;   /* steps taken */
    int32_t pressure_depth;  /* steps currently down */
    /* added after 0.2.0 */
    int64_t n_ctx_shift;    /* context shifts done (each drops half the unkept positions; the
                             * pressure window's first drops down to the window) */
    int64_t n_ctx_dropped;  /* positions those shifts dropped */
    /* appended after the first layout: the KV_WINDOW rung */
    int32_t pressure_kv_window;    /* positions the KV_WINDOW rung caps the cache at (sinks +
                                    * emergency_window), 0 when no window is set */
    uint64_t pressure_kv_released; /* resident KV cache bytes that rung gave back to the OS */
    /* added in 0.4: prefix reuse */
    int64_t n_reused;       /* positions sl_session_keep_prefix kept instead of recomputing */
    /* added in 0.4: MoE pre-gating (sl_model_params.moe_pregate) */
    uint64_t pregate_chosen;       /* experts chosen in layers whose experts were guessed */
    uint64_t pregate_guessed;      /* of them, guessed (the guess's accuracy: guessed / chosen) */
    uint64_t expert_prefetched;    /* experts read ahead on a guess (bytes in expert_bytes_read) */
    uint64_t expert_prefetch_used; /* of them, requested before being evicted */
    /* per-layer token embedding rows (gemma4) read from the model: the
     * row cache's misses (not part of bytes_read) */
    uint64_t ple_bytes_read;
} sl_stats;
#define SL_STATS_MIN_SIZE SL_STRUCT_END(sl_stats, compute_ms)   /* layout of 0.2.0 */
SL_API int sl_session_get_stats_sized(const sl_session *s, sl_stats *out, size_t size);
static inline int sl_session_get_stats(const sl_session *s, sl_stats *out)
{ return sl_session_get_stats_sized(s, out, sizeof *out); }
SL_API void sl_session_reset_stats(sl_session *s);

/* ---- decode profile -------------------------------------------------------
 * Where the time of a decode token goes: with profiling on, every decode
 * forward pass (sl_session_accept; not prompt feeds; also an sl_batch pass
 * the session leads as first member, its rows counted as tokens) and every
 * sample add the wall time of each op class on the calling thread, the weight bytes it read
 * and, per pool thread, the time spent inside the op's parallel jobs (the rest
 * of a pooled op's time is that thread waiting: wake-up and barrier). Off (the
 * default) it costs one branch per op. Ops of a class: */
enum sl_prof_op {
    SL_PROF_EMBD,       /* embedding row read + dequantize (bytes: the row) */
    SL_PROF_MV_Q, SL_PROF_MV_K, SL_PROF_MV_V, SL_PROF_MV_O,   /* attention matvecs */
    SL_PROF_MV_GATE, SL_PROF_MV_UP, SL_PROF_MV_DOWN,          /* FFN matvecs */
    SL_PROF_MV_HEAD,    /* lm head (output.weight or tied token_embd) */
    SL_PROF_MV_QKV,     /* q, k, v in one pool job (decode, same input type): instead of the three */
    SL_PROF_MV_GATE_UP, /* gate and up in one pool job: instead of the two */
    SL_PROF_MOE,        /* a MoE layer's FFN: router, experts, shared expert */
    SL_PROF_ATTN,       /* attention over the cache */
    SL_PROF_NORM,       /* RMS norms (block, q/k, output) */
    SL_PROF_ROPE,       /* q/k biases, rope, scales, cache-basis rotations */
    SL_PROF_KV,         /* KV cache writes and window ring */
    SL_PROF_QUANT,      /* activation quantization before a matvec */
    SL_PROF_ACT,        /* SiLU/GELU x up */
    SL_PROF_ADD,        /* residual adds, logit soft-cap */
    SL_PROF_STREAM,     /* unit acquire/release (I/O stall included) */
    SL_PROF_SAMPLE,     /* sl_session_sample */
    SL_PROF_N_OPS
};
#define SL_PROF_MAX_THREADS 16
typedef struct sl_profile {
    int64_t n_tokens;       /* decode tokens profiled */
    double forward_ms;      /* their wall time */
    int64_t n_samples;
    int32_t n_threads;      /* pool threads (figures for the first SL_PROF_MAX_THREADS) */
    double op_ms[SL_PROF_N_OPS];          /* wall time on the calling thread */
    uint64_t op_bytes[SL_PROF_N_OPS];     /* weight bytes read (matvecs, embedding rows) */
    uint64_t op_calls[SL_PROF_N_OPS];
    double thread_ms[SL_PROF_MAX_THREADS][SL_PROF_N_OPS];   /* inside pool jobs, per thread */
} sl_profile;
#define SL_PROFILE_MIN_SIZE SL_STRUCT_END(sl_profile, thread_ms)   /* first layout */
/* on: start profiling from zero (allocates once); off: stop (figures are kept). */
SL_API int sl_session_set_profile(sl_session *s, bool on);
/* SL_EINVAL when profiling was never turned on. */
SL_API int sl_session_get_profile_sized(const sl_session *s, sl_profile *out, size_t size);
static inline int sl_session_get_profile(const sl_session *s, sl_profile *out)
{ return sl_session_get_profile_sized(s, out, sizeof *out); }
/* "mv_q", "attn", ... (NULL out of range) */
SL_API const char *sl_prof_op_name(int op);

/* ---- pipeline stages -------------------------------------------------------
 * Several processes (or devices) each run some layers of one model and pass
 * the hidden state (n_embd floats per token row) on: engine/cli/ring/ does it over
 * MPI. A stage opens the model with params.layer_mask (its layers) and, when it
 * does not compute logits, no_head. For each chunk of n <= n_batch tokens at
 * positions pos0..pos0+n-1: the first stage embeds, every stage runs its
 * layers in order over the rows, the last one computes the logits of the last
 * row, and every stage then commits the n tokens (its cache holds them).
 * Chunks may overlap in the pipeline (chunk c+1 in the first layers while c is
 * in the last ones): a layer must see the chunks in position order.
 * With every layer in one process the tokens are those of sl_session_feed_tokens
 * and sl_session_step (same chunks, same kernels).
 *   embed: hidden[n][n_embd] = the tokens' embedding rows.
 *   forward_layers: layers [first, last) over hidden's n rows in place at
 *     positions pos0.. (attending to the positions before, which these layers
 *     hold), writing them to each layer's KV cache; n_past does not move.
 *     SL_EINVAL for a layer outside the mask or n > n_batch, SL_ECTX when the
 *     positions do not fit. Its stall and compute time count in sl_stats.
 *   head: output norm + lm head of one row -> the session's logits (sample).
 *   commit: n_past += n; ids are the tokens (the sampler's history).
 * No context shift happens here: a full cache is SL_ECTX. */
SL_API int sl_session_embed(sl_session *s, const int32_t *ids, int n, float *hidden);
SL_API int sl_session_forward_layers(sl_session *s, int32_t first, int32_t last, int32_t pos0, float *hidden,
                                     int n);
SL_API int sl_session_head(sl_session *s, const float *hidden);
SL_API int sl_session_commit(sl_session *s, const int32_t *ids, int n);

/* ---- batched decode (continuous batching) -------------------------------
 * A batch steps a set of sessions of one model with one pass over the
 * weights: each member contributes its next token as one row of the
 * matmuls and keeps its own KV cache, positions, sampler and logits. In
 * stream mode the rows ride on the same disk pass, so B sequences cost about
 * one pass. Sessions join (sl_batch_add, after their prompt was fed: they need
 * logits) and leave (sl_batch_remove) between steps; members are kept in join
 * order, which is the order of the tokens arrays. Up to 9 rows per pass a
 * member's logits are bitwise those of stepping it alone (same greedy tokens);
 * from 10 rows the panel kernels may differ in float rounding. More members
 * than the model's n_batch are run as several passes.
 * Threading: a batch belongs to its model; every batch call counts as a call
 * on the model (sluice.h top: no overlap with any other call on that model or
 * its sessions). A session may be a member of one batch at a time; destroy a
 * batch before its sessions (it does not own them) and its model.
 * Status: create SL_EINVAL/SL_ENOMEM; add SL_EINVAL (other model, already a
 * member, no logits yet), SL_ERANGE (max_seqs members already); remove
 * SL_ENOENT; step/accept as sl_session_step/accept for any member, plus
 * SL_ECTX naming the first member whose context is full (nothing fed then).
 * A failed pass leaves its members without logits (sl_session_errmsg says
 * why); re-feed or reset them. */
typedef struct sl_batch sl_batch;
typedef struct sl_batch_params {
    size_t struct_size;     /* sizeof, set by the _init function (versioned: README "Library") */
    int32_t max_seqs;       /* members at most; 0 = the model's n_batch */
} sl_batch_params;
#define SL_BATCH_PARAMS_MIN_SIZE SL_STRUCT_END(sl_batch_params, max_seqs)   /* first layout */
SL_API int sl_batch_params_init_sized(sl_batch_params *p, size_t struct_size);
static inline int sl_batch_params_init(sl_batch_params *p)
{ return sl_batch_params_init_sized(p, sizeof *p); }
SL_API int  sl_batch_create(sl_batch **out, sl_model *m, const sl_batch_params *p);
SL_API void sl_batch_destroy(sl_batch *b);
SL_API const char *sl_batch_errmsg(const sl_batch *b);
SL_API int  sl_batch_add(sl_batch *b, sl_session *s);
SL_API int  sl_batch_remove(sl_batch *b, sl_session *s);
SL_API int  sl_batch_n_seqs(const sl_batch *b);
/* Member i (join order), NULL outside 0..n_seqs-1. */
SL_API sl_session *sl_batch_session(const sl_batch *b, int i);
/* Feed tokens[i] to member i (a decode step each), all in one pass. */
SL_API int  sl_batch_accept(sl_batch *b, const int32_t *tokens);
/* Sample each member's next token with its own sampling settings (as
 * sl_session_sample), write it to tokens[i] and feed them all in one pass. */
SL_API int  sl_batch_step(sl_batch *b, int32_t *tokens);

typedef struct sl_batch_stats {
    int64_t n_passes;       /* forward passes run */
    int64_t n_rows;         /* tokens fed in them (sum over members) */
    double pass_ms;         /* wall time of those passes */
    double stall_ms;        /* of which blocked waiting for weights */
    uint64_t bytes_read;    /* weight bytes read from disk during them */
} sl_batch_stats;
#define SL_BATCH_STATS_MIN_SIZE SL_STRUCT_END(sl_batch_stats, bytes_read)   /* first layout */
SL_API int sl_batch_get_stats_sized(const sl_batch *b, sl_batch_stats *out, size_t size);
static inline int sl_batch_get_stats(const sl_batch *b, sl_batch_stats *out)
{ return sl_batch_get_stats_sized(b, out, sizeof *out); }

/* ---- speculative decoding -------------------------------------------------
 * sl_spec_step drafts k tokens, lets the target verify the sampled token plus
 * the k drafts in one pass (k+1 rows), keeps the longest accepted prefix and
 * rolls the KV cache back over the rest. Drafts come from
 *   SL_SPEC_NGRAM  n-gram lookup: the continuation of the most recent earlier
 *                  occurrence of the context's last n tokens (n_max down to n_min);
 *   SL_SPEC_DRAFT  a draft model: params.draft is a session of it (same
 *                  vocabulary: create compares every token's text and refuses
 *                  with SL_EINVAL naming the first differing id). Before each
 *                  pass the draft catches up with the target's context (the
 *                  longest common prefix is kept, the rest re-fed in one
 *                  prefill), then proposes k tokens one decode step each, with
 *                  the target's sampling settings (greedy: its argmax; else a
 *                  draw from its distribution q, which is recorded). After the
 *                  pass its cache is rolled back to the accepted prefix; the
 *                  correction token is fed to it at the next step (once the
 *                  context outgrows the draft's n_ctx, passes go on without
 *                  drafts). The time
 *                  in the draft counts in the target session's decode_ms
 *                  (its tok/s is what the user gets).
 *   SL_SPEC_MTP    the model's own NextN / MTP block (nextn_predict_layers;
 *                  SL_EUNSUPPORTED without; stream and mmap modes need the
 *                  model opened with params.keep_nextn): each token is drafted
 *                  by the block from the previous token's output-normed hidden
 *                  state and its own embedding, the block's attention over a
 *                  cache of its own that every pass of the session (prompt
 *                  included: create the spec before feeding it) fills with the
 *                  target's hidden states; drafts are the block's argmax
 *                  (certain drafts, as n-gram ones, when sampling). One MTP
 *                  spec per session; its time counts in draft_ms.
 * Greedy (temp <= 0): a draft is accepted when it is the target's argmax, so
 * the tokens are those of sl_session_step. Sampling: the standard rule —
 * accept d with probability min(1, p(d)/q(d)) (n-gram drafts: q(d) = 1), else
 * draw the next token from max(0, p - q) normalized (n-gram: p without d) —
 * so the output keeps the target distribution p. A pass ends at an
 * end-of-generation token (nothing after one is kept). k adapts: doubles after
 * a fully accepted pass, else falls to accepted + 1; k_max 0 picks 8 when the
 * target's weights stream (extra rows nearly free) and 4 when resident. At
 * most 8 drafts, so a pass stays below the 10 rows where kernels change rounding.
 * Threading: as the session's own calls; the draft session (and its model) is
 * driven by the spec between create and destroy: make no other call on it
 * then. It stays the caller's (destroy the spec first). sl_spec_sample: the
 * next token as sl_spec_step would begin with (the draw a rejection left
 * pending, else sl_session_sample), not fed — use it instead of
 * sl_session_sample when something else (sl_batch_accept, sl_session_accept)
 * feeds the session next, or a sampled run loses the target distribution.
 * Status: as sl_session_step; create SL_EINVAL (bad params, no draft session,
 * vocabularies differ), SL_EUNSUPPORTED (a tokenizer-less draft or target). */
enum sl_spec_kind { SL_SPEC_OFF = 0, SL_SPEC_NGRAM, SL_SPEC_DRAFT, SL_SPEC_MTP };
typedef struct sl_spec sl_spec;
typedef struct sl_spec_params {
    size_t struct_size;     /* sizeof, set by the _init function (versioned: README "Library") */
    int kind;               /* enum sl_spec_kind: SL_SPEC_NGRAM */
    int32_t k_max;          /* drafts per pass at most (0 = by mode, <= 8) */
    int32_t ngram_min;      /* 1 */
    int32_t ngram_max;      /* 3 */
    bool adaptive;          /* true; false: always k_max */
    /* appended after the first layout */
    sl_session *draft;      /* SL_SPEC_DRAFT: a session of the draft model (NULL) */
} sl_spec_params;
#define SL_SPEC_PARAMS_MIN_SIZE SL_STRUCT_END(sl_spec_params, adaptive)   /* first layout */
SL_API int sl_spec_params_init_sized(sl_spec_params *p, size_t struct_size);
static inline int sl_spec_params_init(sl_spec_params *p)
{ return sl_spec_params_init_sized(p, sizeof *p); }
SL_API int  sl_spec_create(sl_spec **out, sl_session *s, const sl_spec_params *p);
SL_API void sl_spec_destroy(sl_spec *sp);
SL_API const char *sl_spec_errmsg(const sl_spec *sp);
/* One verification pass: writes the 1..k+1 tokens it generated (all fed) to
 * tokens (cap >= 1; fewer drafts when cap is small) and their count to *n. */
SL_API int  sl_spec_step(sl_spec *sp, int32_t *tokens, int32_t cap, int32_t *n);
SL_API int  sl_spec_sample(sl_spec *sp, int32_t *token);   /* the pending draw (see above) */

typedef struct sl_spec_stats {
    int64_t n_passes;       /* verification (or plain) passes */
    int64_t n_drafted;      /* draft tokens verified */
    int64_t n_accepted;     /* of which accepted */
    int64_t n_tokens;       /* tokens generated (accepted + one per pass) */
    int32_t k;              /* the current draft length */
    /* appended after the first layout */
    double draft_ms;        /* wall time in the draft model (catch-up and proposals) */
    double verify_ms;       /* wall time of the target's verification passes */
} sl_spec_stats;
#define SL_SPEC_STATS_MIN_SIZE SL_STRUCT_END(sl_spec_stats, k)   /* first layout */
SL_API int sl_spec_get_stats_sized(const sl_spec *sp, sl_spec_stats *out, size_t size);
static inline int sl_spec_get_stats(const sl_spec *sp, sl_spec_stats *out)
{ return sl_spec_get_stats_sized(sp, out, sizeof *out); }

#ifdef __cplusplus
}
#endif
#endif
