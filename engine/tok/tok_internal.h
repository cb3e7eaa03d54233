/* Tokenizer internals shared by engine/tok/tok_*.c (not a public header). */
#ifndef SL_TOK_INTERNAL_H
#define SL_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"
#include "../../gguf/base/sl_internal.h"

/* ---- Unicode code point flags (engine/tok/unicode_tables.c, generated) ---- */
enum {
    SL_UCF_UNDEF = 0x01, SL_UCF_NUMBER = 0x02, SL_UCF_LETTER = 0x04,
    SL_UCF_SEPARATOR = 0x08, SL_UCF_MARK = 0x10, SL_UCF_PUNCT = 0x20,
    SL_UCF_SYMBOL = 0x40, SL_UCF_CONTROL = 0x80, SL_UCF_WHITESPACE = 0x100,
};
extern const uint32_t sl_ucd_range_start[];
extern const uint16_t sl_ucd_range_flags[];
extern const uint32_t sl_ucd_n_ranges;
/* Flags of a code point; values past U+10FFFF are unassigned (SL_UCF_UNDEF). */
uint16_t sl_ucd_flags(uint32_t cp);

/* ---- UTF-8, with llama.cpp's leniency (no overlong/surrogate checks) ---- */
/* Length of the sequence a lead byte announces (continuation bytes: 1). */
static inline size_t sl_utf8_len(unsigned char b)
{
    static const unsigned char lk[16] = {1,1,1,1,1,1,1,1,1,1,1,1,2,2,3,4};
    return lk[b >> 4];
}
/* Decodes text into code points; an undecodable byte becomes U+FFFD and
 * consumes one byte. cps must hold len entries. Returns the count. */
size_t sl_utf8_decode_lenient(const char *text, size_t len, uint32_t *cps);
/* Encodes cp (values past U+10FFFF as U+FFFD) into out[4]; returns bytes. */
size_t sl_utf8_encode(uint32_t cp, char *out);

/* ---- pre-tokenizers (byte-level BPE) ---- */
enum sl_pre {
    SL_PRE_NONE = 0, SL_PRE_GPT2, SL_PRE_LLAMA3, SL_PRE_QWEN2,
    SL_PRE_DEEPSEEK_LLM, SL_PRE_DEEPSEEK_CODER, SL_PRE_O200K,
};
/* Splits cps[0..n) into words; writes word lengths (in code points) to lens
 * (capacity n) and returns their count. scratch: n size_t. */
size_t sl_pretok_split(int pre, const uint32_t *cps, size_t n, size_t *lens, size_t *scratch);

/* ---- vocabulary ---- */
#define SL_TOKA_LSTRIP 1
#define SL_TOKA_RSTRIP 2

typedef struct sl_merge_ent {
    uint32_t off;        /* into merge_pool: left bytes then right bytes */
    uint32_t llen, rlen;
    int32_t rank;        /* -1: empty slot */
} sl_merge_ent;

struct sl_tok {
    int kind;                    /* enum sl_tok_kind */
    int pre;                     /* enum sl_pre */
    char pre_name[48];
    int32_t n_vocab;
    char *pool;                  /* token texts, each NUL-terminated */
    uint64_t *text_off;          /* n_vocab */
    uint32_t *text_len;          /* n_vocab */
    float *score;                /* n_vocab */
    uint8_t *type;               /* enum sl_tok_type */
    uint8_t *attr;               /* SL_TOKA_* */
    uint32_t *ht;                /* text -> id+1 (0 = empty), open addressing */
    uint64_t ht_mask;
    sl_merge_ent *mt;            /* BPE merges hash */
    uint64_t mt_mask;
    char *merge_pool;
    int64_t n_merges;
    int32_t *special;            /* CONTROL/USER_DEFINED/UNKNOWN ids, longest text first */
    int32_t n_special;
    struct sl_tok_trie_node *trie;   /* the texts of special (tok_special.c) */
    int32_t *trie_end_next;      /* n_special */
    int32_t trie_root[256];
    int32_t n_trie;
    int32_t *eog;
    int32_t n_eog;
    int32_t byte_tok[256];
    char bmap[256][2];           /* BPE: byte -> UTF-8 of its byte-level character */
    uint8_t bmap_len[256];
    int16_t brev[0x144];         /* BPE: byte-level code point -> byte, -1 if none */
    size_t max_text;             /* longest token text */       /* SPM: <0xXX> (or raw byte) token; -1 if none */
    int32_t bos, eos, unk, pad, eot, eom;
    bool add_bos, add_eos, add_space_prefix, ignore_merges, clean_spaces;
    uint64_t mem_bytes;          /* what the tables above allocated */
};

/* Id of text, -1 if absent (last duplicate wins, as llama.cpp's map). */
int32_t sl_tok_lookup(const sl_tok *t, const char *s, size_t n);
/* Merge rank of (left, right), -1 if none. */
int32_t sl_tok_merge_rank(const sl_tok *t, const char *l, size_t ll, const char *r, size_t rl);

/* ---- special-token texts (tok_special.c) ---- */
/* Builds the trie of the special tokens' texts (after t->special is final). */
int sl_tok_special_index(sl_tok *t);
/* seen[i] = 1 for every i (an index into t->special) whose text occurs
 * anywhere in text[0..len); other entries are left as they are. */
void sl_tok_special_scan(const sl_tok *t, const char *text, size_t len, uint8_t *seen);

/* ---- encoder scratch (tok_heap.c) ---- */
/* Grows *v (elements of elem bytes, capacity *cap) to hold need elements,
 * doubling from 64; SL_ENOMEM with a message on failure. */
int sl_tok_grow(void **v, size_t *cap, size_t need, size_t elem);

/* Growable id list used while encoding. */
typedef struct sl_ids {
    int32_t *v;
    size_t n, cap;
} sl_ids;
int sl_ids_push(sl_ids *a, int32_t id);

/* A binary heap that pops the highest prio first, the leftmost pair on ties:
 * SPM pushes the merged token's score, BPE minus the merge rank. lsz/rsz are
 * the symbol sizes at push time, to recognise stale entries. */
typedef struct sl_tok_cand { double prio; int32_t left, right; uint32_t lsz, rsz; } sl_tok_cand;
typedef struct sl_tok_heap { sl_tok_cand *v; size_t n, cap; } sl_tok_heap;
int sl_tok_heap_push(sl_tok_heap *h, sl_tok_cand c);
sl_tok_cand sl_tok_heap_pop(sl_tok_heap *h);   /* h->n > 0 */

/* ---- raw-text fragment tokenizers (tok_spm.c, tok_bpe.c; no special tokens) ---- */
int sl_tok_spm_encode(const sl_tok *t, const char *text, size_t len, sl_ids *out);
int sl_tok_bpe_encode(const sl_tok *t, const char *text, size_t len, sl_ids *out);

#endif
