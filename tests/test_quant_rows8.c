/* quant/quant_rows8.c: the rows8 layout of MXFP4, IQ4_NL, Q8_0 and IQ4_XS
 * packed and unpacked in place: where every byte of eight rows goes, the
 * round trip, and the refusals (a type without the layout, rows not a whole
 * number of groups, columns not a whole number of blocks). */
#include <stdlib.h>
#include <string.h>

#include "../quant/quant.h"
#include "../gguf/base/sl_status.h"
#include "../gguf/base/sl_internal.h"
#include "kern_rand.h"
#include "sl_test.h"

Test(quant_rows8, layout_and_round_trip)
{
    /* columns in blocks of 32 elements (IQ4_XS: of 256) */
    static const int64_t shapes[][2] = { {8, 1}, {16, 2}, {8, 90}, {24, 3}, {64, 16} };
    static const struct { int type; size_t sf[3], pb; } types[] = {   /* scale fields' and payload pieces' bytes */
        { SL_GGML_MXFP4, { 1 }, 16 }, { SL_GGML_IQ4_NL, { 2 }, 16 }, { SL_GGML_Q8_0, { 2 }, 32 },
        { SL_GGML_IQ4_XS, { 2, 2, 4 }, 16 },   /* d, scales_h, scales_l; eight 32-element sub-blocks */
    };
    uint64_t seed = 31;
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
            const int t = types[ti].type;
            const int64_t rows = shapes[s][0], nb = shapes[s][1], cols = nb * sl_gguf_block_elems(t);
            const size_t rb = sl_gguf_row_bytes(t, cols), bytes = rb * (size_t)rows;
            const size_t bb = sl_gguf_block_bytes(t), pb = types[ti].pb;
            uint8_t *w = kr_weights(t, rows, cols, &seed), *orig = malloc(bytes);
            cr_assert(w && orig);
            memcpy(orig, w, bytes);
            cr_assert_eq(sl_quant_rows8_pack(t, w, rows, cols), 0);
            for (int64_t g = 0; g < rows / 8; g++)
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *r = w + (size_t)g * 8 * rb + (size_t)b * 8 * bb;   /* group block */
                    for (int i = 0; i < 8; i++) {
                        const uint8_t *x = orig + (size_t)(8 * g + i) * rb + (size_t)b * bb;
                        size_t o = 0;   /* plain offset; the group block's part at 8 o */
                        for (int f = 0; f < 3 && types[ti].sf[f]; o += types[ti].sf[f++])
                            cr_assert_eq(memcmp(r + 8 * o + types[ti].sf[f] * (size_t)i, x + o, types[ti].sf[f]), 0,
                                         "%s group %lld block %lld row %d: scale field %d", sl_gguf_type_name(t),
                                         (long long)g, (long long)b, i, f);
                        /* nibble pieces: row i in 32-byte chunk i % 4, half i / 4 */
                        size_t at = pb == 16 ? 32 * (size_t)(i % 4) + 16 * (size_t)(i / 4) : pb * (size_t)i;
                        for (int piece = 0; o < bb; o += pb, piece++)
                            cr_assert_eq(memcmp(r + 8 * o + at, x + o, pb), 0,
                                         "%s group %lld block %lld row %d: piece %d", sl_gguf_type_name(t),
                                         (long long)g, (long long)b, i, piece);
                        cr_assert_eq(o, bb);
                    }
                }
            cr_assert_eq(sl_quant_rows8_unpack(t, w, rows, cols), 0);
            cr_assert_eq(memcmp(w, orig, bytes), 0, "%s %lld x %lld: unpack(pack(x)) != x", sl_gguf_type_name(t),
                         (long long)rows, (long long)cols);
            free(w);
            free(orig);
        }
}

Test(quant_rows8, refusals)
{
    uint8_t buf[16 * 17 * 2] = {0};
    cr_assert(sl_quant_rows8_supported(SL_GGML_MXFP4));
    cr_assert(sl_quant_rows8_supported(SL_GGML_IQ4_NL) && sl_quant_rows8_supported(SL_GGML_Q8_0));
    cr_assert(sl_quant_rows8_supported(SL_GGML_IQ4_XS));
    cr_assert(!sl_quant_rows8_supported(SL_GGML_IQ4_XS | (int)SL_GGML_ROWS8));
    cr_assert(!sl_quant_rows8_supported(SL_GGML_Q4_0) && !sl_quant_rows8_supported(SL_GGML_Q4_K));
    cr_assert(!sl_quant_rows8_supported(SL_GGML_MXFP4 | (int)SL_GGML_ROWS8));
    cr_assert_eq(sl_quant_rows8_pack(SL_GGML_Q4_0, buf, 8, 32), SL_EINVAL);
    cr_assert_str_eq(sl_last_error(), "rows8 pack: type 2 has no rows8 layout");
    cr_assert_eq(sl_quant_rows8_pack(SL_GGML_MXFP4, buf, 12, 32), SL_EINVAL);
    cr_assert_str_eq(sl_last_error(), "rows8 pack: 12 x 32 is not a whole number of 8-row groups");
    cr_assert_eq(sl_quant_rows8_unpack(SL_GGML_MXFP4, buf, 8, 48), SL_EINVAL);
    cr_assert_eq(sl_quant_rows8_pack(SL_GGML_MXFP4, NULL, 8, 32), SL_EINVAL);
    cr_assert_eq(sl_quant_rows8_pack(SL_GGML_MXFP4, buf, -8, 32), SL_EINVAL);
    cr_assert_eq(sl_quant_rows8_pack(SL_GGML_MXFP4, buf, 0, 32), 0);
    /* IQ4_XS: its blocks are 256 elements */
    static uint8_t xs[8 * 136];
    cr_assert_eq(sl_quant_rows8_pack(SL_GGML_IQ4_XS, xs, 8, 32), SL_EINVAL);
    cr_assert_str_eq(sl_last_error(), "rows8 pack: 8 x 32 is not a whole number of 8-row groups");
    cr_assert_eq(sl_quant_rows8_unpack(SL_GGML_IQ4_XS, xs, 8, 384), SL_EINVAL);
    cr_assert_eq(sl_quant_rows8_pack(SL_GGML_IQ4_XS, xs, 4, 256), SL_EINVAL);
    cr_assert_eq(sl_quant_rows8_pack(SL_GGML_IQ4_XS, xs, 8, 256), 0);
    /* the flagged id is MXFP4's activation type, nothing else takes the flag */
    cr_assert_eq(sl_quant_vec_dot_type(SL_GGML_MXFP4 | (int)SL_GGML_ROWS8), SL_GGML_Q8_0);
    cr_assert_eq(sl_quant_vec_dot_type(SL_GGML_IQ4_XS | (int)SL_GGML_ROWS8), SL_GGML_Q8_K);
    cr_assert_eq(sl_quant_vec_dot_type(SL_GGML_Q4_0 | (int)SL_GGML_ROWS8), -1);
    cr_assert_eq(sl_gguf_row_bytes(SL_GGML_MXFP4 | SL_GGML_ROWS8, 32), 0);
}
