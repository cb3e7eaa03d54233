/* Chat templates for programs that only see sluice.h (bindings): the model's
 * family by name, and rendering with the model's BOS/EOS texts. */
#include "sluice.h"

#include <stdlib.h>

#include "../gguf/base/sl_internal.h"
#include "chat.h"

const char *sl_model_chat_template(const sl_model *m)
{
    const char *j = m ? sl_model_meta_str(m, "tokenizer.chat_template") : NULL;
    enum sl_chat_tmpl t;
    return j && !sl_chat_detect(j, &t) && t != SL_CHAT_NONE ? sl_chat_name(t) : NULL;
}

int64_t sl_model_chat_render(const sl_model *m, const char *tmpl, const char *const *roles,
                             const char *const *contents, size_t n, bool add_generation_prompt,
                             char *out, size_t cap)
{
    if (!m || !tmpl || (n && (!roles || !contents)) || (cap && !out))
        return sl_err_set(SL_EINVAL, "chat render: NULL argument");
    enum sl_chat_tmpl t;
    int rc = sl_chat_from_name(tmpl, &t);
    if (rc) return rc;
    sl_model_info mi;
    char bos[256] = "", eos[256] = "";
    if ((rc = sl_model_get_info(m, &mi))) return rc;
    if (mi.bos_id >= 0 && sl_model_token_text(m, mi.bos_id, bos, sizeof bos) < 0) bos[0] = 0;
    if (mi.eos_id >= 0 && sl_model_token_text(m, mi.eos_id, eos, sizeof eos) < 0) eos[0] = 0;
    sl_chat_msg *ms = calloc(n ? n : 1, sizeof *ms);
    if (!ms) return sl_err_set(SL_ENOMEM, "chat render: out of memory");
    for (size_t i = 0; i < n; i++) ms[i] = (sl_chat_msg){ roles[i], contents[i] };
    int64_t len = sl_chat_render(t, ms, n, add_generation_prompt, bos, eos, out, cap);
    free(ms);
    return len;
}
