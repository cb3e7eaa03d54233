/* GGUF writer -> reader round trips: every value type, nested arrays, tensor
 * data streamed in odd chunks, copy_kv from real files, writer misuse. */
#include "sl_test.h"
#include "util_file.h"
#include "../gguf/gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void tmp_path(char *buf, size_t n, const char *tag)
{
    snprintf(buf, n, "/tmp/sl_test_gguf_%s_%d.gguf", tag, (int)getpid());
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)((i * 131 + seed * 7) ^ (i >> 8));
}

Test(gguf_write, every_value_type_round_trip)
{
    char path[256];
    tmp_path(path, sizeof path, "rt");
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, path, 3), 0, "%s", sl_last_error());

    uint8_t u8 = 250; int8_t i8 = -100; uint16_t u16 = 65000; int16_t i16 = -32000;
    uint32_t u32 = 4000000000u; int32_t i32 = -2000000000; float f32 = 3.25f;
    uint64_t u64 = 0xfedcba9876543210ull; int64_t i64 = INT64_MIN + 5; double f64 = -1.0 / 3.0;
    bool bt = true;
    cr_assert_eq(sl_gguf_writer_set_scalar(w, "t.u8", SL_GGUF_U8, &u8), 0);
    cr_assert_eq(sl_gguf_writer_set_scalar(w, "t.i8", SL_GGUF_I8, &i8), 0);
    cr_assert_eq(sl_gguf_writer_set_scalar(w, "t.u16", SL_GGUF_U16, &u16), 0);
    cr_assert_eq(sl_gguf_writer_set_scalar(w, "t.i16", SL_GGUF_I16, &i16), 0);
    cr_assert_eq(sl_gguf_writer_set_u32(w, "t.u32", u32), 0);
    cr_assert_eq(sl_gguf_writer_set_i32(w, "t.i32", i32), 0);
    cr_assert_eq(sl_gguf_writer_set_f32(w, "t.f32", f32), 0);
    cr_assert_eq(sl_gguf_writer_set_bool(w, "t.bool", bt), 0);
    cr_assert_eq(sl_gguf_writer_set_str(w, "t.str", "hello, gguf"), 0);
    cr_assert_eq(sl_gguf_writer_set_u64(w, "t.u64", u64), 0);
    cr_assert_eq(sl_gguf_writer_set_scalar(w, "t.i64", SL_GGUF_I64, &i64), 0);
    cr_assert_eq(sl_gguf_writer_set_scalar(w, "t.f64", SL_GGUF_F64, &f64), 0);
    /* string with an embedded NUL and an empty string */
    sl_gguf_value sv = { .type = SL_GGUF_STRING, .n = 5, .v.s = "ab\0cd" };
    cr_assert_eq(sl_gguf_writer_set_value(w, "t.nulstr", &sv), 0);
    cr_assert_eq(sl_gguf_writer_set_str(w, "t.empty", ""), 0);

    /* numeric arrays of every element type */
    static const int16_t ai16[5] = { -1, 2, -3, 4, -32768 };
    static const double af64[3] = { 1.5, -2.25, 1e300 };
    static const uint8_t abool[4] = { 1, 0, 1, 1 };
    uint64_t au64[3] = { 0, 1, UINT64_MAX };
    cr_assert_eq(sl_gguf_writer_set_arr(w, "a.i16", SL_GGUF_I16, ai16, 5), 0);
    cr_assert_eq(sl_gguf_writer_set_arr(w, "a.f64", SL_GGUF_F64, af64, 3), 0);
    cr_assert_eq(sl_gguf_writer_set_arr(w, "a.bool", SL_GGUF_BOOL, abool, 4), 0);
    cr_assert_eq(sl_gguf_writer_set_arr(w, "a.u64", SL_GGUF_U64, au64, 3), 0);
    cr_assert_eq(sl_gguf_writer_set_arr(w, "a.empty", SL_GGUF_U32, NULL, 0), 0);
    const char *strs[4] = { "zero", "", "two", "three\xe2\x82\xac" };
    cr_assert_eq(sl_gguf_writer_set_arr_str(w, "a.str", strs, 4), 0);

    /* nested: [[1,2,3],[],[4]] of u32; [["x","yy"],["zzz"]]; 4 levels deep */
    static const uint32_t n1[3] = { 1, 2, 3 }, n3[1] = { 4 };
    sl_gguf_value inner[3] = {
        { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_U32, .n = 3, .v.data = n1 },
        { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_U32, .n = 0, .v.data = NULL },
        { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_U32, .n = 1, .v.data = n3 },
    };
    sl_gguf_value outer = { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_ARRAY, .n = 3, .v.elems = inner };
    cr_assert_eq(sl_gguf_writer_set_value(w, "n.u32", &outer), 0);
    sl_gguf_value s0[2] = { { .type = SL_GGUF_STRING, .n = 1, .v.s = "x" },
                            { .type = SL_GGUF_STRING, .n = 2, .v.s = "yy" } };
    sl_gguf_value s1[1] = { { .type = SL_GGUF_STRING, .n = 3, .v.s = "zzz" } };
    sl_gguf_value sarr[2] = {
        { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_STRING, .n = 2, .v.elems = s0 },
        { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_STRING, .n = 1, .v.elems = s1 },
    };
    sl_gguf_value souter = { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_ARRAY, .n = 2, .v.elems = sarr };
    cr_assert_eq(sl_gguf_writer_set_value(w, "n.str", &souter), 0);
    static const int8_t deep_data[2] = { -7, 7 };
    sl_gguf_value d3 = { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_I8, .n = 2, .v.data = deep_data };
    sl_gguf_value d2 = { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_ARRAY, .n = 1, .v.elems = &d3 };
    sl_gguf_value d1 = { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_ARRAY, .n = 1, .v.elems = &d2 };
    sl_gguf_value d0 = { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_ARRAY, .n = 1, .v.elems = &d1 };
    cr_assert_eq(sl_gguf_writer_set_value(w, "n.deep4", &d0), 0);
    sl_gguf_value dtoo = { .type = SL_GGUF_ARRAY, .arr_type = SL_GGUF_ARRAY, .n = 1, .v.elems = &d0 };
    cr_assert_eq(sl_gguf_writer_set_value(w, "n.deep5", &dtoo), SL_EINVAL);
    cr_assert_neq(sl_gguf_writer_errmsg(w)[0], '\0');

    cr_assert_eq(sl_gguf_writer_set_alignment(w, 64), 0);

    /* tensors of several types; the last one ends on the alignment */
    static const struct { const char *name; uint32_t type, nd; uint64_t ne[4]; } tt[] = {
        { "token_embd.weight", SL_GGML_Q4_K, 2, { 256, 10 } },
        { "blk.0.attn_q.weight", SL_GGML_Q8_0, 2, { 64, 3 } },
        { "blk.0.attn_norm.weight", SL_GGML_F32, 1, { 7 } },
        { "blk.1.ffn_up.weight", SL_GGML_F16, 3, { 5, 3, 2 } },
        { "blk.1.x", SL_GGML_BF16, 4, { 2, 2, 2, 2 } },
        { "output.weight", SL_GGML_Q6_K, 2, { 256, 32 } },
    };
    const size_t nt = sizeof tt / sizeof tt[0];
    for (size_t i = 0; i < nt; i++)
        cr_assert_eq(sl_gguf_writer_add_tensor(w, tt[i].name, tt[i].type, tt[i].nd, tt[i].ne), 0,
                     "%s", sl_gguf_writer_errmsg(w));
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0, "%s", sl_gguf_writer_errmsg(w));
    cr_assert_eq(sl_gguf_writer_set_u32(w, "late", 1), SL_EINVAL);

    /* stream all data as one buffer in 7-byte chunks: crosses tensor boundaries */
    uint64_t sizes[6], total = 0;
    for (size_t i = 0; i < nt; i++) {
        cr_assert_eq(sl_gguf_tensor_size(tt[i].type, tt[i].nd, tt[i].ne, &sizes[i]), 0);
        total += sizes[i];
    }
    unsigned char *all = malloc(total);
    fill(all, total, 1);
    for (uint64_t off = 0; off < total; off += 7)
        cr_assert_eq(sl_gguf_writer_write(w, all + off, total - off < 7 ? total - off : 7), 0,
                     "%s", sl_gguf_writer_errmsg(w));
    cr_assert_eq(sl_gguf_writer_close(w), 0, "%s", sl_last_error());

    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, path), 0, "%s", sl_last_error());
    cr_assert_eq(sl_gguf_version(g), 3);
    cr_assert_eq(sl_gguf_alignment(g), 64);
    cr_assert_eq(sl_gguf_data_offset(g) % 64, 0);
    uint32_t ru32; uint64_t ru64; int64_t ri64; float rf; double rd; bool rb;
    const char *s; uint64_t len;
    cr_assert_eq(sl_gguf_get_u32(g, "t.u8", &ru32), 0); cr_assert_eq(ru32, 250);
    cr_assert_eq(sl_gguf_get_i64(g, "t.i8", &ri64), 0); cr_assert_eq(ri64, -100);
    cr_assert_eq(sl_gguf_get_u32(g, "t.u16", &ru32), 0); cr_assert_eq(ru32, 65000);
    cr_assert_eq(sl_gguf_get_i64(g, "t.i16", &ri64), 0); cr_assert_eq(ri64, -32000);
    cr_assert_eq(sl_gguf_get_u32(g, "t.u32", &ru32), 0); cr_assert_eq(ru32, 4000000000u);
    cr_assert_eq(sl_gguf_get_i64(g, "t.i32", &ri64), 0); cr_assert_eq(ri64, -2000000000);
    cr_assert_eq(sl_gguf_get_u32(g, "t.i32", &ru32), SL_ERANGE);
    cr_assert_eq(sl_gguf_get_f32(g, "t.f32", &rf), 0); cr_assert_eq(rf, 3.25f);
    cr_assert_eq(sl_gguf_get_bool(g, "t.bool", &rb), 0); cr_assert(rb);
    cr_assert_eq(sl_gguf_get_str(g, "t.str", &s, &len), 0); cr_assert_str_eq(s, "hello, gguf");
    cr_assert_eq(sl_gguf_get_u64(g, "t.u64", &ru64), 0); cr_assert_eq(ru64, u64);
    cr_assert_eq(sl_gguf_get_u32(g, "t.u64", &ru32), SL_ERANGE);
    cr_assert_eq(sl_gguf_get_i64(g, "t.u64", &ri64), SL_ERANGE);
    cr_assert_eq(sl_gguf_get_i64(g, "t.i64", &ri64), 0); cr_assert_eq(ri64, INT64_MIN + 5);
    cr_assert_eq(sl_gguf_get_u64(g, "t.i64", &ru64), SL_ERANGE);
    cr_assert_eq(sl_gguf_get_f64(g, "t.f64", &rd), 0); cr_assert_eq(rd, -1.0 / 3.0);
    cr_assert_eq(sl_gguf_kv_type(g, sl_gguf_find_key(g, "t.f64")), SL_GGUF_F64);
    cr_assert_eq(sl_gguf_kv_type(g, sl_gguf_find_key(g, "t.i16")), SL_GGUF_I16);
    cr_assert_eq(sl_gguf_get_str(g, "t.nulstr", &s, &len), 0);
    cr_assert_eq(len, 5);
    cr_assert_eq(memcmp(s, "ab\0cd", 6), 0);
    cr_assert_eq(sl_gguf_get_str(g, "t.empty", &s, &len), 0);
    cr_assert_eq(len, 0);
    cr_assert_str_eq(s, "");

    uint32_t et; uint64_t n; const void *data;
    cr_assert_eq(sl_gguf_get_arr(g, "a.i16", &et, &n, &data), 0);
    cr_assert_eq(et, SL_GGUF_I16); cr_assert_eq(n, 5);
    cr_assert_eq(memcmp(data, ai16, sizeof ai16), 0);
    cr_assert_eq(sl_gguf_get_arr(g, "a.f64", &et, &n, &data), 0);
    cr_assert_eq(memcmp(data, af64, sizeof af64), 0);
    cr_assert_eq(sl_gguf_get_arr(g, "a.bool", &et, &n, &data), 0);
    cr_assert_eq(et, SL_GGUF_BOOL); cr_assert_eq(memcmp(data, abool, 4), 0);
    cr_assert_eq(sl_gguf_get_arr(g, "a.u64", &et, &n, &data), 0);
    cr_assert_eq(memcmp(data, au64, sizeof au64), 0);
    cr_assert_eq(sl_gguf_get_arr(g, "a.empty", &et, &n, &data), 0);
    cr_assert_eq(et, SL_GGUF_U32); cr_assert_eq(n, 0);
    int64_t kv = sl_gguf_find_key(g, "a.str");
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(sl_gguf_arr_str(g, kv, (uint64_t)i, &s, &len), 0);
        cr_assert_str_eq(s, strs[i]);
        cr_assert_eq(len, strlen(strs[i]));
    }
    cr_assert_eq(sl_gguf_arr_str(g, sl_gguf_find_key(g, "a.i16"), 0, &s, &len), SL_ETYPE);

    /* nested arrays through the value tree */
    const sl_gguf_value *v = sl_gguf_kv_value(g, sl_gguf_find_key(g, "n.u32")), *e, *e2;
    sl_gguf_value tmp;
    cr_assert_eq(sl_gguf_value_arr_type(v), SL_GGUF_ARRAY);
    cr_assert_eq(sl_gguf_value_arr_len(v), 3);
    cr_assert_eq(sl_gguf_value_arr_at(v, 0, &tmp, &e), 0);
    cr_assert_eq(sl_gguf_value_arr_type(e), SL_GGUF_U32);
    cr_assert_eq(sl_gguf_value_arr_len(e), 3);
    cr_assert_eq(sl_gguf_value_arr_at(e, 2, &tmp, &e2), 0);
    cr_assert_eq(sl_gguf_value_u64(e2), 3);
    cr_assert_eq(sl_gguf_value_arr_at(v, 1, &tmp, &e), 0);
    cr_assert_eq(sl_gguf_value_arr_len(e), 0);
    cr_assert_eq(sl_gguf_value_arr_at(v, 2, &tmp, &e), 0);
    cr_assert_eq(sl_gguf_value_arr_at(e, 0, &tmp, &e2), 0);
    cr_assert_eq(sl_gguf_value_u64(e2), 4);
    v = sl_gguf_kv_value(g, sl_gguf_find_key(g, "n.str"));
    cr_assert_eq(sl_gguf_value_arr_at(v, 1, &tmp, &e), 0);
    cr_assert_eq(sl_gguf_value_arr_at(e, 0, &tmp, &e2), 0);
    cr_assert_str_eq(sl_gguf_value_str(e2, &len), "zzz");
    v = sl_gguf_kv_value(g, sl_gguf_find_key(g, "n.deep4"));
    for (int d = 0; d < 3; d++) {
        cr_assert_eq(sl_gguf_value_arr_at(v, 0, &tmp, &e), 0);
        v = e;
    }
    cr_assert_eq(sl_gguf_value_arr_type(v), SL_GGUF_I8);
    cr_assert_eq(sl_gguf_value_arr_at(v, 0, &tmp, &e), 0);
    cr_assert_eq(sl_gguf_value_i64(e), -7);
    cr_assert_eq(sl_gguf_find_key(g, "n.deep5"), -1);

    /* tensors: shapes, offsets aligned, data bytes identical, padding zero */
    cr_assert_eq(sl_gguf_n_tensors(g), (int64_t)nt);
    uint64_t off = 0;
    for (size_t i = 0; i < nt; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, (int64_t)i);
        cr_assert_str_eq(t->name, tt[i].name);
        cr_assert_eq(t->type, tt[i].type);
        cr_assert_eq(t->n_dims, tt[i].nd);
        for (uint32_t d = 0; d < 4; d++) cr_assert_eq(t->ne[d], d < tt[i].nd ? tt[i].ne[d] : 1);
        cr_assert_eq(t->nbytes, sizes[i]);
        cr_assert_eq(t->offset % 64, 0);
        unsigned char *got = malloc(sizes[i]);
        cr_assert_eq(sl_gguf_read(g, got, sizes[i], t->file_offset), 0);
        cr_assert_eq(memcmp(got, all + off, sizes[i]), 0, "data of %s", t->name);
        free(got);
        off += sizes[i];
    }
    cr_assert_eq(sl_gguf_n_layers(g), 2);
    sl_gguf_extent ex;
    cr_assert_eq(sl_gguf_layer_extent(g, 1, &ex), 0);
    cr_assert_eq(ex.n_tensors, 2);
    cr_assert_eq(ex.bytes, sizes[3] + sizes[4]);
    cr_assert_eq(ex.begin, sl_gguf_tensor_at(g, 3)->file_offset);
    cr_assert_eq(ex.end, sl_gguf_tensor_at(g, 4)->file_offset + sizes[4]);
    cr_assert_eq(sl_gguf_nonlayer_extent(g, &ex), 0);
    cr_assert_eq(ex.n_tensors, 2);
    cr_assert_eq(sl_gguf_total_tensor_bytes(g), total);
    unsigned char pad[64];
    const sl_gguf_tensor *t2 = sl_gguf_tensor_at(g, 2);
    uint64_t padn = sl_gguf_tensor_at(g, 3)->file_offset - (t2->file_offset + t2->nbytes);
    cr_assert_gt(padn, 0);
    cr_assert_eq(sl_gguf_read(g, pad, padn, t2->file_offset + t2->nbytes), 0);
    for (uint64_t i = 0; i < padn; i++) cr_assert_eq(pad[i], 0);
    const sl_gguf_tensor *last = sl_gguf_tensor_at(g, 5);
    cr_assert_eq(sl_gguf_file_size(g), last->file_offset + last->nbytes);
    cr_assert_eq(sl_gguf_read(g, pad, 1, sl_gguf_file_size(g)), SL_ERANGE);
    sl_gguf_close(g);
    free(all);
    unlink(path);
}

/* Re-writing a real ggml-written model with copy_kv + its tensors must give
 * the very same bytes (same layout rules: kv order, aligned offsets, padding). */
static void rewrite_identical(const char *src)
{
    char path[256];
    tmp_path(path, sizeof path, "copy");
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, src), 0, "%s", sl_last_error());
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, path, sl_gguf_version(g)), 0);
    for (int64_t i = 0; i < sl_gguf_n_kv(g); i++)
        cr_assert_eq(sl_gguf_writer_copy_kv(w, g, i), 0, "%s", sl_gguf_writer_errmsg(w));
    for (int64_t i = 0; i < sl_gguf_n_tensors(g); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        cr_assert_eq(sl_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne), 0);
    }
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0);
    for (int64_t i = 0; i < sl_gguf_n_tensors(g); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        unsigned char *buf = malloc(t->nbytes);
        cr_assert_eq(sl_gguf_read(g, buf, t->nbytes, t->file_offset), 0);
        cr_assert_eq(sl_gguf_writer_write(w, buf, t->nbytes), 0);
        free(buf);
    }
    cr_assert_eq(sl_gguf_writer_close(w), 0, "%s", sl_last_error());
    sl_gguf_close(g);
    size_t na, nb;
    unsigned char *a = sl_test_slurp(src, &na), *b = sl_test_slurp(path, &nb);
    cr_assert(a && b, "read %s / %s", src, path);
    cr_assert_eq(na, nb, "%s: size %zu vs %zu", src, na, nb);
    cr_assert_eq(memcmp(a, b, na), 0, "%s: bytes differ", src);
    free(a);
    free(b);
    unlink(path);
}

Test(gguf_write, copy_reproduces_real_files)
{
    rewrite_identical(SL_SHARED_DIR "/models/stories260K.gguf");
    rewrite_identical(SL_SHARED_DIR "/models/TinyStories-656K-Q8_0.gguf");
    rewrite_identical(SL_SHARED_DIR "/models/vocab/ggml-vocab-qwen2.gguf");   /* 150k strings */
}

Test(gguf_write, version2)
{
    char path[256];
    tmp_path(path, sizeof path, "v2");
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, path, 2), 0);
    cr_assert_eq(sl_gguf_writer_set_str(w, "general.architecture", "llama"), 0);
    uint64_t ne[2] = { 32, 2 };
    cr_assert_eq(sl_gguf_writer_add_tensor(w, "blk.3.w", SL_GGML_Q4_0, 2, ne), 0);
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0);
    unsigned char d[36];
    fill(d, sizeof d, 3);
    cr_assert_eq(sl_gguf_writer_write(w, d, 36), 0);
    cr_assert_eq(sl_gguf_writer_close(w), 0);
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, path), 0, "%s", sl_last_error());
    cr_assert_eq(sl_gguf_version(g), 2);
    cr_assert_eq(sl_gguf_n_layers(g), 4);
    sl_gguf_extent e;
    cr_assert_eq(sl_gguf_layer_extent(g, 0, &e), 0);
    cr_assert_eq(e.n_tensors, 0);
    cr_assert_eq(sl_gguf_layer_extent(g, 3, &e), 0);
    cr_assert_eq(e.bytes, 36);
    sl_gguf_close(g);
    unlink(path);
}

Test(gguf_write, misuse_is_reported)
{
    char path[256];
    tmp_path(path, sizeof path, "bad");
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, path, 1), SL_EVERSION);
    cr_assert_eq(sl_gguf_writer_open(&w, "/nonexistent-dir/x.gguf", 3), SL_ENOENT);
    cr_assert_neq(sl_last_error()[0], '\0');
    cr_assert_eq(sl_gguf_writer_open(&w, path, 0), 0);
    cr_assert_eq(sl_gguf_writer_set_u32(w, "k", 1), 0);
    cr_assert_eq(sl_gguf_writer_set_u32(w, "k", 2), SL_EINVAL);
    cr_assert_eq(sl_gguf_writer_set_u32(w, "", 2), SL_EINVAL);
    cr_assert_eq(sl_gguf_writer_set_alignment(w, 48), SL_EINVAL);
    cr_assert_eq(sl_gguf_writer_set_alignment(w, 0), SL_EINVAL);
    cr_assert_eq(sl_gguf_writer_set_alignment(w, 2), SL_EINVAL);   /* below SL_GGUF_MIN_ALIGNMENT */
    cr_assert_eq(sl_gguf_writer_set_u32(w, "general.alignment", 3), SL_EINVAL);
    cr_assert_eq(sl_gguf_writer_set_arr(w, "a", SL_GGUF_STRING, NULL, 0), SL_EINVAL);
    cr_assert_eq(sl_gguf_writer_set_scalar(w, "s", SL_GGUF_ARRAY, &w), SL_EINVAL);
    uint64_t ne[2] = { 33, 1 };
    cr_assert_eq(sl_gguf_writer_add_tensor(w, "t", SL_GGML_Q4_0, 2, ne), SL_EFORMAT);
    cr_assert_eq(sl_gguf_writer_add_tensor(w, "t", 9999, 2, ne), SL_EUNSUPPORTED);
    cr_assert_eq(sl_gguf_writer_add_tensor(w, "t", SL_GGML_F32, 0, ne), SL_EINVAL);
    cr_assert_eq(sl_gguf_writer_add_tensor(w, "", SL_GGML_F32, 1, ne), SL_EINVAL);
    cr_assert_eq(sl_gguf_writer_add_tensor(w, "t", SL_GGML_F32, 2, ne), 0);
    cr_assert_eq(sl_gguf_writer_add_tensor(w, "t", SL_GGML_F32, 2, ne), SL_EINVAL);
    cr_assert_eq(sl_gguf_writer_add_tensor(w, "u", SL_GGML_F32, 1, ne), 0);
    cr_assert_eq(sl_gguf_writer_write(w, "x", 1), SL_EINVAL);   /* before begin_data */
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0);
    cr_assert_eq(sl_gguf_writer_add_tensor(w, "v", SL_GGML_F32, 1, ne), SL_EINVAL);
    unsigned char d[132] = { 0 };
    cr_assert_eq(sl_gguf_writer_write(w, d, 132), 0);   /* t complete, u empty */
    cr_assert_eq(sl_gguf_writer_close(w), SL_ETRUNC);   /* u never written */
    cr_assert_neq(strstr(sl_last_error(), "'u'"), NULL, "%s", sl_last_error());

    cr_assert_eq(sl_gguf_writer_open(&w, path, 3), 0);
    cr_assert_eq(sl_gguf_writer_add_tensor(w, "t", SL_GGML_F32, 1, ne), 0);
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0);
    cr_assert_eq(sl_gguf_writer_write(w, d, 133), SL_ERANGE);   /* one byte too many */
    sl_gguf_writer_abort(w);
    unlink(path);
}

/* Thousands of tensors and keys: hash lookups after many index growths,
 * per-layer extents with layers out of order. */
Test(gguf_write, many_tensors_and_keys)
{
    char path[256], name[64];
    tmp_path(path, sizeof path, "many");
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, path, 3), 0);
    for (int k = 0; k < 3000; k++) {
        snprintf(name, sizeof name, "key.%d", k);
        cr_assert_eq(sl_gguf_writer_set_u32(w, name, (uint32_t)k * 3), 0);
    }
    const int L = 80, per = 12;
    /* layers written in reverse so extents do not follow file order of ids */
    for (int l = L - 1; l >= 0; l--)
        for (int t = 0; t < per; t++) {
            snprintf(name, sizeof name, "blk.%d.t%d.weight", l, t);
            uint64_t ne[2] = { 8, (uint64_t)(1 + t) };
            cr_assert_eq(sl_gguf_writer_add_tensor(w, name, SL_GGML_F32, 2, ne), 0);
        }
    uint64_t ne1[1] = { 16 };
    cr_assert_eq(sl_gguf_writer_add_tensor(w, "output_norm.weight", SL_GGML_F32, 1, ne1), 0);
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0);
    unsigned char buf[512] = { 0 };
    for (int l = L - 1; l >= 0; l--)
        for (int t = 0; t < per; t++) cr_assert_eq(sl_gguf_writer_write(w, buf, 32u * (uint64_t)(1 + t)), 0);
    cr_assert_eq(sl_gguf_writer_write(w, buf, 64), 0);
    cr_assert_eq(sl_gguf_writer_close(w), 0, "%s", sl_last_error());

    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, path), 0, "%s", sl_last_error());
    cr_assert_eq(sl_gguf_n_kv(g), 3000);
    for (int k = 0; k < 3000; k++) {
        snprintf(name, sizeof name, "key.%d", k);
        uint32_t v;
        cr_assert_eq(sl_gguf_get_u32(g, name, &v), 0);
        cr_assert_eq(v, (uint32_t)k * 3);
    }
    cr_assert_eq(sl_gguf_n_tensors(g), L * per + 1);
    cr_assert_eq(sl_gguf_n_layers(g), L);
    uint64_t layer_bytes = 0;
    for (int t = 0; t < per; t++) layer_bytes += 32u * (uint64_t)(1 + t);
    for (int l = 0; l < L; l++) {
        sl_gguf_extent e;
        cr_assert_eq(sl_gguf_layer_extent(g, l, &e), 0);
        cr_assert_eq(e.n_tensors, (uint32_t)per);
        cr_assert_eq(e.bytes, layer_bytes);
        cr_assert_eq(e.end - e.begin, layer_bytes);   /* 32-byte multiples: no padding */
        snprintf(name, sizeof name, "blk.%d.t0.weight", l);
        const sl_gguf_tensor *t0 = sl_gguf_find_tensor(g, name);
        cr_assert_not_null(t0);
        cr_assert_eq(t0->layer, l);
        cr_assert_eq(e.begin, t0->file_offset);
        for (int t = 0; t < per; t++) {
            snprintf(name, sizeof name, "blk.%d.t%d.weight", l, t);
            const sl_gguf_tensor *tt = sl_gguf_find_tensor(g, name);
            cr_assert_not_null(tt, "%s", name);
            cr_assert_eq(tt->ne[1], (uint64_t)(1 + t));
        }
    }
    cr_assert_null(sl_gguf_find_tensor(g, "blk.80.t0.weight"));
    sl_gguf_extent e;
    cr_assert_eq(sl_gguf_nonlayer_extent(g, &e), 0);
    cr_assert_eq(e.n_tensors, 1);
    cr_assert_eq(e.end, sl_gguf_file_size(g));
    sl_gguf_close(g);
    unlink(path);
}

/* Hardening finding 3: GGUF outputs (mkmodel's among them) go through the safe
 * writer: a link at the target is replaced, never written through, and an
 * abandoned file leaves the previous one as it was. */
Test(gguf_write, output_never_written_through_a_link)
{
    char path[128], victim[128], got[32];
    snprintf(path, sizeof path, "/tmp/sl_test_gw_link_%d.gguf", (int)getpid());
    snprintf(victim, sizeof victim, "/tmp/sl_test_gw_victim_%d", (int)getpid());
    FILE *f = fopen(victim, "wb");
    cr_assert_not_null(f);
    fputs("victim bytes", f);
    fclose(f);
    unlink(path);
    cr_assert_eq(symlink(victim, path), 0);
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, path, 3), 0, "%s", sl_last_error());
    cr_assert_eq(sl_gguf_writer_set_u32(w, "k", 1), 0);
    cr_assert_eq(sl_gguf_writer_close(w), 0, "%s", sl_last_error());
    struct stat sb;
    cr_assert_eq(lstat(path, &sb), 0);
    cr_assert(S_ISREG(sb.st_mode));
    f = fopen(victim, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fread(got, 1, sizeof got, f), 12);
    fclose(f);
    cr_assert_eq(memcmp(got, "victim bytes", 12), 0, "written through the link");
    /* an aborted rewrite leaves the finished file */
    off_t size = sb.st_size;
    cr_assert_eq(sl_gguf_writer_open(&w, path, 3), 0);
    cr_assert_eq(sl_gguf_writer_set_u32(w, "k", 2), 0);
    cr_assert_eq(sl_gguf_writer_set_u32(w, "k2", 3), 0);
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0);
    sl_gguf_writer_abort(w);
    cr_assert_eq(stat(path, &sb), 0);
    cr_assert_eq(sb.st_size, size);
    unlink(path);
    unlink(victim);
}
