/* libFuzzer target for the tokenizers: every vocabulary of
 * SL_SHARED_DIR/models/vocab (SPM and the BPE pre-tokenizers) is loaded once;
 * byte 0 picks one and the add_special / parse_special flags, the rest is the
 * text. The count is within three a byte (and a retry with that buffer
 * gives the same ids), every id is in range, decoding the ids succeeds with one length at
 * any capacity, and the streaming detokenizer stays within its bound. */
#include "../engine/tok/tokenizer.h"
#include "../gguf/gguf.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VOCABS 16
static sl_tok *toks[MAX_VOCABS];
static int n_toks;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    const char *dir = SL_SHARED_DIR "/models/vocab";
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "fuzz_tok: no %s\n", dir); abort(); }
    char names[MAX_VOCABS][256];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < MAX_VOCABS;) {
        size_t l = strlen(e->d_name);
        if (l > 5 && l < 200 && !strcmp(e->d_name + l - 5, ".gguf")) snprintf(names[n++], 256, "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);   /* stable picks */
    for (int i = 0; i < n; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        sl_gguf *g;
        if (sl_gguf_open_path(&g, path)) continue;
        if (sl_tok_create(&toks[n_toks], g) == 0) n_toks++;
        sl_gguf_close(g);
    }
    if (!n_toks) { fprintf(stderr, "fuzz_tok: no vocabulary loaded from %s\n", dir); abort(); }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size) return 0;
    const sl_tok *t = toks[(data[0] >> 2) % n_toks];
    bool add_special = data[0] & 1, parse_special = data[0] & 2;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    /* callers size for a token a byte and retry: SPM byte fallback turns an
     * invalid byte into U+FFFD, three byte tokens (found by this target) */
    int64_t cap = (int64_t)len + 8;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    int64_t n = sl_tok_encode(t, text, len, add_special, parse_special, ids, cap);
    if (n < 0 || n > 3 * (int64_t)len + 8) __builtin_trap();   /* three a byte and the specials at most */
    if (n > cap) {
        int32_t *all = malloc((size_t)n * sizeof *all);
        if (sl_tok_encode(t, text, len, add_special, parse_special, all, n) != n) __builtin_trap();
        if (memcmp(all, ids, (size_t)cap * sizeof *ids)) __builtin_trap();   /* the first cap agree */
        free(ids);
        ids = all;
    }
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= sl_tok_n_vocab(t)) __builtin_trap();
    bool special = data[0] & 2;
    int64_t dl = sl_tok_decode(t, ids, n, special, NULL, 0);
    if (dl < 0) __builtin_trap();
    char *out = malloc((size_t)dl + 1);
    if (sl_tok_decode(t, ids, n, special, out, (size_t)dl + 1) != dl) __builtin_trap();
    size_t small = len % 7;
    char *part = malloc(small ? small : 1);
    if (sl_tok_decode(t, ids, n, special, part, small) != dl) __builtin_trap();
    free(part);
    sl_detok dt;
    sl_detok_init(&dt, special);
    size_t maxo = sl_tok_max_out(t);
    char *piece = malloc(maxo);
    for (int64_t i = 0; i < n; i++) {
        size_t pl;
        if (sl_detok_push(&dt, t, ids[i], piece, maxo, &pl) || pl > maxo) __builtin_trap();
    }
    free(piece);
    free(out);
    free(ids);
    return 0;
}
