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
};

typedef struct sl_chat_msg {
    const char *role;      /* "system", "user", "assistant" */
    const char *content;
} sl_chat_msg;

/* Family of a Jinja template source. SL_EUNSUPPORTED (with a message) if none
 * is recognised, SL_EINVAL for NULL. */
int sl_chat_detect(const char *jinja, enum sl_chat_tmpl *out);
/* By name: "llama3", "chatml" (also "qwen3"), "qwen2" (or "qwen"), "qwen2.5",
 * "llama2", "mistral", "phi3", "gemma" (or "gemma3").
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

#endif
