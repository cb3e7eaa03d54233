/* The special-token trie (engine/tok/tok_special.c): the encoder splits only
 * at the specials the scan marks, so the scan must mark every special whose
 * text occurs in the input (memmem is the oracle) and no other. Texts are
 * made of whole special texts, their prefixes and suffixes, and bytes
 * between, so near-misses and overlaps are common. */
#include "sl_test.h"
#include "tok_testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/tok/tok_internal.h"

#define VOCAB_DIR SL_SHARED_DIR "/models/vocab"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_u32(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* Appends to buf a random piece: a special's text, its prefix or suffix, or a byte. */
static size_t piece(const sl_tok *t, char *buf, size_t n, size_t cap)
{
    uint32_t r = next_u32() % 8;
    if (t->n_special == 0 || r == 0) {
        if (n < cap) buf[n++] = "<|>_ a\n"[next_u32() % 7];
        return n;
    }
    int32_t id = t->special[next_u32() % (uint32_t)t->n_special];
    const char *s = t->pool + t->text_off[id];
    size_t l = t->text_len[id], from = 0, to = l;
    if (r == 1) to = next_u32() % l;             /* a prefix */
    else if (r == 2) from = next_u32() % l;      /* a suffix */
    for (size_t i = from; i < to && n < cap; i++) buf[n++] = s[i];
    return n;
}

static int check(const sl_tok *t, const char *text, size_t len, uint8_t *seen)
{
    memset(seen, 0, (size_t)t->n_special);
    sl_tok_special_scan(t, text, len, seen);
    int bad = 0;
    for (int32_t i = 0; i < t->n_special; i++) {
        int32_t id = t->special[i];
        bool occurs = memmem(text, len, t->pool + t->text_off[id], t->text_len[id]) != NULL;
        if (occurs != (seen[i] != 0)) bad++;
    }
    return bad;
}

Test(tok_special, scan_marks_exactly_the_specials_that_occur)
{
    DIR *d = opendir(VOCAB_DIR);
    cr_assert_not_null(d, "no %s", VOCAB_DIR);
    int vocabs = 0, texts = 0, marked = 0;
    char buf[512];
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".gguf")) continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s", VOCAB_DIR, e->d_name);
        sl_tok *t = load_tok(path);
        uint8_t *seen = malloc((size_t)t->n_special + 1);
        cr_assert_not_null(seen);
        for (int k = 0; k < 400; k++) {
            size_t n = 0, pieces = 1 + next_u32() % 12;
            for (size_t p = 0; p < pieces; p++) n = piece(t, buf, n, sizeof buf);
            int bad = check(t, buf, n, seen);
            cr_assert_eq(bad, 0, "%s: %d specials misjudged in a %zu-byte text", e->d_name, bad, n);
            for (int32_t i = 0; i < t->n_special; i++) marked += seen[i];
            texts++;
        }
        /* the empty text marks nothing */
        cr_assert_eq(check(t, "", 0, seen), 0);
        free(seen);
        sl_tok_destroy(t);
        vocabs++;
    }
    closedir(d);
    cr_assert_geq(vocabs, 5, "only %d vocabularies in %s", vocabs, VOCAB_DIR);
    cr_assert_gt(marked, texts, "the texts should hold specials: %d marks in %d texts", marked, texts);
}

/* Splits at specials that share long prefixes (Llama-3's reserved tokens):
 * the longer text wins where both match, the shorter one elsewhere. */
Test(tok_special, overlapping_reserved_tokens_split_as_before)
{
    sl_tok *t = load_tok(VOCAB_DIR "/ggml-vocab-llama-bpe.gguf");
    int32_t a = sl_tok_find(t, "<|reserved_special_token_1|>", 28);
    int32_t b = sl_tok_find(t, "<|reserved_special_token_10|>", 29);
    if (a < 0 || b < 0) {
        sl_tok_destroy(t);
        cr_skip_test("llama-bpe vocabulary without the reserved tokens");
    }
    const char *text = "<|reserved_special_token_1<|reserved_special_token_10|><|reserved_special_token_1|>";
    int32_t ids[64];
    int64_t n = sl_tok_encode(t, text, strlen(text), false, true, ids, 64);
    cr_assert_gt(n, 2, "%s", sl_last_error());
    cr_assert_eq(ids[n - 1], a);
    cr_assert_eq(ids[n - 2], b);
    for (int64_t i = 0; i < n - 2; i++) cr_assert(ids[i] != a && ids[i] != b, "the cut prefix is text");
    /* without parse_special control texts are plain text */
    n = sl_tok_encode(t, text, strlen(text), false, false, ids, 64);
    for (int64_t i = 0; i < n; i++) cr_assert(ids[i] != a && ids[i] != b);
    sl_tok_destroy(t);
}
