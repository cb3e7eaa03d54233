/* Routed-expert streaming (io/stream_experts.c): a split MoE file's dense
 * units and (layer, expert) units hand out exactly the file's bytes under
 * every eviction policy and backend with a cache that thrashes; EIO on one
 * expert's range fails that expert's acquire with a message naming layer and
 * expert and leaves nothing of it cached; a union larger than the cache; the
 * peak-RSS bound; and the engine:
 * bitwise-identical logits between resident and expert-streamed runs of the
 * synth2 MoE models (uring and pread, a cache of k slots), and with
 * pre-gating on and off (bitwise equal; its accuracy and read-ahead counted).
 * SL_HOST_ONLY: io_uring, O_DIRECT, VmHWM. */
#include "stream_testutil.h"
#include "../engine/sluice.h"
#include "../engine/forward_moe.h"

#include <errno.h>
#include <stdatomic.h>

#define MODELS SL_SHARED_DIR "/models"

typedef struct moe_spec { int n_layers, n_expert, k; uint64_t ne0, ff, rows_q, n_vocab; } moe_spec;

/* A qwen3moe-named file of F32 tensors with position-dependent bytes, the
 * dense tensors between the expert tensors as converters write them. */
static void make_moe(char *path, size_t n, const char *tag, const moe_spec *sp)
{
    st_disk_path(path, n, tag);
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, path, 3), 0);
    sl_gguf_writer_set_str(w, "general.architecture", "qwen3moe");
    sl_gguf_writer_set_u32(w, "qwen3moe.block_count", (uint32_t)sp->n_layers);
    sl_gguf_writer_set_u32(w, "qwen3moe.expert_used_count", (uint32_t)sp->k);
    uint64_t ne2[2] = { sp->ne0, sp->n_vocab }, n1[1] = { sp->ne0 };
    uint64_t total = sp->ne0 * sp->n_vocab * 4;
    sl_gguf_writer_add_tensor(w, "token_embd.weight", SL_GGML_F32, 2, ne2);
    char name[96];
    for (int l = 0; l < sp->n_layers; l++) {
        uint64_t q[2] = { sp->ne0, sp->rows_q }, gi[2] = { sp->ne0, (uint64_t)sp->n_expert };
        uint64_t up[3] = { sp->ne0, sp->ff, (uint64_t)sp->n_expert }, dn[3] = { sp->ff, sp->ne0, (uint64_t)sp->n_expert };
        snprintf(name, sizeof name, "blk.%d.attn_q.weight", l);
        sl_gguf_writer_add_tensor(w, name, SL_GGML_F32, 2, q);
        snprintf(name, sizeof name, "blk.%d.ffn_down_exps.weight", l);
        sl_gguf_writer_add_tensor(w, name, SL_GGML_F32, 3, dn);
        snprintf(name, sizeof name, "blk.%d.ffn_gate_exps.weight", l);
        sl_gguf_writer_add_tensor(w, name, SL_GGML_F32, 3, up);
        snprintf(name, sizeof name, "blk.%d.ffn_gate_inp.weight", l);
        sl_gguf_writer_add_tensor(w, name, SL_GGML_F32, 2, gi);
        snprintf(name, sizeof name, "blk.%d.ffn_norm.weight", l);
        sl_gguf_writer_add_tensor(w, name, SL_GGML_F32, 1, n1);
        snprintf(name, sizeof name, "blk.%d.ffn_up_exps.weight", l);
        sl_gguf_writer_add_tensor(w, name, SL_GGML_F32, 3, up);
    }
    sl_gguf_writer_add_tensor(w, "output_norm.weight", SL_GGML_F32, 1, n1);
    sl_gguf_writer_add_tensor(w, "output.weight", SL_GGML_F32, 2, ne2);
    cr_assert_eq(sl_gguf_writer_begin_data(w), 0);
    uint32_t id = 0;
    int rc = st_write_tensor(w, id++, total);
    for (int l = 0; l < sp->n_layers; l++) {
        uint64_t ex = sp->ne0 * sp->ff * (uint64_t)sp->n_expert * 4;
        rc |= st_write_tensor(w, id++, sp->ne0 * sp->rows_q * 4);
        rc |= st_write_tensor(w, id++, ex);
        rc |= st_write_tensor(w, id++, ex);
        rc |= st_write_tensor(w, id++, sp->ne0 * (uint64_t)sp->n_expert * 4);
        rc |= st_write_tensor(w, id++, sp->ne0 * 4);
        rc |= st_write_tensor(w, id++, ex);
    }
    rc |= st_write_tensor(w, id++, sp->ne0 * 4);
    rc |= st_write_tensor(w, id++, total);
    cr_assert_eq(rc, 0);
    cr_assert_eq(sl_gguf_writer_close(w), 0, "%s", sl_last_error());
}

static const moe_spec small_moe = { .n_layers = 4, .n_expert = 16, .k = 4, .ne0 = 256, .ff = 48,
                                    .rows_q = 32, .n_vocab = 64 };

/* The tensor equals the file at its offset (oracle: the reader). One static
 * buffer: no heap growth of the test's own in the RSS measurement (ASan's
 * quarantine would keep every freed one). */
static void same_as_file(sl_stream *s, const sl_stream_tensor *t, uint64_t file_off, const char *what)
{
    static uint8_t ref[1 << 16];
    for (uint64_t pos = 0; pos < t->nbytes; pos += sizeof ref) {
        size_t n = t->nbytes - pos < sizeof ref ? (size_t)(t->nbytes - pos) : sizeof ref;
        cr_assert_eq(sl_gguf_read(sl_stream_gguf(s), ref, n, file_off + pos), 0);
        cr_assert_eq(memcmp(ref, (const uint8_t *)t->data + pos, n), 0, "%s: %s differs from the file at byte %llu",
                     what, t->name, (unsigned long long)pos);
    }
}

static uint32_t rnd(uint32_t *x) { *x = *x * 1664525u + 1013904223u; return *x >> 8; }

/* k distinct experts out of n */
static void pick(uint32_t *seed, int n, int k, int32_t *out)
{
    for (int j = 0; j < k; j++) {
        bool dup;
        do {
            out[j] = (int32_t)(rnd(seed) % (uint32_t)n);
            dup = false;
            for (int i = 0; i < j; i++) dup |= out[i] == out[j];
        } while (dup);
    }
}

/* tokens x layers: acquire the dense unit (checked), request k experts,
 * acquire each (checked against the file), release. */
static void run_tokens(sl_stream *s, const moe_spec *sp, int tokens, uint32_t seed)
{
    const sl_gguf *g = sl_stream_gguf(s);
    for (int t = 0; t < tokens; t++)
        for (int l = 0; l < sp->n_layers; l++) {
            sl_stream_view v;
            cr_assert_eq(sl_stream_acquire(s, l, &v), 0, "%s", sl_stream_errmsg(s));
            cr_assert_null(sl_stream_view_find(&v, "ffn_up_exps.weight"), "experts split off the layer");
            for (uint32_t i = 0; i < v.n_tensors; i++)
                same_as_file(s, &v.tensors[i], sl_gguf_find_tensor(g, v.tensors[i].name)->file_offset, "dense");
            int32_t ex[8];
            pick(&seed, sp->n_expert, sp->k, ex);
            cr_assert_eq(sl_stream_expert_request(s, l, ex, sp->k), 0, "%s", sl_stream_errmsg(s));
            for (int j = 0; j < sp->k; j++) {
                sl_stream_view ev;
                cr_assert_eq(sl_stream_expert_acquire(s, l, ex[j], &ev), 0, "%s", sl_stream_errmsg(s));
                cr_assert_eq(ev.n_tensors, 3);
                for (int p = 0; p < 3; p++) {
                    const sl_gguf_tensor *gt = sl_gguf_find_tensor(g, ev.tensors[p].name);
                    cr_assert_eq(ev.tensors[p].nbytes, gt->nbytes / gt->ne[2]);
                    same_as_file(s, &ev.tensors[p], gt->file_offset + (uint64_t)ex[j] * ev.tensors[p].nbytes,
                                 "expert");
                }
                cr_assert_eq(sl_stream_expert_release(s, l, ex[j]), 0);
            }
            cr_assert_eq(sl_stream_release(s, l), 0);
        }
}

Test(stream_experts, bytes_match_every_policy_and_backend_while_thrashing)
{
    char path[1100];
    make_moe(path, sizeof path, "xbytes", &small_moe);
    for (int io = SL_IO_URING; io < SL_IO_COUNT; io++)
        for (int pol = SL_EVICT_AUTO; pol <= SL_EVICT_DECAY; pol++) {
            sl_stream_config c;
            st_stream_cfg(&c, io);
            c.expert_policy = pol;
            c.expert_cache_bytes = 1;   /* the minimum: k slots, every layer evicts */
            sl_stream *s;
            st_open(&s, path, &c);
            const sl_stream_plan *p = sl_stream_get_plan(s);
            cr_assert(p->experts_split);
            cr_assert_eq(p->n_expert, 16);
            cr_assert_eq(p->n_expert_slots, 4);
            cr_assert_eq(sl_stream_n_experts(s), 16);
            run_tokens(s, &small_moe, 6, 7u + (uint32_t)pol);
            sl_stream_stats st;
            sl_stream_get_stats(s, &st);
            cr_assert_eq(st.expert_hits + st.expert_misses, 6u * 4u * 4u);
            cr_assert_gt(st.expert_misses, 6u * 4u * 2u, "a 4-slot cache over 64 experts thrashes");
            cr_assert_gt(st.expert_bytes_read, 0);
            uint64_t h, m, sum = 0;
            for (int l = 0; l < small_moe.n_layers; l++) {
                cr_assert_eq(sl_stream_expert_layer_stats(s, l, &h, &m), 0);
                sum += h + m;
            }
            cr_assert_eq(sum, st.expert_hits + st.expert_misses);
            sl_stream_close(s);
        }
    unlink(path);
}

/* A cache of every expert: after the first pass every request hits. */
Test(stream_experts, a_cache_of_every_expert_hits_after_warmup)
{
    char path[1100];
    make_moe(path, sizeof path, "xwarm", &small_moe);
    sl_stream *s = st_open_streamed(path, SL_IO_AUTO);
    cr_assert_eq(sl_stream_get_plan(s)->n_expert_slots, 64);
    const int32_t all[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
    for (int l = 0; l < small_moe.n_layers; l++) cr_assert_eq(sl_stream_expert_request(s, l, all, 16), 0);
    sl_stream_reset_stats(s);
    run_tokens(s, &small_moe, 3, 3);
    sl_stream_stats st;
    sl_stream_get_stats(s, &st);
    cr_assert_eq(st.expert_misses, 0);
    cr_assert_eq(st.expert_hits, 3u * 4u * 4u);
    sl_stream_close(s);
    unlink(path);
}

/* The smallest expert cache (k slots: every layer evicts) over path. */
static sl_stream *open_min_cache(const char *path, int io)
{
    sl_stream_config c;
    st_stream_cfg(&c, io);
    c.expert_cache_bytes = 1;
    sl_stream *s;
    st_open(&s, path, &c);
    return s;
}

/* Prompt processing: a chunk's union of experts (here all 16 of a layer)
 * through a 4-slot cache: each read exactly once, the reads that found no
 * slot start as slots are released. */
Test(stream_experts, union_larger_than_the_cache_reads_each_once)
{
    char path[1100];
    make_moe(path, sizeof path, "xunion", &small_moe);
    for (int io = SL_IO_URING; io < SL_IO_COUNT; io++) {
        sl_stream *s = open_min_cache(path, io);
        const sl_gguf *g = sl_stream_gguf(s);
        int32_t all[16];
        for (int e = 0; e < 16; e++) all[e] = 15 - e;
        for (int l = 0; l < small_moe.n_layers; l++) {
            cr_assert_eq(sl_stream_expert_request(s, l, all, 16), 0);
            for (int e = 0; e < 16; e++) {
                sl_stream_view ev;
                cr_assert_eq(sl_stream_expert_acquire(s, l, all[e], &ev), 0, "%s", sl_stream_errmsg(s));
                for (int p = 0; p < 3; p++) {
                    const sl_gguf_tensor *gt = sl_gguf_find_tensor(g, ev.tensors[p].name);
                    same_as_file(s, &ev.tensors[p], gt->file_offset + (uint64_t)all[e] * ev.tensors[p].nbytes,
                                 "union");
                }
                cr_assert_eq(sl_stream_expert_release(s, l, all[e]), 0);
            }
        }
        sl_stream_stats st;
        sl_stream_get_stats(s, &st);
        cr_assert_eq(st.expert_misses, 4u * 16u, "io %d", io);
        cr_assert_eq(st.expert_hits, 0);
        /* three widened slices per expert, each read once */
        uint64_t a = sl_stream_get_plan(s)->align, want = 0;
        for (int l = 0; l < small_moe.n_layers; l++)
            for (int e = 0; e < 16; e++)
                for (int p = 0; p < 3; p++) {
                    static const char *const nm[3] = { "gate", "up", "down" };
                    char name[64];
                    snprintf(name, sizeof name, "blk.%d.ffn_%s_exps.weight", l, nm[p]);
                    const sl_gguf_tensor *gt = sl_gguf_find_tensor(g, name);
                    uint64_t sl = gt->nbytes / gt->ne[2], off = gt->file_offset + (uint64_t)e * sl;
                    want += (off + sl + a - 1) / a * a - off / a * a;
                }
        cr_assert_eq(st.expert_bytes_read, want, "io %d: %llu != %llu", io,
                     (unsigned long long)st.expert_bytes_read, (unsigned long long)want);
        sl_stream_close(s);
    }
    unlink(path);
}

/* Read-ahead guesses for a layer may hold every slot, still loading, when
 * that layer's request comes with other experts: the request's experts wait
 * for the guesses to land and take their slots; no acquire fails. */
Test(stream_experts, guesses_holding_every_slot_do_not_fail_the_request)
{
    char path[1100];
    make_moe(path, sizeof path, "xguess", &small_moe);
    for (int io = SL_IO_URING; io < SL_IO_COUNT; io++) {
        sl_stream *s = open_min_cache(path, io);   /* k = 4 slots */
        const sl_gguf *g = sl_stream_gguf(s);
        const int32_t want0[4] = { 0, 1, 2, 3 }, guess[4] = { 4, 5, 6, 7 }, want1[4] = { 8, 9, 10, 11 };
        cr_assert_eq(sl_stream_expert_request(s, 0, want0, 4), 0);
        for (int e = 0; e < 4; e++) {
            sl_stream_view ev;
            cr_assert_eq(sl_stream_expert_acquire(s, 0, want0[e], &ev), 0, "%s", sl_stream_errmsg(s));
            cr_assert_eq(sl_stream_expert_release(s, 0, want0[e]), 0);
        }
        cr_assert_eq(sl_stream_expert_prefetch(s, 1, guess, 4), 4, "io %d: every slot takes a guess", io);
        cr_assert_eq(sl_stream_expert_request(s, 1, want1, 4), 0);
        for (int e = 3; e >= 0; e--) {   /* not the request's order either */
            sl_stream_view ev;
            cr_assert_eq(sl_stream_expert_acquire(s, 1, want1[e], &ev), 0, "io %d: %s", io, sl_stream_errmsg(s));
            for (int p = 0; p < 3; p++) {
                const sl_gguf_tensor *gt = sl_gguf_find_tensor(g, ev.tensors[p].name);
                same_as_file(s, &ev.tensors[p], gt->file_offset + (uint64_t)want1[e] * ev.tensors[p].nbytes,
                             "after guesses");
            }
            cr_assert_eq(sl_stream_expert_release(s, 1, want1[e]), 0);
        }
        sl_stream_close(s);
    }
    unlink(path);
}

Test(stream_experts, misuse_is_refused)
{
    char path[1100];
    make_moe(path, sizeof path, "xmisuse", &small_moe);
    sl_stream *s = st_open_streamed(path, SL_IO_PREAD);
    int32_t twice[2] = { 3, 3 }, out[1] = { 16 };
    cr_assert_eq(sl_stream_expert_request(s, 0, twice, 2), SL_EINVAL);
    cr_assert_eq(sl_stream_expert_request(s, 0, out, 1), SL_EINVAL);
    cr_assert(strstr(sl_stream_errmsg(s), "layer 0 expert 16 out of range"), "%s", sl_stream_errmsg(s));
    cr_assert_eq(sl_stream_expert_release(s, 1, 2), SL_EINVAL);
    sl_stream_view v;
    cr_assert_eq(sl_stream_expert_acquire(s, 1, 2, &v), 0, "unrequested: served as a request of one");
    cr_assert_eq(sl_stream_expert_acquire(s, 1, 2, &v), SL_EINVAL);
    cr_assert_eq(sl_stream_expert_release(s, 1, 2), 0);
    sl_stream_close(s);
    unlink(path);
}

typedef struct eio_at { uint64_t off; atomic_int faults; } eio_at;

static int64_t eio_hook(void *ctx, int fd, void *buf, size_t len, uint64_t off)
{
    eio_at *f = ctx;
    if (off <= f->off && f->off < off + len) { atomic_fetch_add(&f->faults, 1); return -EIO; }
    ssize_t r = pread(fd, buf, len, (off_t)off);
    return r < 0 ? -errno : (int64_t)r;
}

Test(stream_experts, eio_on_one_expert_names_layer_and_expert)
{
    char path[1100];
    make_moe(path, sizeof path, "xeio", &small_moe);
    for (int io = SL_IO_URING; io < SL_IO_COUNT; io++) {
        sl_stream_config c;
        st_stream_cfg(&c, io);
        c.expert_cache_bytes = 1;
        sl_gguf *g;
        cr_assert_eq(sl_gguf_open_path(&g, path), 0);
        const sl_gguf_tensor *up = sl_gguf_find_tensor(g, "blk.1.ffn_up_exps.weight");
        uint64_t slice = up->nbytes / up->ne[2];
        eio_at f = { .off = up->file_offset + 5 * slice + slice / 2 };   /* middle of expert 5's up slice */
        sl_gguf_close(g);
        c.read_hook = eio_hook; c.read_hook_ctx = &f;
        sl_stream *s;
        st_open(&s, path, &c);
        int32_t ex[2] = { 2, 5 };
        cr_assert_eq(sl_stream_expert_request(s, 1, ex, 2), 0);
        sl_stream_view v;
        cr_assert_eq(sl_stream_expert_acquire(s, 1, 2, &v), 0, "%s", sl_stream_errmsg(s));
        cr_assert_eq(sl_stream_expert_release(s, 1, 2), 0);
        for (int again = 0; again < 2; again++) {
            /* the second time: nothing of it was kept, so it is read (and fails) again */
            int rc = sl_stream_expert_acquire(s, 1, 5, &v);
            cr_assert_eq(rc, SL_EIO, "io %d: rc %d", io, rc);
            const char *m = sl_stream_errmsg(s);
            cr_assert(strstr(m, "layer 1 expert 5") && strstr(m, "errno 5") && strstr(m, "file offset"),
                      "message: %s", m);
        }
        cr_assert_geq(atomic_load(&f.faults), 2);
        /* the stream still works: the other experts, the layers */
        cr_assert_eq(sl_stream_expert_acquire(s, 1, 2, &v), 0, "%s", sl_stream_errmsg(s));
        cr_assert_eq(sl_stream_expert_release(s, 1, 2), 0);
        sl_stream_close(s);
    }
    unlink(path);
}

/* ---- the RSS bound (as test_stream.c) ------------------------------------ */

static void rss_bound(int io)
{
    char path[1100];
    /* ~100 MB: 8 layers of 3 x 4 MiB experts (16 x 256 KiB) */
    const moe_spec sp = { .n_layers = 8, .n_expert = 16, .k = 4, .ne0 = 1024, .ff = 64, .rows_q = 128,
                          .n_vocab = 256 };
    make_moe(path, sizeof path, "xrss", &sp);
    const uint64_t budget = 24ull << 20;
    sl_stream_config c;
    st_stream_cfg(&c, io);
    c.max_pinned = -1;
    c.mem_budget = budget;
    uint64_t before = st_vm_hwm();
    sl_stream *s;
    st_open(&s, path, &c);
    const sl_stream_plan *p = sl_stream_get_plan(s);
    cr_assert(p->experts_split);
    cr_assert_leq(p->peak_bytes, budget);
    cr_assert_lt(p->n_expert_slots, 8 * 16, "the budget holds only part of the experts");
    run_tokens(s, &sp, 3, 11);
    st_check_rss(before, budget, io, p);
    sl_stream_close(s);
    unlink(path);
}

Test(stream_experts, peak_rss_within_budget_uring) { rss_bound(SL_IO_URING); }
Test(stream_experts, peak_rss_within_budget_pread) { rss_bound(SL_IO_PREAD); }

/* The expert cache takes the room before token_embd: under a budget that
 * holds part of the experts the table is read a row at a time (each row
 * equal to the file), and the cache has the bytes the table would have
 * taken; with room for every expert the table is pinned as well. */
Test(stream_experts, the_expert_cache_comes_before_the_embedding_table)
{
    char path[1100];
    /* a 4 MiB embedding table beside 16 layers x 16 experts x 192 KiB */
    const moe_spec sp = { .n_layers = 16, .n_expert = 16, .k = 4, .ne0 = 256, .ff = 64, .rows_q = 32,
                          .n_vocab = 4096 };
    make_moe(path, sizeof path, "xembd", &sp);
    sl_stream_config c;
    st_stream_cfg(&c, SL_IO_AUTO);
    c.max_pinned = -1;
    c.mem_budget = 24ull << 20;
    sl_stream *s;
    st_open(&s, path, &c);
    const sl_stream_plan *p = sl_stream_get_plan(s);
    const uint64_t total = (uint64_t)sp.n_layers * (uint64_t)sp.n_expert;
    cr_assert(p->experts_split && p->fits);
    cr_assert_lt((uint64_t)p->n_expert_slots, total, "the budget holds only part of the experts");
    cr_assert_not(p->embd_pinned, "the table's bytes went to the cache");
    /* what is left is less than a slot (+ one 2 MiB page of rounding): the table's room is in the cache */
    cr_assert_leq(p->peak_bytes, p->budget);
    cr_assert_lt(p->budget - p->peak_bytes, p->expert_slot_bytes + (2u << 20), "the cache has what the budget leaves");
    const sl_gguf_tensor *e = sl_gguf_find_tensor(sl_stream_gguf(s), "token_embd.weight");
    const uint64_t rb = e->nbytes / sp.n_vocab;
    static uint8_t row[1024], ref[1024];
    const uint64_t rows[3] = { 0, 1777, sp.n_vocab - 1 };
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(sl_stream_read_row(s, "token_embd.weight", rows[i], row, sizeof row), 0, "%s",
                     sl_stream_errmsg(s));
        cr_assert_eq(sl_gguf_read(sl_stream_gguf(s), ref, rb, e->file_offset + rows[i] * rb), 0);
        cr_assert_eq(memcmp(row, ref, rb), 0, "row %llu", (unsigned long long)rows[i]);
    }
    run_tokens(s, &sp, 2, 5);
    sl_stream_close(s);

    c.mem_budget = 1ull << 30;
    st_open(&s, path, &c);
    p = sl_stream_get_plan(s);
    cr_assert_eq((uint64_t)p->n_expert_slots, total);
    cr_assert(p->embd_pinned, "room is left after every expert");
    sl_stream_close(s);
    unlink(path);
}

/* ---- the engine: resident vs expert-streamed, bitwise -------------------- */

static sl_model *open_model(const char *path, int mode, int io)
{
    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.n_ctx = 128;
    mp.n_batch = 16;   /* the same batch shapes in both runs */
    mp.n_threads = 2;
    mp.mode = mode;
    mp.io = io;
    if (mode == SL_MODE_STREAM) { mp.max_pinned = 0; mp.expert_cache_bytes = 1; }
    sl_model *m;
    cr_assert_eq(sl_model_open(&m, path, &mp), 0, "%s: %s", path, sl_last_error());
    return m;
}

/* A 24-token prompt (two chunks of 16) with every position's logits, then 8
 * greedy decode steps: the logits of each. */
static float *logits_of(sl_model *m, int n_vocab, uint64_t *misses)
{
    sl_session *s;
    cr_assert_eq(sl_session_create(&s, m), 0);
    enum { NP = 24, ND = 8 };
    float *out = malloc(sizeof(float) * (size_t)n_vocab * (NP + ND));
    int32_t ids[NP];
    for (int i = 0; i < NP; i++) ids[i] = (int32_t)((i * 37 + 5) % n_vocab);
    cr_assert_eq(sl_session_eval(s, ids, NP, out), 0, "%s", sl_session_errmsg(s));
    const float *row = out + (size_t)(NP - 1) * (size_t)n_vocab;
    for (int t = 0; t < ND; t++) {
        int32_t best = 0;
        for (int v = 1; v < n_vocab; v++) if (row[v] > row[best]) best = v;
        float *dst = out + (size_t)(NP + t) * (size_t)n_vocab;
        cr_assert_eq(sl_session_eval(s, &best, 1, dst), 0, "%s", sl_session_errmsg(s));
        row = dst;
    }
    sl_stats st;
    sl_session_get_stats(s, &st);
    *misses = st.expert_misses;
    sl_session_destroy(s);
    return out;
}

static void bitwise(const char *stem)
{
    /* resident packs Q8_0 / MXFP4 / IQ4_NL matrices in rows of eight where
     * faster: within rounding of the plain rows (test_model_rows8.c); the
     * expert streamer is compared bit for bit with the packing off (read
     * once a process; Criterion forks a test each) */
    setenv("SLUICE_ROWS8", "0", 1);
    char path[512];
    snprintf(path, sizeof path, MODELS "/%s.gguf", stem);
    sl_model *r = open_model(path, SL_MODE_RESIDENT, SL_IO_AUTO);
    sl_model_info mi;
    sl_model_get_info(r, &mi);
    uint64_t miss;
    float *ref = logits_of(r, mi.n_vocab, &miss);
    cr_assert_eq(miss, 0);
    sl_model_close(r);
    for (int io = SL_IO_URING; io < SL_IO_COUNT; io++) {
        sl_model *m = open_model(path, SL_MODE_STREAM, io);
        const sl_stream_plan *p = sl_stream_get_plan((sl_stream *)sl_model_stream(m));
        cr_assert(p->experts_split, "%s", stem);
        cr_assert_eq(p->n_expert_slots, p->n_expert_used, "the smallest cache");
        float *got = logits_of(m, mi.n_vocab, &miss);
        cr_assert_gt(miss, 0);
        for (int i = 0; i < 32; i++)
            cr_assert_eq(memcmp(ref + (size_t)i * (size_t)mi.n_vocab, got + (size_t)i * (size_t)mi.n_vocab,
                                sizeof(float) * (size_t)mi.n_vocab), 0,
                         "%s io %d: logits of position %d differ from the resident run", stem, io, i);
        free(got);
        sl_model_close(m);
    }
    free(ref);
}

Test(stream_experts, bitwise_qwen3moe, .timeout = 120) { bitwise("synth2-qwen3moe-q4_k_m"); }
Test(stream_experts, bitwise_qwen2moe, .timeout = 120) { bitwise("synth2-qwen2moe-q4_k_m"); }
Test(stream_experts, bitwise_mixtral, .timeout = 120) { bitwise("synth2-mixtral-q4_k_m"); }

/* ---- pre-gating: read-ahead on a guess never changes the numbers ---------- */

/* Dense parts pinned (pre-gating needs layer l+1's router without blocking),
 * a cache of k + 2 slots that thrashes; 8 greedy decode steps after a prompt. */
static float *pregate_logits(const char *path, int pregate, int io, int n_vocab, sl_stats *st, int *k)
{
    sl_model_params mp;
    sl_model_params_init(&mp);
    mp.n_ctx = 128; mp.n_batch = 16; mp.n_threads = 2;
    mp.mode = SL_MODE_STREAM; mp.io = io;
    mp.moe_pregate = pregate;
    sl_stream_config c;
    sl_stream_config_init(&c);
    c.mode = SL_MODE_STREAM;
    sl_stream_plan pl;
    cr_assert_eq(sl_stream_plan_model(path, &c, &pl, NULL, 0), 0, "%s", sl_last_error());
    mp.expert_cache_bytes = (uint64_t)(pl.n_expert_used + 2) * pl.expert_slot_bytes;
    sl_model *m;
    cr_assert_eq(sl_model_open(&m, path, &mp), 0, "%s", sl_last_error());
    const sl_stream_plan *p = sl_stream_get_plan(sl_model_stream(m));
    for (int32_t l = 0; l < p->n_layers; l++) {
        sl_stream_unit ui;
        cr_assert_eq(sl_stream_unit_info(sl_model_stream(m), l, &ui), 0);
        cr_assert(ui.pinned, "layer %d's dense part pinned", l);
    }
    cr_assert_eq(p->n_expert_slots, p->n_expert_used + 2);
    *k = p->n_expert_used;
    uint64_t miss;
    float *out = logits_of(m, n_vocab, &miss);
    cr_assert_gt(miss, 0);
    sl_session *s;   /* logits_of's session is gone: the stats of a second run */
    cr_assert_eq(sl_session_create(&s, m), 0);
    int32_t ids[4] = { 5, 42, 7, 9 }, tok = 11;
    cr_assert_eq(sl_session_feed_tokens(s, ids, 4), 0);
    for (int i = 0; i < 6; i++) cr_assert_eq(sl_session_feed_tokens(s, &tok, 1), 0, "%s", sl_session_errmsg(s));
    sl_session_get_stats(s, st);
    sl_session_destroy(s);
    sl_model_close(m);
    return out;
}

static void pregate_bitwise(const char *stem)
{
    char path[512];
    snprintf(path, sizeof path, MODELS "/%s.gguf", stem);
    sl_model_params mp;
    sl_model_params_init(&mp);
    cr_assert_eq(mp.moe_pregate, SL_PREGATE_AUTO);
    sl_model *r;
    cr_assert_eq(sl_model_open(&r, path, &mp), 0);
    sl_model_info mi;
    sl_model_get_info(r, &mi);
    sl_model_close(r);
    for (int io = SL_IO_URING; io < SL_IO_COUNT; io++) {
        sl_stats on, off;
        int k;
        float *a = pregate_logits(path, SL_PREGATE_ON, io, mi.n_vocab, &on, &k);
        float *b = pregate_logits(path, SL_PREGATE_OFF, io, mi.n_vocab, &off, &k);
        cr_assert_eq(memcmp(a, b, sizeof(float) * (size_t)mi.n_vocab * 32), 0,
                     "%s io %d: logits with pre-gating differ from those without", stem, io);
        /* 6 decode tokens x (layers - 1) guessed layers x k experts */
        cr_assert_eq(on.pregate_chosen, 6ull * (uint64_t)(mi.n_layer - 1) * (uint64_t)k);
        cr_assert_leq(on.pregate_guessed, on.pregate_chosen);
        cr_assert_gt(on.expert_prefetched, 0, "a k+2-slot cache misses: something was read ahead");
        cr_assert_leq(on.expert_prefetch_used, on.expert_prefetched);
        cr_assert_eq(off.pregate_chosen, 0);
        cr_assert_eq(off.expert_prefetched, 0);
        free(a);
        free(b);
    }
}

/* The read-ahead depth: every rank until measured, then the leading ranks
 * right at least 85% of the time; it follows a change of precision. */
Test(stream_experts, pregate_depth_follows_precision)
{
    float hit[8] = { 0 }, seen = 0;
    uint64_t right = 0;
    const int32_t guess[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
    cr_assert_eq(sl_forward_moe_pregate_depth(hit, seen, 8), 8, "unmeasured ranks are read");
    /* ranks 0-2 always chosen, rank 3 in 4 of 5 layers, the rest never */
    for (int i = 0; i < 500; i++) {
        int32_t chosen[8] = { 0, 1, 2, i % 5 ? 3 : 20, 21, 22, 23, 24 };
        sl_forward_moe_pregate_learn(hit, &seen, guess, 8, chosen, 8, &right);
    }
    cr_assert_eq(right, 500 * 3 + 400);
    cr_assert_eq(sl_forward_moe_pregate_depth(hit, seen, 8), 3, "an 80%% rank is not read");
    /* rank 3 now in 19 of 20 layers: read again, rank 4 (never) still not */
    for (int i = 0; i < 500; i++) {
        int32_t chosen[8] = { 0, 1, 2, i % 20 ? 3 : 20, 21, 22, 23, 24 };
        sl_forward_moe_pregate_learn(hit, &seen, guess, 8, chosen, 8, &right);
    }
    cr_assert_eq(sl_forward_moe_pregate_depth(hit, seen, 8), 4);
    /* a leading rank that stops being right stops the read-ahead there */
    for (int i = 0; i < 500; i++) {
        int32_t chosen[8] = { 30, 1, 2, 3, 4, 5, 6, 7 };
        sl_forward_moe_pregate_learn(hit, &seen, guess, 8, chosen, 8, &right);
    }
    cr_assert_eq(sl_forward_moe_pregate_depth(hit, seen, 8), 0);
    cr_assert_eq(sl_forward_moe_pregate_depth(hit, seen, 0), 0);
}

Test(stream_experts, pregate_bitwise_qwen3moe, .timeout = 120) { pregate_bitwise("synth2-qwen3moe-q4_k_m"); }
Test(stream_experts, pregate_bitwise_mixtral, .timeout = 120) { pregate_bitwise("synth2-mixtral-q4_k_m"); }

/* ---- decode's grouped experts (two pool jobs per group) ------------------- */

/* SLUICE_FUSE=0 (read at open) runs each expert's three matvecs on their own;
 * the grouped path must give the same logits bit for bit, resident and with
 * the smallest cache (the group of experts still loading is the second). */
static void grouped_bitwise(const char *stem)
{
    char path[512];
    snprintf(path, sizeof path, MODELS "/%s.gguf", stem);
    for (int mode = 0; mode < 2; mode++) {
        float *v[2];
        int n_vocab = 0;
        for (int fuse = 0; fuse < 2; fuse++) {
            if (fuse) unsetenv("SLUICE_FUSE");
            else setenv("SLUICE_FUSE", "0", 1);
            sl_model *m = open_model(path, mode ? SL_MODE_STREAM : SL_MODE_RESIDENT, SL_IO_AUTO);
            sl_model_info mi;
            sl_model_get_info(m, &mi);
            n_vocab = mi.n_vocab;
            uint64_t miss;
            v[fuse] = logits_of(m, n_vocab, &miss);
            if (mode) cr_assert_gt(miss, 0);
            sl_model_close(m);
        }
        unsetenv("SLUICE_FUSE");
        for (int i = 0; i < 32; i++)
            cr_assert_eq(memcmp(v[0] + (size_t)i * (size_t)n_vocab, v[1] + (size_t)i * (size_t)n_vocab,
                                sizeof(float) * (size_t)n_vocab), 0,
                         "%s %s: logits of position %d differ between grouped and per-expert decode", stem,
                         mode ? "stream" : "resident", i);
        free(v[0]);
        free(v[1]);
    }
}

Test(stream_experts, grouped_decode_bitwise_qwen3moe, .timeout = 120) { grouped_bitwise("synth2-qwen3moe-q4_k_m"); }
Test(stream_experts, grouped_decode_bitwise_qwen2moe, .timeout = 120) { grouped_bitwise("synth2-qwen2moe-q4_k_m"); }
Test(stream_experts, grouped_decode_bitwise_mixtral, .timeout = 120) { grouped_bitwise("synth2-mixtral-q4_k_m"); }

/* sl_stream_expert_ready: never blocks, 1 once the reads are done. */
Test(stream_experts, ready_reports_loaded_experts)
{
    char path[1100];
    make_moe(path, sizeof path, "ready", &small_moe);
    sl_stream *s = open_min_cache(path, SL_IO_PREAD);   /* k slots: experts are split off */
    cr_assert(sl_stream_get_plan(s)->experts_split);
    int32_t e[2] = { 3, 9 };
    cr_assert_eq(sl_stream_expert_ready(s, 1, 3), 0, "not requested: acquiring it would read");
    cr_assert_eq(sl_stream_expert_request(s, 1, e, 2), 0, "%s", sl_stream_errmsg(s));
    sl_stream_view v;
    cr_assert_eq(sl_stream_expert_acquire(s, 1, 3, &v), 0, "%s", sl_stream_errmsg(s));
    cr_assert_eq(sl_stream_expert_ready(s, 1, 3), 1, "held");
    cr_assert_eq(sl_stream_expert_release(s, 1, 3), 0);
    cr_assert_eq(sl_stream_expert_ready(s, 1, 3), 1, "cached");
    int r = 0;
    for (int i = 0; i < 2000 && (r = sl_stream_expert_ready(s, 1, 9)) == 0; i++) usleep(1000);
    cr_assert_eq(r, 1, "a requested expert's reads finish");
    cr_assert_eq(sl_stream_expert_acquire(s, 1, 9, &v), 0);
    cr_assert_eq(sl_stream_expert_release(s, 1, 9), 0);
    cr_assert_lt(sl_stream_expert_ready(s, 99, 0), 0, "layer out of range");
    cr_assert_lt(sl_stream_expert_ready(s, 1, -1), 0, "expert out of range");
    cr_assert_lt(sl_stream_expert_ready(NULL, 1, 1), 0);
    sl_stream_close(s);
    unlink(path);
}
