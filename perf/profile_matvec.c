/* Matvec throughput per weight type (GB/s of weights consumed) through the
 * engine's kernels (sl_kern_matvec on the best ISA, all threads), for the
 * profile: the compute-side ceiling of resident decode. */
#include "../kernels/kernels.h"
#include "perf.h"

#include <stdlib.h>
#include <string.h>

static const struct { int type; const char *name; } mv_types[] = {
    { SL_GGML_Q4_0, "q4_0" }, { SL_GGML_Q8_0, "q8_0" }, { SL_GGML_Q2_K, "q2_K" }, { SL_GGML_Q3_K, "q3_K" },
    { SL_GGML_Q4_K, "q4_K" }, { SL_GGML_Q5_K, "q5_K" }, { SL_GGML_Q6_K, "q6_K" }, { SL_GGML_F16, "f16" },
};
#define MV_N (int)(sizeof mv_types / sizeof mv_types[0])
#define MV_COLS 4096
#define MV_BYTES (96u << 20)   /* well beyond the caches: measures streaming from RAM */

/* Writes `"q4_K": 1.2e10, ...` into json (inside an object) and a table to stdout. */
int perf_matvec_profile(double seconds, int n_threads, FILE *json, int print)
{
    const sl_kern *k = NULL;
    if (sl_kern_best_checked(&k) || !k) {
        fprintf(stderr, "profile: no kernels for this CPU\n");
        return -1;
    }
    sl_pool *pool = NULL;
    if (sl_pool_create(&pool, n_threads)) { fprintf(stderr, "profile: cannot start %d threads\n", n_threads); return -1; }
    double per = seconds / MV_N;
    if (print) printf("\nmatvec (%s, %d threads, %u MiB matrix, %d cols):\n| type | GB/s | rows/s |\n|---|---:|---:|\n",
                      k->name, n_threads, MV_BYTES >> 20, MV_COLS);
    float *x = malloc(sizeof(float) * MV_COLS * 16);
    int first = 1, rc = 0;
    for (int i = 0; i < MV_N && x; i++) {
        int t = mv_types[i].type;
        if (!k->vec_dot[t]) continue;
        size_t rb = sl_gguf_row_bytes(t, MV_COLS);
        if (!rb) continue;
        int64_t rows = (int64_t)(MV_BYTES / rb);
        uint8_t *W = malloc((size_t)rows * rb);
        void *act = malloc(sl_kern_act_bytes(t, MV_COLS, 1));
        float *y = malloc(sizeof(float) * (size_t)rows);
        if (!W || !act || !y) { free(W); free(act); free(y); rc = -1; break; }
        /* 16 genuinely quantized rows, repeated: content does not change the speed. */
        uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1);
        for (int j = 0; j < MV_COLS * 16; j++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x[j] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5);
        }
        for (int r = 0; r < 16; r++)
            if (sl_quant_quantize_row(t, x + r * MV_COLS, W + (size_t)r * rb, MV_COLS) < 0) { rc = -1; break; }
        for (int64_t r = 16; r < rows; r++) memcpy(W + (size_t)r * rb, W + (size_t)(r % 16) * rb, rb);
        sl_kern_quantize_act(k, t, x, MV_COLS, 1, act);
        sl_kern_matvec(k, pool, t, W, rows, MV_COLS, act, y);   /* warm-up */
        int iters = 0;
        double t0 = perf_now(), dt = 0;
        do {
            if (sl_kern_matvec(k, pool, t, W, rows, MV_COLS, act, y)) { rc = -1; break; }
            iters++;
            dt = perf_now() - t0;
        } while (dt < per);
        double bw = (double)rows * (double)rb * iters / dt;
        if (print) printf("| %s | %.2f | %.3g |\n", mv_types[i].name, bw / 1e9, (double)rows * iters / dt);
        if (json) fprintf(json, "%s\"%s\": %.0f", first ? "" : ", ", mv_types[i].name, bw);
        first = 0;
        free(W); free(act); free(y);
    }
    free(x);
    sl_pool_destroy(pool);
    return rc;
}
