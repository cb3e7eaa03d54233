/* libFuzzer target for the model-description loader: a GGUF from memory
 * (seeds: the heads of the small models) -> sl_model_desc_load, then the
 * per-layer queries the forward pass makes. The file is taken to be 32 MiB
 * (zeros past the input; the seeds' models are smaller), so tensor extents of
 * a truncated head still fit and the metadata and tensor-table checks are
 * what is exercised. */
#include "../engine/model.h"
#include "../gguf/base/sl_status.h"

#include <string.h>

#define VIRTUAL_SIZE (32ull << 20)

typedef struct { const uint8_t *p; size_t n; } mem;

static int64_t mem_read(void *ctx, void *buf, size_t len, uint64_t off)
{
    const mem *m = ctx;
    if (off >= VIRTUAL_SIZE) return 0;
    if (len > VIRTUAL_SIZE - off) len = (size_t)(VIRTUAL_SIZE - off);
    size_t have = off < m->n ? m->n - (size_t)off : 0;
    if (have > len) have = len;
    if (have) memcpy(buf, m->p + off, have);
    memset((uint8_t *)buf + have, 0, len - have);
    return (int64_t)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mem m = { data, size };
    sl_gguf *g;
    if (sl_gguf_open_cb(&g, mem_read, &m, VIRTUAL_SIZE, "fuzz")) return 0;
    sl_model_desc d;
    memset(&d, 0, sizeof d);
    if (sl_model_desc_load(&d, g) == 0) {
        if (d.n_layer < 1 || d.n_vocab < 1 || d.n_embd < 1) __builtin_trap();
        volatile int sink = 0;
        for (int32_t l = 0; l < d.n_layer; l++) {
            const sl_layer_desc *ld = sl_model_layer(&d, l);
            sink += ld != NULL;
            sink += sl_model_layer_swa(&d, l);
        }
        const char *rf = sl_model_rope_factors_name(&d, 4096);
        sink += rf != NULL;
        (void)sink;
    } else if (!sl_last_error()[0]) {
        __builtin_trap();   /* every refusal has a message */
    }
    sl_gguf_close(g);
    return 0;
}
