/* quant/quant_rows8.c: the rows8 layout of MXFP4 packed and unpacked in
 * place: where every byte of eight rows goes, the round trip, and the
 * refusals (a type without the layout, rows not a whole number of groups,
 * columns not a whole number of blocks). */
#include <stdlib.h>
#include <string.h>

#include "../quant/quant.h"
#include "../gguf/base/sl_status.h"
#include "../gguf/base/sl_internal.h"
#include "kern_rand.h"
#include "sl_test.h"

Test(quant_rows8, layout_and_round_trip)
{
    static const int64_t shapes[][2] = { {8, 32}, {16, 64}, {8, 2880}, {24, 96}, {64, 512} };
    uint64_t seed = 31;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int64_t rows = shapes[s][0], cols = shapes[s][1], nb = cols / SL_QK;
        const size_t rb = sl_gguf_row_bytes(SL_GGML_MXFP4, cols), bytes = rb * (size_t)rows;
        uint8_t *w = kr_weights(SL_GGML_MXFP4, rows, cols, &seed), *orig = malloc(bytes);
        cr_assert(w && orig);
        memcpy(orig, w, bytes);
        cr_assert_eq(sl_quant_rows8_pack(SL_GGML_MXFP4, w, rows, cols), 0);
        for (int64_t g = 0; g < rows / 8; g++)
            for (int64_t b = 0; b < nb; b++) {
                const sl_block_mxfp4_r8 *r = (const sl_block_mxfp4_r8 *)(w + (size_t)g * 8 * rb) + b;
                for (int i = 0; i < 8; i++) {
                    const sl_block_mxfp4 *x = (const sl_block_mxfp4 *)(orig + (size_t)(8 * g + i) * rb) + b;
                    cr_assert_eq(r->e[i], x->e, "group %lld block %lld row %d: exponent", (long long)g,
                                 (long long)b, i);
                    cr_assert_eq(memcmp(r->qs[i % 4] + 16 * (i / 4), x->qs, 16), 0,
                                 "group %lld block %lld row %d: nibbles in chunk %d half %d", (long long)g,
                                 (long long)b, i, i % 4, i / 4);
                }
            }
        cr_assert_eq(sl_quant_rows8_unpack(SL_GGML_MXFP4, w, rows, cols), 0);
        cr_assert_eq(memcmp(w, orig, bytes), 0, "%lld x %lld: unpack(pack(x)) != x", (long long)rows,
                     (long long)cols);
        free(w);
        free(orig);
    }
}

Test(quant_rows8, refusals)
{
    uint8_t buf[16 * 17 * 2] = {0};
    cr_assert(sl_quant_rows8_supported(SL_GGML_MXFP4));
    cr_assert(!sl_quant_rows8_supported(SL_GGML_Q4_0));
    cr_assert(!sl_quant_rows8_supported(SL_GGML_MXFP4 | (int)SL_GGML_ROWS8));
    cr_assert_eq(sl_quant_rows8_pack(SL_GGML_Q4_0, buf, 8, 32), SL_EINVAL);
    cr_assert_str_eq(sl_last_error(), "rows8 pack: type 2 has no rows8 layout");
    cr_assert_eq(sl_quant_rows8_pack(SL_GGML_MXFP4, buf, 12, 32), SL_EINVAL);
    cr_assert_str_eq(sl_last_error(), "rows8 pack: 12 x 32 is not a whole number of 8-row groups");
    cr_assert_eq(sl_quant_rows8_unpack(SL_GGML_MXFP4, buf, 8, 48), SL_EINVAL);
    cr_assert_eq(sl_quant_rows8_pack(SL_GGML_MXFP4, NULL, 8, 32), SL_EINVAL);
    cr_assert_eq(sl_quant_rows8_pack(SL_GGML_MXFP4, buf, -8, 32), SL_EINVAL);
    cr_assert_eq(sl_quant_rows8_pack(SL_GGML_MXFP4, buf, 0, 32), 0);
    /* the flagged id is MXFP4's activation type, nothing else takes the flag */
    cr_assert_eq(sl_quant_vec_dot_type(SL_GGML_MXFP4 | (int)SL_GGML_ROWS8), SL_GGML_Q8_0);
    cr_assert_eq(sl_quant_vec_dot_type(SL_GGML_Q4_0 | (int)SL_GGML_ROWS8), -1);
    cr_assert_eq(sl_gguf_row_bytes(SL_GGML_MXFP4 | SL_GGML_ROWS8, 32), 0);
}
