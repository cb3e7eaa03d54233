/* KV cache layout: head-major [n_layer][n_head_kv][n_ctx][head_dim], rows
 * tiling the allocation exactly, and attention read through the cache
 * (kv_stride = head_dim, kv_head_stride = sl_kv_head_stride) bitwise equal to
 * the same keys/values in the interleaved [pos][n_head_kv*head_dim] layout. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "sl_test.h"
#include "../engine/kv.h"
#include "../kernels/kernels.h"
#include "../gguf/base/sl_status.h"

static uint64_t rng_s = 0x9E3779B97F4A7C15ull;
static float frand(void)
{
    rng_s ^= rng_s << 13; rng_s ^= rng_s >> 7; rng_s ^= rng_s << 17;
    return (float)(rng_s >> 40) / (float)(1u << 24) * 2.0f - 1.0f;
}

Test(kv, rejects_bad_sizes)
{
    sl_kv kv;
    cr_assert_eq(sl_kv_init(&kv, 0, 16, 2, 8, SL_GGML_F16, SL_GGML_F16), SL_EINVAL);
    cr_assert_eq(sl_kv_init(&kv, 2, 0, 2, 8, SL_GGML_F16, SL_GGML_F16), SL_EINVAL);
    cr_assert_eq(sl_kv_init(&kv, 2, 16, 0, 8, SL_GGML_F16, SL_GGML_F16), SL_EINVAL);
    cr_assert_eq(sl_kv_init(&kv, 2, 16, 2, -1, SL_GGML_F16, SL_GGML_F16), SL_EINVAL);
    cr_assert_eq(sl_kv_init(&kv, 2, 16, 65536, 65536, SL_GGML_F16, SL_GGML_F16), SL_EINVAL);
    cr_assert_null(kv.k);
    /* 2^31 x 2^31 x 1024 x 4 bytes wraps 64 bits: must saturate, not shrink */
    cr_assert_eq(sl_kv_bytes(INT32_MAX, INT32_MAX, 1024, SL_GGML_F16, SL_GGML_F16), UINT64_MAX);
    cr_assert_eq(sl_kv_init(&kv, INT32_MAX, INT32_MAX, 1, 1024, SL_GGML_F16, SL_GGML_F16), SL_ENOMEM);
    cr_assert_null(kv.k);
}

Test(kv, head_major_rows_tile_the_cache)
{
    const int32_t L = 3, C = 7, H = 4, D = 6;
    sl_kv kv;
    cr_assert_eq(sl_kv_init(&kv, L, C, H, D, SL_GGML_F16, SL_GGML_F16), 0);
    cr_assert_eq(kv.kv_dim, H * D);
    cr_assert_eq(sl_kv_bytes(L, C, H * D, SL_GGML_F16, SL_GGML_F16), 2ull * L * C * H * D * sizeof(sl_f16));
    cr_assert_eq(sl_kv_head_stride(&kv, 0), (int64_t)C * D);
    size_t n = (size_t)L * C * H * D;
    unsigned char *seen = calloc(n, 1);
    cr_assert_not_null(seen);
    for (int32_t l = 0; l < L; l++)
        for (int32_t g = 0; g < H; g++)
            for (int32_t p = 0; p < C; p++) {
                sl_f16 *k = sl_kv_k(&kv, l, g, p), *v = sl_kv_v(&kv, l, g, p);
                size_t o = (size_t)(k - (const sl_f16 *)kv.k);
                cr_assert_eq(o, (size_t)(v - (const sl_f16 *)kv.v));
                /* consecutive positions of a head are adjacent rows; heads are a block apart */
                cr_assert_eq(o, sl_kv_off(&kv, l, 0, 0) + (size_t)g * (size_t)sl_kv_head_stride(&kv, l) +
                                (size_t)p * D);
                cr_assert_eq(sl_kv_off(&kv, l, 0, 0), (size_t)l * C * H * D);
                for (int32_t e = 0; e < D; e++) {
                    cr_assert_lt(o + e, n);
                    cr_assert_eq(seen[o + e], 0, "element %zu written twice", o + e);
                    seen[o + e] = 1;
                }
            }
    for (size_t i = 0; i < n; i++) cr_assert_eq(seen[i], 1, "element %zu not covered", i);
    free(seen);
    sl_kv_free(&kv);
    cr_assert_null(kv.k);
}

/* Every kernel level: the cache layout changes addresses only, not numerics. */
Test(kv, attention_through_cache_matches_interleaved)
{
    const int32_t L = 2, C = 40, H = 2, D = 64, NH = 8, n_q = 5, pos0 = 30, layer = 1;
    const int32_t KD = H * D, QD = NH * D, npos = pos0 + n_q;
    sl_kv kv;
    cr_assert_eq(sl_kv_init(&kv, L, C, H, D, SL_GGML_F16, SL_GGML_F16), 0);
    sl_f16 *ki = malloc((size_t)npos * KD * sizeof(sl_f16));
    sl_f16 *vi = malloc((size_t)npos * KD * sizeof(sl_f16));
    float *q = malloc((size_t)n_q * QD * sizeof(float));
    float *o1 = malloc((size_t)n_q * QD * sizeof(float)), *o2 = malloc((size_t)n_q * QD * sizeof(float));
    void *scratch = malloc(sl_kern_attn_scratch(1, D, C));
    cr_assert(ki && vi && q && o1 && o2 && scratch);
    for (int32_t i = 0; i < npos * KD; i++) {
        ki[i] = sl_f32_to_f16(frand());
        vi[i] = sl_f32_to_f16(frand());
    }
    for (int32_t i = 0; i < n_q * QD; i++) q[i] = 2.0f * frand();
    for (int32_t p = 0; p < npos; p++)
        for (int32_t g = 0; g < H; g++) {
            memcpy(sl_kv_k(&kv, layer, g, p), ki + (size_t)p * KD + (size_t)g * D, D * sizeof(sl_f16));
            memcpy(sl_kv_v(&kv, layer, g, p), vi + (size_t)p * KD + (size_t)g * D, D * sizeof(sl_f16));
        }
    int tested = 0;
    for (int isa = 0; isa < SL_ISA_COUNT; isa++) {
        const sl_kern *k = sl_kern_for(isa);
        if (!k) continue;
        sl_attn a = { .q = q, .q_stride = QD, .k = ki, .v = vi, .kv_stride = KD,
                      .out = o1, .out_stride = QD, .n_q = n_q, .n_head = NH, .n_head_kv = H,
                      .head_dim = D, .pos0 = pos0, .scale = 0.125f };
        cr_assert_eq(sl_kern_attention(k, NULL, &a, scratch), 0);
        a.k = sl_kv_k(&kv, layer, 0, 0); a.v = sl_kv_v(&kv, layer, 0, 0);
        a.kv_stride = D; a.kv_head_stride = sl_kv_head_stride(&kv, layer); a.out = o2;
        cr_assert_eq(sl_kern_attention(k, NULL, &a, scratch), 0);
        cr_assert_eq(memcmp(o1, o2, (size_t)n_q * QD * sizeof(float)), 0, "%s: outputs differ",
                     sl_isa_name(isa));
        tested++;
    }
    cr_assert_gt(tested, 0);
    free(ki); free(vi); free(q); free(o1); free(o2); free(scratch);
    sl_kv_free(&kv);
}

/* Quantized types: sizes by the type's blocks; head_dim must be whole blocks. */
Test(kv, quantized_types)
{
    cr_assert_eq(sl_kv_pos_bytes(128, SL_GGML_Q8_0, SL_GGML_Q4_0), 4 * 34 + 4 * 18);
    cr_assert_eq(sl_kv_pos_bytes(128, SL_GGML_F16, SL_GGML_F16), 512);
    cr_assert_eq(sl_kv_pos_bytes(128, SL_GGML_Q4_1, SL_GGML_F16), 0);
    cr_assert_eq(sl_kv_bytes(3, 10, 128, SL_GGML_Q4_0, SL_GGML_Q4_0), 3ull * 10 * 2 * 4 * 18);
    sl_kv kv;
    cr_assert_eq(sl_kv_init(&kv, 2, 16, 2, 48, SL_GGML_Q8_0, SL_GGML_F16), SL_EINVAL);
    cr_assert_eq(sl_kv_init(&kv, 2, 16, 2, 64, SL_GGML_F16, SL_GGML_Q4_1), SL_EINVAL);
    cr_assert_eq(sl_kv_init(&kv, 2, 16, 2, 64, SL_GGML_F16, 999), SL_EINVAL);
    cr_assert_eq(sl_kv_init(&kv, 2, 16, 2, 64, SL_GGML_Q4_0, SL_GGML_Q8_0), 0);
    cr_assert_eq(kv.row_k, 2 * 18);
    cr_assert_eq(kv.row_v, 2 * 34);
    cr_assert_eq((char *)sl_kv_k(&kv, 1, 1, 3) - (char *)kv.k, (ptrdiff_t)(((1 * 2 + 1) * 16 + 3) * 36));
    sl_kv_free(&kv);
}

/* The rotation sizes llama.cpp uses, and the fast transform equal to the
 * Sylvester matrix H_n / sqrt(n) (orthonormal, H^2 = I). */
Test(kv, hadamard_rotation)
{
    cr_assert_eq(sl_kv_rot_size(SL_GGML_F16, 128, 0), 0);
    cr_assert_eq(sl_kv_rot_size(SL_GGML_Q8_0, 128, 0), 128);
    cr_assert_eq(sl_kv_rot_size(SL_GGML_Q8_0, 192, 0), 64);
    cr_assert_eq(sl_kv_rot_size(SL_GGML_Q4_0, 256, 0), 256);
    cr_assert_eq(sl_kv_rot_size(SL_GGML_Q4_0, 256, 1), 64);
    cr_assert_eq(sl_kv_rot_size(SL_GGML_Q8_0, 32, 0), 0);
    cr_assert_eq(sl_kv_rot_size(SL_GGML_Q8_0, 96, 1), 0);
    enum { N = 128 };
    float x[2 * N], y[2 * N];
    for (int i = 0; i < 2 * N; i++) x[i] = y[i] = frand();
    sl_kv_rotate(y, 2 * N, N);
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < N; i++) {
            double want = 0;   /* Sylvester: H[i][j] = (-1)^popcount(i & j) */
            for (int j = 0; j < N; j++) want += (__builtin_popcount(i & j) & 1 ? -1.0 : 1.0) * x[b * N + j];
            want /= sqrt((double)N);
            cr_assert(fabs(y[b * N + i] - want) < 1e-5, "H x [%d]: %g vs %g", i, y[b * N + i], want);
        }
    sl_kv_rotate(y, 2 * N, N);
    for (int i = 0; i < 2 * N; i++) cr_assert(fabsf(y[i] - x[i]) < 1e-5f, "H H x != x at %d", i);
}

/* Cells: a position range read from one cache and written into another at
 * another offset reproduces the rows byte for byte; ranges are checked. */
Test(kv, cells_roundtrip)
{
    enum { L = 2, C = 12, H = 2, D = 64 };
    static const int types[][2] = { { SL_GGML_F16, SL_GGML_F16 }, { SL_GGML_Q8_0, SL_GGML_Q4_0 } };
    for (int t = 0; t < 2; t++) {
        sl_kv a, b;
        cr_assert_eq(sl_kv_init(&a, L, C, H, D, types[t][0], types[t][1]), 0);
        cr_assert_eq(sl_kv_init(&b, L, C, H, D, types[t][0], types[t][1]), 0);
        const sl_kern *k = sl_kern_for(SL_ISA_SCALAR);
        float kr[H * D], vr[H * D];
        for (int l = 0; l < L; l++)
            for (int p = 0; p < C; p++) {
                for (int i = 0; i < H * D; i++) { kr[i] = frand(); vr[i] = frand(); }
                sl_kv_store(&a, k, l, p, kr, vr);
            }
        a.n_past = 10;
        uint64_t nb = sl_kv_cells_bytes(&a, 6);
        cr_assert_eq(nb, 6ull * L * sl_kv_pos_bytes(H * D, types[t][0], types[t][1]));
        char *buf = malloc(nb);
        cr_assert_not_null(buf);
        cr_assert_eq(sl_kv_cells_read(&a, 3, 6, buf), 0);
        cr_assert_eq(sl_kv_cells_write(&b, 5, 6, buf), 0);
        for (int l = 0; l < L; l++)
            for (int g = 0; g < H; g++)
                for (int p = 0; p < 6; p++) {
                    cr_assert(!memcmp(sl_kv_k(&a, l, g, 3 + p), sl_kv_k(&b, l, g, 5 + p), a.row_k));
                    cr_assert(!memcmp(sl_kv_v(&a, l, g, 3 + p), sl_kv_v(&b, l, g, 5 + p), a.row_v));
                }
        cr_assert_eq(sl_kv_cells_read(&a, 5, 6, buf), SL_EINVAL);    /* past n_past */
        cr_assert_eq(sl_kv_cells_write(&b, 7, 6, buf), SL_EINVAL);   /* past n_ctx */
        cr_assert_eq(sl_kv_cells_read(&a, -1, 2, buf), SL_EINVAL);
        free(buf);
        sl_kv_free(&a);
        sl_kv_free(&b);
    }
}

/* Context shift on the cache: kept rows before the gap untouched, V rows
 * moved byte for byte, each moved K row equal to the row stored fresh at its
 * new position (rope by the new position, the Hadamard basis for quantized
 * types) up to one more rounding of the type (relative L2 error per row);
 * layer 1 takes the sliding-window rope table. A wrong angle or a missing
 * basis change gives errors of order 1. */
static bool odd_layer(const void *ctx, int32_t l) { (void)ctx; return l & 1; }

Test(kv, shift_rotates_kept_rows)
{
    enum { L = 2, C = 20, H = 2, D = 64, KEEP = 3, DROP = 5, N = 18 };
    static const struct { int t; double tol; } types[] = {
        { SL_GGML_F16, 2e-3 }, { SL_GGML_Q8_0, 0.03 }, { SL_GGML_Q4_0, 0.25 } };
    const sl_kern *k = sl_kern_best();
    float inv[D / 2], inv_swa[D / 2];
    for (int i = 0; i < D / 2; i++) {
        inv[i] = powf(10000.0f, -2.0f * i / D);
        inv_swa[i] = powf(1e6f, -2.0f * i / D);
    }
    for (int neox = 0; neox < 2; neox++)
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            const int t = types[ti].t;
            sl_kv kv, fresh;
            cr_assert_eq(sl_kv_init(&kv, L, C, H, D, t, t), 0);
            cr_assert_eq(sl_kv_init(&fresh, L, C, H, D, t, t), 0);
            const sl_kv_rope r = { .n_rot = D, .neox = neox, .inv_freq = inv, .inv_freq_swa = inv_swa,
                                   .layer_swa = odd_layer, .ctx = NULL };
            static float raw[L][N][H * D], vraw[L][N][H * D];
            float kr[H * D];
            for (int l = 0; l < L; l++)
                for (int p = 0; p < N; p++) {
                    for (int i = 0; i < H * D; i++) { raw[l][p][i] = frand(); vraw[l][p][i] = frand(); }
                    /* as the forward pass: rope at p, then the cache's basis */
                    memcpy(kr, raw[l][p], sizeof kr);
                    k->rope(kr, H, D, D, p, l & 1 ? inv_swa : inv, neox);
                    if (kv.rot_k) sl_kv_rotate(kr, H * D, kv.rot_k);
                    sl_kv_store(&kv, k, l, p, kr, vraw[l][p]);
                    if (p < KEEP || p >= KEEP + DROP) {   /* the same row stored fresh at its new place */
                        int32_t np = p < KEEP ? p : p - DROP;
                        memcpy(kr, raw[l][p], sizeof kr);
                        k->rope(kr, H, D, D, np, l & 1 ? inv_swa : inv, neox);
                        if (kv.rot_k) sl_kv_rotate(kr, H * D, kv.rot_k);
                        sl_kv_store(&fresh, k, l, np, kr, vraw[l][p]);
                    }
                }
            kv.n_past = N;
            float row[D], a[D], b[D];
            cr_assert_eq(sl_kv_shift(&kv, k, KEEP, DROP + N, &r, row), SL_EINVAL);
            cr_assert_eq(sl_kv_shift(&kv, k, KEEP, DROP, &r, row), 0);
            cr_assert_eq(kv.n_past, N - DROP);
            for (int l = 0; l < L; l++)
                for (int g = 0; g < H; g++)
                    for (int p = 0; p < N - DROP; p++) {
                        cr_assert(!memcmp(sl_kv_v(&kv, l, g, p), sl_kv_v(&fresh, l, g, p), kv.row_v),
                                  "V row moved");
                        if (p < KEEP) {
                            cr_assert(!memcmp(sl_kv_k(&kv, l, g, p), sl_kv_k(&fresh, l, g, p), kv.row_k));
                            continue;
                        }
                        sl_quant_dequantize_row(t, sl_kv_k(&kv, l, g, p), a, D);
                        sl_quant_dequantize_row(t, sl_kv_k(&fresh, l, g, p), b, D);
                        double e = 0, nb = 0;
                        for (int d = 0; d < D; d++) { e += (a[d] - b[d]) * (a[d] - b[d]); nb += b[d] * b[d]; }
                        cr_assert(sqrt(e / nb) <= types[ti].tol, "%s neox %d layer %d head %d pos %d: "
                                  "relative error %.4f > %.3f", sl_gguf_type_name((uint32_t)t), neox, l, g, p,
                                  sqrt(e / nb), types[ti].tol);
                    }
            sl_kv_free(&kv);
            sl_kv_free(&fresh);
        }
}

/* A sliding-window layer's ring: sized by the window and the chunk, it
 * keeps the window's rows when it moves on (slot 0 = base), refuses a chunk
 * larger than it was sized for, and cells outside it fail. */
Test(kv, window_ring)
{
    enum { L = 2, C = 100, H = 2, D = 8, W = 4, B = 3 };
    cr_assert_eq(sl_kv_ring_cap(C, W, B), W - 1 + B);
    cr_assert_eq(sl_kv_ring_cap(C, 0, B), C);
    cr_assert_eq(sl_kv_ring_cap(5, W, B), 5);
    int32_t cap[L] = { C, sl_kv_ring_cap(C, W, B) };
    cr_assert_eq(sl_kv_bytes_layers(L, cap, H * D, SL_GGML_F16, SL_GGML_F16), (uint64_t)(C + 6) * H * D * 4);
    sl_kv kv;
    cr_assert_eq(sl_kv_init_layers(&kv, L, C, H, D, SL_GGML_F16, SL_GGML_F16, cap), 0);
    const sl_kern *k = sl_kern_for(SL_ISA_SCALAR);
    float kr[H * D], vr[H * D];
    for (int32_t p = 0; p < 20; p += B) {
        cr_assert_eq(sl_kv_ring_advance(&kv, 1, p, B, W), 0);
        cr_assert_eq(sl_kv_ring_advance(&kv, 0, p, B, 0), 0);
        for (int32_t i = 0; i < B; i++) {
            for (int d = 0; d < H * D; d++) kr[d] = vr[d] = (float)(p + i) + d * 0.001f;   /* the position */
            sl_kv_store(&kv, k, 0, p + i, kr, vr);
            sl_kv_store(&kv, k, 1, p + i, kr, vr);
        }
        kv.n_past = p + B;
        cr_assert_leq(kv.n_past - kv.base[1], cap[1]);
        /* every position the last row's window needs is where sl_kv_k says */
        for (int32_t q = kv.n_past > W ? kv.n_past - W : 0; q < kv.n_past; q++)
            for (int g = 0; g < H; g++)
                cr_assert_eq(sl_f16_to_f32(((sl_f16 *)sl_kv_k(&kv, 1, g, q))[0]), sl_f16_to_f32(sl_f32_to_f16((float)q + g * D * 0.001f)),
                             "ring row of position %d", q);
    }
    cr_assert_eq(kv.base[0], 0);
    cr_assert_gt(kv.base[1], 0);
    cr_assert_eq(sl_kv_ring_advance(&kv, 1, kv.n_past, B + 1, W), SL_EINVAL);
    char buf[4096];
    cr_assert_eq(sl_kv_cells_read(&kv, 0, 2, buf), SL_EINVAL);   /* older than the ring */
    cr_assert_eq(sl_kv_cells_read(&kv, kv.n_past - 2, 2, buf), 0);
    sl_kv_clear(&kv);
    cr_assert_eq(kv.n_past, 0);
    cr_assert_eq(kv.base[1], 0);
    sl_kv_free(&kv);
}

/* CVE-2026-21869 (llama.cpp server: a negative n_discard in the context
 * shift moved cache rows out of bounds), in Sluice's own parameters:
 * sl_kv_shift with n_keep / n_discard negative, zero, or past n_past (also
 * where n_keep + n_discard overflows int32) is SL_EINVAL naming the values,
 * and the cache — rows, bases, n_past — is left as it was. */
/* Every K and V row of every layer and head, as bytes, into dst. */
static void kv_bytes(const sl_kv *kv, unsigned char *dst)
{
    for (int32_t l = 0; l < kv->n_layer; l++)
        for (int32_t g = 0; g < kv->n_head_kv; g++) {
            const size_t nk = (size_t)kv->cap[l] * kv->row_k, nv = (size_t)kv->cap[l] * kv->row_v;
            memcpy(dst, sl_kv_k(kv, l, g, kv->base[l]), nk);
            memcpy(dst + nk, sl_kv_v(kv, l, g, kv->base[l]), nv);
            dst += nk + nv;
        }
}

Test(kv, CVE_2026_21869_negative_n_discard_refused)
{
    enum { L = 2, C = 16, H = 2, D = 32, N = 12 };
    const sl_kern *k = sl_kern_best();
    float inv[D / 2], kr[H * D], vr[H * D], row[D];
    for (int i = 0; i < D / 2; i++) inv[i] = powf(10000.0f, -2.0f * i / D);
    const sl_kv_rope r = { .n_rot = D, .inv_freq = inv, .inv_freq_swa = inv };
    sl_kv kv;
    cr_assert_eq(sl_kv_init(&kv, L, C, H, D, SL_GGML_F16, SL_GGML_F16), 0);
    for (int l = 0; l < L; l++)
        for (int p = 0; p < N; p++) {
            for (int i = 0; i < H * D; i++) { kr[i] = frand(); vr[i] = frand(); }
            sl_kv_store(&kv, k, l, p, kr, vr);
        }
    kv.n_past = N;
    const size_t per = (size_t)C * (kv.row_k + kv.row_v);
    unsigned char *before = malloc((size_t)L * H * per), *now = malloc((size_t)L * H * per);
    kv_bytes(&kv, before);
    static const int32_t bad[][2] = {
        { 3, -1 }, { 3, -5 }, { 3, INT32_MIN }, { 3, 0 }, { -1, 2 }, { INT32_MIN, 2 },
        { 3, N - 2 }, { N, 1 }, { INT32_MAX, INT32_MAX }, { 1, INT32_MAX },
    };
    char want[96];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(sl_kv_shift(&kv, k, bad[i][0], bad[i][1], &r, row), SL_EINVAL,
                     "keep %d discard %d accepted", bad[i][0], bad[i][1]);
        snprintf(want, sizeof want, "kv shift: keep %d, discard %d of %d positions", bad[i][0], bad[i][1], N);
        cr_assert_str_eq(sl_last_error(), want);
        cr_assert_eq(kv.n_past, N);
        for (int l = 0; l < L; l++) cr_assert_eq(kv.base[l], 0);
        kv_bytes(&kv, now);
        cr_assert(!memcmp(before, now, (size_t)L * H * per), "keep %d discard %d changed the cache",
                  bad[i][0], bad[i][1]);
    }
    cr_assert_eq(sl_kv_shift(&kv, k, 3, N - 3, &r, row), 0);   /* the edge of the range is allowed */
    cr_assert_eq(kv.n_past, 3);
    free(before);
    free(now);
    sl_kv_free(&kv);
}
