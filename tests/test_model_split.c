/* A split model runs as its single file does: synth2 qwen3moe split by the
 * split writer into 3+ files gives bitwise the same logits in resident,
 * stream (routed experts read from every file), mmap and pread modes, opened
 * from its first or a middle file (and a dense model streamed); `sluice mkmodel --split-max-size` writes
 * the same tensors as the single file and `sluice info` lists the files.
 * SL_HOST_ONLY (model runs: too slow under qemu). */
#include "sl_test.h"
#include "util_cli.h"
#include "../engine/sluice.h"
#include "../gguf/gguf.h"
#include "../io/sluice_stream.h"
#include "../io/stream_units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MOE SL_SHARED_DIR "/models/synth2-qwen3moe-q4_k_m.gguf"
#define DENSE SL_SHARED_DIR "/models/synth2-qwen3-q4_k_m.gguf"
#define N_TOK 24

enum { RUN_RESIDENT, RUN_STREAM, RUN_MMAP, RUN_PREAD };

static char prefix[256];
static uint32_t n_files;

static void file_name(char *buf, size_t n, uint32_t i)
{
    snprintf(buf, n, "%s-%05u-of-%05u.gguf", prefix, i + 1, n_files);
}

static void make_split(const char *src)
{
    snprintf(prefix, sizeof prefix, "/tmp/sl_test_msplit_%d", (int)getpid());
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, src), 0, "%s", sl_last_error());
    uint64_t max = sl_gguf_total_tensor_bytes(g) / 4;
    for (int64_t i = 0; i < sl_gguf_n_tensors(g); i++)
        if (sl_gguf_tensor_at(g, i)->nbytes + 32 > max) max = sl_gguf_tensor_at(g, i)->nbytes + 32;
    cr_assert_eq(sl_gguf_write_split(g, prefix, max, &n_files), 0, "%s", sl_last_error());
    sl_gguf_close(g);
    cr_assert_geq(n_files, 3u);
}

static void remove_split(void)
{
    char p[512];
    for (uint32_t i = 0; i < n_files; i++) { file_name(p, sizeof p, i); unlink(p); }
}

/* Opened in run_mode; stream/pread: the smallest budget from budget_mib up
 * that opens it, which must stream (the caller passes one below resident). */
static sl_model *open_mode(const char *path, int run_mode, uint64_t *budget_mib)
{
    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.n_ctx = 256;
    mp.n_threads = 2;
    sl_model *m = NULL;
    int rc = 0;
    if (run_mode == RUN_STREAM || run_mode == RUN_PREAD) {
        mp.io = run_mode == RUN_PREAD ? SL_IO_PREAD : SL_IO_AUTO;
        mp.mode = SL_MODE_STREAM;
        mp.max_pinned = 0;
        for (; *budget_mib < 256; ++*budget_mib) {
            mp.mem_budget = *budget_mib << 20;
            if (!(rc = sl_model_open(&m, path, &mp))) break;
        }
        cr_assert_eq(rc, 0, "open %s streamed: %s", path, sl_last_error());
        sl_model_info info;
        sl_model_get_info(m, &info);
        cr_assert_eq(info.mode, SL_MODE_STREAM, "%s not streamed", path);
        return m;
    }
    mp.mode = run_mode == RUN_RESIDENT ? SL_MODE_RESIDENT : SL_MODE_MMAP;
    rc = sl_model_open(&m, path, &mp);
    cr_assert_eq(rc, 0, "open %s: %s", path, sl_last_error());
    return m;
}

static float *logits_of(const char *path, int run_mode, uint64_t *budget_mib, int *n_vocab)
{
    sl_model *m = open_mode(path, run_mode, budget_mib);
    sl_model_info info;
    sl_model_get_info(m, &info);
    *n_vocab = info.n_vocab;
    sl_session *s;
    cr_assert_eq(sl_session_create(&s, m), 0, "%s", sl_last_error());
    int32_t ids[N_TOK];
    for (int i = 0; i < N_TOK; i++) ids[i] = (int32_t)((i * 7919 + 13) % info.n_vocab);
    float *lg = malloc((size_t)N_TOK * (size_t)info.n_vocab * sizeof *lg);
    cr_assert_eq(sl_session_eval(s, ids, N_TOK, lg), 0, "%s", sl_session_errmsg(s));
    sl_session_destroy(s);
    sl_model_close(m);
    return lg;
}

/* The streamer on the split model: O_DIRECT on every file, the backend asked for. */
static void check_streamer(const char *path, int io)
{
    sl_stream_config c;
    sl_stream_config_init(&c);
    c.mode = SL_MODE_STREAM; c.io = io; c.mem_budget = 1ull << 30;
    sl_stream *s;
    cr_assert_eq(sl_stream_open(&s, path, &c), 0, "%s", sl_stream_open_errmsg());
    const sl_stream_plan *p = sl_stream_get_plan(s);
    cr_assert(p->direct, "the split files should take O_DIRECT (%s)", sl_stream_notice(s));
    cr_assert_eq(p->io, io);
    sl_stream_close(s);
}

static void check_mode(const char *src, int run_mode)
{
    make_split(src);
    char first[512], mid[512];
    file_name(first, sizeof first, 0);
    file_name(mid, sizeof mid, n_files / 2);
    uint64_t b1 = 1, b2;
    int v1, v2;
    float *want = logits_of(src, run_mode, &b1, &v1);
    if (run_mode == RUN_STREAM || run_mode == RUN_PREAD) check_streamer(mid, run_mode == RUN_PREAD ? SL_IO_PREAD : SL_IO_URING);
    const char *paths[2] = { first, mid };
    for (int k = 0; k < 2; k++) {
        b2 = b1;   /* at least the single file's budget: the split spans a little more */
        float *got = logits_of(paths[k], run_mode, &b2, &v2);
        cr_assert_eq(v1, v2);
        cr_assert_eq(memcmp(want, got, (size_t)N_TOK * (size_t)v1 * sizeof *want), 0,
                     "%s: logits differ from the single file", paths[k]);
        free(got);
    }
    free(want);
    remove_split();
}

Test(model_split, logits_bitwise_resident, .timeout = 180) { check_mode(MOE, RUN_RESIDENT); }
Test(model_split, logits_bitwise_stream, .timeout = 180) { check_mode(MOE, RUN_STREAM); }
Test(model_split, logits_bitwise_mmap, .timeout = 180) { check_mode(MOE, RUN_MMAP); }
Test(model_split, logits_bitwise_pread, .timeout = 180) { check_mode(MOE, RUN_PREAD); }
/* a dense model: layers cut at the files' bounds in stream mode */
Test(model_split, dense_logits_bitwise_stream, .timeout = 180) { check_mode(DENSE, RUN_STREAM); }
Test(model_split, dense_logits_bitwise_pread, .timeout = 180) { check_mode(DENSE, RUN_PREAD); }

/* Stream mode's unit layout of a split model: no segment of a layer unit
 * crosses from one file into the next (plain layout: the unit spans). */
Test(model_split, stream_units_stay_in_one_file, .timeout = 60)
{
    make_split(DENSE);
    char mid[512];
    file_name(mid, sizeof mid, 1);
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, mid), 0, "%s", sl_last_error());
    int crossing[2] = { 0, 0 };
    for (int packed = 0; packed < 2; packed++) {
        sl_unit_map um;
        cr_assert_eq(sl_unit_map_init(&um, g, 4096, packed), 0, "%s", sl_last_error());
        for (int32_t u = 0; u < um.n_units; u++)
            for (int k = 0; k < um.units[u].n_seg; k++) {
                const sl_seg *sg = &um.units[u].seg[k];
                if (sg->end > sg->begin && sl_gguf_shard_of(g, sg->begin) != sl_gguf_shard_of(g, sg->end - 1))
                    crossing[packed]++;
            }
        sl_unit_map_free(&um);
    }
    cr_assert_gt(crossing[0], 0, "no layer of this split spans two files: the check proves nothing");
    cr_assert_eq(crossing[1], 0, "%d segments cross a file boundary", crossing[1]);
    sl_gguf_close(g);
    remove_split();
}

Test(model_split, mkmodel_split_max_size_and_info, .timeout = 180)
{
    char dir[64], cmd[640], out[8192], p[256];
    snprintf(dir, sizeof dir, "/tmp/sl_test_mksplit_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "mkmodel --preset tiny -o %s/one.gguf", dir);
    cr_assert_eq(sl_test_sluice(cmd, out, sizeof out), 0, "%s", out);
    snprintf(cmd, sizeof cmd, "mkmodel --preset tiny --split-max-size 20M -o %s/m.gguf", dir);
    cr_assert_eq(sl_test_sluice(cmd, out, sizeof out), 0, "%s", out);
    snprintf(p, sizeof p, "%s/m.unsplit.gguf", dir);
    cr_assert_neq(access(p, F_OK), 0, "the whole file is left behind");
    snprintf(p, sizeof p, "%s/m-00002-of-00002.gguf", dir);
    sl_gguf *a, *b;
    snprintf(cmd, sizeof cmd, "%s/one.gguf", dir);
    cr_assert_eq(sl_gguf_open_path(&a, cmd), 0, "%s", sl_last_error());
    cr_assert_eq(sl_gguf_open_path(&b, p), 0, "%s", sl_last_error());
    cr_assert_eq(sl_gguf_n_shards(b), 2u);
    cr_assert_eq(sl_gguf_n_tensors(a), sl_gguf_n_tensors(b));
    for (uint32_t i = 0; i < 2; i++) {   /* tensor bytes per file as gguf-split counts them */
        sl_gguf *one;
        cr_assert_eq(sl_gguf_open_fd(&one, sl_gguf_shard_at(b, i)->fd, "shard"), 0);
        uint64_t padded = 0;
        for (int64_t t = 0; t < sl_gguf_n_tensors(one); t++) padded += (sl_gguf_tensor_at(one, t)->nbytes + 31) / 32 * 32;
        cr_assert(padded <= 20000000u || sl_gguf_n_tensors(one) == 1, "file %u: %llu bytes", i,
                  (unsigned long long)padded);
        sl_gguf_close(one);
    }
    uint8_t *x = malloc(1 << 20), *y = malloc(1 << 20);
    for (int64_t i = 0; i < sl_gguf_n_tensors(a); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(a, i), *u = sl_gguf_tensor_at(b, i);
        cr_assert_str_eq(t->name, u->name);
        for (uint64_t off = 0; off < t->nbytes; off += 1 << 20) {
            size_t k = t->nbytes - off < (1u << 20) ? (size_t)(t->nbytes - off) : (1u << 20);
            cr_assert_eq(sl_gguf_read(a, x, k, t->file_offset + off), 0);
            cr_assert_eq(sl_gguf_read(b, y, k, u->file_offset + off), 0);
            cr_assert_eq(memcmp(x, y, k), 0, "%s", t->name);
        }
    }
    free(x);
    free(y);
    /* written file by file, the bytes of the library's splitter (gguf-split's
     * layout: perf/results/2026-11-29-interop.md) on the unsplit file */
    char lib[128];
    snprintf(lib, sizeof lib, "%s/lib", dir);
    uint32_t n_lib = 0;
    cr_assert_eq(sl_gguf_write_split(a, lib, 20000000u, &n_lib), 0, "%s", sl_last_error());
    cr_assert_eq(n_lib, 2u);
    for (uint32_t i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "cmp -s '%s/lib-%05u-of-00002.gguf' '%s/m-%05u-of-00002.gguf'", dir, i + 1, dir,
                 i + 1);
        cr_assert_eq(system(cmd), 0, "%s", cmd);
    }
    sl_gguf_close(a);
    sl_gguf_close(b);
    snprintf(cmd, sizeof cmd, "info %s", p);
    cr_assert_eq(sl_test_sluice(cmd, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "split: 2 files"), "%s", out);
    cr_assert(strstr(out, "m-00001-of-00002.gguf: 20 tensors"), "%s", out);
    cr_assert(strstr(out, "m-00002-of-00002.gguf: 1 tensors"), "%s", out);
    char out_m[8192];   /* -m FILE, as every other command takes the model, says the same */
    snprintf(cmd, sizeof cmd, "info -m %s", p);
    cr_assert_eq(sl_test_sluice(cmd, out_m, sizeof out_m), 0, "%s", out_m);
    cr_assert_str_eq(out_m, out);
    snprintf(cmd, sizeof cmd, "info %s -m %s", p, p);
    cr_assert_eq(sl_test_sluice(cmd, out_m, sizeof out_m), 2, "%s", out_m);
    cr_assert(strstr(out_m, "one FILE only"), "%s", out_m);
    cr_assert_eq(sl_test_sluice("info -m", out_m, sizeof out_m), 2, "%s", out_m);
    cr_assert(strstr(out_m, "-m needs a FILE"), "%s", out_m);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
