/* SentencePiece-style tokenizer (tokenizer.ggml.model = "llama"): start from
 * UTF-8 characters and repeatedly merge the adjacent pair whose concatenation
 * is the highest-scoring vocabulary entry (leftmost on ties); what does not
 * form a token falls back to byte tokens <0xXX>. */
#include "tok_internal.h"

#include <stdlib.h>

typedef struct spm_sym { uint32_t start, n; int32_t prev, next; } spm_sym;
typedef struct spm_big { float score; int32_t left, right; uint32_t size; } spm_big;

/* max-heap on score, then min left */
static bool big_before(const spm_big *a, const spm_big *b)
{
    if (a->score != b->score) return a->score > b->score;
    return a->left < b->left;
}

typedef struct heap { spm_big *v; size_t n, cap; } heap;

static int heap_push(heap *h, spm_big b)
{
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 64;
        spm_big *nv = realloc(h->v, nc * sizeof *nv);
        if (!nv) return sl_err_set(SL_ENOMEM, "tokenizer: out of memory");
        h->v = nv;
        h->cap = nc;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!big_before(&b, &h->v[p])) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = b;
    return 0;
}

static spm_big heap_pop(heap *h)
{
    spm_big top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && big_before(&h->v[c + 1], &h->v[c])) c++;
        if (!big_before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return top;
}

static int try_bigram(const sl_tok *t, const char *text, const spm_sym *s, int32_t l, int32_t r, heap *h)
{
    if (l < 0 || r < 0) return 0;
    uint32_t size = s[l].n + s[r].n;
    int32_t id = sl_tok_lookup(t, text + s[l].start, size);
    if (id < 0) return 0;
    spm_big b = { t->score[id], l, r, size };
    return heap_push(h, b);
}

int sl_tok_spm_encode(const sl_tok *t, const char *text, size_t len, sl_ids *out)
{
    if (len == 0) return 0;
    if (len > UINT32_MAX) return sl_err_set(SL_ERANGE, "tokenizer: text of %zu bytes is too long", len);
    spm_sym *s = malloc(len * sizeof *s);
    heap h = {0};
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
        spm_big b = heap_pop(&h);
        spm_sym *l = &s[b.left], *r = &s[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) continue;   /* stale */
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
