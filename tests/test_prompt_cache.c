/* Session state files (engine/session_state.c, sluice.h "session state files"):
 * restore gives bitwise the logits and samples of the saved session, the prefix
 * restore equals a fresh computation in the same chunks, and every damaged or
 * foreign file (truncated at each 4 KiB, bytes flipped, another model, another
 * KV cell type, another version) is rejected with a message and leaves an empty,
 * usable session. Also the hash the files use, and `sluice run --prompt-cache`.
 * SL_HOST_ONLY (writes files, runs the sluice binary). */
#include "sl_test.h"
#include "session_testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../engine/hash64.h"
#include "../gguf/gguf_type.h"
#include "../engine/sluice.h"
#include "../gguf/base/sl_status.h"
#include "util_cli.h"
#include "util_file.h"

#define MODELS SL_SHARED_DIR "/models"
#define TS MODELS "/TinyStories-656K-Q8_0.gguf"
#define S260 MODELS "/stories260K.gguf"
#define HDR 112   /* sizeof the file header (session_state.c) */

static void tmp_path(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "/tmp/sl_test_pc_%s_%d.bin", tag, (int)getpid());
}

static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(b, 1, n, f), n);
    fclose(f);
}

static int32_t n_vocab_of(sl_model *m)
{
    sl_model_info mi;
    sl_model_get_info(m, &mi);
    return mi.n_vocab;
}

Test(hash64, streaming_equals_one_shot)
{
    uint8_t buf[1000];
    for (int i = 0; i < 1000; i++) buf[i] = (uint8_t)(i * 7 + 3);
    for (size_t n = 0; n <= 1000; n += 37) {
        uint64_t one = sl_hash64_of(buf, n, 9);
        for (size_t step = 1; step < 70; step += 13) {
            sl_hash64 h;
            sl_hash64_init(&h, 9);
            for (size_t i = 0; i < n; i += step) sl_hash64_update(&h, buf + i, n - i < step ? n - i : step);
            cr_assert_eq(sl_hash64_final(&h), one, "n %zu step %zu", n, step);
        }
    }
    /* one flipped bit anywhere, and the seed, change the digest */
    uint64_t ref = sl_hash64_of(buf, 1000, 9);
    cr_assert_neq(sl_hash64_of(buf, 1000, 10), ref);
    for (int i = 0; i < 1000; i += 11) {
        buf[i] ^= 0x10;
        cr_assert_neq(sl_hash64_of(buf, 1000, 9), ref, "byte %d", i);
        buf[i] ^= 0x10;
    }
    cr_assert_neq(sl_hash64_of(buf, 999, 9), ref);
}

/* Save after N tokens; a fresh session loading the file has the same logits
 * (bitwise), then the same logits after more tokens, and samples the same
 * tokens with the restored PRNG. */
Test(prompt_cache, full_roundtrip_bitwise)
{
    sl_model *m = st_open_ctx(TS, 256, 16);
    int32_t nv = n_vocab_of(m);
    enum { N = 70, M = 9 };
    int32_t ids[N + M];
    st_some_ids(ids, N + M, nv, 7);
    char path[128];
    tmp_path(path, sizeof path, "full");
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.seed = 1234;

    sl_session *a = st_session(m, false);
    cr_assert_eq(sl_session_set_sampling(a, &sp), 0);
    cr_assert_eq(sl_session_save(a, path), SL_EINVAL, "nothing fed yet");
    cr_assert_eq(sl_session_feed_tokens(a, ids, N), 0, "%s", sl_session_errmsg(a));
    int32_t t0;
    cr_assert_eq(sl_session_sample(a, &t0), 0);   /* advance the PRNG: it must travel */
    cr_assert_eq(sl_session_save(a, path), 0, "%s", sl_session_errmsg(a));
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    cr_assert_eq(access(tmp, F_OK), -1, "temp file renamed away");
    float *la = malloc((size_t)nv * sizeof(float)), *lb = malloc((size_t)nv * sizeof(float));
    cr_assert(la && lb);
    memcpy(la, sl_session_logits(a), (size_t)nv * sizeof(float));

    sl_session *b = st_session(m, false);
    sl_sampling other = sp;
    other.seed = 99;
    cr_assert_eq(sl_session_set_sampling(b, &other), 0);
    cr_assert_eq(sl_session_load(b, path), 0, "%s", sl_session_errmsg(b));
    cr_assert_eq(sl_session_n_past(b), N);
    cr_assert_not_null(sl_session_logits(b));
    cr_assert_eq(memcmp(sl_session_logits(b), la, (size_t)nv * sizeof(float)), 0, "restored logits bitwise");
    sl_stats st;
    sl_session_get_stats(b, &st);
    cr_assert_eq(st.n_restored, N);

    /* same continuation, same logits and same sampled tokens */
    for (int i = 0; i < 5; i++) {
        int32_t ta, tb;
        cr_assert_eq(sl_session_step(a, &ta), 0);
        cr_assert_eq(sl_session_step(b, &tb), 0);
        cr_assert_eq(ta, tb, "step %d", i);
    }
    cr_assert_eq(sl_session_feed_tokens(a, ids + N, M), 0);
    cr_assert_eq(sl_session_feed_tokens(b, ids + N, M), 0);
    cr_assert_eq(memcmp(sl_session_logits(a), sl_session_logits(b), (size_t)nv * sizeof(float)), 0);

    /* saving again replaces the file atomically */
    cr_assert_eq(sl_session_save(b, path), 0, "%s", sl_session_errmsg(b));
    cr_assert_eq(sl_session_load(a, path), 0, "%s", sl_session_errmsg(a));
    cr_assert_eq(sl_session_n_past(a), N + 5 + M);
    free(la); free(lb);
    unlink(path);
    sl_session_destroy(a);
    sl_session_destroy(b);
    sl_model_close(m);
}

/* Quantized caches (q8_0 K, q4_0 V, stored in their rotated basis) travel
 * as they are: a restore gives bitwise the same logits and continuation; a
 * session whose cache has other types refuses the file. */
Test(prompt_cache, quantized_kv_roundtrip)
{
    sl_model_params mp = st_params(64, 0, 2);
    mp.type_k = SL_GGML_Q8_0;
    mp.type_v = SL_GGML_Q4_0;
    sl_model *m = NULL, *f16 = NULL;
    cr_assert_eq(sl_model_open(&m, MODELS "/synth2-qwen3-q4_k_m.gguf", &mp), 0, "%s", sl_last_error());
    int32_t nv = n_vocab_of(m);
    int32_t ids[24];
    st_some_ids(ids, 24, nv, 11);
    char path[128];
    tmp_path(path, sizeof path, "qkv");
    sl_session *a = st_session(m, false), *b = st_session(m, false);
    cr_assert_eq(sl_session_feed_tokens(a, ids, 20), 0, "%s", sl_session_errmsg(a));
    cr_assert_eq(sl_session_save(a, path), 0, "%s", sl_session_errmsg(a));
    cr_assert_eq(sl_session_load(b, path), 0, "%s", sl_session_errmsg(b));
    cr_assert_eq(memcmp(sl_session_logits(a), sl_session_logits(b), (size_t)nv * sizeof(float)), 0);
    cr_assert_eq(sl_session_feed_tokens(a, ids + 20, 4), 0);
    cr_assert_eq(sl_session_feed_tokens(b, ids + 20, 4), 0);
    cr_assert_eq(memcmp(sl_session_logits(a), sl_session_logits(b), (size_t)nv * sizeof(float)), 0,
                 "continuation after a quantized restore bitwise");
    mp.type_k = mp.type_v = SL_GGML_F16;
    cr_assert_eq(sl_model_open(&f16, MODELS "/synth2-qwen3-q4_k_m.gguf", &mp), 0, "%s", sl_last_error());
    sl_session *c = st_session(f16, false);
    cr_assert_neq(sl_session_load(c, path), 0, "an F16 cache refuses a q8_0/q4_0 file");
    cr_assert_eq(sl_session_n_past(c), 0);
    unlink(path);
    sl_session_destroy(a);
    sl_session_destroy(b);
    sl_session_destroy(c);
    sl_model_close(m);
    sl_model_close(f16);
}

/* Prefix restore: the longest common prefix is restored, the rest fed in the
 * same chunks as a fresh session gives bitwise the same logits. */
Test(prompt_cache, prefix_equals_fresh)
{
    sl_model *m = st_open_ctx(TS, 256, 8);
    int32_t nv = n_vocab_of(m);
    enum { N = 60, P = 37, R = 20 };
    int32_t ids[N], q[P + R];
    st_some_ids(ids, N, nv, 11);
    memcpy(q, ids, P * sizeof *q);
    st_some_ids(q + P, R, nv, 12);
    q[P] = ids[P] == 5 ? 6 : 5;   /* diverges right at P */
    char path[128];
    tmp_path(path, sizeof path, "prefix");

    sl_session *a = st_session(m, false);
    cr_assert_eq(sl_session_feed_tokens(a, ids, N), 0);
    cr_assert_eq(sl_session_save(a, path), 0, "%s", sl_session_errmsg(a));
    float *full = malloc((size_t)nv * sizeof(float));
    cr_assert_not_null(full);
    memcpy(full, sl_session_logits(a), (size_t)nv * sizeof(float));

    /* fresh: P tokens, then R tokens */
    sl_session *f = st_session(m, false);
    cr_assert_eq(sl_session_feed_tokens(f, q, P), 0);
    cr_assert_eq(sl_session_feed_tokens(f, q + P, R), 0);

    sl_session *b = st_session(m, false);
    int32_t reused = -1;
    cr_assert_eq(sl_session_load_prefix(b, path, q, P + R, &reused), 0, "%s", sl_session_errmsg(b));
    cr_assert_eq(reused, P);
    cr_assert_null(sl_session_logits(b), "the file's logits belong to another continuation");
    cr_assert_eq(sl_session_feed_tokens(b, q + reused, P + R - reused), 0);
    cr_assert_eq(memcmp(sl_session_logits(b), sl_session_logits(f), (size_t)nv * sizeof(float)), 0,
                 "prefix restore + rest == fresh, bitwise");

    /* the whole file matched: its logits come along, nothing left to feed */
    cr_assert_eq(sl_session_load_prefix(b, path, ids, N, &reused), 0, "%s", sl_session_errmsg(b));
    cr_assert_eq(reused, N);
    cr_assert_not_null(sl_session_logits(b));
    cr_assert_eq(memcmp(sl_session_logits(b), full, (size_t)nv * sizeof(float)), 0);

    /* a prompt that is a strict prefix of the file: one token is left to compute */
    cr_assert_eq(sl_session_load_prefix(b, path, ids, 20, &reused), 0, "%s", sl_session_errmsg(b));
    cr_assert_eq(reused, 19);
    cr_assert_null(sl_session_logits(b));
    cr_assert_eq(sl_session_feed_tokens(b, ids + 19, 1), 0);
    cr_assert_eq(sl_session_n_past(b), 20);

    /* nothing in common: nothing restored, not an error */
    int32_t other[3] = { 2, 5, 6 };
    cr_assert_eq(sl_session_load_prefix(b, path, other, 3, &reused), 0, "%s", sl_session_errmsg(b));
    cr_assert_eq(reused, 0);
    cr_assert_eq(sl_session_n_past(b), 0);
    free(full);
    unlink(path);
    sl_session_destroy(a);
    sl_session_destroy(b);
    sl_session_destroy(f);
    sl_model_close(m);
}

/* Loads `bytes` as a cache file; must be rejected with `want` (0 = any error)
 * and leave an empty session that still computes. */
static void expect_rejected(sl_session *s, const char *path, const void *bytes, size_t n, int want,
                            const char *msg_part, const char *what)
{
    write_bytes(path, bytes, n);
    int32_t reused = -1, ids[4] = { 1, 5, 6, 7 };
    int rc = sl_session_load(s, path);
    cr_assert_lt(rc, 0, "%s: accepted", what);
    if (want) cr_assert_eq(rc, want, "%s: %d (%s)", what, rc, sl_session_errmsg(s));
    if (msg_part) cr_assert_not_null(strstr(sl_session_errmsg(s), msg_part), "%s: %s", what, sl_session_errmsg(s));
    cr_assert_not_null(strstr(sl_session_errmsg(s), "prompt cache"), "%s: %s", what, sl_session_errmsg(s));
    cr_assert_eq(sl_session_n_past(s), 0, "%s", what);
    cr_assert_null(sl_session_logits(s), "%s", what);
    rc = sl_session_load_prefix(s, path, ids, 4, &reused);
    cr_assert_lt(rc, 0, "%s: prefix accepted", what);
    cr_assert_eq(reused, 0);
    cr_assert_eq(sl_session_n_past(s), 0);
}

static uint8_t *make_file(sl_model *m, const char *path, int n, size_t *len)
{
    int32_t ids[256];
    st_some_ids(ids, n, n_vocab_of(m), 5);
    sl_session *a = st_session(m, false);
    cr_assert_eq(sl_session_feed_tokens(a, ids, n), 0);
    cr_assert_eq(sl_session_save(a, path), 0, "%s", sl_session_errmsg(a));
    sl_session_destroy(a);
    uint8_t *b = sl_test_slurp(path, len);
    cr_assert_not_null(b);
    return b;
}

/* Header field rewritten with a valid header checksum (so the field's own check is what fires). */
static void set_u32(uint8_t *b, size_t off, uint32_t v)
{
    memcpy(b + off, &v, 4);
    uint64_t h = sl_hash64_of(b, HDR - 8, 0x5c1a1ce0u);
    memcpy(b + HDR - 8, &h, 8);
}

Test(prompt_cache, damaged_files_rejected)
{
    sl_model *m = st_open_ctx(TS, 256, 0);
    char path[128], bad[128];
    tmp_path(path, sizeof path, "good");
    tmp_path(bad, sizeof bad, "bad");
    size_t len = 0;
    uint8_t *good = make_file(m, path, 100, &len);
    cr_assert_gt(len, 8 * 4096, "file spans several 4 KiB pages (%zu)", len);
    sl_session *s = st_session(m, false);
    cr_assert_eq(sl_session_load(s, path), 0, "%s", sl_session_errmsg(s));

    /* truncated: at every 4 KiB, inside the header, one byte short */
    for (size_t cut = 0; cut < len; cut += 4096) expect_rejected(s, bad, good, cut, SL_ETRUNC, NULL, "truncated");
    size_t cuts[] = { 1, 8, HDR - 1, HDR, HDR + 3, len - 8, len - 1 };
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++)
        expect_rejected(s, bad, good, cuts[i], SL_ETRUNC, NULL, "truncated (edges)");
    /* one byte too many */
    uint8_t *longer = malloc(len + 1);
    cr_assert_not_null(longer);
    memcpy(longer, good, len);
    longer[len] = 0;
    expect_rejected(s, bad, longer, len + 1, SL_ETRUNC, "trailing", "longer");
    free(longer);

    /* flipped bytes: every header byte, and payload bytes every 1 KiB + 7 */
    uint8_t *c = malloc(len);
    cr_assert_not_null(c);
    for (size_t i = 0; i < len; i += i < HDR ? 1 : 1031) {
        memcpy(c, good, len);
        c[i] ^= 0x5a;
        expect_rejected(s, bad, c, len, 0, NULL, "flipped");
    }
    /* the payload checksum is what catches a payload flip */
    memcpy(c, good, len);
    c[len / 2] ^= 1;
    expect_rejected(s, bad, c, len, SL_EFORMAT, "payload checksum", "payload flip");

    /* another version, another KV cell type / row size, a token outside the vocab */
    memcpy(c, good, len);
    set_u32(c, 8, 2);
    expect_rejected(s, bad, c, len, SL_EVERSION, "version 2", "version");
    memcpy(c, good, len);
    set_u32(c, 24, 8);   /* k_type = q8_0 */
    expect_rejected(s, bad, c, len, SL_EUNSUPPORTED, "KV cells q8_0", "k type");
    memcpy(c, good, len);
    set_u32(c, 28, 2);   /* v_type = q4_0 */
    expect_rejected(s, bad, c, len, SL_EUNSUPPORTED, "KV cells", "v type");
    memcpy(c, good, len);
    set_u32(c, 32, 34);   /* k_row_bytes */
    expect_rejected(s, bad, c, len, SL_EUNSUPPORTED, "bytes per row", "row bytes");
    memcpy(c, good, len);
    set_u32(c, 56, 0x7fffffff);   /* n_tokens: far past n_ctx, sizes must not be trusted */
    expect_rejected(s, bad, c, len, SL_EUNSUPPORTED, "tokens", "n_tokens");
    memcpy(c, good, len);
    int32_t tok = 1 << 30;
    memcpy(c + HDR + 4, &tok, 4);
    expect_rejected(s, bad, c, len, SL_EFORMAT, "outside the vocab", "token id");
    expect_rejected(s, bad, "", 0, SL_ETRUNC, NULL, "empty");
    free(c);

    /* missing file: SL_ENOENT; the good file still loads after all that */
    unlink(bad);
    cr_assert_eq(sl_session_load(s, bad), SL_ENOENT);
    cr_assert_eq(sl_session_load(s, path), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_n_past(s), 100);
    int32_t t;
    cr_assert_eq(sl_session_step(s, &t), 0);
    free(good);
    unlink(path);
    st_close(s, m);
}

Test(prompt_cache, wrong_model_rejected)
{
    sl_model *a = st_open_ctx(TS, 64, 0), *b = st_open_ctx(S260, 64, 0);
    char path[128];
    tmp_path(path, sizeof path, "model");
    size_t len;
    free(make_file(a, path, 10, &len));
    sl_session *s = st_session(b, false);
    cr_assert_eq(sl_session_load(s, path), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(sl_session_errmsg(s), "another model"), "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_n_past(s), 0);
    /* the same model opened with a smaller context cannot hold the file either */
    sl_model *small = st_open_ctx(TS, 8, 0);
    sl_session *t = st_session(small, false);
    cr_assert_eq(sl_session_load(t, path), SL_EUNSUPPORTED);
    cr_assert_not_null(strstr(sl_session_errmsg(t), "holds 1..8"), "%s", sl_session_errmsg(t));
    unlink(path);
    sl_session_destroy(s);
    sl_session_destroy(t);
    sl_model_close(small);
    sl_model_close(a);
    sl_model_close(b);
}

/* ---- the command line ------------------------------------------------------ */
static int sluice_cmd(const char *args, char *out, size_t out_len) { return sl_test_sluice(args, out, out_len); }

Test(cli, run_prompt_cache)
{
    char path[128], args[512], first[8192], out[8192];
    tmp_path(path, sizeof path, "cli");
    unlink(path);
    snprintf(args, sizeof args, "run -m " TS " -p 'Once upon a time there was a dog' -n 12 --temp 0 -t 2 "
             "--prompt-cache %s", path);
    cr_assert_eq(sluice_cmd(args, first, sizeof first), 0, "%s", first);
    cr_assert_not_null(strstr(first, "does not exist yet"), "%s", first);
    cr_assert_eq(sluice_cmd(args, out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "reused"), "%s", out);
    cr_assert_not_null(strstr(out, "positions restored"), "%s", out);
    /* the generated text is the same */
    const char *a = strstr(first, "Once upon"), *b = strstr(out, "Once upon");
    cr_assert(a && b);
    cr_assert_eq(strncmp(a, b, strcspn(a, "\n")), 0, "%s\n---\n%s", first, out);
    /* a damaged file: a message, and the prompt is computed */
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    fseek(f, 200, SEEK_SET);
    fputc(0xff, f);
    fclose(f);
    cr_assert_eq(sluice_cmd(args, out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "recomputing the prompt"), "%s", out);
    unlink(path);
}

/* ---- hardening (issue 38, findings 3 and 4) ------------------------------ */

static size_t slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* Entries of /tmp starting with "<base of path>.tmp.": temporaries left behind. */
static int leftover_temps(const char *path)
{
    const char *base = strrchr(path, '/') + 1;
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s.tmp.", base);
    DIR *d = opendir("/tmp");
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return n;
}

/* Finding 3: links planted where the save puts its temporary (the name it
 * used to take, PATH.tmp.PID) or at the target are never written through. */
Test(prompt_cache, save_does_not_follow_symlink)
{
    sl_model *m = st_open_ctx(TS, 256, 16);
    int32_t ids[20];
    st_some_ids(ids, 20, n_vocab_of(m), 3);
    char path[128], victim[128], ghost[128], planted[192], got[64];
    tmp_path(path, sizeof path, "link");
    tmp_path(victim, sizeof victim, "victim");
    tmp_path(ghost, sizeof ghost, "ghost");
    snprintf(planted, sizeof planted, "%s.tmp.%d", path, (int)getpid());
    unlink(path); unlink(planted); unlink(ghost);
    write_bytes(victim, "victim's own bytes", 18);
    sl_session *s = st_session(m, false);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 20), 0, "%s", sl_session_errmsg(s));

    /* a link to a file the victim can write */
    cr_assert_eq(symlink(victim, planted), 0);
    cr_assert_eq(sl_session_save(s, path), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(slurp(victim, got, sizeof got), 18);
    cr_assert_eq(memcmp(got, "victim's own bytes", 18), 0, "the victim file was written through the link");
    unlink(planted);
    /* a dangling link: following it would create a file of the attacker's choosing */
    cr_assert_eq(symlink(ghost, planted), 0);
    cr_assert_eq(sl_session_save(s, path), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(access(ghost, F_OK), -1, "the dangling link was followed");
    unlink(planted);
    /* the target itself a link: replaced by the new file, its destination untouched */
    unlink(path);
    cr_assert_eq(symlink(victim, path), 0);
    cr_assert_eq(sl_session_save(s, path), 0, "%s", sl_session_errmsg(s));
    struct stat sb;
    cr_assert_eq(lstat(path, &sb), 0);
    cr_assert(S_ISREG(sb.st_mode), "the target is a regular file now");
    cr_assert_eq(slurp(victim, got, sizeof got), 18);
    cr_assert_eq(memcmp(got, "victim's own bytes", 18), 0);
    cr_assert_eq(sl_session_load(s, path), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(leftover_temps(path), 0);
    unlink(path); unlink(victim);
    sl_session_destroy(s);
    sl_model_close(m);
}

/* Finding 3: a write that fails part way (here the file-size limit, as a full
 * disk would) leaves the previous file byte-identical and no temporary. */
Test(prompt_cache, save_failure_keeps_previous_file)
{
    sl_model *m = st_open_ctx(TS, 256, 16);
    enum { N = 40 };
    int32_t ids[2 * N];
    st_some_ids(ids, 2 * N, n_vocab_of(m), 5);
    char path[128];
    tmp_path(path, sizeof path, "efbig");
    sl_session *s = st_session(m, false);
    cr_assert_eq(sl_session_feed_tokens(s, ids, N), 0, "%s", sl_session_errmsg(s));
    cr_assert_eq(sl_session_save(s, path), 0, "%s", sl_session_errmsg(s));
    static char before[1 << 20], after[1 << 20];
    size_t nb = slurp(path, before, sizeof before);
    cr_assert(nb > HDR && nb < sizeof before);

    cr_assert_eq(sl_session_feed_tokens(s, ids + N, N), 0, "%s", sl_session_errmsg(s));
    signal(SIGXFSZ, SIG_IGN);   /* write() fails with EFBIG instead of killing us */
    struct rlimit old, lim;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = nb / 2;
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = sl_session_save(s, path);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    cr_assert_eq(rc, SL_EIO, "save past the limit: %d", rc);
    cr_assert_not_null(strstr(sl_session_errmsg(s), path), "%s", sl_session_errmsg(s));
    cr_assert_eq(slurp(path, after, sizeof after), nb);
    cr_assert_eq(memcmp(before, after, nb), 0, "the previous file changed");
    cr_assert_eq(leftover_temps(path), 0, "a temporary was left behind");
    /* and the session still saves once there is room */
    cr_assert_eq(sl_session_save(s, path), 0, "%s", sl_session_errmsg(s));
    unlink(path);
    sl_session_destroy(s);
    sl_model_close(m);
}

/* Finding 4: a FIFO named as the prompt cache is refused at once (it used to
 * block in open() for ever); the alarm turns a hang into a failed test. */
Test(prompt_cache, load_refuses_fifo)
{
    sl_model *m = st_open_ctx(TS, 256, 16);
    int32_t ids[8];
    st_some_ids(ids, 8, n_vocab_of(m), 1);
    char path[128];
    tmp_path(path, sizeof path, "fifo");
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    sl_session *s = st_session(m, false);
    alarm(10);
    cr_assert_eq(sl_session_load(s, path), SL_EINVAL);
    cr_assert_not_null(strstr(sl_session_errmsg(s), path), "%s", sl_session_errmsg(s));
    cr_assert_not_null(strstr(sl_session_errmsg(s), "not a regular file"), "%s", sl_session_errmsg(s));
    int32_t reused = -1;
    cr_assert_eq(sl_session_load_prefix(s, path, ids, 8, &reused), SL_EINVAL);
    cr_assert_eq(reused, 0);
    alarm(0);
    /* the session is empty and usable */
    cr_assert_eq(sl_session_n_past(s), 0);
    cr_assert_eq(sl_session_feed_tokens(s, ids, 8), 0, "%s", sl_session_errmsg(s));
    unlink(path);
    sl_session_destroy(s);
    sl_model_close(m);
}

/* Finding 4 through the command: `run --prompt-cache FIFO --prompt-cache-ro`
 * says why the file is skipped and computes the prompt instead of hanging. */
Test(cli, run_prompt_cache_fifo_does_not_hang)
{
    char path[128], args[512], out[8192];
    tmp_path(path, sizeof path, "clififo");
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    snprintf(args, sizeof args, "run -m " TS " -p 'Once upon a time' -n 4 --temp 0 -t 1 "
             "--prompt-cache %s --prompt-cache-ro", path);
    alarm(60);
    cr_assert_eq(sluice_cmd(args, out, sizeof out), 0, "%s", out);
    alarm(0);
    cr_assert_not_null(strstr(out, "not a regular file"), "%s", out);
    cr_assert_not_null(strstr(out, "Once upon a time"), "%s", out);
    unlink(path);
}
