/* Options shared by `sluice run`, `chat` and `eval` (model loading, threads,
 * context, streamer mode, KV cache). */
#ifndef SL_CLI_OPTS_H
#define SL_CLI_OPTS_H

#include "../sluice.h"

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
/* Strict integer / float parsing: 0 ok, -1 bad. */
int sl_cli_int(const char *s, long long lo, long long hi, long long *out);
int sl_cli_float(const char *s, double *out);
/* Speculative decoding (cli_spec.c): --spec ngram|draft|off, --draft-model FILE
 * (implies --spec draft), --spec-k N. */
typedef struct sl_cli_spec_opts {
    int kind;                   /* enum sl_spec_kind; -1 until given */
    const char *draft_path;
    int32_t k_max;              /* 0: by mode */
} sl_cli_spec_opts;
void sl_cli_spec_opts_init(sl_cli_spec_opts *o);
/* As sl_cli_model_opt: 1 consumed, 0 not one, -1 bad value (message printed). */
int sl_cli_spec_opt(sl_cli_spec_opts *o, int argc, char **argv, int *i, const char *cmd);
/* After parsing: settles the kind; -1 (message printed) for a contradiction.
 * mp (may be NULL): the target's params, told to keep the MTP block for --spec mtp. */
int sl_cli_spec_check(sl_cli_spec_opts *o, sl_model_params *mp, const char *cmd);
/* Opens the draft model when the kind is draft (else *dm = NULL). Exit code 0 / 1. */
int sl_cli_spec_open_draft(const sl_cli_spec_opts *o, sl_model *target, const char *cmd, sl_model **dm);
/* The spec of session s (and its draft session of dm); nothing when off. Exit code 0 / 1. */
int sl_cli_spec_create(const sl_cli_spec_opts *o, sl_session *s, sl_model *dm, sl_session **ds, sl_spec **sp,
                       const char *cmd);
/* Acceptance, tokens per pass, time in the draft model: a line (or JSON object) on stderr. */
void sl_cli_spec_print_stats(const sl_spec *sp, bool json);
#define SL_CLI_SPEC_OPTS_HELP \
    "  --spec ngram|draft|mtp|off speculative decoding: drafts from n-gram lookup in the context,\n" \
    "                         a draft model or the model's own MTP (NextN) block; the target\n" \
    "                         verifies k+1 tokens per pass (default off)\n" \
    "  --draft-model FILE     draft model with the target's vocabulary, resident (implies --spec draft)\n" \
    "  --spec-k N, --draft-max N  drafts per pass at most, 1..8 (default: 8 streamed, 4 resident; adapts)\n"
/* Open with a message to stderr on failure (returns exit code 1 then, else 0). */
int sl_cli_open_model(const sl_cli_model_opts *o, const char *cmd, sl_model **m);
/* All the token ids of text (malloc'd in *ids; the count, or SL_E* with
 * sl_model_errmsg set). Sized for any text: SPM byte fallback turns an invalid
 * byte into three byte tokens, more ids than bytes. */
int sl_cli_tokenize(sl_model *m, const char *text, size_t len, bool add_bos, bool parse_special, int32_t **ids);
/* The same with control tokens read only outside the n_plain byte ranges
 * plain (sl_model_tokenize_plain: the messages of a rendered chat) when plain
 * is not NULL. */
int sl_cli_tokenize_spans(sl_model *m, const char *text, size_t len, bool add_bos, bool parse_special,
                          const size_t *plain, size_t n_plain, int32_t **ids);

#endif
