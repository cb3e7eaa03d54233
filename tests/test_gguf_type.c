/* The ggml type table (gguf/gguf_type.c): block geometry of every type, tensor
 * and row sizes, overflow, and one behaviour for unknown ids everywhere. */
#include "sl_test.h"
#include "../gguf/gguf.h"
#include "../gguf/base/sl_internal.h"

#include <stdio.h>
#include <string.h>

Test(gguf_type, sizes)
{
    static const struct { uint32_t type, blk, bytes; const char *name; } t[] = {
        { SL_GGML_F32, 1, 4, "f32" }, { SL_GGML_F16, 1, 2, "f16" }, { SL_GGML_BF16, 1, 2, "bf16" },
        { SL_GGML_Q4_0, 32, 18, "q4_0" }, { SL_GGML_Q4_1, 32, 20, "q4_1" },
        { SL_GGML_Q5_0, 32, 22, "q5_0" }, { SL_GGML_Q5_1, 32, 24, "q5_1" },
        { SL_GGML_Q8_0, 32, 34, "q8_0" }, { SL_GGML_Q8_1, 32, 36, "q8_1" },
        { SL_GGML_Q2_K, 256, 84, "q2_K" }, { SL_GGML_Q3_K, 256, 110, "q3_K" },
        { SL_GGML_Q4_K, 256, 144, "q4_K" }, { SL_GGML_Q5_K, 256, 176, "q5_K" },
        { SL_GGML_Q6_K, 256, 210, "q6_K" }, { SL_GGML_Q8_K, 256, 292, "q8_K" },
        { SL_GGML_IQ4_NL, 32, 18, "iq4_nl" }, { SL_GGML_IQ4_XS, 256, 136, "iq4_xs" },
        { SL_GGML_TQ1_0, 256, 54, "tq1_0" }, { SL_GGML_TQ2_0, 256, 66, "tq2_0" },
        { SL_GGML_MXFP4, 32, 17, "mxfp4" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cr_assert_eq(sl_gguf_block_elems(t[i].type), t[i].blk);
        cr_assert_eq(sl_gguf_block_bytes(t[i].type), t[i].bytes);
        cr_assert_eq(sl_gguf_row_bytes(t[i].type, 512), 512 / t[i].blk * t[i].bytes);
        cr_assert_str_eq(sl_gguf_type_name(t[i].type), t[i].name);
        uint64_t ne[3] = { 512, 3, 7 }, out = 0;
        cr_assert_eq(sl_gguf_tensor_size(t[i].type, 3, ne, &out), 0);
        cr_assert_eq(out, 512 / t[i].blk * t[i].bytes * 21);
        ne[0] = 512 + (t[i].blk > 1);
        if (t[i].blk > 1) cr_assert_eq(sl_gguf_tensor_size(t[i].type, 3, ne, &out), SL_EFORMAT);
    }
    uint64_t ne[4] = { 256, 1, 1, 1 }, out;
    for (uint32_t bad = 4; bad < 40; bad++) {
        if (bad == 6 || bad == 7 || (bad >= 8 && bad <= 15) || bad == 30) continue;
        if (bad == 20 || bad == 23 || bad == 34 || bad == 35 || bad == 39) continue;
        if ((bad >= 16 && bad <= 19) || bad == 21 || bad == 22 || bad == 29) continue;  /* grid i-quants */
        cr_assert_null(sl_gguf_type_name(bad));
        cr_assert_eq(sl_gguf_tensor_size(bad, 1, ne, &out), SL_EUNSUPPORTED);
    }
    cr_assert_eq(sl_gguf_tensor_size(9999, 1, ne, &out), SL_EUNSUPPORTED);
    uint64_t big[4] = { 1ull << 32, 1ull << 29, 1, 1 };     /* 2^61 floats = 2^63 bytes */
    cr_assert_eq(sl_gguf_tensor_size(SL_GGML_F32, 2, big, &out), 0);
    cr_assert_eq(out, 1ull << 63);
    big[1] = 1ull << 30;                                     /* bytes overflow */
    cr_assert_eq(sl_gguf_tensor_size(SL_GGML_F32, 2, big, &out), SL_ERANGE);
    big[1] = 1ull << 31;                                     /* element count > INT64_MAX */
    cr_assert_eq(sl_gguf_tensor_size(SL_GGML_F32, 2, big, &out), SL_ERANGE);
    uint64_t huge[4] = { 1ull << 32, 1ull << 32, 1, 1 };
    cr_assert_eq(sl_gguf_tensor_size(SL_GGML_F32, 2, huge, &out), SL_ERANGE);
    uint64_t wide[1] = { 1ull << 62 };                       /* one row of 2^64 bytes */
    cr_assert_eq(sl_gguf_tensor_size(SL_GGML_F32, 1, wide, &out), SL_ERANGE);
    uint64_t zero[4] = { 32, 0, 1, 1 };
    cr_assert_eq(sl_gguf_tensor_size(SL_GGML_F32, 2, zero, &out), SL_EFORMAT);
    cr_assert_eq(sl_gguf_tensor_size(SL_GGML_F32, 0, zero, &out), SL_EINVAL);
    cr_assert_eq(sl_gguf_tensor_size(SL_GGML_F32, 5, zero, &out), SL_EINVAL);
}

/* Every function of the table fails the same way on an id it does not know,
 * including negative ints that callers (quant/, kernels/) pass in. */
Test(gguf_type, unknown_ids)
{
    const uint32_t bad[] = { 4, 5, 24, 28, 31, 36, 40, 1000, 9999, (uint32_t)-1, (uint32_t)-100000 };
    uint64_t ne[4] = { 256, 1, 1, 1 }, out = 7;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "unknown ggml tensor type %u", bad[i]);
        sl_err_clear();
        cr_assert_null(sl_gguf_type_name(bad[i]));
        cr_assert_str_eq(sl_last_error(), want);
        sl_err_clear();
        cr_assert_eq(sl_gguf_block_elems(bad[i]), 0);
        cr_assert_str_eq(sl_last_error(), want);
        sl_err_clear();
        cr_assert_eq(sl_gguf_block_bytes(bad[i]), 0);
        cr_assert_str_eq(sl_last_error(), want);
        sl_err_clear();
        cr_assert_eq(sl_gguf_row_bytes(bad[i], 256), 0);
        cr_assert_str_eq(sl_last_error(), want);
        sl_err_clear();
        cr_assert_eq(sl_gguf_tensor_size(bad[i], 1, ne, &out), SL_EUNSUPPORTED);
        cr_assert_str_eq(sl_last_error(), want);
        cr_assert_eq(out, 7, "output untouched");
    }
}

Test(gguf_type, row_bytes)
{
    cr_assert_eq(sl_gguf_row_bytes(SL_GGML_Q4_K, 512), 288);
    cr_assert_eq(sl_gguf_row_bytes(SL_GGML_Q4_0, 0), 0);
    sl_err_clear();
    cr_assert_eq(sl_gguf_row_bytes(SL_GGML_Q4_K, 255), 0);
    cr_assert(strstr(sl_last_error(), "q4_K") != NULL, "%s", sl_last_error());
    cr_assert_eq(sl_gguf_row_bytes(SL_GGML_Q4_0, 48), 0);
    cr_assert_eq(sl_gguf_row_bytes(SL_GGML_Q4_0, -32), 0);
    cr_assert_eq(sl_gguf_row_bytes(SL_GGML_F32, INT64_MAX), 0, "overflow");
}
