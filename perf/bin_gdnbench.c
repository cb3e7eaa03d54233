/* gdnbench: prompt speed of a model with Gated DeltaNet layers, the delta
 * rule token by token against chunkwise (kernels.h delta_chunk), in one run:
 *   - kernel: one v head of dk x dv over n tokens, one thread, the level's
 *     delta_rule n times against delta_chunk in chunks of SL_DELTA_CHUNK;
 *   - model: a prompt of P tokens fed to a fresh session, the same binary
 *     with the forward's chunk threshold raised above any pass (token by
 *     token) or as built; alternated, REPS times, medians and [min-max];
 *     after each chunkwise prompt, N greedy decode steps (tg N);
 *   -c: the chunkwise prompt only (no token-by-token runs, no warm-up pass).
 * Usage: gdnbench -m MODEL [-t threads] [-p prompt] [-n decode] [-r reps]
 *        [-b n_batch] [-c] [--mode resident|stream|mmap] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/forward_gdn.h"
#include "../engine/session_obj.h"
#include "../gguf/base/sl_platform.h"
#include "../kernels/kernels.h"
#include "perf.h"

#define MAXR 31

static void ids_of(int32_t *ids, int n, int32_t n_vocab)
{
    uint64_t x = 12345;
    ids[0] = 1;
    for (int i = 1; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = 3 + (int32_t)((x >> 33) % (uint64_t)(n_vocab - 3));
    }
}

static void put(const char *what, double *v, int n, double per)
{
    perf_sort(v, n);
    printf("  %-28s median %9.2f ms  [%.2f-%.2f]  %8.1f tok/s\n", what, v[n / 2], v[0], v[n - 1],
           per * 1000.0 / v[n / 2]);
}

/* ms per n tokens of one head, token by token (chunked = 0) or chunkwise */
static double kernel_ms(const sl_kern *k, int chunked, int dk, int dv, int n, float *S, const float *x,
                        const float *bg, float *o, float *ws)
{
    const int64_t ld = 2 * dk + dv;
    double t0 = sl_now_ms();
    if (chunked)
        for (int t = 0; t < n; t += SL_DELTA_CHUNK)
            k->delta_chunk(S, x + t * ld, x + t * ld + dk, x + t * ld + 2 * dk, ld, bg + 2 * t, bg + 2 * t + 1, 2,
                           0.088f, n - t < SL_DELTA_CHUNK ? n - t : SL_DELTA_CHUNK, dk, dv, o + (int64_t)t * dv,
                           dv, ws);
    else
        for (int t = 0; t < n; t++)
            k->delta_rule(S, x + t * ld, x + t * ld + dk, x + t * ld + 2 * dk, bg[2 * t], 0.97f, 0.088f, dk, dv,
                          o + (int64_t)t * dv, ws);
    return sl_now_ms() - t0;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *mode = "resident";
    int nth = 2, P = 512, reps = 3, nb = 0, N = 16, only = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-c")) { only = 1; continue; }
        if (!v) { fprintf(stderr, "gdnbench: %s needs a value\n", a); return 2; }
        if (!strcmp(a, "-m")) path = v;
        else if (!strcmp(a, "-t")) nth = atoi(v);
        else if (!strcmp(a, "-p")) P = atoi(v);
        else if (!strcmp(a, "-r")) reps = atoi(v);
        else if (!strcmp(a, "-n")) N = atoi(v);
        else if (!strcmp(a, "-b")) nb = atoi(v);
        else if (!strcmp(a, "--mode")) mode = v;
        else {
            fprintf(stderr, "usage: gdnbench -m MODEL [-t 2] [-p 512] [-n 16] [-r 3] [-b n_batch] [-c] [--mode M]\n");
            return 2;
        }
        i++;
    }
    if (!path || nth < 1 || P < 1 || N < 0 || reps < 1 || reps > MAXR) { fprintf(stderr, "gdnbench: bad options\n"); return 2; }

    /* kernel: the 35B's head, 128 x 128, one thread */
    const sl_kern *k = sl_kern_best();
    enum { DK = 128, DV = 128, NT = 512 };
    float *S = calloc(DK * DV, sizeof *S), *x = malloc((size_t)NT * (2 * DK + DV) * sizeof *x);
    float *bg = malloc(2 * NT * sizeof *bg), *o = malloc((size_t)NT * DV * sizeof *o);
    float *ws = malloc((size_t)sl_kern_delta_chunk_ws(DK, DV) * sizeof *ws);
    if (!S || !x || !bg || !o || !ws) { fprintf(stderr, "gdnbench: out of memory\n"); return 1; }
    for (int i = 0; i < NT * (2 * DK + DV); i++) x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    for (int t = 0; t < NT; t++) { bg[2 * t] = 0.5f; bg[2 * t + 1] = -0.03f; }
    double kt[MAXR], kc[MAXR];
    for (int r = 0; r < reps; r++) {
        kt[r] = kernel_ms(k, 0, DK, DV, NT, S, x, bg, o, ws);
        kc[r] = kernel_ms(k, 1, DK, DV, NT, S, x, bg, o, ws);
    }
    printf("gdnbench: level %s, one head %dx%d over %d tokens, 1 thread\n", sl_isa_name(k->isa), DK, DV, NT);
    put("delta_rule token by token", kt, reps, NT);
    put("delta_chunk chunkwise", kc, reps, NT);
    free(S); free(x); free(bg); free(o); free(ws);

    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.n_threads = nth;
    mp.n_batch = nb;
    mp.n_ctx = P + N + 16;
    mp.mode = !strcmp(mode, "stream") ? SL_MODE_STREAM : !strcmp(mode, "mmap") ? SL_MODE_MMAP : SL_MODE_RESIDENT;
    sl_model *m;
    if (sl_model_open(&m, path, &mp)) { fprintf(stderr, "gdnbench: %s\n", sl_last_error()); return 1; }
    sl_session *s;
    int32_t *ids = malloc((size_t)P * sizeof *ids);
    if (!ids || sl_session_create(&s, m)) { fprintf(stderr, "gdnbench: %s\n", sl_last_error()); return 1; }
    ids_of(ids, P, m->d.n_vocab);
    double mt[MAXR + 1], mc[MAXR + 1], md[MAXR + 1];   /* [0]: the warm-up pass */
    for (int r = only; r <= reps; r++)   /* a first unrecorded pass warms the caches */
        for (int j = only; j < 2; j++) {
            const int chunked = only || (r + j) % 2;
            m->fw.gdn_chunk_min = chunked ? SL_GDN_CHUNK_MIN : INT32_MAX;
            sl_session_reset(s);
            double t0 = sl_now_ms();
            if (sl_session_feed_tokens(s, ids, P)) { fprintf(stderr, "gdnbench: %s\n", sl_session_errmsg(s)); return 1; }
            double ms = sl_now_ms() - t0;
            (chunked ? mc : mt)[r] = ms;
            if (!chunked || r == 0) continue;
            t0 = sl_now_ms();
            for (int i = 0; i < N; i++) {
                int32_t tok;
                if (sl_session_step(s, &tok)) { fprintf(stderr, "gdnbench: %s\n", sl_session_errmsg(s)); return 1; }
            }
            md[r] = sl_now_ms() - t0;
        }
    printf("gdnbench: %s, %s, %d threads, n_batch %d, pp%d (alternated, %d reps)\n", path, mode, nth, m->n_batch, P,
           reps);
    if (!only) put("prompt, token by token", mt + 1, reps, P);
    put("prompt, chunkwise", mc + 1, reps, P);
    if (N > 0) {
        char what[64];
        snprintf(what, sizeof what, "decode tg%d", N);
        put(what, md + 1, reps, N);
    }
    free(ids);
    sl_session_destroy(s);
    sl_model_close(m);
    return 0;
}
