/* The `sluice` command's subcommand table. Subcommands live next to their
 * code (engine/cli/cli_X.c, perf/X.c) and register themselves at start-up, so
 * perf/ can add commands without engine/ including perf/. */
#ifndef SL_CLI_H
#define SL_CLI_H

typedef struct sl_cli_cmd {
    const char *name;       /* "info" */
    const char *summary;    /* one line for `sluice --help` */
    int (*main)(int argc, char **argv);   /* argv[0] is the subcommand name; returns exit code */
} sl_cli_cmd;

void sl_cli_register(const sl_cli_cmd *cmd);

#define SL_CLI_COMMAND(ident, name_, summary_, fn_)                              \
    static const sl_cli_cmd ident = { name_, summary_, fn_ };                    \
    __attribute__((constructor)) static void ident##_register(void)              \
    { sl_cli_register(&ident); }

/* Parse sizes like "2.5G", "800M", "4096", "1.5GiB" into bytes; 0 ok, -1 bad. */
int sl_cli_parse_size(const char *s, unsigned long long *out);

/* --profile output (engine/cli/cli_profile.c): a table, or one JSON line. */
#include <stdbool.h>
#include <stdio.h>
struct sl_profile;
void sl_cli_print_profile(FILE *f, const struct sl_profile *p, bool json);

#endif
