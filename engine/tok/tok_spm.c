/* SentencePiece-style tokenizer (tokenizer.ggml.model = "llama"): start from
 * UTF-8 characters and repeatedly merge the adjacent pair whose concatenation
 * is the highest-scoring vocabulary entry (leftmost on ties); what does not
 * form a token falls back to byte tokens <0xXX>. */
#include "tok_internal.h"

#include <stdlib.h>

typedef struct spm_sym { uint32_t start, n; int32_t prev, next; } spm_sym;

static int try_bigram(const sl_tok *t, const char *text, const spm_sym *s, int32_t l, int32_t r, sl_tok_heap *h)
{
    if (l < 0 || r < 0) return 0;
    uint32_t size = s[l].n + s[r].n;
    int32_t id = sl_tok_lookup(t, text + s[l].start, size);
    if (id < 0) return 0;
    sl_tok_cand b = { t->score[id], l, r, size, 0 };   /* highest score first */
    return sl_tok_heap_push(h, b);
}

int sl_tok_spm_encode(const sl_tok *t, const char *text, size_t len, sl_ids *out)
{
    if (len == 0) return 0;
    if (len > UINT32_MAX) return sl_err_set(SL_ERANGE, "tokenizer: text of %zu bytes is too long", len);
    spm_sym *s = malloc(len * sizeof *s);
    sl_tok_heap h = {0};
    int rc = 0;
    if (!s) return sl_err_set(SL_ENOMEM, "tokenizer: out of memory for %zu symbols", len);
    int32_t n = 0;
    for (size_t off = 0; off < len;) {
        size_t cl = sl_utf8_len((unsigned char)text[off]);
        if (cl > len - off) cl = len - off;
        s[n].start = (uint32_t)off;
        s[n].n = (uint32_t)cl;
        s[n].prev = n - 1;
        off += cl;
        s[n].next = off == len ? -1 : n + 1;
        n++;
    }
    for (int32_t i = 1; i < n && rc == 0; i++) rc = try_bigram(t, text, s, i - 1, i, &h);
    while (h.n && rc == 0) {
        sl_tok_cand b = sl_tok_heap_pop(&h);
        spm_sym *l = &s[b.left], *r = &s[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.lsz + b.rsz) continue;   /* stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) s[r->next].prev = b.left;
        rc = try_bigram(t, text, s, l->prev, b.left, &h);
        if (rc == 0) rc = try_bigram(t, text, s, b.left, l->next, &h);
    }
    for (int32_t i = 0; i != -1 && rc == 0; i = s[i].next) {
        int32_t id = sl_tok_lookup(t, text + s[i].start, s[i].n);
        if (id >= 0) {
            rc = sl_ids_push(out, id);
            continue;
        }
        for (uint32_t j = 0; j < s[i].n && rc == 0; j++) {
            int32_t bid = t->byte_tok[(unsigned char)text[s[i].start + j]];
            if (bid < 0) bid = t->unk;
            if (bid >= 0) rc = sl_ids_push(out, bid);
        }
    }
    free(h.v);
    free(s);
    return rc;
}
