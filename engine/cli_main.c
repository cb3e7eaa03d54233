/* `sluice` entry point: dispatches to registered subcommands. */
#include "cli.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SL_CLI_MAX 64

static const sl_cli_cmd *cmds[SL_CLI_MAX];
static int n_cmds;

void sl_cli_register(const sl_cli_cmd *cmd)
{
    if (n_cmds < SL_CLI_MAX) cmds[n_cmds++] = cmd;
}

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

static int cmp_cmd(const void *a, const void *b)
{
    return strcmp((*(const sl_cli_cmd *const *)a)->name, (*(const sl_cli_cmd *const *)b)->name);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: sluice COMMAND [ARGS]\n\ncommands:\n");
    for (int i = 0; i < n_cmds; i++) fprintf(f, "  %-10s %s\n", cmds[i]->name, cmds[i]->summary);
    fprintf(f, "\n`sluice COMMAND --help` for a command's options.\n");
}

int main(int argc, char **argv)
{
    qsort(cmds, (size_t)n_cmds, sizeof cmds[0], cmp_cmd);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (int i = 0; i < n_cmds; i++)
        if (!strcmp(cmds[i]->name, argv[1])) return cmds[i]->main(argc - 1, argv + 1);
    fprintf(stderr, "sluice: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
