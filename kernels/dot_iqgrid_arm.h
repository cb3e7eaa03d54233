/* aarch64 dots of the grid i-quants with Q8_K (the scheme of dot_iqgrid.h),
 * included by dot_iqgrid_neon.c (armv8.0: vmull_s8 + vpadalq_s16) and
 * dot_iqgrid_dotprod.c (vdotq_s32), which define ARM_SUFFIX and ARM_DOTPROD (dot_arm_base.h).
 * Per 16 elements: two grid entries side by side as signed bytes (grid
 * values <= 62), negated per sign bit ((g ^ m) - m with m the byte masks
 * vtst expands from the sign bytes), dotted exactly into 4 int32 lanes,
 * scaled by 2s+1 (vmlaq_n_s32); iq1: the bytes 8g + delta8. The super-block
 * sum is reduced once and scaled like the scalar oracle's term, the terms
 * added in double in the same order: bit-identical to scalar. */
#include "dot_arm_base.h"
#include "dot_iqgrid.h"

#define INL static inline __attribute__((always_inline))

INL uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

INL int8x16_t pair(uint64_t a, uint64_t b) { return vcombine_s8(vcreate_s8(a), vcreate_s8(b)); }

/* g negated where bit j of the group's sign byte is set (s0: first 8, s1: next 8) */
INL int8x16_t apply_signs(int8x16_t g, unsigned s0, unsigned s1)
{
    static const uint8_t bits[16] = { 1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128 };
    uint8x16_t v = vcombine_u8(vdup_n_u8((uint8_t)s0), vdup_n_u8((uint8_t)s1));
    int8x16_t m = vreinterpretq_s8_u8(vtstq_u8(v, vld1q_u8(bits)));
    return vsubq_s8(veorq_s8(g, m), m);
}

/* iq1: 8g + delta8 for two groups */
INL int8x16_t iq1_w(uint64_t a, uint64_t b, int da, int db)
{
    int8x16_t g = vshlq_n_s8(pair(a, b), 3);
    return vaddq_s8(g, vcombine_s8(vdup_n_s8((int8_t)da), vdup_n_s8((int8_t)db)));
}

INL int8x16_t q16(const int8_t *q) { return vld1q_s8(q); }

/* sum of one 32-element sub-block: groups (g0 g1) and (g2 g3), scales sa (first 16), sb */
INL int32x4_t sub32(int32x4_t acc, int8x16_t w01, int8x16_t w23, const int8_t *q, int sa, int sb)
{
    if (sa == sb)
        return vmlaq_n_s32(acc, dot16(dot16(vdupq_n_s32(0), w01, q16(q)), w23, q16(q + 16)), sa);
    acc = vmlaq_n_s32(acc, dot16(vdupq_n_s32(0), w01, q16(q)), sa);
    return vmlaq_n_s32(acc, dot16(vdupq_n_s32(0), w23, q16(q + 16)), sb);
}

/* A group whose four 7-bit sign indices and 4-bit scale share one word w
 * (iq2_xxs, iq3_xxs), its grid entries e0..e3. */
INL int32x4_t sub32_w(int32x4_t acc, uint64_t e0, uint64_t e1, uint64_t e2, uint64_t e3, uint32_t w,
                      const int8_t *q)
{
    int8x16_t w01 = apply_signs(pair(e0, e1), sl_iq_sign_byte(w), sl_iq_sign_byte(w >> 7));
    int8x16_t w23 = apply_signs(pair(e2, e3), sl_iq_sign_byte(w >> 14), sl_iq_sign_byte(w >> 21));
    int s = (int)(2 * (w >> 28) + 1);
    return sub32(acc, w01, w23, q, s, s);
}

/* A group with a scale byte c: 4 bits per 16 elements (iq2_xs, iq2_s). */
INL int32x4_t sub32_c(int32x4_t acc, int8x16_t w01, int8x16_t w23, const int8_t *q, unsigned c)
{
    return sub32(acc, w01, w23, q, (int)(2 * (c & 15) + 1), (int)(2 * (c >> 4) + 1));
}

INL int32_t isum_iq2_xxs(const sl_block_iq2_xxs *x, const int8_t *q)
{
    int32x4_t acc = vdupq_n_s32(0);
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *a = x->qs + 8 * ib;
        acc = sub32_w(acc, sl_iq2xxs_grid[a[0]], sl_iq2xxs_grid[a[1]], sl_iq2xxs_grid[a[2]], sl_iq2xxs_grid[a[3]],
                      rd32(a + 4), q + 32 * ib);
    }
    return vaddvq_s32(acc);
}

INL int32_t isum_iq2_xs(const sl_block_iq2_xs *x, const int8_t *q)
{
    int32x4_t acc = vdupq_n_s32(0);
    for (int ib = 0; ib < 8; ib++) {
        const uint16_t *s = x->qs + 4 * ib;
        int8x16_t w01 = apply_signs(pair(sl_iq2xs_grid[s[0] & 511], sl_iq2xs_grid[s[1] & 511]),
                                    sl_iq_sign_byte(s[0] >> 9), sl_iq_sign_byte(s[1] >> 9));
        int8x16_t w23 = apply_signs(pair(sl_iq2xs_grid[s[2] & 511], sl_iq2xs_grid[s[3] & 511]),
                                    sl_iq_sign_byte(s[2] >> 9), sl_iq_sign_byte(s[3] >> 9));
        acc = sub32_c(acc, w01, w23, q + 32 * ib, x->scales[ib]);
    }
    return vaddvq_s32(acc);
}

INL int32_t isum_iq2_s(const sl_block_iq2_s *x, const int8_t *q)
{
    int32x4_t acc = vdupq_n_s32(0);
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *s = x->qs + 4 * ib, *sg = x->signs + 4 * ib;
        unsigned h = x->qh[ib];
        int8x16_t w01 = apply_signs(pair(sl_iq2s_grid[s[0] | (h & 3) << 8], sl_iq2s_grid[s[1] | ((h >> 2) & 3) << 8]), sg[0], sg[1]);
        int8x16_t w23 = apply_signs(pair(sl_iq2s_grid[s[2] | ((h >> 4) & 3) << 8], sl_iq2s_grid[s[3] | ((h >> 6) & 3) << 8]), sg[2], sg[3]);
        acc = sub32_c(acc, w01, w23, q + 32 * ib, x->scales[ib]);
    }
    return vaddvq_s32(acc);
}

INL uint64_t g3(const uint32_t *grid, unsigned i0, unsigned i1)
{
    return grid[i0] | (uint64_t)grid[i1] << 32;
}

INL int32_t isum_iq3_xxs(const sl_block_iq3_xxs *x, const int8_t *q)
{
    int32x4_t acc = vdupq_n_s32(0);
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *a = x->qs + 8 * ib;
        uint32_t w = rd32(x->w + 4 * ib);
        acc = sub32_w(acc, g3(sl_iq3xxs_grid, a[0], a[1]), g3(sl_iq3xxs_grid, a[2], a[3]),
                      g3(sl_iq3xxs_grid, a[4], a[5]), g3(sl_iq3xxs_grid, a[6], a[7]), w, q + 32 * ib);
    }
    return vaddvq_s32(acc);
}

INL int32_t isum_iq3_s(const sl_block_iq3_s *x, const int8_t *q)
{
    int32x4_t acc = vdupq_n_s32(0);
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *a = x->qs + 8 * ib, *sg = x->signs + 4 * ib;
        unsigned h = x->qh[ib];
#define I3(u) (a[u] | ((h >> (u)) & 1) << 8)
        int8x16_t w01 = apply_signs(pair(g3(sl_iq3s_grid, I3(0), I3(1)), g3(sl_iq3s_grid, I3(2), I3(3))), sg[0], sg[1]);
        int8x16_t w23 = apply_signs(pair(g3(sl_iq3s_grid, I3(4), I3(5)), g3(sl_iq3s_grid, I3(6), I3(7))), sg[2], sg[3]);
#undef I3
        int s = (int)(2 * ((x->scales[ib / 2] >> (4 * (ib % 2))) & 15) + 1);
        acc = sub32(acc, w01, w23, q + 32 * ib, s, s);
    }
    return vaddvq_s32(acc);
}

INL int32_t isum_iq1_s(const sl_block_iq1_s *x, const int8_t *q)
{
    int32x4_t acc = vdupq_n_s32(0);
    for (int ib = 0; ib < 8; ib++) {
        unsigned h = x->qh[ib];
        const uint8_t *s = x->qs + 4 * ib;
        int d8 = h & 0x8000 ? -1 : 1;
        int8x16_t w01 = iq1_w(sl_iq1s_grid[s[0] | (h & 7) << 8], sl_iq1s_grid[s[1] | ((h >> 3) & 7) << 8], d8, d8);
        int8x16_t w23 = iq1_w(sl_iq1s_grid[s[2] | ((h >> 6) & 7) << 8], sl_iq1s_grid[s[3] | ((h >> 9) & 7) << 8], d8, d8);
        int sc = (int)(2 * ((h >> 12) & 7) + 1);
        acc = sub32(acc, w01, w23, q + 32 * ib, sc, sc);
    }
    return vaddvq_s32(acc);
}

INL int32_t isum_iq1_m(const sl_block_iq1_m *x, const int8_t *q)
{
    int32x4_t acc = vdupq_n_s32(0);
    for (int ib = 0; ib < 8; ib++) {
        unsigned a = x->qh[2 * ib], b = x->qh[2 * ib + 1];
        const uint8_t *s = x->qs + 4 * ib;
        int8x16_t w01 = iq1_w(sl_iq1s_grid[s[0] | (a & 7) << 8], sl_iq1s_grid[s[1] | ((a >> 4) & 7) << 8],
                              a & 0x08 ? -1 : 1, a & 0x80 ? -1 : 1);
        int8x16_t w23 = iq1_w(sl_iq1s_grid[s[2] | (b & 7) << 8], sl_iq1s_grid[s[3] | ((b >> 4) & 7) << 8],
                              b & 0x08 ? -1 : 1, b & 0x80 ? -1 : 1);
        unsigned sc = (unsigned)(x->scales[2 * (ib / 2)] | x->scales[2 * (ib / 2) + 1] << 8) >> (6 * (ib % 2));
        acc = sub32(acc, w01, w23, q + 32 * ib, (int)(2 * (sc & 7) + 1), (int)(2 * ((sc >> 3) & 7) + 1));
    }
    return vaddvq_s32(acc);
}

#define IQ_DOT(T, ID, BT, DBITS, MULT)                                                   \
    static void FN(dot_##T)(int64_t n, float *s, const void *vx, const void *vy)   \
    {                                                                              \
        const BT *x = vx;                                                          \
        const sl_block_q8_k *y = vy;                                               \
        double sum = 0.0;                                                          \
        for (int64_t i = 0; i < n / SL_QKK; i++, x++, y++) {                       \
            float dd = f16s(DBITS) * y->d;                                         \
            sum += (double)(dd * (MULT) * (float)isum_##T(x, y->qs));              \
        }                                                                          \
        *s = (float)sum;                                                           \
    }
SL_IQGRID_EACH(IQ_DOT)

#define IQ_SET(T, ID, BT, DBITS, MULT) k->vec_dot[ID] = FN(dot_##T);
void FN(sl_dot_fill_iqgrid)(sl_kern *k) { SL_IQGRID_EACH(IQ_SET) }
