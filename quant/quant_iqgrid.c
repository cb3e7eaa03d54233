/* Scalar dequantization of the grid i-quants (quant_iqgrid.h) and their
 * type-table rows. Every value is
 * exact in float32 (an f16 scale of 11 significant bits times small integers
 * or eighths), so the order of the products does not matter; what does is the
 * sign of a zero: each factor is converted to float on its own and a sign is
 * applied as a negation of the finished product, as the format defines. */
#include <string.h>

#include "quant_internal.h"

static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline float gbyte(uint64_t e, int j) { return (float)(uint8_t)(e >> (8 * j)); }

/* 8 values of a 2-bit-lattice group: db * grid byte, negated per sign bit. */
static void put8(float *y, float db, uint64_t e, unsigned signs)
{
    for (int j = 0; j < 8; j++) {
        float v = db * gbyte(e, j);
        y[j] = (signs >> j) & 1 ? -v : v;
    }
}

static void deq_iq2_xxs(const void *src, float *y, int64_t nb)
{
    const sl_block_iq2_xxs *b = src;
    for (int64_t i = 0; i < nb; i++, b++) {
        float d = sl_f16_to_f32(b->d);
        for (int ib = 0; ib < 8; ib++, y += 32) {
            uint32_t w = rd32(b->qs + 8 * ib + 4);
            float db = (d * (0.5f + (float)(w >> 28))) * 0.25f;
            for (int l = 0; l < 4; l++)
                put8(y + 8 * l, db, sl_iq2xxs_grid[b->qs[8 * ib + l]], sl_iq_sign_byte(w >> (7 * l)));
        }
    }
}

/* iq2_xs and iq2_s: a 4-bit scale per 16 elements; a group's grid entry and
 * sign byte come from 9 + 7 bits (xs) or 8 + 2 bits and a full byte (s). */
static void deq_iq2_xs_s(const void *src, float *y, int64_t nb, int is_s)
{
    const sl_block_iq2_xs *bx = src;
    const sl_block_iq2_s *bs = src;
    for (int64_t i = 0; i < nb; i++, bx++, bs++) {
        float d = sl_f16_to_f32(is_s ? bs->d : bx->d);
        for (int ib = 0; ib < 8; ib++, y += 32)
            for (int l = 0; l < 4; l++) {
                unsigned sc = is_s ? bs->scales[ib] : bx->scales[ib];
                float db = (d * (0.5f + (float)(l < 2 ? sc & 15 : sc >> 4))) * 0.25f;
                if (is_s)
                    put8(y + 8 * l, db, sl_iq2s_grid[bs->qs[4 * ib + l] | ((bs->qh[ib] >> (2 * l)) & 3) << 8],
                         bs->signs[4 * ib + l]);
                else
                    put8(y + 8 * l, db, sl_iq2xs_grid[bx->qs[4 * ib + l] & 511], sl_iq_sign_byte(bx->qs[4 * ib + l] >> 9));
            }
    }
}

static void deq_iq3_xxs(const void *src, float *y, int64_t nb)
{
    const sl_block_iq3_xxs *b = src;
    for (int64_t i = 0; i < nb; i++, b++) {
        float d = sl_f16_to_f32(b->d);
        for (int ib = 0; ib < 8; ib++, y += 32) {
            uint32_t w = rd32(b->w + 4 * ib);
            float db = (d * (0.5f + (float)(w >> 28))) * 0.5f;
            for (int l = 0; l < 4; l++) {
                uint64_t e = sl_iq3xxs_grid[b->qs[8 * ib + 2 * l]]
                           | (uint64_t)sl_iq3xxs_grid[b->qs[8 * ib + 2 * l + 1]] << 32;
                put8(y + 8 * l, db, e, sl_iq_sign_byte(w >> (7 * l)));
            }
        }
    }
}

static void deq_iq3_s(const void *src, float *y, int64_t nb)
{
    const sl_block_iq3_s *b = src;
    for (int64_t i = 0; i < nb; i++, b++) {
        float d = sl_f16_to_f32(b->d);
        for (int ib = 0; ib < 8; ib++, y += 32) {
            unsigned s = ib % 2 ? b->scales[ib / 2] >> 4 : b->scales[ib / 2] & 15;
            float db = d * (float)(1 + 2 * s);
            for (int l = 0; l < 4; l++) {
                int k = 8 * ib + 2 * l;   /* quad index */
                unsigned i0 = b->qs[k] | ((b->qh[k / 8] >> (k % 8)) & 1) << 8;
                unsigned i1 = b->qs[k + 1] | ((b->qh[(k + 1) / 8] >> ((k + 1) % 8)) & 1) << 8;
                uint64_t e = sl_iq3s_grid[i0] | (uint64_t)sl_iq3s_grid[i1] << 32;
                put8(y + 8 * l, db, e, b->signs[4 * ib + l]);
            }
        }
    }
}

/* 8 values of an iq1 group: dl * (g + delta), g the signed grid bytes. */
static void put8_iq1(float *y, float dl, uint64_t e, float delta)
{
    for (int j = 0; j < 8; j++) y[j] = dl * ((float)(int8_t)(e >> (8 * j)) + delta);
}

static void deq_iq1_s(const void *src, float *y, int64_t nb)
{
    const sl_block_iq1_s *b = src;
    for (int64_t i = 0; i < nb; i++, b++) {
        float d = sl_f16_to_f32(b->d);
        for (int ib = 0; ib < 8; ib++, y += 32) {
            unsigned h = b->qh[ib];
            float dl = d * (float)(2 * ((h >> 12) & 7) + 1);
            float delta = h & 0x8000 ? -SL_IQ1_DELTA : SL_IQ1_DELTA;
            for (int l = 0; l < 4; l++)
                put8_iq1(y + 8 * l, dl, sl_iq1s_grid[b->qs[4 * ib + l] | ((h >> (3 * l)) & 7) << 8], delta);
        }
    }
}

static void deq_iq1_m(const void *src, float *y, int64_t nb)
{
    const sl_block_iq1_m *b = src;
    for (int64_t i = 0; i < nb; i++, b++) {
        float d = sl_f16_to_f32(sl_iq1m_d_bits(b->scales));
        for (int ib = 0; ib < 8; ib++, y += 32) {
            unsigned sc = (unsigned)(b->scales[2 * (ib / 2)] | b->scales[2 * (ib / 2) + 1] << 8);
            unsigned v = sc >> (6 * (ib % 2));
            float dl1 = d * (float)(2 * (v & 7) + 1), dl2 = d * (float)(2 * ((v >> 3) & 7) + 1);
            for (int l = 0; l < 4; l++) {
                unsigned q = b->qh[2 * ib + l / 2] >> (4 * (l % 2));
                float delta = q & 8 ? -SL_IQ1_DELTA : SL_IQ1_DELTA;
                put8_iq1(y + 8 * l, l < 2 ? dl1 : dl2, sl_iq1s_grid[b->qs[4 * ib + l] | (q & 7) << 8], delta);
            }
        }
    }
}

static void deq_iq2_xs(const void *src, float *y, int64_t nb) { deq_iq2_xs_s(src, y, nb, 0); }
static void deq_iq2_s(const void *src, float *y, int64_t nb) { deq_iq2_xs_s(src, y, nb, 1); }

/* The rows: quantize is quant_iqgrid_q.c's, one search for every grid type. */
#define IQGRID_ROW(t, ID)                                                                  \
    static int quant_##t(const float *x, void *dst, int64_t nb, const float *imatrix)     \
    {                                                                                     \
        return sl_quant_iqgrid_quantize(ID, x, dst, nb, imatrix);                         \
    }                                                                                     \
    const sl_quant_traits sl_qtraits_##t = { deq_##t, quant_##t, SL_GGML_Q8_K };
IQGRID_ROW(iq2_xxs, SL_GGML_IQ2_XXS)
IQGRID_ROW(iq2_xs, SL_GGML_IQ2_XS)
IQGRID_ROW(iq2_s, SL_GGML_IQ2_S)
IQGRID_ROW(iq3_xxs, SL_GGML_IQ3_XXS)
IQGRID_ROW(iq3_s, SL_GGML_IQ3_S)
IQGRID_ROW(iq1_s, SL_GGML_IQ1_S)
IQGRID_ROW(iq1_m, SL_GGML_IQ1_M)
