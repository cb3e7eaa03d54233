/* The one spelling of the streamer's modes, I/O backends and eviction policies, for flags,
 * reports and JSON (enum order). */
#include "stream_internal.h"

#include <string.h>

static const char *const mode_names[] = { "auto", "resident", "stream", "mmap" };
static const char *const io_names[] = { "auto", "uring", "pread" };

static int parse(const char *const *names, int n, const char *s, int *out)
{
    for (int i = 0; s && i < n; i++)
        if (!strcmp(s, names[i])) { *out = i; return 0; }
    return SL_EINVAL;
}

const char *sl_stream_mode_name(int mode)
{
    return mode >= SL_MODE_AUTO && mode <= SL_MODE_MMAP ? mode_names[mode] : "?";
}

const char *sl_stream_io_name(int io)
{
    return io >= SL_IO_AUTO && io <= SL_IO_PREAD ? io_names[io] : "?";
}

int sl_stream_mode_parse(const char *s, int *mode) { return parse(mode_names, SL_MODE_MMAP + 1, s, mode); }
int sl_stream_io_parse(const char *s, int *io) { return parse(io_names, SL_IO_PREAD + 1, s, io); }

static const char *const policy_names[] = { "auto", "lru", "lfu", "decay" };

const char *sl_stream_policy_name(int policy)
{
    return policy >= SL_EVICT_AUTO && policy <= SL_EVICT_DECAY ? policy_names[policy] : "?";
}

int sl_stream_policy_parse(const char *s, int *policy)
{
    return parse(policy_names, SL_EVICT_DECAY + 1, s, policy);
}
