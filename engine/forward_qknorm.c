/* Per-head q/k RMSNorm: the row kernel over each head (llama.cpp normalizes
 * the [head_dim] slices of the [n_head, head_dim] view with the layer eps). */
#include "forward_qknorm.h"

void sl_forward_qknorm(const sl_kern *k, float *x, int n_head, int head_dim, const float *w, float eps)
{
    for (int h = 0; h < n_head; h++) {
        float *xh = x + (int64_t)h * head_dim;
        k->rmsnorm(xh, xh, w, head_dim, eps);
    }
}
