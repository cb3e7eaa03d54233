/* Which special-token texts occur in a text: a byte trie over the texts of
 * t->special, built once with the vocabulary and walked from every position
 * of the text. The encoder then splits the text only at the specials that
 * occur in it; splitting at each of them in turn (a memmem per special per
 * fragment) cost every encode O(text x specials), and vocabularies carry
 * hundreds of reserved control tokens. */
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

struct sl_tok_trie_node {
    int32_t child;       /* first child, -1 */
    int32_t next;        /* next sibling, -1 */
    int32_t end;         /* first index into t->special whose text ends here, -1 */
    uint8_t byte;
};

static int32_t node_new(sl_tok *t, uint8_t byte)
{
    struct sl_tok_trie_node *n = &t->trie[t->n_trie];
    n->child = n->next = n->end = -1;
    n->byte = byte;
    return t->n_trie++;
}

int sl_tok_special_index(sl_tok *t)
{
    size_t bytes = 0;
    for (int32_t i = 0; i < t->n_special; i++) bytes += t->text_len[t->special[i]];
    if (bytes > INT32_MAX / 2) return sl_err_set(SL_EFORMAT, "tokenizer: special-token texts of %zu bytes", bytes);
    t->trie = malloc(sizeof *t->trie * (bytes ? bytes : 1));
    t->trie_end_next = malloc(sizeof(int32_t) * (size_t)(t->n_special ? t->n_special : 1));
    if (!t->trie || !t->trie_end_next) return sl_err_set(SL_ENOMEM, "tokenizer: out of memory");
    t->mem_bytes += sizeof *t->trie * bytes + sizeof(int32_t) * (size_t)t->n_special;
    for (int k = 0; k < 256; k++) t->trie_root[k] = -1;
    t->n_trie = 0;
    for (int32_t i = 0; i < t->n_special; i++) {
        const uint8_t *s = (const uint8_t *)t->pool + t->text_off[t->special[i]];
        uint32_t len = t->text_len[t->special[i]];   /* > 0: setup_special keeps no empty text */
        int32_t n = t->trie_root[s[0]];
        if (n < 0) n = t->trie_root[s[0]] = node_new(t, s[0]);
        for (uint32_t j = 1; j < len; j++) {
            int32_t c = t->trie[n].child;
            while (c >= 0 && t->trie[c].byte != s[j]) c = t->trie[c].next;
            if (c < 0) {
                c = node_new(t, s[j]);
                t->trie[c].next = t->trie[n].child;
                t->trie[n].child = c;
            }
            n = c;
        }
        t->trie_end_next[i] = t->trie[n].end;   /* duplicate texts: a list */
        t->trie[n].end = i;
    }
    return 0;
}

void sl_tok_special_scan(const sl_tok *t, const char *text, size_t len, uint8_t *seen)
{
    const uint8_t *s = (const uint8_t *)text;
    for (size_t i = 0; i < len; i++) {
        size_t j = i + 1;
        for (int32_t n = t->trie_root[s[i]]; n >= 0;) {
            for (int32_t e = t->trie[n].end; e >= 0; e = t->trie_end_next[e]) seen[e] = 1;
            if (j == len) break;
            int32_t c = t->trie[n].child;
            while (c >= 0 && t->trie[c].byte != s[j]) c = t->trie[c].next;
            n = c;
            j++;
        }
    }
}
