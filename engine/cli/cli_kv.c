/* The KV cache options of the generation commands and `plan` (llama.cpp's
 * spellings): cache types and context shift. */
#include <stdio.h>
#include <string.h>

#include "cli_opts.h"
#include "../../gguf/gguf_type.h"

static int parse_type(const char *v, int32_t *out)
{
    static const int types[] = { SL_GGML_F16, SL_GGML_Q8_0, SL_GGML_Q4_0 };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(v, sl_gguf_type_name((uint32_t)types[i]))) { *out = types[i]; return 0; }
    return -1;
}

int sl_cli_kv_opt(sl_cli_model_opts *o, int argc, char **argv, int *i, const char *cmd)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--no-context-shift")) { o->mp.context_shift = false; return 1; }
    bool tk = !strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k");
    bool tv = !strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v");
    bool keep = !strcmp(a, "--keep");
    if (!tk && !tv && !keep) return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "sluice %s: option %s needs a value\n", cmd, a);
        return -1;
    }
    const char *v = argv[++*i];
    long long n;
    if (tk && !parse_type(v, &o->mp.type_k)) return 1;
    if (tv && !parse_type(v, &o->mp.type_v)) return 1;
    if (keep && !sl_cli_int(v, -1, 1 << 24, &n)) { o->mp.n_keep = (int32_t)n; return 1; }
    fprintf(stderr, "sluice %s: invalid value '%s' for %s%s\n", cmd, v, a,
            keep ? "" : " (f16, q8_0 or q4_0)");
    return -1;
}
