/* The recurrent state of a sequence, beside its KV cache (kv.h). */
#include "kv.h"

#include <stdlib.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"

uint64_t sl_kv_rec_bytes(int32_t n_rec, int64_t conv_len, int64_t state_len)
{
    uint64_t r;
    if (n_rec <= 0 || conv_len < 0 || state_len < 0) return 0;
    if (__builtin_mul_overflow((uint64_t)n_rec, (uint64_t)(conv_len + state_len), &r) ||
        __builtin_mul_overflow(r, (uint64_t)sizeof(float), &r))
        return UINT64_MAX;
    return r;
}

int sl_kv_rec_init(sl_kv *kv, const bool *rec_layer, int64_t conv_len, int64_t state_len)
{
    int32_t n = 0;
    for (int32_t l = 0; l < kv->n_layer; l++) n += rec_layer[l];
    if (n == 0) return 0;
    uint64_t bytes = sl_kv_rec_bytes(n, conv_len, state_len);
    if (!bytes || bytes > (uint64_t)PTRDIFF_MAX / 2)
        return sl_err_set(SL_ENOMEM, "recurrent state: %d layers x %lld values too large", n,
                          (long long)(conv_len + state_len));
    kv->rec0 = malloc((size_t)kv->n_layer * sizeof *kv->rec0);
    kv->rec = aligned_alloc(64, ((size_t)bytes + 63) & ~(size_t)63);
    if (!kv->rec0 || !kv->rec) {
        free(kv->rec0); free(kv->rec);
        kv->rec0 = NULL; kv->rec = NULL;
        return sl_err_set(SL_ENOMEM, "recurrent state: cannot allocate %llu bytes", (unsigned long long)bytes);
    }
    size_t o = 0;
    for (int32_t l = 0; l < kv->n_layer; l++) {
        kv->rec0[l] = rec_layer[l] ? o : SIZE_MAX;
        if (rec_layer[l]) o += (size_t)(conv_len + state_len);
    }
    kv->rec_conv = conv_len;
    kv->rec_len = conv_len + state_len;
    memset(kv->rec, 0, (size_t)bytes);
    kv->rec_pos = 0;
    return 0;
}

uint64_t sl_kv_rec_total(const sl_kv *kv)
{
    if (!kv->rec) return 0;
    int32_t n = 0;
    for (int32_t l = 0; l < kv->n_layer; l++) n += kv->rec0[l] != SIZE_MAX;
    return (uint64_t)n * (uint64_t)kv->rec_len * sizeof(float);
}

int sl_kv_rec_begin(sl_kv *kv)
{
    if (!kv->rec) return 0;
    if (kv->n_past == 0) memset(kv->rec, 0, (size_t)sl_kv_rec_total(kv));
    else if (kv->rec_pos != kv->n_past)
        return sl_err_set(SL_EINVAL, "recurrent state: it holds %d positions but the sequence continues at "
                          "%d (a recurrent model cannot roll back or reuse a cut prefix; reset the sequence)",
                          kv->rec_pos, kv->n_past);
    kv->rec_pos = -1;
    return 0;
}

void sl_kv_rec_read(const sl_kv *kv, void *dst)
{
    if (kv->rec) memcpy(dst, kv->rec, (size_t)sl_kv_rec_total(kv));
}

void sl_kv_rec_write(sl_kv *kv, const void *src, int32_t pos)
{
    if (!kv->rec) return;
    memcpy(kv->rec, src, (size_t)sl_kv_rec_total(kv));
    kv->rec_pos = pos;
}
