/* Scalar IEEE half and bfloat16 conversions by bit manipulation (no F16C):
 * the portable oracle for the SIMD converters, identical on every ISA. */
#include <string.h>

#include "quant.h"

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float sl_f16_to_f32(sl_f16 h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f)                       /* inf / nan: keep the payload */
        return bits_f32(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0) return bits_f32(sign);
        /* subnormal: normalise the mantissa into an f32 normal */
        uint32_t e = 113;                  /* 127 - 14 */
        while (!(mant & 0x400)) { mant <<= 1; e--; }
        return bits_f32(sign | (e << 23) | ((mant & 0x3ff) << 13));
    }
    return bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

sl_f16 sl_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    x &= 0x7fffffffu;
    if (x > 0x7f800000u)                   /* nan: quiet, keep top payload bits */
        return (sl_f16)(sign | 0x7e00 | ((x >> 13) & 0x3ff));
    if (x >= 0x47800000u)                  /* >= 65536 (and inf) -> inf */
        return (sl_f16)(sign | 0x7c00);
    if (x >= 0x38800000u) {                /* half normal range, 2^-14 and up */
        uint32_t r = x - 0x38000000u;      /* rebias exponent 127 -> 15 */
        r += 0xfffu + ((r >> 13) & 1);     /* round to nearest even; carries are fine */
        return (sl_f16)(sign | (r >> 13)); /* 65520.. rounds up to 0x7c00 = inf */
    }
    if (x <= 0x33000000u)                  /* <= 2^-25: ties to even give zero */
        return sign;
    /* half subnormal: value / 2^-24 rounded to nearest even */
    uint32_t e = x >> 23, m = (x & 0x7fffffu) | 0x800000u;
    uint32_t s = 126 - e;                  /* 14..24 */
    uint32_t q = m >> s, rem = m & ((1u << s) - 1), half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return (sl_f16)(sign | q);             /* q == 0x400 is the smallest normal */
}

float sl_bf16_to_f32(sl_bf16 h) { return bits_f32((uint32_t)h << 16); }

sl_bf16 sl_f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)   /* nan: truncating could make it inf */
        return (sl_bf16)((x >> 16) | 0x40);
    return (sl_bf16)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}
