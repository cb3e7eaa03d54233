/* Our quantizer of the grid i-quants (layouts: quant_iqgrid.h).
 *
 * Each super-block is cut into scale groups (16 or 32 elements sharing a
 * 3- or 4-bit scale code k), and each scale group into units: the elements
 * one grid entry covers (8, or 4 for the iq3 grids). Error = sum of
 * w_i (x_i - value_i)^2, w = the importance matrix (1 without one).
 *  1. Signs: the symmetric grids (iq2, iq3) hold magnitudes, so each element
 *     takes the sign of x; where the format only stores an even number of
 *     negations per 8 elements (iq2_xxs, iq2_xs, iq3_xxs), the cheapest
 *     element (least w x^2) gets the wrong sign and targets -|x|.
 *  2. Nearest entry of a unit for a given scale: round each element to the
 *     nearest level; if that lattice point is in the grid it is optimal,
 *     else search that point's precomputed candidates (weighted).
 *  3. Per scale group, a float scale from candidates around max|x| / top
 *     level, each refit by least squares after choosing entries.
 *  4. The f16 super-block scale d from the largest group scale; a few d
 *     around it are tried, each group choosing its code k (the nearest and
 *     its neighbours) with entries re-chosen for the exact stored scale.
 * iq1_s / iq1_m values are d (2k+1) (g + delta), g in {-1, 0, 1}: the same
 * search over signed grids, with both signs of delta tried (per scale group
 * for iq1_s, per 8 elements for iq1_m). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "quant_internal.h"
#include "../gguf/base/sl_internal.h"

/* ---- lattices: decoded entries and the lattice-point -> entry map ------- */

enum { LAT_IQ2XXS, LAT_IQ2XS, LAT_IQ2S, LAT_IQ3XXS, LAT_IQ3S, LAT_IQ1S, LAT_COUNT };

typedef struct {
    int K, N, L;          /* elements per entry, entries, levels */
    float lv[8];          /* the levels, ascending */
    float *vals;          /* N x K decoded entries */
    int16_t *map;         /* L^K lattice points -> entry, -1 if not in the grid */
    int32_t *nb_off;      /* L^K + 1 offsets into nb: a point's candidate entries */
    int16_t *nb;
} lattice;

static lattice lats[LAT_COUNT];
static pthread_once_t lat_once = PTHREAD_ONCE_INIT;
static int lat_ok;

static int level_index(const lattice *lt, float v)
{
    for (int i = 0; i < lt->L; i++)
        if (lt->lv[i] == v) return i;
    return -1;
}

/* Candidates of each lattice point off the grid: the entries whose squared
 * distance (in level values) is within the nearest one's plus the square of
 * the smallest level gap. A target rounds to its point per element, so the
 * best entry for it is among them unless the weights are very uneven; this
 * replaces a search of all N entries by a few dozen. */
static int lat_neighbours(lattice *lt, int pts)
{
    float gap = INFINITY;
    for (int i = 1; i < lt->L; i++) gap = fminf(gap, lt->lv[i] - lt->lv[i - 1]);
    float *dist = malloc(sizeof(float) * (size_t)lt->N);
    lt->nb_off = malloc(sizeof(int32_t) * (size_t)(pts + 1));
    size_t cap = (size_t)pts * 8, used = 0;
    lt->nb = malloc(sizeof(int16_t) * cap);
    if (!dist || !lt->nb_off || !lt->nb) { free(dist); return -1; }
    for (int key = 0; key < pts; key++) {
        lt->nb_off[key] = (int32_t)used;
        if (lt->map[key] >= 0) continue;
        float p[8], m = INFINITY;
        for (int j = 0, k = key; j < lt->K; j++, k /= lt->L) p[j] = lt->lv[k % lt->L];
        for (int e = 0; e < lt->N; e++) {
            float d = 0;
            for (int j = 0; j < lt->K; j++) d += (p[j] - lt->vals[e * lt->K + j]) * (p[j] - lt->vals[e * lt->K + j]);
            dist[e] = d;
            m = fminf(m, d);
        }
        for (int e = 0; e < lt->N; e++) {
            if (dist[e] > m + gap * gap) continue;
            if (used == cap) {
                int16_t *nn = realloc(lt->nb, sizeof(int16_t) * (cap *= 2));
                if (!nn) { free(dist); return -1; }
                lt->nb = nn;
            }
            lt->nb[used++] = (int16_t)e;
        }
    }
    lt->nb_off[pts] = (int32_t)used;
    free(dist);
    return 0;
}

static int lat_build(lattice *lt, int K, int N, int L, const float *lv, const void *grid, int is_signed)
{
    lt->K = K; lt->N = N; lt->L = L;
    memcpy(lt->lv, lv, sizeof(float) * (size_t)L);
    int pts = 1;
    for (int j = 0; j < K; j++) pts *= L;
    lt->vals = malloc(sizeof(float) * (size_t)N * (size_t)K);
    lt->map = malloc(sizeof(int16_t) * (size_t)pts);
    if (!lt->vals || !lt->map) return -1;
    for (int i = 0; i < pts; i++) lt->map[i] = -1;
    for (int e = 0; e < N; e++) {
        uint64_t g = K == 8 ? ((const uint64_t *)grid)[e] : ((const uint32_t *)grid)[e];
        int key = 0, mul = 1;
        for (int j = 0; j < K; j++, mul *= L) {
            uint8_t b = (uint8_t)(g >> (8 * j));
            float v = is_signed ? (float)(int8_t)b : (float)b;
            lt->vals[e * K + j] = v;
            int li = level_index(lt, v);
            if (li < 0) return -1;
            key += li * mul;
        }
        lt->map[key] = (int16_t)e;
    }
    return lat_neighbours(lt, pts);
}

static void lat_init(void)
{
    static const float l2[3] = { 8, 25, 43 }, l3x[8] = { 4, 12, 20, 28, 36, 44, 52, 62 };
    static const float l3s[8] = { 1, 3, 5, 7, 9, 11, 13, 15 }, l1[3] = { -1, 0, 1 };
    lat_ok = lat_build(&lats[LAT_IQ2XXS], 8, 256, 3, l2, sl_iq2xxs_grid, 0) == 0
          && lat_build(&lats[LAT_IQ2XS], 8, 512, 3, l2, sl_iq2xs_grid, 0) == 0
          && lat_build(&lats[LAT_IQ2S], 8, 1024, 3, l2, sl_iq2s_grid, 0) == 0
          && lat_build(&lats[LAT_IQ3XXS], 4, 256, 8, l3x, sl_iq3xxs_grid, 0) == 0
          && lat_build(&lats[LAT_IQ3S], 4, 512, 8, l3s, sl_iq3s_grid, 0) == 0
          && lat_build(&lats[LAT_IQ1S], 8, 2048, 3, l1, sl_iq1s_grid, 1) == 0;
}

/* Entry nearest to t[0..K) under weights w; its weighted error in *err. */
static int nearest(const lattice *lt, const float *t, const float *w, float *err)
{
    int key = 0, mul = 1;
    for (int j = 0; j < lt->K; j++, mul *= lt->L) {
        int best = 0;   /* nearest level */
        float bd = fabsf(t[j] - lt->lv[0]);
        for (int i = 1; i < lt->L; i++) {
            float dd = fabsf(t[j] - lt->lv[i]);
            if (dd < bd) { bd = dd; best = i; }
        }
        key += best * mul;
    }
    int e = lt->map[key];
    if (e >= 0) {
        const float *v = lt->vals + e * lt->K;
        float s = 0;
        for (int j = 0; j < lt->K; j++) s += w[j] * (t[j] - v[j]) * (t[j] - v[j]);
        *err = s;
        return e;
    }
    int best = 0;
    float be = INFINITY;
    for (int32_t ci = lt->nb_off[key]; ci < lt->nb_off[key + 1]; ci++) {
        int c = lt->nb[ci];
        const float *v = lt->vals + c * lt->K;
        float s = 0;
        for (int j = 0; j < lt->K && s < be; j++) s += w[j] * (t[j] - v[j]) * (t[j] - v[j]);
        if (s < be) { be = s; best = c; }
    }
    *err = be;
    return best;
}

/* ---- per-type parameters ------------------------------------------------ */

typedef struct {
    int type, lat;
    int gsz;        /* elements per scale group */
    int kmax;       /* largest scale code */
    float c;        /* group scale = d * (2k+1) * c */
    int parity;     /* signs stored as 7 bits + parity */
    int iq1;        /* signed grid with +-delta; delta per dgrp elements */
    int dgrp;
} tparams;

static const tparams k_params[] = {
    { SL_GGML_IQ2_XXS, LAT_IQ2XXS, 32, 15, 0.125f, 1, 0, 0 },
    { SL_GGML_IQ2_XS,  LAT_IQ2XS,  16, 15, 0.125f, 1, 0, 0 },
    { SL_GGML_IQ2_S,   LAT_IQ2S,   16, 15, 0.125f, 0, 0, 0 },
    { SL_GGML_IQ3_XXS, LAT_IQ3XXS, 32, 15, 0.25f,  1, 0, 0 },
    { SL_GGML_IQ3_S,   LAT_IQ3S,   32, 15, 1.0f,   0, 0, 0 },
    { SL_GGML_IQ1_S,   LAT_IQ1S,   32, 7,  1.0f,   0, 1, 32 },
    { SL_GGML_IQ1_M,   LAT_IQ1S,   16, 7,  1.0f,   0, 1, 8 },
};

/* The choice for one scale group at one scale. */
typedef struct {
    int idx[8];      /* entries, one per unit (<= 32 / 4) */
    int dneg[4];     /* iq1: delta sign per delta group */
    double err, sxh, shh;   /* error; sums for the least-squares scale */
} gfit;

/* Entries for scale s (> 0) of a group: a = targets (sign-folded for the
 * symmetric grids, x itself for iq1), w = weights, n = tp->gsz. */
static void group_fit(const tparams *tp, const float *a, const float *w, float s, gfit *f)
{
    const lattice *lt = &lats[tp->lat];
    int K = lt->K, n = tp->gsz;
    float t[8];
    f->err = f->sxh = f->shh = 0;
    float is = 1.0f / s;
    if (!tp->iq1) {
        for (int u = 0; u < n / K; u++) {
            float e;
            for (int j = 0; j < K; j++) t[j] = a[u * K + j] * is;
            f->idx[u] = nearest(lt, t, w + u * K, &e);
            const float *v = lt->vals + f->idx[u] * K;
            for (int j = 0; j < K; j++) {
                double aw = (double)w[u * K + j];
                f->sxh += aw * a[u * K + j] * v[j];
                f->shh += aw * v[j] * v[j];
                double r = a[u * K + j] - (double)s * v[j];
                f->err += aw * r * r;
            }
        }
        return;
    }
    for (int dgi = 0; dgi < n / tp->dgrp; dgi++) {
        const float *ad = a + dgi * tp->dgrp, *wd = w + dgi * tp->dgrp;
        double be = INFINITY, bx = 0, bh = 0;
        int bidx[4] = { 0, 0, 0, 0 }, bneg = 0;
        for (int neg = 0; neg < 2; neg++) {
            float delta = neg ? -SL_IQ1_DELTA : SL_IQ1_DELTA;
            double err = 0, sx = 0, sh = 0;
            int idx[4];
            for (int u = 0; u < tp->dgrp / 8; u++) {
                float e;
                for (int j = 0; j < 8; j++) t[j] = ad[u * 8 + j] * is - delta;
                idx[u] = nearest(lt, t, wd + u * 8, &e);
                const float *v = lt->vals + idx[u] * 8;
                for (int j = 0; j < 8; j++) {
                    double h = (double)v[j] + delta, aw = wd[u * 8 + j];
                    double r = ad[u * 8 + j] - (double)s * h;
                    sx += aw * ad[u * 8 + j] * h;
                    sh += aw * h * h;
                    err += aw * r * r;
                }
            }
            if (err < be) {
                be = err; bx = sx; bh = sh; bneg = neg;
                memcpy(bidx, idx, sizeof idx);
            }
        }
        f->err += be; f->sxh += bx; f->shh += bh;
        f->dneg[dgi] = bneg;
        memcpy(f->idx + dgi * (tp->dgrp / 8), bidx, sizeof(int) * (size_t)(tp->dgrp / 8));
    }
}

/* Best float scale of a group (0 if it is all zero). */
static float group_scale(const tparams *tp, const float *a, const float *w)
{
    const lattice *lt = &lats[tp->lat];
    float amax = 0;
    for (int i = 0; i < tp->gsz; i++) amax = fmaxf(amax, fabsf(a[i]));
    if (amax == 0) return 0;
    float top = tp->iq1 ? 1.0f + SL_IQ1_DELTA : lt->lv[lt->L - 1];
    float s0 = amax / top, best_s = s0;
    double best = INFINITY;
    gfit f;
    for (int c = 0; c < 13; c++) {
        float s = s0 * (0.5f + 0.06f * (float)c);
        for (int it = 0; it < 2; it++) {
            group_fit(tp, a, w, s, &f);
            if (f.err < best) { best = f.err; best_s = s; }
            if (!(f.shh > 0) || !(f.sxh > 0)) break;
            s = (float)(f.sxh / f.shh);
        }
    }
    return best_s;
}

/* ---- encoding ----------------------------------------------------------- */

/* Sign-folded targets of n elements (a multiple of 8): a = |x|, signs[g] the
 * sign byte of each 8; with parity, the cheapest element of an odd group is
 * flipped (and targets -|x|). */
static void fold_signs(const float *x, const float *w, int n, int parity, float *a, uint8_t *signs)
{
    for (int g = 0; g < n / 8; g++) {
        unsigned s = 0;
        for (int j = 0; j < 8; j++) {
            a[8 * g + j] = fabsf(x[8 * g + j]);
            if (x[8 * g + j] < 0) s |= 1u << j;
        }
        if (parity && __builtin_parity(s)) {
            int jm = 0;
            float cm = INFINITY;
            for (int j = 0; j < 8; j++) {
                float cst = w[8 * g + j] * x[8 * g + j] * x[8 * g + j];
                if (cst < cm) { cm = cst; jm = j; }
            }
            s ^= 1u << jm;
            a[8 * g + jm] = -a[8 * g + jm];
        }
        signs[g] = (uint8_t)s;
    }
}

/* Scale of code k as the format computes it (float, same rounding). */
static float code_scale(const tparams *tp, float d, int k)
{
    if (tp->c == 1.0f) return d * (float)(2 * k + 1);
    return (d * (0.5f + (float)k)) * (tp->c * 2.0f);
}

typedef struct {
    int k[16];
    gfit f[16];
    double err;
} sb_choice;

static void choose_codes(const tparams *tp, const float *a, const float *w, const float *gs,
                         float d, sb_choice *ch)
{
    int ng = SL_QKK / tp->gsz;
    ch->err = 0;
    for (int g = 0; g < ng; g++) {
        const float *ag = a + g * tp->gsz, *wg = w + g * tp->gsz;
        int k0 = (int)lrintf((gs[g] / (d * tp->c) - 1.0f) * 0.5f);
        if (k0 < 0) k0 = 0;
        if (k0 > tp->kmax) k0 = tp->kmax;
        double be = INFINITY;
        for (int k = k0 - 1; k <= k0 + 1; k++) {
            if (k < 0 || k > tp->kmax) continue;
            gfit f;
            group_fit(tp, ag, wg, code_scale(tp, d, k), &f);
            if (f.err < be) { be = f.err; ch->k[g] = k; ch->f[g] = f; }
        }
        ch->err += be;
    }
}

static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static void encode(const tparams *tp, const sb_choice *ch, const uint8_t *signs, uint16_t dh, void *dst)
{
    switch (tp->type) {
    case SL_GGML_IQ2_XXS: {
        sl_block_iq2_xxs *b = dst;
        b->d = dh;
        for (int ib = 0; ib < 8; ib++) {
            uint32_t w = (uint32_t)ch->k[ib] << 28;
            for (int l = 0; l < 4; l++) {
                b->qs[8 * ib + l] = (uint8_t)ch->f[ib].idx[l];
                w |= (uint32_t)(signs[4 * ib + l] & 127) << (7 * l);
            }
            put_u32(b->qs + 8 * ib + 4, w);
        }
        break;
    }
    case SL_GGML_IQ2_XS: case SL_GGML_IQ2_S: {
        int is_s = tp->type == SL_GGML_IQ2_S;
        sl_block_iq2_xs *bx = dst;
        sl_block_iq2_s *bs = dst;
        if (is_s) { memset(bs, 0, sizeof *bs); bs->d = dh; } else bx->d = dh;
        for (int ib = 0; ib < 8; ib++) {
            uint8_t sc = (uint8_t)(ch->k[2 * ib] | ch->k[2 * ib + 1] << 4);
            for (int l = 0; l < 4; l++) {
                int idx = ch->f[2 * ib + l / 2].idx[l % 2];
                if (is_s) {
                    bs->qs[4 * ib + l] = (uint8_t)idx;
                    bs->qh[ib] |= (uint8_t)((idx >> 8) << (2 * l));
                    bs->signs[4 * ib + l] = signs[4 * ib + l];
                } else {
                    bx->qs[4 * ib + l] = (uint16_t)(idx | (signs[4 * ib + l] & 127) << 9);
                }
            }
            if (is_s) bs->scales[ib] = sc; else bx->scales[ib] = sc;
        }
        break;
    }
    case SL_GGML_IQ3_XXS: {
        sl_block_iq3_xxs *b = dst;
        b->d = dh;
        for (int ib = 0; ib < 8; ib++) {
            uint32_t w = (uint32_t)ch->k[ib] << 28;
            for (int u = 0; u < 8; u++) b->qs[8 * ib + u] = (uint8_t)ch->f[ib].idx[u];
            for (int l = 0; l < 4; l++) w |= (uint32_t)(signs[4 * ib + l] & 127) << (7 * l);
            put_u32(b->w + 4 * ib, w);
        }
        break;
    }
    case SL_GGML_IQ3_S: {
        sl_block_iq3_s *b = dst;
        memset(b, 0, sizeof *b);
        b->d = dh;
        for (int ib = 0; ib < 8; ib++) {
            b->scales[ib / 2] |= (uint8_t)(ch->k[ib] << (4 * (ib % 2)));
            for (int u = 0; u < 8; u++) {
                int q = 8 * ib + u, idx = ch->f[ib].idx[u];
                b->qs[q] = (uint8_t)idx;
                b->qh[q / 8] |= (uint8_t)((idx >> 8) << (q % 8));
            }
            for (int l = 0; l < 4; l++) b->signs[4 * ib + l] = signs[4 * ib + l];
        }
        break;
    }
    case SL_GGML_IQ1_S: {
        sl_block_iq1_s *b = dst;
        b->d = dh;
        for (int ib = 0; ib < 8; ib++) {
            unsigned h = (unsigned)ch->k[ib] << 12 | (unsigned)ch->f[ib].dneg[0] << 15;
            for (int l = 0; l < 4; l++) {
                int idx = ch->f[ib].idx[l];
                b->qs[4 * ib + l] = (uint8_t)idx;
                h |= (unsigned)(idx >> 8) << (3 * l);
            }
            b->qh[ib] = (uint16_t)h;
        }
        break;
    }
    case SL_GGML_IQ1_M: {
        sl_block_iq1_m *b = dst;
        uint16_t sc[4] = { 0, 0, 0, 0 };
        memset(b->qh, 0, sizeof b->qh);
        for (int ib = 0; ib < 8; ib++) {
            sc[ib / 2] |= (uint16_t)((ch->k[2 * ib] | ch->k[2 * ib + 1] << 3) << (6 * (ib % 2)));
            for (int l = 0; l < 4; l++) {
                const gfit *f = &ch->f[2 * ib + l / 2];
                int idx = f->idx[l % 2];
                b->qs[4 * ib + l] = (uint8_t)idx;
                b->qh[2 * ib + l / 2] |= (uint8_t)(((idx >> 8) | f->dneg[l % 2] << 3) << (4 * (l % 2)));
            }
        }
        for (int i = 0; i < 4; i++) {
            sc[i] |= (uint16_t)(((dh >> (4 * i)) & 15) << 12);
            b->scales[2 * i] = (uint8_t)sc[i];
            b->scales[2 * i + 1] = (uint8_t)(sc[i] >> 8);
        }
        break;
    }
    default: break;
    }
}

static void quant_block(const tparams *tp, const float *x, const float *w, void *dst)
{
    float a[SL_QKK], gs[16];
    uint8_t signs[32];
    int ng = SL_QKK / tp->gsz;
    if (tp->iq1) { memcpy(a, x, sizeof a); memset(signs, 0, sizeof signs); }
    else fold_signs(x, w, SL_QKK, tp->parity, a, signs);
    float gmax = 0;
    for (int g = 0; g < ng; g++) {
        gs[g] = group_scale(tp, a + g * tp->gsz, w + g * tp->gsz);
        gmax = fmaxf(gmax, gs[g]);
    }
    static sb_choice zero;   /* all-zero choice: codes 0, entries 0 */
    float d0 = gmax / ((float)(2 * tp->kmax + 1) * tp->c);
    if (!(d0 > 0) || !isfinite(d0)) {
        encode(tp, &zero, signs, 0, dst);
        return;
    }
    sb_choice best, cur;
    best.err = INFINITY;
    uint16_t best_dh = 0;
    for (int c = -2; c <= 2; c++) {
        float dc = d0 * (1.0f + 0.04f * (float)c);
        uint16_t dh = sl_f32_to_f16(dc);
        float d = sl_f16_to_f32(dh);
        if (!(d > 0) || !isfinite(d)) continue;
        choose_codes(tp, a, w, gs, d, &cur);
        if (cur.err < best.err) { best = cur; best_dh = dh; }
    }
    if (!(best.err < INFINITY)) { encode(tp, &zero, signs, 0, dst); return; }
    encode(tp, &best, signs, best_dh, dst);
}

int sl_quant_iqgrid_quantize(int type, const float *x, void *dst, int64_t nb, const float *imatrix)
{
    const tparams *tp = NULL;
    for (size_t i = 0; i < sizeof k_params / sizeof k_params[0]; i++)
        if (k_params[i].type == type) tp = &k_params[i];
    if (!tp) return sl_err_set(SL_EUNSUPPORTED, "type %d is not a grid i-quant", type);
    pthread_once(&lat_once, lat_init);
    if (!lat_ok) return sl_err_set(SL_ENOMEM, "i-quant lattice tables: out of memory");
    size_t bb = sl_gguf_block_bytes((uint32_t)type);
    float w[SL_QKK];
    for (int64_t i = 0; i < nb; i++) {
        const float *xb = x + i * SL_QKK;
        for (int j = 0; j < SL_QKK; j++) {
            float v = imatrix ? imatrix[i * SL_QKK + j] : 1.0f;
            w[j] = v > 0 && isfinite(v) ? v : 0.0f;
        }
        float xs[SL_QKK];
        for (int j = 0; j < SL_QKK; j++) xs[j] = isfinite(xb[j]) ? xb[j] : 0.0f;
        quant_block(tp, xs, w, (char *)dst + (size_t)i * bb);
    }
    return 0;
}
