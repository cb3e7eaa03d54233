/* quantbench: throughput of the scalar reference quantizers and dequantizers
 * (quant/) per type, in one run. Median of several passes over a buffer of
 * N(0,1) floats larger than the caches. Usage: build/quantbench [Melems] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../quant/quant.h"
#include "perf.h"

int main(int argc, char **argv)
{
    long melems = argc > 1 ? atol(argv[1]) : 4;
    if (melems < 1 || melems > 1024) { fprintf(stderr, "usage: quantbench [Melems 1..1024]\n"); return 2; }
    int64_t n = melems << 20;
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    void *q = malloc(sizeof(float) * (size_t)n);
    if (!x || !y || !q) { fprintf(stderr, "quantbench: out of memory\n"); return 1; }
    uint64_t s = 0x5eed;
    for (int64_t i = 0; i < n; i++) {   /* splitmix64 + Box-Muller */
        uint64_t z1 = (s += 0x9e3779b97f4a7c15ull), z2 = (s += 0x9e3779b97f4a7c15ull);
        z1 = (z1 ^ (z1 >> 31)) * 0xbf58476d1ce4e5b9ull; z2 = (z2 ^ (z2 >> 31)) * 0xbf58476d1ce4e5b9ull;
        double u1 = ((z1 >> 11) + 1) * 0x1p-53, u2 = (z2 >> 11) * 0x1p-53;
        x[i] = (float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
    }
    static const int types[] = { SL_GGML_F16, SL_GGML_BF16, SL_GGML_Q4_0, SL_GGML_Q4_1, SL_GGML_Q5_0, SL_GGML_Q5_1, SL_GGML_Q8_0,
                                 SL_GGML_Q2_K, SL_GGML_Q3_K, SL_GGML_Q4_K, SL_GGML_Q5_K, SL_GGML_Q6_K, SL_GGML_Q8_K };
    enum { REPS = 3 };
    printf("quantbench: %lld elements, median of %d, 1 thread\n", (long long)n, REPS);
    printf("%-5s %14s %14s %12s\n", "type", "quant Melem/s", "deq Melem/s", "rel RMSE");
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        int t = types[k];
        double tq[REPS], td[REPS];
        for (int r = 0; r < REPS; r++) {
            double t0 = perf_now();
            if (sl_quant_quantize_row(t, x, q, n) < 0) { fprintf(stderr, "quantize %s failed\n", sl_gguf_type_name(t)); return 1; }
            double t1 = perf_now();
            if (sl_quant_dequantize_row(t, q, y, n) < 0) { fprintf(stderr, "dequantize %s failed\n", sl_gguf_type_name(t)); return 1; }
            double t2 = perf_now();
            tq[r] = t1 - t0; td[r] = t2 - t1;
        }
        perf_sort(tq, REPS);
        perf_sort(td, REPS);
        double se = 0, sx = 0;
        for (int64_t i = 0; i < n; i++) { double d = (double)y[i] - x[i]; se += d * d; sx += (double)x[i] * x[i]; }
        printf("%-5s %14.1f %14.1f %12.5f\n", sl_gguf_type_name(t), (double)n / tq[REPS / 2] * 1e-6,
               (double)n / td[REPS / 2] * 1e-6, sqrt(se / sx));
    }
    free(x); free(y); free(q);
    return 0;
}
