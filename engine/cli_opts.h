/* Options shared by `sluice run`, `chat` and `eval` (model loading, threads,
 * context, streamer mode). */
#ifndef SL_CLI_OPTS_H
#define SL_CLI_OPTS_H

#include "sluice.h"

typedef struct sl_cli_model_opts {
    const char *path;
    sl_model_params mp;
} sl_cli_model_opts;

void sl_cli_model_opts_init(sl_cli_model_opts *o);
/* If argv[*i] is a model option, consume it (and its value) and return 1;
 * 0 if it is not one; -1 after printing a message for a bad value. */
int sl_cli_model_opt(sl_cli_model_opts *o, int argc, char **argv, int *i, const char *cmd);
/* Help text of those options. */
extern const char sl_cli_model_opts_help[];
/* The KV cache options (cli_kv.c), called by sl_cli_model_opt; same returns. */
int sl_cli_kv_opt(sl_cli_model_opts *o, int argc, char **argv, int *i, const char *cmd);
#define SL_CLI_KV_OPTS_HELP \
    "  -ctk, --cache-type-k T KV cache type of K: f16 (default), q8_0, q4_0\n" \
    "  -ctv, --cache-type-v T KV cache type of V: f16 (default), q8_0, q4_0\n" \
    "  --keep N               context shift keeps BOS + N tokens (-1: the whole prompt; default 0)\n" \
    "  --no-context-shift     stop at a full context instead of dropping the older half\n"
/* Strict integer / float parsing: 0 ok, -1 bad. */
int sl_cli_int(const char *s, long long lo, long long hi, long long *out);
int sl_cli_float(const char *s, double *out);
/* Open with a message to stderr on failure (returns exit code 1 then, else 0). */
int sl_cli_open_model(const sl_cli_model_opts *o, const char *cmd, sl_model **m);

#endif
