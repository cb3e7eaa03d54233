/* Harmony replies (gpt-oss): which channel each generated piece belongs to.
 * The parser reads control tokens as markers and never buffers body text, so
 * a caller can stream each channel as its tokens arrive. */
#include "chat.h"

#include <string.h>

enum { ST_HEADER, ST_BODY, ST_DONE };

void sl_harmony_init(sl_harmony *h)
{
    memset(h, 0, sizeof *h);
    h->state = ST_HEADER;
}

static bool is_marker(const char *s, size_t len, const char *m)
{
    return len == strlen(m) && !memcmp(s, m, len);
}

/* The channel a header names; a body without a channel counts as final. */
static int channel_of(const sl_harmony *h)
{
    if (h->n_name == 8 && !memcmp(h->name, "analysis", 8)) return SL_HARMONY_ANALYSIS;
    if (h->n_name == 10 && !memcmp(h->name, "commentary", 10)) return SL_HARMONY_COMMENTARY;
    return SL_HARMONY_FINAL;
}

int sl_harmony_push(sl_harmony *h, const char *s, size_t len, bool marker)
{
    if (h->state == ST_DONE) return SL_HARMONY_NONE;
    if (!marker) {
        if (h->state == ST_BODY) return h->channel;
        /* header: keep the first word after <|channel|> ("commentary to=..."),
         * a name longer than any channel's is no channel */
        for (size_t i = 0; i < len && h->in_channel_name; i++) {
            char c = s[i];
            if (c == ' ' || c == '\t' || c == '\n') {
                if (h->n_name > 0) h->in_channel_name = false;
            } else if (h->n_name < sizeof h->name) {
                h->name[h->n_name++] = c;
            } else {
                h->in_channel_name = false;
                h->n_name = 0;
            }
        }
        return SL_HARMONY_NONE;
    }
    if (is_marker(s, len, "<|channel|>")) {
        h->state = ST_HEADER;
        h->in_channel_name = true;
        h->n_name = 0;
    } else if (is_marker(s, len, "<|message|>")) {
        h->state = ST_BODY;
        h->channel = channel_of(h);
        h->in_channel_name = false;
    } else if (is_marker(s, len, "<|start|>") || is_marker(s, len, "<|end|>")) {
        h->state = ST_HEADER;
        h->in_channel_name = false;
        h->n_name = 0;
    } else if (is_marker(s, len, "<|return|>") || is_marker(s, len, "<|call|>")) {
        h->state = ST_DONE;
    } else if (is_marker(s, len, "<|constrain|>")) {
        h->in_channel_name = false;
    }
    return SL_HARMONY_NONE;
}

bool sl_harmony_done(const sl_harmony *h)
{
    return h->state == ST_DONE;
}

static void append(char *out, size_t cap, size_t *n, const char *s, size_t len)
{
    if (!out || cap == 0) return;
    size_t room = *n < cap - 1 ? cap - 1 - *n : 0;
    if (len > room) len = room;
    memcpy(out + *n, s, len);
    *n += len;
    out[*n] = 0;
}

int sl_harmony_split(const char *text, size_t len, char *final_out, size_t final_cap,
                     char *analysis_out, size_t analysis_cap)
{
    static const char *const markers[] = {
        "<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>", "<|constrain|>",
    };
    sl_harmony h;
    sl_harmony_init(&h);
    size_t nf = 0, na = 0;
    if (final_out && final_cap) final_out[0] = 0;
    if (analysis_out && analysis_cap) analysis_out[0] = 0;
    for (size_t i = 0; i < len;) {
        /* the next marker at or after i */
        size_t at = len, ml = 0;
        for (size_t k = 0; k < sizeof markers / sizeof *markers; k++) {
            size_t l = strlen(markers[k]);
            const char *m = memmem(text + i, len - i, markers[k], l);
            if (m && (size_t)(m - text) < at) { at = (size_t)(m - text); ml = l; }
        }
        if (at > i) {
            int ch = sl_harmony_push(&h, text + i, at - i, false);
            if (ch == SL_HARMONY_FINAL) append(final_out, final_cap, &nf, text + i, at - i);
            else if (ch == SL_HARMONY_ANALYSIS) append(analysis_out, analysis_cap, &na, text + i, at - i);
        }
        if (at < len) sl_harmony_push(&h, text + at, ml, true);
        i = at + ml;
    }
    return 0;
}
