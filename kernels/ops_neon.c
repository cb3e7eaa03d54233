/* Float ops, A64 NEON level (armv8.0). Tails run through the same vector
 * code on a 4-element stack copy, so every element sees the same arithmetic. */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "kern_internal.h"
#include "ops_internal.h"
#include "vmath_neon.h"

static void rmsnorm_neon(float *y, const float *x, const float *w, int64_t n, float eps)
{
    float64x2_t s0 = vdupq_n_f64(0), s1 = s0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t v = vld1q_f32(x + i);
        sl_acc_pd4(&s0, &s1, vmulq_f32(v, v));
    }
    double sum = vaddvq_f64(vaddq_f64(s0, s1));
    for (; i < n; i++)
        sum += (double)(x[i] * x[i]);
    float mean = (float)(sum / (double)n);
    float scale = 1.0f / sqrtf(mean + eps);
    for (i = 0; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vmulq_f32(vmulq_n_f32(vld1q_f32(x + i), scale), vld1q_f32(w + i)));
    for (; i < n; i++)
        y[i] = (x[i] * scale) * w[i];
}

/* Bit-identical to the scalar: same cos/sin, separate mul/mul/sub (no FMA);
 * normal style de-interleaves the pairs with vld2q. */
static void rope_neon(float *x, int n_head, int head_dim, int n_rot, int32_t pos,
                      const float *inv_freq, int neox)
{
    int half = n_rot / 2;
    for (int i0 = 0; i0 < half; i0 += 64) {
        float c[64], s[64];
        int m = half - i0 < 64 ? half - i0 : 64;
        sl_rope_cs(c, s, pos, inv_freq + i0, m);
        for (int h = 0; h < n_head; h++) {
            float *xh = x + (int64_t)h * head_dim;
            float *xa = neox ? xh + i0 : xh + 2 * i0, *xb = xh + i0 + half;
            int i = 0;
            for (; i + 4 <= m; i += 4) {
                float32x4_t vc = vld1q_f32(c + i), vs = vld1q_f32(s + i);
                float32x4_t x0, x1;
                float32x4x2_t v2;
                if (neox) {
                    x0 = vld1q_f32(xa + i);
                    x1 = vld1q_f32(xb + i);
                } else {
                    v2 = vld2q_f32(xa + 2 * i);
                    x0 = v2.val[0];
                    x1 = v2.val[1];
                }
                float32x4_t y0 = vsubq_f32(vmulq_f32(x0, vc), vmulq_f32(x1, vs));
                float32x4_t y1 = vaddq_f32(vmulq_f32(x0, vs), vmulq_f32(x1, vc));
                if (neox) {
                    vst1q_f32(xa + i, y0);
                    vst1q_f32(xb + i, y1);
                } else {
                    v2.val[0] = y0;
                    v2.val[1] = y1;
                    vst2q_f32(xa + 2 * i, v2);
                }
            }
            for (; i < m; i++) {
                float *pa = neox ? xa + i : xa + 2 * i, *pb = neox ? xb + i : pa + 1;
                float x0 = *pa, x1 = *pb;
                *pa = x0 * c[i] - x1 * s[i];
                *pb = x0 * s[i] + x1 * c[i];
            }
        }
    }
}

static void softmax_neon(float *x, int64_t n)
{
    if (n <= 0)
        return;
    int64_t nv = n & ~(int64_t)3, i;
    int nt = (int)(n - nv);
    float tail[4];
    for (int t = 0; t < 4; t++)
        tail[t] = t < nt ? x[nv + t] : -INFINITY;
    float32x4_t vm = vld1q_f32(tail);
    for (i = 0; i < nv; i += 4)
        vm = vmaxq_f32(vm, vld1q_f32(x + i));
    float32x4_t mx = vdupq_n_f32(vmaxvq_f32(vm));
    float64x2_t s0 = vdupq_n_f64(0), s1 = s0;
    for (i = 0; i <= nv; i += 4) {
        float *p = i < nv ? x + i : tail;
        float32x4_t e = sl_exp4(vsubq_f32(vld1q_f32(p), mx));
        vst1q_f32(p, e);
        sl_acc_pd4(&s0, &s1, e);
    }
    float inv = (float)(1.0 / vaddvq_f64(vaddq_f64(s0, s1)));
    for (i = 0; i < nv; i += 4)
        vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), inv));
    for (int t = 0; t < nt; t++)
        x[nv + t] = tail[t] * inv;
}

static inline float32x4_t silu_mul4(float32x4_t g, float32x4_t u)
{
    float32x4_t e = sl_exp4(vnegq_f32(g));
    return vmulq_f32(vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), e)), u);
}

static void silu_mul_neon(float *y, const float *g, const float *u, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, silu_mul4(vld1q_f32(g + i), vld1q_f32(u + i)));
    if (i < n) {
        float tg[4] = {0}, tu[4] = {0}, ty[4];
        memcpy(tg, g + i, (size_t)(n - i) * sizeof(float));
        memcpy(tu, u + i, (size_t)(n - i) * sizeof(float));
        vst1q_f32(ty, silu_mul4(vld1q_f32(tg), vld1q_f32(tu)));
        memcpy(y + i, ty, (size_t)(n - i) * sizeof(float));
    }
}

static void add_neon(float *y, const float *a, const float *b, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vaddq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
    for (; i < n; i++)
        y[i] = a[i] + b[i];
}

static void f32_to_f16_neon(sl_f16 *y, const float *x, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        sl_st_h4(y + i, vld1q_f32(x + i));
    if (i < n) {
        float t[4] = {0};
        sl_f16 r[4];
        memcpy(t, x + i, (size_t)(n - i) * sizeof(float));
        sl_st_h4(r, vld1q_f32(t));
        memcpy(y + i, r, (size_t)(n - i) * sizeof(sl_f16));
    }
}

void sl_ops_fill_neon(sl_kern *k)
{
    k->rmsnorm = rmsnorm_neon;
    k->rope = rope_neon;
    k->softmax = softmax_neon;
    k->silu_mul = silu_mul_neon;
    k->add = add_neon;
    k->f32_to_f16 = f32_to_f16_neon;
}
