/* Priority queue of merge candidates shared by the SPM and BPE tokenizers. */
#include "tok_internal.h"

#include <stdlib.h>

static bool cand_before(const sl_tok_cand *a, const sl_tok_cand *b)
{
    if (a->prio != b->prio) return a->prio > b->prio;
    return a->left < b->left;
}

int sl_tok_heap_push(sl_tok_heap *h, sl_tok_cand c)
{
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 64;
        sl_tok_cand *nv = realloc(h->v, nc * sizeof *nv);
        if (!nv) return sl_err_set(SL_ENOMEM, "tokenizer: out of memory");
        h->v = nv;
        h->cap = nc;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_before(&c, &h->v[p])) break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = c;
    return 0;
}

sl_tok_cand sl_tok_heap_pop(sl_tok_heap *h)
{
    sl_tok_cand top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && cand_before(&h->v[c + 1], &h->v[c])) c++;
        if (!cand_before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return top;
}
