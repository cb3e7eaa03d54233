/* Random weight rows and activations for the kernel tests (header-only so it
 * is linked only where included). Weight blocks are random bytes -- every
 * byte pattern is a valid block -- with the f16 scale fields replaced by
 * finite random values; activations are random floats quantized by quant/. */
#ifndef SL_KERN_RAND_H
#define SL_KERN_RAND_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/kernels.h"

/* 2^-24, the unit roundoff of the derived tolerances (test_kern_dot.c). */
#define KR_U (1.0 / 16777216.0)
/* Every type with a vec_dot, in the order the kernel tests draw their data. */
#define KR_DOT_TYPES                                                                          \
    SL_GGML_Q4_0, SL_GGML_Q4_1, SL_GGML_Q5_0, SL_GGML_Q5_1, SL_GGML_Q8_0, SL_GGML_Q2_K, SL_GGML_Q3_K, \
    SL_GGML_Q4_K, SL_GGML_Q5_K, SL_GGML_Q6_K, SL_GGML_F32, SL_GGML_F16, SL_GGML_BF16,           \
    SL_GGML_IQ4_NL, SL_GGML_IQ4_XS, SL_GGML_MXFP4, SL_GGML_TQ1_0, SL_GGML_TQ2_0,               \
    SL_GGML_IQ2_XXS, SL_GGML_IQ2_XS, SL_GGML_IQ2_S, SL_GGML_IQ3_XXS, SL_GGML_IQ3_S, SL_GGML_IQ1_S, SL_GGML_IQ1_M

static inline uint64_t kr_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in (-1, 1). */
static inline float kr_unif(uint64_t *s)
{
    return (float)((double)(kr_next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static inline void kr_put_f16(void *p, float v)
{
    sl_f16 h = sl_f32_to_f16(v);
    memcpy(p, &h, 2);
}

/* Offsets of the f16 fields inside one block of type t (-1 terminates). */
static inline const int *kr_f16_fields(int t)
{
    static const int d0[] = {0, -1}, d02[] = {0, 2, -1}, q2k[] = {80, 82, -1},
                     q3k[] = {108, -1}, q6k[] = {208, -1}, tq1[] = {52, -1}, tq2[] = {64, -1},
                     none[] = {-1};
    switch (t) {
    case SL_GGML_Q4_0: case SL_GGML_Q5_0: case SL_GGML_Q8_0: case SL_GGML_IQ4_NL: case SL_GGML_IQ4_XS:
        return d0;
    case SL_GGML_TQ1_0: return tq1;
    case SL_GGML_TQ2_0: return tq2;
    case SL_GGML_Q4_1: case SL_GGML_Q5_1: case SL_GGML_Q4_K: case SL_GGML_Q5_K: return d02;
    case SL_GGML_Q2_K: return q2k;
    case SL_GGML_Q3_K: return q3k;
    case SL_GGML_Q6_K: return q6k;
    case SL_GGML_IQ2_XXS: case SL_GGML_IQ2_XS: case SL_GGML_IQ2_S: case SL_GGML_IQ3_XXS:
    case SL_GGML_IQ3_S: case SL_GGML_IQ1_S: return d0;
    default: return none;   /* IQ1_M: d in the scales' top nibbles, see kr_weights */
    }
}

/* IQ1_M has no f16 field: its d is the f16 bits in the top nibbles of the 4 scale words. */
static inline void kr_put_iq1m_d(uint8_t *blk, float v)
{
    sl_f16 h = sl_f32_to_f16(v);
    uint8_t *sc = blk + 48;
    for (int k = 0; k < 4; k++) sc[2 * k + 1] = (uint8_t)((sc[2 * k + 1] & 0x0f) | (((h >> (4 * k)) & 15) << 4));
}

/* rows x n weights of type t, contiguous; caller frees. */
static inline void *kr_weights(int t, int64_t rows, int64_t n, uint64_t *seed)
{
    size_t rb = sl_gguf_row_bytes(t, n), total = rb * (size_t)rows;
    uint8_t *w = malloc(total ? total : 1);
    if (!w) return NULL;
    if (t == SL_GGML_F32) {
        for (size_t i = 0; i < total / 4; i++) ((float *)w)[i] = kr_unif(seed) * 4.0f;
    } else if (t == SL_GGML_F16) {
        for (size_t i = 0; i < total / 2; i++) kr_put_f16(w + 2 * i, kr_unif(seed) * 4.0f);
    } else if (t == SL_GGML_BF16) {
        for (size_t i = 0; i < total / 2; i++) ((sl_bf16 *)w)[i] = sl_f32_to_bf16(kr_unif(seed) * 4.0f);
    } else {
        for (size_t i = 0; i < total; i++) w[i] = (uint8_t)kr_next(seed);
        size_t bb = (size_t)sl_gguf_block_bytes(t);
        const int *f = kr_f16_fields(t);
        for (size_t b = 0; b < total / bb; b++)
            for (int k = 0; f[k] >= 0; k++)
                kr_put_f16(w + b * bb + (size_t)f[k], kr_unif(seed) * 0.05f);
        if (t == SL_GGML_MXFP4)      /* E8M0 scale 2^(e-128): keep it in 2^-16 .. 2^-1 */
            for (size_t b = 0; b < total / bb; b++) w[b * bb] = (uint8_t)(112 + kr_next(seed) % 16);
        if (t == SL_GGML_IQ1_M)          /* a finite d: f16 bits in 4 top nibbles */
            for (size_t b = 0; b < total / bb; b++) kr_put_iq1m_d(w + b * bb, kr_unif(seed) * 0.05f);
    }
    return w;
}

/* n_rows activation rows for weight type t (floats with a few outliers). */
static inline void *kr_act(const sl_kern *k, int t, int64_t n_rows, int64_t n, uint64_t *seed)
{
    float *x = malloc((size_t)(n_rows * n) * sizeof *x);
    size_t bytes = sl_kern_act_bytes(t, n, n_rows);
    void *a = malloc(bytes ? bytes : 1);
    if (!x || !a) { free(x); free(a); return NULL; }
    for (int64_t i = 0; i < n_rows * n; i++) {
        x[i] = kr_unif(seed) * 2.0f;
        if ((kr_next(seed) & 63) == 0) x[i] *= 20.0f;
    }
    sl_kern_quantize_act(k, t, x, n, n_rows, a);
    free(x);
    return a;
}

#endif
