/* The rows8 layout (quant.h): eight rows' blocks interleaved, packed and
 * unpacked in place one group at a time through a group-sized scratch. A
 * type's form is its block's leading scale fields, then its payload in
 * pieces of equal size. */
#include <stdlib.h>
#include <string.h>

#include "quant_internal.h"
#include "../gguf/base/sl_internal.h"

/* A block's scale fields' bytes (up to three, 0-ended) and payload piece bytes. */
typedef struct { uint8_t field[4]; uint8_t piece; } r8_form;

/* 0: no rows8 layout. */
static int form_of(int type, r8_form *f)
{
    switch (type) {
    case SL_GGML_MXFP4: *f = (r8_form){ { 1 }, 16 }; return 1;
    case SL_GGML_IQ4_NL: *f = (r8_form){ { 2 }, 16 }; return 1;
    case SL_GGML_Q8_0: *f = (r8_form){ { 2 }, 32 }; return 1;
    case SL_GGML_IQ4_XS: *f = (r8_form){ { 2, 2, 4 }, 16 }; return 1;   /* d, scales_h, scales_l */
    default: return 0;
    }
}

int sl_quant_rows8_supported(int type)
{
    r8_form f;
    return form_of(type, &f);
}

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

/* n bytes between plain p and rows8 r, the way `pack` says. */
static void move(uint8_t *p, uint8_t *r, size_t n, int pack)
{
    if (pack) memcpy(r, p, n);
    else memcpy(p, r, n);
}

/* One group: plain rows in p <-> rows8 in r (nb blocks a row of bb bytes). */
static void repack_group(uint8_t *p, uint8_t *r, int64_t nb, size_t bb, const r8_form *f, int pack)
{
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *g = r + (size_t)b * 8 * bb;
        size_t at = 0;   /* the byte of a plain block; 8 * at of the group block */
        for (const uint8_t *fb = f->field; *fb; at += *fb++)
            for (int i = 0; i < 8; i++)
                move(p + ((size_t)i * (size_t)nb + (size_t)b) * bb + at, g + 8 * at + (size_t)i * *fb, *fb, pack);
        for (; at < bb; at += f->piece)
            for (int i = 0; i < 8; i++)
                move(p + ((size_t)i * (size_t)nb + (size_t)b) * bb + at, g + 8 * at + sl_quant_rows8_at(i, f->piece),
                     f->piece, pack);
    }
}

static int repack(int type, void *data, int64_t rows, int64_t cols, int pack)
{
    size_t gb = 0;
    int rc = check_shape(type, data, rows, cols, &gb, pack ? "pack" : "unpack");
    if (rc || rows == 0) return rc;
    void *tmp = malloc(gb);
    if (!tmp) return sl_err_set(SL_ENOMEM, "rows8: out of memory (%zu bytes)", gb);
    r8_form f;
    form_of(type, &f);
    const size_t bb = sl_gguf_block_bytes((uint32_t)type);
    const int64_t nb = cols / (int64_t)sl_gguf_block_elems((uint32_t)type);
    for (int64_t g = 0; g < rows / 8; g++) {
        uint8_t *at = (uint8_t *)data + (size_t)g * gb;
        memcpy(tmp, at, gb);
        if (pack) repack_group(tmp, at, nb, bb, &f, 1);
        else repack_group(at, tmp, nb, bb, &f, 0);
    }
    free(tmp);
    return 0;
}

int sl_quant_rows8_pack(int type, void *data, int64_t rows, int64_t cols) { return repack(type, data, rows, cols, 1); }
int sl_quant_rows8_unpack(int type, void *data, int64_t rows, int64_t cols) { return repack(type, data, rows, cols, 0); }
