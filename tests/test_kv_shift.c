/* Context shift through the session: a generation 4x longer than n_ctx
 * completes for every cache type (and on gemma3, whose sliding-window
 * layers rotate with their own rope base); after a shift the kept positions
 * attend as if computed fresh at their new positions. The golden README
 * documents no context-shift run of llama.cpp, so the reference is a fresh
 * session fed the kept tokens: exact only for a one-layer model (in deeper
 * layers a kept token's K/V were computed with the dropped tokens in its
 * context, in llama.cpp too); the cache rows themselves, for every type and
 * layer, are checked by tests/test_kv.c (shift_rotates_kept_rows). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_test.h"
#include "session_testutil.h"
#include "../engine/sluice.h"
#include "../gguf/gguf_type.h"
#include "../gguf/base/sl_status.h"

#define MODELS SL_SHARED_DIR "/models"

static sl_model *open_kv(const char *path, int32_t n_ctx, int type, int32_t n_keep)
{
    sl_model_params mp = st_params(n_ctx, 0, 2);
    mp.type_k = mp.type_v = type;
    mp.n_keep = n_keep;
    mp.context_shift = true;
    return st_open(path, &mp);
}

static void ids_for(int32_t *ids, int n, int32_t n_vocab)
{
    uint64_t x = 7;
    ids[0] = 1;   /* BOS of these vocabularies */
    for (int i = 1; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = 3 + (int32_t)((x >> 33) % (uint64_t)(n_vocab - 3));
    }
}

Test(kv_shift, run_4x_n_ctx, .timeout = 120)
{
    static const struct { const char *model; int type; } runs[] = {
        { MODELS "/stories260K.gguf", SL_GGML_F16 },
        { MODELS "/synth-tiny-q8_0.gguf", SL_GGML_Q8_0 },
        { MODELS "/synth-tiny-q8_0.gguf", SL_GGML_Q4_0 },
        { MODELS "/synth2-gemma3-q4_k_m.gguf", SL_GGML_Q8_0 },
    };
    enum { C = 32 };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        sl_model *m = open_kv(runs[r].model, C, runs[r].type, 0);
        sl_model_info mi;
        sl_model_get_info(m, &mi);
        sl_session *s = st_session(m, false);
        int32_t ids[5], t;
        ids_for(ids, 5, mi.n_vocab);
        cr_assert_eq(sl_session_feed_tokens(s, ids, 5), 0, "%s", sl_session_errmsg(s));
        for (int i = 0; i < 4 * C; i++) {
            cr_assert_eq(sl_session_step(s, &t), 0, "%s step %d: %s", runs[r].model, i, sl_session_errmsg(s));
            cr_assert_leq(sl_session_n_past(s), C);
            cr_assert_geq(t, 0);
        }
        sl_stats st;
        sl_session_get_stats(s, &st);
        /* from 32 full: keep BOS, drop 15, refill 15 ... */
        cr_assert_geq(st.n_ctx_shift, 7, "%s: %lld shifts", runs[r].model, (long long)st.n_ctx_shift);
        cr_assert_eq(st.n_ctx_dropped + sl_session_n_past(s), 5 + 4 * C);
        st_close(s, m);
    }
}

/* Largest |a - b| over the vocabulary, in units of b's standard deviation. */
static double dev_sd(const float *a, const float *b, int n)
{
    double mean = 0, var = 0, mx = 0;
    for (int i = 0; i < n; i++) mean += b[i];
    mean /= n;
    for (int i = 0; i < n; i++) var += (b[i] - mean) * (b[i] - mean);
    double sd = sqrt(var / n);
    for (int i = 0; i < n; i++) mx = fmax(mx, fabs((double)a[i] - b[i]));
    return mx / sd;
}

/* llama-2-tiny-random (one layer, F16 only: head_dim 4): n_ctx 24, 24 tokens
 * fed, then one more: the shift keeps BOS (+ n_keep, or the first prompt),
 * drops half of the rest; the new token's logits must match a fresh session
 * fed exactly the kept tokens and the new one, up to the F16 re-rounding of
 * the re-rotated K. This model's logits hardly depend on attention (golden
 * README: nearly flat, sd 0.056): rotating by +n_discard instead moves them
 * by 3e-4..9e-4 sd, the correct shift by < 1e-5. */
Test(kv_shift, kept_positions_attend_unchanged, .timeout = 120)
{
    static const struct { int type; int32_t keep; double bound; } cases[] = {
        { SL_GGML_F16, 0, 5e-5 }, { SL_GGML_F16, 3, 5e-5 }, { SL_GGML_F16, -1, 5e-5 },
    };
    enum { C = 24, P0 = 6 };   /* P0: the first prompt's length (n_keep -1) */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sl_model *m = open_kv(MODELS "/llama-2-tiny-random.gguf", C, cases[c].type, cases[c].keep);
        sl_model_info mi;
        sl_model_get_info(m, &mi);
        const int V = mi.n_vocab;
        int32_t ids[C + 1];
        ids_for(ids, C + 1, V);
        sl_session *a = st_session(m, false), *b = st_session(m, false);
        cr_assert_eq(sl_session_feed_tokens(a, ids, P0), 0);
        cr_assert_eq(sl_session_feed_tokens(a, ids + P0, C - P0), 0);
        cr_assert_eq(sl_session_n_past(a), C);
        cr_assert_eq(sl_session_feed_tokens(a, ids + C, 1), 0, "%s", sl_session_errmsg(a));
        int32_t keep = cases[c].keep < 0 ? P0 : 1 + cases[c].keep, drop = (C - keep) / 2;
        cr_assert_eq(sl_session_n_past(a), C - drop + 1);
        /* the fresh computation of what the shifted cache holds */
        int32_t kept[C + 1];
        int nk = 0;
        for (int i = 0; i < keep; i++) kept[nk++] = ids[i];
        for (int i = keep + drop; i <= C; i++) kept[nk++] = ids[i];
        cr_assert_eq(sl_session_feed_tokens(b, kept, nk), 0);
        double d = dev_sd(sl_session_logits(a), sl_session_logits(b), V);
        cr_log_info("%s keep %d: after the shift max %.2e sd from a fresh run (bound %.0e)",
                    sl_gguf_type_name((uint32_t)cases[c].type), (int)cases[c].keep, d, cases[c].bound);
        cr_assert_leq(d, cases[c].bound, "%s keep %d: %.4f sd", sl_gguf_type_name((uint32_t)cases[c].type),
                      (int)cases[c].keep, d);
        sl_session_destroy(a);
        sl_session_destroy(b);
        sl_model_close(m);
    }
}

/* A prompt that cannot fit even after a shift still fails, nothing fed. */
Test(kv_shift, prompt_longer_than_context)
{
    sl_model *m = open_kv(MODELS "/stories260K.gguf", 16, SL_GGML_F16, 0);
    sl_session *s = st_session(m, false);
    int32_t ids[17];
    ids_for(ids, 17, 512);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 17), SL_ECTX);
    cr_assert_eq(sl_session_n_past(s), 0);
    st_close(s, m);
}

/* gemma3's five sliding-window layers keep a ring of their window (16) plus
 * a prompt chunk: the cache no longer grows with n_ctx in those layers. */
Test(kv_shift, window_layers_bounded)
{
    sl_model_params mp = st_params(4096, 64, 2);
    sl_model *m = st_open(MODELS "/synth2-gemma3-q4_k_m.gguf", &mp);
    sl_model_info mi;
    sl_model_get_info(m, &mi);
    uint64_t per_layer_pos = mi.kv_pos_bytes / (uint64_t)mi.n_layer;
    /* 1 global layer x 4096 + 5 window layers x (15 + 64) positions */
    cr_assert_eq(mi.kv_bytes, per_layer_pos * (4096 + 5 * 79), "%llu", (unsigned long long)mi.kv_bytes);
    sl_model_close(m);
}

/* CVE-2026-21869 (a negative n_discard reached llama.cpp's context shift)
 * through the session's own parameters: n_keep below -1 is refused at open,
 * and n_keep INT32_MAX (BOS makes it one
 * more) keeps everything, so a feed that does not fit is SL_ECTX with the
 * cache untouched instead of a shift with a wrapped range. */
Test(kv_shift, CVE_2026_21869_n_keep_n_discard_out_of_range_refused)
{
    sl_model_params mp = st_params(16, 0, 2);
    mp.context_shift = true;
    const int32_t bad[] = { -2, INT32_MIN };
    char want[96];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mp.n_keep = bad[i];
        sl_model *m = (sl_model *)1;
        cr_assert_eq(sl_model_open(&m, MODELS "/stories260K.gguf", &mp), SL_EINVAL, "n_keep %d", bad[i]);
        snprintf(want, sizeof want, "model params: n_keep %d (-1 = the first prompt, or >= 0)", bad[i]);
        cr_assert_str_eq(sl_last_error(), want);
    }
    sl_model *m = open_kv(MODELS "/stories260K.gguf", 16, SL_GGML_F16, INT32_MAX);
    sl_session *s = st_session(m, false);
    int32_t ids[20];
    ids_for(ids, 20, 512);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 12), 0, "%s", sl_last_error());
    cr_assert_eq(sl_session_feed_tokens(s, ids + 12, 8), SL_ECTX, "%s", sl_last_error());
    cr_assert_eq(sl_session_n_past(s), 12);
    st_close(s, m);
}
