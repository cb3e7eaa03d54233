/* ggml tensor type table and metadata value type table. */
#include "gguf.h"
#include "sl_internal.h"

#include <string.h>

typedef struct { uint32_t id; const char *name; uint32_t blck, bytes; } type_info;

/* Block geometry is a public fact of the format (elements and bytes per block). */
static const type_info types[] = {
    { SL_GGML_F32,  "f32",  1,   4 },
    { SL_GGML_F16,  "f16",  1,   2 },
    { SL_GGML_Q4_0, "q4_0", 32,  18 },
    { SL_GGML_Q4_1, "q4_1", 32,  20 },
    { SL_GGML_Q5_0, "q5_0", 32,  22 },
    { SL_GGML_Q5_1, "q5_1", 32,  24 },
    { SL_GGML_Q8_0, "q8_0", 32,  34 },
    { SL_GGML_Q8_1, "q8_1", 32,  36 },
    { SL_GGML_Q2_K, "q2_K", 256, 84 },
    { SL_GGML_Q3_K, "q3_K", 256, 110 },
    { SL_GGML_Q4_K, "q4_K", 256, 144 },
    { SL_GGML_Q5_K, "q5_K", 256, 176 },
    { SL_GGML_Q6_K, "q6_K", 256, 210 },
    { SL_GGML_Q8_K, "q8_K", 256, 292 },
    { SL_GGML_BF16, "bf16", 1,   2 },
};

static const type_info *find_type(uint32_t id)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (types[i].id == id) return &types[i];
    return NULL;
}

const char *sl_gguf_type_name(uint32_t type)
{
    const type_info *t = find_type(type);
    return t ? t->name : NULL;
}

int sl_gguf_type_block(uint32_t type, uint32_t *elems_per_block, uint32_t *bytes_per_block)
{
    const type_info *t = find_type(type);
    if (!t) return sl_err_set(SL_EUNSUPPORTED, "unknown ggml tensor type %u", type);
    if (elems_per_block) *elems_per_block = t->blck;
    if (bytes_per_block) *bytes_per_block = t->bytes;
    return SL_OK;
}

int sl_gguf_tensor_size(uint32_t type, uint32_t n_dims, const uint64_t *ne, uint64_t *out)
{
    const type_info *t = find_type(type);
    if (!t) return sl_err_set(SL_EUNSUPPORTED, "unknown ggml tensor type %u", type);
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

const char *sl_gguf_vtype_name(uint32_t vtype)
{
    static const char *const names[] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
    };
    return vtype < sizeof names / sizeof names[0] ? names[vtype] : NULL;
}

size_t sl_gguf_vtype_size(uint32_t vtype)
{
    switch (vtype) {
    case SL_GGUF_U8: case SL_GGUF_I8: case SL_GGUF_BOOL: return 1;
    case SL_GGUF_U16: case SL_GGUF_I16: return 2;
    case SL_GGUF_U32: case SL_GGUF_I32: case SL_GGUF_F32: return 4;
    case SL_GGUF_U64: case SL_GGUF_I64: case SL_GGUF_F64: return 8;
    default: return 0;
    }
}
