/* Split GGUF models (gguf-split layout): the split writer's files open as
 * one model from any shard, byte for byte the source; a missing, foreign or
 * hostile shard is refused with a message naming the file. */
#include "sl_test.h"
#include "../gguf/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MODELS SL_SHARED_DIR "/models/"
#define TN 250                      /* floats per tiny tensor: 1000 bytes, 1024 padded */

static void prefix_of(char *buf, size_t n, const char *tag)
{
    snprintf(buf, n, "/tmp/sl_test_split_%s_%d", tag, (int)getpid());
}

static void shard_name(char *buf, size_t n, const char *prefix, int i, int count)
{
    snprintf(buf, n, "%s-%05d-of-%05d.gguf", prefix, i + 1, count);
}

static void remove_split(const char *prefix, int count)
{
    char p[512];
    for (int i = 0; i < count; i++) { shard_name(p, sizeof p, prefix, i, count); unlink(p); }
}

/* A tiny file: split keys as given (count < 0: none; no_type: vtype of split.no),
 * f32 tensors named names[0..n), tensor k filled with k + tag. */
typedef struct { int64_t count, no, tensors; uint32_t count_type; } keys;

static void write_tiny(const char *path, const keys *k, const char *const *names, int n, float tag)
{
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, path, 3), 0, "%s", sl_last_error());
    cr_assert_eq(sl_gguf_writer_set_str(w, "general.architecture", "tiny"), 0);
    if (k->count >= 0) {
        if (k->count_type == SL_GGUF_STRING) cr_assert_eq(sl_gguf_writer_set_str(w, "split.count", "three"), 0);
        else { uint16_t c = (uint16_t)k->count; cr_assert_eq(sl_gguf_writer_set_scalar(w, "split.count", SL_GGUF_U16, &c), 0); }
        uint16_t no = (uint16_t)k->no;
        cr_assert_eq(sl_gguf_writer_set_scalar(w, "split.no", SL_GGUF_U16, &no), 0);
        cr_assert_eq(sl_gguf_writer_set_i32(w, "split.tensors.count", (int32_t)k->tensors), 0);
    }
    uint64_t ne[1] = { TN };
    for (int i = 0; i < n; i++) cr_assert_eq(sl_gguf_writer_add_tensor(w, names[i], SL_GGML_F32, 1, ne), 0);
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0);
    float d[TN];
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < TN; j++) d[j] = (float)i + tag + (float)j * 1e-3f;
        cr_assert_eq(sl_gguf_writer_write(w, d, sizeof d), 0);
    }
    cr_assert_eq(sl_gguf_writer_close(w), 0, "%s", sl_last_error());
}

/* n tensors "t0".."t{n-1}" as one plain file, split by the writer into
 * files of 2 tensors each (2 KiB): returns the count. */
static uint32_t tiny_split(const char *prefix, int n, float tag)
{
    static char nm[32][16];
    const char *names[32];
    for (int i = 0; i < n; i++) { snprintf(nm[i], sizeof nm[i], "t%d", i); names[i] = nm[i]; }
    char src[512];
    snprintf(src, sizeof src, "%s-src.gguf", prefix);
    keys none = { .count = -1 };
    write_tiny(src, &none, names, n, tag);
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, src), 0, "%s", sl_last_error());
    uint32_t count = 0;
    cr_assert_eq(sl_gguf_write_split(g, prefix, 2048, &count), 0, "%s", sl_last_error());
    sl_gguf_close(g);
    unlink(src);
    return count;
}

/* open path must fail with a message containing want (and want2 if given). */
static void expect_refused(const char *path, const char *want, const char *want2)
{
    sl_gguf *g = NULL;
    int st = sl_gguf_open_path(&g, path);
    cr_assert_neq(st, 0, "%s opened", path);
    cr_assert_null(g);
    const char *m = sl_last_error();
    cr_assert(strstr(m, want), "message '%s' lacks '%s'", m, want);
    if (want2) cr_assert(strstr(m, want2), "message '%s' lacks '%s'", m, want2);
}

static void check_same_model(const sl_gguf *a, const sl_gguf *b)
{
    cr_assert_eq(sl_gguf_n_tensors(a), sl_gguf_n_tensors(b));
    cr_assert_eq(sl_gguf_n_layers(a), sl_gguf_n_layers(b));
    cr_assert_eq(sl_gguf_total_tensor_bytes(a), sl_gguf_total_tensor_bytes(b));
    for (int64_t i = 0; i < sl_gguf_n_kv(a); i++) {
        int64_t j = sl_gguf_find_key(b, sl_gguf_kv_key(a, i));
        cr_assert_geq(j, 0, "key %s lost", sl_gguf_kv_key(a, i));
        cr_assert_eq(sl_gguf_kv_type(a, i), sl_gguf_kv_type(b, j));
    }
    size_t cap = 1 << 20;
    uint8_t *x = malloc(cap), *y = malloc(cap);
    for (int64_t i = 0; i < sl_gguf_n_tensors(a); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(a, i), *u = sl_gguf_find_tensor(b, t->name);
        cr_assert_not_null(u, "tensor %s lost", t->name);
        cr_assert_eq(t->type, u->type);
        cr_assert_eq(t->nbytes, u->nbytes);
        cr_assert_eq(memcmp(t->ne, u->ne, sizeof t->ne), 0);
        const sl_gguf_shard *sh = sl_gguf_shard_at(b, u->shard);
        cr_assert_not_null(sh);
        cr_assert_eq(sl_gguf_shard_of(b, u->file_offset), sh, "%s", t->name);
        cr_assert_eq(u->file_offset, sh->base + sh->data_offset + u->offset);
        cr_assert_leq(u->file_offset + u->nbytes, sh->base + sh->file_size);
        for (uint64_t off = 0; off < t->nbytes; off += cap) {
            size_t k = t->nbytes - off < cap ? (size_t)(t->nbytes - off) : cap;
            cr_assert_eq(sl_gguf_read(a, x, k, t->file_offset + off), 0, "%s", sl_last_error());
            cr_assert_eq(sl_gguf_read(b, y, k, u->file_offset + off), 0, "%s", sl_last_error());
            cr_assert_eq(memcmp(x, y, k), 0, "tensor %s differs at +%llu", t->name, (unsigned long long)off);
        }
    }
    free(x);
    free(y);
}

Test(gguf_split, real_model_round_trip_from_any_shard, .timeout = 120)
{
    const char *src = MODELS "synth2-qwen3moe-q4_k_m.gguf";
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, src), 0, "%s", sl_last_error());
    cr_assert_eq(sl_gguf_n_shards(g), 1u);
    cr_assert_eq(sl_gguf_shard_at(g, 0)->base, 0u);
    cr_assert_eq(sl_gguf_shard_at(g, 0)->file_size, sl_gguf_file_size(g));
    cr_assert_null(sl_gguf_shard_at(g, 1));
    uint64_t max = sl_gguf_total_tensor_bytes(g) * 2 / 7;
    for (int64_t i = 0; i < sl_gguf_n_tensors(g); i++)
        if (sl_gguf_tensor_at(g, i)->nbytes + 32 > max) max = sl_gguf_tensor_at(g, i)->nbytes + 32;
    char prefix[256], p[512];
    prefix_of(prefix, sizeof prefix, "real");
    uint32_t n = 0;
    cr_assert_eq(sl_gguf_write_split(g, prefix, max, &n), 0, "%s", sl_last_error());
    cr_assert_geq(n, 3u, "only %u files at %llu bytes", n, (unsigned long long)max);
    for (uint32_t i = 0; i < n; i++) {
        shard_name(p, sizeof p, prefix, (int)i, (int)n);
        sl_gguf *s;
        cr_assert_eq(sl_gguf_open_path(&s, p), 0, "%s", sl_last_error());
        cr_assert_eq(sl_gguf_n_shards(s), n);
        check_same_model(g, s);
        int64_t per = 0;
        uint64_t prev_end = 0;
        for (uint32_t k = 0; k < n; k++) {
            const sl_gguf_shard *sh = sl_gguf_shard_at(s, k);
            shard_name(p, sizeof p, prefix, (int)k, (int)n);
            cr_assert_str_eq(sh->path, p);
            cr_assert_eq(sh->base % SL_GGUF_SHARD_ALIGN, 0u);
            cr_assert_geq(sh->base, prev_end);
            prev_end = sh->base + sh->file_size;
            cr_assert_gt(sh->n_tensors, 0);
            per += sh->n_tensors;
            /* each file alone: split keys of gguf-split's types; metadata only in the first */
            sl_gguf *one;
            cr_assert_eq(sl_gguf_open_fd(&one, sh->fd, p), 0, "%s", sl_last_error());
            cr_assert_eq(sl_gguf_kv_type(one, sl_gguf_find_key(one, "split.no")), (uint32_t)SL_GGUF_U16);
            cr_assert_eq(sl_gguf_kv_type(one, sl_gguf_find_key(one, "split.count")), (uint32_t)SL_GGUF_U16);
            cr_assert_eq(sl_gguf_kv_type(one, sl_gguf_find_key(one, "split.tensors.count")), (uint32_t)SL_GGUF_I32);
            cr_assert_eq(sl_gguf_n_kv(one), k == 0 ? sl_gguf_n_kv(g) + 3 : 3);
            /* the last three keys in gguf-split's order (it sets split.count
             * last), so that the files are byte for byte llama-gguf-split's */
            int64_t nk = sl_gguf_n_kv(one);
            cr_assert_str_eq(sl_gguf_kv_key(one, nk - 3), "split.no");
            cr_assert_str_eq(sl_gguf_kv_key(one, nk - 2), "split.tensors.count");
            cr_assert_str_eq(sl_gguf_kv_key(one, nk - 1), "split.count");
            uint64_t tb = sl_gguf_total_tensor_bytes(one);
            cr_assert_eq(tb, sh->tensor_bytes);
            cr_assert_leq(tb, max);
            sl_gguf_close(one);
        }
        cr_assert_eq(per, sl_gguf_n_tensors(g));
        cr_assert_eq(sl_gguf_file_size(s), prev_end);
        /* reads crossing from one file into the gap are refused */
        const sl_gguf_shard *s0 = sl_gguf_shard_at(s, 0);
        uint8_t b[64];
        cr_assert_neq(sl_gguf_read(s, b, sizeof b, s0->file_size - 8), 0);
        sl_gguf_close(s);
    }
    sl_gguf_close(g);
    remove_split(prefix, (int)n);
}

Test(gguf_split, split_by_size_as_gguf_split_does)
{
    char prefix[256];
    prefix_of(prefix, sizeof prefix, "size");
    /* 7 tensors of 1000 bytes (1024 padded), at most 2048 per file: 2+2+2+1 */
    cr_assert_eq(tiny_split(prefix, 7, 0), 4u);
    char p[512];
    shard_name(p, sizeof p, prefix, 3, 4);
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, p), 0, "%s", sl_last_error());
    cr_assert_eq(sl_gguf_n_shards(g), 4u);
    for (int i = 0; i < 7; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "t%d", i);
        const sl_gguf_tensor *t = sl_gguf_find_tensor(g, nm);
        cr_assert_not_null(t);
        cr_assert_eq(t->shard, (uint32_t)(i / 2), "%s in file %u", nm, t->shard);
        cr_assert_eq(sl_gguf_tensor_at(g, i), t, "file order kept");
        float v;
        cr_assert_eq(sl_gguf_read(g, &v, sizeof v, t->file_offset), 0);
        cr_assert_float_eq(v, (float)i, 0);
    }
    sl_gguf_close(g);
    /* a tensor above the size alone is refused, nothing written */
    sl_gguf *src;
    const char *nm[1] = { "big" };
    keys none = { .count = -1 };
    snprintf(p, sizeof p, "%s-big.gguf", prefix);
    write_tiny(p, &none, nm, 1, 0);
    cr_assert_eq(sl_gguf_open_path(&src, p), 0);
    cr_assert_neq(sl_gguf_write_split(src, prefix, 512, NULL), 0);
    cr_assert(strstr(sl_last_error(), "'big'"), "%s", sl_last_error());
    sl_gguf_close(src);
    unlink(p);
    remove_split(prefix, 4);
}

Test(gguf_split, missing_shard_named)
{
    char prefix[256], p[512];
    prefix_of(prefix, sizeof prefix, "miss");
    cr_assert_eq(tiny_split(prefix, 6, 0), 3u);
    shard_name(p, sizeof p, prefix, 1, 3);
    cr_assert_eq(unlink(p), 0);
    char first[512];
    shard_name(first, sizeof first, prefix, 0, 3);
    expect_refused(first, p, "shard 2 of 3");
    shard_name(first, sizeof first, prefix, 2, 3);
    expect_refused(first, p, NULL);   /* from the last one too */
    remove_split(prefix, 3);
}

/* File idx of a fresh 6-tensor 3-file split under prefix a replaced by file idx
 * of a split of another model (n tensors, count files): opening must fail
 * naming that file and saying want. */
static void swap_in(const char *a, const char *other, int n, uint32_t count, int idx, const char *want)
{
    char pa[512], pf[512], first[512];
    cr_assert_eq(tiny_split(a, 6, 0), 3u);
    cr_assert_eq(tiny_split(other, n, 100), count);
    shard_name(pa, sizeof pa, a, idx, 3);
    shard_name(pf, sizeof pf, other, idx, (int)count);
    cr_assert_eq(rename(pf, pa), 0);
    shard_name(first, sizeof first, a, 0, 3);
    expect_refused(first, pa, want);
    remove_split(other, (int)count);
}

Test(gguf_split, foreign_shard_named)
{
    char a[256], b[256];
    prefix_of(a, sizeof a, "fa");
    prefix_of(b, sizeof b, "fb");
    swap_in(a, b, 5, 3, 1, "split.tensors.count 5");   /* another 3-file model's second file */
    swap_in(a, b, 7, 4, 2, "split.count 4");           /* a 4-file split's third file */
    remove_split(a, 3);
}

Test(gguf_split, duplicated_tensor_and_count_mismatch)
{
    char prefix[256], p0[512], p1[512];
    prefix_of(prefix, sizeof prefix, "dup");
    shard_name(p0, sizeof p0, prefix, 0, 2);
    shard_name(p1, sizeof p1, prefix, 1, 2);
    const char *n0[2] = { "a", "b" }, *n1[2] = { "b", "c" }, *n2[1] = { "c" };
    keys k0 = { 2, 0, 4, 0 }, k1 = { 2, 1, 4, 0 };
    write_tiny(p0, &k0, n0, 2, 0);
    write_tiny(p1, &k1, n1, 2, 0);
    expect_refused(p0, "tensor 'b' is in both", p1);
    expect_refused(p1, "tensor 'b' is in both", p0);
    /* split.tensors.count says 4, the files hold 3 */
    write_tiny(p1, &k1, n2, 1, 0);
    expect_refused(p0, "hold 3 tensors", "says 4");
    /* both say 3: opens, c read from the second file */
    keys k0b = { 2, 0, 3, 0 }, k1b = { 2, 1, 3, 0 };
    write_tiny(p0, &k0b, n0, 2, 0);
    write_tiny(p1, &k1b, n2, 1, 7);
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, p1), 0, "%s", sl_last_error());
    const sl_gguf_tensor *c = sl_gguf_find_tensor(g, "c");
    cr_assert_eq(c->shard, 1u);
    float v;
    cr_assert_eq(sl_gguf_read(g, &v, sizeof v, c->file_offset), 0);
    cr_assert_float_eq(v, 7.0f, 0);
    cr_assert_str_eq(sl_gguf_name(g), p0);
    sl_gguf_close(g);
    unlink(p0);
    unlink(p1);
}

Test(gguf_split, hostile_split_keys_refused)
{
    char prefix[256], p[512];
    prefix_of(prefix, sizeof prefix, "host");
    const char *nm[1] = { "a" };
    static const struct { keys k; int name_no, name_count; const char *want; } cases[] = {
        { { 0, 0, 2, 0 }, 0, 1, "split.tensors.count says 2" },
        { { 65535, 0, 1, 0 }, 0, 65535, "split.count 65535" },
        { { 3, 3, 1, 0 }, 3, 3, "split.no 3 is not below split.count 3" },
        { { 3, 65535, 1, 0 }, 0, 3, "split.no 65535" },
        { { 3, 0, -1, 0 }, 0, 3, "split.tensors.count -1" },
        { { 3, 1, 3, 0 }, 0, 3, "does not end in '-00002-of-00003.gguf'" },
        { { 3, 0, 3, SL_GGUF_STRING }, 0, 3, "split.count" },
        { { 1, 0, 2, 0 }, 0, 1, "split.tensors.count says 2" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        shard_name(p, sizeof p, prefix, cases[i].name_no, cases[i].name_count);
        write_tiny(p, &cases[i].k, nm, 1, 0);
        expect_refused(p, cases[i].want, NULL);
        unlink(p);
    }
    /* a single-file "split" whose keys agree opens as a plain file */
    keys one = { 1, 0, 1, 0 };
    shard_name(p, sizeof p, prefix, 0, 1);
    write_tiny(p, &one, nm, 1, 0);
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, p), 0, "%s", sl_last_error());
    cr_assert_eq(sl_gguf_n_shards(g), 1u);
    sl_gguf_close(g);
    unlink(p);
}

/* llama-gguf-split --merge copies the first shard's metadata into the merged
 * file with split.count set to 0 ("do not merge again") and split.no 0,
 * split.tensors.count kept; llama.cpp opens that as one plain file. */
Test(gguf_split, merged_file_with_split_count_zero_opens_plain)
{
    char p[512];
    snprintf(p, sizeof p, "/tmp/sl_test_split_merged_%d.gguf", (int)getpid());
    const char *nm[3] = { "a", "b", "c" };
    keys merged = { 0, 0, 3, 0 };
    write_tiny(p, &merged, nm, 3, 5);
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, p), 0, "%s", sl_last_error());
    cr_assert_eq(sl_gguf_n_shards(g), 1u);
    cr_assert_eq(sl_gguf_n_tensors(g), 3);
    float v;
    cr_assert_eq(sl_gguf_read(g, &v, sizeof v, sl_gguf_find_tensor(g, "c")->file_offset), 0);
    cr_assert_float_eq(v, 7.0f, 0);
    sl_gguf_close(g);
    unlink(p);
}
