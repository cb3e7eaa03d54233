/* The grid/lattice i-quants: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
 * IQ1_M. Block layouts (sizes asserted), their lattice grids (iqgrid_tables.c)
 * and the sign-byte helper shared by dequantize, quantize and every dot
 * kernel. All are 256-element super-blocks dotted with Q8_K.
 *
 * Values (all exact in float32, see quant_iqgrid.c): a group of 8 (iq3: 2 x 4)
 * elements is one grid entry, one byte per element, times a scale:
 *   iq2_*:   d * (2s+1) / 8 * g,  g in {8, 25, 43}, per-element sign
 *   iq3_xxs: d * (2s+1) / 4 * g,  g in {4, 12, ..., 62}
 *   iq3_s:   d * (2s+1) * g,      g in {1, 3, ..., 15}
 *   iq1_*:   d * (2s+1) * (g + delta), g in {-1, 0, 1}, delta = +-1/8 */
#ifndef SL_QUANT_IQGRID_H
#define SL_QUANT_IQGRID_H

#include <assert.h>
#include <stdint.h>

typedef struct { uint16_t d; uint8_t qs[64]; } sl_block_iq2_xxs;            /* 8 x (4 idx, u32 signs|scale) */
typedef struct { uint16_t d; uint16_t qs[32]; uint8_t scales[8]; } sl_block_iq2_xs;  /* 9-bit idx | 7-bit sign */
typedef struct { uint16_t d; uint8_t qs[32]; uint8_t signs[32]; uint8_t qh[8]; uint8_t scales[8]; } sl_block_iq2_s;
typedef struct { uint16_t d; uint8_t qs[64]; uint8_t w[32]; } sl_block_iq3_xxs;     /* w: 8 u32 signs|scale */
typedef struct { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t signs[32]; uint8_t scales[4]; } sl_block_iq3_s;
typedef struct { uint16_t d; uint8_t qs[32]; uint16_t qh[8]; } sl_block_iq1_s;
typedef struct { uint8_t qs[32]; uint8_t qh[16]; uint8_t scales[8]; } sl_block_iq1_m;  /* d in scales' top nibbles */

static_assert(sizeof(sl_block_iq2_xxs) == 66, "iq2_xxs layout");
static_assert(sizeof(sl_block_iq2_xs) == 74, "iq2_xs layout");
static_assert(sizeof(sl_block_iq2_s) == 82, "iq2_s layout");
static_assert(sizeof(sl_block_iq3_xxs) == 98, "iq3_xxs layout");
static_assert(sizeof(sl_block_iq3_s) == 110, "iq3_s layout");
static_assert(sizeof(sl_block_iq1_s) == 50, "iq1_s layout");
static_assert(sizeof(sl_block_iq1_m) == 56, "iq1_m layout");

/* Grids: entry i = the group's values, lowest byte first (iq1s: int8). */
extern const uint64_t sl_iq2xxs_grid[256];
extern const uint64_t sl_iq2xs_grid[512];
extern const uint64_t sl_iq2s_grid[1024];
extern const uint32_t sl_iq3xxs_grid[256];
extern const uint32_t sl_iq3s_grid[512];
extern const uint64_t sl_iq1s_grid[2048];

/* sl_iq_sign_byte(k) for k < 128, and the same as 8 byte masks (0xff: negate) */
extern const uint8_t sl_iq_signs8[128];
extern const uint64_t sl_iq_signs64[128];

#define SL_IQ1_DELTA 0.125f

/* Sign byte of a 7-bit sign index (iq2_xxs, iq2_xs, iq3_xxs): the index in
 * bits 0..6 and its parity in bit 7, so an even number of the 8 elements is
 * negated. Bit j set: element j negated. */
static inline uint8_t sl_iq_sign_byte(unsigned k)
{
    k &= 127;
    return (uint8_t)(k | (unsigned)(__builtin_parity(k) << 7));
}

/* iq1_m's super-block scale: the f16 bits in the top nibbles of its 4 u16. */
static inline uint16_t sl_iq1m_d_bits(const uint8_t *scales8)
{
    uint16_t sc[4];
    for (int i = 0; i < 4; i++) sc[i] = (uint16_t)(scales8[2 * i] | scales8[2 * i + 1] << 8);
    return (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
}

#endif
