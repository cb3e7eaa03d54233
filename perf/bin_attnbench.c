/* attnbench: decode attention (one query row, Llama-3-8B shape: 32 heads,
 * 8 kv heads, head_dim 128) over an F16 KV cache, per ISA level, 1 and 2
 * threads, interleaved ([pos][kv_head][d]) and head-major ([kv_head][pos][d])
 * cache layouts. Cold caches like a real decode step: the call cycles over
 * enough layers' caches (>= 256 MiB) that each one comes from DRAM.
 * Prints the median per call and K+V bytes / time.
 * Usage: build/attnbench [n_ctx ...]   (default 2048 8192) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../kernels/kernels.h"
#include "perf.h"

#define NH 32
#define NKV 8
#define HD 128
#define REPS 15

static int bench_ctx(int32_t ctx)
{
    const int64_t kvd = (int64_t)NKV * HD, per = kvd * ctx;       /* elements per layer */
    const double bytes = 2.0 * (double)per * sizeof(sl_f16);     /* K + V */
    int nl = (int)ceil(256.0 * 1048576.0 / bytes);
    sl_f16 *k = malloc((size_t)(per * nl) * sizeof(sl_f16)), *v = malloc((size_t)(per * nl) * sizeof(sl_f16));
    float *q = malloc(NH * HD * sizeof(float)), *o = malloc(NH * HD * sizeof(float));
    if (!k || !v || !q || !o) { fprintf(stderr, "attnbench: out of memory\n"); return 1; }
    uint64_t s = 0x5eed;
    for (int64_t i = 0; i < per * nl; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        k[i] = sl_f32_to_f16((float)((s >> 40) & 0xffff) / 32768.0f - 1.0f);
        v[i] = sl_f32_to_f16((float)((s >> 20) & 0xffff) / 32768.0f - 1.0f);
    }
    for (int i = 0; i < NH * HD; i++) q[i] = (float)((i * 37) % 101) / 25.0f - 2.0f;
    printf("n_ctx %d: K+V %.1f MiB per layer, cycling over %d layers\n", ctx, bytes / 1048576.0, nl);
    printf("%-12s %-11s %7s %10s %9s %9s\n", "layout", "isa", "threads", "median ms", "GB/s", "vs scalar");
    for (int hm = 0; hm < 2; hm++) {
        for (int nt = 1; nt <= 2; nt++) {
            sl_pool *p;
            if (sl_pool_create(&p, nt)) { fprintf(stderr, "attnbench: pool\n"); return 1; }
            void *ws = malloc(sl_kern_attn_scratch(nt, HD, ctx));
            double t_scalar = 0;
            for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
                const sl_kern *kk = sl_kern_for(isa);
                if (!kk) continue;
                int reps = isa == SL_ISA_SCALAR ? 3 : REPS;
                double t[REPS];
                for (int r = 0; r < reps; r++) {
                    int64_t off = (int64_t)(r % nl) * per;
                    sl_attn a = { .q = q, .q_stride = NH * HD, .k = k + off, .v = v + off,
                                  .kv_stride = hm ? HD : kvd, .out = o, .out_stride = NH * HD,
                                  .n_q = 1, .n_head = NH, .n_head_kv = NKV, .head_dim = HD,
                                  .pos0 = ctx - 1, .scale = 1.0f / sqrtf((float)HD),
                                  .kv_head_stride = hm ? (int64_t)ctx * HD : 0 };
                    double t0 = perf_now();
                    if (sl_kern_attention(kk, p, &a, ws)) { fprintf(stderr, "attnbench: attention failed\n"); return 1; }
                    t[r] = perf_now() - t0;
                }
                perf_sort(t, reps);
                double med = t[reps / 2];
                if (isa == SL_ISA_SCALAR) t_scalar = med;
                printf("%-12s %-11s %7d %10.3f %9.2f %8.1fx\n", hm ? "head-major" : "interleaved",
                       kk->name, nt, med * 1e3, bytes / med / 1e9, t_scalar > 0 ? t_scalar / med : 0.0);
            }
            free(ws);
            sl_pool_destroy(p);
        }
    }
    free(k); free(v); free(q); free(o);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) return bench_ctx(2048) || bench_ctx(8192);
    for (int i = 1; i < argc; i++) {
        int32_t c = atoi(argv[i]);
        if (c < 1 || c > 65536) { fprintf(stderr, "usage: attnbench [n_ctx 1..65536 ...]\n"); return 2; }
        if (bench_ctx(c)) return 1;
    }
    return 0;
}
