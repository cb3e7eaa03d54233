/* The library ABI contract (README "Library"): version macros against
 * sl_version(), and the versioned caller structs (sl_model_params,
 * sl_sampling, sl_stream_config): a size outside [first layout, sizeof] is
 * rejected with SL_EINVAL and a message, an old (smaller) caller struct still
 * works and is read only up to its struct_size (heap buffers of exactly that
 * size, so the ASan build catches any read past it); the getters that fill a
 * caller's struct write only the size the caller passes. The installed-headers
 * check (exports, README example, io/examples) is tests/install_check.sh. */
#include "sl_test.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/sluice.h"
#include "../gguf/gguf.h"
#include "../gguf/base/sl_internal.h"
#include "../io/sluice_stream.h"

#define S260 SL_SHARED_DIR "/models/stories260K.gguf"

static void assert_size_msg(const char *msg, const char *what)
{
    cr_assert(strstr(msg, what) && strstr(msg, "struct_size"), "message: '%s'", msg);
}

Test(abi, version_matches_header)
{
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", SLUICE_VERSION_MAJOR, SLUICE_VERSION_MINOR,
             SLUICE_VERSION_PATCH);
    cr_assert_str_eq(sl_version(), want);
    cr_assert_eq(sl_version_number(), SLUICE_VERSION_NUMBER);
}

Test(abi, init_rejects_sizes_it_does_not_know)
{
    /* big enough for every case below, so a wrong write would stay in bounds
     * and show as a wrong value rather than a crash */
    union { sl_model_params mp; sl_sampling sp; sl_stream_config sc; char pad[512]; } u;
    memset(&u, 0xab, sizeof u);
    cr_assert_eq(sl_model_params_init_sized(&u.mp, SL_MODEL_PARAMS_MIN_SIZE - 1), SL_EINVAL);
    assert_size_msg(sl_last_error(), "sl_model_params");
    cr_assert_eq(u.mp.struct_size, SL_MODEL_PARAMS_MIN_SIZE - 1);   /* so open fails too */
    cr_assert_eq(sl_model_params_init_sized(&u.mp, sizeof u.mp + 8), SL_EINVAL);
    cr_assert_eq(sl_sampling_init_sized(&u.sp, sizeof u.sp + 1), SL_EINVAL);
    assert_size_msg(sl_last_error(), "sl_sampling");
    cr_assert_eq(sl_sampling_init_sized(&u.sp, sizeof(size_t)), SL_EINVAL);
    cr_assert_eq(sl_stream_config_init_sized(&u.sc, 0), SL_EINVAL);
    assert_size_msg(sl_last_error(), "sl_stream_config");
    cr_assert_eq(sl_stream_config_init_sized(NULL, sizeof u.sc), SL_EINVAL);

    cr_assert_eq(sl_model_params_init(&u.mp), 0);
    cr_assert_eq(u.mp.struct_size, sizeof u.mp);
    cr_assert_eq(u.mp.max_pinned, -1);
}

Test(abi, calls_reject_bad_struct_size, .timeout = 60)
{
    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.struct_size = SL_MODEL_PARAMS_MIN_SIZE - 1;
    sl_model *m = (sl_model *)&mp;
    cr_assert_eq(sl_model_open(&m, S260, &mp), SL_EINVAL);
    cr_assert_null(m);
    assert_size_msg(sl_last_error(), "sl_model_params");
    mp.struct_size = 0;                   /* the caller forgot sl_model_params_init */
    cr_assert_eq(sl_model_open(&m, S260, &mp), SL_EINVAL);

    sl_stream_config c;
    sl_stream_config_init(&c);
    c.struct_size = sizeof c + 8;         /* a newer header than this library */
    sl_stream *s = NULL;
    cr_assert_eq(sl_stream_open(&s, S260, &c), SL_EINVAL);
    cr_assert_null(s);
    assert_size_msg(sl_stream_open_errmsg(), "sl_stream_config");
    sl_stream_plan plan;
    char err[256];
    cr_assert_eq(sl_stream_plan_model(S260, &c, &plan, err, sizeof err), SL_EINVAL);
    assert_size_msg(err, "sl_stream_config");

    sl_model_params_init(&mp);
    mp.n_threads = 1;
    cr_assert_eq(sl_model_open(&m, S260, &mp), 0, "%s", sl_last_error());
    sl_session *ss;
    cr_assert_eq(sl_session_create(&ss, m), 0, "%s", sl_last_error());
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.struct_size = 3;
    cr_assert_eq(sl_session_set_sampling(ss, &sp), SL_EINVAL);
    assert_size_msg(sl_session_errmsg(ss), "sl_sampling");
    sl_session_destroy(ss);
    sl_model_close(m);
}

/* A caller built when the struct ended at its first layout's last field:
 * exactly that many bytes, no tail padding (fields written through their
 * offsets: the compiler rightly objects to member access on a short block). */
#define SET(p, T, f, v) do { __typeof__(((T *)0)->f) v_ = (v); \
        memcpy((char *)(p) + offsetof(T, f), &v_, sizeof v_); } while (0)

static size_t struct_size_of(const void *p)
{
    size_t n;
    memcpy(&n, p, sizeof n);
    return n;
}

Test(abi, old_size_caller_works, .timeout = 60)
{
    void *mp = malloc(SL_MODEL_PARAMS_MIN_SIZE);
    void *sp = malloc(SL_SAMPLING_MIN_SIZE);
    void *sc = malloc(SL_STREAM_CONFIG_MIN_SIZE);
    cr_assert(mp && sp && sc);
    cr_assert_lt(SL_MODEL_PARAMS_MIN_SIZE, sizeof(sl_model_params));   /* else this proves nothing */

    cr_assert_eq(sl_model_params_init_sized(mp, SL_MODEL_PARAMS_MIN_SIZE), 0);
    cr_assert_eq(struct_size_of(mp), SL_MODEL_PARAMS_MIN_SIZE);
    SET(mp, sl_model_params, n_threads, 1);
    SET(mp, sl_model_params, n_ctx, 64);
    sl_model *m;
    cr_assert_eq(sl_model_open(&m, S260, mp), 0, "%s", sl_last_error());
    sl_model_info info;
    sl_model_get_info(m, &info);
    cr_assert_eq(info.n_ctx, 64);         /* the old caller's fields are read */

    sl_session *s;
    cr_assert_eq(sl_session_create(&s, m), 0, "%s", sl_last_error());
    cr_assert_eq(sl_sampling_init_sized(sp, SL_SAMPLING_MIN_SIZE), 0);
    SET(sp, sl_sampling, temp, 0.0f);
    cr_assert_eq(sl_session_set_sampling(s, sp), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_feed_text(s, "Once upon a time", false), 0, "%s", sl_session_errmsg(s));
    int32_t tok;
    cr_assert_eq(sl_session_step(s, &tok), 0, "%s", sl_session_errmsg(s));
    sl_session_destroy(s);
    sl_model_close(m);

    cr_assert_eq(sl_stream_config_init_sized(sc, SL_STREAM_CONFIG_MIN_SIZE), 0);
    SET(sc, sl_stream_config, mode, SL_MODE_RESIDENT);
    SET(sc, sl_stream_config, io, SL_IO_PREAD);
    sl_stream *st;
    cr_assert_eq(sl_stream_open(&st, S260, sc), 0, "%s", sl_stream_open_errmsg());
    cr_assert_eq(sl_stream_get_plan(st)->mode, SL_MODE_RESIDENT);
    sl_stream_close(st);
    free(mp); free(sp); free(sc);
}

/* Calls CALL (which uses `out` and `size`) into a buffer larger than T with
 * size = T's first layout: nothing past it may change; then sizes the library
 * does not know are rejected. */
#define OUT_CASE(T, MIN, CALL, AFTER_OK) do {                                      \
        unsigned char buf_[sizeof(T) + 16];                                        \
        memset(buf_, 0xab, sizeof buf_);                                           \
        void *out = buf_;                                                          \
        size_t size = (MIN);                                                       \
        cr_assert_eq((CALL), 0, #CALL ": %s", sl_last_error());                   \
        AFTER_OK;                                                                  \
        for (size_t i_ = (MIN); i_ < sizeof buf_; i_++)                            \
            cr_assert_eq(buf_[i_], 0xab, #T ": byte %zu past the caller's size written", i_); \
        size = sizeof(T) + 8;                                                      \
        cr_assert_eq((CALL), SL_EINVAL, #T ": a larger size than the library knows"); \
        size = (MIN) - 1;                                                          \
        cr_assert_eq((CALL), SL_EINVAL, #T ": a size below the first layout");     \
        assert_size_msg(sl_last_error(), #T);                                      \
    } while (0)

Test(abi, getters_write_only_the_callers_size, .timeout = 60)
{
    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.n_threads = 1;
    sl_model *m;
    cr_assert_eq(sl_model_open(&m, S260, &mp), 0, "%s", sl_last_error());
    sl_session *ss;
    cr_assert_eq(sl_session_create(&ss, m), 0, "%s", sl_last_error());
    cr_assert_eq(sl_session_feed_text(ss, "Once", false), 0, "%s", sl_session_errmsg(ss));
    OUT_CASE(sl_model_info, SL_MODEL_INFO_MIN_SIZE, sl_model_get_info_sized(m, out, size),
             cr_assert_gt(((sl_model_info *)out)->n_vocab, 0));
    OUT_CASE(sl_stats, SL_STATS_MIN_SIZE, sl_session_get_stats_sized(ss, out, size),
             cr_assert_gt(((sl_stats *)out)->n_prompt, 0));
    sl_session_destroy(ss);
    sl_model_close(m);

    sl_stream_config c;
    sl_stream_config_init(&c);
    c.mode = SL_MODE_RESIDENT;
    c.io = SL_IO_PREAD;
    char err[256];
    OUT_CASE(sl_stream_plan, SL_STREAM_PLAN_MIN_SIZE,
             sl_stream_plan_model_sized(S260, &c, out, size, err, sizeof err),
             cr_assert_eq(((sl_stream_plan *)out)->mode, SL_MODE_RESIDENT));
    sl_stream *st;
    cr_assert_eq(sl_stream_open(&st, S260, &c), 0, "%s", sl_stream_open_errmsg());
    OUT_CASE(sl_stream_unit, SL_STREAM_UNIT_MIN_SIZE, sl_stream_unit_info_sized(st, 0, out, size),
             cr_assert_eq(((sl_stream_unit *)out)->layer, 0));
    OUT_CASE(sl_stream_view, SL_STREAM_VIEW_MIN_SIZE, sl_stream_acquire_sized(st, 0, out, size),
             cr_assert_eq(sl_stream_release(st, 0), 0, "%s", sl_stream_errmsg(st)));
    OUT_CASE(sl_stream_stats, SL_STREAM_STATS_MIN_SIZE, sl_stream_get_stats_sized(st, out, size),
             cr_assert_eq(((sl_stream_stats *)out)->acquires, 1));
    sl_stream_close(st);

    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, S260), 0, "%s", sl_last_error());
    OUT_CASE(sl_gguf_extent, SL_GGUF_EXTENT_MIN_SIZE, sl_gguf_layer_extent_sized(g, 0, out, size),
             cr_assert_gt(((sl_gguf_extent *)out)->n_tensors, 0));
    OUT_CASE(sl_gguf_extent, SL_GGUF_EXTENT_MIN_SIZE, sl_gguf_nonlayer_extent_sized(g, out, size),
             cr_assert_gt(((sl_gguf_extent *)out)->n_tensors, 0));
    sl_gguf_close(g);
}

/* The mechanism under every versioned struct, on a made-up layout that grew
 * by one field: the old caller's fields are taken, the new one keeps its
 * default, and nothing past the old size is read or written. */
typedef struct { size_t struct_size; int a; } v1_t;
typedef struct { size_t struct_size; int a; double b; } v2_t;
#define V_MIN SL_STRUCT_END(v1_t, a)

Test(abi, struct_helpers_read_only_the_callers_size)
{
    v2_t def = { 0, 1, 7.5 };
    v1_t *old = malloc(sizeof *old);   /* sizeof(v1_t) < sizeof(v2_t) */
    cr_assert_not_null(old);
    cr_assert_eq(sl_struct_init(old, sizeof *old, &def, sizeof def, V_MIN, "v"), 0);
    cr_assert_eq(old->struct_size, sizeof *old);
    cr_assert_eq(old->a, 1);
    old->a = 5;
    v2_t in = def;
    cr_assert_eq(sl_struct_in(&in, sizeof in, old, V_MIN, "v"), 0);
    cr_assert_eq(in.a, 5);
    cr_assert_float_eq(in.b, 7.5, 0);

    old->struct_size = V_MIN - 1;
    cr_assert_eq(sl_struct_in(&in, sizeof in, old, V_MIN, "v"), SL_EINVAL);
    old->struct_size = sizeof(v2_t) + 1;
    cr_assert_eq(sl_struct_in(&in, sizeof in, old, V_MIN, "v"), SL_EINVAL);
    assert_size_msg(sl_last_error(), "v:");
    free(old);
}
