/* Streamer through the pread pool and buffered reads only: portable (runs
 * under qemu-aarch64, where the build has no io_uring and AUTO must fall
 * back to the pool with a notice). Bytes are checked against plain pread. */
#include "stream_testutil.h"

#include <errno.h>
#include <stdatomic.h>

static const st_model_spec spec = { .n_layers = 5, .ne0 = 128, .rows_q = 33, .rows_up = 70,
                                    .n_vocab = 200 };

static void tmp_model(char *path, size_t n, const char *tag)
{
    snprintf(path, n, "/tmp/sl_test_pread_%s_%d.gguf", tag, (int)getpid());
    cr_assert_eq(st_make_model(path, &spec), 0, "%s", sl_last_error());
}

Test(stream_pread, stream_resident_and_auto_fallback)
{
    char path[256];
    tmp_model(path, sizeof path, "basic");
    int modes[] = { SL_MODE_STREAM, SL_MODE_RESIDENT, SL_MODE_MMAP };
    for (int i = 0; i < 3; i++) {
        sl_stream_config c;
        sl_stream_config_init(&c);
        c.mem_budget = 1ull << 30;   /* independent of MemAvailable (shared machine) */
        c.io = SL_IO_PREAD; c.mode = modes[i]; c.no_direct = true; c.max_pinned = 1;
        c.req_bytes = 3000; c.n_io_threads = 3; c.depth = 1;
        sl_stream *s;
        cr_assert_eq(sl_stream_open(&s, path, &c), 0, "%s", sl_stream_open_errmsg());
        if (modes[i] == SL_MODE_STREAM) {
            cr_assert_eq(sl_stream_get_plan(s)->io, SL_IO_PREAD);
            cr_assert_eq(sl_stream_get_plan(s)->n_slots, 2);
        }
        st_run_passes(s, path, 3);
        sl_stream_close(s);
    }
    sl_stream_config c;
    sl_stream_config_init(&c);
    c.mem_budget = 1ull << 30;   /* independent of MemAvailable (shared machine) */
    c.mode = SL_MODE_STREAM; c.max_pinned = 0;
    sl_stream *s;
    cr_assert_eq(sl_stream_open(&s, path, &c), 0, "%s", sl_stream_open_errmsg());
    int io = sl_stream_get_plan(s)->io;
    cr_assert(io == SL_IO_URING || io == SL_IO_PREAD);
    if (io == SL_IO_PREAD) cr_assert_not_null(strstr(sl_stream_notice(s), "pread"), "%s", sl_stream_notice(s));
    st_run_passes(s, path, 2);
    sl_stream_close(s);
    unlink(path);
}

typedef struct hook_ctx { atomic_int calls; uint64_t eio_off; } hook_ctx;

static int64_t flaky(void *ctx, int fd, void *buf, size_t len, uint64_t off)
{
    hook_ctx *h = ctx;
    int n = atomic_fetch_add(&h->calls, 1);
    if (h->eio_off && off <= h->eio_off && h->eio_off < off + len) return -EIO;
    if (n % 4 == 1) return -EAGAIN;
    ssize_t r = pread(fd, buf, len, (off_t)off);
    if (r < 0) return -errno;
    if (r > 7 && n % 4 == 2) { memset((uint8_t *)buf + 7, 0xAB, (size_t)r - 7); return 7; }
    return r;
}

Test(stream_pread, faults_retried_or_reported)
{
    char path[256];
    tmp_model(path, sizeof path, "fault");
    hook_ctx h = { 0 };
    sl_stream_config c;
    sl_stream_config_init(&c);
    c.mem_budget = 1ull << 30;   /* independent of MemAvailable (shared machine) */
    c.io = SL_IO_PREAD; c.mode = SL_MODE_STREAM; c.no_direct = true; c.max_pinned = 0;
    c.req_bytes = 5000;
    c.read_hook = flaky; c.read_hook_ctx = &h;
    sl_stream *s;
    cr_assert_eq(sl_stream_open(&s, path, &c), 0, "%s", sl_stream_open_errmsg());
    st_run_passes(s, path, 2);
    sl_stream_stats st;
    sl_stream_get_stats(s, &st);
    cr_assert_gt(st.n_retries, 10);
    sl_stream_close(s);

    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, path), 0);
    sl_gguf_extent e;
    sl_gguf_layer_extent(g, 2, &e);
    h.eio_off = e.begin + 100;
    sl_gguf_close(g);
    cr_assert_eq(sl_stream_open(&s, path, &c), 0, "%s", sl_stream_open_errmsg());
    sl_stream_view v;
    cr_assert_eq(sl_stream_acquire(s, 0, &v), 0, "%s", sl_stream_errmsg(s));
    sl_stream_release(s, 0);
    cr_assert_eq(sl_stream_acquire(s, 1, &v), 0);
    sl_stream_release(s, 1);
    cr_assert_eq(sl_stream_acquire(s, 2, &v), SL_EIO);
    cr_assert_not_null(strstr(sl_stream_errmsg(s), "unit 2"), "%s", sl_stream_errmsg(s));
    cr_assert_eq(sl_stream_acquire(s, 3, &v), 0, "%s", sl_stream_errmsg(s));
    sl_stream_release(s, 3);
    sl_stream_close(s);
    unlink(path);
}

Test(stream_pread, real_models_every_unit_matches_the_file)
{
    const char *models[] = { "stories260K.gguf", "TinyStories-656K-Q8_0.gguf", "llama-2-tiny-random.gguf",
                             "synth-tiny-q4_k.gguf", "synth-tiny-qwen2-q4_k.gguf" };
    int seen = 0;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char path[512];
        if (!st_shared_model(path, sizeof path, models[i])) continue;
        seen++;
        for (int mode = SL_MODE_RESIDENT; mode < SL_MODE_COUNT; mode++) {
            sl_stream_config c;
            sl_stream_config_init(&c);
            c.mem_budget = 1ull << 30;   /* independent of MemAvailable (shared machine) */
            c.mode = mode; c.max_pinned = 1; c.io = SL_IO_PREAD;
            sl_stream *s;
            cr_assert_eq(sl_stream_open(&s, path, &c), 0, "%s: %s", models[i], sl_stream_open_errmsg());
            st_run_passes(s, path, 2);
            const sl_stream_plan *p = sl_stream_get_plan(s);
            cr_assert_eq(p->n_layers, sl_gguf_n_layers(sl_stream_gguf(s)));
            sl_stream_close(s);
        }
    }
    if (!seen) cr_skip_test("no models in %s/models", SL_SHARED_DIR);
}

Test(stream_pread, bad_input_is_an_error_not_a_crash)
{
    sl_stream *s = NULL;
    cr_assert_neq(sl_stream_open(&s, "/nonexistent/model.gguf", NULL), 0);
    cr_assert_null(s);
    cr_assert_not_null(strstr(sl_stream_open_errmsg(), "/nonexistent/model.gguf"));
    char path[256];
    tmp_model(path, sizeof path, "trunc");
    cr_assert_eq(truncate(path, 20000), 0);
    cr_assert_neq(sl_stream_open(&s, path, NULL), 0);
    cr_assert_gt(strlen(sl_stream_open_errmsg()), 10);
    sl_stream_config c;
    sl_stream_config_init(&c);
    c.mem_budget = 1ull << 30;   /* independent of MemAvailable (shared machine) */
    c.depth = -1;
    cr_assert_eq(sl_stream_open(&s, path, &c), SL_EINVAL);
    unlink(path);
}
