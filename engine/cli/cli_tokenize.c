/* `sluice tokenize`: text -> token ids with the model's own tokenizer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "../tok/tokenizer.h"
#include "../../gguf/gguf.h"
#include "../../gguf/base/sl_file.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: sluice tokenize -m MODEL (-p TEXT | -f FILE) [--special] [--pieces] [--no-bos]\n"
               "  prints the token ids on one line (space-separated)\n"
               "  --special   parse control-token texts (<s>, <|im_start|>, ...) in TEXT\n"
               "  --pieces    also print each token's piece, one per line: id<TAB>'piece'\n"
               "  --no-bos    do not add BOS/EOS even if the vocabulary asks for them\n");
}

static int cmd_tokenize(int argc, char **argv)
{
    const char *model = NULL, *prompt = NULL, *file = NULL;
    bool special = false, pieces = false, no_bos = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && i + 1 < argc) model = argv[++i];
        else if ((!strcmp(a, "-p") || !strcmp(a, "--prompt")) && i + 1 < argc) prompt = argv[++i];
        else if ((!strcmp(a, "-f") || !strcmp(a, "--file")) && i + 1 < argc) file = argv[++i];
        else if (!strcmp(a, "--special")) special = true;
        else if (!strcmp(a, "--pieces")) pieces = true;
        else if (!strcmp(a, "--no-bos")) no_bos = true;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else { fprintf(stderr, "sluice tokenize: unknown or incomplete option '%s'\n", a); usage(stderr); return 2; }
    }
    if (!model || (!prompt && !file) || (prompt && file)) { usage(stderr); return 2; }
    size_t len = 0;
    char *owned = NULL;
    if (file) {
        if (sl_file_read_data(file, "text file", (size_t)1 << 30, &owned, &len)) {
            fprintf(stderr, "sluice tokenize: %s\n", sl_last_error());
            return 1;
        }
        prompt = owned;
    } else {
        len = strlen(prompt);
    }
    sl_gguf *g = NULL;
    int rc = sl_gguf_open_path(&g, model);
    if (rc < 0) {
        fprintf(stderr, "sluice tokenize: %s: %s\n", model, sl_last_error());
        free(owned);
        return 1;
    }
    sl_tok *t = NULL;
    rc = sl_tok_create(&t, g);
    sl_gguf_close(g);
    if (rc < 0) {
        fprintf(stderr, "sluice tokenize: %s: %s\n", model, sl_last_error());
        free(owned);
        return 1;
    }
    int64_t n = sl_tok_encode(t, prompt, len, !no_bos, special, NULL, 0);
    int32_t *ids = n > 0 ? malloc((size_t)n * sizeof *ids) : NULL;
    if (n < 0 || (n > 0 && !ids)) {
        fprintf(stderr, "sluice tokenize: %s\n", n < 0 ? sl_last_error() : "out of memory");
        sl_tok_destroy(t);
        free(owned);
        return 1;
    }
    if (n > 0) sl_tok_encode(t, prompt, len, !no_bos, special, ids, n);
    for (int64_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
    printf("\n");
    if (pieces) {
        for (int64_t i = 0; i < n; i++) {
            char buf[1024];
            size_t pl = 0;
            if (sl_tok_piece(t, ids[i], true, buf, sizeof buf, &pl) < 0) pl = 0;
            printf("%d\t'%.*s'\n", ids[i], (int)pl, buf);
        }
    }
    free(ids);
    sl_tok_destroy(t);
    free(owned);
    return 0;
}

SL_CLI_COMMAND(sl_cmd_tokenize, "tokenize", "print the token ids of a text (-m MODEL -p TEXT)", cmd_tokenize)
