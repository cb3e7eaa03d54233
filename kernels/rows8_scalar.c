/* The scalar rows8 kernels (kernels.h, sl_rows8_fn): the oracle of the SIMD
 * ones bit for bit. Per row one fmaf chain over its blocks: the block's exact
 * integer sum, converted, times d_x d_y (one rounded product). IQ4_XS's block
 * is its 256-element superblock: the sum over its eight sub-blocks of
 * (ls - 32) times the sub-block's sum, |.| <= 8 * 32 * 32 * 127 * 128 < 2^31. */
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

/* Row i of group block x with activation block y: the integer sum in *s,
 * d_x d_y as the return. */
static float blk_mxfp4(const void *x, int i, const void *y, int32_t *s)
{
    const sl_block_mxfp4_r8 *g = x;
    const sl_block_q8_0 *a = y;
    *s = nib_sum(&g->qs[0][0], i, sl_kvalues_mxfp4, a->qs);
    return sl_e8m0_half(g->e[i]) * sl_f16_to_f32(a->d);
}

static float blk_iq4_nl(const void *x, int i, const void *y, int32_t *s)
{
    const sl_block_iq4_nl_r8 *g = x;
    const sl_block_q8_0 *a = y;
    *s = nib_sum(&g->qs[0][0], i, sl_kvalues_iq4nl, a->qs);
    return sl_f16_to_f32(g->d[i]) * sl_f16_to_f32(a->d);
}

static float blk_q8_0(const void *x, int i, const void *y, int32_t *s)
{
    const sl_block_q8_0_r8 *g = x;
    const sl_block_q8_0 *a = y;
    int32_t t = 0;
    for (int l = 0; l < 32; l++) t += g->qs[i][l] * a->qs[l];
    *s = t;
    return sl_f16_to_f32(g->d[i]) * sl_f16_to_f32(a->d);
}

static float blk_iq4_xs(const void *x, int i, const void *y, int32_t *s)
{
    const sl_block_iq4_xs_r8 *g = x;
    const sl_block_q8_k *a = y;
    int32_t t = 0;
    for (int ib = 0; ib < SL_QKK / 32; ib++)
        t += (sl_quant_iq4_xs_ls(g->scales_h[i], g->scales_l[i], ib) - 32)
           * nib_sum(&g->qs[ib][0][0], i, sl_kvalues_iq4nl, a->qs + 32 * ib);
    *s = t;
    return sl_f16_to_f32(g->d[i]) * a->d;
}

typedef float (*blk_fn)(const void *x, int i, const void *y, int32_t *s);

/* be elements and gbb bytes a group block, abb bytes an activation block. */
static void run(blk_fn f, int64_t be, size_t gbb, size_t abb, int64_t n, const void *W, int64_t g0, int64_t g1,
                const void *act, size_t arb, int ny, float *Y, int64_t ldy)
{
    const int64_t nb = n / be;
    for (int64_t g = g0; g < g1; g++) {
        const char *x = (const char *)W + (size_t)(g * nb) * gbb;
        for (int j = 0; j < ny; j++) {
            const char *y = (const char *)act + (size_t)j * arb;
            for (int i = 0; i < 8; i++) {
                float acc = 0.0f;
                for (int64_t b = 0; b < nb; b++) {
                    int32_t s;
                    float d = f(x + (size_t)b * gbb, i, y + (size_t)b * abb, &s);
                    acc = fmaf((float)s, d, acc);
                }
                Y[j * ldy + 8 * g + i] = acc;
            }
        }
    }
}

#define R8_SCALAR(T, BE, GB, AB)                                                                           \
    static void rows8_##T(int64_t n, const void *W, int64_t g0, int64_t g1, const void *act, size_t arb,   \
                          int ny, float *Y, int64_t ldy)                                                   \
    {                                                                                                      \
        run(blk_##T, BE, sizeof(GB), sizeof(AB), n, W, g0, g1, act, arb, ny, Y, ldy);                      \
    }
R8_SCALAR(mxfp4, SL_QK, sl_block_mxfp4_r8, sl_block_q8_0)
R8_SCALAR(iq4_nl, SL_QK, sl_block_iq4_nl_r8, sl_block_q8_0)
R8_SCALAR(q8_0, SL_QK, sl_block_q8_0_r8, sl_block_q8_0)
R8_SCALAR(iq4_xs, SL_QKK, sl_block_iq4_xs_r8, sl_block_q8_k)

void sl_rows8_fill_scalar(sl_kern *k)
{
    k->rows8[SL_GGML_MXFP4] = rows8_mxfp4;
    k->rows8[SL_GGML_IQ4_NL] = rows8_iq4_nl;
    k->rows8[SL_GGML_Q8_0] = rows8_q8_0;
    k->rows8[SL_GGML_IQ4_XS] = rows8_iq4_xs;
}
