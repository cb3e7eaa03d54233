/* Internal to kernels/: rope's loop, shared by the scalar oracle
 * (ops_scalar.c) and every level's driver (ops_driver.h), and the angle
 * table it takes from rope.c. */
#ifndef SL_ROPE_H
#define SL_ROPE_H

#include <stdint.h>

/* cos/sin of pos * inv_freq[i] for i < n (rope angles; the same libm calls
 * on every level so all levels rotate by bit-identical factors). */
void sl_rope_cs(float *c, float *s, int32_t pos, const float *inv_freq, int n);

/* Rotates pairs [0, m) of one head's chunk (angles c, s): neox pairs
 * (xa[i], xb[i]), else (xp[2i], xp[2i+1]); returns how many pairs it did
 * (a vector prefix); the rest is done by sl_rope_run in scalar code. */
typedef int (*sl_rope_vec_fn)(float *xa, float *xb, const float *c, const float *s, int m, int neox);

/* The rope op (kernels.h) over chunks of 64 angles: vec may be NULL (all
 * scalar). Every element gets the same mul/mul/sub, no FMA. */
static inline __attribute__((always_inline)) void
sl_rope_run(float *x, int n_head, int head_dim, int n_rot, int32_t pos, const float *inv_freq,
            int neox, sl_rope_vec_fn vec)
{
    int half = n_rot / 2;
    for (int i0 = 0; i0 < half; i0 += 64) {
        float c[64], s[64];
        int m = half - i0 < 64 ? half - i0 : 64;
        sl_rope_cs(c, s, pos, inv_freq + i0, m);
        for (int h = 0; h < n_head; h++) {
            float *xh = x + (int64_t)h * head_dim;
            float *xa = neox ? xh + i0 : xh + 2 * i0, *xb = xh + i0 + half;
            for (int i = vec ? vec(xa, xb, c, s, m, neox) : 0; i < m; i++) {
                float *pa = neox ? xa + i : xa + 2 * i, *pb = neox ? xb + i : pa + 1;
                float x0 = *pa, x1 = *pb;
                *pa = x0 * c[i] - x1 * s[i];
                *pb = x0 * s[i] + x1 * c[i];
            }
        }
    }
}

#endif
