/* Ids -> text: pieces of single tokens, whole-sequence detokenization with
 * llama.cpp's conventions, and a streaming detokenizer that only ever emits
 * complete, valid UTF-8. */
#include "tok_internal.h"

#include <stdlib.h>
#include <string.h>

/* Writes the piece into buf if it fits; returns its full length. */
static size_t piece(const sl_tok *t, int32_t id, bool special, char *buf, size_t cap)
{
    const char *s = t->pool + t->text_off[id];
    size_t n = t->text_len[id], out = 0;
    int ty = t->type[id];
#define PUT(c) do { if (out < cap) buf[out] = (char)(c); out++; } while (0)
    if (ty == SL_TOKT_CONTROL || ty == SL_TOKT_UNKNOWN) {
        if (!special) return 0;
        for (size_t i = 0; i < n; i++) PUT(s[i]);
        return out;
    }
    if (ty == SL_TOKT_USER_DEFINED) {
        for (size_t i = 0; i < n; i++) PUT(s[i]);
        return out;
    }
    if (t->kind == SL_TOK_SPM) {
        if (ty == SL_TOKT_NORMAL) {
            for (size_t i = 0; i < n; i++) {
                if (i + 2 < n && !memcmp(s + i, "\xe2\x96\x81", 3)) { PUT(' '); i += 2; }
                else PUT(s[i]);
            }
        } else if (ty == SL_TOKT_BYTE) {
            /* "<0xXX>" */
            unsigned v = 0;
            for (size_t i = 3; i < n && s[i] != '>'; i++) {
                char c = s[i];
                v = v * 16 + (unsigned)(c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
                                        c >= 'A' && c <= 'F' ? c - 'A' + 10 : 0);
            }
            PUT(v & 0xff);
        }
        return out;
    }
    if (ty == SL_TOKT_NORMAL) {
        uint32_t cps[64];
        size_t i = 0;
        while (i < n) {
            size_t chunk = n - i < 64 ? n - i : 64;
            /* do not cut a sequence: back off to a lead byte */
            while (chunk < n - i && chunk > 1 && ((unsigned char)s[i + chunk] & 0xc0) == 0x80) chunk--;
            size_t nc = sl_utf8_decode_lenient(s + i, chunk, cps);
            for (size_t k = 0; k < nc; k++) {
                int b = cps[k] < 0x144 ? t->brev[cps[k]] : -1;
                if (b >= 0) {
                    PUT(b);
                } else {   /* not a byte-level character: keep its UTF-8 */
                    char u[4];
                    size_t ul = sl_utf8_encode(cps[k], u);
                    for (size_t q = 0; q < ul; q++) PUT(u[q]);
                }
            }
            i += chunk;
        }
    }
    return out;
#undef PUT
}

int sl_tok_piece(const sl_tok *t, int32_t id, bool special, char *buf, size_t cap, size_t *len)
{
    if (!t || id < 0 || id >= t->n_vocab) {
        if (len) *len = 0;
        return sl_err_set(SL_EINVAL, "sl_tok_piece: token id %d out of range [0, %d)", id,
                          t ? t->n_vocab : 0);
    }
    size_t n = piece(t, id, special, NULL, 0);
    if (len) *len = n;
    if (n > cap) return sl_err_set(SL_ERANGE, "sl_tok_piece: piece of %zu bytes, buffer %zu", n, cap);
    piece(t, id, special, buf, cap);
    return 0;
}

/* llama.cpp's clean-up of spaces before punctuation and contractions
 * (tokenizers' clean_up_tokenization_spaces); in place, returns new length. */
static size_t clean_spaces(char *s, size_t total)
{
    size_t t1 = total, n = total ? 1 : 0;
    for (size_t i = 1; i < t1; i++) {
        char x = s[i];
        if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) n--;
        s[n++] = x;
    }
    size_t t2 = n;
    n = t2 ? 1 : 0;
    for (size_t i = 1; i < t2; i++) {
        char x = s[i];
        if (x == '\'' && i + 1 < t2 && s[i - 1] == ' ' && s[i + 1] == ' ') {
            n--;
            s[++i] = '\0';
        }
        s[n++] = x;
    }
    size_t t3 = n;
    n = t3 ? 1 : 0;
    for (size_t i = 1; i < t3; i++) {
        char x = s[i];
        if (s[i - 1] == ' ' && x == '\'' && i + 1 < t3) {
            char x1 = s[i + 1];
            if (x1 == 's' || x1 == 'm') n--;
            else if (i + 2 < t3 && ((x1 == 'r' && s[i + 2] == 'e') || (x1 == 'v' && s[i + 2] == 'e'))) n--;
        }
        s[n++] = x;
    }
    return n;
}

int64_t sl_tok_decode(const sl_tok *t, const int32_t *ids, int64_t n, bool special, char *out,
                      size_t cap)
{
    if (!t || n < 0 || (!ids && n) || (!out && cap))
        return sl_err_set(SL_EINVAL, "sl_tok_decode: bad arguments");
    size_t total = 0;
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= t->n_vocab)
            return sl_err_set(SL_EINVAL, "sl_tok_decode: token id %d at position %lld out of range",
                              ids[i], (long long)i);
    for (int64_t i = 0; i < n; i++) total += piece(t, ids[i], special, NULL, 0);
    char *buf = malloc(total + 1);
    if (!buf) return sl_err_set(SL_ENOMEM, "sl_tok_decode: out of memory for %zu bytes", total);
    size_t pos = 0;
    bool strip = t->add_space_prefix;   /* the first piece loses one leading space */
    for (int64_t i = 0; i < n; i++) {
        size_t k = piece(t, ids[i], special, buf + pos, total - pos);
        if (strip && k > 0 && buf[pos] == ' ') {
            memmove(buf + pos, buf + pos + 1, k - 1);
            k--;
        }
        strip = false;
        pos += k;
    }
    if (t->clean_spaces) pos = clean_spaces(buf, pos);
    size_t c = pos < cap ? pos : cap;
    if (c) memcpy(out, buf, c);
    if (cap > pos) out[pos] = 0;
    free(buf);
    return (int64_t)pos;
}

/* ---- streaming ---------------------------------------------------------- */

void sl_detok_init(sl_detok *d, bool special)
{
    memset(d, 0, sizeof *d);
    d->special = special;
}

/* Length of the valid UTF-8 sequence at p[0..n): > 0 complete, 0 = a valid
 * but incomplete prefix, < 0 = invalid, -k meaning k bytes form its maximal
 * invalid subpart (replaced by one U+FFFD). */
static int utf8_seq(const unsigned char *p, size_t n)
{
    unsigned b = p[0];
    int need;
    unsigned lo = 0x80, hi = 0xbf;
    if (b < 0x80) return 1;
    if (b >= 0xc2 && b <= 0xdf) need = 2;
    else if (b >= 0xe0 && b <= 0xef) {
        need = 3;
        if (b == 0xe0) lo = 0xa0;
        if (b == 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
        need = 4;
        if (b == 0xf0) lo = 0x90;
        if (b == 0xf4) hi = 0x8f;
    } else {
        return -1;
    }
    for (int i = 1; i < need; i++) {
        if ((size_t)i >= n) return 0;
        unsigned c = p[i];
        unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xbf;
        if (c < l || c > h) return -i;
    }
    return need;
}

/* Emits complete sequences of in[0..n) into out; leaves an incomplete tail
 * in d->pend. final: the tail is invalid too. Returns bytes written or -1 if
 * out is too small. */
static long emit(sl_detok *d, const unsigned char *in, size_t n, bool final, char *out, size_t cap)
{
    size_t i = 0, o = 0;
    while (i < n) {
        int k = utf8_seq(in + i, n - i);
        if (k == 0 && !final) break;
        if (k > 0) {
            if (o + (size_t)k > cap) return -1;
            memcpy(out + o, in + i, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
        } else {
            if (o + 3 > cap) return -1;
            memcpy(out + o, "\xef\xbf\xbd", 3);
            o += 3;
            i += k < 0 ? (size_t)-k : n - i;
        }
    }
    size_t rest = n - i;
    memmove(d->pend, in + i, rest);
    d->n_pend = (uint32_t)rest;
    return (long)o;
}

int sl_detok_push(sl_detok *d, const sl_tok *t, int32_t id, char *out, size_t cap, size_t *len)
{
    if (len) *len = 0;
    if (!d || !t) return sl_err_set(SL_EINVAL, "sl_detok_push: NULL argument");
    if (id < 0 || id >= t->n_vocab)
        return sl_err_set(SL_EINVAL, "sl_detok_push: token id %d out of range [0, %d)", id, t->n_vocab);
    size_t pl = piece(t, id, d->special, NULL, 0);
    unsigned char *buf = malloc(pl + d->n_pend + 1);
    if (!buf) return sl_err_set(SL_ENOMEM, "sl_detok_push: out of memory");
    memcpy(buf, d->pend, d->n_pend);
    piece(t, id, d->special, (char *)buf + d->n_pend, pl);
    sl_detok saved = *d;
    long o = emit(d, buf, pl + saved.n_pend, false, out, cap);
    free(buf);
    if (o < 0) {
        *d = saved;
        return sl_err_set(SL_ERANGE, "sl_detok_push: output buffer of %zu bytes is too small", cap);
    }
    if (len) *len = (size_t)o;
    return 0;
}

int sl_detok_flush(sl_detok *d, char *out, size_t cap, size_t *len)
{
    if (len) *len = 0;
    if (!d) return sl_err_set(SL_EINVAL, "sl_detok_flush: NULL argument");
    unsigned char tmp[8];
    size_t n = d->n_pend;
    memcpy(tmp, d->pend, n);
    sl_detok saved = *d;
    long o = emit(d, tmp, n, true, out, cap);
    if (o < 0) {
        *d = saved;
        return sl_err_set(SL_ERANGE, "sl_detok_flush: output buffer of %zu bytes is too small", cap);
    }
    if (len) *len = (size_t)o;
    return 0;
}
