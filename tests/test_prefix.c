/* Prefix reuse in memory (sl_session_prefix_reusable / sl_session_keep_prefix,
 * engine/session.c): a session that served one prompt (and decoded after it)
 * keeps the positions a new prompt shares with it — only those a fresh prefill
 * computes bitwise the same — and the rest fed after them gives bitwise the
 * logits and the greedy continuation of a fresh session, for an F16 cache, a
 * q8_0 / q4_0 cache, gemma3's sliding-window rings and after a context shift.
 * The prompt lengths are chosen so that a reuse not rounded to whole n_batch
 * chunks would differ (different matmul tile shapes). */
#include "sl_test.h"
#include "session_testutil.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/sluice.h"
#include "../gguf/gguf_type.h"
#include "../gguf/base/sl_status.h"

#define MODELS SL_SHARED_DIR "/models"
#define NB 16   /* n_batch */

static sl_model *open_model(const char *path, int32_t n_ctx, int type_kv, bool shift)
{
    sl_model_params mp = st_params(n_ctx, NB, 2);
    mp.type_k = mp.type_v = type_kv;
    mp.context_shift = shift;
    mp.n_keep = 0;
    return st_open(path, &mp);
}

/* This file's prompts start one LCG step later than st_some_ids from the same seed. */
static void some_ids(int32_t *ids, int n, int32_t n_vocab, uint64_t seed)
{
    st_some_ids(ids, n, n_vocab, st_lcg(seed));
}

static int32_t n_vocab_of(sl_model *m)
{
    sl_model_info mi;
    sl_model_get_info(m, &mi);
    return mi.n_vocab;
}

/* s (reused) and a fresh session fed q[0..n) whole: the same logits, and the
 * same 6 greedy tokens (to gen, if not NULL) with the same logits after each. */
static void assert_same_as_fresh(sl_model *m, sl_session *s, const int32_t *q, int n, const char *what,
                                 int32_t *gen)
{
    int32_t nv = n_vocab_of(m);
    sl_session *f = st_session(m, true);
    cr_assert_eq(sl_session_feed_tokens(f, q, n), 0, "%s", sl_session_errmsg(f));
    for (int k = 0; k < 6; k++) {
        cr_assert_eq(memcmp(sl_session_logits(s), sl_session_logits(f), (size_t)nv * sizeof(float)), 0,
                     "%s: logits after %d generated tokens differ from a fresh prefill", what, k);
        int32_t a, b;
        cr_assert_eq(sl_session_step(s, &a), 0, "%s", sl_session_errmsg(s));
        cr_assert_eq(sl_session_step(f, &b), 0, "%s", sl_session_errmsg(f));
        cr_assert_eq(a, b, "%s: token %d", what, k);
        if (gen) gen[k] = a;
    }
    sl_session_destroy(f);
}

/* Serve the first prompt (prefill + 5 decoded tokens), then a second that
 * shares its first `share` tokens; then a third that continues the second
 * (prompt + its decoded tokens + more: a chat's next turn). */
static void reuse_case(const char *path, int type_kv, const char *what)
{
    sl_model *m = open_model(path, 256, type_kv, false);
    int32_t nv = n_vocab_of(m);
    enum { N1 = 75, SHARE = 53, N2 = 90 };
    int32_t p1[N1], p2[160];
    some_ids(p1, N1, nv, 7);
    some_ids(p2, N2, nv, 8);
    memcpy(p2, p1, SHARE * sizeof *p2);
    p2[SHARE] = p1[SHARE] == 5 ? 6 : 5;

    sl_session *s = st_session(m, true);
    cr_assert_eq(sl_session_keep_prefix(s, p1, N1), 0, "an empty session keeps nothing");
    cr_assert_eq(sl_session_feed_tokens(s, p1, N1), 0, "%s", sl_session_errmsg(s));
    int32_t t;
    for (int k = 0; k < 5; k++) cr_assert_eq(sl_session_step(s, &t), 0);

    /* the shared 53 positions, rounded down to whole chunks of 16 */
    int32_t r = sl_session_prefix_reusable(s, p2, N2);
    cr_assert_eq(r, SHARE / NB * NB, "%s: %d reusable", what, r);
    cr_assert_eq(sl_session_n_past(s), N1 + 5, "reusable changes nothing");
    cr_assert_eq(sl_session_keep_prefix(s, p2, N2), r);
    cr_assert_eq(sl_session_n_past(s), r);
    cr_assert_null(sl_session_logits(s));
    cr_assert_eq(sl_session_feed_tokens(s, p2 + r, N2 - r), 0, "%s", sl_session_errmsg(s));
    assert_same_as_fresh(m, s, p2, N2, what, p2 + N2);   /* s holds p2 + the 6 generated tokens */

    /* the next turn: p2, the 6 tokens generated after it, more. Only the
     * prompt's whole chunks are reusable (decoded rows are another batch shape). */
    int32_t n3 = N2 + 6 + 20;
    cr_assert_eq(sl_session_n_past(s), N2 + 6);
    some_ids(p2 + N2 + 6, 20, nv, 9);
    r = sl_session_keep_prefix(s, p2, n3);
    cr_assert_eq(r, N2 / NB * NB, "%s: next turn: %d kept", what, r);
    cr_assert_eq(sl_session_feed_tokens(s, p2 + r, n3 - r), 0, "%s", sl_session_errmsg(s));
    assert_same_as_fresh(m, s, p2, n3, what, NULL);

    /* the same prompt again: all but its last whole-chunk remainder */
    sl_session *h = st_session(m, true);
    cr_assert_eq(sl_session_feed_tokens(h, p2, N2), 0);
    r = sl_session_keep_prefix(h, p2, N2);
    cr_assert_eq(r, (N2 - 1) / NB * NB);
    cr_assert_eq(sl_session_feed_tokens(h, p2 + r, N2 - r), 0);
    assert_same_as_fresh(m, h, p2, N2, what, NULL);
    sl_stats st;
    cr_assert_eq(sl_session_get_stats(h, &st), 0);
    cr_assert_eq(st.n_reused, r);
    sl_session_destroy(h);

    /* nothing in common: the session is reset */
    some_ids(p2, 30, nv, 10);
    p2[0] = p1[0] + 1;
    cr_assert_eq(sl_session_keep_prefix(s, p2, 30), 0);
    cr_assert_eq(sl_session_n_past(s), 0);
    st_close(s, m);
}

Test(prefix, f16_equals_fresh, .timeout = 120)
{
    reuse_case(MODELS "/synth-tiny-q4_k.gguf", SL_GGML_F16, "synth-tiny f16");
}

Test(prefix, quantized_kv_equals_fresh, .timeout = 120)
{
    reuse_case(MODELS "/synth2-qwen3-q4_k_m.gguf", SL_GGML_Q8_0, "qwen3 q8_0");
    reuse_case(MODELS "/synth-tiny-q4_k.gguf", SL_GGML_Q4_0, "synth-tiny q4_0");
}

/* gemma3: its sliding-window layers keep a ring of window (16) - 1 + n_batch
 * rows; a prefix whose window the rings have moved past is not kept, one
 * they still hold is. */
Test(prefix, sliding_window_rings, .timeout = 120)
{
    sl_model *m = open_model(MODELS "/synth2-gemma3-q4_k_m.gguf", 256, SL_GGML_F16, false);
    int32_t nv = n_vocab_of(m), p[200], q[200];
    some_ids(p, 200, nv, 21);
    memcpy(q, p, sizeof q);
    q[40] = p[40] == 5 ? 6 : 5;   /* shares 40 positions; the rings hold only the last ~30 of 200 */
    sl_session *s = st_session(m, true);
    cr_assert_eq(sl_session_feed_tokens(s, p, 200), 0);
    cr_assert_eq(sl_session_prefix_reusable(s, q, 200), 0, "the rings dropped that window");
    cr_assert_eq(sl_session_keep_prefix(s, q, 200), 0);
    cr_assert_eq(sl_session_feed_tokens(s, q, 200), 0);
    /* the last chunk [192, 200) moved the rings to start at 192 - 15: a prefix
     * of 176 needs 161.. (gone), one of 192 needs 177.. (held) */
    q[180] = p[180] == 5 ? 6 : 5;
    cr_assert_eq(sl_session_prefix_reusable(s, q, 200), 0);
    memcpy(q, p, sizeof q);
    q[40] = p[40] == 5 ? 6 : 5;
    q[196] = p[196] == 5 ? 6 : 5;
    int32_t r = sl_session_keep_prefix(s, q, 200);
    cr_assert_eq(r, 192);
    cr_assert_eq(sl_session_feed_tokens(s, q + r, 200 - r), 0);
    assert_same_as_fresh(m, s, q, 200, "gemma3 recent prefix", NULL);
    st_close(s, m);
}

/* A context shift re-rotates the rows it keeps: past the sinks nothing is
 * kept, though the tokens match. */
Test(prefix, not_after_context_shift, .timeout = 120)
{
    sl_model *m = open_model(MODELS "/synth-tiny-q4_k.gguf", 64, SL_GGML_F16, true);
    int32_t nv = n_vocab_of(m), p[78], q[65];
    some_ids(p, 78, nv, 31);
    sl_session *s = st_session(m, true);
    cr_assert_eq(sl_session_feed_tokens(s, p, 48), 0);
    cr_assert_eq(sl_session_feed_tokens(s, p + 48, 30), 0);   /* does not fit: a shift first */
    sl_stats st;
    cr_assert_eq(sl_session_get_stats(s, &st), 0);
    cr_assert_eq(st.n_ctx_shift, 1);
    int32_t d = (int32_t)st.n_ctx_dropped;
    /* the cache now holds p[0], p[1 + d..78): that history as the next prompt */
    q[0] = p[0];
    memcpy(q + 1, p + 1 + d, (size_t)(77 - d) * sizeof *q);
    int nq = 1 + 77 - d;
    cr_assert_eq(sl_session_n_past(s), nq);
    q[nq] = 7; q[nq + 1] = 8;   /* + 6 generated: 64 at most, no second shift */
    cr_assert_leq(nq + 2 + 6, 64);
    cr_assert_eq(sl_session_prefix_reusable(s, q, nq + 2), 0, "rows a shift moved are not reused");
    cr_assert_eq(sl_session_keep_prefix(s, q, nq + 2), 0);
    cr_assert_eq(sl_session_feed_tokens(s, q, nq + 2), 0);
    assert_same_as_fresh(m, s, q, nq + 2, "after a shift", NULL);
    st_close(s, m);
}
