/* Chat templates for programs that only see sluice.h (bindings): the model's
 * family by name, rendering with the model's BOS/EOS texts, and a rendered
 * chat's tokens with control tokens only from the template. */
#include "sluice.h"

#include <stdlib.h>

#include "../gguf/base/sl_internal.h"
#include "chat.h"
#include "model_handle.h"

const char *sl_model_chat_template(const sl_model *m)
{
    const char *j = m ? sl_model_meta_str(m, "tokenizer.chat_template") : NULL;
    enum sl_chat_tmpl t;
    return j && !sl_chat_detect(j, &t) && t != SL_CHAT_NONE ? sl_chat_name(t) : NULL;
}

/* The arguments both calls take, as the renderer's: family, options with the
 * model's BOS/EOS texts (in bos/eos), messages (*ms, to free). */
static int chat_args(const sl_model *m, const char *tmpl, const char *const *roles, const char *const *contents,
                     size_t n, bool add_generation_prompt, enum sl_chat_tmpl *t, sl_chat_opts *o,
                     char bos[256], char eos[256], sl_chat_msg **ms)
{
    *ms = NULL;
    if (!m || !tmpl || (n && (!roles || !contents)))
        return sl_err_set(SL_EINVAL, "chat render: NULL argument");
    int rc = sl_chat_from_name(tmpl, t);
    if (rc) return rc;
    sl_model_info mi;
    bos[0] = eos[0] = 0;
    if ((rc = sl_model_get_info(m, &mi))) return rc;
    if (mi.bos_id >= 0 && sl_model_token_text(m, mi.bos_id, bos, 256) < 0) bos[0] = 0;
    if (mi.eos_id >= 0 && sl_model_token_text(m, mi.eos_id, eos, 256) < 0) eos[0] = 0;
    *o = (sl_chat_opts){ .add_generation_prompt = add_generation_prompt, .bos = bos, .eos = eos };
    if (!(*ms = calloc(n ? n : 1, sizeof **ms))) return sl_err_set(SL_ENOMEM, "chat render: out of memory");
    for (size_t i = 0; i < n; i++) (*ms)[i] = (sl_chat_msg){ roles[i], contents[i] };
    return 0;
}

int64_t sl_model_chat_render(const sl_model *m, const char *tmpl, const char *const *roles,
                             const char *const *contents, size_t n, bool add_generation_prompt,
                             char *out, size_t cap)
{
    if (cap && !out) return sl_err_set(SL_EINVAL, "chat render: NULL argument");
    enum sl_chat_tmpl t;
    sl_chat_opts o;
    char bos[256], eos[256];
    sl_chat_msg *ms;
    int rc = chat_args(m, tmpl, roles, contents, n, add_generation_prompt, &t, &o, bos, eos, &ms);
    int64_t len = rc ? rc : sl_chat_render_opts(t, ms, n, &o, out, cap);
    free(ms);
    return len;
}

int sl_model_chat_tokenize(sl_model *m, const char *tmpl, const char *const *roles, const char *const *contents,
                           size_t n, bool add_generation_prompt, bool special_in_content, int32_t *ids, int cap)
{
    if (cap < 0 || (cap && !ids)) return sl_err_set(SL_EINVAL, "chat tokenize: bad buffer");
    enum sl_chat_tmpl t;
    sl_chat_opts o;
    char bos[256], eos[256];
    sl_chat_msg *ms;
    sl_chat_rendered r = { 0 };
    int rc = chat_args(m, tmpl, roles, contents, n, add_generation_prompt, &t, &o, bos, eos, &ms);
    if (!rc) rc = sl_chat_render_alloc(t, ms, n, &o, &r);
    if (!rc) rc = sl_model_need_tok(m);
    int64_t k = rc;
    if (!rc)   /* BOS comes from the text */
        k = special_in_content ? sl_tok_encode(m->tok, r.text, r.len, false, true, ids, cap)
                               : sl_tok_encode_plain(m->tok, r.text, r.len, false, r.spans, r.n_spans, ids, cap);
    if (k > INT32_MAX) k = sl_err_set(SL_ERANGE, "chat tokenize: %lld tokens", (long long)k);
    free(ms);
    sl_chat_rendered_free(&r);
    return (int)k;
}
