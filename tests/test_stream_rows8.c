/* io/stream_rows8.c's packing (sl_stream_config.rows8): resident,
 * each layer matrix the caller picks whose type has the layout and whose rows
 * (of each expert) fill whole groups is packed in place, typed
 * type | SL_GGML_ROWS8 in its views (an expert's slices too) and unpacks back
 * to the file's bytes; so is an untied lm head, over all its row chunks, and
 * never a tied one; every other tensor keeps the file's type and bytes. Stream
 * mode packs the units it pins (each head chunk by its own rows; never the
 * experts read into the cache, nor a unit read into a slot); unpinned, a unit
 * reads plain, pinned back it is packed again. Real files: the synth3 gpt-oss (MXFP4
 * experts, q4_K attention), synth-tiny-q8_0 (all Q8_0, untied head),
 * TinyStories-656K-Q8_0 (tied head), synth2-llama-iq4_xs (IQ4_XS layers, a
 * q6_K head). */
#include <stdlib.h>
#include <string.h>

#include "../io/sluice_stream.h"
#include "../quant/quant.h"
#include "sl_test.h"
#include "stream_testutil.h"

#define MODELS SL_SHARED_DIR "/models/"

static int pick_all(void *ctx, const sl_stream_tensor *t) { (void)ctx; (void)t; return 1; }
static int pick_none(void *ctx, const sl_stream_tensor *t) { (void)ctx; (void)t; return 0; }
/* ctx: a name suffix */
static int pick_suffix(void *ctx, const sl_stream_tensor *t)
{
    size_t n = strlen(t->name), m = strlen(ctx);
    return n >= m && !strcmp(t->name + n - m, ctx);
}

/* ctx: a whole name */
static int pick_name(void *ctx, const sl_stream_tensor *t) { return !strcmp(t->name, ctx); }

typedef int (*pick_fn)(void *, const sl_stream_tensor *);

/* Stream mode within 1 GiB: max_pinned 0 pins nothing, -1 every dense unit
 * (the experts streamed into the cache). */
static sl_stream *open_cfg(const char *path, int mode, pick_fn pick, void *ctx, int32_t max_pinned)
{
    sl_stream_config c;
    sl_stream_config_init(&c);
    c.mode = mode;
    c.rows8 = pick;
    c.rows8_ctx = ctx;
    if (mode == SL_MODE_STREAM) { c.mem_budget = 1ull << 30; c.max_pinned = max_pinned; }
    sl_stream *s;
    st_open(&s, path, &c);
    return s;
}

static sl_stream *open_mode(const char *path, int mode, pick_fn pick, void *ctx)
{
    return open_cfg(path, mode, pick, ctx, 0);
}

/* Is a packed view of plain b expected? */
static bool packs(const sl_stream_tensor *b, int mode, pick_fn pick, void *ctx)
{
    return mode == SL_MODE_RESIDENT && pick && (b->n_dims == 2 || b->n_dims == 3) &&
           sl_quant_rows8_supported((int)b->type) && b->ne[1] % 8 == 0 && pick(ctx, b);
}

/* a (from s) against b (the plain reference): the same, or packed. */
static int check_view(const sl_stream_tensor *a, const sl_stream_tensor *b, bool want)
{
    cr_assert_str_eq(a->name, b->name);
    cr_assert_eq(a->nbytes, b->nbytes);
    if (!want) {
        cr_assert_eq(a->type, b->type, "%s: retyped", a->name);
        cr_assert_eq(memcmp(a->data, b->data, a->nbytes), 0, "%s: bytes changed", a->name);
        return 0;
    }
    cr_assert_eq(a->type, b->type | SL_GGML_ROWS8, "%s: type %u", a->name, a->type);
    uint8_t *copy = malloc(a->nbytes);
    cr_assert_not_null(copy);
    memcpy(copy, a->data, a->nbytes);
    cr_assert_neq(memcmp(copy, b->data, a->nbytes), 0, "%s: not packed", a->name);
    int64_t rows = (int64_t)(a->ne[1] * (a->n_dims == 3 ? a->ne[2] : 1));
    cr_assert_eq(sl_quant_rows8_unpack((int)b->type, copy, rows, (int64_t)a->ne[0]), 0);
    cr_assert_eq(memcmp(copy, b->data, a->nbytes), 0, "%s: unpacks to other bytes than the file's", a->name);
    free(copy);
    return 1;
}

/* Every unit of path opened in mode with pick against the same mode without
 * it; the number of views packed. */
static int check_model(const char *path, int mode, pick_fn pick, void *ctx)
{
    sl_stream *s = open_mode(path, mode, pick, ctx), *ref = open_mode(path, mode, NULL, NULL);
    cr_assert_eq(sl_stream_n_units(s), sl_stream_n_units(ref));
    int n_packed = 0, head_ok = 1, n_experts = sl_stream_n_experts(s);
    for (int32_t u = 0; u < sl_stream_n_units(s); u++) {
        sl_stream_unit ui;
        cr_assert_eq(sl_stream_unit_info(s, u, &ui), 0);
        if (ui.kind == SL_UNIT_HEAD && ui.row_begin % 8) head_ok = 0;
    }
    for (int32_t u = 0; u < sl_stream_n_units(s); u++) {
        sl_stream_unit ui;
        sl_stream_view v, w;
        cr_assert_eq(sl_stream_unit_info(s, u, &ui), 0);
        cr_assert_eq(sl_stream_acquire(s, u, &v), 0);
        cr_assert_eq(sl_stream_acquire(ref, u, &w), 0);
        for (uint32_t i = 0; i < v.n_tensors; i++) {   /* streamed: the experts are not in the layer's */
            const sl_stream_tensor *b = NULL;
            for (uint32_t j = 0; j < w.n_tensors && !b; j++)
                if (!strcmp(w.tensors[j].name, v.tensors[i].name)) b = &w.tensors[j];
            cr_assert_not_null(b, "%s", v.tensors[i].name);
            bool want = packs(b, mode, pick, ctx);
            if (ui.kind == SL_UNIT_HEAD) {   /* a row range of the whole head */
                sl_stream_tensor whole = *b;
                whole.ne[1] = (uint64_t)-8;   /* rows checked below: the whole head's */
                want = head_ok && strcmp(b->name, "token_embd.weight") && packs(&whole, mode, pick, ctx);
            }
            n_packed += check_view(&v.tensors[i], b, want);
        }
        if (ui.kind == SL_UNIT_LAYER && n_experts > 0) {   /* an expert's slices carry the type too */
            sl_stream_view e, f;
            cr_assert_eq(sl_stream_expert_acquire(s, ui.layer, 1, &e), 0);
            cr_assert_eq(sl_stream_expert_acquire(ref, ui.layer, 1, &f), 0);
            for (uint32_t p = 0; p < e.n_tensors; p++)
                if (e.tensors[p].data) {
                    sl_stream_tensor whole = f.tensors[p];
                    whole.n_dims = 3;
                    cr_assert_eq(e.tensors[p].type, f.tensors[p].type | (packs(&whole, mode, pick, ctx) ? SL_GGML_ROWS8 : 0),
                                 "expert view %s", e.tensors[p].name);
                }
            cr_assert_eq(sl_stream_expert_release(s, ui.layer, 1), 0);
            cr_assert_eq(sl_stream_expert_release(ref, ui.layer, 1), 0);
        }
        cr_assert_eq(sl_stream_release(s, u), 0);
        cr_assert_eq(sl_stream_release(ref, u), 0);
    }
    sl_stream_close(s);
    sl_stream_close(ref);
    return n_packed;
}

Test(stream_rows8, resident_experts_packed_in_place, .timeout = 120)
{
    const char *m = MODELS "synth3-gpt-oss-q4_k_m.gguf";
    /* gate, up and down experts of its 4 layers; its attention is q4_K, its head q6_K */
    cr_assert_eq(check_model(m, SL_MODE_RESIDENT, pick_all, NULL), 12);
    cr_assert_eq(check_model(m, SL_MODE_RESIDENT, pick_suffix, "ffn_down_exps.weight"), 4);
    cr_assert_eq(check_model(m, SL_MODE_RESIDENT, pick_none, NULL), 0);
    cr_assert_eq(check_model(m, SL_MODE_STREAM, pick_all, NULL), 0);
}

/* Layer and head units of path. */
static void count_units(const char *path, int *layers, int *heads)
{
    sl_stream *s = open_mode(path, SL_MODE_RESIDENT, NULL, NULL);
    *layers = *heads = 0;
    for (int32_t u = 0; u < sl_stream_n_units(s); u++) {
        sl_stream_unit ui;
        cr_assert_eq(sl_stream_unit_info(s, u, &ui), 0);
        *layers += ui.kind == SL_UNIT_LAYER;
        *heads += ui.kind == SL_UNIT_HEAD;
    }
    sl_stream_close(s);
}

Test(stream_rows8, resident_dense_matrices_and_untied_head, .timeout = 120)
{
    const char *m = MODELS "synth-tiny-q8_0.gguf", *ts = MODELS "TinyStories-656K-Q8_0.gguf";
    int L, H;
    count_units(m, &L, &H);
    cr_assert(L > 0 && H > 0);
    /* q, k, v, o, gate, up, down of every layer, and each chunk of the head */
    cr_assert_eq(check_model(m, SL_MODE_RESIDENT, pick_all, NULL), 7 * L + H);
    cr_assert_eq(check_model(m, SL_MODE_RESIDENT, pick_name, "output.weight"), H);
    cr_assert_eq(check_model(m, SL_MODE_STREAM, pick_all, NULL), 0);
    /* TinyStories: the head is the token embedding: never packed */
    count_units(ts, &L, &H);
    cr_assert_eq(check_model(ts, SL_MODE_RESIDENT, pick_all, NULL), 7 * L);
    cr_assert_eq(check_model(ts, SL_MODE_RESIDENT, pick_name, "token_embd.weight"), 0);
}

Test(stream_rows8, resident_iq4_xs_matrices, .timeout = 120)
{
    const char *m = MODELS "iq/synth2-llama-iq4_xs.gguf";
    int L, H;
    count_units(m, &L, &H);
    cr_assert(L > 0 && H > 0);
    cr_assert_eq(check_model(m, SL_MODE_RESIDENT, pick_all, NULL), 7 * L);
    cr_assert_eq(check_model(m, SL_MODE_RESIDENT, pick_name, "output.weight"), 0);   /* q6_K: no layout */
    cr_assert_eq(check_model(m, SL_MODE_STREAM, pick_all, NULL), 0);
}

/* Stream mode with every dense unit pinned: unit u's views against ref's
 * (a plain open): packed where the pick and shape say; the number packed. */
static int check_pinned_unit(sl_stream *s, sl_stream *ref, int32_t u)
{
    sl_stream_unit ui;
    sl_stream_view v, w;
    cr_assert_eq(sl_stream_unit_info(s, u, &ui), 0);
    cr_assert_eq(sl_stream_acquire(s, u, &v), 0);
    cr_assert_eq(sl_stream_acquire(ref, u, &w), 0);
    cr_assert_eq(v.n_tensors, w.n_tensors);
    int n = 0;
    for (uint32_t i = 0; i < v.n_tensors; i++) {
        const sl_stream_tensor *b = &w.tensors[i];
        bool want = ui.pinned && strcmp(b->name, "token_embd.weight") && packs(b, SL_MODE_RESIDENT, pick_all, NULL);
        n += check_view(&v.tensors[i], b, want);
    }
    cr_assert_eq(sl_stream_release(s, u), 0);
    cr_assert_eq(sl_stream_release(ref, u), 0);
    return n;
}

static sl_stream *open_pinned(const char *path, pick_fn pick)
{
    return open_cfg(path, SL_MODE_STREAM, pick, NULL, -1);
}

Test(stream_rows8, stream_packs_pinned_units_and_repacks_after_unpinning, .timeout = 120)
{
    const char *m = MODELS "synth-tiny-q8_0.gguf";
    sl_stream *s = open_pinned(m, pick_all), *ref = open_pinned(m, NULL);
    int L = 0, H = 0;
    for (int32_t u = 0; u < sl_stream_n_units(s); u++) {
        sl_stream_unit ui;
        cr_assert_eq(sl_stream_unit_info(s, u, &ui), 0);
        cr_assert(ui.pinned, "unit %d not pinned", u);
        L += ui.kind == SL_UNIT_LAYER;
        H += ui.kind == SL_UNIT_HEAD && (ui.row_end - ui.row_begin) % 8 == 0;
    }
    int n = 0;
    for (int32_t u = 0; u < sl_stream_n_units(s); u++) n += check_pinned_unit(s, ref, u);
    cr_assert_eq(n, 7 * L + H);   /* q, k, v, o, gate, up, down, and the head chunks of whole groups */
    /* layer 0 unpinned: read plain into a slot; pinned back: packed again */
    cr_assert_eq(sl_stream_set_pinned(s, 0, false), 0);
    cr_assert_eq(check_pinned_unit(s, ref, 0), 0);
    cr_assert_eq(sl_stream_set_pinned(s, 0, true), 0);
    cr_assert_eq(check_pinned_unit(s, ref, 0), 7);
    sl_stream_close(s);
    sl_stream_close(ref);
}

Test(stream_rows8, stream_never_packs_cached_experts, .timeout = 120)
{
    const char *m = MODELS "synth3-gpt-oss-q4_k_m.gguf";
    sl_stream *s = open_pinned(m, pick_all), *ref = open_pinned(m, NULL);
    cr_assert_gt(sl_stream_n_experts(s), 0);
    for (int32_t u = 0; u < sl_stream_n_units(s); u++) {
        sl_stream_unit ui;
        cr_assert_eq(sl_stream_unit_info(s, u, &ui), 0);
        (void)check_pinned_unit(s, ref, u);   /* its dense matrices: packed where they can be */
        if (ui.kind != SL_UNIT_LAYER) continue;
        sl_stream_view e, f;
        cr_assert_eq(sl_stream_expert_acquire(s, ui.layer, 1, &e), 0);
        cr_assert_eq(sl_stream_expert_acquire(ref, ui.layer, 1, &f), 0);
        for (uint32_t p = 0; p < e.n_tensors; p++)
            if (e.tensors[p].data) {
                cr_assert_eq(e.tensors[p].type, f.tensors[p].type, "expert view %s", e.tensors[p].name);
                cr_assert_eq(memcmp(e.tensors[p].data, f.tensors[p].data, e.tensors[p].nbytes), 0);
            }
        cr_assert_eq(sl_stream_expert_release(s, ui.layer, 1), 0);
        cr_assert_eq(sl_stream_expert_release(ref, ui.layer, 1), 0);
    }
    sl_stream_close(s);
    sl_stream_close(ref);
}
