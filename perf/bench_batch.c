/* `sluice bench-batch`: ms per forward pass and aggregate tok/s for B
 * sequences decoded together (sl_batch), B from --seqs, against B = 1 in the
 * same run (rounds alternate the B values; medians); and ms per pass of k+1
 * rows of one sequence (--rows: a speculative verification pass of k drafts).
 * Per case also the streamer's view of a pass (medians): the time the
 * compute waited for weights (stall), the time reads were in flight (io
 * busy: near ms/pass when the disk never idles) and the MB read. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../engine/cli/cli.h"
#include "../engine/cli/cli_opts.h"
#include "../engine/sluice.h"
#include "../gguf/base/sl_status.h"
#include "../io/sluice_stream.h"
#include "../gguf/base/sl_platform.h"


static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int parse_list(const char *s, int *v, int cap)
{
    int n = 0;
    while (*s && n < cap) {
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s || x < 1 || x > 64) return -1;
        v[n++] = (int)x;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return n;
}

/* The streamer's counters of one pass into io: per case three planes of n
 * passes (stall ms, io-busy ms, MB read); at = case * n + pass. */
static void io_put(double *io, size_t n, size_t at, const sl_stream_stats *a, const sl_stream_stats *z)
{
    double *p = io + (at / n) * 3 * n + at % n;
    p[0] = z->stall_ms - a->stall_ms;
    p[n] = z->io_busy_ms - a->io_busy_ms;
    p[2 * n] = (double)(z->bytes_read - a->bytes_read) / 1e6;
}

static int bench_batch_main(int argc, char **argv)
{
    sl_cli_model_opts mo;
    sl_cli_model_opts_init(&mo);
    int seqs[16] = { 1, 2, 4, 8 }, ns = 4, rows[16] = { 0 }, nr = 0;
    long long steps = 4, reps = 3;
    bool profile = false;
    for (int i = 1; i < argc; i++) {
        int r = sl_cli_model_opt(&mo, argc, argv, &i, "bench-batch");
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--profile")) { profile = true; continue; }
        if (i + 1 >= argc) goto usage;
        const char *a = argv[i], *v = argv[++i];
        if (!strcmp(a, "--seqs")) { if ((ns = parse_list(v, seqs, 16)) < 1) goto usage; }
        else if (!strcmp(a, "--rows")) { if ((nr = parse_list(v, rows, 16)) < 1) goto usage; }
        else if (!strcmp(a, "--steps")) { if (sl_cli_int(v, 1, 1000, &steps)) goto usage; }
        else if (!strcmp(a, "--reps")) { if (sl_cli_int(v, 1, 100, &reps)) goto usage; }
        else goto usage;
    }
    if (!mo.path) goto usage;
    sl_model *m;
    if (sl_cli_open_model(&mo, "bench-batch", &m)) return 1;
    sl_model_info mi;
    sl_model_get_info(m, &mi);
    int maxb = 1;
    for (int i = 0; i < ns; i++) if (seqs[i] > maxb) maxb = seqs[i];
    sl_session **s = calloc((size_t)maxb, sizeof *s);
    double *ms = calloc((size_t)(ns + nr) * (size_t)(reps * steps), sizeof *ms);
    /* per pass: stall ms, io-busy ms, MB read (the streamer's counters) */
    double *io = calloc((size_t)(ns + nr) * (size_t)(reps * steps) * 3, sizeof *io);
    sl_stream *st = sl_model_stream(m);
    float *lg = malloc((size_t)65 * (size_t)mi.n_vocab * sizeof(float));
    sl_sampling sp;
    sl_sampling_init(&sp);
    sp.temp = 0;
    for (int i = 0; i < maxb; i++) {
        int32_t p[4] = { mi.bos_id >= 0 ? mi.bos_id : 1, 100 + i, 200 + 3 * i, 300 + 7 * i };
        if (sl_session_create(&s[i], m) || sl_session_set_sampling(s[i], &sp) || sl_session_feed_tokens(s[i], p, 4)) {
            fprintf(stderr, "bench-batch: %s\n", sl_last_error());
            return 1;
        }
    }
    printf("model %s, mode %s, %d threads; %lld rounds x %lld passes per case\n", mo.path,
           sl_stream_mode_name(mi.mode), mi.n_threads, reps, steps);
    int32_t tok[64], ids[65];
    for (long long r = 0; r < reps; r++) {
        for (int c = 0; c < ns; c++) {
            sl_batch *b;
            sl_batch_params bp;
            sl_batch_params_init(&bp);
            bp.max_seqs = seqs[c];
            if (sl_batch_create(&b, m, &bp)) { fprintf(stderr, "bench-batch: %s\n", sl_last_error()); return 1; }
            for (int i = 0; i < seqs[c]; i++) sl_batch_add(b, s[i]);
            bool prof = profile && r == reps - 1;   /* the last round's passes, led by s[0] */
            if (prof && sl_session_set_profile(s[0], true)) { fprintf(stderr, "bench-batch: %s\n", sl_last_error()); return 1; }
            for (long long t = 0; t < steps; t++) {
                sl_stream_stats a, z;
                sl_stream_get_stats(st, &a);
                double t0 = sl_now_ms();
                if (sl_batch_step(b, tok)) { fprintf(stderr, "bench-batch: %s\n", sl_batch_errmsg(b)); return 1; }
                size_t at = (size_t)c * (size_t)(reps * steps) + (size_t)(r * steps + t);
                ms[at] = sl_now_ms() - t0;
                sl_stream_get_stats(st, &z);
                io_put(io, (size_t)(reps * steps), at, &a, &z);
            }
            sl_batch_destroy(b);
            if (prof) {
                sl_profile pr;
                sl_session_get_profile(s[0], &pr);
                sl_session_set_profile(s[0], false);
                printf("profile of B=%d (last round; figures per row, x%d for a pass):\n", seqs[c], seqs[c]);
                sl_cli_print_profile(stdout, &pr, false);
            }
        }
        for (int c = 0; c < nr; c++) {   /* k+1 rows of sequence 0 in one pass */
            for (int j = 0; j < rows[c]; j++) ids[j] = 400 + j;
            for (long long t = 0; t < steps; t++) {
                sl_stream_stats a, z;
                sl_stream_get_stats(st, &a);
                double t0 = sl_now_ms();
                if (sl_session_eval(s[0], ids, rows[c], lg)) { fprintf(stderr, "bench-batch: %s\n", sl_session_errmsg(s[0])); return 1; }
                size_t at = (size_t)(ns + c) * (size_t)(reps * steps) + (size_t)(r * steps + t);
                ms[at] = sl_now_ms() - t0;
                sl_stream_get_stats(st, &z);
                io_put(io, (size_t)(reps * steps), at, &a, &z);
            }
        }
    }
    double base = 0;
    for (int c = 0; c < ns + nr; c++) {
        double *v = ms + (size_t)c * (size_t)(reps * steps);
        qsort(v, (size_t)(reps * steps), sizeof *v, cmp_d);
        double med = v[(reps * steps) / 2];
        double im[3];
        for (int f = 0; f < 3; f++) {
            double *w = io + ((size_t)c * (size_t)(reps * steps)) * 3 + (size_t)f * (size_t)(reps * steps);
            qsort(w, (size_t)(reps * steps), sizeof *w, cmp_d);
            im[f] = w[(reps * steps) / 2];
        }
        if (c < ns) {
            if (c == 0) base = med / seqs[0];
            printf("B=%-3d ms/pass %8.1f  aggregate %7.2f tok/s  x%.2f vs B=%d (pass ms x%.2f)", seqs[c], med,
                   seqs[c] * 1e3 / med, base * seqs[c] / med * 1.0, seqs[0], med / (base * seqs[0]));
        } else {
            printf("rows=%-3d (k=%d) ms/pass %8.1f", rows[c - ns], rows[c - ns] - 1, med);
        }
        printf("  | stall %6.1f ms, io busy %6.1f ms, read %7.1f MB\n", im[0], im[1], im[2]);
    }
    for (int i = 0; i < maxb; i++) sl_session_destroy(s[i]);
    free(s); free(ms); free(io); free(lg);
    sl_model_close(m);
    return 0;
usage:
    fprintf(stderr, "usage: sluice bench-batch -m MODEL [--seqs 1,2,4,8] [--rows 2,3,5,9] [--steps N] [--reps R]\n"
                    "                          [--profile] [model options]\n"
                    "  --profile   the decode profile of each B's passes in the last round (per row)\n");
    return 2;
}

SL_CLI_COMMAND(sl_cmd_bench_batch, "bench-batch", "ms per pass and aggregate tok/s for B sequences batched, k+1-row passes",
               bench_batch_main)
