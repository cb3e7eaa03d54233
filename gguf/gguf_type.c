/* The ggml tensor type table (gguf_type.h): block geometry is a public fact of
 * the format, and the only copy of it in the tree. */
#include "gguf.h"
#include "base/sl_internal.h"

typedef struct { const char *name; uint32_t blck, bytes; } type_info;

static const type_info types[SL_GGML_TYPE_COUNT] = {
    [SL_GGML_F32]  = { "f32",  1,   4 },
    [SL_GGML_F16]  = { "f16",  1,   2 },
    [SL_GGML_Q4_0] = { "q4_0", 32,  18 },
    [SL_GGML_Q4_1] = { "q4_1", 32,  20 },
    [SL_GGML_Q5_0] = { "q5_0", 32,  22 },
    [SL_GGML_Q5_1] = { "q5_1", 32,  24 },
    [SL_GGML_Q8_0] = { "q8_0", 32,  34 },
    [SL_GGML_Q8_1] = { "q8_1", 32,  36 },
    [SL_GGML_Q2_K] = { "q2_K", 256, 84 },
    [SL_GGML_Q3_K] = { "q3_K", 256, 110 },
    [SL_GGML_Q4_K] = { "q4_K", 256, 144 },
    [SL_GGML_Q5_K] = { "q5_K", 256, 176 },
    [SL_GGML_Q6_K] = { "q6_K", 256, 210 },
    [SL_GGML_Q8_K] = { "q8_K", 256, 292 },
    [SL_GGML_IQ4_NL] = { "iq4_nl", 32, 18 },
    [SL_GGML_IQ4_XS] = { "iq4_xs", 256, 136 },
    [SL_GGML_IQ2_XXS] = { "iq2_xxs", 256, 66 },
    [SL_GGML_IQ2_XS]  = { "iq2_xs",  256, 74 },
    [SL_GGML_IQ3_XXS] = { "iq3_xxs", 256, 98 },
    [SL_GGML_IQ1_S]   = { "iq1_s",   256, 50 },
    [SL_GGML_IQ3_S]   = { "iq3_s",   256, 110 },
    [SL_GGML_IQ2_S]   = { "iq2_s",   256, 82 },
    [SL_GGML_IQ1_M]   = { "iq1_m",   256, 56 },
    [SL_GGML_BF16] = { "bf16", 1,   2 },
    [SL_GGML_TQ1_0] = { "tq1_0", 256, 54 },
    [SL_GGML_TQ2_0] = { "tq2_0", 256, 66 },
    [SL_GGML_MXFP4] = { "mxfp4", 32, 17 },
};

/* The one lookup: every function of the table fails the same way on an unknown id. */
static const type_info *find_type(uint32_t id)
{
    if (id < SL_GGML_TYPE_COUNT && types[id].name) return &types[id];
    sl_err_set(SL_EUNSUPPORTED, "unknown ggml tensor type %u", id);
    return NULL;
}

const char *sl_gguf_type_name(uint32_t type)
{
    const type_info *t = find_type(type);
    return t ? t->name : NULL;
}

uint32_t sl_gguf_block_elems(uint32_t type)
{
    const type_info *t = find_type(type);
    return t ? t->blck : 0;
}

uint32_t sl_gguf_block_bytes(uint32_t type)
{
    const type_info *t = find_type(type);
    return t ? t->bytes : 0;
}

size_t sl_gguf_row_bytes(uint32_t type, int64_t n)
{
    const type_info *t = find_type(type);
    if (!t) return 0;
    if (n < 0 || n % t->blck) {
        sl_err_set(SL_EINVAL, "row of %lld elements is not a whole number of %s blocks (%u)",
                   (long long)n, t->name, t->blck);
        return 0;
    }
    uint64_t blocks = (uint64_t)n / t->blck;
    if (blocks > SIZE_MAX / t->bytes) {
        sl_err_set(SL_ERANGE, "row of %lld %s elements does not fit size_t", (long long)n, t->name);
        return 0;
    }
    return (size_t)(blocks * t->bytes);
}

int sl_gguf_tensor_size(uint32_t type, uint32_t n_dims, const uint64_t *ne, uint64_t *out)
{
    const type_info *t = find_type(type);
    if (!t) return SL_EUNSUPPORTED;
    if (!ne || n_dims < 1 || n_dims > SL_GGUF_MAX_DIMS)
        return sl_err_set(SL_EINVAL, "n_dims %u not in 1..%d", n_dims, SL_GGUF_MAX_DIMS);
    uint64_t n_el = 1, rows = 1;
    for (uint32_t i = 0; i < n_dims; i++) {
        if (ne[i] == 0) return sl_err_set(SL_EFORMAT, "ne[%u] is 0", i);
        if (ne[i] > (uint64_t)INT64_MAX)
            return sl_err_set(SL_ERANGE, "ne[%u] = %llu too large", i, (unsigned long long)ne[i]);
        /* ggml counts elements in int64: the product must fit too. */
        if (__builtin_mul_overflow(n_el, ne[i], &n_el) || n_el > (uint64_t)INT64_MAX)
            return sl_err_set(SL_ERANGE, "element count overflows at ne[%u] = %llu", i,
                              (unsigned long long)ne[i]);
        if (i > 0) rows *= ne[i];   /* cannot overflow: rows <= n_el */
    }
    if (ne[0] % t->blck)
        return sl_err_set(SL_EFORMAT, "ne[0] = %llu is not a multiple of the %s block size %u",
                          (unsigned long long)ne[0], t->name, t->blck);
    uint64_t row_bytes, total;
    if (__builtin_mul_overflow(ne[0] / t->blck, (uint64_t)t->bytes, &row_bytes) ||
        __builtin_mul_overflow(row_bytes, rows, &total))
        return sl_err_set(SL_ERANGE, "byte size overflows (%llu rows of %llu bytes)",
                          (unsigned long long)rows, (unsigned long long)row_bytes);
    if (out) *out = total;
    return SL_OK;
}
