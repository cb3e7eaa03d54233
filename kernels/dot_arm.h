/* aarch64 dot kernels, included by dot_neon.c (armv8.0 ASIMD) and
 * dot_dotprod.c (armv8.2-a+dotprod), which define ARM_SUFFIX and ARM_DOTPROD
 * (dot_arm_base.h).
 * Quant values are formed as signed int8 (q - offset where the format has
 * one), 16-byte chunks are dotted exactly into 4 int32 lanes, scaled by the
 * sub-block scale in the integer domain (vmlaq_n_s32), converted once per
 * block and accumulated with one FMA by d_x*d_y. Min terms go through the
 * activation block sums (exact ints) into a scalar float accumulator.
 * Every type of the K-quant / legacy list (kern_internal.h) gets its
 * gemm_T: nx weight rows x ny (<= SL_GEMM_WIDE) activation rows with the
 * same per-pair sequence as vec_dot (bit-identical); q4_K and q6_K unpack a
 * weight block once per tile row (unp_T / pair_T). MXFP4, IQ4_NL and Q8_0
 * then take dot_arm_q32.h's kernels (the same pair arithmetic, accumulators
 * in registers). */
#include "dot_arm_base.h"

static inline int32x4_t dot32(int8x16_t a0, int8x16_t a1, int8x16_t b0, int8x16_t b1)
{
    return dot16(dot16(vdupq_n_s32(0), a0, b0), a1, b1);
}

typedef struct { float32x4_t a; float s; } acc_t;

/* A type without a split (declared after its block kernel blk_T): the
 * unpacking is the block pointer (q4_K and q6_K unpack, below). */
#define ARM_NOSPLIT(T, XB, YB)                                                           \
typedef const XB *u_##T;                                                                 \
static inline void unp_##T(const XB *x, u_##T *u) { *u = x; }                           \
static inline void pair_##T(const u_##T *u, const YB *y, acc_t *acc) { blk_##T(*u, y, acc); }


#define S8(v) vreinterpretq_s8_u8(v)

static inline void unpack_q4k(const uint8_t *scales, uint8_t sc[8], uint8_t mn[8])
{
    uint32_t s[2], m[2];
    sl_q4k_scales8(scales, s, m);
    memcpy(sc, s, 8);
    memcpy(mn, m, 8);
}

static inline int32_t min_sum8(const uint8_t mn[8], const int16_t *bs)
{
    int32_t t = 0;
    for (int j = 0; j < 8; j++) t += mn[j] * (bs[2 * j] + bs[2 * j + 1]);
    return t;
}

static inline void blk_q5_k(const sl_block_q5_k *x, const sl_block_q8_k *y, acc_t *acc)
{
    uint8_t sc[8], mn[8];
    unpack_q4k(x->scales, sc, mn);
    const uint8x16_t m4 = vdupq_n_u8(15), one = vdupq_n_u8(1);
    uint8x16_t h0 = vld1q_u8(x->qh), h1 = vld1q_u8(x->qh + 16);
    int32x4_t isum = vdupq_n_s32(0);
    for (int p = 0; p < 4; p++) {
        uint8x16_t q0 = vld1q_u8(x->qs + 32 * p), q1 = vld1q_u8(x->qs + 32 * p + 16);
        int8x16_t sh0 = vdupq_n_s8((int8_t)(-2 * p)), sh1 = vdupq_n_s8((int8_t)(-2 * p - 1));
        uint8x16_t a0 = vorrq_u8(vandq_u8(q0, m4), vshlq_n_u8(vandq_u8(vshlq_u8(h0, sh0), one), 4));
        uint8x16_t a1 = vorrq_u8(vandq_u8(q1, m4), vshlq_n_u8(vandq_u8(vshlq_u8(h1, sh0), one), 4));
        uint8x16_t b0 = vorrq_u8(vshrq_n_u8(q0, 4), vshlq_n_u8(vandq_u8(vshlq_u8(h0, sh1), one), 4));
        uint8x16_t b1 = vorrq_u8(vshrq_n_u8(q1, 4), vshlq_n_u8(vandq_u8(vshlq_u8(h1, sh1), one), 4));
        const int8_t *Y = y->qs + 64 * p;
        isum = vmlaq_n_s32(isum, dot32(S8(a0), S8(a1), vld1q_s8(Y), vld1q_s8(Y + 16)), sc[2 * p]);
        isum = vmlaq_n_s32(isum, dot32(S8(b0), S8(b1), vld1q_s8(Y + 32), vld1q_s8(Y + 48)), sc[2 * p + 1]);
    }
    acc->a = vfmaq_f32(acc->a, vcvtq_f32_s32(isum), vdupq_n_f32(f16s(x->d) * y->d));
    acc->s -= (f16s(x->dmin) * y->d) * (float)min_sum8(mn, y->bsums);
}
ARM_NOSPLIT(q5_k, sl_block_q5_k, sl_block_q8_k)

/* The 2-bit fields k (0..3) of 16 bytes as signed bytes 0..3 (q2_K, TQ2_0). */
static inline int8x16_t crumb(uint8x16_t q, int k)
{
    return S8(vandq_u8(vshlq_u8(q, vdupq_n_s8((int8_t)(-2 * k))), vdupq_n_u8(3)));
}

static inline void blk_q2_k(const sl_block_q2_k *x, const sl_block_q8_k *y, acc_t *acc)
{
    int32x4_t isum = vdupq_n_s32(0);
    for (int h = 0; h < 2; h++) {
        uint8x16_t q0 = vld1q_u8(x->qs + 32 * h), q1 = vld1q_u8(x->qs + 32 * h + 16);
        const uint8_t *sc = x->scales + 8 * h;
        const int8_t *Y = y->qs + 128 * h;
        for (int k = 0; k < 4; k++) {
            isum = vmlaq_n_s32(isum, dot16(vdupq_n_s32(0), crumb(q0, k), vld1q_s8(Y + 32 * k)), sc[2 * k] & 15);
            isum = vmlaq_n_s32(isum, dot16(vdupq_n_s32(0), crumb(q1, k), vld1q_s8(Y + 32 * k + 16)), sc[2 * k + 1] & 15);
        }
    }
    int32_t msum = 0;
    for (int s = 0; s < 16; s++) msum += (x->scales[s] >> 4) * y->bsums[s];
    acc->a = vfmaq_f32(acc->a, vcvtq_f32_s32(isum), vdupq_n_f32(f16s(x->d) * y->d));
    acc->s -= (f16s(x->dmin) * y->d) * (float)msum;
}
ARM_NOSPLIT(q2_k, sl_block_q2_k, sl_block_q8_k)

static inline void blk_q3_k(const sl_block_q3_k *x, const sl_block_q8_k *y, acc_t *acc)
{
    uint32_t w[4];
    sl_q3k_words(x->scales, w);
    uint8_t sc[16];
    memcpy(sc, w, 16);
    const uint8x16_t m3 = vdupq_n_u8(3), one = vdupq_n_u8(1);
    const int8x16_t o4 = vdupq_n_s8(4);
    uint8x16_t hm0 = vld1q_u8(x->hmask), hm1 = vld1q_u8(x->hmask + 16);
    int32x4_t isum = vdupq_n_s32(0);
    for (int h = 0; h < 2; h++) {
        uint8x16_t q0 = vld1q_u8(x->qs + 32 * h), q1 = vld1q_u8(x->qs + 32 * h + 16);
        const int8_t *Y = y->qs + 128 * h;
        for (int k = 0; k < 4; k++) {
            int8x16_t sh = vdupq_n_s8((int8_t)(-2 * k)), shh = vdupq_n_s8((int8_t)(-(4 * h + k)));
            uint8x16_t v0 = vorrq_u8(vandq_u8(vshlq_u8(q0, sh), m3), vshlq_n_u8(vandq_u8(vshlq_u8(hm0, shh), one), 2));
            uint8x16_t v1 = vorrq_u8(vandq_u8(vshlq_u8(q1, sh), m3), vshlq_n_u8(vandq_u8(vshlq_u8(hm1, shh), one), 2));
            int s = 8 * h + 2 * k;
            isum = vmlaq_n_s32(isum, dot16(vdupq_n_s32(0), vsubq_s8(S8(v0), o4), vld1q_s8(Y + 32 * k)), (int)sc[s] - 32);
            isum = vmlaq_n_s32(isum, dot16(vdupq_n_s32(0), vsubq_s8(S8(v1), o4), vld1q_s8(Y + 32 * k + 16)), (int)sc[s + 1] - 32);
        }
    }
    acc->a = vfmaq_f32(acc->a, vcvtq_f32_s32(isum), vdupq_n_f32(f16s(x->d) * y->d));
}
ARM_NOSPLIT(q3_k, sl_block_q3_k, sl_block_q8_k)

/* ---- legacy ------------------------------------------------------------ */

/* 0x10 in byte j (j = 0..15 of half `part`) where bit 16*part + j of qh is set */
static inline uint8x16_t bit4_16(uint32_t qh, int part)
{
    static const uint8_t bits[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    uint8x16_t v = vcombine_u8(vdup_n_u8((uint8_t)(qh >> (16 * part))),
                               vdup_n_u8((uint8_t)(qh >> (16 * part + 8))));
    return vandq_u8(vtstq_u8(v, vld1q_u8(bits)), vdupq_n_u8(0x10));
}

static inline void fin_legacy(int32x4_t isum, float d, acc_t *acc)
{
    acc->a = vfmaq_f32(acc->a, vcvtq_f32_s32(isum), vdupq_n_f32(d));
}

static inline void blk_q4_0(const sl_block_q4_0 *x, const sl_block_q8_0 *y, acc_t *acc)
{
    uint8x16_t q = vld1q_u8(x->qs);
    const int8x16_t o8 = vdupq_n_s8(8);
    int8x16_t lo = vsubq_s8(S8(vandq_u8(q, vdupq_n_u8(15))), o8), hi = vsubq_s8(S8(vshrq_n_u8(q, 4)), o8);
    fin_legacy(dot32(lo, hi, vld1q_s8(y->qs), vld1q_s8(y->qs + 16)), f16s(x->d) * f16s(y->d), acc);
}
ARM_NOSPLIT(q4_0, sl_block_q4_0, sl_block_q8_0)

static inline void blk_q4_1(const sl_block_q4_1 *x, const sl_block_q8_1 *y, acc_t *acc)
{
    uint8x16_t q = vld1q_u8(x->qs);
    int8x16_t lo = S8(vandq_u8(q, vdupq_n_u8(15))), hi = S8(vshrq_n_u8(q, 4));
    fin_legacy(dot32(lo, hi, vld1q_s8(y->qs), vld1q_s8(y->qs + 16)), f16s(x->d) * f16s(y->d), acc);
    acc->s += f16s(x->m) * f16s(y->s);
}
ARM_NOSPLIT(q4_1, sl_block_q4_1, sl_block_q8_1)

static inline void blk_q5_0(const sl_block_q5_0 *x, const sl_block_q8_0 *y, acc_t *acc)
{
    uint32_t qh;
    memcpy(&qh, x->qh, 4);
    uint8x16_t q = vld1q_u8(x->qs);
    const int8x16_t o16 = vdupq_n_s8(16);
    int8x16_t lo = vsubq_s8(S8(vorrq_u8(vandq_u8(q, vdupq_n_u8(15)), bit4_16(qh, 0))), o16);
    int8x16_t hi = vsubq_s8(S8(vorrq_u8(vshrq_n_u8(q, 4), bit4_16(qh, 1))), o16);
    fin_legacy(dot32(lo, hi, vld1q_s8(y->qs), vld1q_s8(y->qs + 16)), f16s(x->d) * f16s(y->d), acc);
}
ARM_NOSPLIT(q5_0, sl_block_q5_0, sl_block_q8_0)

static inline void blk_q5_1(const sl_block_q5_1 *x, const sl_block_q8_1 *y, acc_t *acc)
{
    uint32_t qh;
    memcpy(&qh, x->qh, 4);
    uint8x16_t q = vld1q_u8(x->qs);
    int8x16_t lo = S8(vorrq_u8(vandq_u8(q, vdupq_n_u8(15)), bit4_16(qh, 0)));
    int8x16_t hi = S8(vorrq_u8(vshrq_n_u8(q, 4), bit4_16(qh, 1)));
    fin_legacy(dot32(lo, hi, vld1q_s8(y->qs), vld1q_s8(y->qs + 16)), f16s(x->d) * f16s(y->d), acc);
    acc->s += f16s(x->m) * f16s(y->s);
}
ARM_NOSPLIT(q5_1, sl_block_q5_1, sl_block_q8_1)

static inline void blk_q8_0(const sl_block_q8_0 *x, const sl_block_q8_0 *y, acc_t *acc)
{
    fin_legacy(dot32(vld1q_s8(x->qs), vld1q_s8(x->qs + 16), vld1q_s8(y->qs), vld1q_s8(y->qs + 16)),
               f16s(x->d) * f16s(y->d), acc);
}
ARM_NOSPLIT(q8_0, sl_block_q8_0, sl_block_q8_0)

/* ---- split kernels for q4_K / q6_K: the weight block unpacked once per
 * tile row (unp_T), then paired with each activation row (pair_T); vec_dot
 * is the same pair, so every tile result is bit-identical to it. */
typedef struct { int8x16_t q[16]; uint8_t sc[8], mn[8]; float d, dmin; } u_q4_k;

static inline void unp_q4_k(const sl_block_q4_k *x, u_q4_k *u)
{
    unpack_q4k(x->scales, u->sc, u->mn);
    const uint8x16_t m4 = vdupq_n_u8(15);
    for (int p = 0; p < 4; p++) {
        uint8x16_t q0 = vld1q_u8(x->qs + 32 * p), q1 = vld1q_u8(x->qs + 32 * p + 16);
        u->q[4 * p] = S8(vandq_u8(q0, m4));
        u->q[4 * p + 1] = S8(vandq_u8(q1, m4));
        u->q[4 * p + 2] = S8(vshrq_n_u8(q0, 4));
        u->q[4 * p + 3] = S8(vshrq_n_u8(q1, 4));
    }
    u->d = f16s(x->d);
    u->dmin = f16s(x->dmin);
}

static inline void pair_q4_k(const u_q4_k *u, const sl_block_q8_k *y, acc_t *acc)
{
    int32x4_t isum = vdupq_n_s32(0);
    for (int p = 0; p < 4; p++) {
        const int8_t *Y = y->qs + 64 * p;
        int32x4_t s0 = dot32(u->q[4 * p], u->q[4 * p + 1], vld1q_s8(Y), vld1q_s8(Y + 16));
        int32x4_t s1 = dot32(u->q[4 * p + 2], u->q[4 * p + 3], vld1q_s8(Y + 32), vld1q_s8(Y + 48));
        isum = vmlaq_n_s32(isum, s0, u->sc[2 * p]);
        isum = vmlaq_n_s32(isum, s1, u->sc[2 * p + 1]);
    }
    acc->a = vfmaq_f32(acc->a, vcvtq_f32_s32(isum), vdupq_n_f32(u->d * y->d));
    acc->s -= (u->dmin * y->d) * (float)min_sum8(u->mn, y->bsums);
}

/* q6_K: value chunk 8h + 4 half + k (q - 32 as int8) meets y bytes
 * 128h + 32k + 16 half with scale S[8h + half + 2k]. */
typedef struct { int8x16_t q[16]; int8_t sc[16]; float d; } u_q6_k;

static inline void unp_q6_k(const sl_block_q6_k *x, u_q6_k *u)
{
    const uint8x16_t m4 = vdupq_n_u8(15), m3 = vdupq_n_u8(3);
    const int8x16_t o32 = vdupq_n_s8(32);
    for (int h = 0; h < 2; h++) {
        const uint8_t *L = x->ql + 64 * h, *H = x->qh + 32 * h;
        for (int half = 0; half < 2; half++) {
            uint8x16_t l0 = vld1q_u8(L + 16 * half), l1 = vld1q_u8(L + 32 + 16 * half);
            uint8x16_t hh = vld1q_u8(H + 16 * half);
            int8x16_t *q = u->q + 8 * h + 4 * half;
            q[0] = vsubq_s8(S8(vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(hh, m3), 4))), o32);
            q[1] = vsubq_s8(S8(vorrq_u8(vandq_u8(l1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hh, 2), m3), 4))), o32);
            q[2] = vsubq_s8(S8(vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(hh, 4), m3), 4))), o32);
            q[3] = vsubq_s8(S8(vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(hh, 6), 4))), o32);
        }
    }
    memcpy(u->sc, x->scales, 16);
    u->d = f16s(x->d);
}

static inline void pair_q6_k(const u_q6_k *u, const sl_block_q8_k *y, acc_t *acc)
{
    int32x4_t isum = vdupq_n_s32(0);
    for (int h = 0; h < 2; h++) {
        const int8_t *S = u->sc + 8 * h, *Y = y->qs + 128 * h;
        for (int half = 0; half < 2; half++)
            for (int k = 0; k < 4; k++) {
                int32x4_t d = dot16(vdupq_n_s32(0), u->q[8 * h + 4 * half + k], vld1q_s8(Y + 32 * k + 16 * half));
                isum = vmlaq_n_s32(isum, d, S[half + 2 * k]);
            }
    }
    acc->a = vfmaq_f32(acc->a, vcvtq_f32_s32(isum), vdupq_n_f32(u->d * y->d));
}

/* nx weight rows x ny (<= SL_GEMM_WIDE) activation rows from unp_T / pair_T:
 * each weight block unpacked once per tile row; vec_dot is its 1 x 1 case.
 * DEF_GEMM: the same for a type with only a block kernel blk_T. */
#define DEF_GEMM_UP(T, XB, YB, BE)                                                       \
static void FN(gemm_##T)(int64_t n, const void *vx, size_t bx, int nx,                  \
                         const void *vy, size_t by, int ny, float *s, int64_t lds)      \
{                                                                                        \
    int64_t nb = n / (BE);                                                               \
    acc_t acc[SL_GEMM_MAX][SL_GEMM_WIDE];                                                \
    for (int i = 0; i < nx; i++)                                                         \
        for (int j = 0; j < ny; j++) acc[i][j] = (acc_t){vdupq_n_f32(0.0f), 0.0f};       \
    for (int64_t b = 0; b < nb; b++)                                                     \
        for (int i = 0; i < nx; i++) {                                                   \
            u_##T u;                                                                     \
            unp_##T((const XB *)((const char *)vx + (size_t)i * bx) + b, &u);            \
            for (int j = 0; j < ny; j++)                                                 \
                pair_##T(&u, (const YB *)((const char *)vy + (size_t)j * by) + b, &acc[i][j]); \
        }                                                                                \
    for (int i = 0; i < nx; i++)                                                         \
        for (int j = 0; j < ny; j++) s[j * lds + i] = vaddvq_f32(acc[i][j].a) + acc[i][j].s; \
}                                                                                        \
static void FN(dot_##T)(int64_t n, float *s, const void *x, const void *y)              \
{                                                                                        \
    FN(gemm_##T)(n, x, 0, 1, y, 0, 1, s, 0);                                             \
}

/* A family's kernels from its type list (kern_internal.h), and its filler:
 * WIDE, the gemm also serves the few-row tiles (up to SL_GEMM_WIDE rows). */
#define ARM_DEF(T, ID, XB, YB, BE, DU) DEF_GEMM_UP(T, XB, YB, BE)
#define ARM_SET(T, ID, XB, YB, BE, DU) \
    k->vec_dot[ID] = FN(dot_##T); k->gemm[ID] = FN(gemm_##T); if (wide) k->gemm_wide[ID] = FN(gemm_##T);
#define ARM_FAMILY(LIST, FILL, WIDE) \
    LIST(ARM_DEF)                                                                        \
    static void FN(FILL)(sl_kern *k) { const int wide = WIDE; LIST(ARM_SET) }
ARM_FAMILY(SL_KQ_EACH, arm_fill_kq, 1)

/* ---- float types: 4 lanes of FMA in two chains, scalar tail ------------ */

static inline __attribute__((always_inline)) float32x4_t ft_ld4(const void *p, int64_t i, const int FT)
{
    if (FT == SL_FT_F32)
        return vld1q_f32((const float *)p + i);
    if (FT == SL_FT_F16)
        return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const sl_f16 *)p + i)));
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const sl_bf16 *)p + i), 16));
}

static inline __attribute__((always_inline)) void
dot_ft(int64_t n, float *s, const void *x, const void *y, const int FT)
{
    float32x4_t a0 = vdupq_n_f32(0), a1 = vdupq_n_f32(0);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        a0 = vfmaq_f32(a0, ft_ld4(x, i, FT), ft_ld4(y, i, FT));
        a1 = vfmaq_f32(a1, ft_ld4(x, i + 4, FT), ft_ld4(y, i + 4, FT));
    }
    float t = vaddvq_f32(vaddq_f32(a0, a1));
    for (; i < n; i++) t += sl_ft_get(x, i, FT) * sl_ft_get(y, i, FT);
    *s = t;
}

static void FN(dot_f32)(int64_t n, float *s, const void *x, const void *y) { dot_ft(n, s, x, y, SL_FT_F32); }
static void FN(dot_f16)(int64_t n, float *s, const void *x, const void *y) { dot_ft(n, s, x, y, SL_FT_F16); }
static void FN(dot_bf16)(int64_t n, float *s, const void *x, const void *y) { dot_ft(n, s, x, y, SL_FT_BF16); }

static void FN(arm_fill)(sl_kern *k)
{
    FN(arm_fill_kq)(k);
    k->vec_dot[SL_GGML_F32] = FN(dot_f32);
    k->vec_dot[SL_GGML_F16] = FN(dot_f16);
    k->vec_dot[SL_GGML_BF16] = FN(dot_bf16);
}
