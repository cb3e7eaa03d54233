/* The scalar rows8 kernels (kernels.h, sl_rows8_fn): the oracle of the SIMD
 * ones bit for bit. Per row one fmaf chain over its blocks: the block's exact
 * integer sum, converted, times d_x d_y (one rounded product). */
#include <math.h>

#include "kern_internal.h"

/* Exact sum of row i's 32 levels times y's values in a 16-byte nibble payload. */
static int32_t nib_sum(const uint8_t *qs, int i, const int8_t *lv, const int8_t *y)
{
    const uint8_t *q = qs + sl_quant_rows8_at(i, 16);
    int32_t s = 0;
    for (int l = 0; l < 16; l++) s += lv[q[l] & 15] * y[l] + lv[q[l] >> 4] * y[l + 16];
    return s;
}

/* Row i of group block x with y: the integer sum in *s, d_x as the return. */
static float blk_mxfp4(const void *x, int i, const sl_block_q8_0 *y, int32_t *s)
{
    const sl_block_mxfp4_r8 *g = x;
    *s = nib_sum(&g->qs[0][0], i, sl_kvalues_mxfp4, y->qs);
    return sl_e8m0_half(g->e[i]);
}

static float blk_iq4_nl(const void *x, int i, const sl_block_q8_0 *y, int32_t *s)
{
    const sl_block_iq4_nl_r8 *g = x;
    *s = nib_sum(&g->qs[0][0], i, sl_kvalues_iq4nl, y->qs);
    return sl_f16_to_f32(g->d[i]);
}

static float blk_q8_0(const void *x, int i, const sl_block_q8_0 *y, int32_t *s)
{
    const sl_block_q8_0_r8 *g = x;
    int32_t t = 0;
    for (int l = 0; l < 32; l++) t += g->qs[i][l] * y->qs[l];
    *s = t;
    return sl_f16_to_f32(g->d[i]);
}

typedef float (*blk_fn)(const void *x, int i, const sl_block_q8_0 *y, int32_t *s);

static void run(blk_fn f, size_t gbb, int64_t n, const void *W, int64_t g0, int64_t g1, const void *act, size_t arb,
                int ny, float *Y, int64_t ldy)
{
    const int64_t nb = n / SL_QK;
    for (int64_t g = g0; g < g1; g++) {
        const char *x = (const char *)W + (size_t)(g * nb) * gbb;
        for (int j = 0; j < ny; j++) {
            const sl_block_q8_0 *y = (const sl_block_q8_0 *)((const char *)act + (size_t)j * arb);
            for (int i = 0; i < 8; i++) {
                float acc = 0.0f;
                for (int64_t b = 0; b < nb; b++) {
                    int32_t s;
                    float dx = f(x + (size_t)b * gbb, i, &y[b], &s);
                    acc = fmaf((float)s, dx * sl_f16_to_f32(y[b].d), acc);
                }
                Y[j * ldy + 8 * g + i] = acc;
            }
        }
    }
}

#define R8_SCALAR(T, GB)                                                                                   \
    static void rows8_##T(int64_t n, const void *W, int64_t g0, int64_t g1, const void *act, size_t arb,   \
                          int ny, float *Y, int64_t ldy)                                                   \
    {                                                                                                      \
        run(blk_##T, sizeof(GB), n, W, g0, g1, act, arb, ny, Y, ldy);                                      \
    }
R8_SCALAR(mxfp4, sl_block_mxfp4_r8)
R8_SCALAR(iq4_nl, sl_block_iq4_nl_r8)
R8_SCALAR(q8_0, sl_block_q8_0_r8)

void sl_rows8_fill_scalar(sl_kern *k)
{
    k->rows8[SL_GGML_MXFP4] = rows8_mxfp4;
    k->rows8[SL_GGML_IQ4_NL] = rows8_iq4_nl;
    k->rows8[SL_GGML_Q8_0] = rows8_q8_0;
}
