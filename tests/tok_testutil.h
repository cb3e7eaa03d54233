/* Shared by the tokenizer tests: open a GGUF, load its tokenizer, close it. */
#ifndef SL_TOK_TESTUTIL_H
#define SL_TOK_TESTUTIL_H

#include "sl_test.h"

#include <stdlib.h>
#include <unistd.h>

#include "../engine/tok/tokenizer.h"
#include "../gguf/gguf.h"

static inline sl_tok *load_tok(const char *path)
{
    sl_gguf *g = NULL;
    int rc = sl_gguf_open_path(&g, path);
    cr_assert_eq(rc, 0, "open %s: %s", path, sl_last_error());
    sl_tok *t = NULL;
    rc = sl_tok_create(&t, g);
    sl_gguf_close(g);
    cr_assert_eq(rc, 0, "tokenizer of %s: %s", path, sl_last_error());
    return t;
}

/* Byte-level text of byte b (GPT-2's byte-to-unicode map) as UTF-8 into out[3]. */
static inline size_t tok_byte_char(unsigned b, char *out)
{
    unsigned cp = b, k = 0;
    if (!((b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae))) {
        for (unsigned x = 0; x < b; x++)
            if (!((x >= '!' && x <= '~') || (x >= 0xa1 && x <= 0xac) || (x >= 0xae))) k++;
        cp = 256 + k;
    }
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
}

/* Writes a byte-level BPE vocabulary to path: the 256 byte tokens, then
 * words (NORMAL, byte-level texts), then specials (CONTROL); merges as given. */
static inline void tok_write_bpe(const char *path, const char *pre, const char *const *words, size_t n_words,
                                 const char *const *merges, size_t n_merges,
                                 const char *const *specials, size_t n_specials)
{
    size_t n = 256 + n_words + n_specials;
    char bytes[256][4];
    const char **toks = calloc(n, sizeof *toks);
    int32_t *types = calloc(n, sizeof *types);
    cr_assert(toks && types);
    for (unsigned b = 0; b < 256; b++) {
        size_t l = tok_byte_char(b, bytes[b]);
        bytes[b][l] = 0;
        toks[b] = bytes[b];
        types[b] = 1;
    }
    for (size_t i = 0; i < n_words; i++) { toks[256 + i] = words[i]; types[256 + i] = 1; }
    for (size_t i = 0; i < n_specials; i++) { toks[256 + n_words + i] = specials[i]; types[256 + n_words + i] = 3; }
    sl_gguf_writer *w = NULL;
    cr_assert_eq(sl_gguf_writer_open(&w, path, 3), 0);
    sl_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    sl_gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
    sl_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, n);
    sl_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", SL_GGUF_I32, types, n);
    sl_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges, n_merges);
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0);
    cr_assert_eq(sl_gguf_writer_close(w), 0);
    free(toks);
    free(types);
}

/* tok_write_bpe into a temporary file, loaded (the file removed). */
static inline sl_tok *tok_load_bpe(const char *pre, const char *const *words, size_t n_words,
                                   const char *const *merges, size_t n_merges,
                                   const char *const *specials, size_t n_specials)
{
    char path[] = "/tmp/sl_tok_bpe_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    tok_write_bpe(path, pre, words, n_words, merges, n_merges, specials, n_specials);
    sl_tok *t = load_tok(path);
    unlink(path);
    return t;
}

#endif
