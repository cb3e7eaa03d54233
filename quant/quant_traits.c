/* The quant/ half of the type table: per ggml type id the row its family file
 * defines (SL_QUANT_TYPES), and the three public per-type operations as
 * lookups in it. Names and block geometry are gguf/gguf_type.c's; an id that
 * table does not know fails here the same way, with its message. */
#include <string.h>

#include "quant_internal.h"
#include "../gguf/base/sl_internal.h"

#define SL_QUANT_ROW(ID, t) [SL_GGML_##ID] = &sl_qtraits_##t,
static const sl_quant_traits *const rows[SL_GGML_TYPE_COUNT] = { SL_QUANT_TYPES(SL_QUANT_ROW) };
#undef SL_QUANT_ROW

const sl_quant_traits *sl_quant_traits_of(int type)
{
    const char *name = sl_gguf_type_name((uint32_t)type);
    if (!name) return NULL;                           /* unknown: the table's message */
    if (!rows[type]) sl_err_set(SL_EUNSUPPORTED, "ggml tensor type %s has no quant/ row", name);
    return rows[type];
}

int sl_quant_vec_dot_type(int type)
{
    if (type > 0 && (type & SL_GGML_ROWS8) && sl_quant_rows8_supported(sl_quant_base_type(type)))
        type = sl_quant_base_type(type);
    const sl_quant_traits *t = sl_quant_traits_of(type);
    return t ? t->vec_dot_type : -1;
}

int sl_quant_is_supported(int type) { return sl_quant_vec_dot_type(type) >= 0; }

/* The checks both directions share: the row, then nb from n (0 for n == 0);
 * SL_EINVAL for n < 0, a partial block or a NULL buffer. */
static int row_args(int type, int64_t n, const void *a, const void *b, const sl_quant_traits **t,
                    int64_t *nb)
{
    *t = sl_quant_traits_of(type);
    *nb = 0;
    if (!*t) return SL_EUNSUPPORTED;
    if (n == 0) return 0;
    if (!sl_gguf_row_bytes((uint32_t)type, n)) return SL_EINVAL;  /* the table's message */
    if (!a || !b) return SL_EINVAL;
    *nb = n / sl_gguf_block_elems((uint32_t)type);
    return 0;
}

int sl_quant_dequantize_row(int type, const void *src, float *dst, int64_t n)
{
    const sl_quant_traits *t;
    int64_t nb;
    int rc = row_args(type, n, src, dst, &t, &nb);
    if (rc < 0 || nb == 0) return rc;
    t->dequantize(src, dst, nb);
    return 0;
}

int64_t sl_quant_quantize_row(int type, const float *src, void *dst, int64_t n)
{
    return sl_quant_quantize_row_imat(type, src, dst, n, NULL);
}

int64_t sl_quant_quantize_row_imat(int type, const float *src, void *dst, int64_t n,
                                   const float *imatrix)
{
    const sl_quant_traits *t;
    int64_t nb;
    int rc = row_args(type, n, src, dst, &t, &nb);
    if (rc < 0 || nb == 0) return rc;
    if (!t->quantize) return SL_EUNSUPPORTED;
    if (t->quantize(src, dst, nb, imatrix) < 0) return SL_EINVAL;
    return (int64_t)((size_t)nb * sl_gguf_block_bytes((uint32_t)type));
}
