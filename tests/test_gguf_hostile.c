/* Malformed-file corpus generated here: truncation at every header byte,
 * every count/length/type/dim/offset field patched to extreme values, magic
 * and version, duplicates, deep nesting, random corruption. Each case must
 * fail with a non-empty message (or, for random flips, at least not crash). */
#include "sl_test.h"
#include "../gguf/gguf.h"
#include "../gguf/base/sl_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct { const unsigned char *p; size_t n; uint64_t fail_at; } mem;

static int64_t mem_read(void *ctx, void *buf, size_t len, uint64_t off)
{
    const mem *m = ctx;
    if (m->fail_at && off + len > m->fail_at) return -EIO;
    if (off >= m->n) return 0;
    size_t k = m->n - off < len ? m->n - (size_t)off : len;
    memcpy(buf, m->p + off, k);
    return (int64_t)k;
}

/* Opens, walks everything it can reach, closes. Returns the status. */
static int try_open(const unsigned char *p, size_t n, uint64_t claimed_size)
{
    mem m = { p, n, 0 };
    sl_gguf *g = (sl_gguf *)1;
    sl_err_clear();
    int st = sl_gguf_open_cb(&g, mem_read, &m, claimed_size, "corpus");
    if (st) {
        cr_assert_null(g);
        cr_assert_lt(st, 0);
        cr_assert_neq(sl_gguf_errmsg(NULL)[0], '\0', "status %d without a message", st);
        return st;
    }
    for (int64_t i = 0; i < sl_gguf_n_kv(g); i++) {
        const sl_gguf_value *v = sl_gguf_kv_value(g, i), *e;
        sl_gguf_value tmp;
        for (uint64_t k = 0; k < sl_gguf_value_arr_len(v) && k < 4; k++)
            cr_assert_eq(sl_gguf_value_arr_at(v, k, &tmp, &e), 0);
    }
    for (int64_t i = 0; i < sl_gguf_n_tensors(g); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        cr_assert_leq(t->file_offset + t->nbytes, claimed_size);
        cr_assert_eq(sl_gguf_find_tensor(g, t->name), t);
    }
    sl_gguf_close(g);
    return 0;
}

static void must_fail(const unsigned char *p, size_t n, const char *what)
{
    int st = try_open(p, n, n);
    cr_assert_neq(st, 0, "%s: accepted", what);
}

/* ---- the base file and a map of its fields ---------------------------- */

enum kind { K_NTENS, K_NKV, K_KEYLEN, K_VTYPE, K_ARRTYPE, K_ARRLEN, K_STRLEN, K_TNAMELEN,
            K_NDIMS, K_NE, K_TTYPE, K_TOFF, K_ALIGN, K_NKINDS };
typedef struct { size_t off; int size; enum kind kind; } field;
typedef struct { unsigned char *p; size_t n; field f[256]; int nf; size_t data_off; } base;

static uint64_t rd(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void wr(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void add(base *b, size_t off, int size, enum kind k)
{
    cr_assert_lt(b->nf, 256);
    b->f[b->nf++] = (field){ off, size, k };
}

static size_t walk_value(base *b, size_t pos, uint32_t type)
{
    static const int sz[13] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    if (type == SL_GGUF_STRING) {
        add(b, pos, 8, K_STRLEN);
        return pos + 8 + rd(b->p + pos, 8);
    }
    if (type == SL_GGUF_ARRAY) {
        uint32_t et = (uint32_t)rd(b->p + pos, 4);
        uint64_t n = rd(b->p + pos + 4, 8);
        add(b, pos, 4, K_ARRTYPE);
        add(b, pos + 4, 8, K_ARRLEN);
        pos += 12;
        for (uint64_t i = 0; i < n; i++) pos = walk_value(b, pos, et);
        return pos;
    }
    return pos + (size_t)sz[type];
}

static void make_base(base *b)
{
    char path[256];
    snprintf(path, sizeof path, "/tmp/sl_test_gguf_hostile_%d.gguf", (int)getpid());
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, path, 3), 0);
    cr_assert_eq(sl_gguf_writer_set_str(w, "general.architecture", "llama"), 0);
    cr_assert_eq(sl_gguf_writer_set_u32(w, "general.alignment", 32), 0);
    const char *toks[3] = { "<s>", "hello", "world" };
    cr_assert_eq(sl_gguf_writer_set_arr_str(w, "a.str", toks, 3), 0);
    static const uint16_t x[2] = { 1, 2 }, y[1] = { 3 };
    sl_gguf_value in[2] = { { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_U16, .n = 2, .v.data = x },
                            { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_U16, .n = 1, .v.data = y } };
    sl_gguf_value out = { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_ARRAY, .n = 2, .v.elems = in };
    cr_assert_eq(sl_gguf_writer_set_value(w, "n.arr", &out), 0);
    cr_assert_eq(sl_gguf_writer_set_u32(w, "dup.k1", 7), 0);
    cr_assert_eq(sl_gguf_writer_set_u32(w, "dup.k2", 8), 0);
    static const struct { const char *n; uint32_t t, nd; uint64_t ne[2]; } tt[] = {
        { "token_embd.weight", SL_GGML_F32, 2, { 8, 4 } },
        { "blk.0.w1", SL_GGML_Q4_0, 2, { 64, 2 } },
        { "blk.0.w2", SL_GGML_F32, 1, { 8, 1 } },
        { "blk.1.w1", SL_GGML_Q8_0, 1, { 32, 1 } },
        { "blk.1.w2", SL_GGML_F32, 1, { 16, 1 } },   /* 64 bytes: the file ends on it */
    };
    size_t total = 0;
    for (size_t i = 0; i < 5; i++) {
        cr_assert_eq(sl_gguf_writer_add_tensor(w, tt[i].n, tt[i].t, tt[i].nd, tt[i].ne), 0);
        uint64_t s;
        sl_gguf_tensor_size(tt[i].t, tt[i].nd, tt[i].ne, &s);
        total += s;
    }
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0);
    unsigned char *d = malloc(total);
    for (size_t i = 0; i < total; i++) d[i] = (unsigned char)(i * 37);
    cr_assert_eq(sl_gguf_writer_write(w, d, total), 0);
    free(d);
    cr_assert_eq(sl_gguf_writer_close(w), 0);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    b->p = malloc(1 << 16);
    b->n = fread(b->p, 1, 1 << 16, f);
    fclose(f);
    unlink(path);

    /* map the fields */
    b->nf = 0;
    add(b, 8, 8, K_NTENS);
    add(b, 16, 8, K_NKV);
    size_t pos = 24;
    for (uint64_t i = 0, n = rd(b->p + 16, 8); i < n; i++) {
        add(b, pos, 8, K_KEYLEN);
        uint64_t kl = rd(b->p + pos, 8);
        int is_align = kl == 17 && !memcmp(b->p + pos + 8, "general.alignment", 17);
        pos += 8 + kl;
        add(b, pos, 4, K_VTYPE);
        uint32_t t = (uint32_t)rd(b->p + pos, 4);
        pos += 4;
        if (is_align) add(b, pos, 4, K_ALIGN);
        pos = walk_value(b, pos, t);
    }
    for (uint64_t i = 0, n = rd(b->p + 8, 8); i < n; i++) {
        add(b, pos, 8, K_TNAMELEN);
        pos += 8 + rd(b->p + pos, 8);
        add(b, pos, 4, K_NDIMS);
        uint32_t nd = (uint32_t)rd(b->p + pos, 4);
        pos += 4;
        for (uint32_t d2 = 0; d2 < nd; d2++, pos += 8) add(b, pos, 8, K_NE);
        add(b, pos, 4, K_TTYPE);
        add(b, pos + 4, 8, K_TOFF);
        pos += 12;
    }
    b->data_off = (pos + 31) / 32 * 32;
    cr_assert_eq(try_open(b->p, b->n, b->n), 0, "base file: %s", sl_last_error());
}

Test(gguf_hostile, truncation_everywhere)
{
    base b;
    make_base(&b);
    /* every prefix: header, metadata, infos, data (the last tensor ends at EOF) */
    for (size_t n = 0; n < b.n; n++) {
        unsigned char *cut = malloc(n ? n : 1);   /* exact-size copy: ASan sees overreads */
        memcpy(cut, b.p, n);
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu of %zu", n, b.n);
        must_fail(cut, n, what);
        free(cut);
    }
    /* a callback that delivers fewer bytes than the stated size */
    cr_assert_eq(try_open(b.p, b.n - 1, b.n), SL_ETRUNC);
    cr_assert_eq(try_open(b.p, 100, b.n), SL_ETRUNC);
    free(b.p);
}

Test(gguf_hostile, field_extremes)
{
    static const uint64_t vals[K_NKINDS][8] = {
        [K_NTENS]    = { UINT64_MAX, 0xffffffff, 0x7fffffff, 1ull << 62, 6 },
        [K_NKV]      = { UINT64_MAX, 0xffffffff, 0x7fffffff, 1ull << 62 },
        [K_KEYLEN]   = { 0, UINT64_MAX, 0xffffffff, 0x7fffffff, 65536 },
        [K_VTYPE]    = { 13, 9999, 0xffffffff, 0x7fffffff },
        [K_ARRTYPE]  = { 13, 9999, 0xffffffff },
        [K_ARRLEN]   = { UINT64_MAX, 0xffffffff, 0x7fffffff, 1ull << 62 },
        [K_STRLEN]   = { UINT64_MAX, 0xffffffff, 0x7fffffff, (1u << 24) + 1 },
        [K_TNAMELEN] = { 0, 257, UINT64_MAX, 0xffffffff, 0x7fffffff },
        [K_NDIMS]    = { 0, 5, 9999, 0xffffffff, 0x7fffffff },
        [K_NE]       = { 0, UINT64_MAX, 0xffffffff, 0x7fffffff, 1ull << 62, 1ull << 63 },
        [K_TTYPE]    = { 4, 5, 16, 29, 31, 9999, 0xffffffff },
        [K_TOFF]     = { 1, 31, UINT64_MAX, 0xffffffff, 0x7fffffe0, UINT64_MAX - 31, 4096 },
        [K_ALIGN]    = { 0, 3, 6, 0x80000000, 0xffffffff },
    };
    static const char *names[K_NKINDS] = { "n_tensors", "n_kv", "key length", "value type",
        "array type", "array length", "string length", "tensor name length", "n_dims", "ne",
        "tensor type", "tensor offset", "alignment" };
    base b;
    make_base(&b);
    int counted[K_NKINDS] = { 0 };
    unsigned char *c = malloc(b.n);
    for (int i = 0; i < b.nf; i++) {
        const field *f = &b.f[i];
        counted[f->kind]++;
        for (int k = 0; k < 8; k++) {
            uint64_t v = vals[f->kind][k];
            if (k > 0 && v == 0) break;
            memcpy(c, b.p, b.n);
            wr(c + f->off, v, f->size);
            char what[128];
            snprintf(what, sizeof what, "%s at 0x%zx = %llu", names[f->kind], f->off,
                     (unsigned long long)v);
            must_fail(c, b.n, what);
        }
    }
    for (int k = 0; k < K_NKINDS; k++) cr_assert_gt(counted[k], 0, "no %s field", names[k]);
    /* overlap: every tensor's offset set to each other tensor's offset */
    for (int i = 0; i < b.nf; i++) {
        if (b.f[i].kind != K_TOFF) continue;
        for (int j = 0; j < b.nf; j++) {
            if (j == i || b.f[j].kind != K_TOFF) continue;
            memcpy(c, b.p, b.n);
            memcpy(c + b.f[i].off, b.p + b.f[j].off, 8);
            must_fail(c, b.n, "overlapping tensors");
        }
    }
    free(c);
    free(b.p);
}

Test(gguf_hostile, magic_version_duplicates_messages)
{
    base b;
    make_base(&b);
    unsigned char *c = malloc(b.n);
#define RESET() memcpy(c, b.p, b.n)
    RESET(); memcpy(c, "GGUX", 4); must_fail(c, b.n, "magic");
    cr_assert_neq(strstr(sl_last_error(), "not a GGUF file"), NULL, "%s", sl_last_error());
    RESET(); memcpy(c, "FUGG", 4); must_fail(c, b.n, "swapped magic");
    cr_assert_neq(strstr(sl_last_error(), "big-endian"), NULL, "%s", sl_last_error());
    static const uint32_t bad_versions[] = { 0, 1, 4, 0x03000000, 0xffffffff };
    for (size_t i = 0; i < sizeof bad_versions / sizeof bad_versions[0]; i++) {
        RESET(); wr(c + 4, bad_versions[i], 4);
        cr_assert_eq(try_open(c, b.n, b.n), SL_EVERSION);
    }
    RESET(); wr(c + 4, 1, 4); try_open(c, b.n, b.n);
    cr_assert_neq(strstr(sl_last_error(), "version 1 is not supported"), NULL, "%s", sl_last_error());
    RESET(); wr(c + 4, 0x03000000, 4); try_open(c, b.n, b.n);
    cr_assert_neq(strstr(sl_last_error(), "big-endian"), NULL, "%s", sl_last_error());
    RESET(); wr(c + 4, 2, 4);
    cr_assert_eq(try_open(c, b.n, b.n), 0, "v2 is fine: %s", sl_last_error());

    /* duplicate key: dup.k2 -> dup.k1; duplicate tensor: blk.0.w2 -> blk.0.w1 */
    unsigned char *k2 = memmem(b.p, b.n, "dup.k2", 6);
    cr_assert_not_null(k2);
    RESET(); c[k2 - b.p + 5] = '1';
    cr_assert_eq(try_open(c, b.n, b.n), SL_EFORMAT);
    cr_assert_neq(strstr(sl_last_error(), "duplicate key"), NULL, "%s", sl_last_error());
    cr_assert_neq(strstr(sl_last_error(), "'dup.k1'"), NULL, "%s", sl_last_error());
    unsigned char *t2 = memmem(b.p, b.n, "blk.0.w2", 8);
    cr_assert_not_null(t2);
    RESET(); c[t2 - b.p + 7] = '1';
    cr_assert_eq(try_open(c, b.n, b.n), SL_EFORMAT);
    cr_assert_neq(strstr(sl_last_error(), "duplicate tensor name"), NULL, "%s", sl_last_error());
    /* an embedded NUL in a name */
    RESET(); c[t2 - b.p + 3] = '\0';
    must_fail(c, b.n, "NUL in tensor name");

    /* messages name the field, the item and the offset */
    for (int i = 0; i < b.nf; i++) {
        const field *f = &b.f[i];
        if (f->kind == K_STRLEN) {
            RESET(); wr(c + f->off, 0xffffffff, 8);
            cr_assert_eq(try_open(c, b.n, b.n), SL_ETRUNC);
            char want[64];
            snprintf(want, sizeof want, "string length 4294967295 at offset 0x%zx exceeds", f->off);
            cr_assert_neq(strstr(sl_last_error(), want), NULL, "%s", sl_last_error());
            cr_assert_neq(strstr(sl_last_error(), "kv #"), NULL, "%s", sl_last_error());
            break;
        }
    }
    for (int i = b.nf - 1; i >= 0; i--) {
        if (b.f[i].kind != K_TOFF) continue;   /* the last tensor: blk.1.w2 */
        RESET(); wr(c + b.f[i].off, 0x7fffffe0, 8);
        cr_assert_eq(try_open(c, b.n, b.n), SL_ETRUNC);
        char want[160];
        snprintf(want, sizeof want, "tensor 'blk.1.w2': data [0x%llx, +64) past end of file (size %zu)",
                 (unsigned long long)(b.data_off + 0x7fffffe0), b.n);
        cr_assert_neq(strstr(sl_last_error(), want), NULL, "%s | want %s", sl_last_error(), want);
        RESET(); wr(c + b.f[i].off, rd(b.p + b.f[i].off, 8) + 4, 8);
        cr_assert_eq(try_open(c, b.n, b.n), SL_EFORMAT);
        cr_assert_neq(strstr(sl_last_error(), "not a multiple of the alignment"), NULL, "%s",
                      sl_last_error());
        break;
    }
    for (int i = 0; i < b.nf; i++) {
        if (b.f[i].kind != K_TTYPE) continue;
        RESET(); wr(c + b.f[i].off, 9999, 4);
        cr_assert_eq(try_open(c, b.n, b.n), SL_EUNSUPPORTED);
        cr_assert_neq(strstr(sl_last_error(), "type 9999"), NULL, "%s", sl_last_error());
        break;
    }
    /* a callback that fails with EIO is reported as such */
    mem m = { b.p, b.n, 200 };
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_cb(&g, mem_read, &m, b.n, "eio"), SL_EIO);
    cr_assert_neq(strstr(sl_last_error(), "failed"), NULL, "%s", sl_last_error());
    free(c);
    free(b.p);
}

/* Hand-built file: one kv holding arrays nested `depth` deep. */
static size_t nested(unsigned char *p, int depth)
{
    size_t n = 0;
    memcpy(p, "GGUF", 4); n = 4;
    wr(p + n, 3, 4); n += 4;
    wr(p + n, 0, 8); n += 8;
    wr(p + n, 1, 8); n += 8;
    wr(p + n, 1, 8); n += 8;
    p[n++] = 'd';
    wr(p + n, SL_GGUF_ARRAY, 4); n += 4;
    for (int i = 1; i < depth; i++) {
        wr(p + n, SL_GGUF_ARRAY, 4); n += 4;
        wr(p + n, 1, 8); n += 8;
    }
    wr(p + n, SL_GGUF_U8, 4); n += 4;
    wr(p + n, 1, 8); n += 8;
    p[n++] = 42;
    return n;
}

Test(gguf_hostile, nesting_depth_and_tiny_files)
{
    unsigned char p[512];
    size_t n = nested(p, SL_GGUF_MAX_ARRAY_DEPTH);
    cr_assert_eq(try_open(p, n, n), 0, "%s", sl_last_error());
    n = nested(p, SL_GGUF_MAX_ARRAY_DEPTH + 1);
    cr_assert_eq(try_open(p, n, n), SL_EFORMAT);
    cr_assert_neq(strstr(sl_last_error(), "nested"), NULL, "%s", sl_last_error());
    n = nested(p, 20);
    cr_assert_eq(try_open(p, n, n), SL_EFORMAT);
    /* header only: 0 kvs, 0 tensors is a valid (empty) file */
    n = nested(p, 1);
    wr(p + 16, 0, 8);
    cr_assert_eq(try_open(p, 24, 24), 0, "%s", sl_last_error());
    /* paths and fds */
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, "/nonexistent/model.gguf"), SL_ENOENT);
    cr_assert_neq(strstr(sl_last_error(), "/nonexistent/model.gguf"), NULL);
    cr_assert_neq(sl_gguf_open_path(&g, "/tmp"), 0);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    cr_assert_eq(sl_gguf_open_fd(&g, fds[0], "pipe"), SL_EINVAL);
    close(fds[0]);
    close(fds[1]);
    cr_assert_eq(sl_gguf_open_path(&g, "/dev/null"), SL_EINVAL);   /* char device */
}

static uint64_t rng(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ull;
    uint64_t z = *s;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

Test(gguf_hostile, random_corruption_never_crashes)
{
    base b;
    make_base(&b);
    unsigned char *c = malloc(b.n);
    uint64_t s = 12345;
    static const uint64_t ext[] = { 0, 1, 0x7fffffff, 0xffffffff, UINT64_MAX, 1ull << 63, 32, 9999 };
    int failed = 0;
    for (int it = 0; it < 20000; it++) {
        memcpy(c, b.p, b.n);
        int flips = 1 + (int)(rng(&s) % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(rng(&s) % b.data_off);
            if (rng(&s) & 1) c[at] ^= (unsigned char)(1u << (rng(&s) % 8));
            else if (at + 8 <= b.n) wr(c + at, ext[rng(&s) % 8], 8);
        }
        failed += try_open(c, b.n, b.n) != 0;
    }
    cr_log_info("random corruption: %d of 20000 rejected", failed);
    cr_assert_gt(failed, 10000);
    free(c);
    free(b.p);
}

/* A real model's header region cut at many points: all must fail. */
Test(gguf_hostile, real_file_truncation)
{
    const char *path = SL_SHARED_DIR "/models/stories260K.gguf";
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0);
    off_t size = lseek(fd, 0, SEEK_END);
    unsigned char *p = malloc((size_t)size);
    cr_assert_eq(pread(fd, p, (size_t)size, 0), size);
    close(fd);
    cr_assert_eq(try_open(p, (size_t)size, (uint64_t)size), 0);
    const size_t data_off = 14176;
    int n = 0;
    for (size_t cut = 0; cut < (size_t)size; cut += cut < 1024 ? 1 : cut < data_off + 64 ? 37 : 9973) {
        cr_assert_neq(try_open(p, cut, cut), 0, "accepted %zu-byte prefix", cut);
        n++;
    }
    cr_assert_gt(n, 1300);
    /* random damage to its metadata and tensor infos */
    uint64_t s = 777;
    unsigned char *c = malloc((size_t)size);
    for (int it = 0; it < 300; it++) {
        memcpy(c, p, (size_t)size);
        for (int k = 0; k < 3; k++) {
            size_t at = (size_t)(rng(&s) % data_off);
            c[at] ^= (unsigned char)(1 + rng(&s) % 255);
        }
        try_open(c, (size_t)size, (uint64_t)size);
    }
    free(c);
    free(p);
}

/* Finding 6 of the hardening issue: alignment 1 or 2 let kernels load misaligned floats. */
Test(gguf_hostile, alignment_below_kernel_need_refused)
{
    base b;
    make_base(&b);
    unsigned char *c = malloc(b.n);
    int done = 0;
    for (int i = 0; i < b.nf; i++) {
        if (b.f[i].kind != K_ALIGN) continue;
        static const uint64_t small[] = { 1, 2, 4 };
        for (size_t k = 0; k < sizeof small / sizeof small[0]; k++) {
            memcpy(c, b.p, b.n);
            wr(c + b.f[i].off, small[k], b.f[i].size);
            cr_assert_eq(try_open(c, b.n, b.n), SL_EFORMAT, "alignment %llu accepted",
                         (unsigned long long)small[k]);
            char want[64];
            snprintf(want, sizeof want, "alignment %llu is below %u", (unsigned long long)small[k],
                     SL_GGUF_MIN_ALIGNMENT);
            cr_assert_neq(strstr(sl_last_error(), "'general.alignment'"), NULL, "%s", sl_last_error());
            cr_assert_neq(strstr(sl_last_error(), want), NULL, "%s", sl_last_error());
        }
        done = 1;
    }
    cr_assert(done, "no general.alignment field in the base file");
    free(c);
    free(b.p);
}

/* ---- the GGUF CVEs of llama.cpp, as the inputs that exploited them ------
 * Each patches fields of the base file (the nth field of a kind, 0-based),
 * opens it and asserts the reader's status and its whole message. */

static const field *nth_field(const base *b, enum kind k, int nth)
{
    for (int i = 0; i < b->nf; i++)
        if (b->f[i].kind == k && nth-- == 0) return &b->f[i];
    cr_assert_fail("no field of kind %d left", (int)k);
    return NULL;
}

/* Writes v into the nth field of kind k of c (a copy of the base); returns
 * that field's file offset. */
static size_t patch(unsigned char *c, const base *b, enum kind k, int nth, uint64_t v)
{
    const field *f = nth_field(b, k, nth);
    wr(c + f->off, v, f->size);
    return f->off;
}

/* c = the base with the nth field of kind k set to v; returns its offset. */
static size_t fresh(unsigned char *c, const base *b, enum kind k, int nth, uint64_t v)
{
    memcpy(c, b->p, b->n);
    return patch(c, b, k, nth, v);
}

static void refused_as(const unsigned char *c, size_t n, int st, const char *want)
{
    cr_assert_eq(try_open(c, n, n), st, "status: %s", sl_last_error());
    cr_assert_str_eq(sl_last_error(), want);
}

/* CVE-2024-21802: ne whose product times the type size overflows, so the
 * tensor's byte size wraps to a small number and reads run off the buffer. */
Test(gguf_hostile, CVE_2024_21802_tensor_size_overflow_refused)
{
    base b;
    make_base(&b);
    unsigned char *c = malloc(b.n);
    char want[512];
    /* token_embd.weight, F32: 2^31 x 2^31 elements fit int64, 2^64 bytes do not */
    size_t name = nth_field(&b, K_TNAMELEN, 0)->off;
    fresh(c, &b, K_NE, 0, 1ull << 31);
    patch(c, &b, K_NE, 1, 1ull << 31);
    snprintf(want, sizeof want, "corpus: tensor 'token_embd.weight': shape at offset 0x%zx: byte size overflows "
             "(2147483648 rows of 8589934592 bytes)", name);
    refused_as(c, b.n, SL_ERANGE, want);
    /* the element count itself wraps: 2^62 x 4 */
    fresh(c, &b, K_NE, 0, 1ull << 62);
    snprintf(want, sizeof want, "corpus: tensor 'token_embd.weight': shape at offset 0x%zx: element count "
             "overflows at ne[1] = 4", name);
    refused_as(c, b.n, SL_ERANGE, want);
    free(c);
    free(b.p);
}

/* CVE-2025-53630: an array length that overflows once multiplied by the
 * element size (2^63 u16, 2^61 strings of 8-byte lengths) and a string
 * length whose +1 for the terminator would wrap. */
Test(gguf_hostile, CVE_2025_53630_array_string_size_overflow_refused)
{
    base b;
    make_base(&b);
    unsigned char *c = malloc(b.n);
    char want[512];
    size_t off = fresh(c, &b, K_ARRLEN, 2, 1ull << 63);   /* n.arr[0]: u16 */
    snprintf(want, sizeof want, "corpus: kv #3 'n.arr'[0]: array length 9223372036854775808 at offset 0x%zx "
             "exceeds the limit of %llu", off, (unsigned long long)SL_GGUF_MAX_ARRAY_LEN);
    refused_as(c, b.n, SL_EFORMAT, want);
    off = fresh(c, &b, K_ARRLEN, 0, 1ull << 61);          /* a.str: strings */
    snprintf(want, sizeof want, "corpus: kv #2 'a.str': array length 2305843009213693952 at offset 0x%zx "
             "exceeds the limit of %llu", off, (unsigned long long)SL_GGUF_MAX_ARRAY_LEN);
    refused_as(c, b.n, SL_EFORMAT, want);
    off = fresh(c, &b, K_STRLEN, 0, UINT64_MAX);          /* general.architecture */
    snprintf(want, sizeof want, "corpus: kv #0 'general.architecture': string length 18446744073709551615 "
             "at offset 0x%zx exceeds remaining file (%zu bytes)", off, b.n - off - 8);
    refused_as(c, b.n, SL_ETRUNC, want);
    free(c);
    free(b.p);
}

/* CVE-2026-27940, the bypass of the fix above: sizes that pass the first
 * check and overflow only later — an array length exactly at the limit, and
 * a tensor whose byte size (2^64 - 36) fits but wraps once padded to the
 * alignment or added to its offset. */
Test(gguf_hostile, CVE_2026_27940_size_overflow_after_padding_refused)
{
    base b;
    make_base(&b);
    unsigned char *c = malloc(b.n);
    char want[512];
    size_t off = fresh(c, &b, K_ARRLEN, 2, SL_GGUF_MAX_ARRAY_LEN);
    snprintf(want, sizeof want, "corpus: kv #3 'n.arr'[0]: array of %llu u16 at offset 0x%zx needs at least "
             "%llu bytes, file has %zu left", (unsigned long long)SL_GGUF_MAX_ARRAY_LEN, off - 4,
             (unsigned long long)SL_GGUF_MAX_ARRAY_LEN * 2, b.n - off - 8);
    refused_as(c, b.n, SL_ETRUNC, want);
    const uint64_t ne = (UINT64_MAX - 35) / 4;            /* blk.1.w2, F32 */
    fresh(c, &b, K_NE, 6, ne);
    snprintf(want, sizeof want, "corpus: tensor 'blk.1.w2': data [0x%llx, +%llu) past end of file (size %zu)",
             (unsigned long long)(b.data_off + rd(b.p + nth_field(&b, K_TOFF, 4)->off, 8)),
             (unsigned long long)(ne * 4), b.n);
    refused_as(c, b.n, SL_ETRUNC, want);
    free(c);
    free(b.p);
}
