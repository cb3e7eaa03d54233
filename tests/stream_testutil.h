/* Helpers for the streamer tests: generate a GGUF with deterministic,
 * position-dependent tensor bytes, and compare acquired views against a
 * plain pread of the file (the oracle). Header-only (static inline). */
#ifndef SL_STREAM_TESTUTIL_H
#define SL_STREAM_TESTUTIL_H

#include "sl_test.h"
#include "../gguf/gguf.h"
#include "../io/sluice_stream.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct st_model_spec {
    int n_layers;
    uint64_t ne0;          /* row length (f32 elements) */
    uint64_t rows_q;       /* rows of blk.N.attn_q */
    uint64_t rows_up;      /* rows of blk.N.ffn_up */
    uint64_t n_vocab;      /* rows of token_embd / output */
    bool tied;             /* no output.weight */
    uint32_t alignment;    /* 0 = default 32 */
} st_model_spec;

static inline uint8_t st_byte(uint32_t tensor, uint64_t i)
{
    uint64_t x = (uint64_t)tensor * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31; x *= 0x94D049BB133111EBull; x ^= x >> 29;
    return (uint8_t)x;
}

static inline int st_write_tensor(sl_gguf_writer *w, uint32_t id, uint64_t nbytes)
{
    uint8_t buf[65536];
    for (uint64_t pos = 0; pos < nbytes;) {
        uint64_t n = nbytes - pos < sizeof buf ? nbytes - pos : sizeof buf;
        for (uint64_t i = 0; i < n; i++) buf[i] = st_byte(id, pos + i);
        int rc = sl_gguf_writer_write(w, buf, n);
        if (rc) return rc;
        pos += n;
    }
    return 0;
}

/* Writes the model; returns 0 or a status (message in sl_last_error). */
static inline int st_make_model(const char *path, const st_model_spec *sp)
{
    sl_gguf_writer *w;
    int rc = sl_gguf_writer_open(&w, path, 3);
    if (rc) return rc;
    if (sp->alignment) sl_gguf_writer_set_alignment(w, sp->alignment);
    sl_gguf_writer_set_str(w, "general.architecture", "llama");
    sl_gguf_writer_set_u32(w, "llama.block_count", (uint32_t)sp->n_layers);
    char name[64];
    uint64_t ne[2];
    ne[0] = sp->ne0; ne[1] = sp->n_vocab;
    sl_gguf_writer_add_tensor(w, "token_embd.weight", SL_GGML_F32, 2, ne);
    for (int l = 0; l < sp->n_layers; l++) {
        uint64_t n1[1] = { sp->ne0 };
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", l);
        sl_gguf_writer_add_tensor(w, name, SL_GGML_F32, 1, n1);
        ne[1] = sp->rows_q;
        snprintf(name, sizeof name, "blk.%d.attn_q.weight", l);
        sl_gguf_writer_add_tensor(w, name, SL_GGML_F32, 2, ne);
        ne[1] = sp->rows_up;
        snprintf(name, sizeof name, "blk.%d.ffn_up.weight", l);
        sl_gguf_writer_add_tensor(w, name, SL_GGML_F32, 2, ne);
    }
    uint64_t n1[1] = { sp->ne0 };
    sl_gguf_writer_add_tensor(w, "output_norm.weight", SL_GGML_F32, 1, n1);
    if (!sp->tied) {
        ne[1] = sp->n_vocab;
        sl_gguf_writer_add_tensor(w, "output.weight", SL_GGML_F32, 2, ne);
    }
    rc = sl_gguf_writer_begin_data(w);
    if (rc) { sl_gguf_writer_abort(w); return rc; }
    uint32_t id = 0;
    rc |= st_write_tensor(w, id++, sp->ne0 * sp->n_vocab * 4);
    for (int l = 0; l < sp->n_layers && !rc; l++) {
        rc |= st_write_tensor(w, id++, sp->ne0 * 4);
        rc |= st_write_tensor(w, id++, sp->ne0 * sp->rows_q * 4);
        rc |= st_write_tensor(w, id++, sp->ne0 * sp->rows_up * 4);
    }
    rc |= st_write_tensor(w, id++, sp->ne0 * 4);
    if (!sp->tied) rc |= st_write_tensor(w, id++, sp->ne0 * sp->n_vocab * 4);
    if (rc) { sl_gguf_writer_abort(w); return rc; }
    return sl_gguf_writer_close(w);
}

/* path of a model in ../shared/models; false if it is not there. */
static inline bool st_shared_model(char *path, size_t n, const char *name)
{
    snprintf(path, n, "%s/models/%s", SL_SHARED_DIR, name);
    return access(path, R_OK) == 0;
}

/* A directory on the real disk (next to the test binary): /tmp may be tmpfs,
 * where O_DIRECT is refused. */
static inline void st_disk_path(char *buf, size_t n, const char *tag)
{
    char exe[1024];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0) { snprintf(buf, n, "sl_test_stream_%s_%d.gguf", tag, (int)getpid()); return; }
    exe[k] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    snprintf(buf, n, "%s/sl_test_stream_%s_%d.gguf", exe, tag, (int)getpid());
}

/* Compares every tensor of an acquired view with a plain pread of the file. */
static inline void st_check_view(int fd, const sl_gguf *g, const sl_stream_view *v,
                                 const sl_stream_unit *info)
{
    uint8_t buf[65536];
    for (uint32_t i = 0; i < v->n_tensors; i++) {
        const sl_stream_tensor *t = &v->tensors[i];
        const sl_gguf_tensor *gt = sl_gguf_find_tensor(g, t->name);
        cr_assert_not_null(gt, "%s", t->name);
        cr_assert_not_null(t->data, "%s: no data", t->name);
        uint64_t off = gt->file_offset;
        if (info->kind == SL_UNIT_HEAD) off += info->row_begin * (gt->nbytes / gt->ne[1]);
        for (uint64_t pos = 0; pos < t->nbytes;) {
            size_t n = t->nbytes - pos < sizeof buf ? (size_t)(t->nbytes - pos) : sizeof buf;
            cr_assert_eq(pread(fd, buf, n, (off_t)(off + pos)), (ssize_t)n);
            if (memcmp(buf, (const uint8_t *)t->data + pos, n) != 0) {
                size_t j = 0;
                while (((const uint8_t *)t->data)[pos + j] == buf[j]) j++;
                cr_assert_fail("unit %d tensor %s: byte %llu differs from the file", (int)v->unit,
                               t->name, (unsigned long long)(pos + j));
            }
            pos += n;
        }
    }
}

/* Acquires every unit in schedule order for `passes` passes and checks bytes. */
static inline void st_run_passes(sl_stream *s, const char *path, int passes)
{
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0);
    const sl_gguf *g = sl_stream_gguf(s);
    int32_t U = sl_stream_n_units(s);
    for (int p = 0; p < passes; p++)
        for (int32_t u = 0; u < U; u++) {
            sl_stream_view v;
            sl_stream_unit info;
            cr_assert_eq(sl_stream_acquire(s, u, &v), 0, "unit %d: %s", (int)u, sl_stream_errmsg(s));
            cr_assert_eq(sl_stream_unit_info(s, u, &info), 0);
            cr_assert_eq(v.unit, u);
            st_check_view(fd, g, &v, &info);
            cr_assert_eq(sl_stream_release(s, u), 0);
        }
    close(fd);
}

/* Streams with nothing pinned, whatever MemAvailable is (a shared machine). */
static inline void st_stream_cfg(sl_stream_config *c, int io)
{
    sl_stream_config_init(c);
    c->mem_budget = 1ull << 30;
    c->io = io;
    c->mode = SL_MODE_STREAM;
    c->max_pinned = 0;
}

static inline void st_open(sl_stream **s, const char *path, const sl_stream_config *c)
{
    cr_assert_eq(sl_stream_open(s, path, c), 0, "open: %s", sl_stream_open_errmsg());
}

/* st_open with st_stream_cfg(io) as it is. */
static inline sl_stream *st_open_streamed(const char *path, int io)
{
    sl_stream_config c;
    st_stream_cfg(&c, io);
    sl_stream *s;
    st_open(&s, path, &c);
    return s;
}

/* Peak RSS of this process (Criterion forks per test: it starts fresh). */
static inline uint64_t st_vm_hwm(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) break;
    if (f) fclose(f);
    return (uint64_t)kb * 1024;
}

/* Under AddressSanitizer every page the streamer touches also costs an
 * eighth in shadow memory, plus the sanitizer's own allocator slack: the
 * planned budget still bounds the streamer, the measurement gets that much on
 * top (main measured 22.4 MB plain, 26.9 MB under ASan for a 24 MiB budget). */
#if defined(__SANITIZE_ADDRESS__)
#define SL_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SL_TEST_ASAN 1
#endif
#endif
#ifdef SL_TEST_ASAN
static inline uint64_t st_rss_allowance(uint64_t budget) { return budget + budget / 8 + (2ull << 20); }
#else
static inline uint64_t st_rss_allowance(uint64_t budget) { return budget; }
#endif

/* The peak RSS grew by no more than the streamer's budget since `before`
 * (st_vm_hwm at open); logs the growth beside the plan's figures. */
static inline void st_check_rss(uint64_t before, uint64_t budget, int io, const sl_stream_plan *p)
{
    uint64_t after = st_vm_hwm();
    cr_log_info("io %d: VmHWM grew %llu bytes (budget %llu, planned peak %llu, %d pinned, %d slots x %llu, "
                "%d expert slots x %llu)", io, (unsigned long long)(after - before), (unsigned long long)budget,
                (unsigned long long)p->peak_bytes, (int)p->n_pinned, (int)p->n_slots,
                (unsigned long long)p->slot_bytes, (int)p->n_expert_slots,
                (unsigned long long)p->expert_slot_bytes);
    cr_assert_leq(after - before, st_rss_allowance(budget), "VmHWM grew %llu > budget %llu (allowed %llu)",
                  (unsigned long long)(after - before), (unsigned long long)budget,
                  (unsigned long long)st_rss_allowance(budget));
}

#endif
