/* sl_session_logprobs and the chat-template calls of sluice.h: the log
 * probabilities are the sampler's distribution after the session's settings
 * (the raw softmax when nothing filters), sorted, and computing them changes
 * neither the next sample nor the PRNG; chat rendering by family name with the
 * model's BOS/EOS, and the errors of both. */
#include "sl_test.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../engine/sluice.h"
#include "../gguf/base/sl_status.h"

#define S260 SL_SHARED_DIR "/models/stories260K.gguf"

static sl_model *open_s260(void)
{
    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.n_ctx = 64;
    mp.n_threads = 1;
    sl_model *m = NULL;
    cr_assert_eq(sl_model_open(&m, S260, &mp), 0, "open: %s", sl_last_error());
    return m;
}

static sl_session *session(sl_model *m, float temp, int32_t top_k, float top_p, float min_p, uint64_t seed)
{
    sl_session *s = NULL;
    cr_assert_eq(sl_session_create(&s, m), 0);
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = temp; sp.top_k = top_k; sp.top_p = top_p; sp.min_p = min_p; sp.seed = seed;
    cr_assert_eq(sl_session_set_sampling(s, &sp), 0);
    cr_assert_eq(sl_session_feed_text(s, "Once upon a time", false), 0, "%s", sl_session_errmsg(s));
    return s;
}

Test(logprobs, unfiltered_is_the_softmax_of_the_logits)
{
    sl_model *m = open_s260();
    sl_session *s = session(m, 0, 0, 1, 0, 1);   /* greedy: reported at temperature 1 */
    sl_model_info mi;
    sl_model_get_info(m, &mi);
    const float *l = sl_session_logits(s);
    double mx = l[0], z = 0;
    for (int32_t i = 1; i < mi.n_vocab; i++) if (l[i] > mx) mx = l[i];
    for (int32_t i = 0; i < mi.n_vocab; i++) z += exp(l[i] - mx);
    int32_t ids[8], tok;
    float lps[8], tlp;
    cr_assert_eq(sl_session_sample(s, &tok), 0);
    cr_assert_eq(sl_session_logprobs(s, tok, 8, ids, lps, &tlp), 8);
    cr_assert_eq(ids[0], tok, "greedy picks the most likely");
    cr_assert_float_eq(tlp, lps[0], 0);
    for (int i = 0; i < 8; i++) {
        cr_assert_float_eq(lps[i], l[ids[i]] - mx - log(z), 1e-4, "token %d", ids[i]);
        if (i) cr_assert_geq(lps[i - 1], lps[i], "sorted");
    }
    sl_session_destroy(s);
    sl_model_close(m);
}

Test(logprobs, after_the_filters_and_without_side_effects)
{
    sl_model *m = open_s260();
    sl_session *a = session(m, 0.8f, 1, 1, 0, 5);   /* top_k 1: one token, probability 1 */
    int32_t ids[4], tok;
    float lps[4], tlp;
    cr_assert_eq(sl_session_sample(a, &tok), 0);
    cr_assert_eq(sl_session_logprobs(a, tok, 4, ids, lps, &tlp), 1);
    cr_assert_float_eq(tlp, 0, 1e-6);
    cr_assert_eq(sl_session_logprobs(a, (tok + 1) % 512, 0, NULL, NULL, &tlp), 0);
    cr_assert(isinf(tlp) && tlp < 0, "a filtered token: -inf");
    sl_session_destroy(a);
    /* seeded sampling draws the same tokens with logprobs asked before each one */
    sl_session *x = session(m, 0.9f, 40, 0.95f, 0.05f, 42), *y = session(m, 0.9f, 40, 0.95f, 0.05f, 42);
    for (int i = 0; i < 12; i++) {
        int32_t tx, ty;
        cr_assert_eq(sl_session_sample(x, &tx), 0);
        int k = sl_session_logprobs(y, tx, 4, ids, lps, &tlp);
        cr_assert(k >= 1 && k <= 4, "%d pairs", k);
        cr_assert_eq(sl_session_sample(y, &ty), 0);
        cr_assert_eq(tx, ty, "step %d", i);
        cr_assert(isfinite(tlp) && tlp <= lps[0] + 1e-6f, "the drawn token is in the distribution: %f", tlp);
        cr_assert_eq(sl_session_accept(x, tx), 0);
        cr_assert_eq(sl_session_accept(y, ty), 0);
    }
    sl_session_destroy(x);
    sl_session_destroy(y);
    sl_model_close(m);
}

Test(logprobs, errors)
{
    sl_model *m = open_s260();
    sl_session *s = NULL;
    cr_assert_eq(sl_session_create(&s, m), 0);
    float tlp;
    int32_t id;
    float lp;
    cr_assert_eq(sl_session_logprobs(s, 5, 1, &id, &lp, &tlp), SL_EINVAL);
    cr_assert(strstr(sl_last_error(), "no logits"), "%s", sl_last_error());
    cr_assert_eq(sl_session_feed_text(s, "Once", false), 0);
    cr_assert_eq(sl_session_logprobs(s, 512, 1, &id, &lp, &tlp), SL_EINVAL);
    cr_assert_eq(sl_session_logprobs(s, -1, 1, &id, &lp, &tlp), SL_EINVAL);
    cr_assert_eq(sl_session_logprobs(s, 5, 1, NULL, &lp, &tlp), SL_EINVAL);
    cr_assert_eq(sl_session_logprobs(s, 5, -1, &id, &lp, &tlp), SL_EINVAL);
    cr_assert_eq(sl_session_logprobs(s, 5, 1, &id, &lp, NULL), SL_EINVAL);
    sl_session_destroy(s);
    sl_model_close(m);
}

Test(chat_api, render_by_name_with_the_models_tokens)
{
    sl_model *m = open_s260();
    cr_assert_null(sl_model_chat_template(m), "stories260K has no chat template");
    const char *roles[] = { "system", "user" }, *contents[] = { "Be brief.", "Hi" };
    const char *want = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                       "<|im_start|>assistant\n";
    int64_t n = sl_model_chat_render(m, "chatml", roles, contents, 2, true, NULL, 0);
    cr_assert_eq(n, (int64_t)strlen(want));
    char out[256];
    cr_assert_eq(sl_model_chat_render(m, "chatml", roles, contents, 2, true, out, sizeof out), n);
    cr_assert_str_eq(out, want);
    /* llama2 writes the model's BOS text */
    cr_assert_gt(sl_model_chat_render(m, "llama2", roles + 1, contents + 1, 1, true, out, sizeof out), 0);
    cr_assert(!strncmp(out, "<s>[INST]", 9), "%s", out);
    cr_assert_eq(sl_model_chat_render(m, "nonesuch", roles, contents, 2, true, out, sizeof out), SL_EUNSUPPORTED);
    const char *bad[] = { "tool" };
    cr_assert_eq(sl_model_chat_render(m, "chatml", bad, contents, 1, true, out, sizeof out), SL_EINVAL);
    cr_assert_eq(sl_model_chat_render(NULL, "chatml", roles, contents, 2, true, out, sizeof out), SL_EINVAL);
    cr_assert_null(sl_model_chat_template(NULL));
    sl_model_close(m);
}
