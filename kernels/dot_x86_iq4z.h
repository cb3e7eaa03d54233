/* 512-bit block kernels of the codebook types (IQ4_XS with Q8_K; IQ4_NL and
 * MXFP4 with Q8_0, two 32-element blocks per step) and of TQ1_0 (below), for the avx512 and
 * avx512vnni levels, included after dot_x86_iq4.h by the level files, whose
 * fillers put these over the 256-bit ones (X86_IQ4Z_SET). 64 elements per step:
 * - the 32 nibble bytes of two sub-blocks become 64 indices in element order
 *   (one 128-bit lane shuffle, a masked shift, an and);
 * - one vpshufb from the table of |level|, and the level's sign (a fixed
 *   index bit: the tables are sorted) as an opmask that negates the
 *   activations (vpsubb under the mask: q8 is never -128), so the products
 *   are |level| (u8) x signed q8 (zmm vpsignb does not exist);
 * - IQ4_XS: vpmaddubsw (|pair sum| <= 2 * 127 * 127, no saturation) then the
 *   ls - 32 word scale by vpdpwssd (vpmaddwd + add without VNNI); IQ4_NL,
 *   MXFP4: vpdpbusd (or its madd form), then one FMA per two blocks by
 *   (d_x d_y | d_x' d_y'). Float lanes are summed once per row. */
#ifndef SL_DOT_X86_IQ4Z_H
#define SL_DOT_X86_IQ4Z_H

#include <immintrin.h>

typedef __m512i z512;

static const int8_t k_abs_iq4nl[16] = { 127, 104, 83, 65, 49, 35, 22, 10, 1, 13, 25, 38, 53, 69, 89, 113 };
static const int8_t k_abs_mxfp4[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12 };

INL z512 z_dot_u8s8(z512 acc, z512 a, z512 b)
{
#ifdef __AVX512VNNI__
    return _mm512_dpbusd_epi32(acc, a, b);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(a, b), _mm512_set1_epi16(1)));
#endif
}

INL z512 z_madd_scaled(z512 acc, z512 a, z512 b, z512 w16)
{
#ifdef __AVX512VNNI__
    return _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(a, b), w16);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(a, b), w16));
#endif
}

/* nibble bytes of sub-blocks a | b (16 bytes each) -> 64 indices: a lo, a hi, b lo, b hi */
INL z512 z_nib64(__m256i q)
{
    z512 z = _mm512_castsi256_si512(q);
    z = _mm512_shuffle_i64x2(z, z, 0x50);                     /* 128-bit lanes 0, 0, 1, 1 */
    z = _mm512_mask_srli_epi16(z, 0xff00ff00u, z, 4);         /* lanes 1 and 3: high nibbles */
    return _mm512_and_si512(z, _mm512_set1_epi8(15));
}

/* ---- IQ4_XS --------------------------------------------------------------- */
typedef struct { z512 aq[4], sc[4]; __mmask64 ng[4]; float d; } uz_iq4_xs;

INL void unpz_iq4_xs(const sl_block_iq4_xs *x, uz_iq4_xs *u)
{
    const z512 alut = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)k_abs_iq4nl));
    uint32_t sl;
    memcpy(&sl, x->scales_l, 4);
    __m256i l = _mm256_srlv_epi32(_mm256_set1_epi32((int)sl), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    __m256i h = _mm256_srlv_epi32(_mm256_set1_epi32((int)x->scales_h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
    __m256i ls = _mm256_or_si256(_mm256_and_si256(l, _mm256_set1_epi32(15)),
                                 _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(3)), 4));
    /* ls - 32 in the low word of dword ib; step k: words 0-15 sub-block 2k, 16-31 2k+1 */
    const z512 ls32 = _mm512_castsi256_si512(_mm256_sub_epi32(ls, _mm256_set1_epi32(32)));
    const z512 half = _mm512_set_epi16(2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
                                       0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    UNROLL
    for (int k = 0; k < 4; k++) {
        z512 idx = z_nib64(_mm256_loadu_si256((const __m256i *)(x->qs + 32 * k)));
        u->aq[k] = _mm512_shuffle_epi8(alut, idx);
        u->ng[k] = _mm512_testn_epi8_mask(idx, _mm512_set1_epi8(8));   /* levels 0..7 are negative */
        u->sc[k] = _mm512_permutexvar_epi16(_mm512_add_epi16(half, _mm512_set1_epi16((short)(4 * k))), ls32);
    }
    u->d = f16s(x->d);
}

INL __m512 pairz_iq4_xs(const uz_iq4_xs *u, const sl_block_q8_k *y, __m512 acc)
{
    z512 i0 = _mm512_setzero_si512(), i1 = _mm512_setzero_si512();
    UNROLL
    for (int k = 0; k < 4; k += 2) {
        z512 a = _mm512_loadu_si512((const void *)(y->qs + 64 * k));
        z512 b = _mm512_loadu_si512((const void *)(y->qs + 64 * k + 64));
        a = _mm512_mask_sub_epi8(a, u->ng[k], _mm512_setzero_si512(), a);
        b = _mm512_mask_sub_epi8(b, u->ng[k + 1], _mm512_setzero_si512(), b);
        i0 = z_madd_scaled(i0, u->aq[k], a, u->sc[k]);
        i1 = z_madd_scaled(i1, u->aq[k + 1], b, u->sc[k + 1]);
    }
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(i0, i1)), _mm512_set1_ps(u->d * y->d), acc);
}

/* ---- IQ4_NL, MXFP4: blocks b and b1 (b1 == b with d1 = 0 for an odd tail) -- */
typedef struct { z512 aq; __mmask64 ng; float d0, d1; } uz_nl;

INL void unpz_nl(const uint8_t *qs0, const uint8_t *qs1, const int8_t *abs16, int neg_hi, float d0, float d1,
                 uz_nl *u)
{
    z512 idx = z_nib64(_mm256_loadu2_m128i((const __m128i *)qs1, (const __m128i *)qs0));
    u->aq = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)abs16)), idx);
    u->ng = neg_hi ? _mm512_test_epi8_mask(idx, _mm512_set1_epi8(8)) : _mm512_testn_epi8_mask(idx, _mm512_set1_epi8(8));
    u->d0 = d0;
    u->d1 = d1;
}

INL __m512 pairz_nl(const uz_nl *u, const sl_block_q8_0 *y0, const sl_block_q8_0 *y1, __m512 acc)
{
    z512 y = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)y0->qs)),
                                _mm256_loadu_si256((const __m256i *)y1->qs), 1);
    y = _mm512_mask_sub_epi8(y, u->ng, _mm512_setzero_si512(), y);
    z512 i = z_dot_u8s8(_mm512_setzero_si512(), u->aq, y);
    __m512 f = _mm512_insertf32x8(_mm512_set1_ps(u->d0 * f16s(y0->d)), _mm256_set1_ps(u->d1 * f16s(y1->d)), 1);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(i), f, acc);
}

INL void unpz_iq4_nl(const sl_block_iq4_nl *x, int64_t b, int64_t b1, float m1, uz_nl *u)
{
    unpz_nl(x[b].qs, x[b1].qs, k_abs_iq4nl, 0, f16s(x[b].d), m1 * f16s(x[b1].d), u);
}

INL void unpz_mxfp4(const sl_block_mxfp4 *x, int64_t b, int64_t b1, float m1, uz_nl *u)
{
    unpz_nl(x[b].qs, x[b1].qs, k_abs_mxfp4, 1, sl_e8m0_half(x[b].e), m1 * sl_e8m0_half(x[b1].e), u);
}

/* Eight blocks at once (the bulk of a row): the 8 scale products come from
 * one f16 convert and one multiply, and each step takes its pair of them
 * with one vpermps, instead of four scalar converts per step. */
typedef struct { z512 aq[4]; __mmask64 ng[4]; __m256 dx; } uz_nl8;

INL void unpz8_nl(const uint8_t *qs, size_t stride, const int8_t *abs16, int neg_hi, __m256 dx, uz_nl8 *u)
{
    const z512 alut = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)abs16));
    UNROLL
    for (int j = 0; j < 4; j++) {
        const uint8_t *q0 = qs + 2 * (size_t)j * stride;
        z512 idx = z_nib64(_mm256_loadu2_m128i((const __m128i *)(q0 + stride), (const __m128i *)q0));
        u->aq[j] = _mm512_shuffle_epi8(alut, idx);
        u->ng[j] = neg_hi ? _mm512_test_epi8_mask(idx, _mm512_set1_epi8(8))
                          : _mm512_testn_epi8_mask(idx, _mm512_set1_epi8(8));
    }
    u->dx = dx;
}

INL void unpz8_iq4_nl(const sl_block_iq4_nl *x, uz_nl8 *u)
{
    unpz8_nl(x->qs, sizeof *x, k_abs_iq4nl, 0, X86_D8(x), u);
}

INL void unpz8_mxfp4(const sl_block_mxfp4 *x, uz_nl8 *u)
{
    unpz8_nl(x->qs, sizeof *x, k_abs_mxfp4, 1, e8m0x8(x), u);
}

INL __m512 pairz8_nl(const uz_nl8 *u, const sl_block_q8_0 *y, __m512 acc)
{
    const __m512 s = _mm512_castps256_ps512(_mm256_mul_ps(u->dx, X86_D8(y)));
    UNROLL
    for (int j = 0; j < 4; j++) {
        z512 v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)y[2 * j].qs)),
                                    _mm256_loadu_si256((const __m256i *)y[2 * j + 1].qs), 1);
        v = _mm512_mask_sub_epi8(v, u->ng[j], _mm512_setzero_si512(), v);
        z512 i = z_dot_u8s8(_mm512_setzero_si512(), u->aq[j], v);
        const int l0 = X86_POS8(2 * j), l1 = X86_POS8(2 * j + 1);   /* blocks 2j, 2j+1's lanes in s */
        __m512 f = _mm512_permutexvar_ps(_mm512_set_epi32(l1, l1, l1, l1, l1, l1, l1, l1, l0, l0, l0, l0, l0, l0,
                                                          l0, l0), s);
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(i), f, acc);
    }
    return acc;
}

/* ---- TQ1_0: base-3 digits, 64 elements per step --------------------------
 * A byte b holding digits n = 0..4 gives digit n as (v * 3) >> 8 with
 * v = b * 3^n mod 256 (byte adds), i.e. [v > 85] + [v > 170]: two unsigned
 * compares into opmasks. Steps: qs[0..31] x (1 | 3), x (9 | 27), then
 * (qs[0..31] x 81 | qs[32..47] x 1, x 3), then (qs[32..47] x 9, x 27, x 81 |
 * qh: byte 4n + m = qh[m] x 3^n), each lane in element order. sum (t - 1) y
 * = sum t y - the block sum of y (bsums), exact in the integer lanes. */
INL z512 z_mul3(z512 v) { return _mm512_add_epi8(v, _mm512_add_epi8(v, v)); }

INL z512 z_tq1_digits(z512 v)
{
    const z512 one = _mm512_set1_epi8(1);
    z512 d = _mm512_maskz_mov_epi8(_mm512_cmpgt_epu8_mask(v, _mm512_set1_epi8(85)), one);
    return _mm512_mask_add_epi8(d, _mm512_cmpgt_epu8_mask(v, _mm512_set1_epi8((char)170)), d, one);
}

INL __m512 z_tq1_0(const sl_block_tq1_0 *x, const sl_block_q8_k *y, __m512 acc)
{
    const z512 a1 = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)x->qs));
    const z512 A = _mm512_mask_blend_epi64(0xf0, a1, z_mul3(a1));             /* x 1 | x 3 */
    const z512 B = z_mul3(z_mul3(A));                                        /* x 9 | x 27 */
    const z512 x1 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(x->qs + 32)));
    const z512 x3 = z_mul3(x1), x9 = z_mul3(x3), x27 = z_mul3(x9), x81 = z_mul3(x27);
    uint32_t qh;
    memcpy(&qh, x->qh, 4);
    const z512 h1 = _mm512_set1_epi32((int)qh), h3 = z_mul3(h1), h9 = z_mul3(h3), h27 = z_mul3(h9);
    z512 C = _mm512_mask_blend_epi32(0x0f00, z_mul3(z_mul3(B)), x1);           /* lanes 0-1: x 81 */
    C = _mm512_mask_blend_epi32(0xf000, C, x3);
    z512 D = _mm512_mask_blend_epi32(0x00f0, x9, x27);
    D = _mm512_mask_blend_epi32(0x0f00, D, x81);
    D = _mm512_mask_blend_epi32(0x1000, D, h1);
    D = _mm512_mask_blend_epi32(0x2000, D, h3);
    D = _mm512_mask_blend_epi32(0x4000, D, h9);
    D = _mm512_mask_blend_epi32(0x8000, D, h27);
    z512 i0 = z_dot_u8s8(_mm512_setzero_si512(), z_tq1_digits(A), _mm512_loadu_si512((const void *)y->qs));
    z512 i1 = z_dot_u8s8(_mm512_setzero_si512(), z_tq1_digits(B), _mm512_loadu_si512((const void *)(y->qs + 64)));
    i0 = z_dot_u8s8(i0, z_tq1_digits(C), _mm512_loadu_si512((const void *)(y->qs + 128)));
    i1 = z_dot_u8s8(i1, z_tq1_digits(D), _mm512_loadu_si512((const void *)(y->qs + 192)));
    z512 ys = _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)y->bsums));
    z512 v = _mm512_sub_epi32(_mm512_add_epi32(i0, i1), ys);
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), _mm512_set1_ps(f16s(x->d) * y->d), acc);
}

#define X86_IQ4Z_TQ1(T, XB, DOT, GEMM)                                                       \
static void DOT(int64_t n, float *s, const void *vx, const void *vy)                    \
{                                                                                        \
    const sl_block_tq1_0 *x = vx;                                                        \
    const sl_block_q8_k *y = vy;                                                         \
    __m512 acc = _mm512_setzero_ps();                                                    \
    for (int64_t b = 0; b < n / SL_QKK; b++) acc = z_tq1_0(x + b, y + b, acc);           \
    *s = _mm512_reduce_add_ps(acc);                                                      \
}                                                                                        \
static void GEMM(int64_t n, const void *vx, size_t bx, int nx, const void *vy, size_t by, \
                 int ny, float *s, int64_t lds)                                          \
{                                                                                        \
    for (int r = 0; r < nx; r++)                                                         \
        for (int c = 0; c < ny; c++)                                                     \
            DOT(n, s + c * lds + r, (const char *)vx + (size_t)r * bx, (const char *)vy + (size_t)c * by); \
}

/* vec_dot and gemm tile (each weight block unpacked once for the ny rows). */
#define X86_IQ4Z_XS(T, XB, DOT, GEMM)                                                        \
static void DOT(int64_t n, float *s, const void *vx, const void *vy)                    \
{                                                                                        \
    const sl_block_iq4_xs *x = vx;                                                       \
    const sl_block_q8_k *y = vy;                                                         \
    __m512 acc = _mm512_setzero_ps();                                                    \
    for (int64_t b = 0; b < n / SL_QKK; b++) {                                           \
        uz_iq4_xs u;                                                                     \
        unpz_iq4_xs(x + b, &u);                                                          \
        acc = pairz_iq4_xs(&u, y + b, acc);                                              \
    }                                                                                    \
    *s = _mm512_reduce_add_ps(acc);                                                      \
}                                                                                        \
static void GEMM(int64_t n, const void *vx, size_t bx, int nx, const void *vy, size_t by, \
                 int ny, float *s, int64_t lds)                                          \
{                                                                                        \
    for (int r = 0; r < nx; r++) {                                                       \
        const sl_block_iq4_xs *x = (const sl_block_iq4_xs *)((const char *)vx + (size_t)r * bx); \
        __m512 acc[SL_GEMM_MAX];                                                         \
        for (int c = 0; c < ny; c++) acc[c] = _mm512_setzero_ps();                       \
        for (int64_t b = 0; b < n / SL_QKK; b++) {                                       \
            uz_iq4_xs u;                                                                 \
            unpz_iq4_xs(x + b, &u);                                                      \
            for (int c = 0; c < ny; c++)                                                 \
                acc[c] = pairz_iq4_xs(&u, (const sl_block_q8_k *)((const char *)vy + (size_t)c * by) + b, \
                                      acc[c]);                                           \
        }                                                                                \
        for (int c = 0; c < ny; c++) s[c * lds + r] = _mm512_reduce_add_ps(acc[c]);      \
    }                                                                                    \
}

#define X86_IQ4Z_NL(T, XB, DOT, GEMM)                                                   \
static void DOT(int64_t n, float *s, const void *vx, const void *vy)                    \
{                                                                                        \
    const XB *x = vx;                                                                    \
    const sl_block_q8_0 *y = vy;                                                         \
    int64_t nb = n / SL_QK, b = 0;                                                       \
    __m512 acc = _mm512_setzero_ps();                                                    \
    for (; b + 8 <= nb; b += 8) {                                                        \
        uz_nl8 u;                                                                        \
        unpz8_##T(x + b, &u);                                                            \
        acc = pairz8_nl(&u, y + b, acc);                                                 \
    }                                                                                    \
    for (; b < nb; b += 2) {                                                             \
        int64_t b1 = b + 1 < nb ? b + 1 : b;                                             \
        uz_nl u;                                                                         \
        unpz_##T(x, b, b1, b1 != b ? 1.0f : 0.0f, &u);                                   \
        acc = pairz_nl(&u, y + b, y + b1, acc);                                          \
    }                                                                                    \
    *s = _mm512_reduce_add_ps(acc);                                                      \
}                                                                                        \
static void GEMM(int64_t n, const void *vx, size_t bx, int nx, const void *vy, size_t by, \
                 int ny, float *s, int64_t lds)                                          \
{                                                                                        \
    int64_t nb = n / SL_QK;                                                              \
    for (int r = 0; r < nx; r++) {                                                       \
        const XB *x = (const XB *)((const char *)vx + (size_t)r * bx);                   \
        __m512 acc[SL_GEMM_MAX];                                                         \
        for (int c = 0; c < ny; c++) acc[c] = _mm512_setzero_ps();                       \
        int64_t b = 0;                                                                   \
        for (; b + 8 <= nb; b += 8) {                                                    \
            uz_nl8 u;                                                                    \
            unpz8_##T(x + b, &u);                                                        \
            for (int c = 0; c < ny; c++)                                                 \
                acc[c] = pairz8_nl(&u, (const sl_block_q8_0 *)((const char *)vy + (size_t)c * by) + b, \
                                   acc[c]);                                              \
        }                                                                                \
        for (; b < nb; b += 2) {                                                         \
            int64_t b1 = b + 1 < nb ? b + 1 : b;                                         \
            uz_nl u;                                                                     \
            unpz_##T(x, b, b1, b1 != b ? 1.0f : 0.0f, &u);                               \
            for (int c = 0; c < ny; c++) {                                               \
                const sl_block_q8_0 *y = (const sl_block_q8_0 *)((const char *)vy + (size_t)c * by); \
                acc[c] = pairz_nl(&u, y + b, y + b1, acc[c]);                            \
            }                                                                            \
        }                                                                                \
        for (int c = 0; c < ny; c++) s[c * lds + r] = _mm512_reduce_add_ps(acc[c]);      \
    }                                                                                    \
}

/* The 512-bit gemm takes up to SL_GEMM_MAX rows and has no few-row tile: the
 * 256-bit wide tile BASE set would round differently from this vec_dot, so it
 * is cleared and matvec goes through this gemm (bit for bit its vec_dot). */
#define X86_SET_Z(k, ID, DOT, GEMM) \
    ((k)->vec_dot[ID] = (DOT), (k)->vec_dot_pf[ID] = NULL, (k)->gemm[ID] = (GEMM), (k)->gemm_wide[ID] = NULL)

/* The family's types with a 512-bit kernel, X(T, ID, XB, DRIVER) (TQ2_0
 * keeps its 256-bit one), and a level's instances (dot_iq4_nl_z_avx512, ...)
 * and FILL, which first runs BASE (the 256-bit fill). */
#define X86_IQ4Z_EACH(X)                                                                 \
    X(iq4_nl, SL_GGML_IQ4_NL, sl_block_iq4_nl, NL) X(tq1_0, SL_GGML_TQ1_0, sl_block_tq1_0, TQ1) \
    X(mxfp4, SL_GGML_MXFP4, sl_block_mxfp4, NL) X(iq4_xs, SL_GGML_IQ4_XS, sl_block_iq4_xs, XS)
#define X86_IQ4Z_DEF_(DRV, T, XB, DOT, GEMM) X86_IQ4Z_##DRV(T, XB, DOT, GEMM)
#define X86_IQ4Z_DEF(T, ID, XB, DRV) X86_IQ4Z_DEF_(DRV, T, XB, X86_NAME(dot, T##_z), X86_NAME(gemm, T##_z))
#define X86_IQ4Z_SET(T, ID, XB, DRV) X86_SET_Z(k, ID, X86_NAME(dot, T##_z), X86_NAME(gemm, T##_z));
#define X86_IQ4Z_LEVEL(FILL, BASE)                                                       \
X86_IQ4Z_EACH(X86_IQ4Z_DEF)                                                              \
void FILL(sl_kern *k)                                                                    \
{                                                                                        \
    BASE(k);                                                                             \
    X86_IQ4Z_EACH(X86_IQ4Z_SET)                                                          \
}

#endif
