/* The modes' table: names (flags, reports, bindings) and operations. */
#include "stream_modes.h"
#include "../gguf/base/sl_status.h"

#include <string.h>

/* indexed by enum sl_stream_mode; AUTO is the planner's choice, not a mode of its own */
static const struct { const char *name; const sl_stream_mode_ops *ops; } modes[SL_MODE_COUNT] = {
    [SL_MODE_AUTO] = { "auto", NULL },
    [SL_MODE_RESIDENT] = { "resident", &sl_stream_resident_ops },
    [SL_MODE_STREAM] = { "stream", &sl_stream_ring_ops },
    [SL_MODE_MMAP] = { "mmap", &sl_stream_mmap_ops },
};

const char *sl_stream_mode_name(int mode)
{
    return mode >= 0 && mode < SL_MODE_COUNT ? modes[mode].name : "?";
}

int sl_stream_mode_parse(const char *s, int *mode)
{
    for (int i = 0; s && i < SL_MODE_COUNT; i++)
        if (!strcmp(s, modes[i].name)) { *mode = i; return 0; }
    return SL_EINVAL;
}

const sl_stream_mode_ops *sl_stream_mode_ops_of(int mode) { return modes[mode].ops; }
