/* Rope's angles (rope.h): the same libm calls on every level. */
#include <math.h>

#include "rope.h"

void sl_rope_cs(float *c, float *s, int32_t pos, const float *inv_freq, int n)
{
    for (int i = 0; i < n; i++) {
        float th = (float)pos * inv_freq[i];
        c[i] = cosf(th);
        s[i] = sinf(th);
    }
}
