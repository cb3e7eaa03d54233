/* Rope of the model description: the scaling keys (none, linear, llama3, yarn),
 * the per-pair angles (inv_freq) and which global divisor tensor applies
 * (rope_freqs, or LongRoPE's long / short factors). */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch/arch.h"
#include "../gguf/base/sl_internal.h"

int sl_model_rope_keys(sl_model_desc *d, const sl_gguf *g)
{
    const char *a = d->arch_name;
    char key[128];
    const char *st = NULL;
    uint64_t sl = 0;
    d->rope_scaling = SL_ROPE_SCALE_NONE;
    d->rope_scale_factor = 1.0f;
    snprintf(key, sizeof key, "%s.rope.scaling.type", a);
    int rc = sl_gguf_get_str(g, key, &st, &sl);
    if (rc && rc != SL_ENOENT) return sl_err_set(rc, "model metadata: key '%s': %s", key, sl_strerror(rc));
    float factor = 0;
    int r2 = sl_model_key_f32(g, a, "rope.scaling.factor", &factor, false, 0.0f);
    if (r2) return r2;
    if (factor == 0.0f) {   /* legacy key */
        r2 = sl_model_key_f32(g, a, "rope.scale_linear", &factor, false, 0.0f);
        if (r2) return r2;
        if (factor != 0.0f && rc == SL_ENOENT) st = "linear";
    }
    if (!st || !strcmp(st, "none")) return 0;
    if (!strcmp(st, "linear")) {
        if (factor <= 0.0f) return 0;   /* factor 0 or absent: no scaling (as llama.cpp) */
        d->rope_scaling = SL_ROPE_SCALE_LINEAR;
        d->rope_scale_factor = factor;
        return 0;
    }
    if (!strcmp(st, "llama3")) {
        d->rope_scaling = SL_ROPE_SCALE_LLAMA3;
        d->rope_scale_factor = factor > 0 ? factor : 8.0f;
        uint32_t oc;
        if ((rc = sl_model_key_f32(g, a, "rope.scaling.low_freq_factor", &d->ll3_low_freq, false, 1.0f)) ||
            (rc = sl_model_key_f32(g, a, "rope.scaling.high_freq_factor", &d->ll3_high_freq, false, 4.0f)) ||
            (rc = sl_model_key_u32(g, a, "rope.scaling.original_context_length", &oc, false, 8192)))
            return rc;
        if (!(d->ll3_high_freq > d->ll3_low_freq) || oc == 0)
            return sl_err_set(SL_ERANGE, "model metadata: llama3 rope scaling factors invalid");
        d->ll3_orig_ctx = (int32_t)oc;
        return 0;
    }
    if (!strcmp(st, "yarn") && d->arch->rope_yarn) {
        uint32_t oc;
        if ((rc = sl_model_key_u32(g, a, "rope.scaling.original_context_length", &oc, false,
                                   (uint32_t)d->n_ctx_train)) ||
            (rc = sl_model_key_f32(g, a, "rope.scaling.yarn_beta_fast", &d->yarn_beta_fast, false, 32.0f)) ||
            (rc = sl_model_key_f32(g, a, "rope.scaling.yarn_beta_slow", &d->yarn_beta_slow, false, 1.0f)) ||
            (rc = sl_model_key_f32(g, a, "rope.scaling.yarn_log_multiplier", &d->yarn_log_mul, false, 0.0f)))
            return rc;
        if (!(factor >= 1.0f && factor <= 1e6f) || oc < 1 || oc > (1u << 30) ||
            !(d->yarn_beta_fast > 0 && d->yarn_beta_slow > 0) || !(d->yarn_log_mul >= 0 && d->yarn_log_mul < 100))
            return sl_err_set(SL_ERANGE, "model metadata: yarn rope scaling keys invalid (factor %g, original "
                              "context %u)", (double)factor, oc);
        d->rope_scaling = SL_ROPE_SCALE_YARN;
        d->rope_scale_factor = factor;
        d->yarn_orig_ctx = (int32_t)oc;
        return 0;
    }
    return sl_err_set(SL_EUNSUPPORTED, "rope scaling type '%s' not supported (none, linear, llama3, yarn)", st);
}

/* YaRN's angle for pair i, as ggml's rope_yarn: interpolated (divided by the
 * factor) below the ramp, extrapolated above it, mixed linearly between the
 * corrected dims of beta_fast and beta_slow. The angle is linear in the
 * position, so the mix applies to the per-pair frequency. */
static float yarn_mix(const sl_model_desc *d, float base, int i, float f)
{
    const double pi = 3.14159265358979323846, n = (double)d->n_rot;
    double lo = floor(n * log((double)d->yarn_orig_ctx / ((double)d->yarn_beta_fast * 2 * pi)) / (2 * log(base)));
    double hi = ceil(n * log((double)d->yarn_orig_ctx / ((double)d->yarn_beta_slow * 2 * pi)) / (2 * log(base)));
    if (lo < 0) lo = 0;
    if (hi > n - 1) hi = n - 1;
    double y = ((double)i - lo) / (hi - lo > 0.001 ? hi - lo : 0.001);
    const float ramp = (float)(1.0 - (y < 0 ? 0 : y > 1 ? 1 : y));
    const float interp = (1.0f / d->rope_scale_factor) * f;
    return interp * (1.0f - ramp) + f * ramp;
}

void sl_model_rope_inv_freq(const sl_model_desc *d, float base, const float *freqs, float *inv_freq)
{
    /* As llama.cpp: theta_scale = base^(-2/n_rot), angle_i = p * theta_scale^i
     * (the power built by repeated float multiplication). */
    const float theta_scale = powf(base, -2.0f / (float)d->n_rot);
    float f = 1.0f;
    for (int i = 0; i < d->n_rot / 2; i++) {
        float v = f;
        if (freqs) {
            v = v / freqs[i];
        } else if (d->rope_scaling == SL_ROPE_SCALE_LLAMA3) {
            const double pi = 3.14159265358979323846;
            double wavelen = 2 * pi / (double)f;
            double lo = (double)d->ll3_orig_ctx / d->ll3_low_freq;
            double hi = (double)d->ll3_orig_ctx / d->ll3_high_freq;
            double div;
            if (wavelen < hi) div = 1.0;
            else if (wavelen > lo) div = d->rope_scale_factor;
            else {
                double smooth = ((double)d->ll3_orig_ctx / wavelen - d->ll3_low_freq) /
                                (d->ll3_high_freq - d->ll3_low_freq);
                div = 1.0 / ((1 - smooth) / d->rope_scale_factor + smooth);
            }
            v = v / (float)div;
        }
        if (d->rope_scaling == SL_ROPE_SCALE_LINEAR) v = (1.0f / d->rope_scale_factor) * v;
        if (d->rope_scaling == SL_ROPE_SCALE_YARN) v = yarn_mix(d, base, i, v);
        inv_freq[i] = v;
        f *= theta_scale;
    }
}

const char *sl_model_rope_factors_name(const sl_model_desc *d, int32_t n_ctx)
{
    if (d->has_rope_freqs) return "rope_freqs.weight";
    if (!d->has_rope_factors) return NULL;
    /* llama.cpp pads the context to a multiple of 256 before it compares */
    int64_t padded = ((int64_t)n_ctx + 255) / 256 * 256;
    return padded > d->rope_orig_ctx ? "rope_factors_long.weight" : "rope_factors_short.weight";
}
