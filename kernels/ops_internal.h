/* Internal to kernels/: what the float-op files of every level share: the
 * table entries they fill, and the attention work item's interface
 * (attention.c splits the work and holds the scalar oracle;
 * attention_driver.h is the SIMD item, instantiated per level in
 * ops_<isa>.c). Rope's shared loop is rope.h's. */
#ifndef SL_OPS_INTERNAL_H
#define SL_OPS_INTERNAL_H

#include <math.h>

#include "kernels.h"

/* A level's float-op entries: its functions P_rmsnorm, P_rope, ... */
#define SL_OPS_FILL(k, P)                                                      \
    ((k)->rmsnorm = P##_rmsnorm, (k)->rope = P##_rope, (k)->silu_mul = P##_silu_mul, \
     (k)->add = P##_add, (k)->f32_to_f16 = P##_f32_to_f16, (k)->gelu_mul = P##_gelu_mul, \
     (k)->delta_rule = P##_delta_rule, (k)->delta_chunk = P##_delta_chunk, (k)->swiglu_oai = P##_swiglu_oai)

/* c[r][j] = (add ? c[r][j] : 0) + sum over kk of a[r][kk] b[kk][j], each sum
 * started from that first value and taken in kk order, a product then an
 * add per term (r < m, j < n, kk < k; rows ld* floats apart). A level's
 * version is bit for bit the scalar one. */
typedef void (*sl_gemm_f32_fn)(float *c, int64_t ldc, const float *a, int64_t lda, const float *b, int64_t ldb,
                               int32_t m, int32_t n, int32_t k, int add);
/* delta_chunk (kernels.h) written once over a level's gemm (delta_chunk.c). */
void sl_delta_chunk_run(sl_gemm_f32_fn gemm, float *S, const float *q, const float *k, const float *v, int64_t ld,
                        const float *beta, const float *gl, int64_t ldb, float scale, int32_t n, int32_t dk,
                        int32_t dv, float *o, int64_t ldo, float *ws);

/* Attention: one work item = query row `row`, heads h0..h0+ng-1, all sharing
 * kv head kvh (ng <= SL_ATTN_GMAX), so K/V rows are read once for the group.
 * ws: this thread's scratch: qf [GMAX][head_dim] (q rounded to f16, as f32),
 * s [GMAX][L] (scores, then probabilities rounded to f16, as f32),
 * acc [GMAX][head_dim]. */
#define SL_ATTN_GMAX 8
static inline int64_t sl_attn_khs(const sl_attn *a)
{
    return a->kv_head_stride ? a->kv_head_stride : a->head_dim;
}
/* First cache position query row `row` reads: 0, or the start of its
 * sliding window (keys j with pos - j < window). */
static inline int32_t sl_attn_first(const sl_attn *a, int row)
{
    const int32_t p = a->pos0 + row;
    return a->window > 0 && p >= a->window ? p + 1 - a->window : 0;
}
#define SL_ATTN_ITEM_ARGS const sl_attn *a, int row, int kvh, int h0, int ng, \
                               const struct sl_attn_ws *ws
/* Quantized caches also use qq [GMAX] rows of q in K's vec_dot type and kdot,
 * the level's vec_dot of the K type (set per call by attention.c). */
typedef struct sl_attn_ws { float *qf, *s, *acc; void *qq; sl_vec_dot_fn kdot; } sl_attn_ws;

/* Head h's sink logit, -inf when the call has none (its term is then 0). */
static inline float sl_attn_sink(const sl_attn *a, int h)
{
    return a->sinks ? a->sinks[h] : -INFINITY;
}

/* The oracles' softmax of s[0..L) whose maximum is mx: libm expf, a double
 * sum, plus the sink's term after the scores' (sink -inf: none); round_h:
 * probabilities rounded to f16 (the F16 cache path). */
static inline void sl_attn_softmax_ref(float *s, int32_t L, float mx, int round_h, float sink)
{
    double sum = 0.0;
    mx = sink > mx ? sink : mx;
    for (int32_t j = 0; j < L; j++) {
        s[j] = expf(s[j] - mx);
        sum += s[j];
    }
    sum += expf(sink - mx);
    float inv = (float)(1.0 / sum);
    for (int32_t j = 0; j < L; j++)
        s[j] = round_h ? sl_f16_to_f32(sl_f32_to_f16(s[j] * inv)) : s[j] * inv;
}

/* ---- quantized KV cache (type_k or type_v not F16) ---------------------- */
static inline int sl_attn_type(int t) { return t ? t : SL_GGML_F16; }
static inline int sl_attn_quantized(const sl_attn *a)
{
    return sl_attn_type(a->type_k) != SL_GGML_F16 || sl_attn_type(a->type_v) != SL_GGML_F16;
}
/* Bytes of the first n elements of a cache row of type t (n a multiple of its block). */
static inline int64_t sl_attn_bytes(int t, int64_t n)
{
    t = sl_attn_type(t);
    return n / (int64_t)sl_gguf_block_elems((uint32_t)t) * (int64_t)sl_gguf_block_bytes((uint32_t)t);
}
/* What a quantized item reads and writes for (row, kvh, h0): its positions
 * [first, first + L), V's rows (vbs bytes apart from vb) and the output. */
typedef struct sl_attn_q_span {
    int32_t first, L;
    int64_t vbs;
    const char *vb;
    float *out;
} sl_attn_q_span;
static inline sl_attn_q_span sl_attn_q_span_of(const sl_attn *a, int row, int kvh, int h0)
{
    sl_attn_q_span sp;
    const int tv = sl_attn_type(a->type_v);
    sp.first = sl_attn_first(a, row);
    sp.L = a->pos0 + row + 1 - sp.first;
    sp.vbs = sl_attn_bytes(tv, a->kv_stride);
    sp.vb = (const char *)a->v + sl_attn_bytes(tv, kvh * sl_attn_khs(a) + (int64_t)sp.first * a->kv_stride);
    sp.out = a->out + (int64_t)row * a->out_stride + (int64_t)h0 * a->head_dim;
    return sp;
}

/* Shared by the scalar oracle and the SIMD items (the dots are the level's
 * vec_dot, tested against the scalar one on their own): heads h0..h0+ng-1 of
 * query row `row` converted to K's vec_dot type (Q8_0, or F16 for an F16 K)
 * as llama.cpp's flash attention does, then s[g][j] = scale * dot(k_j, q_g)
 * over the L positions from `first`, each K row read once for the group. */
static inline void sl_attn_q_scores(SL_ATTN_ITEM_ARGS, int32_t first, int32_t L)
{
    const int hd = a->head_dim, tk = sl_attn_type(a->type_k);
    const int qt = sl_quant_vec_dot_type(tk);
    const int64_t qb = sl_attn_bytes(qt, hd), kbs = sl_attn_bytes(tk, a->kv_stride);
    const float *q = a->q + (int64_t)row * a->q_stride + (int64_t)h0 * hd;
    char *qq = ws->qq;
    for (int g = 0; g < ng; g++)
        sl_quant_quantize_row(qt, q + (int64_t)g * hd, qq + g * qb, hd);
    const char *kb = (const char *)a->k + sl_attn_bytes(tk, kvh * sl_attn_khs(a) + (int64_t)first * a->kv_stride);
    for (int32_t j = 0; j < L; j++)
        for (int g = 0; g < ng; g++) {
            float d;
            ws->kdot(hd, &d, kb + j * kbs, qq + g * qb);
            ws->s[(int64_t)g * L + j] = d * a->scale;
        }
}

/* GELU (tanh form) of an F16 value, rounded to F16: the entry of
 * llama.cpp's table at that value (gelu_table.c), computed. */
float sl_gelu_f16_entry(sl_f16 h);
/* The 65536 entries, indexed by the F16 bits (built once, thread-safe). */
const sl_f16 *sl_gelu_table(void);
typedef void (*sl_attn_item_fn)(SL_ATTN_ITEM_ARGS);
/* The quantized-cache items: scalar oracle in attention_q.c, SIMD in
 * attention_q_driver.h. */
void sl_attn_item_q_scalar(SL_ATTN_ITEM_ARGS);
#if defined(__x86_64__) || defined(__i386__)
void sl_attn_item_avx2(SL_ATTN_ITEM_ARGS);
void sl_attn_item_avx512(SL_ATTN_ITEM_ARGS);
void sl_attn_item_q_avx2(SL_ATTN_ITEM_ARGS);
void sl_attn_item_q_avx512(SL_ATTN_ITEM_ARGS);
#endif
#if defined(__aarch64__)
void sl_attn_item_neon(SL_ATTN_ITEM_ARGS);
void sl_attn_item_q_neon(SL_ATTN_ITEM_ARGS);
#endif

#endif
