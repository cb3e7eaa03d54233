/* The one spelling of the expert cache's eviction policies, for flags, reports
 * and JSON (enum order). Modes and backends are named in their tables
 * (stream_modes.c, stream_io.c). */
#include "sluice_stream.h"
#include "../gguf/base/sl_status.h"

#include <string.h>

static const char *const policy_names[] = { "auto", "lru", "lfu", "decay" };
#define N_POLICIES (int)(sizeof policy_names / sizeof *policy_names)
_Static_assert(N_POLICIES == SL_EVICT_DECAY + 1, "one name per enum sl_expert_policy");

const char *sl_stream_policy_name(int policy)
{
    return policy >= 0 && policy < N_POLICIES ? policy_names[policy] : "?";
}

int sl_stream_policy_parse(const char *s, int *policy)
{
    for (int i = 0; s && i < N_POLICIES; i++)
        if (!strcmp(s, policy_names[i])) { *policy = i; return 0; }
    return SL_EINVAL;
}
