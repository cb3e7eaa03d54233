/* Progress of long work (mkmodel, resident load, bench sweeps, profile) on
 * stderr: one line redrawn in place - what, done/total, rate, ETA - when
 * stderr is a terminal; with a command's --json, one JSON object a line
 * ({"event":"progress", ...}) whatever stderr is; nothing with --quiet. At
 * most five redraws a second (JSON: one) plus the last; end() clears the
 * line, so the command's own output is never mixed with it. */
#ifndef SL_CLI_PROGRESS_H
#define SL_CLI_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sl_cli_progress {
    char what[96];          /* "mkmodel: writing x.gguf" */
    bool bytes;             /* done/total in bytes (GB, MB/s), else items (N/M, per second) */
    int out;                /* 0 nothing, 1 the terminal line, 2 JSON events */
    uint64_t total, done;
    double t0, last;
    bool drawn;             /* a line is on the terminal */
} sl_cli_progress;

/* --quiet (taken out of every command's arguments by cli_main.c) */
void sl_cli_progress_set_quiet(bool on);
/* a command's --json: JSON events instead of the terminal line */
void sl_cli_progress_set_json(bool on);
/* Strips --quiet from argv[1..argc) (sets it); returns the new argc. */
int sl_cli_progress_args(int argc, char **argv);

void sl_cli_progress_begin(sl_cli_progress *p, const char *what, uint64_t total, bool bytes);
void sl_cli_progress_update(sl_cli_progress *p, uint64_t done);
/* Takes the line off the terminal before other output (the next update redraws it). */
void sl_cli_progress_clear(sl_cli_progress *p);
void sl_cli_progress_end(sl_cli_progress *p);
/* The library's form (sl_model_params.progress); ctx: an sl_cli_progress begun with total 0
 * (the library's total is taken at the first call). */
void sl_cli_progress_cb(void *ctx, uint64_t done, uint64_t total);

#endif
