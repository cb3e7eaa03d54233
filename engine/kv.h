/* KV cache: per layer, K and V each head-major [n_head_kv][n_ctx][head_dim]
 * (sl_attn with kv_stride = head_dim, kv_head_stride = n_ctx * head_dim), sized
 * once for n_ctx positions. Head-major keeps each kv head's rows contiguous, so
 * decode attention streams them from DRAM instead of striding over the other
 * heads (perf/bin_attnbench.c: ~2.3x faster per layer at 2k context).
 * K and V each have a type (llama.cpp's --cache-type-k/-v): F16 (default),
 * Q8_0 or Q4_0; a quantized row is head_dim / 32 of llama.cpp's blocks
 * (quant/quant.h), written by sl_kv_store and read in place by the attention
 * kernels; the quantized types need head_dim % 32 == 0 (as llama.cpp). */
#ifndef SL_ENGINE_KV_H
#define SL_ENGINE_KV_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

#include "../quant/quant.h"
#include "../kernels/kernels.h"

/* The V type of a cache that stores no V rows: multi-head latent attention
 * reads its values from the K rows ([c, k_rope]: V is c, their first part). */
#define SL_KV_NONE (-1)

typedef struct sl_kv {
    void *k, *v;            /* [n_layer][n_head_kv][n_ctx] rows of head_dim values each */
    int32_t n_layer, n_ctx, n_head_kv, head_dim;
    int32_t kv_dim;         /* n_head_kv * head_dim */
    int32_t n_past;         /* positions filled */
    int type_k, type_v;     /* SL_GGML_F16, SL_GGML_Q8_0, SL_GGML_Q4_0; V also SL_KV_NONE */
    size_t row_k, row_v;    /* bytes of one head's row (head_dim values) */
    int32_t rot_k, rot_v;   /* Walsh-Hadamard block of the stored K / V basis, 0 = none */
    /* Per layer (arrays of n_layer): rows per kv head (n_ctx, or a sliding-window
     * layer's ring: sl_kv_ring_cap), the position held in slot 0 (0 unless a
     * ring moved on), the first row of the layer. A ring holds positions
     * [base, n_past) only: its memory is bounded by the window. */
    int32_t *cap, *base;
    size_t *row0;
    /* Recurrent state (kv_rec.c; rec NULL: the model has no recurrent layer):
     * per recurrent layer rec_len F32 values at rec0[l], its conv rows then
     * its delta state; it reflects positions [0, rec_pos) (-1: not valid). */
    float *rec;
    size_t *rec0;           /* [n_layer]; SIZE_MAX for a layer without state */
    int64_t rec_conv, rec_len;
    int32_t rec_pos;
} sl_kv;

/* llama.cpp (2026) stores a quantized K or V in a rotated basis, so the
 * quantization error spreads over the head: with a quantized K and
 * head_dim % 64 == 0, q and k (after rope) are multiplied by the orthonormal
 * Walsh-Hadamard matrix H of the largest power of two >= 64 dividing head_dim
 * (q.k is unchanged: H is orthonormal and symmetric); with a quantized V
 * and head_dim % 64 == 0, v by H_64 and the attention output by H_64 again
 * (H^2 = I). The block size used for type t, 0 for none. */
int32_t sl_kv_rot_size(int t, int32_t head_dim, int is_v);
/* x[0..n) in blocks of nrot (a power of two dividing n): each block times
 * H_nrot, computed as llama.cpp's CPU fast transform (scale by 1/sqrt(nrot)
 * first, then butterflies of span 1, 2, 4, ...: the same f32 operations). */
void sl_kv_rotate(float *x, int64_t n, int32_t nrot);

/* 0 if t can be a cache type for rows of head_dim values, else SL_EINVAL
 * with a message naming the type (what = "K" or "V"; "V" may be SL_KV_NONE). */
int sl_kv_type_check(int t, int32_t head_dim, const char *what);
/* Bytes of K plus V for one position of one layer (all kv heads): the
 * per-position cost `sluice plan` and --stats print. 0 for a bad type. */
uint64_t sl_kv_pos_bytes(int32_t kv_dim, int type_k, int type_v);
/* Bytes init will allocate (for the planner's reserve); kv_dim = n_head_kv * head_dim. */
uint64_t sl_kv_bytes(int32_t n_layer, int32_t n_ctx, int32_t kv_dim, int type_k, int type_v);
int  sl_kv_init(sl_kv *kv, int32_t n_layer, int32_t n_ctx, int32_t n_head_kv, int32_t head_dim,
                int type_k, int type_v);
/* Rows a sliding-window layer (window > 0) keeps per kv head when prompt
 * chunks have at most n_batch tokens: the window's older positions plus a
 * chunk, never more than n_ctx; n_ctx for a full layer. */
int32_t sl_kv_ring_cap(int32_t n_ctx, int32_t window, int32_t n_batch);
/* As sl_kv_init with cap[l] rows per kv head in layer l (cap NULL: n_ctx;
 * each 0..n_ctx; 0: the layer is not held here, a pipeline stage's cache). */
int  sl_kv_init_layers(sl_kv *kv, int32_t n_layer, int32_t n_ctx, int32_t n_head_kv, int32_t head_dim,
                       int type_k, int type_v, const int32_t *cap);
/* Bytes sl_kv_init_layers allocates (saturating, 0 for bad input). */
uint64_t sl_kv_bytes_layers(int32_t n_layer, const int32_t *cap, int32_t kv_dim, int type_k, int type_v);
/* Before writing positions [pos0, pos0 + n) of a ring layer: if they do not
 * fit, the window's last window-1 positions before pos0 move to slot 0
 * (the rest is dropped) and base advances. SL_EINVAL if even then they do not
 * fit (n larger than the ring was sized for). No-op for a full layer. */
int sl_kv_ring_advance(sl_kv *kv, int32_t layer, int32_t pos0, int32_t n, int32_t window);
void sl_kv_free(sl_kv *kv);
/* Gives the OS back (madvise MADV_DONTNEED) every whole page of the rows at
 * positions >= n_past in each layer's per-head runs: the memory-pressure
 * window (engine/session_shift.c). A released page reads as zeros and is
 * faulted in again when a later position is stored there. Returns the bytes
 * of those pages that were resident (mincore), 0 where the OS refuses. */
uint64_t sl_kv_release(const sl_kv *kv);
/* Empties the cache: n_past = 0, every ring back to slot 0 = position 0. */
void sl_kv_clear(sl_kv *kv);

/* Index of kv head `head`'s row at position `pos` in `layer`; the rows of one
 * head follow each other. */
static inline size_t sl_kv_row(const sl_kv *kv, int32_t layer, int32_t head, int32_t pos)
{
    return kv->row0[layer] + (size_t)head * (size_t)kv->cap[layer] + (size_t)(pos - kv->base[layer]);
}
/* The same row's start in elements (what sl_attn's strides count). */
static inline size_t sl_kv_off(const sl_kv *kv, int32_t layer, int32_t head, int32_t pos)
{
    return sl_kv_row(kv, layer, head, pos) * (size_t)kv->head_dim;
}
static inline void *sl_kv_k(const sl_kv *kv, int32_t layer, int32_t head, int32_t pos)
{
    return (char *)kv->k + sl_kv_row(kv, layer, head, pos) * kv->row_k;
}
static inline void *sl_kv_v(const sl_kv *kv, int32_t layer, int32_t head, int32_t pos)
{
    return (char *)kv->v + sl_kv_row(kv, layer, head, pos) * kv->row_v;
}
/* Elements between the same position of consecutive kv heads of a layer
 * (sl_attn.kv_head_stride). */
static inline int64_t sl_kv_head_stride(const sl_kv *kv, int32_t layer)
{
    return (int64_t)kv->cap[layer] * kv->head_dim;
}

/* Writes one position's K and V rows of one layer (n_head_kv * head_dim f32
 * values each, heads consecutive) in the cache types: F16 by the level's
 * f32_to_f16, Q8_0 / Q4_0 by quant/'s quantizers (llama.cpp's rules); no V
 * (vrow unused) when the V type is SL_KV_NONE. */
void sl_kv_store(const sl_kv *kv, const sl_kern *k, int32_t layer, int32_t pos, const float *krow,
                 const float *vrow);
/* One row of n values in cache type t (the rule sl_kv_store applies). */
void sl_kv_store_row(int t, const sl_kern *k, void *dst, const float *src, int32_t n);

/* ---- recurrent state (kv_rec.c) -------------------------------------------
 * A linear-recurrent layer (the Gated DeltaNet) keeps a fixed-size state per
 * sequence instead of KV rows: conv_len values of past conv input, then
 * state_len values of the recurrence, F32. The state sums every position
 * before it and cannot drop or re-enter one: it is valid only when rec_pos
 * equals n_past (a sequence rolled back by moving n_past is refused by the
 * forward pass, never silently continued), and zero for n_past 0. */
/* Bytes of the state of n_rec layers (saturating). */
uint64_t sl_kv_rec_bytes(int32_t n_rec, int64_t conv_len, int64_t state_len);
/* Allocates the state of the layers with rec_layer[l] (zeroed, rec_pos 0);
 * none: no-op. After sl_kv_init_layers; freed by sl_kv_free. */
int sl_kv_rec_init(sl_kv *kv, const bool *rec_layer, int64_t conv_len, int64_t state_len);
/* Layer l keeps a recurrent state (and no KV rows: its cap is 0). */
static inline bool sl_kv_rec_layer(const sl_kv *kv, int32_t l) { return kv->rec && kv->rec0[l] != SIZE_MAX; }
static inline float *sl_kv_rec_conv(const sl_kv *kv, int32_t layer) { return kv->rec + kv->rec0[layer]; }
static inline float *sl_kv_rec_state(const sl_kv *kv, int32_t layer)
{
    return kv->rec + kv->rec0[layer] + kv->rec_conv;
}
/* Before a pass over positions from n_past: zeroes the state at n_past 0,
 * else SL_EINVAL unless it reflects n_past; then marks it in flux (a
 * failed pass leaves it invalid). No-op without state. */
int sl_kv_rec_begin(sl_kv *kv);
/* After the pass moved n_past: the state reflects it. */
static inline void sl_kv_rec_end(sl_kv *kv) { if (kv->rec) kv->rec_pos = kv->n_past; }
/* Bytes of the whole state (0 without), and a copy of it out / in (in:
 * rec_pos = pos; the caller sets n_past to it). */
uint64_t sl_kv_rec_total(const sl_kv *kv);
void sl_kv_rec_read(const sl_kv *kv, void *dst);
void sl_kv_rec_write(sl_kv *kv, const void *src, int32_t pos);

/* ---- context shift (kv_shift.c) -------------------------------------------
 * Drops positions [n_keep, n_keep + n_discard) of every layer, moves the
 * later ones down by n_discard and rotates their K by -n_discard with the
 * layer's rope table (layer_swa(ctx, l) true: inv_freq_swa), so the rows
 * equal those computed at the new positions up to the K type's rounding;
 * n_past -= n_discard. row: scratch of head_dim floats. SL_EINVAL for a
 * range outside n_past. */
typedef struct sl_kv_rope {
    int32_t n_rot;
    bool neox;
    const float *inv_freq, *inv_freq_swa;     /* [n_rot / 2] */
    bool (*layer_swa)(const void *ctx, int32_t layer);   /* NULL: no sliding-window layers */
    const void *ctx;
} sl_kv_rope;
int sl_kv_shift(sl_kv *kv, const sl_kern *k, int32_t n_keep, int32_t n_discard, const sl_kv_rope *r,
                float *row);

/* ---- cells, for serializers (the prompt cache) ---------------------------
 * A range of positions [p0, p0 + n) as bytes in one fixed order: for each
 * layer, K then V, for each kv head the n rows (row_k / row_v bytes each,
 * in the cache's own type: nothing is converted). sl_kv_cells_bytes(kv, n)
 * = n * n_layer * sl_kv_pos_bytes(kv_dim, type_k, type_v). read needs
 * p0 + n <= n_past; write needs p0 + n <= n_ctx and does not move n_past
 * (the caller sets it). Every layer must hold the range: a ring layer
 * (gemma3's sliding-window layers) holds only [base, base + cap), so a
 * range older than its window fails. SL_EINVAL for a range outside. */
uint64_t sl_kv_cells_bytes(const sl_kv *kv, int32_t n);
int sl_kv_cells_read(const sl_kv *kv, int32_t p0, int32_t n, void *dst);
int sl_kv_cells_write(sl_kv *kv, int32_t p0, int32_t n, const void *src);

#endif
