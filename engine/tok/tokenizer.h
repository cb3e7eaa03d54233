/* Tokenizers read from GGUF metadata: SentencePiece-style (tokenizer.ggml.model
 * = "llama") and byte-level BPE ("gpt2", pre-tokenizer chosen by
 * tokenizer.ggml.pre). Behaviour matches llama.cpp's (commit c392e509) so that
 * token ids are interchangeable with it.
 *
 * A loaded sl_tok is immutable: any number of threads may encode/decode with
 * one handle at once (each call uses its own scratch memory).
 *
 * The files depend one way; each calls only into the rows above it:
 *   unicode_tables.c tok_pretok.c  code point flags, UTF-8, BPE pre-tokenizer splits
 *   tok_vocab.c                    load, text/merge hash tables, accessors
 *   tok_heap.c                     encoder scratch: growth, id list, merge-candidate queue
 *   tok_spm.c tok_bpe.c            raw-text fragment tokenizers (never call encode)
 *   tok_encode.c                   special tokens, BOS/EOS, dispatch to spm / bpe
 *   tok_detok.c                    ids -> text (vocab and UTF-8 only) */
#ifndef SL_TOKENIZER_H
#define SL_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl_gguf;

typedef struct sl_tok sl_tok;

enum sl_tok_kind { SL_TOK_SPM = 1, SL_TOK_BPE = 2 };

/* Token attributes (llama.cpp's token_type numbers in GGUF). */
enum sl_tok_type {
    SL_TOKT_UNDEFINED = 0, SL_TOKT_NORMAL = 1, SL_TOKT_UNKNOWN = 2,
    SL_TOKT_CONTROL = 3, SL_TOKT_USER_DEFINED = 4, SL_TOKT_UNUSED = 5,
    SL_TOKT_BYTE = 6,
};

/* Reads the tokenizer.* keys of g (g may be closed afterwards: everything is
 * copied). SL_EUNSUPPORTED for an unknown model or pre-tokenizer, SL_EFORMAT for
 * inconsistent metadata (array lengths, ids out of range), with a message. */
int sl_tok_create(sl_tok **out, const struct sl_gguf *g);
void sl_tok_destroy(sl_tok *t);

int sl_tok_kind(const sl_tok *t);             /* enum sl_tok_kind */
const char *sl_tok_pre_name(const sl_tok *t); /* "llama-bpe", ... or "" for SPM */
int32_t sl_tok_n_vocab(const sl_tok *t);
int32_t sl_tok_bos(const sl_tok *t);          /* -1 if none */
int32_t sl_tok_eos(const sl_tok *t);          /* -1 if none */
int32_t sl_tok_eot(const sl_tok *t);          /* end-of-turn (<|eot_id|>, <|im_end|>), -1 if none */
bool sl_tok_add_bos(const sl_tok *t);
bool sl_tok_add_eos(const sl_tok *t);
/* End of generation: EOS, EOT and other end tokens found in the vocabulary. */
bool sl_tok_is_eog(const sl_tok *t, int32_t id);
int sl_tok_type(const sl_tok *t, int32_t id);           /* enum sl_tok_type, -1 if out of range */
/* Raw vocabulary text of id (as stored, "▁" and byte-level encoding included). */
const char *sl_tok_text(const sl_tok *t, int32_t id, size_t *len);
/* Id of an exact vocabulary text, -1 if absent. */
int32_t sl_tok_find(const sl_tok *t, const char *text, size_t len);

/* Text -> ids. add_special: BOS (and EOS) as the metadata asks. parse_special:
 * texts of control / user-defined tokens in the input become those tokens;
 * otherwise they are tokenized as plain text. Returns the token count (which
 * may exceed cap: then only cap ids are written and the caller retries with a
 * larger buffer) or a negative SL_E* (SL_EINVAL for text that is not valid
 * UTF-8 is NOT returned: invalid bytes are tokenized like llama.cpp does). */
int64_t sl_tok_encode(const sl_tok *t, const char *text, size_t len, bool add_special,
                      bool parse_special, int32_t *ids, int64_t cap);

/* Text in which only some stretches may hold control tokens (a rendered chat:
 * the template's markup may, the messages may not): like parse_special =
 * true, except that a control or unknown token's text overlapping one of the
 * n_plain byte ranges plain[2i] .. plain[2i] + plain[2i+1] is tokenized as
 * text. User-defined tokens are parsed everywhere, as without parse_special.
 * SL_EINVAL for a range outside the text. */
int64_t sl_tok_encode_plain(const sl_tok *t, const char *text, size_t len, bool add_special,
                            const size_t *plain, size_t n_plain, int32_t *ids, int64_t cap);

/* The bytes id stands for: SPM "▁" -> " ", byte tokens <0xXX> -> that byte,
 * BPE byte-level characters -> their bytes. Control tokens render only if
 * special (their text), otherwise as nothing; user-defined tokens always
 * render their text. *len receives the full length; returns SL_ERANGE (and
 * writes nothing) if it exceeds cap, SL_EINVAL for an id out of range. */
int sl_tok_piece(const sl_tok *t, int32_t id, bool special, char *buf, size_t cap,
                 size_t *len);

/* Whole sequence -> text, like llama.cpp's llama_detokenize(remove_special =
 * false, unparse_special = special): for SPM the leading space of the first
 * word is kept. Returns the text length (may exceed cap: then nothing beyond
 * cap is written, no NUL) or negative SL_E*. If cap > length a NUL follows. */
int64_t sl_tok_decode(const sl_tok *t, const int32_t *ids, int64_t n, bool special,
                      char *out, size_t cap);

/* Streaming detokenizer: push ids one at a time; emits only complete UTF-8
 * sequences (holds a partial sequence until it completes; a byte that can
 * never become valid UTF-8 is emitted as U+FFFD). */
typedef struct sl_detok {
    unsigned char pend[8];   /* bytes of an incomplete UTF-8 sequence */
    uint32_t n_pend;
    bool special;            /* render control tokens */
} sl_detok;

void sl_detok_init(sl_detok *d, bool special);
/* Appends the text completed by id to out; *len = bytes written, at most
 * 3 * (piece length + 3) (invalid bytes expand to U+FFFD), so a buffer of
 * sl_tok_max_out(t) bytes always suffices; SL_DETOK_MAX_OUT does for every
 * vocabulary whose longest piece is at most 330 bytes (all real ones seen).
 * SL_ERANGE if cap is too small (state unchanged). */
#define SL_DETOK_MAX_OUT 1024
int sl_detok_push(sl_detok *d, const sl_tok *t, int32_t id, char *out, size_t cap,
                  size_t *len);
/* Output buffer size that sl_detok_push never exceeds for this vocabulary. */
size_t sl_tok_max_out(const sl_tok *t);
/* Heap bytes the loaded vocabulary holds (texts, scores, hashes, merges):
 * what the memory planner counts for it. */
uint64_t sl_tok_mem_bytes(const sl_tok *t);
/* Emits held bytes as one U+FFFD (end of stream). */
int sl_detok_flush(sl_detok *d, char *out, size_t cap, size_t *len);

#endif
