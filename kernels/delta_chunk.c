/* The gated delta rule over a chunk of n tokens at once (kernels.h:
 * delta_chunk), the chunkwise "WY" form. Per token t the recurrence is
 *   S_t = g_t S_{t-1} + k_t u_t^T,  u_t = beta_t (v_t - g_t S_{t-1}^T k_t),
 *   o_t = S_t^T q_t  (q scaled).
 * With G_t = sum_{s<=t} log g_s (so g_s..g_t = e^(G_t - G_{s-1})) and S0 the
 * state before the chunk, unrolling gives
 *   u_t + beta_t sum_{s<t} e^(G_t-G_s) (k_t.k_s) u_s = beta_t (v_t - e^G_t S0^T k_t)
 * a unit lower-triangular system in the u rows, solved by forward
 * substitution; then
 *   o_t = e^G_t S0^T q_t + sum_{s<=t} e^(G_t-G_s) (q_t.k_s) u_s
 *   S_n = e^G_n S0 + sum_s e^(G_n-G_s) k_s u_s^T.
 * Every product over a dimension is the level's gemm (its sums in the
 * scalar order, so the levels agree bit for bit); the rest is elementwise
 * and runs here, the same code for every level. Decays enter as e^(G_t-G_s)
 * with s <= t (at most 1 for a decaying state): no 1/e^G_s that underflows. */
#include <math.h>

#include "ops_internal.h"

int64_t sl_kern_delta_chunk_ws(int32_t dk, int32_t dv)
{
    const int64_t n = SL_DELTA_CHUNK;
    return n * (1 + 4 * (int64_t)dk + 3 * (int64_t)dv + 2 * n);
}

void sl_delta_chunk_run(sl_gemm_f32_fn gemm, float *S, const float *q, const float *k, const float *v, int64_t ld,
                        const float *beta, const float *gl, int64_t ldb, float scale, int32_t n, int32_t dk,
                        int32_t dv, float *o, int64_t ldo, float *ws)
{
    /* G[n]; QK [2n][dk]: q scaled, then k; Kt [dk][n]: k^T; Kd [dk][n]: k^T
     * times e^(G_n-G_s); W [2n][dv]: QK S0; M [2n][n]: QK k^T (then the
     * decayed q.k of the output, the system's coefficients); U [n][dv] */
    float *G = ws, *QK = G + n, *Kt = QK + 2 * (int64_t)n * dk, *Kd = Kt + (int64_t)n * dk;
    float *W = Kd + (int64_t)n * dk, *M = W + 2 * (int64_t)n * dv, *U = M + 2 * (int64_t)n * n;
    float acc = 0;
    for (int32_t t = 0; t < n; t++) G[t] = acc += gl[t * ldb];
    for (int32_t t = 0; t < n; t++) {
        const float *qt = q + t * ld, *kt = k + t * ld, e = expf(G[n - 1] - G[t]);
        for (int32_t i = 0; i < dk; i++) {
            QK[(int64_t)t * dk + i] = qt[i] * scale;
            QK[(int64_t)(n + t) * dk + i] = kt[i];
            Kt[(int64_t)i * n + t] = kt[i];
            Kd[(int64_t)i * n + t] = kt[i] * e;
        }
    }
    gemm(W, dv, QK, dk, S, dv, 2 * n, dv, dk, 0);
    gemm(M, n, QK, dk, Kt, n, 2 * n, n, dk, 0);
    for (int32_t t = 0; t < n; t++) {   /* the right-hand side */
        const float e = expf(G[t]), b = beta[t * ldb], *vt = v + t * ld, *wt = W + (int64_t)(n + t) * dv;
        float *ut = U + (int64_t)t * dv;
        for (int32_t j = 0; j < dv; j++) ut[j] = b * (vt[j] - e * wt[j]);
    }
    for (int32_t t = 0; t < n; t++) {
        float *pt = M + (int64_t)t * n, *at = M + (int64_t)(n + t) * n;
        const float b = beta[t * ldb];
        for (int32_t s = 0; s < n; s++) {
            const float e = s <= t ? expf(G[t] - G[s]) : 0.0f;
            pt[s] = s <= t ? pt[s] * e : 0.0f;
            at[s] = s < t ? -(b * e * at[s]) : 0.0f;
        }
    }
    for (int32_t t = 1; t < n; t++)     /* u_t -= sum_{s<t} a_ts u_s, in order */
        gemm(U + (int64_t)t * dv, dv, M + (int64_t)(n + t) * n, n, U, dv, 1, dv, t, 1);
    for (int32_t t = 0; t < n; t++) {
        const float e = expf(G[t]), *wt = W + (int64_t)t * dv;
        float *ot = o + t * ldo;
        for (int32_t j = 0; j < dv; j++) ot[j] = e * wt[j];
    }
    gemm(o, ldo, M, n, U, dv, n, dv, n, 1);
    const float e = expf(G[n - 1]);
    for (int64_t i = 0; i < (int64_t)dk * dv; i++) S[i] *= e;
    gemm(S, dv, Kd, n, U, dv, dk, dv, n, 1);
}
