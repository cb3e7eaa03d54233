/* Type table: block geometry, names and the activation type of each dot. */
#include <stdint.h>

#include "quant.h"

struct qtype_info { const char *name; int elems, bytes, vdt, weight; };

static const struct qtype_info k_types[SL_Q_COUNT] = {
    [SL_Q_F32]  = { "f32",  1,   4,   SL_Q_F32,  1 },
    [SL_Q_F16]  = { "f16",  1,   2,   SL_Q_F16,  1 },
    [SL_Q_BF16] = { "bf16", 1,   2,   SL_Q_BF16, 1 },
    [SL_Q_Q4_0] = { "q4_0", 32,  18,  SL_Q_Q8_0, 1 },
    [SL_Q_Q4_1] = { "q4_1", 32,  20,  SL_Q_Q8_1, 1 },
    [SL_Q_Q5_0] = { "q5_0", 32,  22,  SL_Q_Q8_0, 1 },
    [SL_Q_Q5_1] = { "q5_1", 32,  24,  SL_Q_Q8_1, 1 },
    [SL_Q_Q8_0] = { "q8_0", 32,  34,  SL_Q_Q8_0, 1 },
    [SL_Q_Q8_1] = { "q8_1", 32,  36,  -1,        0 },
    [SL_Q_Q2_K] = { "q2_K", 256, 84,  SL_Q_Q8_K, 1 },
    [SL_Q_Q3_K] = { "q3_K", 256, 110, SL_Q_Q8_K, 1 },
    [SL_Q_Q4_K] = { "q4_K", 256, 144, SL_Q_Q8_K, 1 },
    [SL_Q_Q5_K] = { "q5_K", 256, 176, SL_Q_Q8_K, 1 },
    [SL_Q_Q6_K] = { "q6_K", 256, 210, SL_Q_Q8_K, 1 },
    [SL_Q_Q8_K] = { "q8_K", 256, 292, -1,        0 },
};

static const struct qtype_info *info(int type)
{
    if (type < 0 || type >= SL_Q_COUNT || !k_types[type].name) return NULL;
    return &k_types[type];
}

int sl_quant_block_elems(int type) { const struct qtype_info *t = info(type); return t ? t->elems : 0; }
int sl_quant_block_bytes(int type) { const struct qtype_info *t = info(type); return t ? t->bytes : 0; }

const char *sl_quant_type_name(int type)
{
    const struct qtype_info *t = info(type);
    return t ? t->name : "unknown";
}

size_t sl_quant_row_bytes(int type, int64_t n)
{
    const struct qtype_info *t = info(type);
    if (!t || n < 0 || n % t->elems) return 0;
    uint64_t blocks = (uint64_t)n / (uint64_t)t->elems;
    if (blocks > SIZE_MAX / (uint64_t)t->bytes) return 0;
    return (size_t)(blocks * (uint64_t)t->bytes);
}

/* -1 for unknown ids and for the activation-only Q8_1 / Q8_K. */
int sl_quant_vec_dot_type(int type)
{
    const struct qtype_info *t = info(type);
    return t ? t->vdt : -1;
}

/* Weight types only: Q8_1 / Q8_K dequantize too but never appear in models. */
int sl_quant_is_supported(int type)
{
    const struct qtype_info *t = info(type);
    return t ? t->weight : 0;
}
