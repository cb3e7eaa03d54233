/* x86 block kernels of the codebook and ternary types, included by the level
 * files after dot_x86_madd.h / dot_x86_vnni.h (whose dot_u8s8 / madd_scaled
 * they use, so each level gets its own integer products):
 * - IQ4_NL, MXFP4 (Q8_0): nibbles -> levels by one vpshufb from the 16-entry
 *   table, signed x signed dot, one FMA per 32-element block;
 * - IQ4_XS (Q8_K): the same per 32-element sub-block, scaled in the integer
 *   domain by ls - 32 (madd / dpwssd), one FMA per superblock; these three
 *   are split (levels unpacked once per weight block of a gemm tile);
 * - TQ2_0, TQ1_0 (Q8_K): the digits t (0..2) as unsigned bytes times y, the
 *   block sum of y (from bsums) subtracted exactly in the integer lanes.
 *   TQ1_0's base-3 digits: byte b times 3^n (mod 256, by byte adds) then
 *   (v * 3) >> 8 as the high half of a 16-bit product.
 * X86_IQ4_LEVEL expands a level's instances and its table filler. */
#ifndef SL_DOT_X86_IQ4_H
#define SL_DOT_X86_IQ4_H

static inline __m256i lut16(const int8_t *tab)
{
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tab));
}

/* Split kernels (unp once per weight block, pair per activation row, so a
 * gemm tile looks the levels up once): the levels q and |q|; a pair is
 * |q| x sign(y, q). */
typedef struct { __m256i q, aq; float d; } u_iq4_nl;
typedef u_iq4_nl u_mxfp4;

INL void unp_nib32(const uint8_t *qs, const int8_t *tab, float d, u_iq4_nl *u)
{
    u->q = _mm256_shuffle_epi8(lut16(tab), nibbles32(qs));
    u->aq = _mm256_sign_epi8(u->q, u->q);
    u->d = d;
}

INL void unp_iq4_nl(const sl_block_iq4_nl *x, u_iq4_nl *u) { unp_nib32(x->qs, sl_kvalues_iq4nl, f16s(x->d), u); }
INL void unp_mxfp4(const sl_block_mxfp4 *x, u_mxfp4 *u) { unp_nib32(x->qs, sl_kvalues_mxfp4, sl_e8m0_half(x->e), u); }

INL void pair_iq4_nl(const u_iq4_nl *u, const sl_block_q8_0 *y, acc_t *acc)
{
    __m256i s = dot_u8s8(_mm256_setzero_si256(), u->aq, _mm256_sign_epi8(loadu(y->qs), u->q));
    fin_legacy(s, u->d * f16s(y->d), acc);
}
INL void pair_mxfp4(const u_mxfp4 *u, const sl_block_q8_0 *y, acc_t *acc) { pair_iq4_nl(u, y, acc); }

/* Eight blocks per step (X86_G8, dot_x86.h). */
INL __m256i lev_iq4_nl(const sl_block_iq4_nl *x) { return _mm256_shuffle_epi8(lut16(sl_kvalues_iq4nl), nibbles32(x->qs)); }
INL __m256i lev_mxfp4(const sl_block_mxfp4 *x) { return _mm256_shuffle_epi8(lut16(sl_kvalues_mxfp4), nibbles32(x->qs)); }
INL __m256 d8_iq4_nl(const sl_block_iq4_nl *x) { return X86_D8(x); }
INL __m256 d8_mxfp4(const sl_block_mxfp4 *x) { return e8m0x8(x); }

/* IQ4_XS: per 32-element sub-block the levels, |levels| and ls - 32 as words */
typedef struct { __m256i q[8], aq[8], sc[8]; float d; } u_iq4_xs;

INL void unp_iq4_xs(const sl_block_iq4_xs *x, u_iq4_xs *u)
{
    const __m256i lut = lut16(sl_kvalues_iq4nl);
    uint32_t sl;
    memcpy(&sl, x->scales_l, 4);
    uint32_t sh = x->scales_h;
    /* scales by scalar bit work, not a vector lane permute each: the vector
     * pipes are the limit (12.7 -> 10.4 GB/s in L2 the other way) */
    UNROLL
    for (int ib = 0; ib < 8; ib++) {
        int ls = (int)((sl >> (4 * ib)) & 15) | (int)((sh >> (2 * ib)) & 3) << 4;
        u->q[ib] = _mm256_shuffle_epi8(lut, nibbles32(x->qs + 16 * ib));
        u->aq[ib] = _mm256_sign_epi8(u->q[ib], u->q[ib]);
        u->sc[ib] = _mm256_set1_epi16((short)(ls - 32));
    }
    u->d = f16s(x->d);
}

INL void pair_iq4_xs(const u_iq4_xs *u, const sl_block_q8_k *y, acc_t *acc)
{
    __m256i i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256();
    UNROLL
    for (int ib = 0; ib < 8; ib += 2) {
        i0 = madd_scaled(i0, u->aq[ib], _mm256_sign_epi8(loadu(y->qs + 32 * ib), u->q[ib]), u->sc[ib]);
        i1 = madd_scaled(i1, u->aq[ib + 1], _mm256_sign_epi8(loadu(y->qs + 32 * ib + 32), u->q[ib + 1]),
                         u->sc[ib + 1]);
    }
    acc->a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(i0, i1)), _mm256_set1_ps(u->d * y->d), acc->a);
}

/* acc += (sum t y - sum y) * d * d_y with the integer lanes i0 + i1 = sum t y */
INL void fin_tern(__m256i i0, __m256i i1, const sl_block_q8_k *y, sl_f16 d, acc_t *acc)
{
    __m256i ys = _mm256_madd_epi16(loadu(y->bsums), _mm256_set1_epi16(1));
    __m256i s = _mm256_sub_epi32(_mm256_add_epi32(i0, i1), ys);
    acc->a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(f16s(d) * y->d), acc->a);
}

INL void blk_tq2_0(const sl_block_tq2_0 *x, const sl_block_q8_k *y, acc_t *acc)
{
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256i i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256();
    UNROLL
    for (int h = 0; h < 2; h++) {
        __m256i q = loadu(x->qs + 32 * h);
        const int8_t *Y = y->qs + 128 * h;
        i0 = dot_u8s8(i0, _mm256_and_si256(q, m3), loadu(Y));
        i1 = dot_u8s8(i1, _mm256_and_si256(_mm256_srli_epi16(q, 2), m3), loadu(Y + 32));
        i0 = dot_u8s8(i0, _mm256_and_si256(_mm256_srli_epi16(q, 4), m3), loadu(Y + 64));
        i1 = dot_u8s8(i1, _mm256_and_si256(_mm256_srli_epi16(q, 6), m3), loadu(Y + 96));
    }
    fin_tern(i0, i1, y, x->d, acc);
}

/* v * 3 mod 256 per byte */
static inline __m256i mul3_u8(__m256i v) { return _mm256_add_epi8(v, _mm256_add_epi8(v, v)); }

/* The base-3 digit (v * 3) >> 8 of every byte v (already times 3^n). */
static inline __m256i tq1_digit8(__m256i v)
{
    const __m256i three = _mm256_set1_epi16(3);
    __m256i lo = _mm256_mulhi_epu16(_mm256_slli_epi16(v, 8), three);
    __m256i hi = _mm256_mulhi_epu16(_mm256_and_si256(v, _mm256_set1_epi16((short)0xff00)), three);
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 8));
}

INL void blk_tq1_0(const sl_block_tq1_0 *x, const sl_block_q8_k *y, acc_t *acc)
{
    __m256i i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256();
    /* qs[0..31]: digit n of every byte is elements 32n .. 32n+31 */
    __m256i v = loadu(x->qs);
    i0 = dot_u8s8(i0, tq1_digit8(v), loadu(y->qs));
    v = mul3_u8(v);
    i1 = dot_u8s8(i1, tq1_digit8(v), loadu(y->qs + 32));
    v = mul3_u8(v);
    i0 = dot_u8s8(i0, tq1_digit8(v), loadu(y->qs + 64));
    v = mul3_u8(v);
    i1 = dot_u8s8(i1, tq1_digit8(v), loadu(y->qs + 96));
    v = mul3_u8(v);
    i0 = dot_u8s8(i0, tq1_digit8(v), loadu(y->qs + 128));
    /* qs[32..47]: digits n | n+1 in the low | high half are elements 160+16n .. +31 */
    __m256i w = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(x->qs + 32)));
    w = _mm256_blend_epi32(w, mul3_u8(w), 0xf0);
    i1 = dot_u8s8(i1, tq1_digit8(w), loadu(y->qs + 160));
    w = mul3_u8(mul3_u8(w));
    i0 = dot_u8s8(i0, tq1_digit8(w), loadu(y->qs + 192));
    /* digit 4 of qs[32..47] (224..239) | qh: byte 4n+m = digit n of qh[m] (240..255) */
    uint32_t qh;
    memcpy(&qh, x->qh, 4);
    __m128i h1 = _mm_set1_epi32((int)qh), h3 = _mm256_castsi256_si128(mul3_u8(_mm256_castsi128_si256(h1)));
    __m128i h9 = _mm256_castsi256_si128(mul3_u8(_mm256_castsi128_si256(h3)));
    __m128i h27 = _mm256_castsi256_si128(mul3_u8(_mm256_castsi128_si256(h9)));
    __m128i h = _mm_blend_epi32(_mm_blend_epi32(h1, h3, 0x2), _mm_blend_epi32(h9, h27, 0x8), 0xc);
    w = _mm256_inserti128_si256(mul3_u8(mul3_u8(w)), h, 1);
    i1 = dot_u8s8(i1, tq1_digit8(w), loadu(y->qs + 224));
    fin_tern(i0, i1, y, x->d, acc);
}

/* Each type's reduction and blocks (X86_BLOCKS); TQ2_0 and TQ1_0 need no
 * split (unpack / pair of the block kernel). */
#define X86_IQ4_TYPE(T, ID, XB, YB, BE, DU) DEF_RED(T) X86_BLOCKS(T, ID, XB, YB, BE, DU)
SL_IQ4_EACH(X86_IQ4_TYPE)
DEF_NOSPLIT(tq2_0, sl_block_tq2_0, sl_block_q8_k)
DEF_NOSPLIT(tq1_0, sl_block_tq1_0, sl_block_q8_k)

/* A level's instances of the family and its filler FILL (kern_internal.h). */
#define X86_IQ4_LEVEL(FILL) X86_FAMILY(SL_IQ4_EACH, FILL, 0)

#endif
