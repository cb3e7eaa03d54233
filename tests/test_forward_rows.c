/* Token-table rows on demand (engine/forward_rows.c) over the streamer, on
 * the synth3 gemma4 file: per_layer_token_embd is no resident tensor in
 * stream mode, a pass reads each distinct token's row once, the row cache
 * keeps recent ones, and the rows equal the dequantized table. */
#include "sl_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../engine/forward_rows.h"
#include "../gguf/gguf.h"
#include "../quant/quant.h"

#define GEMMA4 SL_SHARED_DIR "/models/synth3-gemma4-q4_k_m.gguf"
#define PLE "per_layer_token_embd.weight"

typedef struct reads { uint64_t begin, end; int n; } reads;

/* Counts the reads inside [begin, end) (the table), then reads. */
static int64_t count_hook(void *ctx, int fd, void *buf, size_t len, uint64_t off)
{
    reads *r = ctx;
    if (off >= r->begin && off < r->end) __atomic_fetch_add(&r->n, 1, __ATOMIC_RELAXED);
    ssize_t got = pread(fd, buf, len, (off_t)off);
    return got;
}

static sl_stream *open_stream(reads *r)
{
    sl_stream_config c;
    sl_stream_config_init(&c);
    c.mode = SL_MODE_STREAM;
    c.io = SL_IO_PREAD;
    c.mem_budget = 16u << 20;
    c.no_direct = true;
    c.read_hook = count_hook;
    c.read_hook_ctx = r;
    sl_stream *s;
    cr_assert_eq(sl_stream_open(&s, GEMMA4, &c), 0, "%s", sl_stream_errmsg(NULL));
    const sl_gguf_tensor *t = sl_gguf_find_tensor(sl_stream_gguf(s), PLE);
    cr_assert_not_null(t);
    r->begin = t->file_offset;
    r->end = t->file_offset + t->nbytes;
    return s;
}

/* Rows of the table over memory the caller frees. */
static void *rows_over(sl_stream *s, const sl_gguf_tensor *t, sl_rows *rows)
{
    const int64_t n = (int64_t)t->ne[0];
    size_t mb = sl_rows_mem_bytes(sl_gguf_row_bytes((int)t->type, n));
    void *mem = malloc(mb);
    cr_assert_eq(sl_rows_init(rows, s, PLE, n, mem, mb), 0, "%s", sl_last_error());
    return mem;
}

Test(forward_rows, ple_table_not_resident_in_stream_mode)
{
    reads r = { 0 };
    sl_stream *s = open_stream(&r);
    const sl_stream_plan *p = sl_stream_get_plan(s);
    const sl_gguf_tensor *t = sl_gguf_find_tensor(sl_stream_gguf(s), PLE);
    cr_assert_eq(p->ple_bytes, t->nbytes);
    cr_assert_eq(p->ple_row_bytes, t->nbytes / t->ne[1]);
    const sl_stream_tensor *g = sl_stream_global(s, PLE);
    cr_assert(g && !g->data, "the table is listed but not held");
    /* globals: every non-layer tensor but token_embd (here also the head) and the table */
    uint64_t want = 0;
    const sl_gguf *gg = sl_stream_gguf(s);
    for (int64_t i = 0; i < sl_gguf_n_tensors(gg); i++) {
        const sl_gguf_tensor *u = sl_gguf_tensor_at(gg, i);
        if (u->layer < 0 && strcmp(u->name, PLE) && strcmp(u->name, "token_embd.weight")) want += u->nbytes;
    }
    cr_assert_eq(p->globals_bytes, want);
    sl_stream_close(s);
}

Test(forward_rows, one_read_per_distinct_token_and_cached)
{
    reads r = { 0 };
    sl_stream *s = open_stream(&r);
    const sl_gguf_tensor *t = sl_gguf_find_tensor(sl_stream_gguf(s), PLE);
    const int64_t n = (int64_t)t->ne[0];
    sl_rows rows;
    void *mem = rows_over(s, t, &rows);
    const size_t rb = rows.row_bytes;
    /* 69 shares 5's slot (64 slots): within a pass both are still made once */
    const int32_t ids[] = { 5, 7, 5, 5, 7, 69, 1000, 5 };
    const int32_t ni = (int32_t)(sizeof ids / sizeof ids[0]);
    float *x = malloc((size_t)ni * (size_t)n * sizeof *x);
    cr_assert_eq(sl_rows_read(&rows, s, ids, ni, x, n, 8.0f), 0, "%s", sl_last_error());
    cr_assert_eq(r.n, 4, "reads of the table: %d for 4 distinct tokens", r.n);
    cr_assert_eq(rows.bytes_read, 4 * rb);
    /* each row: the table's row dequantized, times the scale */
    uint8_t *raw = malloc(rb);
    float *want = malloc((size_t)n * sizeof *want);
    for (int32_t j = 0; j < ni; j++) {
        cr_assert_eq(sl_stream_read_row(s, PLE, (uint64_t)ids[j], raw, rb), 0);
        cr_assert_eq(sl_quant_dequantize_row((int)t->type, raw, want, n), 0);
        for (int64_t i = 0; i < n; i++)
            cr_assert_eq(x[(int64_t)j * n + i], want[i] * 8.0f, "token %d value %lld", ids[j], (long long)i);
    }
    /* a later pass: 7 and 1000 are cached; 5 lost its slot to 69 */
    int before = r.n;
    const int32_t again[] = { 7, 1000, 69 };
    cr_assert_eq(sl_rows_read(&rows, s, again, 3, x, n, 0), 0);
    cr_assert_eq(r.n, before);
    cr_assert_eq(sl_rows_read(&rows, s, (const int32_t[]){ 5 }, 1, x, n, 0), 0);
    cr_assert_eq(r.n, before + 1);
    cr_assert_eq(rows.bytes_read, 5 * rb);
    /* a bad row: refused with the table named, nothing cached */
    cr_assert_neq(sl_rows_read(&rows, s, (const int32_t[]){ 1 << 20 }, 1, x, n, 0), 0);
    cr_assert_not_null(strstr(sl_last_error(), PLE), "%s", sl_last_error());
    free(want); free(raw); free(x); free(mem);
    sl_stream_close(s);
}

/* The same rows through io_uring (where the kernel allows it) with O_DIRECT:
 * one batch of loader reads (counted in the stream's stats), each row equal
 * to read_row's; the fallback (pread, buffered) above. */
Test(forward_rows, batch_through_the_loader)
{
    sl_stream_config c;
    sl_stream_config_init(&c);
    c.mode = SL_MODE_STREAM;
    c.mem_budget = 16u << 20;
    sl_stream *s;
    cr_assert_eq(sl_stream_open(&s, GEMMA4, &c), 0, "%s", sl_stream_errmsg(NULL));
    const sl_gguf_tensor *t = sl_gguf_find_tensor(sl_stream_gguf(s), PLE);
    const int64_t n = (int64_t)t->ne[0];
    sl_rows rows;
    void *mem = rows_over(s, t, &rows);
    const int32_t ids[] = { 3, 300, 3, 2047, 11 };
    float *x = malloc(5 * (size_t)n * sizeof *x), *want = malloc((size_t)n * sizeof *want);
    uint8_t *raw = malloc(rows.row_bytes);
    sl_stream_stats a, b;
    cr_assert_eq(sl_stream_get_stats(s, &a), 0);
    cr_assert_eq(sl_rows_read(&rows, s, ids, 5, x, n, 0), 0, "%s", sl_last_error());
    cr_assert_eq(sl_stream_get_stats(s, &b), 0);
    cr_assert_eq(rows.bytes_read, 4 * rows.row_bytes);
    cr_assert_geq(b.bytes_read - a.bytes_read, 4 * rows.row_bytes, "the rows went through the loader");
    for (int32_t j = 0; j < 5; j++) {
        cr_assert_eq(sl_stream_read_row(s, PLE, (uint64_t)ids[j], raw, rows.row_bytes), 0);
        cr_assert_eq(sl_quant_dequantize_row((int)t->type, raw, want, n), 0);
        cr_assert_eq(memcmp(x + (int64_t)j * n, want, (size_t)n * sizeof *want), 0, "token %d", ids[j]);
    }
    free(raw); free(want); free(x); free(mem);
    sl_stream_close(s);
}
