/* The rows8 layout (quant.h): eight rows' blocks interleaved, packed and
 * unpacked in place one group at a time through a group-sized scratch. A
 * type's entry is where its scale field ends: the rest of a block is its
 * payload. */
#include <stdlib.h>
#include <string.h>

#include "quant_internal.h"
#include "../gguf/base/sl_internal.h"

/* A block's scale field (at its start) and payload bytes; 0: no rows8 layout. */
static size_t scale_bytes(int type)
{
    switch (type) {
    case SL_GGML_MXFP4: return 1;
    case SL_GGML_IQ4_NL: case SL_GGML_Q8_0: return 2;
    default: return 0;
    }
}

int sl_quant_rows8_supported(int type) { return scale_bytes(type) != 0; }

/* The checks both directions share; the group's bytes in *gb. */
static int check_shape(int type, const void *data, int64_t rows, int64_t cols, size_t *gb, const char *what)
{
    if (!sl_quant_rows8_supported(type))
        return sl_err_set(SL_EINVAL, "rows8 %s: type %d has no rows8 layout", what, type);
    size_t rb = sl_gguf_row_bytes((uint32_t)type, cols);
    if (!data || rows < 0 || rows % 8 || rb == 0 || (rows > 0 && rb > SIZE_MAX / 8 / (size_t)rows))
        return sl_err_set(SL_EINVAL, "rows8 %s: %lld x %lld is not a whole number of 8-row groups", what,
                          (long long)rows, (long long)cols);
    *gb = 8 * rb;
    return 0;
}

/* One group: plain rows in p <-> rows8 in r (nb blocks a row of bb bytes,
 * sb of them the scale field). */
static void repack_group(uint8_t *p, uint8_t *r, int64_t nb, size_t bb, size_t sb, int pack)
{
    const size_t pb = bb - sb;
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *g = r + (size_t)b * 8 * bb;
        for (int i = 0; i < 8; i++) {
            uint8_t *x = p + ((size_t)i * (size_t)nb + (size_t)b) * bb;
            uint8_t *sc = g + (size_t)i * sb, *q = g + 8 * sb + sl_quant_rows8_at(i, pb);
            if (pack) { memcpy(sc, x, sb); memcpy(q, x + sb, pb); }
            else { memcpy(x, sc, sb); memcpy(x + sb, q, pb); }
        }
    }
}

static int repack(int type, void *data, int64_t rows, int64_t cols, int pack)
{
    size_t gb = 0;
    int rc = check_shape(type, data, rows, cols, &gb, pack ? "pack" : "unpack");
    if (rc || rows == 0) return rc;
    void *tmp = malloc(gb);
    if (!tmp) return sl_err_set(SL_ENOMEM, "rows8: out of memory (%zu bytes)", gb);
    const size_t bb = sl_gguf_block_bytes((uint32_t)type), sb = scale_bytes(type);
    const int64_t nb = cols / SL_QK;   /* every rows8 type has 32-element blocks */
    for (int64_t g = 0; g < rows / 8; g++) {
        uint8_t *at = (uint8_t *)data + (size_t)g * gb;
        memcpy(tmp, at, gb);
        if (pack) repack_group(tmp, at, nb, bb, sb, 1);
        else repack_group(at, tmp, nb, bb, sb, 0);
    }
    free(tmp);
    return 0;
}

int sl_quant_rows8_pack(int type, void *data, int64_t rows, int64_t cols) { return repack(type, data, rows, cols, 1); }
int sl_quant_rows8_unpack(int type, void *data, int64_t rows, int64_t cols) { return repack(type, data, rows, cols, 0); }
