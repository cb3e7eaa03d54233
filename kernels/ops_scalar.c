/* Float ops of the forward pass in plain C: the oracle for every SIMD level. */
#include <math.h>

#include "kern_internal.h"
#include "ops_internal.h"
#include "rope.h"

/* Squares summed in double (as llama.cpp's ggml_float sum) so long rows keep
 * full float accuracy; then (x * scale) * w in float. */
static void scalar_rmsnorm(float *y, const float *x, const float *w, int64_t n, float eps)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    float mean = (float)(sum / (double)n);
    float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++)
        y[i] = (x[i] * scale) * w[i];
}

static void scalar_rope(float *x, int n_head, int head_dim, int n_rot, int32_t pos,
                        const float *inv_freq, int neox)
{
    sl_rope_run(x, n_head, head_dim, n_rot, pos, inv_freq, neox, NULL);
}

static void scalar_silu_mul(float *y, const float *g, const float *u, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

static void scalar_swiglu_oai(float *y, const float *g, const float *u, int64_t n, float alpha, float limit)
{
    for (int64_t i = 0; i < n; i++) {
        const float x = fminf(g[i], limit), v = fmaxf(fminf(u[i], limit), -limit);
        y[i] = x / (1.0f + expf(alpha * -x)) * (v + 1.0f);
    }
}

/* The oracle: the table entry computed for each element. */
static void scalar_gelu_mul(float *y, const float *g, const float *u, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (g[i] <= -10.0f) y[i] = 0.0f;
        else if (g[i] >= 10.0f) y[i] = g[i] * u[i];
        else y[i] = sl_gelu_f16_entry(sl_f32_to_f16(g[i])) * u[i];
    }
}

static void scalar_add(float *y, const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = a[i] + b[i];
}

static void scalar_f32_to_f16(sl_f16 *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = sl_f32_to_f16(x[i]);
}

/* The oracle of every level's delta_rule (kernels.h). */
static void scalar_delta_rule(float *S, const float *q, const float *k, const float *v, float beta, float decay,
                              float scale, int32_t dk, int32_t dv, float *o, float *m)
{
    for (int32_t j = 0; j < dv; j++) m[j] = 0;
    for (int32_t i = 0; i < dk; i++) {
        float *Si = S + (int64_t)i * dv;
        for (int32_t j = 0; j < dv; j++) {
            Si[j] *= decay;
            m[j] += Si[j] * k[i];
        }
    }
    for (int32_t j = 0; j < dv; j++) {
        m[j] = (v[j] - m[j]) * beta;
        o[j] = 0;
    }
    for (int32_t i = 0; i < dk; i++) {
        float *Si = S + (int64_t)i * dv;
        const float ki = k[i], qi = q[i] * scale;
        for (int32_t j = 0; j < dv; j++) {
            Si[j] += ki * m[j];
            o[j] += Si[j] * qi;
        }
    }
}

/* The oracle of every level's gemm (ops_internal.h). */
static void scalar_gemm(float *c, int64_t ldc, const float *a, int64_t lda, const float *b, int64_t ldb,
                        int32_t m, int32_t n, int32_t k, int add)
{
    for (int32_t r = 0; r < m; r++)
        for (int32_t j = 0; j < n; j++) {
            float acc = add ? c[r * ldc + j] : 0.0f;
            for (int32_t kk = 0; kk < k; kk++) acc += a[r * lda + kk] * b[kk * ldb + j];
            c[r * ldc + j] = acc;
        }
}

static void scalar_delta_chunk(float *S, const float *q, const float *k, const float *v, int64_t ld,
                               const float *beta, const float *gl, int64_t ldb, float scale, int32_t n, int32_t dk,
                               int32_t dv, float *o, int64_t ldo, float *ws)
{
    sl_delta_chunk_run(scalar_gemm, S, q, k, v, ld, beta, gl, ldb, scale, n, dk, dv, o, ldo, ws);
}

void sl_ops_fill_scalar(sl_kern *k) { SL_OPS_FILL(k, scalar); }
