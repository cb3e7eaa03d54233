/* Metadata keys and tensor checks of the model description: every failure
 * names the key or tensor, its shape or type against the expected one. */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../quant/quant.h"
#include "../gguf/base/sl_internal.h"

bool sl_model_matrix_type_ok(uint32_t type)
{
    /* unknown ids and the activation-only Q8_1 / Q8_K are not weight types */
    return type < SL_GGML_TYPE_COUNT && sl_quant_is_supported((int)type);
}

/* "<arch>.<suffix>" read by get; absent: SL_ENOENT with the key named
 * (required) or 1 (the caller applies the default). */
static int key_read(const sl_gguf *g, const char *arch, const char *suffix, bool required,
                    int (*get)(const sl_gguf *, const char *, void *), void *out, char *key, size_t ksz)
{
    snprintf(key, ksz, "%s.%s", arch, suffix);
    int rc = get(g, key, out);
    if (rc == SL_ENOENT && !required) return 1;
    if (rc == SL_ENOENT) return sl_err_set(SL_ENOENT, "model metadata: key '%s' missing", key);
    if (rc) return sl_err_set(rc, "model metadata: key '%s': %s", key, sl_strerror(rc));
    return 0;
}

static int get_u32(const sl_gguf *g, const char *key, void *out) { return sl_gguf_get_u32(g, key, out); }
static int get_f32(const sl_gguf *g, const char *key, void *out) { return sl_gguf_get_f32(g, key, out); }

int sl_model_key_u32(const sl_gguf *g, const char *arch, const char *suffix, uint32_t *out,
                     bool required, uint32_t def)
{
    char key[128];
    int rc = key_read(g, arch, suffix, required, get_u32, out, key, sizeof key);
    if (rc == 1) { *out = def; return 0; }
    return rc;
}

int sl_model_key_f32(const sl_gguf *g, const char *arch, const char *suffix, float *out,
                     bool required, float def)
{
    char key[128];
    int rc = key_read(g, arch, suffix, required, get_f32, out, key, sizeof key);
    if (rc == 1) { *out = def; return 0; }
    if (rc) return rc;
    if (!isfinite(*out)) return sl_err_set(SL_ERANGE, "model metadata: key '%s' is not finite", key);
    return 0;
}

int sl_model_key_u32_layers(const sl_gguf *g, const char *arch, const char *suffix, uint32_t n, uint32_t *out,
                            uint32_t *max, bool required, uint32_t def)
{
    char key[128];
    uint32_t v;
    int rc = key_read(g, arch, suffix, required, get_u32, &v, key, sizeof key);
    if (rc == 1) v = def;
    if (rc == 0 || rc == 1) {   /* a scalar (or the default) for every layer */
        for (uint32_t i = 0; out && i < n; i++) out[i] = v;
        *max = v;
        return 0;
    }
    uint32_t et;
    uint64_t len;
    const void *data;
    if (rc == SL_ENOENT) return rc;   /* required and absent: key_read's message */
    if (sl_gguf_get_arr(g, key, &et, &len, &data))
        return sl_err_set(rc, "model metadata: key '%s': neither an integer nor an array", key);
    if ((et != SL_GGUF_U32 && et != SL_GGUF_I32 && et != SL_GGUF_BOOL) || !data || (n && len != n) || len < 1)
        return sl_err_set(SL_EFORMAT, "model metadata: key '%s': an array of %llu elements of type %u "
                          "(want %u integers or bools)", key, (unsigned long long)len, et, n);
    *max = 0;
    for (uint64_t i = 0; i < len; i++) {
        uint32_t e;
        if (et == SL_GGUF_BOOL) e = ((const uint8_t *)data)[i] != 0;
        else memcpy(&e, (const uint8_t *)data + 4 * i, 4);
        if (et == SL_GGUF_I32 && (int32_t)e < 0)
            return sl_err_set(SL_ERANGE, "model metadata: key '%s'[%llu] = %d negative", key,
                              (unsigned long long)i, (int32_t)e);
        if (out && i < n) out[i] = e;
        if (e > *max) *max = e;
    }
    return 0;
}

static int matrix_type_err(const char *name, uint32_t type)
{
    const char *tn = sl_gguf_type_name(type);
    return sl_err_set(SL_EUNSUPPORTED, "tensor '%s': type %s (%u) not supported for a matrix", name,
                      tn ? tn : "unknown", type);
}

int sl_model_check_tensor(const sl_gguf *g, const char *name, uint64_t ne0, uint64_t ne1, int cls,
                          bool optional, const sl_gguf_tensor **out)
{
    const sl_gguf_tensor *t = sl_gguf_find_tensor(g, name);
    if (out) *out = t;
    if (!t) {
        if (optional) return 0;
        return sl_err_set(SL_ENOENT, "tensor '%s' missing from the model", name);
    }
    uint64_t want[4] = { ne0, ne1 ? ne1 : 1, 1, 1 };
    bool ok = true;
    for (int i = 0; i < 4; i++) {
        uint64_t have = i < (int)t->n_dims ? t->ne[i] : 1;
        if (have != want[i]) ok = false;
    }
    if (!ok) {
        char have_s[96] = "", want_s[64];
        int o = 0;
        for (uint32_t i = 0; i < t->n_dims && o < (int)sizeof have_s - 24; i++)
            o += snprintf(have_s + o, sizeof have_s - (size_t)o, "%s%llu", i ? ", " : "",
                          (unsigned long long)t->ne[i]);
        if (ne1) snprintf(want_s, sizeof want_s, "%llu, %llu", (unsigned long long)ne0,
                          (unsigned long long)ne1);
        else snprintf(want_s, sizeof want_s, "%llu", (unsigned long long)ne0);
        return sl_err_set(SL_ESHAPE, "tensor '%s': shape [%s], expected [%s]", name, have_s, want_s);
    }
    if (cls == T_F32 && t->type != SL_GGML_F32) {
        const char *tn = sl_gguf_type_name(t->type);
        return sl_err_set(SL_EUNSUPPORTED, "tensor '%s': type %s, expected f32", name,
                          tn ? tn : "unknown");
    }
    if (cls == T_MATRIX && !sl_model_matrix_type_ok(t->type)) return matrix_type_err(name, t->type);
    return 0;
}

int sl_model_check_layer_tensor(const sl_gguf *g, uint32_t l, const char *suffix, uint64_t ne0, uint64_t ne1,
                                int cls)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%u.%s", l, suffix);
    return sl_model_check_tensor(g, name, ne0, ne1, cls, false, NULL);
}

int sl_model_check_experts(const sl_gguf *g, uint32_t l, const char *suffix, uint64_t ne0, uint64_t ne1,
                           uint64_t ne2)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%u.%s", l, suffix);
    const sl_gguf_tensor *t = sl_gguf_find_tensor(g, name);
    if (!t) return sl_err_set(SL_ENOENT, "tensor '%s' missing from the model", name);
    if (t->n_dims != 3 || t->ne[0] != ne0 || t->ne[1] != ne1 || t->ne[2] != ne2)
        return sl_err_set(SL_ESHAPE, "tensor '%s': shape [%llu, %llu, %llu] (%u dims), expected "
                          "[%llu, %llu, %llu]", name, (unsigned long long)t->ne[0],
                          (unsigned long long)(t->n_dims > 1 ? t->ne[1] : 1),
                          (unsigned long long)(t->n_dims > 2 ? t->ne[2] : 1), t->n_dims,
                          (unsigned long long)ne0, (unsigned long long)ne1, (unsigned long long)ne2);
    if (!sl_model_matrix_type_ok(t->type)) return matrix_type_err(name, t->type);
    return 0;
}
