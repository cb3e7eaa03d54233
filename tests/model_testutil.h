/* Helpers for the model-description tests: a description loaded from a
 * file, the blocks of a layer, and hostile variants of a model written with
 * the GGUF writer into a temp dir (keys replaced, added or dropped, a tensor
 * dropped, reshaped or retyped) that the description and sl_model_open must
 * both refuse with a message naming the culprit. Header-only (static inline). */
#ifndef SL_MODEL_TESTUTIL_H
#define SL_MODEL_TESTUTIL_H

#include "sl_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../engine/model.h"
#include "../engine/sluice.h"
#include "../gguf/gguf.h"
#include "../gguf/base/sl_internal.h"

#define MODELS SL_SHARED_DIR "/models"

static inline int mt_load_desc(const char *path, sl_model_desc *d)
{
    sl_gguf *g;
    int rc = sl_gguf_open_path(&g, path);
    cr_assert_eq(rc, 0, "open %s: %s", path, sl_gguf_errmsg(NULL));
    rc = sl_model_desc_load(d, g);
    sl_gguf_close(g);
    return rc;
}

/* The description of path into d, which must load and be of architecture arch. */
static inline void mt_load_arch(const char *path, const char *arch, sl_model_desc *d)
{
    cr_assert_eq(mt_load_desc(path, d), 0, "%s: %s", path, sl_last_error());
    cr_assert_str_eq(d->arch_name, arch, "%s", path);
}

/* Layer l's attention / FFN block. */
static inline const sl_attn_block *mt_attn(const sl_model_desc *d, int32_t l) { return &sl_model_layer(d, l)->attn; }
static inline const sl_ffn_block *mt_ffn(const sl_model_desc *d, int32_t l) { return &sl_model_layer(d, l)->ffn; }

typedef struct mt_mutation {
    const char *src;              /* model to mutate (NULL: stories260K) */
    const char *arch;             /* replaces general.architecture */
    const char *drop;             /* tensor left out */
    const char *drop_key;         /* key left out */
    const char *shape_name;       /* tensor whose ne[dim] becomes ne */
    int dim;
    uint64_t ne;
    const char *type_name;        /* tensor re-declared as F16 */
    const char *str_key, *str_val;      /* keys set (replaced or added) */
    const char *f32_key; float f32_val;
    const char *f32_key2; float f32_val2;
    const char *u32_key; uint32_t u32_val;
} mt_mutation;

/* A key the mutation sets or drops is not copied from the source. */
static inline bool mt_skipped_key(const mt_mutation *mu, const char *k)
{
    const char *keys[] = { mu->str_key, mu->f32_key, mu->f32_key2, mu->u32_key, mu->drop_key };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (keys[i] && !strcmp(keys[i], k)) return true;
    return false;
}

static inline void mt_write_keys(sl_gguf_writer *w, const sl_gguf *g, const mt_mutation *mu)
{
    for (int64_t i = 0; i < sl_gguf_n_kv(g); i++) {
        const char *k = sl_gguf_kv_key(g, i);
        if (mu->arch && !strcmp(k, "general.architecture"))
            cr_assert_eq(sl_gguf_writer_set_str(w, k, mu->arch), 0);
        else if (!mt_skipped_key(mu, k))
            cr_assert_eq(sl_gguf_writer_copy_kv(w, g, i), 0, "%s", sl_gguf_writer_errmsg(w));
    }
    if (mu->str_key) cr_assert_eq(sl_gguf_writer_set_str(w, mu->str_key, mu->str_val), 0);
    if (mu->f32_key) cr_assert_eq(sl_gguf_writer_set_f32(w, mu->f32_key, mu->f32_val), 0);
    if (mu->f32_key2) cr_assert_eq(sl_gguf_writer_set_f32(w, mu->f32_key2, mu->f32_val2), 0);
    if (mu->u32_key) cr_assert_eq(sl_gguf_writer_set_u32(w, mu->u32_key, mu->u32_val), 0);
}

static inline void mt_write_mutated(const char *dst, const mt_mutation *mu)
{
    sl_gguf *g;
    const char *src = mu->src ? mu->src : MODELS "/stories260K.gguf";
    cr_assert_eq(sl_gguf_open_path(&g, src), 0);
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, dst, 3), 0, "%s", sl_last_error());
    mt_write_keys(w, g, mu);
    int64_t nt = sl_gguf_n_tensors(g);
    uint64_t *sizes = calloc((size_t)nt, sizeof *sizes);
    for (int64_t i = 0; i < nt; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (mu->drop && !strcmp(t->name, mu->drop)) continue;
        uint64_t ne[4];
        memcpy(ne, t->ne, sizeof ne);
        uint32_t type = t->type;
        if (mu->shape_name && !strcmp(t->name, mu->shape_name)) ne[mu->dim] = mu->ne;
        if (mu->type_name && !strcmp(t->name, mu->type_name)) type = SL_GGML_F16;
        cr_assert_eq(sl_gguf_writer_add_tensor(w, t->name, type, t->n_dims, ne), 0, "%s",
                     sl_gguf_writer_errmsg(w));
        cr_assert_eq(sl_gguf_tensor_size(type, t->n_dims, ne, &sizes[i]), 0);
    }
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0, "%s", sl_gguf_writer_errmsg(w));
    for (int64_t i = 0; i < nt; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (mu->drop && !strcmp(t->name, mu->drop)) continue;
        void *buf = calloc(1, sizes[i] > t->nbytes ? sizes[i] : t->nbytes);
        cr_assert_eq(sl_gguf_read(g, buf, t->nbytes, t->file_offset), 0);
        cr_assert_eq(sl_gguf_writer_write(w, buf, sizes[i]), 0, "%s", sl_gguf_writer_errmsg(w));
        free(buf);
    }
    cr_assert_eq(sl_gguf_writer_close(w), 0);
    free(sizes);
    sl_gguf_close(g);
}

/* The description of the mutated model into d (its status; sl_last_error
 * its message); with open_rc, also the status and message of the whole open. */
static inline int mt_mutated_desc(const mt_mutation *mu, sl_model_desc *d, int *open_rc, char *open_msg,
                                  size_t msg_len)
{
    char dir[] = "/tmp/sl_test_model_XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    mt_write_mutated(path, mu);
    int rc = mt_load_desc(path, d);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", sl_last_error());
    if (open_rc) {
        sl_model_params mp;
        sl_model_params_init(&mp);
        mp.n_threads = 1;
        mp.n_ctx = 64;
        sl_model *m = NULL;
        *open_rc = sl_model_open(&m, path, &mp);
        snprintf(open_msg, msg_len, "%s", sl_last_error());
        if (!*open_rc) sl_model_close(m);
    }
    unlink(path);
    rmdir(dir);
    sl_err_set(rc, "%s", msg);
    return rc;
}

/* The mutation fails the description with status want and exactly
 * desc_msg, and the whole open with want and a message containing open_msg
 * (NULL: desc_msg). */
static inline void mt_expect_refused(const char *name, const mt_mutation *mu, int want, const char *desc_msg,
                                     const char *open_msg)
{
    sl_model_desc d;
    int orc;
    char omsg[512];
    int rc = mt_mutated_desc(mu, &d, &orc, omsg, sizeof omsg);
    cr_assert_eq(rc, want, "%s: status %d, want %d (%s)", name, rc, want, sl_last_error());
    cr_assert_str_eq(sl_last_error(), desc_msg, "%s: message '%s'", name, sl_last_error());
    cr_assert_eq(orc, want, "%s: open status %d, want %d", name, orc, want);
    cr_assert_not_null(strstr(omsg, open_msg ? open_msg : desc_msg), "%s: %s", name, omsg);
}

/* One hostile variant and what it must be refused with (mt_expect_refused). */
typedef struct mt_case {
    const char *name;
    mt_mutation mu;
    int want;
    const char *desc_msg, *open_msg;
} mt_case;

static inline void mt_expect_refused_all(const mt_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cr_log_info("%s", cases[i].name);
        mt_expect_refused(cases[i].name, &cases[i].mu, cases[i].want, cases[i].desc_msg, cases[i].open_msg);
    }
}

#endif
