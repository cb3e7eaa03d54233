/* The o200k pre-tokenizer (tokenizer.ggml.pre "gpt-4o", gpt-oss): word
 * splits of tricky text against the regular expression as llama.cpp
 * evaluates it (std::regex, ASCII-only letter case), and a small byte-level
 * vocabulary with Harmony's control tokens written and loaded end to end. */
#include "sl_test.h"
#include "tok_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../engine/tok/tokenizer.h"
#include "../engine/tok/tok_internal.h"
#include "../gguf/gguf.h"

/* The words of text joined by '|'. */
static void split_str(const char *text, char *out, size_t cap)
{
    size_t len = strlen(text);
    uint32_t *cps = malloc((len + 1) * sizeof *cps);
    size_t *lens = malloc((len + 1) * sizeof *lens), *scratch = malloc((len + 1) * sizeof *scratch);
    cr_assert(cps && lens && scratch);
    size_t n = sl_utf8_decode_lenient(text, len, cps);
    size_t nw = sl_pretok_split(SL_PRE_O200K, cps, n, lens, scratch);
    size_t o = 0, p = 0, total = 0;
    for (size_t w = 0; w < nw; w++) {
        cr_assert_gt(lens[w], 0, "empty word %zu of '%s'", w, text);
        if (w) out[o++] = '|';
        for (size_t k = 0; k < lens[w]; k++) o += sl_utf8_encode(cps[p++], out + o);
        total += lens[w];
        cr_assert_lt(o + 8, cap);
    }
    out[o] = 0;
    cr_assert_eq(total, n, "the words of '%s' cover %zu of %zu code points", text, total, n);
    free(cps);
    free(lens);
    free(scratch);
}

static void split_is(const char *text, const char *want)
{
    char got[1024];
    split_str(text, got, sizeof got);
    cr_expect_str_eq(got, want, "split of '%s'", text);
}

Test(o200k, words_and_contractions)
{
    split_is("Hello world", "Hello| world");
    split_is("don't DON'T I'm We'LL they'Re", "don't| DON'T| I'm| We'LL| they'Re");
    /* no contraction without a letter before it */
    split_is("it 's", "it| '|s");
    /* the letter case splits camel case but keeps an upper run before lower */
    split_is("HELLOworld helloWorld", "HELLOworld| hello|World");
    split_is("ABC", "ABC");
    /* one leading non-letter, non-digit, non-newline joins the word */
    split_is("a.b (x) \tz", "a|.b| (|x|)| |\tz");
}

Test(o200k, non_ascii_letters)
{
    /* CJK and other non-ASCII letters count as upper and lower case at once */
    split_is("\xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96\xe7\x95\x8c", "\xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96\xe7\x95\x8c");
    split_is("\xe4\xb8\xad\xe6\x96\x87" "abc", "\xe4\xb8\xad\xe6\x96\x87" "abc");
    /* an upper run that ends in A-Z backs off to its last non-ASCII letter */
    split_is("\xc3\x80" "B", "\xc3\x80|B");
    split_is("A\xc3\x80" "BC d", "A\xc3\x80|BC| d");
    split_is("caf\xc3\xa9 na\xc3\xafve", "caf\xc3\xa9| na\xc3\xafve");
    /* a combining mark is not a letter: it leads the next word */
    split_is("e\xcc\x81t", "e|\xcc\x81t");
    /* ideographic space (non-ASCII whitespace) may lead a word */
    split_is("\xe3\x80\x80x", "\xe3\x80\x80x");
}

Test(o200k, digits)
{
    split_is("1234567", "123|456|7");
    split_is("a1b", "a|1|b");
    split_is(" 42", " |42");
    split_is("x=3.14159", "x|=|3|.|141|59");
    /* Arabic-Indic digits are numbers too */
    split_is("\xd9\xa3\xd9\xa4\xd9\xa5\xd9\xa6", "\xd9\xa3\xd9\xa4\xd9\xa5|\xd9\xa6");
}

Test(o200k, punctuation_runs)
{
    split_is("...!?", "...!?");
    split_is("hi!!!\n\nthere", "hi|!!!\n\n|there");
    split_is(" //comment", " //|comment");
    split_is("a+= b;\n/x", "a|+=| b|;\n/|x");
    split_is("\xf0\x9f\xa6\x99\xf0\x9f\xa6\x99 ok", "\xf0\x9f\xa6\x99\xf0\x9f\xa6\x99| ok");
    split_is("(hello)", "(hello|)");
}

Test(o200k, whitespace_and_newlines)
{
    split_is("a  \n\n  b", "a|  \n\n| | b");
    split_is("end   ", "end|   ");
    split_is("x\r\n", "x|\r\n");
    split_is("a   b", "a|  | b");
    split_is("\n", "\n");
    split_is(" ", " ");
    split_is("a \n", "a| \n");
}

/* ---- a written vocabulary -------------------------------------------------- */

static const char *const harmony_specials[] = {
    "<|start|>", "<|message|>", "<|channel|>", "<|end|>", "<|return|>", "<|call|>", "<|constrain|>",
};

static sl_tok *write_and_load(void)
{
    /* byte-level "Ġ" is U+0120 */
    static const char *const words[] = { "he", "ll", "hell", "hello", "o\xc4\xa0", "\xc4\xa0w" };
    static const char *const merges[] = {
        "o \xc4\xa0", "h e", "l l", "he ll", "hell o", "\xc4\xa0 w",
    };
    return tok_load_bpe("gpt-4o", words, 6, merges, 6, harmony_specials, 7);
}

Test(o200k, vocabulary_end_to_end)
{
    sl_tok *t = write_and_load();
    cr_assert_str_eq(sl_tok_pre_name(t), "gpt-4o");
    cr_assert_eq(sl_tok_n_vocab(t), 256 + 6 + 7);
    int32_t ids[64];
    /* "hello world": the split "hello| world" keeps the first merge ("o Ġ")
     * from crossing the word boundary; " w" merges inside its word */
    int64_t n = sl_tok_encode(t, "hello world", 11, false, false, ids, 64);
    int32_t hello = sl_tok_find(t, "hello", 5), gw = sl_tok_find(t, "\xc4\xa0w", 3);
    cr_assert_eq(n, 6);
    cr_assert_eq(ids[0], hello);
    cr_assert_eq(ids[1], gw);
    cr_assert_eq(ids[2], sl_tok_find(t, "o", 1));
    char out[64];
    cr_assert_eq(sl_tok_decode(t, ids, n, false, out, sizeof out), 11);
    cr_assert_str_eq(out, "hello world");
    /* Harmony's control tokens: parsed only when asked */
    const char *h = "<|start|>user<|message|>hello<|end|>";
    n = sl_tok_encode(t, h, strlen(h), false, true, ids, 64);
    cr_assert_eq(n, 8);
    cr_assert_eq(ids[0], sl_tok_find(t, "<|start|>", 9));
    cr_assert_eq(ids[6], hello);
    cr_assert_eq(ids[7], sl_tok_find(t, "<|end|>", 7));
    n = sl_tok_encode(t, h, strlen(h), false, false, ids, 64);
    for (int64_t i = 0; i < n; i++) cr_assert_lt(ids[i], 256 + 6, "control token from plain text");
    /* <|return|> and <|call|> end a reply; <|end|> closes a message inside one */
    cr_assert(sl_tok_is_eog(t, sl_tok_find(t, "<|return|>", 10)));
    cr_assert(sl_tok_is_eog(t, sl_tok_find(t, "<|call|>", 8)));
    cr_assert(!sl_tok_is_eog(t, sl_tok_find(t, "<|end|>", 7)));
    /* round trip of the split's tricky cases */
    const char *mix = "DON'T \xe4\xbd\xa0\xe5\xa5\xbd 1234567\r\n\t...!? \xf0\x9f\xa6\x99";
    n = sl_tok_encode(t, mix, strlen(mix), false, false, ids, 64);
    cr_assert_gt(n, 0);
    cr_assert_eq(sl_tok_decode(t, ids, n, false, out, sizeof out), (int64_t)strlen(mix));
    cr_assert_str_eq(out, mix);
    sl_tok_destroy(t);
}

Test(o200k, end_stays_eog_without_return_and_call)
{
    static const char *const sp[] = { "<|start|>", "<|end|>" };
    sl_tok *t = tok_load_bpe("gpt-4o", NULL, 0, NULL, 0, sp, 2);
    cr_assert(sl_tok_is_eog(t, sl_tok_find(t, "<|end|>", 7)));
    sl_tok_destroy(t);
}
