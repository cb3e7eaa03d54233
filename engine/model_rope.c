/* Rope of the model description: the scaling keys (none, linear, llama3,
 * yarn), the per-pair angles (inv_freq) and which global divisor tensor
 * applies (rope_freqs, or LongRoPE's long / short factors). */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"

/* YaRN as ggml's rope_yarn applies it: positions interpolated by 1/factor
 * on the slow pairs, extrapolated on the fast ones, a linear ramp between
 * (the beta keys, in rotations over the original context), and cos/sin
 * times 1 + 0.1 ln(factor). */
static int yarn_keys(sl_model_desc *d, const sl_gguf *g, float factor)
{
    const char *a = d->arch_name;
    uint32_t oc;
    int rc;
    if ((rc = sl_model_key_u32(g, a, "rope.scaling.original_context_length", &oc, false, 0)) ||
        (rc = sl_model_key_f32(g, a, "rope.scaling.yarn_beta_fast", &d->yarn_beta_fast, false, 32.0f)) ||
        (rc = sl_model_key_f32(g, a, "rope.scaling.yarn_beta_slow", &d->yarn_beta_slow, false, 1.0f)) ||
        (rc = sl_model_key_f32(g, a, "rope.scaling.yarn_log_multiplier", &d->yarn_log_mul, false, 0.0f)))
        return rc;
    if (!(d->yarn_log_mul >= 0 && d->yarn_log_mul < 100))
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.rope.scaling.yarn_log_multiplier' = %g invalid", a,
                          (double)d->yarn_log_mul);
    if (!(factor > 0.0f) || factor > 1e6f)
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.rope.scaling.factor' = %g invalid for yarn", a,
                          (double)factor);
    if (oc > (1u << 30))
        return sl_err_set(SL_ERANGE, "model metadata: key '%s.rope.scaling.original_context_length' = %u "
                          "invalid", a, oc);
    if (!(d->yarn_beta_fast > 0.0f) || !(d->yarn_beta_slow > 0.0f))
        return sl_err_set(SL_ERANGE, "model metadata: yarn_beta_fast %g / yarn_beta_slow %g invalid",
                          (double)d->yarn_beta_fast, (double)d->yarn_beta_slow);
    d->rope_scaling = SL_ROPE_SCALE_YARN;
    d->rope_scale_factor = factor;
    d->yarn_orig_ctx = (int32_t)oc;
    d->rope_attn_factor = 1.0f + 0.1f * logf(1.0f / (1.0f / factor));   /* ggml forms it from freq_scale */
    return 0;
}

/* YaRN's ramp ends for `base`: pairs below lo are extrapolated, above hi
 * interpolated (ggml_rope_yarn_corr_dims). */
static void yarn_dims(const sl_model_desc *d, float base, int32_t n_rot, float *lo, float *hi)
{
    const float orig = (float)(d->yarn_orig_ctx > 0 ? d->yarn_orig_ctx : d->n_ctx_train);
    const float n = (float)n_rot, pi = 3.14159265358979323846f;
    const float cf = n * logf(orig / (d->yarn_beta_fast * 2 * pi)) / (2 * logf(base));
    const float cs = n * logf(orig / (d->yarn_beta_slow * 2 * pi)) / (2 * logf(base));
    const float start = floorf(cf), end = ceilf(cs);
    *lo = start > 0 ? start : 0;
    *hi = end < n - 1 ? end : n - 1;
}

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
    if (!strcmp(st, "yarn")) return yarn_keys(d, g, factor);
    return sl_err_set(SL_EUNSUPPORTED, "rope scaling type '%s' not supported (none, linear, llama3, yarn)", st);
}

static void inv_freq_n(const sl_model_desc *d, float base, int32_t n_rot, const float *freqs, float *inv_freq)
{
    /* As llama.cpp: theta_scale = base^(-2/n_rot), angle_i = p * theta_scale^i
     * (the power built by repeated float multiplication). */
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    float f = 1.0f, ylo = 0, yhi = 0;
    if (d->rope_scaling == SL_ROPE_SCALE_YARN) yarn_dims(d, base, n_rot, &ylo, &yhi);
    for (int i = 0; i < n_rot / 2; i++) {
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
        if (d->rope_scaling == SL_ROPE_SCALE_YARN) {
            /* interpolated * (1 - r) + extrapolated * r, r the ramp at pair i */
            float y = ((float)i - ylo) / fmaxf(0.001f, yhi - ylo);
            float r = 1.0f - fminf(1.0f, fmaxf(0.0f, y));
            v = (1.0f / d->rope_scale_factor) * v * (1.0f - r) + v * r;
        }
        inv_freq[i] = v;
        f *= theta_scale;
    }
}

void sl_model_rope_inv_freq(const sl_model_desc *d, float base, const float *freqs, float *inv_freq)
{
    inv_freq_n(d, base, d->n_rot, freqs, inv_freq);
}

void sl_model_rope_inv_freq_swa(const sl_model_desc *d, const float *freqs, float *inv_freq)
{
    inv_freq_n(d, d->rope_base_swa, sl_model_n_rot_swa(d), d->rope_freqs_full ? NULL : freqs,
               inv_freq);
}

const char *sl_model_rope_factors_name(const sl_model_desc *d, int32_t n_ctx)
{
    if (d->has_rope_freqs) return "rope_freqs.weight";
    if (!d->has_rope_factors) return NULL;
    /* llama.cpp pads the context to a multiple of 256 before it compares */
    int64_t padded = ((int64_t)n_ctx + 255) / 256 * 256;
    return padded > d->rope_orig_ctx ? "rope_factors_long.weight" : "rope_factors_short.weight";
}
