/* libFuzzer target for the GGUF reader: open from memory, then touch every
 * value, tensor and extent the reader hands out. */
#include "../gguf/gguf.h"

#include <string.h>

typedef struct { const uint8_t *p; size_t n; } mem;

static int64_t mem_read(void *ctx, void *buf, size_t len, uint64_t off)
{
    const mem *m = ctx;
    if (off >= m->n) return 0;
    size_t k = m->n - off < len ? m->n - (size_t)off : len;
    memcpy(buf, m->p + off, k);
    return (int64_t)k;
}

static uint64_t walk(const sl_gguf_value *v, int depth)
{
    uint64_t h = sl_gguf_value_type(v);
    uint64_t len;
    switch (sl_gguf_value_type(v)) {
    case SL_GGUF_STRING: {
        const char *s = sl_gguf_value_str(v, &len);
        for (uint64_t i = 0; i < len; i++) h += (unsigned char)s[i];
        return h + (unsigned char)s[len];   /* the NUL terminator must be there */
    }
    case SL_GGUF_ARRAY:
        for (uint64_t i = 0; i < sl_gguf_value_arr_len(v); i++) {
            sl_gguf_value tmp;
            const sl_gguf_value *e;
            if (sl_gguf_value_arr_at(v, i, &tmp, &e) == 0 && depth < 8) h += walk(e, depth + 1);
        }
        return h;
    case SL_GGUF_F32: case SL_GGUF_F64: return h + (uint64_t)(sl_gguf_value_f64(v) != 0);
    default: return h + sl_gguf_value_u64(v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mem m = { data, size };
    sl_gguf *g;
    if (sl_gguf_open_cb(&g, mem_read, &m, size, "fuzz")) {
        if (!sl_gguf_errmsg(NULL)[0]) __builtin_trap();   /* every failure has a message */
        return 0;
    }
    volatile uint64_t sink = 0;
    for (int64_t i = 0; i < sl_gguf_n_kv(g); i++) {
        const char *key = sl_gguf_kv_key(g, i);
        if (sl_gguf_find_key(g, key) != i) __builtin_trap();
        sink += walk(sl_gguf_kv_value(g, i), 0);
        uint32_t u; uint64_t u64; const char *s; uint32_t et; uint64_t n; const void *d;
        sl_gguf_get_u32(g, key, &u);
        sl_gguf_get_u64(g, key, &u64);
        sl_gguf_get_str(g, key, &s, &n);
        if (sl_gguf_kv_arr(g, i, &et, &n, &d) == 0 && n > 0) {
            if (d) sink += ((const uint8_t *)d)[n * sl_gguf_vtype_size(et) - 1];
            else if (et == SL_GGUF_STRING && sl_gguf_arr_str(g, i, n - 1, &s, &u64) == 0) sink += u64;
        }
    }
    for (int64_t i = 0; i < sl_gguf_n_tensors(g); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (sl_gguf_find_tensor(g, t->name) != t) __builtin_trap();
        if (t->file_offset + t->nbytes > size || t->file_offset % sl_gguf_alignment(g)) __builtin_trap();
        uint8_t b[16];
        if (sl_gguf_read(g, b, t->nbytes < 16 ? t->nbytes : 16, t->file_offset)) __builtin_trap();
        sink += b[0];
    }
    sl_gguf_extent e;
    for (int32_t l = 0; l < sl_gguf_n_layers(g); l++)
        if (sl_gguf_layer_extent(g, l, &e) == 0 && e.n_tensors && e.end > size) __builtin_trap();
    sl_gguf_nonlayer_extent(g, &e);
    sink += sl_gguf_total_tensor_bytes(g);
    (void)sink;
    sl_gguf_close(g);
    return 0;
}
