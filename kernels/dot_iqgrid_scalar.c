/* Scalar oracle of the grid i-quant dots (dot_iqgrid.h): element by element,
 * straight from the block layouts of quant/quant_iqgrid.h. */
#include <stdlib.h>
#include <string.h>

#include "dot_iqgrid.h"

static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* sum over 8 elements of q8 * grid byte, negated per sign bit; am: |q8| * g */
static int32_t grp8(uint64_t e, unsigned signs, const int8_t *q, int am)
{
    int32_t s = 0;
    for (int j = 0; j < 8; j++) {
        int v = (int)(uint8_t)(e >> (8 * j)) * (am ? abs(q[j]) : q[j]);
        s += !am && ((signs >> j) & 1) ? -v : v;
    }
    return s;
}

/* iq1: sum of q8 * (8 g + delta8) over 8 elements */
static int32_t grp8_iq1(uint64_t e, int delta8, const int8_t *q, int am)
{
    int32_t s = 0;
    for (int j = 0; j < 8; j++) {
        int w = 8 * (int8_t)(e >> (8 * j)) + delta8;
        s += am ? abs(w) * abs(q[j]) : w * q[j];
    }
    return s;
}

/* Each type's exact integer sum of a super-block against the Q8_K values q
 * (am: magnitudes); the terms are SL_IQGRID_EACH's (below). */
static int32_t isum_iq2_xxs(const sl_block_iq2_xxs *x, const int8_t *q, int am)
{
    int32_t isum = 0;
    for (int ib = 0; ib < 8; ib++) {
        uint32_t w = rd32(x->qs + 8 * ib + 4);
        int32_t s = 0;
        for (int l = 0; l < 4; l++)
            s += grp8(sl_iq2xxs_grid[x->qs[8 * ib + l]], sl_iq_sign_byte(w >> (7 * l)), q + 32 * ib + 8 * l, am);
        isum += (int32_t)(2 * (w >> 28) + 1) * s;
    }
    return isum;
}

/* iq2_xs and iq2_s: a 4-bit scale per 16 elements (see quant_iqgrid.c) */
static int32_t isum_iq2_xs_s(const void *vx, const int8_t *q8, int am, int is_s)
{
    const sl_block_iq2_xs *x = vx;
    const sl_block_iq2_s *xs = vx;
    const uint8_t *scales = is_s ? xs->scales : x->scales;
    int32_t isum = 0;
    for (int ib = 0; ib < 8; ib++)
        for (int h = 0; h < 2; h++) {
            int32_t s = 0;
            for (int l = 2 * h; l < 2 * h + 2; l++) {
                const int8_t *q = q8 + 32 * ib + 8 * l;
                if (is_s)
                    s += grp8(sl_iq2s_grid[xs->qs[4 * ib + l] | ((xs->qh[ib] >> (2 * l)) & 3) << 8],
                              xs->signs[4 * ib + l], q, am);
                else
                    s += grp8(sl_iq2xs_grid[x->qs[4 * ib + l] & 511], sl_iq_sign_byte(x->qs[4 * ib + l] >> 9), q, am);
            }
            isum += (2 * ((scales[ib] >> (4 * h)) & 15) + 1) * s;
        }
    return isum;
}

static int32_t isum_iq2_xs(const sl_block_iq2_xs *x, const int8_t *q, int am) { return isum_iq2_xs_s(x, q, am, 0); }
static int32_t isum_iq2_s(const sl_block_iq2_s *x, const int8_t *q, int am) { return isum_iq2_xs_s(x, q, am, 1); }

static int32_t isum_iq3_xxs(const sl_block_iq3_xxs *x, const int8_t *q, int am)
{
    int32_t isum = 0;
    for (int ib = 0; ib < 8; ib++) {
        uint32_t w = rd32(x->w + 4 * ib);
        int32_t s = 0;
        for (int l = 0; l < 4; l++) {
            uint64_t e = sl_iq3xxs_grid[x->qs[8 * ib + 2 * l]]
                       | (uint64_t)sl_iq3xxs_grid[x->qs[8 * ib + 2 * l + 1]] << 32;
            s += grp8(e, sl_iq_sign_byte(w >> (7 * l)), q + 32 * ib + 8 * l, am);
        }
        isum += (int32_t)(2 * (w >> 28) + 1) * s;
    }
    return isum;
}

static int32_t isum_iq3_s(const sl_block_iq3_s *x, const int8_t *q, int am)
{
    int32_t isum = 0;
    for (int ib = 0; ib < 8; ib++) {
        int32_t s = 0;
        for (int l = 0; l < 4; l++) {
            int k = 8 * ib + 2 * l;
            unsigned i0 = x->qs[k] | ((x->qh[k / 8] >> (k % 8)) & 1) << 8;
            unsigned i1 = x->qs[k + 1] | ((x->qh[(k + 1) / 8] >> ((k + 1) % 8)) & 1) << 8;
            uint64_t e = sl_iq3s_grid[i0] | (uint64_t)sl_iq3s_grid[i1] << 32;
            s += grp8(e, x->signs[4 * ib + l], q + 32 * ib + 8 * l, am);
        }
        isum += (2 * ((x->scales[ib / 2] >> (4 * (ib % 2))) & 15) + 1) * s;
    }
    return isum;
}

static int32_t isum_iq1_s(const sl_block_iq1_s *x, const int8_t *q, int am)
{
    int32_t isum = 0;
    for (int ib = 0; ib < 8; ib++) {
        unsigned h = x->qh[ib];
        int delta8 = h & 0x8000 ? -1 : 1;
        int32_t s = 0;
        for (int l = 0; l < 4; l++)
            s += grp8_iq1(sl_iq1s_grid[x->qs[4 * ib + l] | ((h >> (3 * l)) & 7) << 8], delta8,
                          q + 32 * ib + 8 * l, am);
        isum += (int32_t)(2 * ((h >> 12) & 7) + 1) * s;
    }
    return isum;
}

static int32_t isum_iq1_m(const sl_block_iq1_m *x, const int8_t *q8, int am)
{
    int32_t isum = 0;
    for (int ib = 0; ib < 8; ib++) {
        unsigned sc = (unsigned)(x->scales[2 * (ib / 2)] | x->scales[2 * (ib / 2) + 1] << 8);
        unsigned v = sc >> (6 * (ib % 2));
        for (int h = 0; h < 2; h++) {
            int32_t s = 0;
            for (int l = 2 * h; l < 2 * h + 2; l++) {
                unsigned q = x->qh[2 * ib + h] >> (4 * (l % 2));
                s += grp8_iq1(sl_iq1s_grid[x->qs[4 * ib + l] | (q & 7) << 8], q & 8 ? -1 : 1,
                              q8 + 32 * ib + 8 * l, am);
            }
            isum += (int32_t)(2 * ((v >> (3 * h)) & 7) + 1) * s;
        }
    }
    return isum;
}

/* Block i's term: (d * d8) * MULT * isum (magnitudes: |d * d8|), *b = 0. */
#define BLK(T, ID, BT, DBITS, MULT)                                                        \
    void sl_dot_blk_##T(const void *vx, const void *vy, int64_t i, float *a, float *b, int am) \
    {                                                                                     \
        const BT *x = (const BT *)vx + i;                                                 \
        const sl_block_q8_k *y = (const sl_block_q8_k *)vy + i;                           \
        float dd = sl_f16_to_f32(DBITS) * y->d;                                           \
        *a = (am && dd < 0 ? -dd : dd) * (MULT) * (float)isum_##T(x, y->qs, am);          \
        *b = 0.0f;                                                                        \
    }
SL_IQGRID_EACH(BLK)
