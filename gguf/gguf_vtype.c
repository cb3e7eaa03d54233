/* Metadata value type table: names and on-disk scalar sizes. */
#include "gguf.h"

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
