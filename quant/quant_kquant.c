/* The K-quant super-blocks (Q2_K..Q6_K): scalar dequantizers (each product
 * and sum rounded on its own, in the format's order, so they equal ggml's
 * to_float bit for bit), reference quantizers and their type-table rows.
 * The quantizers:
 *
 * Our own scheme, minimising the plain squared reconstruction error:
 *  1. per sub-block, a float scale (and offset for the affine types) from a
 *     small grid of candidate step sizes, each followed by a least-squares
 *     refit and quantize/refit (Lloyd) iterations (affine: on every start;
 *     symmetric: on the best one);
 *  2. the super-block scale(s) from the largest sub-block scale, rounded to f16;
 *  3. alternating: for fixed super scales, each sub-block picks the integer
 *     scale (and min) among the nearest candidates with its optimal levels;
 *     for fixed integers, the super scales are refit by least squares over the
 *     whole super-block (a 1- or 2-parameter linear problem).
 * Levels are always chosen as the nearest representable value, so the final
 * step is optimal for the stored scales. */
#include <math.h>
#include <string.h>

#include "quant_internal.h"

#define F16_MAX 65504.0f

static float f16_round(float v)
{
    if (!(fabsf(v) <= F16_MAX)) v = v != v ? 0.0f : copysignf(F16_MAX, v);
    return sl_f16_to_f32(sl_f32_to_f16(v));
}

/* The f16 value one code away from v (v f16-representable, dir = +-1). */
static float f16_step(float v, int dir)
{
    sl_f16 h = sl_f32_to_f16(v);
    int mag = (h & 0x7fff) + ((h & 0x8000) ? -dir : dir);
    if (mag < 0 || mag >= 0x7c00) return v;
    return sl_f16_to_f32((sl_f16)((h & 0x8000) | mag));
}

/* Nearest integer of v clamped to [lo, hi]; nan -> lo. Branch-free: the
 * ternaries compile to maxss/minss (fmaxf would be a libm call). */
static inline int clamp_rint(float v, int lo, int hi)
{
    float fl = (float)lo, fh = (float)hi;
    v = v > fl ? v : fl;
    v = v < fh ? v : fh;
    return sl_rint(v);
}

/* ======================= affine: value = a*q - b ======================= */

/* Levels q = clamp(round((x - c0) * ia)) and, for them, the least-squares
 * a, c (value a*q + c) with c <= 0. Returns the squared error. */
static double affine_levels_lsq(const float *x, int n, int nmax, float c0, float ia, uint8_t *q,
                                float *a, float *c)
{
    double sq = 0, sqq = 0, sx = 0, sqx = 0, sxx = 0;
    for (int i = 0; i < n; i++) {
        int l = clamp_rint((x[i] - c0) * ia, 0, nmax);
        double qi = l, xi = x[i];
        q[i] = (uint8_t)l;
        sq += qi; sqq += qi * qi; sx += xi; sqx += qi * xi; sxx += xi * xi;
    }
    double det = n * sqq - sq * sq, A, C;
    if (det <= 0) { A = 0; C = sx / n; }
    else { A = (n * sqx - sq * sx) / det; C = (sqq * sx - sq * sqx) / det; }
    if (C > 0) { C = 0; A = sqq > 0 ? sqx / sqq : 0; }
    if (A < 0) { A = 0; C = sx / n < 0 ? sx / n : 0; }
    *a = (float)A; *c = (float)C;
    double err = sxx + A * A * sqq + n * C * C + 2 * A * C * sq - 2 * A * sqx - 2 * C * sx;
    return err > 0 ? err : 0;
}

/* Float scale a >= 0 and min b >= 0 of one sub-block (value a*q - b). */
static void affine_fit(const float *x, int n, int nmax, int nstep, float *a_out, float *b_out)
{
    float lo = 0.0f, hi = -INFINITY;
    for (int i = 0; i < n; i++) {          /* nan is skipped (compares false) */
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    if (!(hi > lo)) { *a_out = 0.0f; *b_out = -lo; return; }
    uint8_t q[SL_QK];
    float best_a = (hi - lo) / nmax, best_c = lo, a, c;
    double best = HUGE_VAL;
    /* step sizes from a bit coarser to a bit finer than the min..max span */
    for (int t = 0; t <= nstep; t++) {
        float is = ((float)nmax - 0.5f + (float)t * (1.5f / (float)nstep)) / (hi - lo);
        double e = affine_levels_lsq(x, n, nmax, lo, is, q, &a, &c);
        /* Lloyd iterations from every start: a few well-refined starts beat
         * many unrefined ones (tested: 4 refined < 13 with one refined) */
        for (int it = 0; it < 4 && a > 0; it++) {
            float a3, c3;
            double e3 = affine_levels_lsq(x, n, nmax, c, 1.0f / a, q, &a3, &c3);
            if (!(e3 < e)) break;
            e = e3; a = a3; c = c3;
        }
        /* on ties (flat blocks) the finest step, which uses the top levels */
        if (e <= best) { best = e; best_a = a; best_c = c; }
    }
    *a_out = best_a; *b_out = -best_c;
}

/* Error of one sub-block with stored d1 = D*sc, m1 = M*m, levels chosen
 * optimally (written to q). Same float ops as the dequantizer. */
static float affine_eval(const float *x, int n, int nmax, float d1, float m1, uint8_t *q)
{
    /* split into simple loops the compiler can vectorise (n is 16 or 32) */
    float id = d1 != 0.0f ? 1.0f / d1 : 0.0f, fmax = (float)nmax, lf[SL_QK], acc[8] = { 0 };
    for (int i = 0; i < n; i++) {
        float v = (x[i] + m1) * id;
        v = v > 0.0f ? v : 0.0f;
        v = v < fmax ? v : fmax;
        lf[i] = (v + 12582912.0f) - 12582912.0f;     /* round half even, as sl_rint */
    }
    for (int i = 0; i < n; i += 8)
        for (int k = 0; k < 8; k++) {
            float r = d1 * lf[i + k] - m1 - x[i + k];
            acc[k] += r * r;
        }
    for (int i = 0; i < n; i++) q[i] = (uint8_t)(int)lf[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

struct affine_sb {
    int nsub, sublen, nmax, smax, nstep;
    float D, M;                /* f16-representable super scales */
    uint8_t sc[16], m[16];
    uint8_t q[SL_QKK];
};

/* Best integer (sc, m) near a/D, b/M for every sub-block, and their levels:
 * the nearest pair, then +-1 on the scale, then +-1 on the min (coordinate
 * descent; the full 3x3 neighbourhood costs twice as much for ~nothing). */
static float affine_choose(const float *x, struct affine_sb *s, const float *a, const float *b)
{
    float total = 0.0f;
    uint8_t qt[SL_QK];
    for (int j = 0; j < s->nsub; j++) {
        const float *xs = x + j * s->sublen;
        uint8_t *qj = s->q + j * s->sublen;
        int sc = s->D > 0 ? clamp_rint(a[j] / s->D, 0, s->smax) : 0;
        int mm = s->M != 0 ? clamp_rint(b[j] / s->M, 0, s->smax) : 0;
        float best = affine_eval(xs, s->sublen, s->nmax, s->D * (float)sc, s->M * (float)mm, qj);
        int bsc = sc, bm = mm;
        for (int pass = 0; pass < 2; pass++)
            for (int dir = -1; dir <= 1; dir += 2) {
                int c = pass == 0 ? sc + dir : bsc, m = pass == 0 ? mm : mm + dir;
                if (c < 0 || c > s->smax || m < 0 || m > s->smax) continue;
                if ((s->D <= 0 && c) || (s->M == 0 && m)) continue;
                float e = affine_eval(xs, s->sublen, s->nmax, s->D * (float)c, s->M * (float)m, qt);
                if (e < best) { best = e; bsc = c; bm = m; memcpy(qj, qt, (size_t)s->sublen); }
            }
        s->sc[j] = (uint8_t)bsc; s->m[j] = (uint8_t)bm;
        total += best;
    }
    return total;
}

/* Least-squares D, M for fixed integers: x ~ D*(sc*q) - M*m. */
static void affine_refit(const float *x, struct affine_sb *s)
{
    double aa = 0, ab = 0, bb = 0, ax = 0, bx = 0;
    for (int j = 0; j < s->nsub; j++)
        for (int i = 0; i < s->sublen; i++) {
            int e = j * s->sublen + i;
            double A = (double)s->sc[j] * s->q[e], B = -(double)s->m[j], xi = x[e];
            aa += A * A; ab += A * B; bb += B * B; ax += A * xi; bx += B * xi;
        }
    double det = aa * bb - ab * ab, D, M;
    if (bb == 0) { if (aa == 0) return; D = ax / aa; M = s->M; }
    else if (aa == 0) { D = s->D; M = bx / bb; }
    else if (det <= 1e-12 * aa * bb) return;
    else { D = (ax * bb - bx * ab) / det; M = (aa * bx - ab * ax) / det; }
    if (!(D > 0) || !isfinite(D) || !isfinite(M)) return;
    s->D = f16_round((float)D);
    if (bb != 0) s->M = f16_round((float)M);
}

static void affine_superblock(const float *x, struct affine_sb *s)
{
    float a[16], b[16], amax = 0.0f, bmax = 0.0f;
    for (int j = 0; j < s->nsub; j++) {
        affine_fit(x + j * s->sublen, s->sublen, s->nmax, s->nstep, &a[j], &b[j]);
        amax = fmaxf(amax, a[j]);
        bmax = fmaxf(bmax, b[j]);
    }
    s->D = f16_round(amax / (float)s->smax);
    s->M = f16_round(bmax / (float)s->smax);
    if (amax > 0 && s->D == 0.0f) s->D = sl_f16_to_f32(1);   /* below f16 range */
    float err = affine_choose(x, s, a, b);
    for (int it = 0; it < 2; it++) {
        struct affine_sb t = *s;
        affine_refit(x, &t);
        /* the new super scales move the ideal integers: re-aim at the same
         * effective sub-block scales */
        float a2[16], b2[16];
        for (int j = 0; j < s->nsub; j++) { a2[j] = s->D * s->sc[j]; b2[j] = s->M * s->m[j]; }
        float e2 = affine_choose(x, &t, a2, b2);
        if (!(e2 < err)) break;
        *s = t; err = e2;
    }
    /* f16 rounding of D costs up to 2^-11 relative: try its neighbouring
     * codes (matters for flat and sparse blocks; doing the same for M
     * gained < 0.1% RMSE for 40% more time). */
    for (int dir = -1; dir <= 1; dir += 2) {
        struct affine_sb t = *s;
        t.D = f16_step(s->D, dir);
        if (!(t.D > 0) || t.D == s->D) continue;
        float a2[16], b2[16];
        for (int j = 0; j < s->nsub; j++) { a2[j] = s->D * s->sc[j]; b2[j] = s->M * s->m[j]; }
        float e2 = affine_choose(x, &t, a2, b2);
        if (e2 < err) { *s = t; err = e2; }
    }
}

/* ======================= symmetric: value = a*q ======================== */

/* The least-squares sums of the levels l = clamp(rint(x * is)) to [-N, N-1]:
 * sum l x and sum l^2, in double, in element order. */
static void sym_sums(const float *x, int n, int N, float is, double *sqx, double *sqq)
{
    double lx = 0, ll = 0;
    for (int i = 0; i < n; i++) {
        int l = clamp_rint(x[i] * is, -N, N - 1);
        lx += (double)l * x[i]; ll += (double)l * l;
    }
    *sqx = lx;
    *sqq = ll;
}

/* Float scale of one sub-block, levels in [-N, N-1]. */
static float sym_fit(const float *x, int n, int N, int nstep, float span)
{
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; i++) if (fabsf(x[i]) > amax) { amax = fabsf(x[i]); max = x[i]; }
    if (!(amax > 0)) return 0.0f;
    double sxx = 0;
    for (int i = 0; i < n; i++) sxx += (double)x[i] * x[i];
    double best = HUGE_VAL;
    float best_a = max / (float)-N;
    for (int sign = -1; sign <= 1; sign += 2)
        for (int t = 0; t <= nstep; t++) {
            float lev = (float)N + 0.5f - span * (float)N * (float)t / (float)nstep;
            float is = (float)sign * lev / max;
            double sqx, sqq;
            sym_sums(x, n, N, is, &sqx, &sqq);
            if (sqq == 0) continue;
            double e = sxx - sqx * sqx / sqq;
            if (e < best) { best = e; best_a = (float)(sqx / sqq); }
        }
    for (int it = 0; it < 4; it++) {
        float is = 1.0f / best_a;
        double sqx, sqq;
        sym_sums(x, n, N, is, &sqx, &sqq);
        if (sqq == 0) break;
        double e = sxx - sqx * sqx / sqq;
        if (!(e < best)) break;
        best = e; best_a = (float)(sqx / sqq);
    }
    return best_a;
}

static float sym_eval(const float *x, int n, int N, float d1, int8_t *q)
{
    float id = d1 != 0.0f ? 1.0f / d1 : 0.0f, lo = (float)-N, hi = (float)(N - 1), lf[16], acc[8] = { 0 };
    for (int i = 0; i < n; i++) {
        float v = x[i] * id;
        v = v > lo ? v : lo;
        v = v < hi ? v : hi;
        lf[i] = (v + 12582912.0f) - 12582912.0f;
    }
    for (int i = 0; i < n; i += 8)
        for (int k = 0; k < 8; k++) {
            float r = d1 * lf[i + k] - x[i + k];
            acc[k] += r * r;
        }
    for (int i = 0; i < n; i++) q[i] = (int8_t)(int)lf[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

struct sym_sb {
    int N, S, nstep;       /* levels [-N, N-1], scales [-S, S-1] */
    float span;            /* grid: top level from N+0.5 down by span*N */
    float D;
    int8_t sc[16];
    int8_t q[SL_QKK];
};

static float sym_choose(const float *x, struct sym_sb *s, const float *a)
{
    float total = 0.0f;
    int8_t qt[16];
    for (int j = 0; j < 16; j++) {
        int r = s->D != 0 ? clamp_rint(a[j] / s->D, -s->S, s->S - 1) : 0;
        float best = HUGE_VALF;
        for (int ds = -1; ds <= 1; ds++) {
            int sc = r + ds;
            if (sc < -s->S || sc > s->S - 1 || (s->D == 0 && sc)) continue;
            float e = sym_eval(x + 16 * j, 16, s->N, s->D * (float)sc, qt);
            if (e < best) { best = e; s->sc[j] = (int8_t)sc; memcpy(s->q + 16 * j, qt, 16); }
        }
        total += best;
    }
    return total;
}

static void sym_superblock(const float *x, struct sym_sb *s)
{
    float a[16], amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 16; j++) {
        a[j] = sym_fit(x + 16 * j, 16, s->N, s->nstep, s->span);
        if (fabsf(a[j]) > amax) { amax = fabsf(a[j]); max = a[j]; }
    }
    s->D = f16_round(max / (float)-s->S);
    if (amax > 0 && s->D == 0.0f) s->D = sl_f16_to_f32(max > 0 ? 0x8001 : 1);
    float err = sym_choose(x, s, a);
    for (int it = 0; it < 2; it++) {
        double ax = 0, aa = 0;
        for (int e = 0; e < SL_QKK; e++) {
            double A = (double)s->sc[e / 16] * s->q[e];
            ax += A * x[e]; aa += A * A;
        }
        if (aa == 0) break;
        struct sym_sb t = *s;
        t.D = f16_round((float)(ax / aa));
        if (t.D == 0.0f || t.D == s->D) break;
        float a2[16];
        for (int j = 0; j < 16; j++) a2[j] = s->D * s->sc[j];
        float e2 = sym_choose(x, &t, a2);
        if (!(e2 < err)) break;
        *s = t; err = e2;
    }
}

/* ============================== packing ================================ */

static void pack_q2_k(const struct affine_sb *s, sl_block_q2_k *b)
{
    for (int j = 0; j < 16; j++) b->scales[j] = (uint8_t)(s->sc[j] | s->m[j] << 4);
    memset(b->qs, 0, sizeof b->qs);
    for (int e = 0; e < SL_QKK; e++) {
        int h = e / 128, k = (e / 32) & 3, l = e & 31;
        b->qs[32 * h + l] |= (uint8_t)(s->q[e] << (2 * k));
    }
    b->d = sl_f32_to_f16(s->D);
    b->dmin = sl_f32_to_f16(s->M);
}

static void pack_q3_k(const struct sym_sb *s, sl_block_q3_k *b)
{
    memset(b, 0, sizeof *b);
    for (int j = 0; j < 16; j++) {
        int v = s->sc[j] + 32;
        if (j < 8) b->scales[j] |= (uint8_t)(v & 15);
        else b->scales[j - 8] |= (uint8_t)((v & 15) << 4);
        b->scales[8 + (j & 3)] |= (uint8_t)((v >> 4) << (2 * (j >> 2)));
    }
    for (int e = 0; e < SL_QKK; e++) {
        int h = e / 128, k = (e / 32) & 3, l = e & 31, u = s->q[e] + 4;
        b->qs[32 * h + l] |= (uint8_t)((u & 3) << (2 * k));
        if (u & 4) b->hmask[l] |= (uint8_t)(1u << (4 * h + k));
    }
    b->d = sl_f32_to_f16(s->D);
}

static void pack_k4_scales(const uint8_t *sc, const uint8_t *m, uint8_t out[12])
{
    for (int j = 0; j < 4; j++) {
        out[j] = (uint8_t)((sc[j] & 63) | (sc[j + 4] >> 4) << 6);
        out[j + 4] = (uint8_t)((m[j] & 63) | (m[j + 4] >> 4) << 6);
        out[j + 8] = (uint8_t)((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
    }
}

static void pack_q4_k(const struct affine_sb *s, sl_block_q4_k *b)
{
    pack_k4_scales(s->sc, s->m, b->scales);
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++)
            b->qs[32 * p + l] = (uint8_t)(s->q[64 * p + l] | s->q[64 * p + 32 + l] << 4);
    b->d = sl_f32_to_f16(s->D);
    b->dmin = sl_f32_to_f16(s->M);
}

static void pack_q5_k(const struct affine_sb *s, sl_block_q5_k *b)
{
    pack_k4_scales(s->sc, s->m, b->scales);
    memset(b->qh, 0, sizeof b->qh);
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++)
            b->qs[32 * p + l] = (uint8_t)((s->q[64 * p + l] & 15) | (s->q[64 * p + 32 + l] & 15) << 4);
    for (int e = 0; e < SL_QKK; e++)
        b->qh[e & 31] |= (uint8_t)((s->q[e] >> 4) << (e / 32));
    b->d = sl_f32_to_f16(s->D);
    b->dmin = sl_f32_to_f16(s->M);
}

static void pack_q6_k(const struct sym_sb *s, sl_block_q6_k *b)
{
    memset(b->qh, 0, sizeof b->qh);
    memset(b->ql, 0, sizeof b->ql);
    for (int j = 0; j < 16; j++) b->scales[j] = s->sc[j];
    for (int e = 0; e < SL_QKK; e++) {
        int h = e / 128, g = (e / 32) & 3, l = e & 31, u = s->q[e] + 32;
        b->ql[64 * h + l + 32 * (g & 1)] |= (uint8_t)((u & 15) << (4 * (g >> 1)));
        b->qh[32 * h + l] |= (uint8_t)((u >> 4) << (2 * g));
    }
    b->d = sl_f32_to_f16(s->D);
}

/* ============================ dequantize =============================== */

static void deq_q2_k(const void *src, float *y, int64_t nb)
{
    const sl_block_q2_k *b = src;
    for (int64_t i = 0; i < nb; i++, b++) {
        float d = sl_f16_to_f32(b->d), dmin = sl_f16_to_f32(b->dmin);
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++)
                for (int half = 0; half < 2; half++) {
                    uint8_t sc = b->scales[8 * h + 2 * k + half];
                    float dl = d * (float)(sc & 15), ml = dmin * (float)(sc >> 4);
                    for (int l = 16 * half; l < 16 * half + 16; l++) {
                        int q = (b->qs[32 * h + l] >> (2 * k)) & 3;
                        y[128 * h + 32 * k + l] = dl * (float)q - ml;
                    }
                }
        y += SL_QKK;
    }
}

/* q3_K's 16 six-bit scales, stored +32, as signed values. */
static void q3k_scales(const uint8_t *s, int8_t out[16])
{
    for (int j = 0; j < 16; j++) {
        int lo = j < 8 ? s[j] & 15 : s[j - 8] >> 4;
        int hi = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
        out[j] = (int8_t)((lo | hi << 4) - 32);
    }
}

static void deq_q3_k(const void *src, float *y, int64_t nb)
{
    const sl_block_q3_k *b = src;
    for (int64_t i = 0; i < nb; i++, b++) {
        float d = sl_f16_to_f32(b->d);
        int8_t sc[16];
        q3k_scales(b->scales, sc);
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++)
                for (int half = 0; half < 2; half++) {
                    float dl = d * (float)sc[8 * h + 2 * k + half];
                    for (int l = 16 * half; l < 16 * half + 16; l++) {
                        int q = (b->qs[32 * h + l] >> (2 * k)) & 3;
                        if (!(b->hmask[l] & (1u << (4 * h + k)))) q -= 4;
                        y[128 * h + 32 * k + l] = dl * (float)q;
                    }
                }
        y += SL_QKK;
    }
}

/* q4_K / q5_K: 6-bit scale and min of sub-block j from the 12 packed bytes. */
static void k4_scale_min(const uint8_t *s, int j, int *sc, int *m)
{
    if (j < 4) { *sc = s[j] & 63; *m = s[j + 4] & 63; }
    else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* q4_K and q5_K: the same 6-bit scale/min pairs over 8 groups of 32; q5_K adds
 * a fifth bit per element from qh (NULL for q4_K). */
static void deq_k45(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, float d, float dmin,
                    float *y)
{
    for (int j = 0; j < 8; j++) {
        int sc, m;
        k4_scale_min(scales, j, &sc, &m);
        float d1 = d * (float)sc, m1 = dmin * (float)m;
        const uint8_t *q = qs + 32 * (j / 2);
        int shift = 4 * (j & 1);
        for (int l = 0; l < 32; l++) {
            int v = ((q[l] >> shift) & 15) | (qh ? ((qh[l] >> j) & 1) << 4 : 0);
            y[32 * j + l] = d1 * (float)v - m1;
        }
    }
}

static void deq_q4_k(const void *src, float *y, int64_t nb)
{
    const sl_block_q4_k *b = src;
    for (int64_t i = 0; i < nb; i++, b++, y += SL_QKK)
        deq_k45(b->scales, b->qs, NULL, sl_f16_to_f32(b->d), sl_f16_to_f32(b->dmin), y);
}

static void deq_q5_k(const void *src, float *y, int64_t nb)
{
    const sl_block_q5_k *b = src;
    for (int64_t i = 0; i < nb; i++, b++, y += SL_QKK)
        deq_k45(b->scales, b->qs, b->qh, sl_f16_to_f32(b->d), sl_f16_to_f32(b->dmin), y);
}

static void deq_q6_k(const void *src, float *y, int64_t nb)
{
    const sl_block_q6_k *b = src;
    for (int64_t i = 0; i < nb; i++, b++) {
        float d = sl_f16_to_f32(b->d);
        for (int h = 0; h < 2; h++) {
            const uint8_t *L = b->ql + 64 * h, *H = b->qh + 32 * h;
            const int8_t *S = b->scales + 8 * h;
            for (int g = 0; g < 4; g++) {
                const uint8_t *lq = L + 32 * (g & 1);
                int lshift = 4 * (g >> 1);
                for (int l = 0; l < 32; l++) {
                    int q = (((lq[l] >> lshift) & 15) | (((H[l] >> (2 * g)) & 3) << 4)) - 32;
                    y[128 * h + 32 * g + l] = (d * (float)S[l / 16 + 2 * g]) * (float)q;
                }
            }
        }
        y += SL_QKK;
    }
}

/* A type's row: each super-block fitted by FIT (state: a struct SBT with the
 * given fields, kept across super-blocks) and packed by pack_t. */
#define KQ_ROW(t, SBT, FIT, ...)                                                           \
    static int quant_##t(const float *x, void *dst, int64_t nb, const float *imatrix)     \
    {                                                                                     \
        struct SBT s = { __VA_ARGS__ };                                                   \
        (void)imatrix;                                                                    \
        for (int64_t i = 0; i < nb; i++, x += SL_QKK) {                                   \
            FIT(x, &s);                                                                   \
            pack_##t(&s, (sl_block_##t *)dst + i);                                        \
        }                                                                                 \
        return 0;                                                                         \
    }                                                                                     \
    const sl_quant_traits sl_qtraits_##t = { deq_##t, quant_##t, SL_GGML_Q8_K };
KQ_ROW(q2_k, affine_sb, affine_superblock, .nsub = 16, .sublen = 16, .nmax = 3, .smax = 15, .nstep = 3)
KQ_ROW(q3_k, sym_sb, sym_superblock, .N = 4, .S = 32, .nstep = 4, .span = 0.6f)
KQ_ROW(q4_k, affine_sb, affine_superblock, .nsub = 8, .sublen = 32, .nmax = 15, .smax = 63, .nstep = 3)
KQ_ROW(q5_k, affine_sb, affine_superblock, .nsub = 8, .sublen = 32, .nmax = 31, .smax = 63, .nstep = 3)
KQ_ROW(q6_k, sym_sb, sym_superblock, .N = 32, .S = 128, .nstep = 8, .span = 0.15f)
