/* Decode profile (sl_session_set_profile / get_profile): on a real model the
 * op classes account for the measured forward time, each matvec class read
 * exactly the bytes of its tensors per token, the pool threads' work stays
 * inside its op's time, and the tokens and logits are bitwise those of an
 * unprofiled run. */
#include "sl_test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/sluice.h"
#include "../gguf/gguf.h"

#define MODELS SL_SHARED_DIR "/models"
#define N_GEN 12

/* fuse: the decode matvecs of one input as one pool job (SLUICE_FUSE, read at open) */
static sl_model *open2(const char *path, bool fuse)
{
    if (fuse) unsetenv("SLUICE_FUSE");
    else setenv("SLUICE_FUSE", "0", 1);
    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.n_ctx = 64;
    mp.n_threads = 2;
    sl_model *m = NULL;
    cr_assert_eq(sl_model_open(&m, path, &mp), 0, "open %s: %s", path, sl_last_error());
    return m;
}

/* Greedy generation of N_GEN tokens after a fixed prompt; the logits after each. */
static void generate(sl_model *m, bool prof, int32_t *toks, float *logits, int32_t n_vocab,
                     sl_profile *out)
{
    sl_session *s;
    cr_assert_eq(sl_session_create(&s, m), 0, "%s", sl_last_error());
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = 0;
    cr_assert_eq(sl_session_set_sampling(s, &sp), 0);
    int32_t prompt[5] = { 1, 17, 42, 99, 7 };
    cr_assert_eq(sl_session_feed_tokens(s, prompt, 5), 0, "%s", sl_session_errmsg(s));
    if (prof) cr_assert_eq(sl_session_set_profile(s, true), 0, "%s", sl_session_errmsg(s));
    else cr_assert_eq(sl_session_get_profile(s, out), SL_EINVAL, "no profile before it is turned on");
    for (int i = 0; i < N_GEN; i++) {
        cr_assert_eq(sl_session_step(s, &toks[i]), 0, "%s", sl_session_errmsg(s));
        memcpy(logits + (size_t)i * (size_t)n_vocab, sl_session_logits(s), (size_t)n_vocab * sizeof(float));
    }
    if (prof) {
        cr_assert_eq(sl_session_get_profile(s, out), 0, "%s", sl_session_errmsg(s));
        /* off: later tokens leave it as it was */
        cr_assert_eq(sl_session_set_profile(s, false), 0);
        int32_t t;
        cr_assert_eq(sl_session_step(s, &t), 0);
        sl_profile again;
        cr_assert_eq(sl_session_get_profile(s, &again), 0);
        cr_assert_eq(memcmp(out, &again, sizeof again), 0, "profile changed while off");
    }
    sl_session_destroy(s);
}

/* Sum of nbytes of the tensors named blk.N.<suffix> (every layer). */
static uint64_t layer_bytes(const sl_gguf *g, const char *suffix)
{
    uint64_t b = 0;
    for (int64_t i = 0; i < sl_gguf_n_tensors(g); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        const char *dot = t->layer >= 0 ? strchr(t->name + 4, '.') : NULL;
        if (dot && !strcmp(dot + 1, suffix)) b += t->nbytes;
    }
    return b;
}

static void check_model(const char *path, bool fuse)
{
    sl_model *m = open2(path, fuse);
    sl_model_info mi;
    sl_model_get_info(m, &mi);
    const int32_t V = mi.n_vocab;
    int32_t t_on[N_GEN], t_off[N_GEN];
    float *l_on = malloc(sizeof(float) * (size_t)V * N_GEN), *l_off = malloc(sizeof(float) * (size_t)V * N_GEN);
    cr_assert(l_on && l_off);
    sl_profile p;
    memset(&p, 0, sizeof p);
    generate(m, false, t_off, l_off, V, &p);
    generate(m, true, t_on, l_on, V, &p);
    cr_assert_eq(memcmp(t_on, t_off, sizeof t_on), 0, "%s: tokens differ with profiling on", path);
    cr_assert_eq(memcmp(l_on, l_off, sizeof(float) * (size_t)V * N_GEN), 0,
                 "%s: logits differ with profiling on", path);

    /* decode tokens only (each step samples and feeds one): the prompt feed is not in it */
    cr_assert_eq(p.n_tokens, N_GEN, "%s: %lld tokens profiled", path, (long long)p.n_tokens);
    cr_assert_eq(p.n_samples, N_GEN);
    cr_assert_eq(p.n_threads, 2);
    double sum = 0;
    for (int o = 0; o < SL_PROF_N_OPS; o++) {
        cr_assert_not_null(sl_prof_op_name(o));
        if (o != SL_PROF_SAMPLE) sum += p.op_ms[o];
        for (int t = 0; t < 2; t++)   /* a thread works inside its op's wall time */
            cr_assert_leq(p.thread_ms[t][o], p.op_ms[o] * 1.0001 + 1e-3, "%s: op %s thread %d: %f > %f ms",
                          path, sl_prof_op_name(o), t, p.thread_ms[t][o], p.op_ms[o]);
    }
    cr_assert_null(sl_prof_op_name(SL_PROF_N_OPS));
    /* the ops are timed back to back inside the pass: only loop overhead (and
     * a preemption landing between two ops) is outside them */
    cr_assert_leq(sum, p.forward_ms * 1.0001, "%s: ops %.3f ms > forward %.3f ms", path, sum, p.forward_ms);
    cr_assert_geq(sum, p.forward_ms * 0.75, "%s: ops %.3f ms of forward %.3f ms", path, sum, p.forward_ms);

    /* bytes per matvec class = the model's tensor bytes, per token, exactly */
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, path), 0);
    const uint64_t T = (uint64_t)p.n_tokens;
    static const struct { int op; const char *suffix; } mv[] = {
        { SL_PROF_MV_Q, "attn_q.weight" }, { SL_PROF_MV_K, "attn_k.weight" },
        { SL_PROF_MV_V, "attn_v.weight" }, { SL_PROF_MV_O, "attn_output.weight" },
        { SL_PROF_MV_GATE, "ffn_gate.weight" }, { SL_PROF_MV_UP, "ffn_up.weight" },
        { SL_PROF_MV_DOWN, "ffn_down.weight" },
    };
    uint64_t want[SL_PROF_N_OPS] = { 0 };
    for (size_t i = 0; i < sizeof mv / sizeof mv[0]; i++) {
        uint64_t b = layer_bytes(g, mv[i].suffix) * T;
        cr_assert_neq(b, 0, "%s: no %s", path, mv[i].suffix);
        int op = mv[i].op;
        if (fuse && op <= SL_PROF_MV_V) op = SL_PROF_MV_QKV;   /* these models: one activation type */
        if (fuse && (op == SL_PROF_MV_GATE || op == SL_PROF_MV_UP)) op = SL_PROF_MV_GATE_UP;
        want[op] += b;
    }
    for (int op = SL_PROF_MV_Q; op <= SL_PROF_MV_GATE_UP; op++) {
        if (op == SL_PROF_MV_HEAD) continue;
        cr_assert_eq(p.op_bytes[op], want[op], "%s: %s: %llu bytes, tensors %llu", path, sl_prof_op_name(op),
                     (unsigned long long)p.op_bytes[op], (unsigned long long)want[op]);
        if (!want[op]) { cr_assert_eq(p.op_calls[op], 0); continue; }
        cr_assert_eq(p.op_calls[op], (uint64_t)mi.n_layer * T);
        cr_assert_gt(p.thread_ms[0][op], 0, "the caller works in %s", sl_prof_op_name(op));
        cr_assert_gt(p.thread_ms[1][op], 0, "the worker works in %s", sl_prof_op_name(op));
    }
    const sl_gguf_tensor *head = sl_gguf_find_tensor(g, "output.weight");
    const sl_gguf_tensor *embd = sl_gguf_find_tensor(g, "token_embd.weight");
    if (!head) head = embd;
    cr_assert_eq(p.op_bytes[SL_PROF_MV_HEAD], head->nbytes * T, "%s: lm head bytes", path);
    cr_assert_eq(p.op_bytes[SL_PROF_EMBD], embd->nbytes / embd->ne[1] * T, "%s: one embedding row a token", path);
    cr_assert_eq(p.op_calls[SL_PROF_ATTN], (uint64_t)mi.n_layer * T);
    cr_assert_gt(p.op_ms[SL_PROF_ATTN], 0);
    cr_assert_gt(p.op_ms[SL_PROF_NORM], 0);
    cr_assert_gt(p.op_ms[SL_PROF_QUANT], 0);
    cr_assert_gt(p.op_calls[SL_PROF_STREAM], 0);
    sl_gguf_close(g);
    free(l_on);
    free(l_off);
    sl_model_close(m);
}

Test(profile, llama_q4_k) { check_model(MODELS "/synth-tiny-q4_k.gguf", true); }
Test(profile, llama_q4_k_unfused) { check_model(MODELS "/synth-tiny-q4_k.gguf", false); }

/* mixed Q4_K/Q6_K (one fused job splits by bytes), q/k norms */
Test(profile, qwen3_q4_k_m) { check_model(MODELS "/synth2-qwen3-q4_k_m.gguf", true); }
Test(profile, qwen3_q4_k_m_unfused) { check_model(MODELS "/synth2-qwen3-q4_k_m.gguf", false); }

/* The fused decode matvecs give the tokens and logits of one job per matrix, bit for bit. */
Test(profile, fused_equals_unfused)
{
    const char *path = MODELS "/synth2-qwen3-q4_k_m.gguf";
    int32_t t[2][N_GEN];
    float *l[2];
    sl_profile p;
    int32_t V = 0;
    for (int fz = 0; fz < 2; fz++) {
        sl_model *m = open2(path, fz);
        sl_model_info mi;
        sl_model_get_info(m, &mi);
        V = mi.n_vocab;
        l[fz] = malloc(sizeof(float) * (size_t)V * N_GEN);
        cr_assert_not_null(l[fz]);
        generate(m, true, t[fz], l[fz], V, &p);
        cr_assert_eq(p.op_calls[SL_PROF_MV_QKV] > 0, fz == 1, "fused: %d", fz);
        sl_model_close(m);
    }
    cr_assert_eq(memcmp(t[0], t[1], sizeof t[0]), 0, "tokens differ fused / unfused");
    cr_assert_eq(memcmp(l[0], l[1], sizeof(float) * (size_t)V * N_GEN), 0, "logits differ fused / unfused");
    free(l[0]);
    free(l[1]);
}

Test(profile, bad_args)
{
    sl_profile p;
    cr_assert_eq(sl_session_set_profile(NULL, true), SL_EINVAL);
    cr_assert_eq(sl_session_get_profile_sized(NULL, &p, 3), SL_EINVAL, "size below the first layout");
}
