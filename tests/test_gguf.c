/* GGUF reader on every shared model and vocabulary. The expected values were
 * read independently with tests/gguf_facts.py (struct-only Python parser). */
#include "sl_test.h"
#include "../gguf/gguf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODELS SL_SHARED_DIR "/models/"

static sl_gguf *open_or_fail(const char *path)
{
    sl_gguf *g = NULL;
    int st = sl_gguf_open_path(&g, path);
    cr_assert_eq(st, 0, "open %s: %s", path, sl_last_error());
    cr_assert_not_null(g);
    return g;
}

static uint32_t u32_of(sl_gguf *g, const char *key)
{
    uint32_t v = 0;
    cr_assert_eq(sl_gguf_get_u32(g, key, &v), 0, "%s: %s", key, sl_last_error());
    return v;
}

static void check_str(sl_gguf *g, const char *key, const char *want)
{
    const char *s = NULL;
    uint64_t len = 0;
    cr_assert_eq(sl_gguf_get_str(g, key, &s, &len), 0, "%s: %s", key, sl_last_error());
    cr_assert_str_eq(s, want, "%s = '%s', want '%s'", key, s, want);
    cr_assert_eq(len, strlen(want));
}

static void check_tensor(sl_gguf *g, const char *name, uint32_t type, uint32_t n_dims,
                         uint64_t ne0, uint64_t ne1, uint64_t file_off, uint64_t nbytes)
{
    const sl_gguf_tensor *t = sl_gguf_find_tensor(g, name);
    cr_assert_not_null(t, "tensor %s missing", name);
    cr_assert_str_eq(t->name, name);
    cr_assert_eq(t->type, type, "%s type %u", name, t->type);
    cr_assert_eq(t->n_dims, n_dims, "%s n_dims %u", name, t->n_dims);
    cr_assert_eq(t->ne[0], ne0, "%s ne0 %llu", name, (unsigned long long)t->ne[0]);
    cr_assert_eq(t->ne[1], ne1, "%s ne1 %llu", name, (unsigned long long)t->ne[1]);
    cr_assert_eq(t->file_offset, file_off, "%s off %llu", name, (unsigned long long)t->file_offset);
    cr_assert_eq(t->file_offset, sl_gguf_data_offset(g) + t->offset);
    cr_assert_eq(t->nbytes, nbytes, "%s nbytes %llu", name, (unsigned long long)t->nbytes);
}

static void check_extent(sl_gguf *g, int32_t layer, uint64_t begin, uint64_t end, uint64_t bytes,
                         uint32_t n)
{
    sl_gguf_extent e;
    if (layer < 0) cr_assert_eq(sl_gguf_nonlayer_extent(g, &e), 0);
    else cr_assert_eq(sl_gguf_layer_extent(g, layer, &e), 0, "%s", sl_last_error());
    cr_assert_eq(e.begin, begin, "layer %d begin %llu", layer, (unsigned long long)e.begin);
    cr_assert_eq(e.end, end, "layer %d end %llu", layer, (unsigned long long)e.end);
    cr_assert_eq(e.bytes, bytes, "layer %d bytes %llu", layer, (unsigned long long)e.bytes);
    cr_assert_eq(e.n_tensors, n, "layer %d n %u", layer, e.n_tensors);
}

static void check_header(sl_gguf *g, uint64_t size, int64_t n_kv, int64_t n_tensors,
                         uint64_t data_offset)
{
    cr_assert_eq(sl_gguf_version(g), 3);
    cr_assert_eq(sl_gguf_file_size(g), size);
    cr_assert_eq(sl_gguf_alignment(g), 32);
    cr_assert_eq(sl_gguf_n_kv(g), n_kv, "n_kv %lld", (long long)sl_gguf_n_kv(g));
    cr_assert_eq(sl_gguf_n_tensors(g), n_tensors, "n_tensors %lld", (long long)sl_gguf_n_tensors(g));
    cr_assert_eq(sl_gguf_data_offset(g), data_offset, "data_offset %llu",
                 (unsigned long long)sl_gguf_data_offset(g));
}

static void check_tokens(sl_gguf *g, uint64_t n, uint64_t idx, const char *tok)
{
    uint32_t et = 99;
    uint64_t len = 0;
    const void *data = (void *)1;
    cr_assert_eq(sl_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &len, &data), 0, "%s",
                 sl_last_error());
    cr_assert_eq(et, SL_GGUF_STRING);
    cr_assert_eq(len, n, "tokens %llu", (unsigned long long)len);
    cr_assert_null(data);
    int64_t kv = sl_gguf_find_key(g, "tokenizer.ggml.tokens");
    const char *s;
    cr_assert_eq(sl_gguf_arr_str(g, kv, idx, &s, &len), 0);
    cr_assert_str_eq(s, tok, "token %llu = '%s'", (unsigned long long)idx, s);
    cr_assert_eq(sl_gguf_arr_str(g, kv, n, &s, &len), SL_ERANGE);
    /* token_type: i32 array of the same length */
    cr_assert_eq(sl_gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &len, &data), 0);
    cr_assert_eq(et, SL_GGUF_I32);
    cr_assert_eq(len, n);
    cr_assert_not_null(data);
}

Test(gguf_models, stories260K)
{
    sl_gguf *g = open_or_fail(MODELS "stories260K.gguf");
    check_header(g, 1185376, 19, 48, 14176);
    check_str(g, "general.architecture", "llama");
    cr_assert_eq(u32_of(g, "llama.block_count"), 5);
    cr_assert_eq(u32_of(g, "llama.embedding_length"), 64);
    cr_assert_eq(u32_of(g, "llama.feed_forward_length"), 172);
    cr_assert_eq(u32_of(g, "llama.attention.head_count_kv"), 4);
    cr_assert_eq(u32_of(g, "tokenizer.ggml.padding_token_id"), 4294967295u);
    float eps = 0;
    cr_assert_eq(sl_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &eps), 0);
    cr_assert_float_eq(eps, 1e-5, 1e-9);
    check_tokens(g, 512, 2, "</s>");
    check_tensor(g, "token_embd.weight", SL_GGML_F32, 2, 64, 512, 14176, 131072);
    check_tensor(g, "output.weight", SL_GGML_F32, 2, 64, 512, 145504, 131072);
    check_tensor(g, "output_norm.weight", SL_GGML_F32, 1, 64, 1, 145248, 256);
    check_tensor(g, "blk.0.attn_q.weight", SL_GGML_F32, 2, 64, 64, 276576, 16384);
    check_tensor(g, "blk.1.ffn_down.weight", SL_GGML_F32, 2, 172, 64, 551776, 44032);
    cr_assert_eq(sl_gguf_find_tensor(g, "blk.0.attn_q.weightx"), NULL);
    cr_assert_eq(sl_gguf_find_tensor(g, "blk.0.attn_q"), NULL);
    cr_assert_eq(sl_gguf_n_layers(g), 5);
    check_extent(g, -1, 14176, 276576, 262400, 3);
    check_extent(g, 0, 276576, 458336, 181760, 9);
    check_extent(g, 4, 1003616, 1185376, 181760, 9);
    sl_gguf_extent e;
    cr_assert_eq(sl_gguf_layer_extent(g, 5, &e), SL_ERANGE);
    cr_assert_eq(sl_gguf_layer_extent(g, -1, &e), SL_ERANGE);
    cr_assert_eq(sl_gguf_total_tensor_bytes(g), 1171200);
    sl_gguf_close(g);
}

Test(gguf_models, tinystories_q8_0)
{
    sl_gguf *g = open_or_fail(MODELS "TinyStories-656K-Q8_0.gguf");
    check_header(g, 749728, 34, 20, 50848);
    check_str(g, "general.architecture", "llama");
    check_str(g, "general.name", "Raincandy U TinyStories 656K");
    cr_assert_eq(u32_of(g, "llama.block_count"), 2);
    cr_assert_eq(u32_of(g, "llama.embedding_length"), 128);
    cr_assert_eq(u32_of(g, "llama.vocab_size"), 2048);
    bool b = false;
    cr_assert_eq(sl_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b), 0);
    cr_assert(b);
    cr_assert_eq(sl_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &b), 0);
    cr_assert(!b);
    /* general.languages: a string array of one element */
    uint32_t et;
    uint64_t n;
    cr_assert_eq(sl_gguf_get_arr(g, "general.languages", &et, &n, NULL), 0);
    cr_assert_eq(et, SL_GGUF_STRING);
    cr_assert_eq(n, 1);
    check_tokens(g, 2048, 1, "<|start_story|>");
    const void *sc;
    cr_assert_eq(sl_gguf_get_arr(g, "tokenizer.ggml.scores", &et, &n, &sc), 0);
    cr_assert_eq(et, SL_GGUF_F32);
    cr_assert_float_eq(((const float *)sc)[0], -1000.0, 0);
    check_tensor(g, "output_norm.weight", SL_GGML_F32, 1, 128, 1, 50848, 512);
    check_tensor(g, "token_embd.weight", SL_GGML_Q8_0, 2, 128, 2048, 51360, 278528);
    check_tensor(g, "blk.0.attn_q.weight", SL_GGML_Q8_0, 2, 128, 128, 356512, 17408);
    check_tensor(g, "blk.1.ffn_down.weight", SL_GGML_Q8_0, 2, 384, 128, 592544, 52224);
    cr_assert_null(sl_gguf_find_tensor(g, "output.weight"));   /* tied embeddings */
    cr_assert_eq(sl_gguf_n_layers(g), 2);
    check_extent(g, -1, 50848, 329888, 279040, 2);
    check_extent(g, 0, 329888, 539808, 209920, 9);
    check_extent(g, 1, 539808, 749728, 209920, 9);
    cr_assert_eq(sl_gguf_total_tensor_bytes(g), 698880);
    sl_gguf_close(g);
}

Test(gguf_models, llama2_tiny_random_f16)
{
    sl_gguf *g = open_or_fail(MODELS "llama-2-tiny-random.gguf");
    check_header(g, 1750560, 18, 12, 724416);
    check_str(g, "general.name", "LLaMA v2");
    cr_assert_eq(u32_of(g, "llama.block_count"), 1);
    cr_assert_eq(u32_of(g, "llama.embedding_length"), 8);
    cr_assert_eq(u32_of(g, "llama.context_length"), 4096);
    check_tokens(g, 32000, 1, "<s>");
    check_tensor(g, "token_embd.weight", SL_GGML_F16, 2, 8, 32000, 724416, 512000);
    check_tensor(g, "blk.0.attn_q.weight", SL_GGML_F16, 2, 8, 8, 1236416, 128);
    check_tensor(g, "output_norm.weight", SL_GGML_F32, 1, 8, 1, 1238528, 32);
    check_tensor(g, "output.weight", SL_GGML_F16, 2, 8, 32000, 1238560, 512000);
    /* the layer sits between token_embd and output: the non-layer extent spans it */
    check_extent(g, -1, 724416, 1750560, 1024032, 3);
    check_extent(g, 0, 1236416, 1238528, 2112, 9);
    cr_assert_eq(sl_gguf_total_tensor_bytes(g), 1026144);
    sl_gguf_close(g);
}

typedef struct {
    const char *file; uint64_t size; uint32_t embd_type, out_type; uint64_t embd_bytes, out_bytes;
    uint64_t q_off, q_bytes, down_off, down_bytes, l0_begin, l0_end, l0_bytes, l1_end, total;
    int64_t n_tensors; uint64_t data_off; const char *arch; uint32_t ftype;
} synth_facts;

static const synth_facts synth[] = {
    { "synth-tiny-q2_k.gguf", 6622656, SL_GGML_Q2_K, SL_GGML_Q2_K, 2688000, 2688000, 3414464, 21504,
      3869120, 64512, 3413440, 3673536, 260096, 3933632, 5897216, 21, 725440, "llama", 10 },
    { "synth-tiny-q4_0.gguf", 10831296, SL_GGML_Q4_0, SL_GGML_Q4_0, 4608000, 4608000, 5334464, 36864,
      6111680, 110592, 5333440, 5777856, 444416, 6222272, 10105856, 21, 725440, "llama", 2 },
    { "synth-tiny-q4_k.gguf", 12943296, SL_GGML_Q4_K, SL_GGML_Q6_K, 4608000, 6720000, 5334464, 36864,
      6111680, 110592, 5333440, 5777856, 444416, 6222272, 12217856, 21, 725440, "llama", 14 },
    { "synth-tiny-q8_0.gguf", 19809728, SL_GGML_Q8_0, SL_GGML_Q8_0, 8704000, 8704000, 9430464, 69632,
      10895808, 208896, 9429440, 10267072, 837632, 11104704, 19084288, 21, 725440, "llama", 7 },
    { "synth-tiny-qwen2-q4_k.gguf", 12947744, SL_GGML_Q4_K, SL_GGML_Q6_K, 4608000, 6720000, 5334816,
      36864, 6116128, 110592, 5333792, 5780256, 446464, 6226720, 12221952, 27, 725792, "qwen2", 14 },
};

Test(gguf_models, synth_tiny)
{
    for (size_t i = 0; i < sizeof synth / sizeof synth[0]; i++) {
        const synth_facts *f = &synth[i];
        char path[512], key[64];
        snprintf(path, sizeof path, MODELS "%s", f->file);
        sl_gguf *g = open_or_fail(path);
        check_header(g, f->size, 26, f->n_tensors, f->data_off);
        check_str(g, "general.architecture", f->arch);
        snprintf(key, sizeof key, "%s.block_count", f->arch);
        cr_assert_eq(u32_of(g, key), 2);
        snprintf(key, sizeof key, "%s.embedding_length", f->arch);
        cr_assert_eq(u32_of(g, key), 256);
        snprintf(key, sizeof key, "%s.feed_forward_length", f->arch);
        cr_assert_eq(u32_of(g, key), 768);
        snprintf(key, sizeof key, "%s.attention.head_count_kv", f->arch);
        cr_assert_eq(u32_of(g, key), 2);
        cr_assert_eq(u32_of(g, "general.file_type"), f->ftype, "%s", f->file);
        cr_assert_eq(u32_of(g, "tokenizer.ggml.bos_token_id"), 1);
        check_tokens(g, 32000, 1000, "ied");
        int64_t kv = sl_gguf_find_key(g, "tokenizer.ggml.scores");
        uint32_t et;
        uint64_t n;
        const void *sc;
        cr_assert_eq(sl_gguf_kv_arr(g, kv, &et, &n, &sc), 0);
        cr_assert_float_eq(((const float *)sc)[1000], -741.0, 0);
        check_tensor(g, "token_embd.weight", f->embd_type, 2, 256, 32000, f->data_off, f->embd_bytes);
        check_tensor(g, "blk.0.attn_q.weight", f->embd_type, 2, 256, 256, f->q_off, f->q_bytes);
        check_tensor(g, "blk.1.ffn_down.weight", f->embd_type, 2, 768, 256, f->down_off, f->down_bytes);
        check_tensor(g, "output.weight", f->out_type, 2, 256, 32000, f->size - f->out_bytes, f->out_bytes);
        cr_assert_eq(sl_gguf_n_layers(g), 2);
        check_extent(g, -1, f->data_off, f->size, f->embd_bytes + f->out_bytes + 1024, 3);
        check_extent(g, 0, f->l0_begin, f->l0_end, f->l0_bytes, f->n_tensors == 27 ? 12 : 9);
        check_extent(g, 1, f->l0_end, f->l1_end, f->l0_bytes, f->n_tensors == 27 ? 12 : 9);
        cr_assert_eq(sl_gguf_total_tensor_bytes(g), f->total);
        if (f->n_tensors == 27)
            check_tensor(g, "blk.0.attn_q.bias", SL_GGML_F32, 1, 256, 1, 5445408, 1024);
        sl_gguf_close(g);
    }
}

typedef struct {
    const char *file; uint64_t size; int64_t n_kv; const char *arch, *model, *pre;
    uint64_t n_tokens, tok_idx; const char *tok; uint64_t n_merges; uint32_t block_count;
} vocab_facts;

static const vocab_facts vocabs[] = {
    { "ggml-vocab-deepseek-coder.gguf", 1156067, 25, "llama", "gpt2", "deepseek-coder", 32256, 0, "!", 31757, 32 },
    { "ggml-vocab-deepseek-llm.gguf", 3970167, 23, "llama", "gpt2", "deepseek-llm", 102400, 1, "\"", 99757, 30 },
    { "ggml-vocab-gpt-2.gguf", 1766807, 16, "gpt2", "gpt2", "gpt-2", 50257, 2, "#", 50000, 12 },
    { "ggml-vocab-llama-bpe.gguf", 7818550, 21, "llama", "gpt2", "llama-bpe", 128256, 128255,
      "<|reserved_special_token_250|>", 280147, 32 },
    { "ggml-vocab-llama-spm.gguf", 723869, 22, "llama", "llama", "default", 32000, 1000, "ied", 0, 32 },
    { "ggml-vocab-phi-3.gguf", 726019, 26, "phi3", "llama", "default", 32064, 2, "</s>", 0, 32 },
    { "ggml-vocab-qwen2.gguf", 5932572, 20, "qwen2", "gpt2", "qwen2", 151936, 151643, "<|endoftext|>",
      151387, 32 },
};

Test(gguf_vocab, all_vocab_files)
{
    for (size_t i = 0; i < sizeof vocabs / sizeof vocabs[0]; i++) {
        const vocab_facts *f = &vocabs[i];
        char path[512], key[64];
        snprintf(path, sizeof path, MODELS "vocab/%s", f->file);
        sl_gguf *g = open_or_fail(path);
        cr_assert_eq(sl_gguf_version(g), 3);
        cr_assert_eq(sl_gguf_file_size(g), f->size);
        cr_assert_eq(sl_gguf_n_kv(g), f->n_kv, "%s n_kv", f->file);
        cr_assert_eq(sl_gguf_n_tensors(g), 0);
        cr_assert_eq(sl_gguf_n_layers(g), 0);
        cr_assert_eq(sl_gguf_total_tensor_bytes(g), 0);
        check_str(g, "general.architecture", f->arch);
        check_str(g, "tokenizer.ggml.model", f->model);
        check_str(g, "tokenizer.ggml.pre", f->pre);
        snprintf(key, sizeof key, "%s.block_count", f->arch);
        cr_assert_eq(u32_of(g, key), f->block_count, "%s", f->file);
        check_tokens(g, f->n_tokens, f->tok_idx, f->tok);
        uint32_t et;
        uint64_t n;
        int st = sl_gguf_get_arr(g, "tokenizer.ggml.merges", &et, &n, NULL);
        if (f->n_merges) {
            cr_assert_eq(st, 0);
            cr_assert_eq(et, SL_GGUF_STRING);
            cr_assert_eq(n, f->n_merges, "%s merges %llu", f->file, (unsigned long long)n);
        } else {
            cr_assert_eq(st, SL_ENOENT);
            cr_assert_neq(sl_last_error()[0], '\0');
        }
        sl_gguf_close(g);
    }
}

/* Every .gguf in the shared folders opens (catches files added later). */
static int open_all_in(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 5, ".gguf")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        sl_gguf *g = open_or_fail(path);
        /* tensor table is self-consistent: lookups find every tensor, ranges in file */
        for (int64_t i = 0; i < sl_gguf_n_tensors(g); i++) {
            const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
            cr_assert_eq(sl_gguf_find_tensor(g, t->name), t);
            cr_assert_leq(t->file_offset + t->nbytes, sl_gguf_file_size(g));
            cr_assert_eq(t->file_offset % sl_gguf_alignment(g), 0);
        }
        for (int64_t i = 0; i < sl_gguf_n_kv(g); i++)
            cr_assert_eq(sl_gguf_find_key(g, sl_gguf_kv_key(g, i)), i);
        sl_gguf_close(g);
        count++;
    }
    closedir(d);
    return count;
}

Test(gguf_models, every_shared_file_opens)
{
    cr_assert_geq(open_all_in(SL_SHARED_DIR "/models"), 8);
    cr_assert_geq(open_all_in(SL_SHARED_DIR "/models/vocab"), 7);
}

Test(gguf_getters, type_checks)
{
    sl_gguf *g = open_or_fail(MODELS "stories260K.gguf");
    uint32_t u;
    uint64_t u64;
    int64_t i64;
    float f;
    bool b;
    const char *s;
    cr_assert_eq(sl_gguf_get_u32(g, "no.such.key", &u), SL_ENOENT);
    cr_assert_neq(sl_gguf_errmsg(g)[0], '\0');
    cr_assert_eq(sl_gguf_get_u32(g, "general.architecture", &u), SL_ETYPE);
    cr_assert_eq(sl_gguf_get_f32(g, "llama.block_count", &f), SL_ETYPE);
    cr_assert_eq(sl_gguf_get_bool(g, "llama.block_count", &b), SL_ETYPE);
    cr_assert_eq(sl_gguf_get_str(g, "llama.block_count", &s, NULL), SL_ETYPE);
    cr_assert_eq(sl_gguf_get_arr(g, "llama.block_count", &u, &u64, NULL), SL_ETYPE);
    cr_assert_eq(sl_gguf_get_u64(g, "llama.block_count", &u64), 0);
    cr_assert_eq(u64, 5);
    cr_assert_eq(sl_gguf_get_i64(g, "tokenizer.ggml.padding_token_id", &i64), 0);
    cr_assert_eq(i64, 4294967295LL);
    cr_assert_eq(sl_gguf_find_key(g, "llama.block_count"), 16);
    cr_assert_str_eq(sl_gguf_kv_key(g, 0), "tokenizer.ggml.tokens");
    cr_assert_eq(sl_gguf_kv_type(g, 0), SL_GGUF_ARRAY);
    cr_assert_null(sl_gguf_kv_key(g, 19));
    const sl_gguf_value *v = sl_gguf_kv_value(g, 1), *e;
    sl_gguf_value tmp;
    cr_assert_eq(sl_gguf_value_arr_type(v), SL_GGUF_F32);
    cr_assert_eq(sl_gguf_value_arr_len(v), 512);
    cr_assert_eq(sl_gguf_value_arr_at(v, 511, &tmp, &e), 0);
    cr_assert_eq(sl_gguf_value_type(e), SL_GGUF_F32);
    cr_assert_eq(sl_gguf_value_arr_at(v, 512, &tmp, &e), SL_ERANGE);
    v = sl_gguf_kv_value(g, 0);
    cr_assert_eq(sl_gguf_value_arr_at(v, 1, NULL, &e), 0);
    uint64_t len;
    cr_assert_str_eq(sl_gguf_value_str(e, &len), "<s>");
    cr_assert_eq(len, 3);
    sl_gguf_close(g);
}

/* The reader pulls the metadata through a bounded window: opening a 19 MB
 * model touches only its header region, in reads of at most 64 KiB except
 * big numeric arrays, which go straight into their storage (here the 32000
 * f32 scores / i32 token types: 128000 bytes each). */
typedef struct { int fd; uint64_t bytes, calls, max_len, max_end; } counting;

static int64_t count_read(void *ctx, void *buf, size_t len, uint64_t off)
{
    counting *c = ctx;
    c->bytes += len;
    c->calls++;
    if (len > c->max_len) c->max_len = len;
    if (off + len > c->max_end) c->max_end = off + len;
    ssize_t r = pread(c->fd, buf, len, (off_t)off);
    return r < 0 ? -errno : r;
}

Test(gguf_models, reads_only_the_header_region)
{
    const char *path = MODELS "synth-tiny-q8_0.gguf";
    counting c = { 0 };
    c.fd = open(path, O_RDONLY);
    cr_assert_geq(c.fd, 0);
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_cb(&g, count_read, &c, 19809728, path), 0, "%s", sl_last_error());
    cr_assert_eq(sl_gguf_data_offset(g), 725440);
    cr_log_info("open: %llu reads, %llu bytes, max read %llu, furthest byte %llu",
                (unsigned long long)c.calls, (unsigned long long)c.bytes,
                (unsigned long long)c.max_len, (unsigned long long)c.max_end);
    cr_assert_leq(c.max_len, 128000);
    cr_assert_leq(c.max_end, 725440 + 65536);
    cr_assert_leq(c.bytes, 725440 + 65536);
    sl_gguf_close(g);
    close(c.fd);
}
