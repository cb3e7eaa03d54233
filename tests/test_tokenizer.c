/* Tokenizer: golden prompts and detokenizations made by llama.cpp
 * (../shared/golden), special tokens, pieces, the streaming detokenizer and
 * bad input. The full vocab-file vectors are in test_tokenizer_vocab.c. */
#include "sl_test.h"
#include "tok_testutil.h"
#include "util_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../engine/tok/tokenizer.h"
#include "../engine/tok/tok_internal.h"
#include "../gguf/gguf.h"
#include "session_testutil.h"

#define MODELS SL_SHARED_DIR "/models/"
#define GOLDEN SL_SHARED_DIR "/golden/"

/* ---- a minimal JSON reader for golden.json (strings, ints, skipping) ---- */

typedef struct jp { const char *p; } jp;

static void ws(jp *j) { while (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t') j->p++; }

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xc0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Parses a string at j->p (after ws); returns malloc'd text, *len its size. */
static char *jstr(jp *j, size_t *len)
{
    ws(j);
    cr_assert_eq(*j->p, '"', "json: string expected");
    j->p++;
    size_t cap = 256, n = 0;
    char *o = malloc(cap);
    while (*j->p != '"') {
        cr_assert(*j->p, "json: unterminated string");
        if (n + 8 > cap) o = realloc(o, cap *= 2);
        if (*j->p != '\\') { o[n++] = *j->p++; continue; }
        j->p++;
        char c = *j->p++;
        switch (c) {
        case 'n': o[n++] = '\n'; break;
        case 't': o[n++] = '\t'; break;
        case 'r': o[n++] = '\r'; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case 'u': {
            unsigned cp = (unsigned)strtoul((char[5]){j->p[0], j->p[1], j->p[2], j->p[3], 0}, NULL, 16);
            j->p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && j->p[0] == '\\' && j->p[1] == 'u') {
                unsigned lo = (unsigned)strtoul((char[5]){j->p[2], j->p[3], j->p[4], j->p[5], 0}, NULL, 16);
                j->p += 6;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            n += put_utf8(o + n, cp);
            break;
        }
        default: o[n++] = c; break;
        }
    }
    j->p++;
    o[n] = 0;
    *len = n;
    return o;
}

static void jskip(jp *j)
{
    ws(j);
    char c = *j->p;
    if (c == '"') { size_t l; free(jstr(j, &l)); return; }
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        j->p++;
        ws(j);
        if (*j->p == close) { j->p++; return; }
        for (;;) {
            if (c == '{') { size_t l; free(jstr(j, &l)); ws(j); j->p++; /* ':' */ }
            jskip(j);
            ws(j);
            if (*j->p == ',') { j->p++; continue; }
            cr_assert_eq(*j->p, close, "json: bad container");
            j->p++;
            return;
        }
    }
    while (*j->p && *j->p != ',' && *j->p != '}' && *j->p != ']') j->p++;   /* number, literal */
}

static int jints(jp *j, int32_t *out, int cap)
{
    ws(j);
    cr_assert_eq(*j->p, '[', "json: array expected");
    j->p++;
    int n = 0;
    for (;;) {
        ws(j);
        if (*j->p == ']') { j->p++; return n; }
        char *e;
        long v = strtol(j->p, &e, 10);
        cr_assert(e != j->p, "json: integer expected");
        cr_assert_lt(n, cap);
        out[n++] = (int32_t)v;
        j->p = e;
        ws(j);
        if (*j->p == ',') j->p++;
    }
}

typedef struct gprompt {
    char name[64];
    char *text, *greedy_text, *full_text;
    size_t text_len, greedy_len, full_len;
    int32_t prompt_ids[256], greedy_ids[256];
    int n_prompt, n_greedy;
} gprompt;

/* Reads the prompt records of a golden.json. */
static int read_golden(const char *path, gprompt *ps, int cap)
{
    char *buf = sl_test_slurp(path, NULL);
    cr_assert_not_null(buf, "read %s", path);
    jp j = { strstr(buf, "\"prompts\"") };
    cr_assert_not_null(j.p, "%s: no prompts", path);
    j.p += strlen("\"prompts\"");
    ws(&j);
    j.p++;   /* ':' */
    ws(&j);
    cr_assert_eq(*j.p, '[');
    j.p++;
    int n = 0;
    for (;;) {
        ws(&j);
        if (*j.p == ']') break;
        if (*j.p == ',') { j.p++; continue; }
        cr_assert_eq(*j.p, '{');
        j.p++;
        cr_assert_lt(n, cap);
        gprompt *p = &ps[n++];
        memset(p, 0, sizeof *p);
        for (;;) {
            ws(&j);
            if (*j.p == '}') { j.p++; break; }
            if (*j.p == ',') { j.p++; continue; }
            size_t kl;
            char *key = jstr(&j, &kl);
            ws(&j);
            j.p++;   /* ':' */
            ws(&j);
            if (!strcmp(key, "name")) { size_t l; char *s = jstr(&j, &l); snprintf(p->name, sizeof p->name, "%s", s); free(s); }
            else if (!strcmp(key, "prompt_text") && *j.p == '"') p->text = jstr(&j, &p->text_len);
            else if (!strcmp(key, "greedy_text") && *j.p == '"') p->greedy_text = jstr(&j, &p->greedy_len);
            else if (!strcmp(key, "full_text") && *j.p == '"') p->full_text = jstr(&j, &p->full_len);
            else if (!strcmp(key, "prompt_ids")) p->n_prompt = jints(&j, p->prompt_ids, 256);
            else if (!strcmp(key, "greedy_ids")) p->n_greedy = jints(&j, p->greedy_ids, 256);
            else jskip(&j);
            free(key);
        }
    }
    free(buf);
    return n;
}

static void free_golden(gprompt *ps, int n)
{
    for (int i = 0; i < n; i++) { free(ps[i].text); free(ps[i].greedy_text); free(ps[i].full_text); }
}

/* ---- golden prompts -------------------------------------------------------- */

Test(tokenizer, stories260k_text_prompts)
{
    sl_tok *t = load_tok(MODELS "stories260K.gguf");
    static gprompt ps[16];
    int n = read_golden(GOLDEN "stories260K/golden.json", ps, 16);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        if (!ps[i].text) continue;
        int32_t ids[256];
        int64_t got = sl_tok_encode(t, ps[i].text, ps[i].text_len, true, false, ids, 256);
        cr_assert_eq(got, ps[i].n_prompt, "%s: %lld tokens, golden %d", ps[i].name, (long long)got, ps[i].n_prompt);
        for (int k = 0; k < ps[i].n_prompt; k++)
            cr_assert_eq(ids[k], ps[i].prompt_ids[k], "%s: token %d: %d, golden %d", ps[i].name, k, ids[k], ps[i].prompt_ids[k]);
        checked++;
    }
    cr_assert_eq(checked, 3, "expected 3 text prompts, found %d", checked);
    free_golden(ps, n);
    sl_tok_destroy(t);
}

/* TinyStories-656K's vocabulary has all scores -1000, so llama.cpp's SPM
 * algorithm does not reproduce the model's own (HF BPE) tokenization; the
 * golden README records what llama.cpp produces, and we must match that. */
Test(tokenizer, tinystories656k_llamacpp_tokenization)
{
    sl_tok *t = load_tok(MODELS "TinyStories-656K-Q8_0.gguf");
    const int32_t want[] = {1, 80, 247, 158, 420, 177, 604};
    int32_t ids[32];
    int64_t n = sl_tok_encode(t, "The little dog", 14, true, false, ids, 32);
    cr_assert_eq(n, 7);
    for (int i = 0; i < 7; i++) cr_assert_eq(ids[i], want[i], "token %d: %d, llama.cpp %d", i, ids[i], want[i]);
    sl_tok_destroy(t);
}

/* greedy_text = concatenated pieces (special = false); full_text =
 * llama_detokenize(prompt + greedy, remove_special = false, unparse = false). */
static void check_detok(const char *model, const char *golden)
{
    sl_tok *t = load_tok(model);
    static gprompt ps[16];
    int n = read_golden(golden, ps, 16);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        gprompt *p = &ps[i];
        if (!p->full_text) continue;
        char buf[8192];
        size_t pos = 0;
        for (int k = 0; k < p->n_greedy; k++) {
            size_t pl = 0;
            cr_assert_eq(sl_tok_piece(t, p->greedy_ids[k], false, buf + pos, sizeof buf - pos, &pl), 0);
            pos += pl;
        }
        cr_assert_eq(pos, p->greedy_len, "%s: greedy_text length %zu, golden %zu", p->name, pos, p->greedy_len);
        cr_assert(memcmp(buf, p->greedy_text, pos) == 0, "%s: greedy_text differs", p->name);

        int32_t all[512];
        memcpy(all, p->prompt_ids, (size_t)p->n_prompt * sizeof *all);
        memcpy(all + p->n_prompt, p->greedy_ids, (size_t)p->n_greedy * sizeof *all);
        int64_t len = sl_tok_decode(t, all, p->n_prompt + p->n_greedy, false, buf, sizeof buf);
        cr_assert_eq(len, (int64_t)p->full_len, "%s: full_text length %lld, golden %zu", p->name, (long long)len, p->full_len);
        cr_assert(memcmp(buf, p->full_text, p->full_len) == 0, "%s: full_text differs:\n%s\n%s", p->name, buf, p->full_text);
        cr_assert_eq(buf[len], 0);

        /* streaming: the same bytes as the whole-sequence decode */
        sl_detok d;
        sl_detok_init(&d, false);
        char sbuf[8192];
        size_t spos = 0;
        for (int k = 0; k < p->n_prompt + p->n_greedy; k++) {
            size_t l = 0;
            cr_assert_eq(sl_detok_push(&d, t, all[k], sbuf + spos, sizeof sbuf - spos, &l), 0);
            spos += l;
        }
        size_t l = 0;
        cr_assert_eq(sl_detok_flush(&d, sbuf + spos, sizeof sbuf - spos, &l), 0);
        spos += l;
        cr_assert_eq(spos, p->full_len, "%s: streamed %zu bytes", p->name, spos);
        cr_assert(memcmp(sbuf, p->full_text, spos) == 0, "%s: streamed text differs", p->name);
        checked++;
    }
    cr_assert_eq(checked, 3, "expected 3 prompts with text, found %d", checked);
    free_golden(ps, n);
    sl_tok_destroy(t);
}

Test(tokenizer, stories260k_detokenize)
{
    check_detok(MODELS "stories260K.gguf", GOLDEN "stories260K/golden.json");
}

Test(tokenizer, tinystories656k_detokenize)
{
    check_detok(MODELS "TinyStories-656K-Q8_0.gguf", GOLDEN "TinyStories-656K-Q8_0/golden.json");
}

/* ---- special tokens, pieces, metadata -------------------------------------- */

static int64_t enc(sl_tok *t, const char *s, bool add, bool parse, int32_t *ids, int cap)
{
    return sl_tok_encode(t, s, strlen(s), add, parse, ids, cap);
}

/* The piece of id is exactly want (no NUL in want). */
static void piece_is(const sl_tok *t, int32_t id, bool special, const char *want)
{
    char buf[64];
    size_t len = 99;
    cr_assert_eq(sl_tok_piece(t, id, special, buf, sizeof buf, &len), 0, "id %d", id);
    cr_assert(len == strlen(want) && !memcmp(buf, want, len), "id %d: '%.*s', want '%s'", id,
              (int)len, buf, want);
}

Test(tokenizer, spm_special_and_pieces)
{
    sl_tok *t = load_tok(MODELS "vocab/ggml-vocab-llama-spm.gguf");
    cr_assert_eq(sl_tok_kind(t), SL_TOK_SPM);
    cr_assert_eq(sl_tok_n_vocab(t), 32000);
    cr_assert_eq(sl_tok_bos(t), 1);
    cr_assert_eq(sl_tok_eos(t), 2);
    cr_assert(sl_tok_add_bos(t));
    cr_assert(!sl_tok_add_eos(t), "tokenizer.ggml.add_eos_token is false");
    cr_assert(sl_tok_is_eog(t, 2));
    cr_assert(!sl_tok_is_eog(t, 1));

    int32_t ids[64];
    int64_t n = enc(t, "<s>Hello</s>", false, true, ids, 64);
    cr_assert_geq(n, 3);
    cr_assert_eq(ids[0], 1);
    cr_assert_eq(ids[n - 1], 2);
    /* without parse_special the same text is plain text */
    n = enc(t, "<s>Hello</s>", false, false, ids, 64);
    for (int64_t i = 0; i < n; i++) cr_assert(ids[i] != 1 && ids[i] != 2, "control token from plain text");
    /* add_special: BOS first, no EOS (add_eos_token false) */
    n = enc(t, "Hello", true, false, ids, 64);
    cr_assert_eq(ids[0], 1);
    cr_assert_neq(ids[n - 1], 2);
    /* empty text: nothing, or only BOS */
    cr_assert_eq(enc(t, "", false, false, ids, 64), 0);
    cr_assert_eq(enc(t, "", true, false, ids, 64), 1);
    /* cap too small: count returned, nothing past cap written */
    int32_t small[2] = { -7, -7 };
    int64_t need = enc(t, "Hello world, this is a test", false, false, small, 1);
    cr_assert_gt(need, 1);
    cr_assert_eq(small[1], -7);

    /* pieces: "▁Hello" -> " Hello"; BOS only when special; byte token */
    char buf[64];
    size_t len;
    int32_t hello = sl_tok_find(t, "\xe2\x96\x81Hello", 8);
    cr_assert_geq(hello, 0);
    piece_is(t, hello, false, " Hello");
    piece_is(t, 1, false, "");
    piece_is(t, 1, true, "<s>");
    int32_t b0a = sl_tok_find(t, "<0x0A>", 6);
    cr_assert_eq(sl_tok_type(t, b0a), SL_TOKT_BYTE);
    piece_is(t, b0a, false, "\n");
    cr_assert_eq(sl_tok_piece(t, hello, false, buf, 3, &len), SL_ERANGE);
    cr_assert_eq(len, 6);
    cr_assert_eq(sl_tok_piece(t, 32000, false, buf, sizeof buf, &len), SL_EINVAL);
    cr_assert_eq(sl_tok_piece(t, -1, false, buf, sizeof buf, &len), SL_EINVAL);

    /* decode: without BOS the first word's space prefix is dropped (as llama.cpp) */
    n = enc(t, "Hello world", false, false, ids, 64);
    char out[64];
    int64_t dl = sl_tok_decode(t, ids, n, false, out, sizeof out);
    cr_assert_eq(dl, 11);
    cr_assert_str_eq(out, "Hello world");
    n = enc(t, "Hello world", true, false, ids, 64);
    dl = sl_tok_decode(t, ids, n, false, out, sizeof out);
    cr_assert_str_eq(out, " Hello world");
    dl = sl_tok_decode(t, ids, n, true, out, sizeof out);
    cr_assert_str_eq(out, "<s> Hello world");
    /* too small: length returned, nothing past cap */
    memset(out, 'x', sizeof out);
    cr_assert_eq(sl_tok_decode(t, ids, n, false, out, 4), 12);
    cr_assert_eq(out[4], 'x');
    int32_t badid = 99999;
    cr_assert_eq(sl_tok_decode(t, &badid, 1, false, out, sizeof out), SL_EINVAL);
    sl_tok_destroy(t);
}

Test(tokenizer, bpe_special_tokens)
{
    sl_tok *t = load_tok(MODELS "vocab/ggml-vocab-llama-bpe.gguf");
    cr_assert_eq(sl_tok_kind(t), SL_TOK_BPE);
    cr_assert_str_eq(sl_tok_pre_name(t), "llama-bpe");
    int32_t bos = sl_tok_bos(t), eot = sl_tok_eot(t);
    cr_assert_eq(bos, 128000);
    cr_assert_eq(eot, 128009);
    cr_assert(sl_tok_is_eog(t, eot));
    cr_assert(sl_tok_add_bos(t));
    int32_t ids[64];
    const char *s = "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>";
    int64_t n = enc(t, s, true, true, ids, 64);
    cr_assert_geq(n, 6);
    cr_assert_eq(ids[0], bos);
    cr_assert_eq(ids[1], sl_tok_find(t, "<|start_header_id|>", 19));
    cr_assert_eq(ids[n - 1], eot);
    n = enc(t, s, false, false, ids, 64);
    for (int64_t i = 0; i < n; i++) cr_assert_lt(ids[i], 128000, "special token from plain text");
    /* pieces: byte-level "Ġworld" -> " world"; control text only with special */
    int32_t w = sl_tok_find(t, "\xc4\xa0world", 7);
    cr_assert_geq(w, 0);
    piece_is(t, w, false, " world");
    piece_is(t, eot, false, "");
    piece_is(t, eot, true, "<|eot_id|>");
    /* round trip of mixed text, including a 4-byte character */
    const char *txt = "Hello world! \xf0\x9f\xa6\x99 caf\xc3\xa9 123456\n\tend";
    n = enc(t, txt, false, false, ids, 64);
    char out[128];
    int64_t dl = sl_tok_decode(t, ids, n, false, out, sizeof out);
    cr_assert_eq(dl, (int64_t)strlen(txt));
    cr_assert_str_eq(out, txt);
    sl_tok_destroy(t);
}

Test(tokenizer, qwen2_user_defined_tokens_always_parsed)
{
    sl_tok *t = load_tok(MODELS "vocab/ggml-vocab-qwen2.gguf");
    cr_assert(!sl_tok_add_bos(t));
    int32_t think = sl_tok_find(t, "<think>", 7);
    cr_assert_geq(think, 0);
    int32_t ids[64];
    int64_t n;
    if (sl_tok_type(t, think) == SL_TOKT_USER_DEFINED) {
        /* user-defined tokens are split out even without parse_special */
        n = enc(t, "a<think>b", false, false, ids, 64);
        cr_assert_eq(n, 3);
        cr_assert_eq(ids[1], think);
    }
    int32_t im_start = sl_tok_find(t, "<|im_start|>", 12);
    cr_assert_eq(sl_tok_type(t, im_start), SL_TOKT_CONTROL);
    n = enc(t, "<|im_start|>user", false, true, ids, 64);
    cr_assert_eq(ids[0], im_start);
    n = enc(t, "<|im_start|>user", false, false, ids, 64);
    cr_assert_neq(ids[0], im_start);
    cr_assert(sl_tok_is_eog(t, sl_tok_find(t, "<|im_end|>", 10)));
    sl_tok_destroy(t);
}

/* ---- streaming detokenizer: UTF-8 held until complete ----------------------- */

Test(tokenizer, detok_stream_utf8)
{
    sl_tok *t = load_tok(MODELS "vocab/ggml-vocab-llama-spm.gguf");
    int32_t b[256];
    for (int i = 0; i < 256; i++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", i);
        b[i] = sl_tok_find(t, name, 6);
        cr_assert_geq(b[i], 0);
    }
    sl_detok d;
    sl_detok_init(&d, false);
    char out[SL_DETOK_MAX_OUT];
    size_t len;
    /* U+1F999 as four byte tokens: nothing until the last */
    const unsigned char llama[4] = {0xf0, 0x9f, 0xa6, 0x99};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(sl_detok_push(&d, t, b[llama[i]], out, sizeof out, &len), 0);
        cr_assert_eq(len, i < 3 ? 0u : 4u);
    }
    cr_assert(!memcmp(out, llama, 4));
    /* an impossible byte becomes U+FFFD at once */
    cr_assert_eq(sl_detok_push(&d, t, b[0xff], out, sizeof out, &len), 0);
    cr_assert(len == 3 && !memcmp(out, "\xef\xbf\xbd", 3));
    /* a lead byte followed by ASCII: U+FFFD then the ASCII */
    cr_assert_eq(sl_detok_push(&d, t, b[0xe2], out, sizeof out, &len), 0);
    cr_assert_eq(len, 0);
    cr_assert_eq(sl_detok_push(&d, t, b['a'], out, sizeof out, &len), 0);
    cr_assert(len == 4 && !memcmp(out, "\xef\xbf\xbd" "a", 4));
    /* output too small: error and state kept */
    cr_assert_eq(sl_detok_push(&d, t, b[0xc3], out, sizeof out, &len), 0);
    cr_assert_eq(len, 0);
    cr_assert_eq(sl_detok_push(&d, t, b[0xa9], out, 1, &len), SL_ERANGE);
    cr_assert_eq(sl_detok_push(&d, t, b[0xa9], out, sizeof out, &len), 0);
    cr_assert(len == 2 && !memcmp(out, "\xc3\xa9", 2));
    /* a dangling lead byte at the end of the stream */
    cr_assert_eq(sl_detok_push(&d, t, b[0xe2], out, sizeof out, &len), 0);
    cr_assert_eq(sl_detok_flush(&d, out, sizeof out, &len), 0);
    cr_assert(len == 3 && !memcmp(out, "\xef\xbf\xbd", 3));
    cr_assert_eq(sl_detok_flush(&d, out, sizeof out, &len), 0);
    cr_assert_eq(len, 0);
    cr_assert_eq(sl_detok_push(&d, t, -1, out, sizeof out, &len), SL_EINVAL);
    sl_tok_destroy(t);
}

Test(tokenizer, invalid_utf8_input)
{
    /* invalid bytes are tokenized (SPM: byte fallback; BPE: as U+FFFD, like
     * llama.cpp), never a crash */
    const char bad[] = "ab\xff\xc3(\xe2\x82 \xf0\x9f";
    sl_tok *t = load_tok(MODELS "vocab/ggml-vocab-llama-spm.gguf");
    int32_t ids[64];
    int64_t n = sl_tok_encode(t, bad, sizeof bad - 1, false, false, ids, 64);
    cr_assert_gt(n, 0);
    int32_t ff = sl_tok_find(t, "<0xFF>", 6);
    bool have = false;
    for (int64_t i = 0; i < n; i++) have |= ids[i] == ff;
    cr_assert(have, "byte fallback <0xFF> expected");
    sl_tok_destroy(t);
    t = load_tok(MODELS "vocab/ggml-vocab-gpt-2.gguf");
    n = sl_tok_encode(t, bad, sizeof bad - 1, false, false, ids, 64);
    cr_assert_gt(n, 0);
    char out[128];
    int64_t dl = sl_tok_decode(t, ids, n, false, out, sizeof out);
    cr_assert_gt(dl, 0);
    cr_assert(strstr(out, "\xef\xbf\xbd") != NULL, "U+FFFD expected in %s", out);
    sl_tok_destroy(t);
}

/* ---- bad metadata ------------------------------------------------------------ */

static int load_written(const char *model, const char *pre, int n_scores, int *out_rc)
{
    char path[] = "/tmp/sl_tok_testXXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    sl_gguf_writer *w = NULL;
    cr_assert_eq(sl_gguf_writer_open(&w, path, 3), 0);
    if (model) sl_gguf_writer_set_str(w, "tokenizer.ggml.model", model);
    if (pre) sl_gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
    const char *toks[4] = {"<unk>", "<s>", "</s>", "a"};
    sl_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 4);
    const char *merges[1] = {"a a"};
    sl_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges, 1);
    float scores[8] = {0};
    sl_gguf_writer_set_arr(w, "tokenizer.ggml.scores", SL_GGUF_F32, scores, (uint64_t)n_scores);
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0);
    cr_assert_eq(sl_gguf_writer_close(w), 0);
    sl_gguf *g = NULL;
    cr_assert_eq(sl_gguf_open_path(&g, path), 0, "%s", sl_last_error());
    sl_tok *t = (sl_tok *)0x1;
    *out_rc = sl_tok_create(&t, g);
    if (*out_rc == 0) sl_tok_destroy(t);
    else cr_assert_null(t);
    sl_gguf_close(g);
    unlink(path);
    return *out_rc;
}

Test(tokenizer, bad_metadata)
{
    int rc;
    load_written("llama", NULL, 4, &rc);
    cr_assert_eq(rc, 0, "minimal SPM vocabulary: %s", sl_last_error());
    load_written("bert", NULL, 4, &rc);
    cr_assert_eq(rc, SL_EUNSUPPORTED);
    cr_assert(strstr(sl_last_error(), "bert") != NULL, "message: %s", sl_last_error());
    load_written(NULL, NULL, 4, &rc);
    cr_assert_eq(rc, SL_EUNSUPPORTED);
    load_written("gpt2", "no-such-pre", 4, &rc);
    cr_assert_eq(rc, SL_EUNSUPPORTED);
    cr_assert(strstr(sl_last_error(), "no-such-pre") != NULL, "message: %s", sl_last_error());
    load_written("gpt2", "gpt-2", 4, &rc);
    cr_assert_eq(rc, 0, "minimal BPE vocabulary: %s", sl_last_error());
    load_written("llama", NULL, 3, &rc);
    cr_assert_eq(rc, SL_EFORMAT);
    cr_assert(strstr(sl_last_error(), "scores") != NULL, "message: %s", sl_last_error());
    cr_assert_eq(sl_tok_create(NULL, NULL), SL_EINVAL);
}

/* ---- generated Unicode tables ------------------------------------------------ */

Test(tokenizer, unicode_tables)
{
    cr_assert(sl_ucd_flags('A') & SL_UCF_LETTER);
    cr_assert(sl_ucd_flags(0xE9) & SL_UCF_LETTER);            /* e acute */
    cr_assert(sl_ucd_flags(0x4E00) & SL_UCF_LETTER);          /* CJK, inside a First/Last range */
    cr_assert(sl_ucd_flags(0xAC01) & SL_UCF_LETTER);          /* Hangul syllable range */
    cr_assert(sl_ucd_flags('7') & SL_UCF_NUMBER);
    cr_assert(sl_ucd_flags(0x0663) & SL_UCF_NUMBER);          /* Arabic-Indic three */
    cr_assert(sl_ucd_flags(0x00B2) & SL_UCF_NUMBER);          /* superscript two (No) */
    cr_assert(sl_ucd_flags(',') & SL_UCF_PUNCT);
    cr_assert(sl_ucd_flags('$') & SL_UCF_SYMBOL);
    cr_assert(sl_ucd_flags(0x1F999) & SL_UCF_SYMBOL);         /* llama emoji (So) */
    cr_assert(sl_ucd_flags(0x0301) & SL_UCF_MARK);            /* combining acute */
    cr_assert_eq(sl_ucd_flags(' '), SL_UCF_SEPARATOR | SL_UCF_WHITESPACE);
    cr_assert_eq(sl_ucd_flags('\n'), SL_UCF_CONTROL | SL_UCF_WHITESPACE);
    cr_assert_eq(sl_ucd_flags(0x3000), SL_UCF_SEPARATOR | SL_UCF_WHITESPACE);
    cr_assert_eq(sl_ucd_flags(0x0085), SL_UCF_CONTROL | SL_UCF_WHITESPACE);
    cr_assert_eq(sl_ucd_flags(0x200B), SL_UCF_CONTROL);       /* ZWSP is Cf, not White_Space */
    cr_assert_eq(sl_ucd_flags(0x0378), SL_UCF_UNDEF);         /* unassigned */
    cr_assert_eq(sl_ucd_flags(0xE000), SL_UCF_CONTROL);       /* private use */
    cr_assert_eq(sl_ucd_flags(0x10FFFF), SL_UCF_UNDEF);
    cr_assert_eq(sl_ucd_flags(0x110000), SL_UCF_UNDEF);
    cr_assert_eq(sl_ucd_range_start[0], 0u);
    for (uint32_t i = 1; i < sl_ucd_n_ranges; i++)
        cr_assert_lt(sl_ucd_range_start[i - 1], sl_ucd_range_start[i]);
}

/* ---- the tokenizer CVEs of llama.cpp ---------------------------------------- */

static sl_model *open_s260(void)
{
    sl_model_params mp = st_params(64, 0, 1);
    return st_open(MODELS "stories260K.gguf", &mp);
}

/* Every byte of buf[from, n) still holds the fill byte. */
static void untouched(const char *buf, size_t from, size_t n, const char *what)
{
    for (size_t i = from; i < n; i++)
        cr_assert_eq((unsigned char)buf[i], 0x5a, "%s: byte %zu written", what, i);
}

/* CVE-2025-49847: a piece longer than the caller's buffer (llama.cpp cast its
 * length to a negative int and copied past the end). Every cap below the
 * piece's length, at the tokenizer, the model API and the streaming
 * detokenizer, is SL_ERANGE with nothing written; out-of-range (negative)
 * ids are SL_EINVAL. */
Test(tokenizer, CVE_2025_49847_piece_longer_than_buffer_refused)
{
    sl_tok *t = load_tok(MODELS "stories260K.gguf");
    sl_model *m = open_s260();
    const int32_t nv = sl_tok_n_vocab(t);
    int32_t best = -1;
    size_t blen = 0, len;
    for (int32_t id = 0; id < nv; id++) {
        len = 0;
        sl_tok_piece(t, id, false, NULL, 0, &len);
        if (len > blen) { blen = len; best = id; }
    }
    cr_assert_gt(blen, 4, "longest piece %zu bytes", blen);
    char buf[256], want[128];
    for (size_t cap = 0; cap < blen; cap++) {
        memset(buf, 0x5a, sizeof buf);
        cr_assert_eq(sl_tok_piece(t, best, false, buf, cap, &len), SL_ERANGE, "cap %zu", cap);
        snprintf(want, sizeof want, "sl_tok_piece: piece of %zu bytes, buffer %zu", blen, cap);
        cr_assert_str_eq(sl_last_error(), want);
        untouched(buf, 0, sizeof buf, "sl_tok_piece");
        cr_assert_eq(sl_model_token_piece(m, best, buf, cap), SL_ERANGE, "cap %zu", cap);
        cr_assert_str_eq(sl_last_error(), want);
        untouched(buf, 0, sizeof buf, "sl_model_token_piece");
    }
    cr_assert_eq(sl_model_token_piece(m, best, buf, blen), (int)blen);
    untouched(buf, blen, sizeof buf, "sl_model_token_piece, exact cap");
    const int32_t bad[] = { -1, INT32_MIN, nv };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(sl_model_token_piece(m, bad[i], buf, sizeof buf), SL_EINVAL, "id %d", bad[i]);
        snprintf(want, sizeof want, "sl_tok_piece: token id %d out of range [0, %d)", bad[i], nv);
        cr_assert_str_eq(sl_last_error(), want);
    }
    /* the streaming detokenizer: refused, nothing past cap, state kept */
    sl_detok d;
    sl_detok_init(&d, false);
    memset(buf, 0x5a, sizeof buf);
    cr_assert_eq(sl_detok_push(&d, t, best, buf, blen - 1, &len), SL_ERANGE);
    snprintf(want, sizeof want, "sl_detok_push: output buffer of %zu bytes is too small", blen - 1);
    cr_assert_str_eq(sl_last_error(), want);
    cr_assert_eq(len, 0);
    untouched(buf, blen - 1, sizeof buf, "sl_detok_push");
    cr_assert_eq(sl_detok_push(&d, t, -1, buf, sizeof buf, &len), SL_EINVAL);
    snprintf(want, sizeof want, "sl_detok_push: token id -1 out of range [0, %d)", nv);
    cr_assert_str_eq(sl_last_error(), want);
    sl_model_close(m);
    sl_tok_destroy(t);
}

/* CVE-2025-52566: the token count of a long input overflowed llama.cpp's int
 * compare with n_tokens_max. Here the count is 64-bit: every cap below it
 * returns the full count with nothing written past cap, the model API turns
 * that into SL_ERANGE naming both numbers, and a negative cap is SL_EINVAL. */
Test(tokenizer, CVE_2025_52566_token_count_beyond_cap_refused)
{
    sl_tok *t = load_tok(MODELS "stories260K.gguf");
    sl_model *m = open_s260();
    const char unit[] = "Once upon a time there was a dog. ";
    const size_t reps = 2048, ul = sizeof unit - 1, len = reps * ul;
    char *text = malloc(len);
    for (size_t i = 0; i < reps; i++) memcpy(text + i * ul, unit, ul);
    const int64_t n = sl_tok_encode(t, text, len, true, false, NULL, 0);
    cr_assert_gt(n, (int64_t)reps * 8, "%lld tokens", (long long)n);
    int32_t *ids = malloc((size_t)(n + 16) * sizeof *ids);
    const int64_t caps[] = { 0, 1, n / 2, n - 1 };
    char want[128];
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        for (int64_t i = 0; i < n + 16; i++) ids[i] = -7;
        cr_assert_eq(sl_tok_encode(t, text, len, true, false, ids, caps[c]), n);
        for (int64_t i = caps[c]; i < n + 16; i++) cr_assert_eq(ids[i], -7, "cap %lld: id %lld written",
                                                               (long long)caps[c], (long long)i);
        cr_assert_eq(sl_model_tokenize(m, text, len, true, false, ids, (int)caps[c]), SL_ERANGE);
        snprintf(want, sizeof want, "tokenize: %lld tokens > buffer of %d", (long long)n, (int)caps[c]);
        cr_assert_str_eq(sl_last_error(), want);
        for (int64_t i = caps[c]; i < n + 16; i++) cr_assert_eq(ids[i], -7);
    }
    cr_assert_eq(sl_model_tokenize(m, text, len, true, false, ids, -1), SL_EINVAL);
    cr_assert_str_eq(sl_last_error(), "sl_tok_encode: bad arguments");
    cr_assert_eq(sl_model_tokenize(m, text, len, true, false, ids, INT32_MIN), SL_EINVAL);
    cr_assert_eq(sl_model_tokenize(m, text, len, true, false, ids, (int)n), (int)n);
    free(ids);
    free(text);
    sl_model_close(m);
    sl_tok_destroy(t);
}
