/* KV cache layout: head-major [n_layer][n_head_kv][n_ctx][head_dim], rows
 * tiling the allocation exactly, and attention read through the cache
 * (kv_stride = head_dim, kv_head_stride = sl_kv_head_stride) bitwise equal to
 * the same keys/values in the interleaved [pos][n_head_kv*head_dim] layout. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sl_test.h"
#include "../engine/kv.h"
#include "../kernels/kernels.h"
#include "../gguf/sl_status.h"

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
    cr_assert_eq(sl_kv_head_stride(&kv), (int64_t)C * D);
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
                cr_assert_eq(o, sl_kv_off(&kv, l, 0, 0) + (size_t)g * (size_t)sl_kv_head_stride(&kv) +
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
        a.kv_stride = D; a.kv_head_stride = sl_kv_head_stride(&kv); a.out = o2;
        cr_assert_eq(sl_kern_attention(k, NULL, &a, scratch), 0);
        cr_assert_eq(memcmp(o1, o2, (size_t)n_q * QD * sizeof(float)), 0, "%s: outputs differ",
                     sl_isa_name(isa));
        tested++;
    }
    cr_assert_gt(tested, 0);
    free(ki); free(vi); free(q); free(o1); free(o2); free(scratch);
    sl_kv_free(&kv);
}
