/* Recurrent-state snapshots of a session for prefix reuse (session_obj.h).
 * A recurrent state sums every position before it: a prefix shorter than the
 * history can only be reused from a copy of the state taken when the prefill
 * passed that position. Copies are taken at the ends of prompt chunks a fresh
 * prefill also cuts (so the state is bitwise a fresh prefill's there), at
 * most rec_snapshots of them: when full, those at odd multiples of the
 * spacing go and the spacing doubles, so they keep covering the whole
 * prompt, the nearest below any point at most one spacing away. */
#include <stdlib.h>
#include <string.h>

#include "session_obj.h"

/* Keeps the snapshots at positions <= len that are multiples of mult, in order. */
static void keep(sl_session *s, int32_t len, int32_t mult)
{
    const size_t b = (size_t)sl_kv_rec_total(&s->kv);
    int32_t k = 0;
    for (int32_t i = 0; i < s->snap_n; i++)
        if (s->snap_pos[i] <= len && s->snap_pos[i] % mult == 0) {
            if (k != i) memcpy((char *)s->snap + (size_t)k * b, (char *)s->snap + (size_t)i * b, b);
            s->snap_pos[k++] = s->snap_pos[i];
        }
    s->snap_n = k;
}

void sl_session_fresh_cut(sl_session *s, int32_t len)
{
    if (s->fresh_len > len) s->fresh_len = len;
    keep(s, len, 1);
    if (s->snap_n == 0) s->snap_every = 0;
}

void sl_session_snap_take(sl_session *s)
{
    const int32_t cap = s->m->p.rec_snapshots, pos = s->kv.n_past;
    if (!s->kv.rec || cap <= 0 || pos <= 0 || s->kv.rec_pos != pos) return;
    const size_t b = (size_t)sl_kv_rec_total(&s->kv);
    if (!s->snap) {   /* counted in the reserve (reserve.c); without it, no reuse, never a wrong one */
        s->snap = malloc((size_t)cap * b);
        s->snap_pos = malloc((size_t)cap * sizeof *s->snap_pos);
        if (!s->snap || !s->snap_pos) { sl_session_snap_free(s); return; }
    }
    if (s->snap_every == 0) s->snap_every = s->m->n_batch;
    if (s->snap_n > 0 && s->snap_pos[s->snap_n - 1] >= pos) return;   /* kept in order */
    while (s->snap_n == cap) {
        s->snap_every *= 2;
        keep(s, pos, s->snap_every);
    }
    if (pos % s->snap_every) return;
    sl_kv_rec_read(&s->kv, (char *)s->snap + (size_t)s->snap_n * b);
    s->snap_pos[s->snap_n++] = pos;
}

int32_t sl_session_snap_below(const sl_session *s, int32_t c)
{
    int32_t best = 0;
    for (int32_t i = 0; i < s->snap_n; i++)
        if (s->snap_pos[i] <= c && s->snap_pos[i] > best) best = s->snap_pos[i];
    return best;
}

void sl_session_snap_restore(sl_session *s, int32_t pos)
{
    const size_t b = (size_t)sl_kv_rec_total(&s->kv);
    for (int32_t i = 0; i < s->snap_n; i++)
        if (s->snap_pos[i] == pos) {
            sl_kv_rec_write(&s->kv, (char *)s->snap + (size_t)i * b, pos);
            return;
        }
}

void sl_session_snap_free(sl_session *s)
{
    free(s->snap);
    free(s->snap_pos);
    s->snap = NULL;
    s->snap_pos = NULL;
    s->snap_n = s->snap_every = 0;
}
