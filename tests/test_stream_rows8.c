/* io/stream_resident.c's rows8 packing (sl_stream_config.rows8) on the synth3
 * gpt-oss file: resident, each routed expert's MXFP4 matrices are packed in
 * place, typed MXFP4 | SL_GGML_ROWS8 in the layer's and the expert's views,
 * and unpack back to the file's bytes; every other tensor is untouched; off,
 * for other types only, or in stream mode, every view has the file's type and
 * bytes. */
#include <stdlib.h>
#include <string.h>

#include "../io/sluice_stream.h"
#include "../quant/quant.h"
#include "sl_test.h"
#include "stream_testutil.h"

#define GPTOSS SL_SHARED_DIR "/models/synth3-gpt-oss-q4_k_m.gguf"

static sl_stream *open_mode(int mode, uint64_t rows8)
{
    sl_stream_config c;
    sl_stream_config_init(&c);
    c.mode = mode;
    c.rows8 = rows8;
    if (mode == SL_MODE_STREAM) { c.mem_budget = 1ull << 30; c.max_pinned = 0; }
    sl_stream *s;
    st_open(&s, GPTOSS, &c);
    return s;
}

/* The layer units (SL_UNIT_LAYER) come first. */
static int32_t n_layers(const sl_stream *s)
{
    int32_t n = 0;
    sl_stream_unit u;
    while (n < sl_stream_n_units(s) && sl_stream_unit_info(s, n, &u) == 0 && u.kind == SL_UNIT_LAYER) n++;
    return n;
}

static bool is_exps(const char *name) { return strstr(name, "_exps.weight") != NULL; }

/* Layer l's views in s (packed or not) against the same tensors in ref (plain). */
static int check_layer(sl_stream *s, sl_stream *ref, int32_t l, bool packed)
{
    sl_stream_view v, w;
    cr_assert_eq(sl_stream_acquire(s, l, &v), 0);
    cr_assert_eq(sl_stream_acquire(ref, l, &w), 0);
    int n_packed = 0;
    for (uint32_t i = 0; i < v.n_tensors; i++) {   /* streamed: the experts are not in the layer's */
        const sl_stream_tensor *a = &v.tensors[i], *b = NULL;
        for (uint32_t j = 0; j < w.n_tensors && !b; j++)
            if (!strcmp(w.tensors[j].name, a->name)) b = &w.tensors[j];
        cr_assert_not_null(b, "%s", a->name);
        cr_assert_eq(a->nbytes, b->nbytes);
        bool want = packed && is_exps(a->name) && b->type == SL_GGML_MXFP4 && b->ne[1] % 8 == 0;
        if (!want) {
            cr_assert_eq(a->type, b->type, "%s: retyped", a->name);
            cr_assert_eq(memcmp(a->data, b->data, a->nbytes), 0, "%s: bytes changed", a->name);
            continue;
        }
        n_packed++;
        cr_assert_eq(a->type, SL_GGML_MXFP4 | SL_GGML_ROWS8, "%s: type %u", a->name, a->type);
        uint8_t *copy = malloc(a->nbytes);
        cr_assert_not_null(copy);
        memcpy(copy, a->data, a->nbytes);
        cr_assert_neq(memcmp(copy, b->data, a->nbytes), 0, "%s: not packed", a->name);
        cr_assert_eq(sl_quant_rows8_unpack(SL_GGML_MXFP4, copy, (int64_t)(a->ne[1] * a->ne[2]), (int64_t)a->ne[0]), 0);
        cr_assert_eq(memcmp(copy, b->data, a->nbytes), 0, "%s: unpacks to other bytes than the file's", a->name);
        free(copy);
    }
    /* an expert's slices carry the type too */
    sl_stream_view e;
    cr_assert_eq(sl_stream_expert_acquire(s, l, 1, &e), 0);
    for (uint32_t p = 0; p < e.n_tensors; p++)
        if (e.tensors[p].data)
            cr_assert_eq(e.tensors[p].type, (uint32_t)(packed ? SL_GGML_MXFP4 | SL_GGML_ROWS8 : SL_GGML_MXFP4),
                         "expert view %s", e.tensors[p].name);
    cr_assert_eq(sl_stream_expert_release(s, l, 1), 0);
    cr_assert_eq(sl_stream_release(s, l), 0);
    cr_assert_eq(sl_stream_release(ref, l), 0);
    return n_packed;
}

Test(stream_rows8, resident_experts_packed_in_place, .timeout = 120)
{
    sl_stream *s = open_mode(SL_MODE_RESIDENT, 1ull << SL_GGML_MXFP4), *ref = open_mode(SL_MODE_RESIDENT, 0);
    int32_t L = n_layers(s), n = 0;
    cr_assert_gt(L, 0);
    for (int32_t l = 0; l < L; l++) n += check_layer(s, ref, l, true);
    cr_assert_eq(n, 3 * L, "gate, up and down experts of every layer are MXFP4: %d packed", n);
    sl_stream_close(s);
    sl_stream_close(ref);
}

Test(stream_rows8, off_or_streamed_keeps_the_file_bytes, .timeout = 120)
{
    sl_stream *ref = open_mode(SL_MODE_RESIDENT, 0);
    sl_stream *s = open_mode(SL_MODE_STREAM, ~0ull);
    for (int32_t l = 0; l < n_layers(s); l++) cr_assert_eq(check_layer(s, ref, l, false), 0);
    sl_stream_close(s);
    s = open_mode(SL_MODE_RESIDENT, 1ull << SL_GGML_Q8_0);   /* other types named: MXFP4 stays */
    for (int32_t l = 0; l < n_layers(s); l++) cr_assert_eq(check_layer(s, ref, l, false), 0);
    sl_stream_close(s);
    sl_stream_close(ref);
}
