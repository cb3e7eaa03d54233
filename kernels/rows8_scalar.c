/* The scalar rows8 kernel (kernels.h, sl_rows8_fn): the oracle of the SIMD
 * ones bit for bit. Per row one fmaf chain over its blocks: the block's exact
 * integer sum, converted, times d_x d_y (one rounded product). */
#include <math.h>

#include "kern_internal.h"

static void rows8_mxfp4(int64_t n, const void *W, int64_t g0, int64_t g1, const void *act, size_t arb, int ny,
                        float *Y, int64_t ldy)
{
    const int64_t nb = n / SL_QK;
    for (int64_t g = g0; g < g1; g++) {
        const sl_block_mxfp4_r8 *x = (const sl_block_mxfp4_r8 *)W + g * nb;
        for (int j = 0; j < ny; j++) {
            const sl_block_q8_0 *y = (const sl_block_q8_0 *)((const char *)act + (size_t)j * arb);
            for (int i = 0; i < 8; i++) {
                float acc = 0.0f;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *q = x[b].qs[i & 3] + 16 * (i >> 2);
                    int32_t s = 0;
                    for (int l = 0; l < 16; l++)
                        s += sl_kvalues_mxfp4[q[l] & 15] * y[b].qs[l] + sl_kvalues_mxfp4[q[l] >> 4] * y[b].qs[l + 16];
                    acc = fmaf((float)s, sl_e8m0_half(x[b].e[i]) * sl_f16_to_f32(y[b].d), acc);
                }
                Y[j * ldy + 8 * g + i] = acc;
            }
        }
    }
}

void sl_rows8_fill_scalar(sl_kern *k)
{
    k->rows8[SL_GGML_MXFP4] = rows8_mxfp4;
    k->rows8_fast[SL_GGML_MXFP4] = false;
}
