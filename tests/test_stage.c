/* Pipeline stages (sluice.h: layer_mask, no_head, sl_session_embed /
 * forward_layers / head / commit): a model split over two stages, in one or
 * two rounds, resident or streamed, with the prompt in chunks that overlap in
 * the pipeline, gives bitwise the logits of one session; a stage refuses the
 * layers and parts it does not hold. SL_HOST_ONLY (reads the models). */
#include "sl_test.h"
#include "session_testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/sluice.h"
#include "../io/sluice_stream.h"
#include "../gguf/base/sl_status.h"

#define MODELS SL_SHARED_DIR "/models"

static sl_model *open_part(const char *path, const uint8_t *mask, int n_mask, bool no_head, bool streamed)
{
    sl_model_params mp = st_params(64, 3, 1);
    mp.layer_mask = mask;
    mp.n_layer_mask = n_mask;
    mp.no_head = no_head;
    if (streamed) { mp.max_pinned = 0; mp.mem_budget = 64ull << 20; }
    return st_open(path, &mp);
}

static int32_t argmax(const float *x, int n)
{
    int32_t b = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

/* Two stages over a 4-layer model: rounds 1 ({0,1} {2,3}) or 2 ({0,2} {1,3}).
 * The prompt's chunks go through stage 0's first window before the previous
 * chunk has left stage 1 (as the ring pipelines them). */
static void two_stages(const char *name, int rounds, bool streamed)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", MODELS, name);
    const uint8_t m0r1[4] = { 1, 1, 0, 0 }, m1r1[4] = { 0, 0, 1, 1 };
    const uint8_t m0r2[4] = { 1, 0, 1, 0 }, m1r2[4] = { 0, 1, 0, 1 };
    sl_model *ref = open_part(path, NULL, 0, false, false);
    sl_model *a = open_part(path, rounds == 1 ? m0r1 : m0r2, 4, false, streamed);
    sl_model *b = open_part(path, rounds == 1 ? m1r1 : m1r2, 4, true, streamed);
    sl_session *sr, *sa, *sb;
    cr_assert_eq(sl_session_create(&sr, ref), 0);
    cr_assert_eq(sl_session_create(&sa, a), 0);
    cr_assert_eq(sl_session_create(&sb, b), 0);
    sl_model_info mi;
    sl_model_get_info(ref, &mi);
    cr_assert_eq(mi.n_layer, 4);
    const int E = mi.n_embd, V = mi.n_vocab, w = rounds == 1 ? 2 : 1;
    int32_t ids[8] = { 1, 5, 9, 14, 3, 7, 2, 11 };
    const int n_prompt = 7;
    cr_assert_eq(sl_session_feed_tokens(sr, ids, n_prompt), 0, "%s", sl_session_errmsg(sr));
    float *h0 = malloc((size_t)3 * E * sizeof(float)), *h1 = malloc((size_t)3 * E * sizeof(float));
    cr_assert(h0 && h1);
    /* chunks of n_batch = 3: chunk c+1's round 0 on stage a runs before chunk c's rounds end */
    int c0 = 0, n0 = 3;
    cr_assert_eq(sl_session_embed(sa, ids, n0, h0), 0, "%s", sl_session_errmsg(sa));
    cr_assert_eq(sl_session_forward_layers(sa, 0, w, 0, h0, n0), 0, "%s", sl_session_errmsg(sa));
    for (int c1 = 3; c0 < n_prompt; c1 += 3) {
        int n1 = c1 < n_prompt ? (n_prompt - c1 < 3 ? n_prompt - c1 : 3) : 0;
        if (n1) {   /* the next chunk enters the pipeline */
            cr_assert_eq(sl_session_embed(sa, ids + c1, n1, h1), 0);
            cr_assert_eq(sl_session_forward_layers(sa, 0, w, c1, h1, n1), 0, "%s", sl_session_errmsg(sa));
        }
        /* the earlier chunk's remaining windows, alternating stages */
        for (int f = w, st = 1; f < 4; f += w, st ^= 1) {
            sl_session *s = st ? sb : sa;
            cr_assert_eq(sl_session_forward_layers(s, f, f + w, c0, h0, n0), 0, "%s", sl_session_errmsg(s));
        }
        cr_assert_eq(sl_session_commit(sa, ids + c0, n0), 0);
        cr_assert_eq(sl_session_commit(sb, ids + c0, n0), 0);
        if (c0 + n0 == n_prompt) cr_assert_eq(sl_session_head(sa, h0 + (size_t)(n0 - 1) * E), 0);
        memcpy(h0, h1, (size_t)3 * E * sizeof(float));
        c0 = c1; n0 = n1;
    }
    cr_assert_eq(sl_session_n_past(sa), n_prompt);
    cr_assert_eq(sl_session_n_past(sb), n_prompt);
    cr_assert_eq(memcmp(sl_session_logits(sr), sl_session_logits(sa), (size_t)V * sizeof(float)), 0,
                 "%s rounds %d: prompt logits differ", name, rounds);
    for (int t = 0; t < 6; t++) {   /* greedy decode, one token through every window */
        int32_t tok = argmax(sl_session_logits(sa), V), want = argmax(sl_session_logits(sr), V);
        cr_assert_eq(tok, want);
        cr_assert_eq(sl_session_accept(sr, want), 0);
        int32_t pos = sl_session_n_past(sa);
        cr_assert_eq(sl_session_embed(sa, &tok, 1, h0), 0);
        for (int f = 0, st = 0; f < 4; f += w, st ^= 1)
            cr_assert_eq(sl_session_forward_layers(st ? sb : sa, f, f + w, pos, h0, 1), 0);
        cr_assert_eq(sl_session_commit(sa, &tok, 1), 0);
        cr_assert_eq(sl_session_commit(sb, &tok, 1), 0);
        cr_assert_eq(sl_session_head(sa, h0), 0);
        cr_assert_eq(memcmp(sl_session_logits(sr), sl_session_logits(sa), (size_t)V * sizeof(float)), 0,
                     "%s rounds %d: step %d logits differ", name, rounds, t);
    }
    if (streamed) {
        /* the stream's own count: a session counts only the reads that
         * complete inside its calls, and the eager prefetch may finish them
         * all in between (seen once in CI: 0 bytes) */
        sl_stream_stats st;
        sl_stream_get_stats(sl_model_stream(b), &st);
        cr_assert_gt(st.bytes_read, 0, "the streamed stage read its layers");
    }
    /* what a stage does not hold */
    cr_assert_eq(sl_session_forward_layers(sb, 0, 1, 0, h0, 1), SL_EINVAL);
    cr_assert_not_null(strstr(sl_session_errmsg(sb), "not one of this stage's"), "%s", sl_session_errmsg(sb));
    cr_assert_eq(sl_session_head(sb, h0), SL_EINVAL);
    cr_assert_eq(sl_session_embed(sb, ids, 1, h0), SL_EINVAL);
    cr_assert_eq(sl_session_forward_layers(sa, 0, w, 0, h0, 4), SL_EINVAL, "more rows than n_batch");
    cr_assert_eq(sl_session_forward_layers(sa, 0, w, 63, h0, 2), SL_ECTX, "past n_ctx");
    free(h0);
    free(h1);
    sl_session_destroy(sr);
    sl_session_destroy(sa);
    sl_session_destroy(sb);
    sl_model_close(ref);
    sl_model_close(a);
    sl_model_close(b);
}

Test(stage, qwen3_one_round_resident) { two_stages("synth2-qwen3-q4_k_m.gguf", 1, false); }
Test(stage, qwen3_two_rounds_streamed) { two_stages("synth2-qwen3-q4_k_m.gguf", 2, true); }
Test(stage, qwen3moe_two_rounds_resident) { two_stages("synth2-qwen3moe-q4_k_m.gguf", 2, false); }
Test(stage, phi3_one_round_streamed) { two_stages("synth2-phi3-q4_k_m.gguf", 1, true); }
