/* Byte-level BPE (tokenizer.ggml.model = "gpt2"): pre-tokenize into words,
 * map every byte of a word to its byte-level character, then apply merges in
 * rank order (lowest rank first, leftmost on ties) with a priority queue. */
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct bsym { uint32_t start, n; int32_t prev, next; } bsym;
typedef struct work {
    char *w; size_t wcap;            /* mapped word */
    bsym *s; size_t scap;
    sl_tok_heap h;
} work;

static int add_bigram(const sl_tok *t, const work *k, int32_t l, int32_t r, sl_tok_heap *h)
{
    if (l < 0 || r < 0) return 0;
    const bsym *a = &k->s[l], *b = &k->s[r];
    int32_t rank = sl_tok_merge_rank(t, k->w + a->start, a->n, k->w + b->start, b->n);
    if (rank < 0) return 0;
    sl_tok_cand g = { -(double)rank, l, r, a->n, b->n };   /* lowest rank first */
    return sl_tok_heap_push(h, g);
}

static int bpe_word(const sl_tok *t, work *k, size_t wlen, sl_ids *out)
{
    int rc = 0;
    if (t->ignore_merges) {
        int32_t id = sl_tok_lookup(t, k->w, wlen);
        if (id >= 0) return sl_ids_push(out, id);
    }
    if ((rc = sl_tok_grow((void **)&k->s, &k->scap, wlen, sizeof *k->s)) < 0) return rc;
    int32_t n = 0;
    for (size_t off = 0; off < wlen;) {
        size_t cl = sl_utf8_len((unsigned char)k->w[off]);
        if (cl > wlen - off) cl = wlen - off;
        k->s[n].start = (uint32_t)off;
        k->s[n].n = (uint32_t)cl;
        k->s[n].prev = n - 1;
        off += cl;
        k->s[n].next = off == wlen ? -1 : n + 1;
        n++;
    }
    k->h.n = 0;
    for (int32_t i = 1; i < n && rc == 0; i++) rc = add_bigram(t, k, i - 1, i, &k->h);
    while (k->h.n && rc == 0) {
        sl_tok_cand g = sl_tok_heap_pop(&k->h);
        bsym *l = &k->s[g.left], *r = &k->s[g.right];
        if (l->n != g.lsz || r->n != g.rsz) continue;   /* stale */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) k->s[r->next].prev = g.left;
        rc = add_bigram(t, k, l->prev, g.left, &k->h);
        if (rc == 0) rc = add_bigram(t, k, g.left, l->next, &k->h);
    }
    for (int32_t i = 0; i != -1 && rc == 0; i = k->s[i].next) {
        const char *p = k->w + k->s[i].start;
        int32_t id = sl_tok_lookup(t, p, k->s[i].n);
        if (id >= 0) {
            rc = sl_ids_push(out, id);
            continue;
        }
        /* as llama.cpp: try each byte of the mapped text as a token */
        for (uint32_t j = 0; j < k->s[i].n && rc == 0; j++) {
            int32_t bid = sl_tok_lookup(t, p + j, 1);
            if (bid >= 0) rc = sl_ids_push(out, bid);
        }
    }
    return rc;
}

int sl_tok_bpe_encode(const sl_tok *t, const char *text, size_t len, sl_ids *out)
{
    if (len == 0) return 0;
    uint32_t *cps = malloc(len * sizeof *cps);
    size_t *lens = malloc(len * sizeof *lens);
    size_t *scratch = malloc(len * sizeof *scratch);
    work k = {0};
    int rc = 0;
    if (!cps || !lens || !scratch) {
        rc = sl_err_set(SL_ENOMEM, "tokenizer: out of memory for %zu bytes of text", len);
        goto done;
    }
    size_t n = sl_utf8_decode_lenient(text, len, cps);
    size_t nw = sl_pretok_split(t->pre, cps, n, lens, scratch);
    size_t pos = 0;
    for (size_t i = 0; i < nw && rc == 0; i++) {
        size_t wl = 0;
        if ((rc = sl_tok_grow((void **)&k.w, &k.wcap, lens[i] * 8, 1)) < 0) break;
        for (size_t j = pos; j < pos + lens[i]; j++) {
            char u[4];
            size_t ul = sl_utf8_encode(cps[j], u);
            for (size_t q = 0; q < ul; q++) {
                unsigned char b = (unsigned char)u[q];
                memcpy(k.w + wl, t->bmap[b], t->bmap_len[b]);
                wl += t->bmap_len[b];
            }
        }
        pos += lens[i];
        rc = bpe_word(t, &k, wl, out);
    }
done:
    free(cps);
    free(lens);
    free(scratch);
    free(k.w);
    free(k.s);
    free(k.h.v);
    return rc;
}
