/* Chat templates: recognises the template family from tokenizer.chat_template
 * (a Jinja source, matched by distinctive substrings, never executed) and
 * renders messages the way that template does. */
#ifndef SL_CHAT_H
#define SL_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sl_chat_tmpl {
    SL_CHAT_NONE = 0,
    SL_CHAT_LLAMA3,     /* <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
    SL_CHAT_CHATML,     /* <|im_start|>role\n...<|im_end|>\n  (Qwen, many others) */
    SL_CHAT_LLAMA2,     /* [INST] <<SYS>>...<</SYS>> ... [/INST] (Llama-2 chat) */
    SL_CHAT_MISTRAL,    /* [INST] ... [/INST] (Mistral-7B-Instruct v0.2, no <<SYS>>) */
    SL_CHAT_QWEN2,      /* ChatML + default system "You are a helpful assistant." */
    SL_CHAT_QWEN25,     /* ChatML + default system "You are Qwen, created by Alibaba Cloud. ..." */
    SL_CHAT_PHI3,       /* bos <|user|>\n...<|end|>\n<|assistant|>\n...<|end|>\n (Phi-3-mini) */
    SL_CHAT_GEMMA,      /* bos <start_of_turn>user\n...<end_of_turn>\n<start_of_turn>model\n (Gemma 3) */
    SL_CHAT_HARMONY,    /* <|start|>role<|message|>...<|end|> with channels (gpt-oss) */
    SL_CHAT_HARMONY_TRIM, /* the same, from the template revision without "\n\n" after the developer text */
    SL_CHAT_GEMMA4,     /* bos <|turn>user\n...<turn|>\n<|turn>model\n (Gemma 4, thinking off) */
};

typedef struct sl_chat_msg {
    const char *role;      /* "system", "user", "assistant" */
    const char *content;
} sl_chat_msg;

/* Where rendered text came from a message (not from the template): byte
 * ranges as (offset, length) pairs, for sl_model_tokenize_plain. A rendering
 * has at most n + 1 of them for n messages. */
typedef struct sl_chat_spans {
    size_t *v;             /* 2 * cap entries (may be NULL with cap 0) */
    size_t cap, n;         /* n: how many the rendering has (may exceed cap) */
} sl_chat_spans;

/* What a rendering needs beyond the messages. */
typedef struct sl_chat_opts {
    bool add_generation_prompt;   /* open the assistant turn */
    const char *bos, *eos;        /* the vocabulary's texts ("<s>"); NULL = "" */
    const char *reasoning_effort; /* Harmony: "low" | "medium" | "high"; NULL = "medium" */
    const char *date;             /* Harmony: "YYYY-MM-DD"; NULL = today (local time) */
    sl_chat_spans *spans;         /* NULL: not wanted */
} sl_chat_opts;

/* Family of a Jinja template source. SL_EUNSUPPORTED (with a message) if none
 * is recognised, SL_EINVAL for NULL. */
int sl_chat_detect(const char *jinja, enum sl_chat_tmpl *out);
/* By name: "llama3", "chatml" (also "qwen3"), "qwen2" (or "qwen"), "qwen2.5",
 * "llama2", "mistral", "phi3", "gemma" (or "gemma3"), "gemma4", "harmony" (or "gpt-oss"),
 * "harmony-trim".
 * SL_EUNSUPPORTED for others. */
int sl_chat_from_name(const char *name, enum sl_chat_tmpl *out);
const char *sl_chat_name(enum sl_chat_tmpl t);

/* Renders msgs exactly as the family's published Jinja template does, with
 * bos_token = bos and eos_token = eos (the vocabulary's texts, e.g. "<s>",
 * "<|begin_of_text|>"; NULL = ""), and, if add_generation_prompt, the opening
 * of the assistant turn. The text contains special-token texts: tokenize it
 * with add_special = false, parse_special = true (BOS comes from the text).
 * Where the Jinja raises an exception (roles out of order) we render anyway;
 * MISTRAL has no system role: a system message is prepended to the next user
 * message followed by a blank line; PHI3 drops system messages (its template
 * has no branch for them) and opens the assistant turn after every user turn
 * (add_generation_prompt changes nothing). Jinja's trim/strip is applied where the
 * template applies it (ASCII whitespace). Roles other than
 * system/user/assistant -> SL_EINVAL. Returns the length
 * (may exceed cap: nothing beyond cap is written; if cap > length a NUL
 * follows) or a negative SL_E*. */
int64_t sl_chat_render(enum sl_chat_tmpl t, const sl_chat_msg *msgs, size_t n,
                       bool add_generation_prompt, const char *bos, const char *eos,
                       char *out, size_t cap);
/* The same with options; o->spans (if given) receives where the messages'
 * text lies, so that only the template's markup is read for control tokens.
 * HARMONY as gpt-oss's template: a system message with the model identity,
 * knowledge cutoff, date and "Reasoning: <effort>"; a first system message
 * becomes the developer message ("# Instructions\n\n..."); later system
 * messages are dropped; past assistant turns render as their final channel
 * (<|end|>; the last one <|return|> without add_generation_prompt); the
 * generation prompt is "<|start|>assistant". A reasoning effort other than
 * low/medium/high -> SL_EINVAL. */
int64_t sl_chat_render_opts(enum sl_chat_tmpl t, const sl_chat_msg *msgs, size_t n,
                            const sl_chat_opts *o, char *out, size_t cap);
/* A rendering in buffers of its own: text (NUL-terminated) and the messages'
 * ranges (sl_chat_spans' pairs). */
typedef struct sl_chat_rendered {
    char *text;
    size_t len;
    size_t *spans;         /* 2 * n_spans entries */
    size_t n_spans;
} sl_chat_rendered;
/* sl_chat_render_opts into *r (o->spans is not used); 0 or a negative SL_E*,
 * *r then empty. Free with sl_chat_rendered_free. */
int sl_chat_render_alloc(enum sl_chat_tmpl t, const sl_chat_msg *msgs, size_t n, const sl_chat_opts *o,
                         sl_chat_rendered *r);
void sl_chat_rendered_free(sl_chat_rendered *r);
/* Whether the family answers in Harmony channels (parse with sl_harmony_*). */
bool sl_chat_has_channels(enum sl_chat_tmpl t);

/* ---- Harmony replies (engine/chat_harmony.c) -------------------------------
 * A reply after "<|start|>assistant" is a sequence of messages:
 * <|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final
 * <|message|>...<|return|> (or <|call|> after a tool call). The parser follows
 * it piece by piece: control tokens are pushed as markers (their text), the
 * rest as text; each text piece is reported with the channel it belongs to,
 * or SL_HARMONY_NONE for header text (role, channel name, recipient). */
enum sl_harmony_channel {
    SL_HARMONY_NONE = 0, SL_HARMONY_ANALYSIS, SL_HARMONY_COMMENTARY, SL_HARMONY_FINAL,
};

typedef struct sl_harmony {
    int state;              /* header, body, done */
    int channel;            /* of the body being read */
    bool in_channel_name;   /* header text after <|channel|> */
    char name[16];          /* the channel name read so far */
    size_t n_name;
} sl_harmony;

void sl_harmony_init(sl_harmony *h);
/* A piece of the reply: marker = the text of a control token ("<|end|>").
 * Returns the channel text belongs to (markers and header text: NONE). */
int sl_harmony_push(sl_harmony *h, const char *s, size_t len, bool marker);
/* Whether the reply is over (<|return|> or <|call|> seen). */
bool sl_harmony_done(const sl_harmony *h);
/* A whole reply as text with the markers written out (as a detokenizer that
 * renders control tokens gives it): appends the final channel to final_out
 * and the analysis channel to analysis_out (each: cap bytes, NUL-terminated;
 * longer text is cut). Returns 0. */
int sl_harmony_split(const char *text, size_t len, char *final_out, size_t final_cap,
                     char *analysis_out, size_t analysis_cap);

#endif
