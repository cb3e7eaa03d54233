/* Names of enum values (stream_names.h) and the one spelling of the expert
 * cache's eviction policies, for flags, reports and JSON. Modes and backends
 * are named in their tables (stream_modes.c, stream_io.c). */
#include "stream_names.h"
#include "sluice_stream.h"
#include "../gguf/base/sl_status.h"

#include <stddef.h>
#include <string.h>

const char *sl_named_name(const sl_named *t, int n, int v) { return v >= 0 && v < n ? t[v].name : "?"; }

int sl_named_parse(const sl_named *t, int n, const char *s, int *v)
{
    for (int i = 0; s && i < n; i++)
        if (!strcmp(s, t[i].name)) { *v = i; return 0; }
    return SL_EINVAL;
}

/* indexed by enum sl_expert_policy */
static const sl_named policies[] = { { "auto", NULL }, { "lru", NULL }, { "lfu", NULL }, { "decay", NULL } };
#define N_POLICIES (int)(sizeof policies / sizeof *policies)
_Static_assert(N_POLICIES == SL_EVICT_DECAY + 1, "one name per enum sl_expert_policy");

const char *sl_stream_policy_name(int policy) { return sl_named_name(policies, N_POLICIES, policy); }
int sl_stream_policy_parse(const char *s, int *policy) { return sl_named_parse(policies, N_POLICIES, s, policy); }
