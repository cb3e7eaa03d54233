/* Shared by the tokenizer tests: open a GGUF, load its tokenizer, close it. */
#ifndef SL_TOK_TESTUTIL_H
#define SL_TOK_TESTUTIL_H

#include "sl_test.h"
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

#endif
