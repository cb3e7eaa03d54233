/* Tokenizer vocabulary: loading from GGUF metadata, text -> id and merge
 * hash tables, special-token bookkeeping, accessors. */
#include "tok_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../gguf/gguf.h"

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the
 * rest to U+0100 + k in byte order. Returns the code point for byte b. */
static uint32_t byte_to_cp(unsigned b)
{
    if ((b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae)) return b;
    uint32_t k = 0;
    for (unsigned x = 0; x < b; x++)
        if (!((x >= 0x21 && x <= 0x7e) || (x >= 0xa1 && x <= 0xac) || (x >= 0xae))) k++;
    return 0x100 + k;
}

static uint64_t tok_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a, then a final mix */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h;
}

int32_t sl_tok_lookup(const sl_tok *t, const char *s, size_t n)
{
    uint64_t i = tok_hash(s, n) & t->ht_mask;
    for (;;) {
        uint32_t v = t->ht[i];
        if (v == 0) return -1;
        int32_t id = (int32_t)(v - 1);
        if (t->text_len[id] == n && memcmp(t->pool + t->text_off[id], s, n) == 0) return id;
        i = (i + 1) & t->ht_mask;
    }
}

static uint64_t merge_hash(const char *l, size_t ll, const char *r, size_t rl)
{
    return tok_hash(l, ll) * 31u ^ tok_hash(r, rl);
}

int32_t sl_tok_merge_rank(const sl_tok *t, const char *l, size_t ll, const char *r, size_t rl)
{
    if (!t->mt) return -1;
    uint64_t i = merge_hash(l, ll, r, rl) & t->mt_mask;
    for (;;) {
        const sl_merge_ent *e = &t->mt[i];
        if (e->rank < 0) return -1;
        if (e->llen == ll && e->rlen == rl && memcmp(t->merge_pool + e->off, l, ll) == 0 &&
            memcmp(t->merge_pool + e->off + ll, r, rl) == 0)
            return e->rank;
        i = (i + 1) & t->mt_mask;
    }
}

static uint64_t pow2_at_least(uint64_t n)
{
    uint64_t p = 16;
    while (p < n) p <<= 1;
    return p;
}

/* Optional integer key: keeps *v when absent; an id out of range -> -1. */
static int get_id(const sl_gguf *g, const char *key, int32_t n_vocab, int32_t *v)
{
    int64_t x;
    int rc = sl_gguf_get_i64(g, key, &x);
    if (rc == SL_ENOENT) return 0;
    if (rc < 0) return sl_err_set(SL_EFORMAT, "tokenizer: key %s: not an integer", key);
    *v = (x >= 0 && x < n_vocab) ? (int32_t)x : -1;
    return 0;
}

static int get_flag(const sl_gguf *g, const char *key, bool *v)
{
    bool b;
    int rc = sl_gguf_get_bool(g, key, &b);
    if (rc == SL_ENOENT) return 0;
    if (rc < 0) return sl_err_set(SL_EFORMAT, "tokenizer: key %s: not a bool", key);
    *v = b;
    return 0;
}

static const struct { const char *name; int pre; } pre_names[] = {
    {"llama-bpe", SL_PRE_LLAMA3}, {"llama3", SL_PRE_LLAMA3}, {"llama-v3", SL_PRE_LLAMA3},
    {"falcon3", SL_PRE_LLAMA3},
    {"qwen2", SL_PRE_QWEN2}, {"deepseek-r1-qwen", SL_PRE_QWEN2},
    {"gpt-2", SL_PRE_GPT2}, {"phi-2", SL_PRE_GPT2}, {"roberta-bpe", SL_PRE_GPT2},
    {"deepseek-llm", SL_PRE_DEEPSEEK_LLM}, {"deepseek-coder", SL_PRE_DEEPSEEK_CODER},
    {"gpt-4o", SL_PRE_O200K}, {"llama4", SL_PRE_O200K},
};

static int load_strings(sl_tok *t, const sl_gguf *g, int64_t kv)
{
    uint32_t et;
    uint64_t n;
    const void *data;
    int rc = sl_gguf_kv_arr(g, kv, &et, &n, &data);
    if (rc < 0 || et != SL_GGUF_STRING)
        return sl_err_set(SL_EFORMAT, "tokenizer: tokenizer.ggml.tokens is not a string array");
    if (n == 0 || n > (uint64_t)INT32_MAX - 1)
        return sl_err_set(SL_EFORMAT, "tokenizer: tokenizer.ggml.tokens has %llu entries",
                          (unsigned long long)n);
    t->n_vocab = (int32_t)n;
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        uint64_t len;
        if ((rc = sl_gguf_arr_str(g, kv, i, &s, &len)) < 0)
            return sl_err_set(SL_EFORMAT, "tokenizer: token %llu unreadable", (unsigned long long)i);
        if (len > UINT32_MAX) return sl_err_set(SL_EFORMAT, "tokenizer: token %llu too long", (unsigned long long)i);
        total += len + 1;
    }
    t->pool = malloc(total ? total : 1);
    t->text_off = malloc(n * sizeof *t->text_off);
    t->text_len = malloc(n * sizeof *t->text_len);
    t->score = calloc(n, sizeof *t->score);
    t->type = malloc(n);
    t->attr = calloc(n, 1);
    if (!t->pool || !t->text_off || !t->text_len || !t->score || !t->type || !t->attr)
        return sl_err_set(SL_ENOMEM, "tokenizer: out of memory for %llu tokens", (unsigned long long)n);
    t->mem_bytes += total + n * (sizeof *t->text_off + sizeof *t->text_len + sizeof *t->score + 2);
    memset(t->type, SL_TOKT_NORMAL, n);
    uint64_t off = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        uint64_t len;
        sl_gguf_arr_str(g, kv, i, &s, &len);
        memcpy(t->pool + off, s, len);
        t->pool[off + len] = 0;
        t->text_off[i] = off;
        t->text_len[i] = (uint32_t)len;
        off += len + 1;
    }
    /* text -> id; a later duplicate replaces an earlier one */
    uint64_t cap = pow2_at_least(n * 2);
    t->ht = calloc(cap, sizeof *t->ht);
    if (!t->ht) return sl_err_set(SL_ENOMEM, "tokenizer: out of memory for the token hash");
    t->mem_bytes += cap * sizeof *t->ht;
    t->ht_mask = cap - 1;
    for (uint64_t i = 0; i < n; i++) {
        const char *s = t->pool + t->text_off[i];
        uint32_t len = t->text_len[i];
        uint64_t h = tok_hash(s, len) & t->ht_mask;
        for (;;) {
            uint32_t v = t->ht[h];
            if (v == 0) { t->ht[h] = (uint32_t)i + 1; break; }
            if (t->text_len[v - 1] == len && memcmp(t->pool + t->text_off[v - 1], s, len) == 0) {
                t->ht[h] = (uint32_t)i + 1;
                break;
            }
            h = (h + 1) & t->ht_mask;
        }
    }
    return 0;
}

static int load_numeric(sl_tok *t, const sl_gguf *g)
{
    uint32_t et;
    uint64_t n;
    const void *data;
    int rc = sl_gguf_get_arr(g, "tokenizer.ggml.scores", &et, &n, &data);
    if (rc == 0) {
        if (et != SL_GGUF_F32 || n != (uint64_t)t->n_vocab)
            return sl_err_set(SL_EFORMAT, "tokenizer: tokenizer.ggml.scores: %llu entries of type %s, "
                              "expected %d f32", (unsigned long long)n, sl_gguf_vtype_name(et), t->n_vocab);
        memcpy(t->score, data, n * sizeof(float));
    } else if (rc != SL_ENOENT) {
        return sl_err_set(SL_EFORMAT, "tokenizer: tokenizer.ggml.scores is not an array");
    }
    rc = sl_gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &n, &data);
    if (rc == 0) {
        if ((et != SL_GGUF_I32 && et != SL_GGUF_U32) || n != (uint64_t)t->n_vocab)
            return sl_err_set(SL_EFORMAT, "tokenizer: tokenizer.ggml.token_type: %llu entries of type %s, "
                              "expected %d i32", (unsigned long long)n, sl_gguf_vtype_name(et), t->n_vocab);
        for (uint64_t i = 0; i < n; i++) {
            int32_t v;
            memcpy(&v, (const char *)data + i * 4, 4);
            t->type[i] = (v >= 0 && v <= SL_TOKT_BYTE) ? (uint8_t)v : SL_TOKT_UNDEFINED;
        }
    } else if (rc != SL_ENOENT) {
        return sl_err_set(SL_EFORMAT, "tokenizer: tokenizer.ggml.token_type is not an array");
    }
    return 0;
}

static int load_merges(sl_tok *t, const sl_gguf *g)
{
    int64_t kv = sl_gguf_find_key(g, "tokenizer.ggml.merges");
    if (kv < 0) return sl_err_set(SL_EFORMAT, "tokenizer: BPE vocabulary without tokenizer.ggml.merges");
    uint32_t et;
    uint64_t n;
    const void *data;
    if (sl_gguf_kv_arr(g, kv, &et, &n, &data) < 0 || et != SL_GGUF_STRING)
        return sl_err_set(SL_EFORMAT, "tokenizer: tokenizer.ggml.merges is not a string array");
    if (n > (uint64_t)INT32_MAX) return sl_err_set(SL_EFORMAT, "tokenizer: too many merges");
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        uint64_t len;
        if (sl_gguf_arr_str(g, kv, i, &s, &len) < 0)
            return sl_err_set(SL_EFORMAT, "tokenizer: merge %llu unreadable", (unsigned long long)i);
        total += len;
    }
    if (total > UINT32_MAX) return sl_err_set(SL_EFORMAT, "tokenizer: merges too large");
    uint64_t cap = pow2_at_least(n * 2);
    t->merge_pool = malloc(total ? total : 1);
    t->mt = malloc(cap * sizeof *t->mt);
    if (!t->merge_pool || !t->mt) return sl_err_set(SL_ENOMEM, "tokenizer: out of memory for merges");
    t->mem_bytes += total + cap * sizeof *t->mt;
    for (uint64_t i = 0; i < cap; i++) t->mt[i].rank = -1;
    t->mt_mask = cap - 1;
    t->n_merges = (int64_t)n;
    uint32_t off = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        uint64_t len;
        sl_gguf_arr_str(g, kv, i, &s, &len);
        /* "left right": split at the first space after the first byte */
        const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
        if (!sp) return sl_err_set(SL_EFORMAT, "tokenizer: merge %llu has no separating space",
                                   (unsigned long long)i);
        uint32_t ll = (uint32_t)(sp - s), rl = (uint32_t)(len - ll - 1);
        memcpy(t->merge_pool + off, s, ll);
        memcpy(t->merge_pool + off + ll, sp + 1, rl);
        uint64_t h = merge_hash(s, ll, sp + 1, rl) & t->mt_mask;
        for (;;) {
            sl_merge_ent *e = &t->mt[h];
            if (e->rank < 0) {
                e->off = off; e->llen = ll; e->rlen = rl; e->rank = (int32_t)i;
                break;
            }
            /* a duplicate pair keeps the last rank, as llama.cpp's map insert */
            if (e->llen == ll && e->rlen == rl && memcmp(t->merge_pool + e->off, s, ll) == 0 &&
                memcmp(t->merge_pool + e->off + ll, sp + 1, rl) == 0) {
                e->rank = (int32_t)i;
                break;
            }
            h = (h + 1) & t->mt_mask;
        }
        off += ll + rl;
    }
    return 0;
}

static int cmp_special(const void *a, const void *b, void *ctx)
{
    const sl_tok *t = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (t->text_len[x] != t->text_len[y]) return t->text_len[x] > t->text_len[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int setup_special(sl_tok *t, const sl_gguf *g)
{
    /* end-of-turn / end-of-generation tokens by their text (llama.cpp does the
     * same for files whose metadata does not name them) and mark them CONTROL */
    static const char *const eot_texts[] = {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>",
        "_<EOT>", "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>",
    };
    static const char *const eog_texts[] = {
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
        "<EOT>", "_<EOT>", "<|return|>", "<|call|>", "<eos>", "<turn|>", "<|tool_response>",   /* the last three: gemma4 */
    };
    if (t->eot < 0) {
        for (size_t k = 0; k < sizeof eot_texts / sizeof *eot_texts && t->eot < 0; k++) {
            int32_t id = sl_tok_lookup(t, eot_texts[k], strlen(eot_texts[k]));
            if (id >= 0) {
                t->eot = id;
                t->type[id] = SL_TOKT_CONTROL;
            }
        }
    }
    if (t->eom < 0) {
        int32_t id = sl_tok_lookup(t, "<|eom_id|>", 10);
        if (id >= 0) { t->eom = id; t->type[id] = SL_TOKT_CONTROL; }
    }
    t->eog = malloc(sizeof(int32_t) * (sizeof eog_texts / sizeof *eog_texts + 3));
    if (!t->eog) return sl_err_set(SL_ENOMEM, "tokenizer: out of memory");
    for (size_t k = 0; k < sizeof eog_texts / sizeof *eog_texts; k++) {
        int32_t id = sl_tok_lookup(t, eog_texts[k], strlen(eog_texts[k]));
        if (id >= 0) {
            t->eog[t->n_eog++] = id;
            t->type[id] = SL_TOKT_CONTROL;
        }
    }
    /* Harmony (o200k_harmony): <|end|> closes a message inside a reply (the
     * analysis channel before the final one); <|return|> and <|call|> end it */
    int32_t h_end = sl_tok_lookup(t, "<|end|>", 7);
    if (h_end >= 0 && sl_tok_lookup(t, "<|return|>", 10) >= 0 && sl_tok_lookup(t, "<|call|>", 8) >= 0) {
        int32_t k = 0;
        for (int32_t j = 0; j < t->n_eog; j++)
            if (t->eog[j] != h_end) t->eog[k++] = t->eog[j];
        t->n_eog = k;
        if (t->eot == h_end) t->eot = -1;
    }
    int32_t extra[3] = {t->eos, t->eot, t->eom};
    for (int k = 0; k < 3; k++) {
        if (extra[k] < 0) continue;
        bool have = false;
        for (int32_t j = 0; j < t->n_eog; j++) have |= t->eog[j] == extra[k];
        if (!have) t->eog[t->n_eog++] = extra[k];
    }

    /* Tokens matched in input text before the tokenizer runs: control and
     * unknown ones only with parse_special, user-defined ones always. */
    int32_t n = 0;
    for (int32_t i = 0; i < t->n_vocab; i++) {
        int ty = t->type[i];
        if ((ty == SL_TOKT_CONTROL || ty == SL_TOKT_USER_DEFINED || ty == SL_TOKT_UNKNOWN) &&
            t->text_len[i] > 0)
            n++;
    }
    t->special = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (!t->special) return sl_err_set(SL_ENOMEM, "tokenizer: out of memory");
    for (int32_t i = 0; i < t->n_vocab; i++) {
        int ty = t->type[i];
        if ((ty == SL_TOKT_CONTROL || ty == SL_TOKT_USER_DEFINED || ty == SL_TOKT_UNKNOWN) &&
            t->text_len[i] > 0)
            t->special[t->n_special++] = i;
    }
    qsort_r(t->special, (size_t)t->n_special, sizeof(int32_t), cmp_special, t);

    /* Phi-3: special tokens swallow the whitespace that follows them */
    const char *name;
    uint64_t nlen;
    if (sl_gguf_get_str(g, "general.name", &name, &nlen) == 0) {
        char low[128];
        size_t m = nlen < sizeof low - 1 ? (size_t)nlen : sizeof low - 1;
        for (size_t i = 0; i < m; i++) low[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i]);
        low[m] = 0;
        if (strstr(low, "phi-3") || strstr(low, "phi3")) {
            for (int32_t i = 0; i < t->n_special; i++) t->attr[t->special[i]] |= SL_TOKA_RSTRIP;
            int32_t id = sl_tok_lookup(t, "</s>", 4);
            if (id >= 0) t->attr[id] |= SL_TOKA_RSTRIP;
            static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
            for (int k = 0; k < 3; k++) {
                id = sl_tok_lookup(t, keep[k], strlen(keep[k]));
                if (id >= 0) t->attr[id] &= (uint8_t)~SL_TOKA_RSTRIP;
            }
        }
    }

    /* byte-level BPE character tables */
    for (int i = 0; i < 0x144; i++) t->brev[i] = -1;
    for (unsigned b = 0; b < 256; b++) {
        uint32_t cp = byte_to_cp(b);
        t->bmap_len[b] = (uint8_t)sl_utf8_encode(cp, t->bmap[b]);
        t->brev[cp] = (int16_t)b;
    }
    for (int32_t i = 0; i < t->n_vocab; i++)
        if (t->text_len[i] > t->max_text) t->max_text = t->text_len[i];

    /* SPM byte fallback tokens */
    for (int b = 0; b < 256; b++) {
        char buf[8];
        snprintf(buf, sizeof buf, "<0x%02X>", b);
        int32_t id = sl_tok_lookup(t, buf, 6);
        if (id < 0) {
            char c = (char)b;
            id = sl_tok_lookup(t, &c, 1);
        }
        t->byte_tok[b] = id;
    }
    return sl_tok_special_index(t);
}

static int load(sl_tok *t, const sl_gguf *g)
{
    const char *model;
    uint64_t mlen;
    int rc = sl_gguf_get_str(g, "tokenizer.ggml.model", &model, &mlen);
    if (rc == SL_ENOENT) return sl_err_set(SL_EUNSUPPORTED, "tokenizer: no tokenizer.ggml.model key");
    if (rc < 0) return sl_err_set(SL_EFORMAT, "tokenizer: tokenizer.ggml.model is not a string");
    if (mlen == 5 && !memcmp(model, "llama", 5)) {
        t->kind = SL_TOK_SPM;
    } else if (mlen == 4 && !memcmp(model, "gpt2", 4)) {
        t->kind = SL_TOK_BPE;
    } else {
        return sl_err_set(SL_EUNSUPPORTED, "tokenizer: tokenizer.ggml.model '%.*s' is not supported "
                          "(supported: llama = SentencePiece, gpt2 = byte-level BPE)", (int)(mlen > 64 ? 64 : mlen), model);
    }
    int64_t kv = sl_gguf_find_key(g, "tokenizer.ggml.tokens");
    if (kv < 0) return sl_err_set(SL_EFORMAT, "tokenizer: no tokenizer.ggml.tokens array");
    if ((rc = load_strings(t, g, kv)) < 0) return rc;
    if ((rc = load_numeric(t, g)) < 0) return rc;

    t->eot = t->eom = t->pad = -1;
    if (t->kind == SL_TOK_SPM) {
        t->bos = 1; t->eos = 2; t->unk = 0;
        t->add_bos = true; t->add_space_prefix = true; t->clean_spaces = false;
        t->pre = SL_PRE_NONE;
    } else {
        t->bos = 11; t->eos = 11; t->unk = -1;
        t->add_bos = false; t->add_space_prefix = false; t->clean_spaces = true;
        const char *pre;
        uint64_t plen;
        rc = sl_gguf_get_str(g, "tokenizer.ggml.pre", &pre, &plen);
        if (rc < 0)
            return sl_err_set(SL_EUNSUPPORTED, "tokenizer: BPE vocabulary without tokenizer.ggml.pre "
                              "(the pre-tokenizer is unknown)");
        for (size_t i = 0; i < sizeof pre_names / sizeof *pre_names; i++) {
            if (strlen(pre_names[i].name) == plen && !memcmp(pre_names[i].name, pre, plen)) {
                t->pre = pre_names[i].pre;
                snprintf(t->pre_name, sizeof t->pre_name, "%s", pre_names[i].name);
            }
        }
        if (t->pre == SL_PRE_NONE)
            return sl_err_set(SL_EUNSUPPORTED, "tokenizer: pre-tokenizer '%.*s' is not supported "
                              "(supported: llama-bpe, qwen2, gpt-2, deepseek-llm, deepseek-coder, gpt-4o)",
                              (int)(plen > 64 ? 64 : plen), pre);
        if (t->pre == SL_PRE_LLAMA3) { t->ignore_merges = true; t->add_bos = true; }
        if (t->pre == SL_PRE_QWEN2 || t->pre == SL_PRE_DEEPSEEK_LLM || t->pre == SL_PRE_DEEPSEEK_CODER ||
            t->pre == SL_PRE_O200K)
            t->clean_spaces = false;
        if ((rc = load_merges(t, g)) < 0) return rc;
    }
    if (t->bos >= t->n_vocab) t->bos = -1;
    if (t->eos >= t->n_vocab) t->eos = -1;
    if (t->unk >= t->n_vocab) t->unk = -1;
    if ((rc = get_id(g, "tokenizer.ggml.bos_token_id", t->n_vocab, &t->bos)) < 0 ||
        (rc = get_id(g, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos)) < 0 ||
        (rc = get_id(g, "tokenizer.ggml.unknown_token_id", t->n_vocab, &t->unk)) < 0 ||
        (rc = get_id(g, "tokenizer.ggml.padding_token_id", t->n_vocab, &t->pad)) < 0 ||
        (rc = get_id(g, "tokenizer.ggml.eot_token_id", t->n_vocab, &t->eot)) < 0 ||
        (rc = get_id(g, "tokenizer.ggml.eom_token_id", t->n_vocab, &t->eom)) < 0 ||
        (rc = get_flag(g, "tokenizer.ggml.add_bos_token", &t->add_bos)) < 0 ||
        (rc = get_flag(g, "tokenizer.ggml.add_eos_token", &t->add_eos)) < 0 ||
        (rc = get_flag(g, "tokenizer.ggml.add_space_prefix", &t->add_space_prefix)) < 0)
        return rc;
    if (t->add_bos && t->bos < 0)
        return sl_err_set(SL_EFORMAT, "tokenizer: add_bos_token is set but there is no valid BOS id");
    if (t->add_eos && t->eos < 0)
        return sl_err_set(SL_EFORMAT, "tokenizer: add_eos_token is set but there is no valid EOS id");
    return setup_special(t, g);
}

int sl_tok_create(sl_tok **out, const sl_gguf *g)
{
    if (!out || !g) return sl_err_set(SL_EINVAL, "sl_tok_create: NULL argument");
    *out = NULL;
    sl_tok *t = calloc(1, sizeof *t);
    if (!t) return sl_err_set(SL_ENOMEM, "tokenizer: out of memory");
    int rc = load(t, g);
    if (rc < 0) {
        sl_tok_destroy(t);
        return rc;
    }
    *out = t;
    return 0;
}

void sl_tok_destroy(sl_tok *t)
{
    if (!t) return;
    free(t->pool); free(t->text_off); free(t->text_len); free(t->score);
    free(t->type); free(t->attr); free(t->ht); free(t->mt); free(t->merge_pool);
    free(t->special); free(t->eog); free(t->trie); free(t->trie_end_next);
    free(t);
}

int sl_tok_kind(const sl_tok *t) { return t->kind; }
const char *sl_tok_pre_name(const sl_tok *t) { return t->pre_name; }
int32_t sl_tok_n_vocab(const sl_tok *t) { return t->n_vocab; }
int32_t sl_tok_bos(const sl_tok *t) { return t->bos; }
int32_t sl_tok_eos(const sl_tok *t) { return t->eos; }
int32_t sl_tok_eot(const sl_tok *t) { return t->eot; }
bool sl_tok_add_bos(const sl_tok *t) { return t->add_bos; }
bool sl_tok_add_eos(const sl_tok *t) { return t->add_eos; }

bool sl_tok_is_eog(const sl_tok *t, int32_t id)
{
    for (int32_t i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) return true;
    return false;
}

int sl_tok_type(const sl_tok *t, int32_t id)
{
    if (id < 0 || id >= t->n_vocab) return -1;
    return t->type[id];
}

const char *sl_tok_text(const sl_tok *t, int32_t id, size_t *len)
{
    if (id < 0 || id >= t->n_vocab) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = t->text_len[id];
    return t->pool + t->text_off[id];
}

size_t sl_tok_max_out(const sl_tok *t)
{
    /* a piece is at most the token text (byte-level decoding only shrinks;
     * SPM "\u2581" -> " " too) */
    return 3 * (t->max_text + 3);
}

uint64_t sl_tok_mem_bytes(const sl_tok *t)
{
    return t ? sizeof *t + t->mem_bytes + (uint64_t)(t->n_special + t->n_eog) * sizeof(int32_t) : 0;
}

int32_t sl_tok_find(const sl_tok *t, const char *text, size_t len)
{
    return sl_tok_lookup(t, text, len);
}
