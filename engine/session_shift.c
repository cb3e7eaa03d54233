/* Context shift of a session (llama.cpp's): the sinks stay, the older half of
 * the rest goes, the kept rows are rotated to their new positions
 * (sl_forward_kv_shift); and the memory-pressure window, which shifts the
 * same way with sinks + window as the context. */
#include "session_obj.h"

#include <string.h>

/* Positions a context shift keeps: BOS, if the cache starts with it, plus
 * params.n_keep (-1: the first prompt), never more than the cache holds. */
static int32_t sink_len(const sl_session *s)
{
    const sl_model *m = s->m;
    /* 64-bit: n_keep may be INT32_MAX, and BOS adds one */
    int64_t keep = m->p.n_keep < 0 ? s->first_len : m->p.n_keep;
    if (m->p.n_keep >= 0 && s->kv.n_past > 0 && m->tok && s->hist[0] == sl_tok_bos(m->tok)) keep++;
    return keep > s->kv.n_past ? s->kv.n_past : (int32_t)keep;
}

static int shift(sl_session *s, int32_t keep, int32_t n_discard)
{
    int rc = sl_forward_kv_shift(&s->m->fw, &s->kv, keep, n_discard);
    if (rc) return rc;
    memmove(s->hist + keep, s->hist + keep + n_discard, (size_t)(s->kv.n_past - keep) * sizeof *s->hist);
    sl_session_fresh_cut(s, keep);   /* the kept rows were re-rotated */
    s->stats.n_ctx_shift++;
    s->stats.n_ctx_dropped += n_discard;
    return 0;
}

/* Positions the cache may hold: n_ctx, or the sinks plus the pressure window. */
static int64_t room(const sl_session *s, int32_t keep)
{
    return s->window && (int64_t)keep + s->window < s->kv.n_ctx ? (int64_t)keep + s->window : s->kv.n_ctx;
}

/* Context shift (llama.cpp's): while n new tokens do not fit, keep the
 * sinks (sink_len) and drop the older half of the rest. A pressure window
 * shifts the same way with sinks + window as the context, also when
 * params.context_shift is off (the ladder's last rung is a context shift).
 * Returns 0 also when it cannot make room (the caller reports SL_ECTX; a
 * single feed longer than the window is let through up to n_ctx). */
int sl_session_make_room(sl_session *s, int n)
{
    if (!s->m->p.context_shift && !s->window) return 0;
    for (;;) {
        int32_t keep = sink_len(s);
        if ((int64_t)s->kv.n_past + n <= room(s, keep)) return 0;
        int32_t n_discard = (s->kv.n_past - keep) / 2;
        if (n_discard < 1) return 0;
        int rc = shift(s, keep, n_discard);
        if (rc) return rc;
    }
}

int sl_session_kv_window(sl_session *s, int32_t n)
{
    if (n < 0) return sl_session_fail(s, sl_err_set(SL_EINVAL, "kv window: %d positions", n));
    if (n && s->kv.rec)   /* a window is kept by context shifts, which a recurrent state cannot take */
        return sl_session_fail(s, sl_err_set(SL_EUNSUPPORTED, "kv window: the model has recurrent layers: "
                                             "their state cannot drop positions, the window is not set"));
    s->window = n;
    if (!n) return 0;
    /* the halvings make_room would do with the window as the context, as one
     * shift: the same rows are kept, rotated once */
    int32_t keep = sink_len(s), held = s->kv.n_past - keep;
    while (held > n) held -= held / 2;
    int rc = held < s->kv.n_past - keep ? shift(s, keep, s->kv.n_past - keep - held) : 0;
    if (rc) { s->window = 0; return sl_session_fail(s, rc); }
    s->stats.pressure_kv_released += sl_kv_release(&s->kv);
    return 0;
}


int32_t sl_session_kv_cap(const sl_session *s)
{
    return s->window ? (int32_t)room(s, sink_len(s)) : 0;
}
