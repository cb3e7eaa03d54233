/* The one progress display of the command (cli_progress.h). */
#include "cli_progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../gguf/base/sl_platform.h"

static bool g_quiet, g_json;

void sl_cli_progress_set_quiet(bool on) { g_quiet = on; }
void sl_cli_progress_set_json(bool on) { g_json = on; }

int sl_cli_progress_args(int argc, char **argv)
{
    int n = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quiet")) g_quiet = true;
        else argv[n++] = argv[i];
    }
    argv[n] = NULL;
    return n;
}

void sl_cli_progress_begin(sl_cli_progress *p, const char *what, uint64_t total, bool bytes)
{
    memset(p, 0, sizeof *p);
    snprintf(p->what, sizeof p->what, "%s", what);
    p->bytes = bytes;
    p->total = total;
    p->t0 = sl_now_ms();
    p->out = g_quiet ? 0 : g_json ? 2 : isatty(2) ? 1 : 0;
}

static void show(sl_cli_progress *p, bool final)
{
    double el = (sl_now_ms() - p->t0) / 1e3;
    double rate = el > 0 ? (double)p->done / el : 0;
    double eta = rate > 0 && p->total > p->done ? (double)(p->total - p->done) / rate : 0;
    double frac = p->total ? (double)p->done / (double)p->total : 0;
    if (p->out == 2) {
        char what[2 * sizeof p->what];   /* a JSON string: quotes and backslashes escaped, controls dropped */
        size_t n = 0;
        for (const char *c = p->what; *c; c++) {
            if (*c == '"' || *c == '\\') what[n++] = '\\';
            if ((unsigned char)*c >= 0x20) what[n++] = *c;
        }
        what[n] = 0;
        fprintf(stderr, "{\"event\":\"progress\",\"what\":\"%s\",\"unit\":\"%s\",\"done\":%llu,\"total\":%llu,"
                        "\"rate_per_s\":%.1f,\"elapsed_s\":%.2f,\"eta_s\":%.1f,\"final\":%s}\n",
                what, p->bytes ? "bytes" : "items", (unsigned long long)p->done, (unsigned long long)p->total,
                rate, el, eta, final ? "true" : "false");
        return;
    }
    char bar[21];
    for (int i = 0; i < 20; i++) bar[i] = i < (int)(frac * 20) ? '#' : '.';
    bar[20] = 0;
    if (p->bytes)
        fprintf(stderr, "\r\033[K%s [%s] %5.1f%% %.2f/%.2f GB %.0f MB/s ETA %.0fs", p->what, bar, frac * 100,
                p->done / 1e9, p->total / 1e9, rate / 1e6, eta);
    else
        fprintf(stderr, "\r\033[K%s [%s] %llu/%llu %.2f/s ETA %.0fs", p->what, bar, (unsigned long long)p->done,
                (unsigned long long)p->total, rate, eta);
    p->drawn = true;
}

void sl_cli_progress_update(sl_cli_progress *p, uint64_t done)
{
    p->done = done;
    if (!p->out) return;
    double now = sl_now_ms();
    if (p->last > 0 && (done < p->total || !p->total) && now - p->last < (p->out == 2 ? 1000 : 200)) return;
    p->last = now;
    show(p, false);
}

void sl_cli_progress_clear(sl_cli_progress *p)
{
    if (p->drawn) fputs("\r\033[K", stderr);
    p->drawn = false;
}

void sl_cli_progress_end(sl_cli_progress *p)
{
    if (p->out == 2 && p->last > 0) show(p, true);   /* work that reported nothing stays silent */
    sl_cli_progress_clear(p);
    p->out = 0;
}

void sl_cli_progress_cb(void *ctx, uint64_t done, uint64_t total)
{
    sl_cli_progress *p = ctx;
    p->total = total;
    sl_cli_progress_update(p, done);
}
