/* Batched decode (sl_batch): each member's greedy tokens and logits are those
 * of the same session stepped alone, on every golden model in resident,
 * stream, mmap and pread modes, with members joining and leaving between
 * passes; seeded sampling likewise; more members than n_batch; the refusals
 * of the API; the lead member's decode profile. SL_HOST_ONLY (reads the
 * models in every streamer mode). */
#include "sl_test.h"
#include "session_testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/sluice.h"
#include "golden_models.h"
#include "../gguf/base/sl_status.h"
#include "../io/sluice_stream.h"

#define MODELS SL_SHARED_DIR "/models"
#define S260 MODELS "/stories260K.gguf"
#define NSEQ 4
#define NSTEP 10

enum { M_RESIDENT, M_STREAM, M_MMAP, M_PREAD, M_COUNT };
static const char *const mode_names[] = { "resident", "stream", "mmap", "pread" };

/* Stream / pread: streaming forced with no pinned layer (every layer read each pass). */
static sl_model *open_mode(const char *path, int mode, int32_t n_batch)
{
    sl_model_params mp = st_params(128, n_batch, 2);
    mp.mode = mode == M_RESIDENT ? SL_MODE_RESIDENT : mode == M_MMAP ? SL_MODE_MMAP : SL_MODE_STREAM;
    if (mode == M_STREAM || mode == M_PREAD) mp.max_pinned = 0;
    if (mode == M_PREAD) mp.io = SL_IO_PREAD;
    sl_model *m = NULL;
    int rc = sl_model_open(&m, path, &mp);
    cr_assert_eq(rc, 0, "open %s (%s): %s", path, mode_names[mode], sl_last_error());
    sl_model_info info;
    sl_model_get_info(m, &info);
    cr_assert_eq(info.mode, mp.mode, "%s: asked for %s, planner chose mode %d", path, mode_names[mode],
                 info.mode);
    return m;
}

/* Prompt of sequence i: its own length and tokens. */
static int prompt_of(int i, int32_t n_vocab, int32_t *ids)
{
    int n = 3 + 4 * i;
    uint64_t x = 1000 + (uint64_t)i;
    ids[0] = 1;
    for (int j = 1; j < n; j++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        ids[j] = 3 + (int32_t)((x >> 33) % (uint64_t)(n_vocab - 3));
    }
    return n;
}

static sl_session *prompted(sl_model *m, int i, const sl_sampling *sp)
{
    sl_model_info info;
    sl_model_get_info(m, &info);
    int32_t ids[64];
    int n = prompt_of(i, info.n_vocab, ids);
    sl_session *s;
    cr_assert_eq(sl_session_create(&s, m), 0, "%s", sl_last_error());
    cr_assert_eq(sl_session_set_sampling(s, sp), 0);
    cr_assert_eq(sl_session_feed_tokens(s, ids, n), 0, "%s", sl_session_errmsg(s));
    return s;
}

/* Member i joins before step join[i] and leaves after step leave[i]. */
static const int join_at[NSEQ] = { 0, 0, 3, 5 };
static const int leave_at[NSEQ] = { NSTEP, 6, NSTEP, 9 };

/* ref[i][t], logits of the alone run at each step (ref_lg[i][t][n_vocab]). */
static void run_alone(sl_model *m, const sl_sampling *sp, int32_t ref[NSEQ][NSTEP], float *ref_lg,
                      int32_t n_vocab)
{
    for (int i = 0; i < NSEQ; i++) {
        sl_session *s = prompted(m, i, sp);
        for (int t = join_at[i]; t < leave_at[i]; t++) {
            cr_assert_eq(sl_session_step(s, &ref[i][t]), 0, "%s", sl_session_errmsg(s));
            memcpy(ref_lg + ((size_t)i * NSTEP + (size_t)t) * (size_t)n_vocab, sl_session_logits(s),
                   (size_t)n_vocab * sizeof(float));
        }
        sl_session_destroy(s);
    }
}

static void check_batched(const char *path, int mode, const sl_sampling *sp, int32_t n_batch)
{
    sl_model *m = open_mode(path, mode, n_batch);
    sl_model_info info;
    sl_model_get_info(m, &info);
    const int32_t V = info.n_vocab;
    int32_t ref[NSEQ][NSTEP];
    float *ref_lg = malloc((size_t)NSEQ * NSTEP * (size_t)V * sizeof(float));
    cr_assert_not_null(ref_lg);
    run_alone(m, sp, ref, ref_lg, V);

    sl_batch *b;
    sl_batch_params bp;
    sl_batch_params_init(&bp);
    bp.max_seqs = NSEQ;
    cr_assert_eq(sl_batch_create(&b, m, &bp), 0, "%s", sl_last_error());
    sl_session *s[NSEQ];
    for (int i = 0; i < NSEQ; i++) s[i] = prompted(m, i, sp);
    for (int t = 0; t < NSTEP; t++) {
        for (int i = 0; i < NSEQ; i++)
            if (join_at[i] == t) cr_assert_eq(sl_batch_add(b, s[i]), 0, "%s", sl_batch_errmsg(b));
        int32_t tok[NSEQ];
        int n = sl_batch_n_seqs(b);
        cr_assert_eq(sl_batch_step(b, tok), 0, "%s (%s) step %d: %s", path, mode_names[mode], t,
                     sl_batch_errmsg(b));
        for (int j = 0; j < n; j++) {
            sl_session *sj = sl_batch_session(b, j);
            int i = 0;
            while (s[i] != sj) i++;
            cr_assert_eq(tok[j], ref[i][t], "%s (%s, n_batch %d): sequence %d step %d: batched %d, alone %d",
                         path, mode_names[mode], n_batch, i, t, tok[j], ref[i][t]);
            cr_assert(memcmp(sl_session_logits(sj), ref_lg + ((size_t)i * NSTEP + (size_t)t) * (size_t)V,
                             (size_t)V * sizeof(float)) == 0,
                      "%s (%s): sequence %d step %d: logits differ from the alone run", path,
                      mode_names[mode], i, t);
        }
        for (int i = 0; i < NSEQ; i++)
            if (leave_at[i] == t + 1 && t + 1 < NSTEP) cr_assert_eq(sl_batch_remove(b, s[i]), 0);
    }
    sl_batch_stats bs;
    cr_assert_eq(sl_batch_get_stats(b, &bs), 0);
    int64_t rows = 0, passes = 0, nb = n_batch ? n_batch : 64;   /* sl_model_params: 0 = 64 */
    for (int t = 0; t < NSTEP; t++) {
        int n = 0;
        for (int i = 0; i < NSEQ; i++) n += join_at[i] <= t && t < leave_at[i];
        rows += n;
        passes += (n + nb - 1) / nb;
    }
    cr_assert_eq(bs.n_rows, rows);
    cr_assert_eq(bs.n_passes, passes, "%lld passes, expected %lld", (long long)bs.n_passes, (long long)passes);
    sl_batch_destroy(b);
    for (int i = 0; i < NSEQ; i++) sl_session_destroy(s[i]);
    free(ref_lg);
    sl_model_close(m);
}

static void greedy(sl_sampling *sp)
{
    sl_sampling_init(sp);
    sp->temp = 0;
}


static void all_models(int mode)
{
    sl_sampling sp;
    greedy(&sp);
    for (size_t i = 0; i < N_GOLDEN_MODELS; i++) {
        char path[512];
        snprintf(path, sizeof path, MODELS "/%s.gguf", golden_models[i]);
        check_batched(path, mode, &sp, 0);
    }
}

Test(batch, greedy_resident, .timeout = 120) { all_models(M_RESIDENT); }
Test(batch, greedy_stream, .timeout = 120) { all_models(M_STREAM); }
Test(batch, greedy_mmap, .timeout = 120) { all_models(M_MMAP); }
Test(batch, greedy_pread, .timeout = 120) { all_models(M_PREAD); }

/* Each member's own sampler and seed: the same draws as alone. */
Test(batch, seeded_sampling, .timeout = 60)
{
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = 0.9f;
    sp.seed = 7;
    check_batched(S260, M_RESIDENT, &sp, 0);
    check_batched(S260, M_STREAM, &sp, 0);
}

/* n_batch 2: three members need two passes per step; tokens unchanged. */
Test(batch, more_members_than_n_batch, .timeout = 60)
{
    sl_sampling sp;
    greedy(&sp);
    check_batched(S260, M_RESIDENT, &sp, 2);
    check_batched(MODELS "/synth-tiny-q4_k.gguf", M_STREAM, &sp, 2);
}

Test(batch, refusals)
{
    sl_model *m = open_mode(S260, M_RESIDENT, 0), *m2 = open_mode(S260, M_RESIDENT, 0);
    sl_batch_params bp;
    sl_batch_params_init(&bp);
    bp.max_seqs = 2;
    sl_batch *b;
    bp.struct_size = 3;
    cr_assert_eq(sl_batch_create(&b, m, &bp), SL_EINVAL);
    bp.struct_size = sizeof bp;
    bp.max_seqs = -1;
    cr_assert_eq(sl_batch_create(&b, m, &bp), SL_EINVAL);
    bp.max_seqs = 2;
    cr_assert_eq(sl_batch_create(&b, m, &bp), 0, "%s", sl_last_error());

    sl_sampling sp;
    greedy(&sp);
    sl_session *empty, *other, *s[3];
    cr_assert_eq(sl_session_create(&empty, m), 0);
    cr_assert_eq(sl_batch_add(b, empty), SL_EINVAL, "no logits yet");
    cr_assert_not_null(strstr(sl_batch_errmsg(b), "no logits"), "%s", sl_batch_errmsg(b));
    other = prompted(m2, 0, &sp);
    cr_assert_eq(sl_batch_add(b, other), SL_EINVAL, "another model's session");
    for (int i = 0; i < 3; i++) s[i] = prompted(m, i, &sp);
    cr_assert_eq(sl_batch_add(b, s[0]), 0);
    cr_assert_eq(sl_batch_add(b, s[0]), SL_EINVAL, "already a member");
    cr_assert_eq(sl_batch_add(b, s[1]), 0);
    cr_assert_eq(sl_batch_add(b, s[2]), SL_ERANGE, "max_seqs 2");
    cr_assert_eq(sl_batch_remove(b, s[2]), SL_ENOENT);
    cr_assert_eq(sl_batch_n_seqs(b), 2);
    cr_assert_null(sl_batch_session(b, 2));
    cr_assert_null(sl_batch_session(b, -1));

    int32_t tok[2] = { 5, 512 };
    int32_t past0 = sl_session_n_past(s[0]);
    cr_assert_eq(sl_batch_accept(b, tok), SL_EINVAL, "token outside the vocab");
    cr_assert_eq(sl_session_n_past(s[0]), past0, "nothing fed");
    cr_assert_eq(sl_batch_accept(b, NULL), SL_EINVAL);

    /* member 1's context full: refused before anything is fed or sampled */
    int32_t fill[128];
    for (int i = 0; i < 128; i++) fill[i] = 5;
    int32_t room = sl_session_n_ctx(s[1]) - sl_session_n_past(s[1]);
    cr_assert_eq(sl_session_feed_tokens(s[1], fill, room), 0, "%s", sl_session_errmsg(s[1]));
    cr_assert_eq(sl_batch_step(b, tok), SL_ECTX);
    cr_assert_not_null(strstr(sl_batch_errmsg(b), "member 1"), "%s", sl_batch_errmsg(b));
    cr_assert_eq(sl_session_n_past(s[0]), past0);
    cr_assert_eq(sl_batch_remove(b, s[1]), 0);
    cr_assert_eq(sl_batch_step(b, tok), 0, "%s", sl_batch_errmsg(b));
    cr_assert_eq(sl_session_n_past(s[0]), past0 + 1);
    cr_assert_eq(sl_batch_session(b, 0), s[0]);

    sl_batch_stats st;
    cr_assert_eq(sl_batch_get_stats_sized(b, &st, 4), SL_EINVAL, "below the first layout");
    sl_batch_destroy(b);
    sl_batch_destroy(NULL);
    for (int i = 0; i < 3; i++) sl_session_destroy(s[i]);
    sl_session_destroy(empty);
    sl_session_destroy(other);
    sl_model_close(m);
    sl_model_close(m2);
}

/* The lead member's decode profile takes the batch passes it leads (rows as
 * tokens, the matmuls and attention per class); another member's stays off. */
Test(batch, profile_of_lead_member, .timeout = 60)
{
    sl_model *m = open_mode(S260, M_RESIDENT, 8);
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = 0;
    sl_session *s[3];
    for (int i = 0; i < 3; i++) s[i] = prompted(m, i, &sp);
    cr_assert_eq(sl_session_set_profile(s[0], true), 0);
    sl_batch *b;
    cr_assert_eq(sl_batch_create(&b, m, NULL), 0, "%s", sl_last_error());
    for (int i = 0; i < 3; i++) cr_assert_eq(sl_batch_add(b, s[i]), 0);
    int32_t tok[3];
    for (int t = 0; t < 4; t++) cr_assert_eq(sl_batch_step(b, tok), 0, "%s", sl_batch_errmsg(b));
    sl_profile p;
    cr_assert_eq(sl_session_get_profile(s[0], &p), 0);
    cr_assert_eq(p.n_tokens, 12, "4 passes of 3 rows: %lld", (long long)p.n_tokens);
    cr_assert_gt(p.forward_ms, 0.0);
    cr_assert_gt(p.op_calls[SL_PROF_MV_HEAD], 0);
    cr_assert_gt(p.op_calls[SL_PROF_ATTN], 0);
    cr_assert_gt(p.op_bytes[SL_PROF_MV_DOWN], 0);
    cr_assert_eq(sl_session_get_profile(s[1], &p), SL_EINVAL, "never turned on");
    /* led by s[1] after s[0] leaves: s[0]'s figures stay as they were */
    cr_assert_eq(sl_batch_remove(b, s[0]), 0);
    cr_assert_eq(sl_batch_step(b, tok), 0, "%s", sl_batch_errmsg(b));
    cr_assert_eq(sl_session_get_profile(s[0], &p), 0);
    cr_assert_eq(p.n_tokens, 12);
    sl_batch_destroy(b);
    for (int i = 0; i < 3; i++) sl_session_destroy(s[i]);
    sl_model_close(m);
}
