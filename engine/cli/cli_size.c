/* Size arguments ("2.5G", "800M", "4096", "1.5GiB"), shared by the `sluice`
 * subcommands and the standalone perf tools (which link this object alone). */
#include "cli.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>

int sl_cli_parse_size(const char *s, unsigned long long *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0) || !isfinite(v)) return -1;
    double mul = 1;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K': mul = 1024.0; end++; break;
    case 'M': mul = 1024.0 * 1024; end++; break;
    case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
    case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: return -1;
    }
    if (*end == 'i' || *end == 'I') end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0') return -1;
    double bytes = v * mul;
    if (bytes >= 18446744073709551615.0) return -1;
    *out = (unsigned long long)bytes;
    return 0;
}
