/* Split models (llama.cpp's gguf-split layout): the shard a model was opened
 * from names the others (<prefix>-%05d-of-%05d.gguf); each is parsed as a
 * file of its own, checked to belong to the same split, and their tensors are
 * joined into the first shard's handle with offsets in one model offset
 * space (gguf.h, SL_GGUF_SHARD_ALIGN). The first shard carries the metadata. */
#include "gguf_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define U64(x) ((unsigned long long)(x))

typedef struct { uint64_t no, count; int64_t tensors; } split_keys;

/* The split keys of g; *has false when it has no split.count (a plain file). */
static int read_keys(const sl_gguf *g, split_keys *k, bool *has)
{
    *has = sl_gguf_find_key(g, "split.count") >= 0;
    if (!*has) return SL_OK;
    int st = sl_gguf_get_u64(g, "split.count", &k->count);
    if (!st) st = sl_gguf_get_u64(g, "split.no", &k->no);
    if (!st) st = sl_gguf_get_i64(g, "split.tensors.count", &k->tensors);
    if (st == SL_ENOENT || st == SL_ETYPE || st == SL_ERANGE) {
        char m[400];
        snprintf(m, sizeof m, "%s", sl_last_error());
        return sl_err_set(SL_EFORMAT, "%s (a split model's shard)", m);
    }
    if (st) return st;
    /* gguf-split --merge writes split.count 0 into the merged file (so that it
     * is not merged again); llama.cpp opens it as a plain file, and so do we. */
    if (k->count == 0) k->count = 1;
    if (k->count > SL_GGUF_MAX_SHARDS)
        return sl_err_set(SL_EFORMAT, "%s: split.count %llu not in 0..%d", g->name, U64(k->count),
                          SL_GGUF_MAX_SHARDS);
    if (k->no >= k->count)
        return sl_err_set(SL_EFORMAT, "%s: split.no %llu is not below split.count %llu", g->name,
                          U64(k->no), U64(k->count));
    if (k->tensors < 0 || k->tensors > INT32_MAX)
        return sl_err_set(SL_EFORMAT, "%s: split.tensors.count %lld out of range", g->name,
                          (long long)k->tensors);
    return SL_OK;
}

/* Shard i's file opened and checked against the split of the first one read (k). */
static int open_shard(sl_gguf **out, const char *prefix, uint32_t i, const split_keys *k, const char *from)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s-%05u-of-%05u.gguf", prefix, i + 1, (unsigned)k->count) >= sizeof path)
        return sl_err_set(SL_EINVAL, "%s: shard path too long", from);
    int st = sl_gguf_open_file(out, path);
    if (st) {
        char m[400];
        snprintf(m, sizeof m, "%s", sl_last_error());
        return sl_err_set(st, "split model %s: shard %u of %llu missing or unreadable: %s", from, i + 1,
                          U64(k->count), m);
    }
    split_keys o;
    bool has;
    if ((st = read_keys(*out, &o, &has))) return st;
    if (!has || o.count != k->count || o.no != i || o.tensors != k->tensors)
        return sl_err_set(SL_EFORMAT, "%s: not shard %u of the split of %s (it has split.count %lld, "
                          "split.no %lld, split.tensors.count %lld; expected %llu, %u, %lld)", path, i + 1, from,
                          has ? (long long)o.count : -1, has ? (long long)o.no : -1,
                          has ? (long long)o.tensors : -1, U64(k->count), i, (long long)k->tensors);
    return SL_OK;
}

/* Shard i's tensors appended to g (parts[0]) at the shard's base. */
static int append_tensors(sl_gguf *g, const sl_gguf *part, uint32_t i)
{
    const sl_gguf_shard *sh = &g->shards[i];
    for (int64_t t = 0; t < part->n_tensors; t++) {
        sl_gguf_tensor x = part->tensors[t];
        size_t nl = strlen(x.name);
        int64_t dup = sl_gguf_tensor_lookup(g, x.name, nl);
        if (dup >= 0)
            return sl_err_set(SL_EFORMAT, "split model %s: tensor '%s' is in both %s and %s", g->name, x.name,
                              g->shards[g->tensors[dup].shard].path, sh->path);
        x.file_offset += sh->base;
        x.shard = i;
        g->tensors[g->n_tensors] = x;
        if (sl_gguf_index_add(&g->t_index, sl_gguf_hash(x.name, nl), (uint64_t)g->n_tensors))
            return sl_err_set(SL_ENOMEM, "%s: out of memory", g->name);
        g->n_tensors++;
    }
    return SL_OK;
}

/* parts[0] becomes the model: shard table, all tensors, extents. */
static int join(sl_gguf *g, sl_gguf **parts, const split_keys *k)
{
    uint32_t n = (uint32_t)k->count;
    int64_t total = 0;
    for (uint32_t i = 0; i < n; i++) total += parts[i]->n_tensors;
    if (total != k->tensors)
        return sl_err_set(SL_EFORMAT, "split model %s: its %u files hold %lld tensors, split.tensors.count "
                          "says %lld", g->name, n, (long long)total, (long long)k->tensors);
    sl_gguf_shard *sh = calloc(n, sizeof *sh);
    sl_gguf_tensor *ts = sh ? realloc(g->tensors, (size_t)(total ? total : 1) * sizeof *ts) : NULL;
    if (!ts) { free(sh); return sl_err_set(SL_ENOMEM, "%s: out of memory", g->name); }
    g->tensors = ts;
    uint64_t base = 0;
    for (uint32_t i = 0; i < n; i++) {
        sh[i] = parts[i]->one;
        sh[i].base = base;
        if (__builtin_add_overflow(base, sh[i].file_size + SL_GGUF_SHARD_ALIGN - 1, &base) ||
            base > (uint64_t)INT64_MAX) {
            free(sh);
            return sl_err_set(SL_ERANGE, "split model %s: files too large together", g->name);
        }
        base = base / SL_GGUF_SHARD_ALIGN * SL_GGUF_SHARD_ALIGN;
    }
    g->shards = sh;
    g->n_shards = n;
    g->parts = parts;
    g->file_size = sh[n - 1].base + sh[n - 1].file_size;
    for (uint32_t i = 1; i < n; i++) {
        int st = append_tensors(g, parts[i], i);
        if (st) return st;
    }
    free(g->layers);
    g->layers = NULL;
    return sl_gguf_build_extents(g) ? sl_err_set(SL_ENOMEM, "%s: out of memory", g->name) : SL_OK;
}

/* *io was opened from path: when it is a shard of a split model, it is
 * replaced by the whole model. On failure *io is closed and NULL. */
static int split_join(sl_gguf **io, const char *path)
{
    sl_gguf *given = *io;
    split_keys k;
    bool has;
    int st = read_keys(given, &k, &has);
    if (!st && has && k.count == 1 && k.tensors != given->n_tensors)
        st = sl_err_set(SL_EFORMAT, "%s: holds %lld tensors, split.tensors.count says %lld", path,
                        (long long)given->n_tensors, (long long)k.tensors);
    if (st || !has || k.count == 1) {
        if (st) { sl_gguf_close(given); *io = NULL; }
        return st;
    }
    char suffix[40];
    snprintf(suffix, sizeof suffix, "-%05u-of-%05u.gguf", (unsigned)k.no + 1, (unsigned)k.count);
    size_t pl = strlen(path), sl = strlen(suffix);
    char *prefix = NULL;
    sl_gguf **parts = NULL;
    if (pl <= sl || strcmp(path + pl - sl, suffix)) {
        st = sl_err_set(SL_EFORMAT, "%s: shard %llu of a %llu-file split model, but its name does not end in "
                        "'%s', so the other files cannot be found", path, U64(k.no + 1), U64(k.count), suffix);
    } else if (!(prefix = strndup(path, pl - sl)) || !(parts = calloc((size_t)k.count, sizeof *parts))) {
        st = sl_err_set(SL_ENOMEM, "%s: out of memory", path);
    } else {
        parts[k.no] = given;
        given = NULL;
        for (uint32_t i = 0; i < k.count && !st; i++)
            if (!parts[i]) st = open_shard(&parts[i], prefix, i, &k, path);
        if (!st) st = join(parts[0], parts, &k);
    }
    free(prefix);
    if (st) {
        if (parts && parts[0] && parts[0]->parts == parts) {
            sl_gguf_close(parts[0]);   /* and the others with it */
        } else if (parts) {
            for (uint64_t i = 0; i < k.count; i++) sl_gguf_close(parts[i]);
            free(parts);
        }
        sl_gguf_close(given);   /* still here only when never moved into parts */
        *io = NULL;
        return st;
    }
    *io = parts[0];
    parts[0] = NULL;   /* the handle itself */
    return SL_OK;
}

/* A path opens its file, then the rest of its split if it is a shard. */
int sl_gguf_open_path(sl_gguf **out, const char *path)
{
    int st = sl_gguf_open_file(out, path);
    return st ? st : split_join(out, path);
}
