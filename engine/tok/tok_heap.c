/* Encoder scratch: array growth, the id list, and the priority queue of merge
 * candidates shared by the SPM and BPE tokenizers. */
#include "tok_internal.h"

#include <stdlib.h>

static bool cand_before(const sl_tok_cand *a, const sl_tok_cand *b)
{
    if (a->prio != b->prio) return a->prio > b->prio;
    return a->left < b->left;
}

int sl_tok_grow(void **v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) nc *= 2;
    void *nv = realloc(*v, nc * elem);
    if (!nv) return sl_err_set(SL_ENOMEM, "tokenizer: out of memory for %zu elements", nc);
    *v = nv;
    *cap = nc;
    return 0;
}

int sl_ids_push(sl_ids *a, int32_t id)
{
    int rc = sl_tok_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v);
    if (rc) return rc;
    a->v[a->n++] = id;
    return 0;
}

int sl_tok_heap_push(sl_tok_heap *h, sl_tok_cand c)
{
    int rc = sl_tok_grow((void **)&h->v, &h->cap, h->n + 1, sizeof *h->v);
    if (rc) return rc;
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
