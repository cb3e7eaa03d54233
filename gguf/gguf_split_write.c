/* Split writer: an opened model rewritten as a split model laid out as
 * llama.cpp's gguf-split --split-max-size lays it out: tensors in order, a new
 * file when the next tensor (its size padded to 32 bytes) would take the
 * current file's tensor bytes above the limit; the first file carries all
 * metadata, every file the split keys (split.no u16, split.tensors.count i32,
 * split.count u16, in that order) after it: byte for byte gguf-split's files. */
#include "gguf.h"
#include "base/sl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SPLIT_PAD 32u                 /* gguf-split counts sizes in its default alignment */
#define COPY_CHUNK (16u << 20)

uint32_t sl_gguf_split_assign(const char *what, int64_t n, const uint64_t *nbytes, const char *const *names,
                              uint64_t max_bytes, uint32_t *of)
{
    uint64_t cur = 0;
    uint32_t s = 0;
    int64_t in_cur = 0;
    for (int64_t i = 0; i < n; i++) {
        uint64_t nb = (nbytes[i] + SPLIT_PAD - 1) / SPLIT_PAD * SPLIT_PAD;
        if (cur + nb > max_bytes) {
            if (in_cur == 0) {
                sl_err_set(SL_EINVAL, "%s: tensor '%s' (%llu bytes) alone exceeds the split size %llu", what,
                           names[i], (unsigned long long)nbytes[i], (unsigned long long)max_bytes);
                return 0;
            }
            s++; cur = 0; in_cur = 0;
        }
        cur += nb;
        in_cur++;
        of[i] = s;
    }
    if (s + 1 > SL_GGUF_MAX_SHARDS) {
        sl_err_set(SL_ERANGE, "%s: %u files at split size %llu, more than the %d a reader opens", what,
                   s + 1, (unsigned long long)max_bytes, SL_GGUF_MAX_SHARDS);
        return 0;
    }
    return s + 1;
}

/* Shard of each of g's tensors; returns the count (0 + sl_err_set on failure). */
static uint32_t assign(const sl_gguf *g, uint64_t max_bytes, uint32_t *of)
{
    const int64_t n = sl_gguf_n_tensors(g);
    uint64_t *nb = malloc((size_t)(n ? n : 1) * sizeof *nb);
    const char **names = malloc((size_t)(n ? n : 1) * sizeof *names);
    uint32_t count = 0;
    if (!nb || !names) sl_err_set(SL_ENOMEM, "%s: out of memory", sl_gguf_name(g));
    else {
        for (int64_t i = 0; i < n; i++) {
            nb[i] = sl_gguf_tensor_at(g, i)->nbytes;
            names[i] = sl_gguf_tensor_at(g, i)->name;
        }
        count = sl_gguf_split_assign(sl_gguf_name(g), n, nb, names, max_bytes, of);
    }
    free(nb);
    free(names);
    return count;
}

int sl_gguf_writer_set_split_keys(sl_gguf_writer *w, uint32_t no, uint32_t count, int32_t n_tensors)
{
    if (no >= count || count > SL_GGUF_MAX_SHARDS)
        return sl_err_set(SL_EINVAL, "split file %u of %u: bad numbers", no + 1, count);
    uint16_t n16 = (uint16_t)no, c16 = (uint16_t)count;
    /* gguf-split's key order: it sets split.count last (a placeholder replaced
     * once the count is known, and ggml appends a replaced key at the end) */
    int st = sl_gguf_writer_set_scalar(w, "split.no", SL_GGUF_U16, &n16);
    if (!st) st = sl_gguf_writer_set_i32(w, "split.tensors.count", n_tensors);
    if (!st) st = sl_gguf_writer_set_scalar(w, "split.count", SL_GGUF_U16, &c16);
    return st;
}

void sl_gguf_split_path(char *buf, size_t n, const char *prefix, uint32_t i, uint32_t count)
{
    snprintf(buf, n, "%s-%05u-of-%05u.gguf", prefix, i + 1, count);
}

static int write_shard(const sl_gguf *g, const char *path, const uint32_t *of, uint32_t s, uint32_t count,
                       uint8_t *buf)
{
    sl_gguf_writer *w;
    int st = sl_gguf_writer_open(&w, path, sl_gguf_version(g));
    if (st) return st;
    for (int64_t k = 0; s == 0 && k < sl_gguf_n_kv(g) && !st; k++)
        if (strncmp(sl_gguf_kv_key(g, k), "split.", 6)) st = sl_gguf_writer_copy_kv(w, g, k);
    if (s > 0 && !st && sl_gguf_alignment(g) != SL_GGUF_DEFAULT_ALIGNMENT)   /* else the reader's default */
        st = sl_gguf_writer_set_alignment(w, (uint32_t)sl_gguf_alignment(g));
    if (!st) st = sl_gguf_writer_set_split_keys(w, s, count, (int32_t)sl_gguf_n_tensors(g));
    for (int64_t i = 0; i < sl_gguf_n_tensors(g) && !st; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (of[i] == s) st = sl_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne);
    }
    if (!st) st = sl_gguf_writer_begin_data(w);
    for (int64_t i = 0; i < sl_gguf_n_tensors(g) && !st; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        for (uint64_t done = 0; of[i] == s && done < t->nbytes && !st;) {
            size_t k = t->nbytes - done < COPY_CHUNK ? (size_t)(t->nbytes - done) : COPY_CHUNK;
            st = sl_gguf_read(g, buf, k, t->file_offset + done);
            if (!st) st = sl_gguf_writer_write(w, buf, k);
            done += k;
        }
    }
    if (st) {
        char m[400];
        snprintf(m, sizeof m, "%s", sl_last_error());
        sl_gguf_writer_abort(w);
        return sl_err_set(st, "%s", m);
    }
    return sl_gguf_writer_close(w);
}

int sl_gguf_write_split(const sl_gguf *g, const char *prefix, uint64_t max_bytes, uint32_t *n_out)
{
    if (!g || !prefix || max_bytes == 0) return sl_err_set(SL_EINVAL, "sl_gguf_write_split: bad argument");
    int64_t T = sl_gguf_n_tensors(g);
    if (T > INT32_MAX) return sl_err_set(SL_ERANGE, "%s: too many tensors to split", sl_gguf_name(g));
    uint32_t *of = calloc(T ? (size_t)T : 1, sizeof *of);
    uint8_t *buf = malloc(COPY_CHUNK);
    int st = of && buf ? SL_OK : sl_err_set(SL_ENOMEM, "%s: out of memory", sl_gguf_name(g));
    uint32_t count = st ? 0 : assign(g, max_bytes, of), s = 0;
    if (!st && count == 0) st = SL_EINVAL;
    char path[4096];
    for (; s < count && !st; s++) {
        sl_gguf_split_path(path, sizeof path, prefix, s, count);
        st = write_shard(g, path, of, s, count, buf);
    }
    if (st)   /* no half-written split left behind */
        for (uint32_t i = 0; i + 1 < s; i++) { sl_gguf_split_path(path, sizeof path, prefix, i, count); unlink(path); }
    free(of);
    free(buf);
    if (!st && n_out) *n_out = count;
    return st;
}
