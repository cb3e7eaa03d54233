/* Pre-tokenizers of byte-level BPE vocabularies: split text (as code points)
 * into words before merging. Each is a hand-written matcher equivalent to the
 * regular expressions llama.cpp applies for a tokenizer.ggml.pre value,
 * including the way llama.cpp evaluates them (std::regex on a text where
 * non-ASCII whitespace reads as \v and other non-ASCII code points as their
 * general category). */
#include "tok_internal.h"

uint16_t sl_ucd_flags(uint32_t cp)
{
    if (cp >= 0x110000) return SL_UCF_UNDEF;
    uint32_t lo = 0, hi = sl_ucd_n_ranges;   /* last range with start <= cp */
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (sl_ucd_range_start[mid] <= cp) lo = mid; else hi = mid;
    }
    return sl_ucd_range_flags[lo];
}

size_t sl_utf8_decode_lenient(const char *text, size_t len, uint32_t *cps)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, n = 0;
    while (i < len) {
        unsigned b = s[i];
        uint32_t cp;
        size_t k;
        if (b < 0x80) { cps[n++] = b; i++; continue; }
        if (!(b & 0x40)) { cps[n++] = 0xFFFD; i++; continue; }
        if (!(b & 0x20)) { k = 2; cp = b & 0x1f; }
        else if (!(b & 0x10)) { k = 3; cp = b & 0x0f; }
        else if (!(b & 0x08)) { k = 4; cp = b & 0x07; }
        else { cps[n++] = 0xFFFD; i++; continue; }
        if (i + k > len) { cps[n++] = 0xFFFD; i++; continue; }
        bool ok = true;
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) { ok = false; break; }
            cp = (cp << 6) | (s[i + j] & 0x3f);
        }
        if (!ok) { cps[n++] = 0xFFFD; i++; continue; }
        cps[n++] = cp;
        i += k;
    }
    return n;
}

size_t sl_utf8_encode(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) { o[0] = (unsigned char)(0xc0 | (cp >> 6)); o[1] = (unsigned char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xe0 | (cp >> 12)); o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    if (cp > 0x10FFFF) cp = 0xFFFD;
    if (cp < 0x10000) return sl_utf8_encode(cp, out);
    o[0] = (unsigned char)(0xf0 | (cp >> 18)); o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f)); o[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

/* ---- shared helpers ---------------------------------------------------- */

typedef struct seg_out {
    size_t *lens;
    size_t n;
    size_t prev_end;
} seg_out;

/* Closes a word ending at end (nothing if empty); returns its length. */
static size_t add_word(seg_out *o, size_t end)
{
    size_t len = end - o->prev_end;
    if (len > 0) o->lens[o->n++] = len;
    o->prev_end = end;
    return len;
}

#define OUT_OF_RANGE 0xFFFFFFFFu

/* Code point / flags at p, or OUT_OF_RANGE / 0 outside [ini, end). */
static inline uint32_t cpt_at(const uint32_t *cps, size_t ini, size_t end, size_t p)
{
    return p >= ini && p < end ? cps[p] : OUT_OF_RANGE;
}
static inline uint16_t flg_at(const uint32_t *cps, size_t ini, size_t end, size_t p)
{
    return p >= ini && p < end ? sl_ucd_flags(cps[p]) : 0;
}
#define CPT(p) cpt_at(cps, ini, end, (p))
#define FLG(p) flg_at(cps, ini, end, (p))

/* The common tail of the gpt2 and llama3 splits, given the run of nws
 * whitespace code points at pos: \s+(?!\S) (the run minus its last one when
 * more text follows), else \s+, else one code point. Returns the new pos. */
static size_t ws_tail(size_t pos, size_t nws, bool more, seg_out *o)
{
    pos += nws > 1 && more ? nws - 1 : nws > 0 ? nws : 1;
    add_word(o, pos);
    return pos;
}

/* ---- gpt-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
static void split_gpt2(const uint32_t *cps, size_t ini, size_t end, seg_out *o)
{
    o->prev_end = ini;
    for (size_t pos = ini; pos < end;) {
        uint32_t c = CPT(pos);
        uint16_t f = FLG(pos);
        if (c == '\'' && pos + 1 < end) {
            uint32_t n1 = CPT(pos + 1);
            if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') { pos += add_word(o, pos + 2); continue; }
            if (pos + 2 < end) {
                uint32_t n2 = CPT(pos + 2);
                if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                    pos += add_word(o, pos + 3);
                    continue;
                }
            }
        }
        uint16_t f2 = c == ' ' ? FLG(pos + 1) : f;
        if (f2 & SL_UCF_LETTER) {
            pos += c == ' ';
            while (f2 & SL_UCF_LETTER) f2 = FLG(++pos);
            add_word(o, pos);
            continue;
        }
        if (f2 & SL_UCF_NUMBER) {
            pos += c == ' ';
            while (f2 & SL_UCF_NUMBER) f2 = FLG(++pos);
            add_word(o, pos);
            continue;
        }
        if (!(f2 & (SL_UCF_WHITESPACE | SL_UCF_LETTER | SL_UCF_NUMBER)) && f2) {
            pos += c == ' ';
            while (!(f2 & (SL_UCF_WHITESPACE | SL_UCF_LETTER | SL_UCF_NUMBER)) && f2) f2 = FLG(++pos);
            add_word(o, pos);
            continue;
        }
        size_t nws = 0;
        while (FLG(pos + nws) & SL_UCF_WHITESPACE) nws++;
        pos = ws_tail(pos, nws, CPT(pos + nws) != OUT_OF_RANGE, o);
    }
}

/* ---- llama-3 / qwen2:
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
 *  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+   (qwen2: \p{N} single) */
static uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

static void split_llama3(const uint32_t *cps, size_t ini, size_t end, size_t max_digits, seg_out *o)
{
    o->prev_end = ini;
    for (size_t pos = ini; pos < end;) {
        uint32_t c = CPT(pos);
        uint16_t f = FLG(pos);
        if (c == '\'' && pos + 1 < end) {
            uint32_t n1 = ascii_lower(CPT(pos + 1));
            if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') { pos += add_word(o, pos + 2); continue; }
            if (pos + 2 < end) {
                uint32_t n2 = ascii_lower(CPT(pos + 2));
                if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                    pos += add_word(o, pos + 3);
                    continue;
                }
            }
        }
        if (!(c == '\r' || c == '\n' || (f & SL_UCF_NUMBER))) {
            if ((f & SL_UCF_LETTER) || (FLG(pos + 1) & SL_UCF_LETTER)) {
                pos++;
                while (FLG(pos) & SL_UCF_LETTER) pos++;
                add_word(o, pos);
                continue;
            }
        }
        if (f & SL_UCF_NUMBER) {
            size_t start = pos;
            while (FLG(pos) & SL_UCF_NUMBER) {
                if (++pos - start >= max_digits) {
                    add_word(o, pos);
                    start = pos;
                }
            }
            add_word(o, pos);
            continue;
        }
        uint16_t f2 = c == ' ' ? FLG(pos + 1) : f;
        if (!(f2 & (SL_UCF_WHITESPACE | SL_UCF_LETTER | SL_UCF_NUMBER)) && f) {
            pos += c == ' ';
            while (!(f2 & (SL_UCF_WHITESPACE | SL_UCF_LETTER | SL_UCF_NUMBER)) && f2) f2 = FLG(++pos);
            uint32_t c2 = CPT(pos);
            while (c2 == '\r' || c2 == '\n') c2 = CPT(++pos);
            add_word(o, pos);
            continue;
        }
        size_t nws = 0, last_rn = 0;
        while (FLG(pos + nws) & SL_UCF_WHITESPACE) {
            uint32_t c2 = CPT(pos + nws);
            if (c2 == '\r' || c2 == '\n') last_rn = pos + nws + 1;
            nws++;
        }
        if (last_rn > 0) { pos = last_rn; add_word(o, pos); continue; }     /* \s*[\r\n]+ */
        pos = ws_tail(pos, nws, CPT(pos + nws) != OUT_OF_RANGE, o);
    }
#undef CPT
#undef FLG
}

/* ---- DeepSeek: a sequence of regexes, each splitting the previous pieces
 * further (matched and unmatched stretches both become pieces), evaluated
 * as llama.cpp does with std::regex: \s is ASCII whitespace plus non-ASCII
 * White_Space (read as \v, so it matches no bracket range); \p{X} classes see
 * ASCII as itself and non-ASCII non-whitespace code points by category. */

static bool is_ws(uint32_t c)
{
    if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0d);
    return (sl_ucd_flags(c) & SL_UCF_WHITESPACE) != 0;
}

/* The value a wide-regex bracket sees. */
static uint32_t wval(uint32_t c)
{
    return (c > 0x7f && (sl_ucd_flags(c) & SL_UCF_WHITESPACE)) ? 0x0b : c;
}

static bool has_cat(uint32_t c, uint16_t cat)
{
    uint16_t f = sl_ucd_flags(c);
    if (c > 0x7f && (f & SL_UCF_WHITESPACE)) return false;
    return (f & cat) != 0;
}

typedef struct { uint32_t lo, hi; } cp_range;

static bool in_ranges(uint32_t c, const cp_range *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (c >= r[i].lo && c <= r[i].hi) return true;
    return false;
}

/* ---- o200k (gpt-4o, gpt-oss), in the form llama.cpp evaluates:
 * [^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+C?|
 * [^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*C?|
 * \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * with C = (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]). Only
 * ASCII letters have a case there: "upper" = A-Z or any non-ASCII letter,
 * "lower" = a-z or any non-ASCII letter, so a non-ASCII letter is both. */
static bool o2_letter(uint32_t c) { return has_cat(c, SL_UCF_LETTER); }
static bool o2_upper(uint32_t c) { return o2_letter(c) && !(c >= 'a' && c <= 'z'); }
static bool o2_lower(uint32_t c) { return o2_letter(c) && !(c >= 'A' && c <= 'Z'); }
static bool o2_other(uint32_t c) { return !is_ws(c) && !o2_letter(c) && !has_cat(c, SL_UCF_NUMBER); }

/* Length of the optional contraction at p (0 if none). */
static size_t o2_contraction(const uint32_t *cps, size_t p, size_t end)
{
    if (p + 1 >= end || cps[p] != '\'') return 0;
    uint32_t a = ascii_lower(cps[p + 1]);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (p + 2 >= end) return 0;
    uint32_t b = ascii_lower(cps[p + 2]);
    return (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') ? 3 : 0;
}

/* End of the word starting with the letter at s: the first two alternatives
 * with std::regex's backtracking. The greedy upper run [s, u) is followed by
 * the lower run when a lower letter comes next; otherwise the lower part
 * backs off to the last non-ASCII letter of the upper run (both classes);
 * with none there, the second alternative takes the upper run alone. */
static size_t o2_word_end(const uint32_t *cps, size_t s, size_t end)
{
    size_t u = s;
    while (u < end && o2_upper(cps[u])) u++;
    size_t e;
    if (u < end && o2_lower(cps[u])) {
        e = u;
        while (e < end && o2_lower(cps[e])) e++;
    } else {
        e = u;
        for (size_t q = u; q > s; q--)
            if (cps[q - 1] > 0x7f) { e = q; break; }
    }
    return e + o2_contraction(cps, e, end);
}

static void split_o200k(const uint32_t *cps, size_t n, seg_out *o)
{
    o->prev_end = 0;
    for (size_t pos = 0; pos < n;) {
        uint32_t c = cps[pos];
        bool lead = c != '\r' && c != '\n' && !o2_letter(c) && !has_cat(c, SL_UCF_NUMBER);
        if (o2_letter(c) || (lead && pos + 1 < n && o2_letter(cps[pos + 1]))) {
            pos = o2_word_end(cps, pos + !o2_letter(c), n);
            add_word(o, pos);
            continue;
        }
        if (has_cat(c, SL_UCF_NUMBER)) {
            size_t e = pos;
            while (e < n && e - pos < 3 && has_cat(cps[e], SL_UCF_NUMBER)) e++;
            pos = e;
            add_word(o, pos);
            continue;
        }
        size_t q = pos + (c == ' ' && pos + 1 < n && o2_other(cps[pos + 1]));
        if (o2_other(cps[q])) {
            while (q < n && o2_other(cps[q])) q++;
            while (q < n && (cps[q] == '\r' || cps[q] == '\n' || cps[q] == '/')) q++;
            pos = q;
            add_word(o, pos);
            continue;
        }
        size_t nws = 0, last_rn = 0;
        while (pos + nws < n && is_ws(cps[pos + nws])) {
            if (cps[pos + nws] == '\r' || cps[pos + nws] == '\n') last_rn = pos + nws + 1;
            nws++;
        }
        if (last_rn > 0) { pos = last_rn; add_word(o, pos); continue; }     /* \s*[\r\n]+ */
        pos = ws_tail(pos, nws, pos + nws < n, o);
    }
}

/* Letter class of the deepseek-llm regex (its second expression), as ranges. */
static const cp_range ds_llm_letters[] = {
    {0x41,0x5A},{0x61,0x7A},{0xB5,0xB5},{0xC0,0xD6},{0xD8,0xF6},{0xF8,0x1BA},{0x1BC,0x1BF},
    {0x1C4,0x293},{0x295,0x2AF},{0x370,0x373},{0x376,0x377},{0x37B,0x37D},{0x37F,0x37F},
    {0x386,0x386},{0x388,0x38A},{0x38C,0x38C},{0x38E,0x3A1},{0x3A3,0x3F5},{0x3F7,0x481},
    {0x48A,0x52F},{0x531,0x556},{0x10A0,0x10C5},{0x13A0,0x13F5},{0x13F8,0x13FD},
    {0x1C90,0x1CBA},{0x1CBD,0x1CBF},{0x1D00,0x1D2B},{0x1D6B,0x1D77},{0x1D79,0x1D9A},
    {0x1E00,0x1F15},{0x1F18,0x1F1D},{0x1F20,0x1F45},{0x1F48,0x1F4D},{0x1F50,0x1F57},
    {0x1F59,0x1F59},{0x1F5B,0x1F5B},{0x1F5D,0x1F5D},{0x1F5F,0x1F7D},{0x1F80,0x1FB4},
    {0x1FB6,0x1FBC},{0x1FBE,0x1FBE},{0x1FC2,0x1FC4},{0x1FC6,0x1FCC},{0x1FD0,0x1FD3},
    {0x1FD6,0x1FDB},{0x1FE0,0x1FEC},{0x1FF2,0x1FF4},{0x1FF6,0x1FFC},{0x2102,0x2102},
    {0x2107,0x2107},{0x210A,0x2113},{0x2115,0x2115},{0x2119,0x211D},{0x2124,0x2124},
    {0x2126,0x2126},{0x2128,0x2128},{0x212A,0x212D},{0x212F,0x2134},{0x2139,0x2139},
    {0x213C,0x213F},{0x2145,0x2149},{0x214E,0x214E},{0x2183,0x2184},{0x2C00,0x2C7B},
    {0x2C7E,0x2CE4},{0x2CEB,0x2CEE},{0x2CF2,0x2CF3},{0xA640,0xA66D},{0xA680,0xA69B},
    {0xA722,0xA76F},{0xA771,0xA787},{0xA78B,0xA78E},{0xAB70,0xABBF},{0xFB00,0xFB06},
    {0xFB13,0xFB17},{0xFF21,0xFF3A},{0xFF41,0xFF5A},{0x10400,0x1044F},{0x104B0,0x104D3},
    {0x104D8,0x104FB},{0x10C80,0x10CB2},{0x10CC0,0x10CF2},{0x118A0,0x118DF},{0x1E900,0x1E943},
};
/* [!-/:-~！-／：-～‘-‟　-。] */
static const cp_range ds_llm_punct[] = {
    {0x21,0x2F},{0x3A,0x7E},{0xFF01,0xFF0F},{0xFF1A,0xFF5E},{0x2018,0x201F},{0x3000,0x3002},
};
/* [一-龥ࠀ-一가-퟿] */
static const cp_range ds_cjk[] = { {0x4E00,0x9FA5},{0x0800,0x4E00},{0xAC00,0xD7FF} };

enum ds_rx {
    RX_CRLF,          /* [\r\n] */
    RX_LLM_LETTERS,   /* \s?[letters]+ */
    RX_LLM_PUNCT,     /* \s?[punct]+ */
    RX_WS_END,        /* \s+$ */
    RX_CJK,           /* [CJK]+ */
    RX_NUM_RUN,       /* \p{N}+ */
    RX_NUM_ONE,       /* \p{N} */
    RX_CAT_L,         /* \s?\p{L}+ */
    RX_CAT_P,         /* \s?\p{P}+ */
};

static bool rx_class(int rx, uint32_t c)
{
    switch (rx) {
    case RX_LLM_LETTERS: return in_ranges(wval(c), ds_llm_letters, sizeof ds_llm_letters / sizeof *ds_llm_letters);
    case RX_LLM_PUNCT: return in_ranges(wval(c), ds_llm_punct, sizeof ds_llm_punct / sizeof *ds_llm_punct);
    case RX_CJK: return in_ranges(wval(c), ds_cjk, 3);
    case RX_NUM_RUN: case RX_NUM_ONE: return has_cat(c, SL_UCF_NUMBER);
    case RX_CAT_L: return has_cat(c, SL_UCF_LETTER);
    case RX_CAT_P: return has_cat(c, SL_UCF_PUNCT);
    default: return false;
    }
}

/* Length of the match of rx starting exactly at p (0 = none) within [p, end). */
static size_t rx_match_at(int rx, const uint32_t *cps, size_t p, size_t end)
{
    switch (rx) {
    case RX_CRLF: return cps[p] == '\r' || cps[p] == '\n';
    case RX_NUM_ONE: return rx_class(rx, cps[p]);
    case RX_CJK: case RX_NUM_RUN: {
        size_t q = p;
        while (q < end && rx_class(rx, cps[q])) q++;
        return q - p;
    }
    case RX_LLM_LETTERS: case RX_LLM_PUNCT: case RX_CAT_L: case RX_CAT_P: {
        size_t q = p;
        if (is_ws(cps[q]) && q + 1 < end && rx_class(rx, cps[q + 1])) q++;
        size_t r = q;
        while (r < end && rx_class(rx, cps[r])) r++;
        return r > q ? r - p : 0;
    }
    default: return 0;
    }
}

/* Applies one regex to every piece of in[0..n_in) (lengths), writing out. */
static size_t rx_split(int rx, const uint32_t *cps, const size_t *in, size_t n_in, size_t *out)
{
    size_t n_out = 0, start = 0;
    for (size_t k = 0; k < n_in; k++) {
        size_t s = start, e = start + in[k];
        start = e;
        if (rx == RX_WS_END) {
            size_t q = e;
            while (q > s && is_ws(cps[q - 1])) q--;
            if (q > s) out[n_out++] = q - s;
            if (q < e) out[n_out++] = e - q;
            continue;
        }
        size_t pos = s;
        for (size_t p = s; p < e;) {
            size_t m = rx_match_at(rx, cps, p, e);
            if (m == 0) { p++; continue; }
            if (p > pos) out[n_out++] = p - pos;
            out[n_out++] = m;
            p += m;
            pos = p;
        }
        if (pos < e) out[n_out++] = e - pos;
    }
    return n_out;
}

size_t sl_pretok_split(int pre, const uint32_t *cps, size_t n, size_t *lens, size_t *scratch)
{
    if (n == 0) return 0;
    seg_out o = { lens, 0, 0 };
    switch (pre) {
    case SL_PRE_GPT2: split_gpt2(cps, 0, n, &o); return o.n;
    case SL_PRE_LLAMA3: split_llama3(cps, 0, n, 3, &o); return o.n;
    case SL_PRE_QWEN2: split_llama3(cps, 0, n, 1, &o); return o.n;
    case SL_PRE_O200K: split_o200k(cps, n, &o); return o.n;
    case SL_PRE_DEEPSEEK_LLM: case SL_PRE_DEEPSEEK_CODER: {
        static const int llm[] = { RX_CRLF, RX_LLM_LETTERS, RX_LLM_PUNCT, RX_WS_END, RX_CJK, RX_NUM_RUN };
        static const int coder[] = { RX_CRLF, RX_CAT_L, RX_CAT_P, RX_CJK, RX_NUM_ONE };
        const int *seq = pre == SL_PRE_DEEPSEEK_LLM ? llm : coder;
        size_t nseq = pre == SL_PRE_DEEPSEEK_LLM ? 6 : 5;
        /* ping-pong between lens and scratch; end in lens */
        size_t *bufs[2] = { (nseq % 2) ? lens : scratch, (nseq % 2) ? scratch : lens };
        size_t cnt = 1;
        bufs[1][0] = n;
        int cur = 1;
        for (size_t i = 0; i < nseq; i++) {
            cnt = rx_split(seq[i], cps, bufs[cur], cnt, bufs[cur ^ 1]);
            cur ^= 1;
        }
        return cnt;
    }
    default:
        lens[0] = n;
        return 1;
    }
}
