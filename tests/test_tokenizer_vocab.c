/* Tokenizer vectors: every ../shared/models/vocab/ggml-vocab-*.gguf must
 * reproduce its .inp/.out pairs exactly (made by llama.cpp's
 * test-tokenizer-0; add_special = false, parse_special = false). */
#include "sl_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/tokenizer.h"
#include "../gguf/gguf.h"

#define VOCAB_DIR SL_SHARED_DIR "/models/vocab/"
#define SEP "\n__ggml_vocab_test__\n"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    fclose(f);
    if (b) { b[n] = 0; *len = (size_t)n; }
    return b;
}

/* Checks every vector of one vocabulary; returns the number of mismatches. */
static int check_vocab(const char *name, int *n_checked)
{
    char path[512];
    snprintf(path, sizeof path, VOCAB_DIR "ggml-vocab-%s.gguf", name);
    sl_gguf *g = NULL;
    int rc = sl_gguf_open_path(&g, path);
    cr_assert_eq(rc, 0, "open %s: %s", path, sl_last_error());
    sl_tok *t = NULL;
    rc = sl_tok_load(&t, g);
    sl_gguf_close(g);
    cr_assert_eq(rc, 0, "load %s: %s", path, sl_last_error());

    size_t ilen = 0, olen = 0;
    char ipath[600], opath[600];
    snprintf(ipath, sizeof ipath, "%s.inp", path);
    snprintf(opath, sizeof opath, "%s.out", path);
    char *inp = slurp(ipath, &ilen), *out = slurp(opath, &olen);
    cr_assert(inp && out, "read %s / %s", ipath, opath);

    int bad = 0, n = 0;
    char *ip = inp, *op = out;
    size_t cap = 1 << 16;
    int32_t *ids = malloc(cap * sizeof *ids);
    while (*ip) {
        char *sep = strstr(ip, SEP);
        cr_assert_not_null(sep, "%s: unterminated string", ipath);
        char *eol = strchr(op, '\n');
        cr_assert_not_null(eol, "%s: fewer lines than strings", opath);
        *eol = 0;
        int32_t want[4096];
        int nw = 0;
        for (char *q = op; *q;) {
            char *e;
            long v = strtol(q, &e, 10);
            if (e == q) break;
            want[nw++] = (int32_t)v;
            q = e;
        }
        int64_t got = sl_tok_encode(t, ip, (size_t)(sep - ip), false, false, ids, (int64_t)cap);
        bool ok = got == nw;
        for (int i = 0; ok && i < nw; i++) ok = ids[i] == want[i];
        if (!ok) {
            bad++;
            if (bad <= 5) {
                char gs[2048] = "";
                size_t gl = 0;
                for (int64_t i = 0; i < got && i < 64 && gl < sizeof gs - 16; i++)
                    gl += (size_t)snprintf(gs + gl, sizeof gs - gl, " %d", ids[i]);
                cr_log_info("%s: string %d '%.*s'\n  want%s\n  got %s", name, n, (int)(sep - ip), ip, op, gs);
            }
        }
        n++;
        ip = sep + strlen(SEP);
        op = eol + 1;
    }
    cr_log_info("%s: %d/%d vectors match", name, n - bad, n);
    *n_checked = n;
    free(ids);
    free(inp);
    free(out);
    sl_tok_free(t);
    return bad;
}

#define VOCAB_TEST(ident, name)                                                  \
    Test(tokenizer_vocab, ident, .timeout = 60)                                  \
    {                                                                            \
        int n = 0;                                                               \
        int bad = check_vocab(name, &n);                                         \
        cr_expect_eq(n, 46, "%s: %d strings", name, n);                          \
        cr_assert_eq(bad, 0, "%s: %d of %d vectors differ", name, bad, n);       \
    }

VOCAB_TEST(llama_spm, "llama-spm")
VOCAB_TEST(phi_3, "phi-3")
VOCAB_TEST(gpt_2, "gpt-2")
VOCAB_TEST(llama_bpe, "llama-bpe")
VOCAB_TEST(qwen2, "qwen2")
VOCAB_TEST(deepseek_llm, "deepseek-llm")
VOCAB_TEST(deepseek_coder, "deepseek-coder")
