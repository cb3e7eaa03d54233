/* Text -> ids: split out special-token texts first (control/unknown tokens
 * only with parse_special and outside the caller's plain-text ranges,
 * user-defined tokens always, as llama.cpp does), then run the SPM or BPE
 * tokenizer on each remaining stretch of text. */
#include "tok_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct frag {
    int32_t id;          /* >= 0: a special token; -1: raw text [off, off+len) */
    size_t off, len;
} frag;

typedef struct frags { frag *v; size_t n, cap; } frags;

static int frags_push(frags *f, frag x)
{
    int rc = sl_tok_grow((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v);
    if (rc) return rc;
    f->v[f->n++] = x;
    return 0;
}

/* Byte ranges (off, len pairs) whose control-token texts stay text. */
typedef struct plain_ranges { const size_t *v; size_t n; } plain_ranges;

static bool overlaps_plain(const plain_ranges *p, size_t off, size_t len)
{
    for (size_t i = 0; i < p->n; i++)
        if (off < p->v[2 * i] + p->v[2 * i + 1] && p->v[2 * i] < off + len) return true;
    return false;
}

/* Splits every raw fragment at occurrences of special token id (those
 * overlapping a range of plain, if given, excepted). */
static int partition_one(const sl_tok *t, const char *text, int32_t id, const plain_ranges *plain,
                         frags *in, frags *out)
{
    const char *tt = t->pool + t->text_off[id];
    size_t tl = t->text_len[id];
    uint8_t attr = t->attr[id];
    out->n = 0;
    for (size_t k = 0; k < in->n; k++) {
        frag f = in->v[k];
        if (f.id >= 0 || f.len < tl) {
            if (frags_push(out, f) < 0) return SL_ENOMEM;
            continue;
        }
        size_t off = f.off, len = f.len, from = f.off;
        for (;;) {
            size_t rest = off + len - from;
            const char *m = rest >= tl ? memmem(text + from, rest, tt, tl) : NULL;
            if (m && plain && overlaps_plain(plain, (size_t)(m - text), tl)) {
                from = (size_t)(m - text) + 1;
                continue;
            }
            if (!m) {
                if (len > 0 && frags_push(out, (frag){-1, off, len}) < 0) return SL_ENOMEM;
                break;
            }
            size_t mo = (size_t)(m - text);
            size_t left = mo - off;
            if (attr & SL_TOKA_LSTRIP)
                while (left > 0 && isspace((unsigned char)text[off + left - 1])) left--;
            if (left > 0 && frags_push(out, (frag){-1, off, left}) < 0) return SL_ENOMEM;
            if (frags_push(out, (frag){id, 0, 0}) < 0) return SL_ENOMEM;
            size_t roff = mo + tl, rlen = off + len - roff;
            if (attr & SL_TOKA_RSTRIP)
                while (rlen > 0 && isspace((unsigned char)text[roff])) { roff++; rlen--; }
            off = from = roff;
            len = rlen;
            if (len == 0) break;
        }
    }
    return 0;
}

static int64_t encode(const sl_tok *t, const char *text, size_t len, bool add_special,
                      bool parse_special, const plain_ranges *plain, int32_t *ids, int64_t cap)
{
    if (!t || (!text && len) || cap < 0 || (!ids && cap > 0))
        return sl_err_set(SL_EINVAL, "sl_tok_encode: bad arguments");
    sl_ids out = {0};
    frags a = {0}, b = {0};
    int rc = 0;
    uint8_t *seen = NULL;
    if (len > 0 && t->n_special > 0) {
        seen = calloc((size_t)t->n_special, 1);
        if (!seen) rc = sl_err_set(SL_ENOMEM, "tokenizer: out of memory");
        else sl_tok_special_scan(t, text, len, seen);
    }
    if (len > 0 && rc == 0) {
        rc = frags_push(&a, (frag){-1, 0, len});
        /* in t->special's order (longest first), as every special split the
         * rest; those whose text does not occur would split nothing */
        for (int32_t i = 0; i < t->n_special && rc == 0; i++) {
            if (!seen[i]) continue;
            int32_t id = t->special[i];
            int ty = t->type[id];
            bool ctl = ty == SL_TOKT_CONTROL || ty == SL_TOKT_UNKNOWN;
            if (!parse_special && ctl) continue;
            rc = partition_one(t, text, id, ctl ? plain : NULL, &a, &b);
            frags tmp = a; a = b; b = tmp;
        }
    }
    if (rc < 0) goto done;

    if (t->kind == SL_TOK_SPM) {
        bool prev_special = true;   /* the first stretch of text gets the space prefix */
        if (add_special && t->add_bos && (rc = sl_ids_push(&out, t->bos)) < 0) goto done;
        char *buf = NULL;
        size_t bcap = 0;
        for (size_t k = 0; k < a.n && rc == 0; k++) {
            frag f = a.v[k];
            if (f.id >= 0) {
                rc = sl_ids_push(&out, f.id);
                prev_special = true;
                continue;
            }
            /* " " prefix, then every ' ' becomes U+2581 (3 bytes) */
            size_t need = 3 * (f.len + 1);
            if (need > bcap) {
                char *nb = realloc(buf, need);
                if (!nb) { rc = sl_err_set(SL_ENOMEM, "tokenizer: out of memory"); break; }
                buf = nb;
                bcap = need;
            }
            size_t n = 0;
            if (t->add_space_prefix && prev_special) {
                memcpy(buf, "\xe2\x96\x81", 3);
                n = 3;
            }
            for (size_t i = 0; i < f.len; i++) {
                char c = text[f.off + i];
                if (c == ' ') { memcpy(buf + n, "\xe2\x96\x81", 3); n += 3; }
                else buf[n++] = c;
            }
            rc = sl_tok_spm_encode(t, buf, n, &out);
            prev_special = false;
        }
        free(buf);
    } else {
        if (add_special && t->add_bos && (rc = sl_ids_push(&out, t->bos)) < 0) goto done;
        for (size_t k = 0; k < a.n && rc == 0; k++) {
            frag f = a.v[k];
            if (f.id >= 0) rc = sl_ids_push(&out, f.id);
            else rc = sl_tok_bpe_encode(t, text + f.off, f.len, &out);
        }
    }
    if (rc == 0 && add_special && t->add_eos) rc = sl_ids_push(&out, t->eos);
done:
    free(seen);
    free(a.v);
    free(b.v);
    if (rc < 0) {
        free(out.v);
        return rc;
    }
    size_t nc = (int64_t)out.n < cap ? out.n : (size_t)cap;
    if (nc) memcpy(ids, out.v, nc * sizeof *ids);
    free(out.v);
    return (int64_t)out.n;
}

int64_t sl_tok_encode(const sl_tok *t, const char *text, size_t len, bool add_special,
                      bool parse_special, int32_t *ids, int64_t cap)
{
    return encode(t, text, len, add_special, parse_special, NULL, ids, cap);
}

int64_t sl_tok_encode_plain(const sl_tok *t, const char *text, size_t len, bool add_special,
                            const size_t *plain, size_t n_plain, int32_t *ids, int64_t cap)
{
    if (n_plain && !plain) return sl_err_set(SL_EINVAL, "sl_tok_encode_plain: NULL ranges");
    for (size_t i = 0; i < n_plain; i++)
        if (plain[2 * i] > len || plain[2 * i + 1] > len - plain[2 * i])
            return sl_err_set(SL_EINVAL, "sl_tok_encode_plain: range %zu (%zu+%zu) outside the %zu-byte text",
                              i, plain[2 * i], plain[2 * i + 1], len);
    plain_ranges p = { plain, n_plain };
    return encode(t, text, len, add_special, true, &p, ids, cap);
}
