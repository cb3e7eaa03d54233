/* Log probabilities of the next token (sluice.h "log probabilities"): the
 * sampler's own distribution, so a server reports what the request's
 * settings made of the logits, not the raw softmax. */
#include "sluice.h"

#include <math.h>

#include "../gguf/base/sl_internal.h"
#include "session_obj.h"

int sl_session_logprobs(sl_session *s, int32_t token, int32_t k, int32_t *ids, float *lps, float *token_lp)
{
    if (!s || !token_lp || k < 0 || (k > 0 && (!ids || !lps)))
        return sl_err_set(SL_EINVAL, "logprobs: NULL argument or negative count");
    int32_t n_vocab = s->m->d.n_vocab;
    if (token < 0 || token >= n_vocab)
        return sl_err_set(SL_EINVAL, "logprobs: token %d outside the vocabulary (%d)", token, n_vocab);
    if (!s->have_logits) return sl_err_set(SL_EINVAL, "logprobs: no logits yet (feed a prompt first)");
    /* the session's sampler on its own scratch (nothing it keeps between calls);
     * greedy is a point mass: its distribution at temperature 1 says more */
    sl_sampler smp = s->smp;
    if (!(smp.p.temp > 0)) smp.p.temp = 1.0f;
    double sum;
    int32_t m = sl_sampler_dist(&smp, s->logits, s->hist, sl_session_n_past(s),
                                &sum);
    double lsum = log(sum);
    *token_lp = -INFINITY;
    for (int32_t i = 0; i < m; i++) {
        float lp = (float)(log(smp.prob[i]) - lsum);
        if (i < k) { ids[i] = smp.cand[i].id; lps[i] = lp; }
        if (smp.cand[i].id == token) *token_lp = lp;
    }
    return m < k ? m : k;
}
