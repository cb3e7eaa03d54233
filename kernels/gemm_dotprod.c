/* Prefill GEMM for the dotprod level (armv8.2-a+dotprod): activation rows in
 * vector lanes, as gemm_avx512vnni.c does with zmm. 8 activation rows are
 * transposed once per call into a panel (4 bytes of each row per k-step,
 * two 128-bit vectors); each weight row is unpacked once per K chunk into
 * signed bytes, and one sdot by element (vdotq_laneq_s32) multiplies 4
 * activation rows x 4 bytes by one weight dword held in a register, so a
 * 16-byte weight load feeds 8 sdots. sdot is signed x signed, so q6_K,
 * q3_K and the legacy types keep their true signed values and need no
 * offset terms; q2_K's q * sc (0..45) is folded into the weights; q4_K /
 * q5_K / q2_K mins go through the activation block sums. Integer sums per
 * superblock are exact; the float finish runs once per superblock (per
 * block for the legacy types), so results agree with vec_dot within the
 * tests' rounding bound, not bit for bit. */
#include <arm_neon.h>
#include <string.h>

#include "kern_internal.h"

#define NR 4           /* weight rows per register tile */
#define LANES 8        /* activation rows per panel group (two int32x4) */

/* ---- K-quants ---------------------------------------------------------- */

typedef struct {
    int32_t sc[16];          /* per sub-block scale (unused for q2_K) */
    int32_t mn[16];          /* per sub-block min (8 for q4_K/q5_K, 16 for q2_K) */
    float d, dm;
} kq_meta;

typedef struct {
    int8_t qs[64][32];       /* [k-step][lane][4 bytes] */
    int32_t bs[16][8];       /* 16-element sums per lane */
    int32_t bs32[8][8];      /* 32-element sums per lane */
    int32_t asum[8];         /* sum of the superblock (q3_K's weight offset) */
    float d[8];
} kq_act;

static void kq_extra(const void *vy, void *vp, int lane, int arg)
{
    const sl_block_q8_k *y = vy;
    kq_act *g = vp;
    (void)arg;
    for (int j = 0; j < 16; j++) g->bs[j][lane] = y->bsums[j];
    int sum = 0;
    for (int j = 0; j < 8; j++) {
        g->bs32[j][lane] = y->bsums[2 * j] + y->bsums[2 * j + 1];
        sum += g->bs32[j][lane];
    }
    g->asum[lane] = sum;
    g->d[lane] = y->d;
}

static inline float f16s(sl_f16 h)
{
    __fp16 v;
    memcpy(&v, &h, 2);
    return (float)v;
}

static inline void k4_scales(const uint8_t *s12, kq_meta *m)
{
    uint32_t sc[2], mn[2];
    sl_q4k_scales8(s12, sc, mn);
    for (int j = 0; j < 8; j++) {
        m->sc[j] = (int32_t)((sc[j / 4] >> (8 * (j % 4))) & 0xff);
        m->mn[j] = (int32_t)((mn[j / 4] >> (8 * (j % 4))) & 0xff);
    }
}

static inline void unp_q4_k(const void *vx, uint8_t *q, kq_meta *m)
{
    const sl_block_q4_k *x = vx;
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    for (int p = 0; p < 4; p++)
        for (int h = 0; h < 2; h++) {
            uint8x16_t v = vld1q_u8(x->qs + 32 * p + 16 * h);
            vst1q_u8(q + 64 * p + 16 * h, vandq_u8(v, m4));
            vst1q_u8(q + 64 * p + 32 + 16 * h, vshrq_n_u8(v, 4));
        }
    k4_scales(x->scales, m);
    m->d = f16s(x->d);
    m->dm = f16s(x->dmin);
}

static inline void unp_q5_k(const void *vx, uint8_t *q, kq_meta *m)
{
    const sl_block_q5_k *x = vx;
    const uint8x16_t m4 = vdupq_n_u8(0x0f), one = vdupq_n_u8(1);
    for (int h = 0; h < 2; h++) {
        uint8x16_t hb = vld1q_u8(x->qh + 16 * h);
        for (int p = 0; p < 4; p++) {
            uint8x16_t v = vld1q_u8(x->qs + 32 * p + 16 * h);
            uint8x16_t h0 = vshlq_n_u8(vandq_u8(vshlq_u8(hb, vdupq_n_s8((int8_t)(-2 * p))), one), 4);
            uint8x16_t h1 = vshlq_n_u8(vandq_u8(vshlq_u8(hb, vdupq_n_s8((int8_t)(-2 * p - 1))), one), 4);
            vst1q_u8(q + 64 * p + 16 * h, vorrq_u8(vandq_u8(v, m4), h0));
            vst1q_u8(q + 64 * p + 32 + 16 * h, vorrq_u8(vshrq_n_u8(v, 4), h1));
        }
    }
    k4_scales(x->scales, m);
    m->d = f16s(x->d);
    m->dm = f16s(x->dmin);
}

/* q6_K: the signed value q - 32 */
static inline void unp_q6_k(const void *vx, uint8_t *q, kq_meta *m)
{
    const sl_block_q6_k *x = vx;
    const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(3), off = vdupq_n_u8(32);
    for (int hh = 0; hh < 2; hh++)
        for (int h = 0; h < 2; h++) {
            const uint8_t *L = x->ql + 64 * hh + 16 * h;
            uint8x16_t l0 = vld1q_u8(L), l1 = vld1q_u8(L + 32), H = vld1q_u8(x->qh + 32 * hh + 16 * h);
            uint8_t *o = q + 128 * hh + 16 * h;
            vst1q_u8(o, vsubq_u8(vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(H, m3), 4)), off));
            vst1q_u8(o + 32, vsubq_u8(vorrq_u8(vandq_u8(l1, m4),
                                               vshlq_n_u8(vandq_u8(vshrq_n_u8(H, 2), m3), 4)), off));
            vst1q_u8(o + 64, vsubq_u8(vorrq_u8(vshrq_n_u8(l0, 4),
                                               vshlq_n_u8(vandq_u8(vshrq_n_u8(H, 4), m3), 4)), off));
            vst1q_u8(o + 96, vsubq_u8(vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(H, 6), 4)), off));
        }
    for (int s = 0; s < 16; s++) m->sc[s] = x->scales[s];
    m->d = m->dm = f16s(x->d);
}

/* q3_K: (q - 4) * sc lies in [-124, 128]; minus 1 it fits in s8, so the
 * scale is folded into the weights and the panel's asum takes the 1 back. */
static inline void unp_q3_k(const void *vx, uint8_t *q, kq_meta *m)
{
    const sl_block_q3_k *x = vx;
    int8_t sc[16];
    sl_q3k_scales(x->scales, sc);
    const uint8x16_t m3 = vdupq_n_u8(3), one = vdupq_n_u8(1);
    const int16x8_t one16 = vdupq_n_s16(1);
    for (int hh = 0; hh < 2; hh++)
        for (int h = 0; h < 2; h++) {
            uint8x16_t v = vld1q_u8(x->qs + 32 * hh + 16 * h), hm = vld1q_u8(x->hmask + 16 * h);
            for (int k = 0; k < 4; k++) {
                uint8x16_t lo = vandq_u8(vshlq_u8(v, vdupq_n_s8((int8_t)(-2 * k))), m3);
                uint8x16_t hb = vandq_u8(vshlq_u8(hm, vdupq_n_s8((int8_t)(-(4 * hh + k)))), one);
                int8x16_t qv = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, vshlq_n_u8(hb, 2))), vdupq_n_s8(4));
                int8x8_t s = vdup_n_s8(sc[8 * hh + 2 * k + h]);
                int16x8_t p0 = vsubq_s16(vmull_s8(vget_low_s8(qv), s), one16);
                int16x8_t p1 = vsubq_s16(vmull_s8(vget_high_s8(qv), s), one16);
                vst1q_s8((int8_t *)q + 128 * hh + 32 * k + 16 * h, vcombine_s8(vmovn_s16(p0), vmovn_s16(p1)));
            }
        }
    m->d = f16s(x->d);
    m->dm = 0.0f;
}

/* q2_K: q * sc (0..45), the scale folded into the weights */
static inline void unp_q2_k(const void *vx, uint8_t *q, kq_meta *m)
{
    const sl_block_q2_k *x = vx;
    const uint8x16_t m3 = vdupq_n_u8(3);
    for (int hh = 0; hh < 2; hh++)
        for (int h = 0; h < 2; h++) {
            uint8x16_t v = vld1q_u8(x->qs + 32 * hh + 16 * h);
            for (int k = 0; k < 4; k++) {
                int s = 8 * hh + 2 * k + h;
                uint8x16_t lo = vandq_u8(vshlq_u8(v, vdupq_n_s8((int8_t)(-2 * k))), m3);
                vst1q_u8(q + 128 * hh + 32 * k + 16 * h, vmulq_u8(lo, vdupq_n_u8(x->scales[s] & 15)));
            }
        }
    for (int s = 0; s < 16; s++) m->mn[s] = x->scales[s] >> 4;
    m->d = f16s(x->d);
    m->dm = f16s(x->dmin);
}

/* 4 k-steps (one 16-byte weight load per row) into part[NR][2] */
#define DOT_QUAD(l)                                                                          \
    do {                                                                                     \
        int8x16_t a0 = vld1q_s8(a->qs[4 * q4 + (l)]), a1 = vld1q_s8(a->qs[4 * q4 + (l)] + 16); \
        for (int r = 0; r < NR; r++) {                                                       \
            part[r][0] = vdotq_laneq_s32(part[r][0], a0, w[r], l);                           \
            part[r][1] = vdotq_laneq_s32(part[r][1], a1, w[r], l);                           \
        }                                                                                    \
    } while (0)

/* 16 k-steps: one 16-byte weight load per row (rows wstride bytes apart) */
#define DOT_W16(wstride)                                                                     \
    do {                                                                                     \
        int8x16_t w[NR];                                                                     \
        for (int r = 0; r < NR; r++) w[r] = vld1q_s8((const int8_t *)wq + (wstride) * r + 16 * q4); \
        DOT_QUAD(0);                                                                         \
        DOT_QUAD(1);                                                                         \
        DOT_QUAD(2);                                                                         \
        DOT_QUAD(3);                                                                         \
    } while (0)

/* The float accumulators of a tile: [NR][8 lanes], zero on the first chunk. */
static inline __attribute__((always_inline)) void facc_load(float32x4_t facc[NR][2], const float *acc, int first)
{
    for (int r = 0; r < NR; r++)
        for (int h = 0; h < 2; h++)
            facc[r][h] = first ? vdupq_n_f32(0.0f) : vld1q_f32(acc + 8 * r + 4 * h);
}

static inline __attribute__((always_inline)) void facc_store(float32x4_t facc[NR][2], float *acc)
{
    for (int r = 0; r < NR; r++)
        for (int h = 0; h < 2; h++) vst1q_f32(acc + 8 * r + 4 * h, facc[r][h]);
}

/* NR rows x 8 activation rows over nbc superblocks; wq: [nbc][NR][256],
 * wm: [nbc][NR]. SUBK: k-steps per scaled sub-block (64: none); MINS: 0, or
 * 8 / 16 sub-blocks of mins against bs32 / bs; OFF: add the panel's asum back. */
static inline __attribute__((always_inline)) void
kq_tile(const int SUBK, const int MINS, const int OFF, const uint8_t *wq, const kq_meta *wm, int nbc,
        const kq_act *A, float *acc, int first)
{
    float32x4_t facc[NR][2];
    facc_load(facc, acc, first);
    for (int b = 0; b < nbc; b++, wq += NR * 256, wm += NR) {
        const kq_act *a = A + b;
        int32x4_t isum[NR][2];
        for (int r = 0; r < NR; r++) isum[r][0] = isum[r][1] = vdupq_n_s32(0);
        for (int j = 0; j < 64 / SUBK; j++) {
            int32x4_t part[NR][2];
            for (int r = 0; r < NR; r++) part[r][0] = part[r][1] = vdupq_n_s32(0);
            for (int q4 = j * SUBK / 4; q4 < (j + 1) * SUBK / 4; q4++) {
                DOT_W16(256);
            }
            for (int r = 0; r < NR; r++)
                for (int h = 0; h < 2; h++)
                    isum[r][h] = SUBK == 64 ? part[r][h] : vmlaq_n_s32(isum[r][h], part[r][h], wm[r].sc[j]);
        }
        for (int r = 0; r < NR; r++)
            for (int h = 0; h < 2; h++) {
                if (OFF) isum[r][h] = vaddq_s32(isum[r][h], vld1q_s32(a->asum + 4 * h));
                float32x4_t t = vmulq_n_f32(vcvtq_f32_s32(isum[r][h]), wm[r].d);
                if (MINS) {
                    int32x4_t ms = vdupq_n_s32(0);
                    for (int j = 0; j < MINS; j++)
                        ms = vmlaq_n_s32(ms, vld1q_s32((MINS == 8 ? a->bs32[j] : a->bs[j]) + 4 * h), wm[r].mn[j]);
                    t = vfmsq_f32(t, vcvtq_f32_s32(ms), vdupq_n_f32(wm[r].dm));
                }
                facc[r][h] = vfmaq_f32(facc[r][h], t, vld1q_f32(a->d + 4 * h));
            }
    }
    facc_store(facc, acc);
}

/* kq_tile's SUBK, MINS, OFF per type (lg_tile takes none). */
#define KQ_TILE_q4_k 8, 8, 0,
#define KQ_TILE_q5_k 8, 8, 0,
#define KQ_TILE_q6_k 4, 0, 0,
#define KQ_TILE_q3_k 64, 0, 1,
#define KQ_TILE_q2_k 64, 16, 0,
#define LG_TILE_q8_0
#define LG_TILE_q4_0
#define LG_TILE_q5_0

/* ---- 32-element block types: signed weights, no offsets ---------------- */

typedef struct {
    int8_t qs[8][32];
    float d[8];
} lg_act;

static void lg_extra(const void *vy, void *vp, int lane, int off)
{
    lg_act *g = vp;
    (void)off;
    g->d[lane] = f16s(((const sl_block_q8_0 *)vy)->d);
}
#define LG_OFF_Q8_0 0      /* signed weights: no offsets */
#define LG_OFF_Q4_0 0
#define LG_OFF_Q5_0 0

static void unp_q8_0(const void *vx, uint8_t *q, float *d)
{
    const sl_block_q8_0 *x = vx;
    memcpy(q, x->qs, 32);
    *d = f16s(x->d);
}

static void unp_q4_0(const void *vx, uint8_t *q, float *d)
{
    const sl_block_q4_0 *x = vx;
    uint8x16_t v = vld1q_u8(x->qs), eight = vdupq_n_u8(8);
    vst1q_u8(q, vsubq_u8(vandq_u8(v, vdupq_n_u8(0x0f)), eight));
    vst1q_u8(q + 16, vsubq_u8(vshrq_n_u8(v, 4), eight));
    *d = f16s(x->d);
}

static void unp_q5_0(const void *vx, uint8_t *q, float *d)
{
    const sl_block_q5_0 *x = vx;
    uint32_t h;
    memcpy(&h, x->qh, 4);
    for (int i = 0; i < 16; i++) {
        q[i] = (uint8_t)(((x->qs[i] & 0x0f) | (((h >> i) & 1) << 4)) - 16);
        q[i + 16] = (uint8_t)(((x->qs[i] >> 4) | (((h >> (i + 16)) & 1) << 4)) - 16);
    }
    *d = f16s(x->d);
}

/* NR rows x 8 activation rows over nbc blocks; wq: [nbc][NR][32], wd: [nbc][NR]. */
static inline __attribute__((always_inline)) void
lg_tile(const uint8_t *wq, const float *wd, int nbc, const lg_act *A, float *acc, int first)
{
    float32x4_t facc[NR][2];
    facc_load(facc, acc, first);
    for (int b = 0; b < nbc; b++, wq += NR * 32, wd += NR) {
        const lg_act *a = A + b;
        int32x4_t part[NR][2];
        for (int r = 0; r < NR; r++) part[r][0] = part[r][1] = vdupq_n_s32(0);
        for (int q4 = 0; q4 < 2; q4++) {
            DOT_W16(32);
        }
        for (int r = 0; r < NR; r++)
            for (int h = 0; h < 2; h++)
                facc[r][h] = vfmaq_f32(facc[r][h], vcvtq_f32_s32(part[r][h]),
                                       vmulq_n_f32(vld1q_f32(a->d + 4 * h), wd[r]));
    }
    facc_store(facc, acc);
}

#define PANEL_PREFETCH(p) __builtin_prefetch((p), 0, 2)
#include "gemm_panel.h"

void sl_gemm_fill_dotprod(sl_kern *k) { panel_fill(k); }
