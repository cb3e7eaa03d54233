/* Grouped-query causal attention over an F16 KV cache: argument checks, the
 * work split over (query row, kv head) items, the scratch layout, and the
 * scalar oracle item. The SIMD item is attention_driver.h, instantiated per
 * level in ops_<isa>.c; sl_kern_attention picks one by the table's isa.
 * Quantized caches (Q8_0/Q4_0 K or V) go to the items of attention_q.c
 * (oracle) and attention_q_driver.h, through the same split. */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "ops_internal.h"

#define ALIGN64(x) (((x) + 63) & ~(size_t)63)

static size_t ws_bytes(int head_dim, int32_t n_ctx)
{
    return 2 * ALIGN64((size_t)SL_ATTN_GMAX * (size_t)head_dim * sizeof(float)) +
           ALIGN64((size_t)SL_ATTN_GMAX * (size_t)n_ctx * sizeof(float)) +
           ALIGN64((size_t)SL_ATTN_GMAX * (size_t)head_dim * 2);  /* qq: F16 or Q8_0 rows */
}

size_t sl_kern_attn_scratch(int n_threads, int head_dim, int32_t n_ctx)
{
    if (n_threads < 1 || head_dim < 1 || n_ctx < 1)
        return 0;
    /* + 64: the caller's buffer need not be aligned */
    return (size_t)n_threads * ws_bytes(head_dim, n_ctx) + 64;
}

static void ws_carve(sl_attn_ws *ws, char *base, int head_dim, int32_t n_ctx)
{
    size_t qb = ALIGN64((size_t)SL_ATTN_GMAX * (size_t)head_dim * sizeof(float));
    ws->qf = (float *)base;
    ws->acc = (float *)(base + qb);
    ws->s = (float *)(base + 2 * qb);
    ws->qq = base + 2 * qb + ALIGN64((size_t)SL_ATTN_GMAX * (size_t)n_ctx * sizeof(float));
}

/* The oracle: straight loops, dots accumulated in order in f32, softmax with
 * libm expf and a double sum. */
static void attn_item_scalar(SL_ATTN_ITEM_ARGS)
{
    const int hd = a->head_dim;
    const int32_t first = sl_attn_first(a, row), L = a->pos0 + row + 1 - first;
    const float *q = a->q + (int64_t)row * a->q_stride + (int64_t)h0 * hd;
    const sl_f16 *kb = (const sl_f16 *)a->k + kvh * sl_attn_khs(a) + (int64_t)first * a->kv_stride;
    const sl_f16 *vb = (const sl_f16 *)a->v + kvh * sl_attn_khs(a) + (int64_t)first * a->kv_stride;
    float *out = a->out + (int64_t)row * a->out_stride + (int64_t)h0 * hd;

    for (int i = 0; i < ng * hd; i++)
        ws->qf[i] = sl_f16_to_f32(sl_f32_to_f16(q[i]));
    for (int g = 0; g < ng; g++) {
        const float *qf = ws->qf + g * hd;
        float *s = ws->s + (int64_t)g * L;
        float mx = -INFINITY;
        for (int32_t j = 0; j < L; j++) {
            const sl_f16 *kj = kb + (int64_t)j * a->kv_stride;
            float acc = 0.0f;
            for (int d = 0; d < hd; d++)
                acc += qf[d] * sl_f16_to_f32(kj[d]);
            s[j] = acc * a->scale;
            mx = s[j] > mx ? s[j] : mx;
        }
        sl_attn_softmax_ref(s, L, mx, 1, sl_attn_sink(a, h0 + g));
        float *acc = ws->acc;
        memset(acc, 0, (size_t)hd * sizeof(float));
        for (int32_t j = 0; j < L; j++) {
            const sl_f16 *vj = vb + (int64_t)j * a->kv_stride;
            for (int d = 0; d < hd; d++)
                acc[d] += s[j] * sl_f16_to_f32(vj[d]);
        }
        memcpy(out + g * hd, acc, (size_t)hd * sizeof(float));
    }
}

typedef struct {
    const sl_attn *a;
    sl_attn_item_fn fn;
    sl_vec_dot_fn kdot;
    char *scratch;
    size_t per_thread;
    int32_t n_ctx;
    int group, n_pack, per_row, n_items;
    atomic_int next;
} attn_job;

/* Items are handed out longest first (the last query rows see the most
 * positions) from a shared counter, so uneven causal lengths balance. */
static void attn_worker(void *ctx, int ith, int nth)
{
    attn_job *jb = ctx;
    const sl_attn *a = jb->a;
    sl_attn_ws ws;
    (void)nth;
    ws_carve(&ws, jb->scratch + (size_t)ith * jb->per_thread, a->head_dim, jb->n_ctx);
    ws.kdot = jb->kdot;
    for (;;) {
        int it = atomic_fetch_add_explicit(&jb->next, 1, memory_order_relaxed);
        if (it >= jb->n_items)
            break;
        int row = a->n_q - 1 - it / jb->per_row;
        int rest = it % jb->per_row;
        int kvh = rest / jb->n_pack, pk = rest % jb->n_pack;
        int h0 = kvh * jb->group + pk * SL_ATTN_GMAX;
        int ng = jb->group - pk * SL_ATTN_GMAX;
        jb->fn(a, row, kvh, h0, ng < SL_ATTN_GMAX ? ng : SL_ATTN_GMAX, &ws);
    }
}

static sl_attn_item_fn pick_item(int isa)
{
    switch (isa) {
#if defined(__x86_64__) || defined(__i386__)
    case SL_ISA_AVX2: return sl_attn_item_avx2;
    case SL_ISA_AVX512:
    case SL_ISA_AVX512VNNI:
    case SL_ISA_AVX512VBMI: return sl_attn_item_avx512;
#endif
#if defined(__aarch64__)
    case SL_ISA_NEON:
    case SL_ISA_DOTPROD: return sl_attn_item_neon;
#endif
    default: return attn_item_scalar;
    }
}

static sl_attn_item_fn pick_item_q(int isa)
{
    switch (isa) {
#if defined(__x86_64__) || defined(__i386__)
    case SL_ISA_AVX2: return sl_attn_item_q_avx2;
    case SL_ISA_AVX512:
    case SL_ISA_AVX512VNNI:
    case SL_ISA_AVX512VBMI: return sl_attn_item_q_avx512;
#endif
#if defined(__aarch64__)
    case SL_ISA_NEON:
    case SL_ISA_DOTPROD: return sl_attn_item_q_neon;
#endif
    default: return sl_attn_item_q_scalar;
    }
}

static int cache_type_ok(int t)
{
    t = sl_attn_type(t);
    return t == SL_GGML_F16 || t == SL_GGML_Q8_0 || t == SL_GGML_Q4_0;
}

/* p may be NULL: runs on the calling thread only (scratch for 1 thread).
 * Otherwise scratch must be sl_kern_attn_scratch(sl_pool_n_threads(p),
 * head_dim, n_ctx) bytes with n_ctx >= pos0 + n_q. */
int sl_kern_attention(const sl_kern *k, sl_pool *p, const sl_attn *a, void *scratch)
{
    if (!k || !a || !scratch || !a->q || !a->k || !a->v || !a->out)
        return -EINVAL;
    if (a->n_q < 0 || a->n_head < 1 || a->n_head_kv < 1 || a->head_dim < 1 ||
        a->pos0 < 0 || a->pos0 > INT32_MAX - a->n_q || a->n_head % a->n_head_kv != 0 ||
        a->q_stride < (int64_t)a->n_head * a->head_dim ||
        a->out_stride < (int64_t)a->n_head * a->head_dim ||
        a->kv_stride < a->head_dim || a->kv_head_stride < 0 || a->window < 0 ||
        (a->kv_head_stride == 0 && a->kv_stride < (int64_t)a->n_head_kv * a->head_dim) ||
        (a->kv_head_stride > 0 && a->kv_head_stride < a->head_dim))
        return -EINVAL;
    /* quantized rows: whole 32-value blocks, never straddling two heads */
    if (!cache_type_ok(a->type_k) || !cache_type_ok(a->type_v) ||
        (sl_attn_quantized(a) && (a->head_dim % SL_QK || a->kv_stride % SL_QK ||
                                  a->kv_head_stride % SL_QK ||
                                  !k->vec_dot[sl_attn_type(a->type_k)])))
        return -EINVAL;
    if (a->n_q == 0)
        return 0;
    attn_job jb;
    jb.a = a;
    jb.fn = sl_attn_quantized(a) ? pick_item_q(k->isa) : pick_item(k->isa);
    jb.kdot = k->vec_dot[sl_attn_type(a->type_k)];
    jb.n_ctx = a->pos0 + a->n_q;
    jb.per_thread = ws_bytes(a->head_dim, jb.n_ctx);
    jb.scratch = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    jb.group = a->n_head / a->n_head_kv;
    jb.n_pack = (jb.group + SL_ATTN_GMAX - 1) / SL_ATTN_GMAX;
    jb.per_row = a->n_head_kv * jb.n_pack;
    jb.n_items = a->n_q * jb.per_row;
    atomic_init(&jb.next, 0);
    if (p)
        sl_pool_run(p, attn_worker, &jb);
    else
        attn_worker(&jb, 0, 1);
    return 0;
}
