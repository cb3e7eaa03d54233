/* The modes' table: names (flags, reports, bindings) and operations. */
#include "stream_modes.h"
#include "stream_names.h"

#include <stddef.h>

/* indexed by enum sl_stream_mode; AUTO is the planner's choice, not a mode of its own */
static const sl_named modes[SL_MODE_COUNT] = {
    [SL_MODE_AUTO] = { "auto", NULL },
    [SL_MODE_RESIDENT] = { "resident", &sl_stream_resident_ops },
    [SL_MODE_STREAM] = { "stream", &sl_stream_ring_ops },
    [SL_MODE_MMAP] = { "mmap", &sl_stream_mmap_ops },
};

const sl_stream_mode_ops *sl_stream_mode_ops_of(int mode) { return modes[mode].row; }

const char *sl_stream_mode_name(int mode) { return sl_named_name(modes, SL_MODE_COUNT, mode); }
int sl_stream_mode_parse(const char *s, int *mode) { return sl_named_parse(modes, SL_MODE_COUNT, s, mode); }
