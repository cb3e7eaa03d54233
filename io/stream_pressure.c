/* Run-time resizing for the memory-pressure ladder (engine/pressure.c):
 * unpin / re-pin one layer unit, shrink / grow the slots in use. The mode does
 * the work (its ops table); this file checks the arguments and keeps the plan
 * the callers print in step with what is held. */
#include "stream_core.h"
#include "stream_loader.h"
#include "../gguf/base/sl_internal.h"

#include <stdio.h>

static int fail(sl_stream *s, int st)
{
    snprintf(s->err, sizeof s->err, "%s", sl_last_error());
    return st;
}

int32_t sl_stream_max_slots(const sl_stream *s)
{
    return s->max_slots ? s->max_slots : s->plan.n_slots;
}

int sl_stream_set_pinned(sl_stream *s, int32_t unit, bool pinned)
{
    if (!s) return SL_EINVAL;
    if (!s->ops->set_pinned)
        return fail(s, sl_err_set(SL_ENOSYS, "set_pinned: not in %s mode", sl_stream_mode_name(s->plan.mode)));
    if (unit < 0 || unit >= s->um.n_units)
        return fail(s, sl_err_set(SL_EINVAL, "set_pinned: unit %d out of range", (int)unit));
    sl_unit *un = &s->um.units[unit];
    if (un->unused) return fail(s, sl_err_set(SL_EINVAL, "set_pinned: unit %d is outside the layer subset", (int)unit));
    if (un->info.pinned == pinned) return 0;
    if (un->acquired) return fail(s, sl_err_set(SL_EBUSY, "set_pinned: unit %d is acquired", (int)unit));
    int rc = s->ops->set_pinned(s, unit, pinned);
    if (rc) return fail(s, rc);
    uint64_t b = un->aend - un->abeg;
    s->plan.n_pinned += pinned ? 1 : -1;
    s->plan.pinned_bytes = pinned ? s->plan.pinned_bytes + b : s->plan.pinned_bytes - b;
    s->plan.streamed_bytes_per_token = pinned ? s->plan.streamed_bytes_per_token - un->info.bytes
                                              : s->plan.streamed_bytes_per_token + un->info.bytes;
    return 0;
}

int sl_stream_set_slots(sl_stream *s, int32_t n_slots, bool *returned)
{
    if (returned) *returned = false;
    if (!s) return SL_EINVAL;
    if (!s->ops->set_slots)
        return fail(s, sl_err_set(SL_ENOSYS, "set_slots: not in %s mode", sl_stream_mode_name(s->plan.mode)));
    if (!s->max_slots) s->max_slots = s->plan.n_slots;
    if (n_slots < 1 || n_slots > s->max_slots)
        return fail(s, sl_err_set(SL_EINVAL, "set_slots: %d outside 1..%d", (int)n_slots, (int)s->max_slots));
    if (n_slots == s->plan.n_slots) return 0;
    int rc = s->ops->set_slots(s, n_slots);
    if (rc) return fail(s, rc);
    if (returned) *returned = n_slots < s->plan.n_slots && !sl_loader_fixed(s->L);
    s->plan.n_slots = n_slots;
    return 0;
}
