/* The rows8 layout (quant.h): eight rows' blocks interleaved, packed and
 * unpacked in place one group at a time through a group-sized scratch. */
#include <stdlib.h>
#include <string.h>

#include "quant_internal.h"
#include "../gguf/base/sl_internal.h"

int sl_quant_rows8_supported(int type) { return type == SL_GGML_MXFP4; }

/* The checks both directions share; the group's bytes in *gb. */
static int args(int type, const void *data, int64_t rows, int64_t cols, size_t *gb, const char *what)
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

/* One group: plain rows in p <-> rows8 in r (nb blocks a row). */
static void group(sl_block_mxfp4 *p, sl_block_mxfp4_r8 *r, int64_t nb, int pack)
{
    for (int64_t b = 0; b < nb; b++)
        for (int i = 0; i < 8; i++) {
            sl_block_mxfp4 *x = p + i * nb + b;
            uint8_t *e = &r[b].e[i], *q = r[b].qs[i & 3] + 16 * (i >> 2);
            if (pack) { *e = x->e; memcpy(q, x->qs, 16); }
            else { x->e = *e; memcpy(x->qs, q, 16); }
        }
}

static int run(int type, void *data, int64_t rows, int64_t cols, int pack)
{
    size_t gb = 0;
    int rc = args(type, data, rows, cols, &gb, pack ? "pack" : "unpack");
    if (rc || rows == 0) return rc;
    void *tmp = malloc(gb);
    if (!tmp) return sl_err_set(SL_ENOMEM, "rows8: out of memory (%zu bytes)", gb);
    for (int64_t g = 0; g < rows / 8; g++) {
        char *at = (char *)data + (size_t)g * gb;
        memcpy(tmp, at, gb);
        if (pack) group(tmp, (sl_block_mxfp4_r8 *)at, cols / SL_QK, 1);
        else group((sl_block_mxfp4 *)at, tmp, cols / SL_QK, 0);
    }
    free(tmp);
    return 0;
}

int sl_quant_rows8_pack(int type, void *data, int64_t rows, int64_t cols) { return run(type, data, rows, cols, 1); }
int sl_quant_rows8_unpack(int type, void *data, int64_t rows, int64_t cols) { return run(type, data, rows, cols, 0); }
