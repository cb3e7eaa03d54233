/* `sluice` entry point: dispatches to registered subcommands. */
#include "cli.h"
#include "cli_progress.h"

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

static int cmp_cmd(const void *a, const void *b)
{
    return strcmp((*(const sl_cli_cmd *const *)a)->name, (*(const sl_cli_cmd *const *)b)->name);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: sluice COMMAND [ARGS]\n\ncommands:\n");
    for (int i = 0; i < n_cmds; i++) fprintf(f, "  %-10s %s\n", cmds[i]->name, cmds[i]->summary);
    fprintf(f, "\n`sluice COMMAND --help` for a command's options; --quiet (any command): no progress line.\n");
}

int main(int argc, char **argv)
{
    qsort(cmds, (size_t)n_cmds, sizeof cmds[0], cmp_cmd);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (int i = 0; i < n_cmds; i++)
        if (!strcmp(cmds[i]->name, argv[1])) return cmds[i]->main(sl_cli_progress_args(argc - 1, argv + 1), argv + 1);
    fprintf(stderr, "sluice: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
