/* The float ops of the forward pass, written once over the vector primitives
 * of a level (vmath_<isa>.h, included first; see vmath_avx2.h for the list):
 * rmsnorm, rope, silu_mul, swiglu_oai, gelu_mul, add, f32_to_f16 (the sl_kern entries ops_fill
 * installs) and the vector exp and softmax the attention driver shares.
 * Included by ops_avx2.c, ops_avx512.c and ops_neon.c, each compiled with
 * its level's -m flags so everything inlines into that level's code.
 *
 * Plain arithmetic is written with the vector operators (+ - * / on the
 * level's vector type, GNU C vector extensions as in the intrinsic headers;
 * -ffp-contract=off keeps a*b+c two roundings, as the scalar code).
 *
 * Tails: where a level has lane masks (SL_VMASK) the vector code runs to the
 * end; otherwise it covers sl_vbody(n) elements and the rest is scalar code
 * with the same per-element arithmetic (elementwise ops) or, for the ops with
 * vector-only arithmetic (exp), one partial vector through a stack copy. */
#ifndef SL_OPS_DRIVER_H
#define SL_OPS_DRIVER_H

#include <math.h>

#include "kern_internal.h"
#include "ops_internal.h"
#include "rope.h"

/* Elements the vector loop covers: all of them with masks, else whole vectors. */
static inline int64_t sl_vbody(int64_t n, int64_t w)
{
    return SL_VMASK ? n : n - n % w;
}

/* exp(x): x = n*ln2 + r with |r| <= ln2/2 (ln2 split in two so n*ln2_hi is
 * exact); e^r by its degree-7 Taylor polynomial (truncation < r^8/8! = 5e-9
 * relative, below an f32 rounding); 2^n applied as two factors
 * 2^(n>>1) * 2^(n-(n>>1)) so overflow gives inf and deep underflow rounds
 * through the subnormals to 0. Inputs are clamped to [-104, 89] (exp = 0
 * resp. inf there); -inf gives 0. */
SL_VINL sl_vf sl_vexp(sl_vf x)
{
    x = sl_v_min(sl_v_max(x, sl_v_set1(-104.0f)), sl_v_set1(89.0f));
    sl_vf n = sl_v_roundn(x * sl_v_set1(1.44269504088896341f));
    sl_vf r = sl_v_fnma(n, sl_v_set1(0.693145751953125f), x);
    r = sl_v_fnma(n, sl_v_set1(1.428606765330187e-06f), r);
    sl_vf p = sl_v_set1(1.0f / 5040);
    p = sl_v_fma(p, r, sl_v_set1(1.0f / 720));
    p = sl_v_fma(p, r, sl_v_set1(1.0f / 120));
    p = sl_v_fma(p, r, sl_v_set1(1.0f / 24));
    p = sl_v_fma(p, r, sl_v_set1(1.0f / 6));
    p = sl_v_fma(p, r, sl_v_set1(0.5f));
    p = sl_v_fma(p, r, sl_v_set1(1.0f));
    p = sl_v_fma(p, r, sl_v_set1(1.0f));
    return sl_v_scale2n(p, n);
}

/* x <- softmax(x) in place, as the scalar: max-subtracted, exps summed in
 * double, one multiply by (float)(1/sum); round_h: the probabilities rounded
 * to f16 (kept as f32), as attention's p.v uses them. The last partial
 * vector is padded with -inf (exp 0). sink (-inf: none): an attention sink
 * logit, in the maximum and, by libm expf as in the oracle, in the sum. */
SL_VINL void sl_vsoftmax(float *x, int64_t n, const int round_h, float sink)
{
    const int64_t nv = n - n % SL_VW;
    sl_vf vm = sl_v_set1(-INFINITY);
    int64_t i;
    for (i = 0; i < nv; i += SL_VW)
        vm = sl_v_max(vm, sl_v_ld(x + i));
    if (i < n)
        vm = sl_v_max(vm, sl_v_ldp(x + i, n - i, -INFINITY));
    float m = sl_v_hmax(vm);
    m = sink > m ? sink : m;
    sl_vf mx = sl_v_set1(m);
    sl_vacc s = sl_vacc_zero();
    for (i = 0; i < nv; i += SL_VW) {
        sl_vf e = sl_vexp(sl_v_ld(x + i) - mx);
        sl_v_st(x + i, e);
        sl_vacc_add(&s, e);
    }
    if (i < n) {
        sl_vf e = sl_vexp(sl_v_ldp(x + i, n - i, -INFINITY) - mx);
        sl_v_stp(x + i, e, n - i);
        sl_vacc_add(&s, e);
    }
    sl_vf inv = sl_v_set1((float)(1.0 / (sl_vacc_sum(s) + expf(sink - m))));
    for (i = 0; i < nv; i += SL_VW) {
        sl_vf v = sl_v_ld(x + i) * inv;
        sl_v_st(x + i, round_h ? sl_v_round_h(v) : v);
    }
    if (i < n) {
        sl_vf v = sl_v_ldp(x + i, n - i, 0.0f) * inv;
        sl_v_stp(x + i, round_h ? sl_v_round_h(v) : v, n - i);
    }
}

/* Squares (each rounded to f32, as the scalar) summed in double. */
static void ops_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps)
{
    const int64_t nv = sl_vbody(n, SL_VW);
    sl_vacc s = sl_vacc_zero();
    int64_t i;
    for (i = 0; i < nv; i += SL_VW) {
        sl_vf v = sl_v_ldm(x + i, n - i);
        sl_vacc_add(&s, v * v);
    }
    double sum = sl_vacc_sum(s);
    for (; i < n; i++)
        sum += (double)(x[i] * x[i]);
    float mean = (float)(sum / (double)n);
    float scale = 1.0f / sqrtf(mean + eps);
    sl_vf vs = sl_v_set1(scale);
    for (i = 0; i < nv; i += SL_VW)
        sl_v_stm(y + i, sl_v_ldm(x + i, n - i) * vs * sl_v_ldm(w + i, n - i), n - i);
    for (; i < n; i++)
        y[i] = (x[i] * scale) * w[i];
}

/* Rope's vector prefix (sl_rope_run does the chunks, angles and the scalar
 * rest): bit-identical to the scalar, the same mul/mul/sub, no FMA. */
SL_VINL int rope_vec(float *xa, float *xb, const float *c, const float *s, int m, int neox)
{
    int i = 0;
    if (neox) {
        const int mv = (int)sl_vbody(m, SL_VW);
        for (; i < mv; i += SL_VW) {
            sl_vf x0 = sl_v_ldm(xa + i, m - i), x1 = sl_v_ldm(xb + i, m - i);
            sl_vf vc = sl_v_ldm(c + i, m - i), vs = sl_v_ldm(s + i, m - i);
            sl_v_stm(xa + i, x0 * vc - x1 * vs, m - i);
            sl_v_stm(xb + i, x0 * vs + x1 * vc, m - i);
        }
    } else {
        const int mv = (int)sl_vbody(m, SL_V_RPAIRS);
        for (; i < mv; i += SL_V_RPAIRS)
            sl_v_rope_pairs(xa + 2 * i, c + i, s + i, m - i);
    }
    return i;
}

static void ops_rope(float *x, int n_head, int head_dim, int n_rot, int32_t pos,
                     const float *inv_freq, int neox)
{
    sl_rope_run(x, n_head, head_dim, n_rot, pos, inv_freq, neox, rope_vec);
}

SL_VINL sl_vf silu_mul_v(sl_vf g, sl_vf u)
{
    sl_vf e = sl_vexp(sl_v_zero() - g);
    return g / (sl_v_set1(1.0f) + e) * u;
}

/* y = g / (1 + exp(-g)) * u, every element through the vector exp. */
static void ops_silu_mul(float *y, const float *g, const float *u, int64_t n)
{
    int64_t i = 0;
    for (; i + SL_VW <= n; i += SL_VW)
        sl_v_st(y + i, silu_mul_v(sl_v_ld(g + i), sl_v_ld(u + i)));
    if (i < n)
        sl_v_stp(y + i, silu_mul_v(sl_v_ldp(g + i, n - i, 0.0f), sl_v_ldp(u + i, n - i, 0.0f)), n - i);
}

SL_VINL sl_vf swiglu_oai_v(sl_vf g, sl_vf u, sl_vf alpha, sl_vf limit)
{
    sl_vf x = sl_v_min(g, limit), v = sl_v_max(sl_v_min(u, limit), sl_v_zero() - limit);
    return x / (sl_v_set1(1.0f) + sl_vexp(alpha * (sl_v_zero() - x))) * (v + sl_v_set1(1.0f));
}

static void ops_swiglu_oai(float *y, const float *g, const float *u, int64_t n, float alpha, float limit)
{
    const sl_vf va = sl_v_set1(alpha), vl = sl_v_set1(limit);
    int64_t i = 0;
    for (; i + SL_VW <= n; i += SL_VW)
        sl_v_st(y + i, swiglu_oai_v(sl_v_ld(g + i), sl_v_ld(u + i), va, vl));
    if (i < n)
        sl_v_stp(y + i, swiglu_oai_v(sl_v_ldp(g + i, n - i, 0.0f), sl_v_ldp(u + i, n - i, 0.0f), va, vl), n - i);
}

static void ops_add(float *y, const float *a, const float *b, int64_t n)
{
    const int64_t nv = sl_vbody(n, SL_VW);
    int64_t i = 0;
    for (; i < nv; i += SL_VW)
        sl_v_stm(y + i, sl_v_ldm(a + i, n - i) + sl_v_ldm(b + i, n - i), n - i);
    for (; i < n; i++)
        y[i] = a[i] + b[i];
}

static void ops_f32_to_f16(sl_f16 *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + SL_VW <= n; i += SL_VW)
        sl_v_sth(y + i, sl_v_ld(x + i));
    if (i < n)
        sl_v_sthp(y + i, sl_v_ldp(x + i, n - i, 0.0f), n - i);
}

/* y = gelu(g) * u through the shared F16 table (a lookup per element: the
 * table is the numerics; the conversions are the level's scalar ones). */
static void ops_gelu_mul(float *y, const float *g, const float *u, int64_t n)
{
    const sl_f16 *t = sl_gelu_table();
    for (int64_t i = 0; i < n; i++) {
        if (g[i] <= -10.0f) y[i] = 0.0f;
        else if (g[i] >= 10.0f) y[i] = g[i] * u[i];
        else y[i] = sl_f16_to_f32(t[sl_f32_to_f16(g[i])]) * u[i];
    }
}

/* The delta rule (kernels.h) over vectors of the dv lanes, the scalar
 * oracle's operations per lane in its order; no tail beyond masks: a level
 * without masks finishes the lanes in scalar code. */
static void ops_delta_rule(float *S, const float *q, const float *k, const float *v, float beta, float decay,
                           float scale, int32_t dk, int32_t dv, float *o, float *m)
{
    const int64_t nv = sl_vbody(dv, SL_VW);
    const sl_vf vdec = sl_v_set1(decay), vbeta = sl_v_set1(beta);
    int64_t j;
    for (j = 0; j < dv; j++) m[j] = 0;
    for (int32_t i = 0; i < dk; i++) {
        float *Si = S + (int64_t)i * dv;
        const sl_vf ki = sl_v_set1(k[i]);
        for (j = 0; j < nv; j += SL_VW) {
            sl_vf s = sl_v_ldm(Si + j, dv - j) * vdec;
            sl_v_stm(Si + j, s, dv - j);
            sl_v_stm(m + j, sl_v_ldm(m + j, dv - j) + s * ki, dv - j);
        }
        for (; j < dv; j++) {
            Si[j] *= decay;
            m[j] += Si[j] * k[i];
        }
    }
    for (j = 0; j < nv; j += SL_VW) {
        sl_v_stm(m + j, (sl_v_ldm(v + j, dv - j) - sl_v_ldm(m + j, dv - j)) * vbeta, dv - j);
        sl_v_stm(o + j, sl_v_zero(), dv - j);
    }
    for (; j < dv; j++) {
        m[j] = (v[j] - m[j]) * beta;
        o[j] = 0;
    }
    for (int32_t i = 0; i < dk; i++) {
        float *Si = S + (int64_t)i * dv;
        const float qs = q[i] * scale;
        const sl_vf ki = sl_v_set1(k[i]), qi = sl_v_set1(qs);
        for (j = 0; j < nv; j += SL_VW) {
            sl_vf s = sl_v_ldm(Si + j, dv - j) + ki * sl_v_ldm(m + j, dv - j);
            sl_v_stm(Si + j, s, dv - j);
            sl_v_stm(o + j, sl_v_ldm(o + j, dv - j) + s * qi, dv - j);
        }
        for (; j < dv; j++) {
            Si[j] += k[i] * m[j];
            o[j] += Si[j] * qs;
        }
    }
}

/* Four rows of the gemm (ops_internal.h) over the lanes [j, j + w) of one
 * vector (w < SL_VW only with masks): each lane's sum in kk order. */
SL_VINL void gemm_rows4(float *c, int64_t ldc, const float *a, int64_t lda, const float *b, int64_t ldb,
                        int32_t k, int add, int64_t j, int64_t w)
{
    sl_vf x0 = add ? sl_v_ldm(c + j, w) : sl_v_zero(), x1 = add ? sl_v_ldm(c + ldc + j, w) : sl_v_zero();
    sl_vf x2 = add ? sl_v_ldm(c + 2 * ldc + j, w) : sl_v_zero(), x3 = add ? sl_v_ldm(c + 3 * ldc + j, w) : sl_v_zero();
    for (int32_t kk = 0; kk < k; kk++) {
        const sl_vf y = sl_v_ldm(b + kk * ldb + j, w);
        x0 = x0 + sl_v_set1(a[kk]) * y;
        x1 = x1 + sl_v_set1(a[lda + kk]) * y;
        x2 = x2 + sl_v_set1(a[2 * lda + kk]) * y;
        x3 = x3 + sl_v_set1(a[3 * lda + kk]) * y;
    }
    sl_v_stm(c + j, x0, w);
    sl_v_stm(c + ldc + j, x1, w);
    sl_v_stm(c + 2 * ldc + j, x2, w);
    sl_v_stm(c + 3 * ldc + j, x3, w);
}

/* One row over two whole vectors of lanes [j, j + 2 SL_VW), else over one
 * vector [j, j + w). */
SL_VINL void gemm_row(float *c, const float *a, const float *b, int64_t ldb, int32_t k, int add, int64_t j,
                      int two, int64_t w)
{
    if (two) {
        sl_vf x0 = add ? sl_v_ld(c + j) : sl_v_zero(), x1 = add ? sl_v_ld(c + j + SL_VW) : sl_v_zero();
        for (int32_t kk = 0; kk < k; kk++) {
            const sl_vf ak = sl_v_set1(a[kk]);
            x0 = x0 + ak * sl_v_ld(b + kk * ldb + j);
            x1 = x1 + ak * sl_v_ld(b + kk * ldb + j + SL_VW);
        }
        sl_v_st(c + j, x0);
        sl_v_st(c + j + SL_VW, x1);
        return;
    }
    sl_vf x = add ? sl_v_ldm(c + j, w) : sl_v_zero();
    for (int32_t kk = 0; kk < k; kk++) x = x + sl_v_set1(a[kk]) * sl_v_ldm(b + kk * ldb + j, w);
    sl_v_stm(c + j, x, w);
}

/* The gemm of ops_internal.h: lanes over the columns, four rows share each
 * load of b; columns past the vector body (levels without masks) in scalar
 * code with the same per-lane order. */
static void ops_gemm(float *c, int64_t ldc, const float *a, int64_t lda, const float *b, int64_t ldb, int32_t m,
                     int32_t n, int32_t k, int add)
{
    const int64_t nb = sl_vbody(n, SL_VW);
    int32_t r = 0;
    for (; r + 4 <= m; r += 4)
        for (int64_t j = 0; j < nb; j += SL_VW)
            gemm_rows4(c + r * ldc, ldc, a + r * lda, lda, b, ldb, k, add, j, n - j);
    for (; r < m; r++)
        for (int64_t j = 0, two; j < nb; j += two ? 2 * SL_VW : SL_VW) {
            two = nb - j >= 2 * SL_VW;
            gemm_row(c + r * ldc, a + r * lda, b, ldb, k, add, j, (int)two, n - j);
        }
    for (r = 0; r < m && nb < n; r++)
        for (int64_t j = nb; j < n; j++) {
            float acc = add ? c[r * ldc + j] : 0.0f;
            for (int32_t kk = 0; kk < k; kk++) acc += a[r * lda + kk] * b[kk * ldb + j];
            c[r * ldc + j] = acc;
        }
}

static void ops_delta_chunk(float *S, const float *q, const float *k, const float *v, int64_t ld, const float *beta,
                            const float *gl, int64_t ldb, float scale, int32_t n, int32_t dk, int32_t dv, float *o,
                            int64_t ldo, float *ws)
{
    sl_delta_chunk_run(ops_gemm, S, q, k, v, ld, beta, gl, ldb, scale, n, dk, dv, o, ldo, ws);
}

static inline void ops_fill(sl_kern *k) { SL_OPS_FILL(k, ops); }

#endif
