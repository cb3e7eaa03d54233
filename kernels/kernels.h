/* Quantized dot/matvec/matmul, attention and the float ops of the forward
 * pass, in scalar C (the oracle) and hand-written SIMD (AVX2+FMA, AVX-512
 * [+VNNI [+VBMI, GFNI]], NEON [+dotprod]), behind one table of entry points per ISA level
 * (sl_kern). Each op's driver is written once and instantiated per level in
 * a file named for it (ops_avx2.c, dot_avx512vnni.c, gemm_dotprod.c, ...),
 * built with the level's -m flags over that level's primitives; the level
 * is picked at run time from cpuid / AT_HWCAP, and SLUICE_ISA=
 * scalar|avx2|avx512|avx512vnni|avx512vbmi|neon|dotprod forces one (tests
 * cover all).
 * Depends on quant/ only. Failures return negative errno values (== SL_E*). */
#ifndef SL_KERNELS_H
#define SL_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../quant/quant.h"

enum sl_isa {
    SL_ISA_SCALAR = 0, SL_ISA_AVX2, SL_ISA_AVX512, SL_ISA_AVX512VNNI,
    SL_ISA_AVX512VBMI,   /* avx512vnni + VBMI + GFNI (Ice Lake, Zen 4 on) */
    SL_ISA_NEON, SL_ISA_DOTPROD, SL_ISA_COUNT
};

/* ---- thread pool: persistent workers, spin briefly then sleep ---------- */
typedef struct sl_pool sl_pool;
/* fn runs on every thread (ith = 0..nth-1; the caller is ith 0). */
typedef void (*sl_pool_fn)(void *ctx, int ith, int nth);
int  sl_pool_create(sl_pool **out, int n_threads);   /* n_threads >= 1, incl. caller */
void sl_pool_destroy(sl_pool *p);
int  sl_pool_n_threads(const sl_pool *p);
void sl_pool_run(sl_pool *p, sl_pool_fn fn, void *ctx);  /* returns when all are done */
/* Profiling: with acc != NULL, thread ith adds the ns it spends inside each
 * job to acc[ith * stride + tag] (tag = the last sl_pool_set_tag, 0..stride-1);
 * acc holds n_threads * stride entries, owned by the caller. NULL: off.
 * Set both between jobs, from the thread that calls sl_pool_run. */
void sl_pool_set_profile(sl_pool *p, uint64_t *acc, int stride);
void sl_pool_set_tag(sl_pool *p, int tag);

/* s = dot(n elements of weight row x, activation row y in vec_dot_type). */
typedef void (*sl_vec_dot_fn)(int64_t n, float *s, const void *x, const void *y);

/* vec_dot that also prefetches pf[0, pfn) into L2, a few lines per block
 * (decode: the next rows while this one computes); bit-identical to vec_dot. */
typedef void (*sl_vec_dot_pf_fn)(int64_t n, float *s, const void *x, const void *y,
                                 const void *pf, size_t pfn);

/* Tile of dots sharing loads: s[i*lds + j] = dot(x row j, y row i) for
 * j < nx, i < ny (1 <= nx, ny <= SL_GEMM_MAX); x rows bx bytes apart, y rows
 * by bytes apart. Each result is bit-identical to vec_dot on that pair. */
#define SL_GEMM_MAX 4
typedef void (*sl_gemm_fn)(int64_t n, const void *x, size_t bx, int nx,
                           const void *y, size_t by, int ny, float *s, int64_t lds);
/* Few-row tiles (batched decode, speculative verification: 2..9 rows below
 * the panel): the same contract with up to SL_GEMM_WIDE activation rows, so a
 * weight block is unpacked once for all of them (bit-identical to vec_dot). */
#define SL_GEMM_WIDE 8

/* Matrices in the rows8 layout (type | SL_GGML_ROWS8, quant/quant.h):
 * Y[j ldy + 8 g + i] = dot(row 8 g + i, act row j) for the groups g in
 * [g0, g1), i < 8, j < ny (1..SL_ROWS8_NY), act rows arb bytes apart. Each
 * row's dot is one FMA chain over its blocks in order (the block's exact
 * integer sum, converted, times d_x d_y), so a result's bits depend neither
 * on ny, the groups taken nor the level (the scalar kernel is the oracle). */
#define SL_ROWS8_NY 4
typedef void (*sl_rows8_fn)(int64_t n, const void *W, int64_t g0, int64_t g1, const void *act, size_t arb,
                            int ny, float *Y, int64_t ldy);

typedef struct sl_kern {
    int isa;
    const char *name;
    sl_vec_dot_fn vec_dot[SL_GGML_TYPE_COUNT];          /* NULL: type not supported */
    sl_vec_dot_pf_fn vec_dot_pf[SL_GGML_TYPE_COUNT];    /* NULL: decode prefetches per row; a
                                                           fill that sets vec_dot[t] sets or
                                                           clears it (test_kern_dot checks) */
    size_t mv_burst_max;   /* decode: a row of more bytes has the next row prefetched from
                              inside its dot where vec_dot_pf exists, a shorter one is one
                              burst of prefetches (0: every row spread; SLUICE_MV_BURST) */
    sl_gemm_fn gemm[SL_GGML_TYPE_COUNT];                /* NULL: matvec/matmul loop vec_dot */
    sl_gemm_fn gemm_wide[SL_GGML_TYPE_COUNT];           /* ny <= SL_GEMM_WIDE; NULL: gemm */
    const struct sl_panel *panel[SL_GGML_TYPE_COUNT];   /* internal prefill GEMM; NULL: gemm tiles */
    sl_rows8_fn rows8[SL_GGML_TYPE_COUNT];              /* every level: the scalar one at least */
    bool rows8_fast[SL_GGML_TYPE_COUNT];                /* its rows8 beats its plain rows: worth
                                                           packing at load (SLUICE_ROWS8=0: never) */
    const struct sl_panel *wpanel[SL_GGML_TYPE_COUNT];  /* internal few-row panel, bit for bit
                                                           vec_dot's; NULL: gemm_wide */
    /* y = x / sqrt(mean(x^2) + eps) * w */
    void (*rmsnorm)(float *y, const float *x, const float *w, int64_t n, float eps);
    /* In place over n_head heads of head_dim: rotate the first n_rot dims of
     * each head by angle pos * inv_freq[i] (i = 0..n_rot/2-1); neox: pairs
     * (i, i + n_rot/2), else (2i, 2i+1). */
    void (*rope)(float *x, int n_head, int head_dim, int n_rot, int32_t pos,
                 const float *inv_freq, int neox);
    void (*silu_mul)(float *y, const float *g, const float *u, int64_t n); /* y=silu(g)*u */
    /* gpt-oss's clamped SwiGLU: x = min(g, limit), v = clamp(u, -limit, limit),
     * y = x / (1 + exp(-alpha x)) * (v + 1), through the level's exp */
    void (*swiglu_oai)(float *y, const float *g, const float *u, int64_t n, float alpha, float limit);
    void (*add)(float *y, const float *a, const float *b, int64_t n);
    void (*f32_to_f16)(sl_f16 *y, const float *x, int64_t n);
    /* y = gelu(g) * u with llama.cpp's CPU GELU: the tanh form read from an
     * F16 table (g rounded to F16, entry rounded to F16); g >= 10 gives g,
     * g <= -10 gives 0 (gemma3's GeGLU) */
    void (*gelu_mul)(float *y, const float *g, const float *u, int64_t n);
    /* Gated DeltaNet, one v head and token: S (dk rows of dv) *= decay;
     * m = S^T k; m = (v - m) * beta; S += k m^T; o = S^T (q * scale); m: dv
     * floats of scratch. Elementwise over the dv lanes: bit for bit alike at
     * every level. */
    void (*delta_rule)(float *S, const float *q, const float *k, const float *v, float beta, float decay,
                       float scale, int32_t dk, int32_t dv, float *o, float *m);
    /* The same recurrence over n (1..SL_DELTA_CHUNK) tokens of one v head at
     * once, in the chunkwise (WY) form: the tokens' corrections solve one
     * unit lower-triangular system, the state is read twice and updated
     * once. Token t's q, k, v at q/k/v + t ld (q, k: dk values; v: dv), its
     * beta and log decay (decay = e^gl) at beta/gl + t ldb; its output to
     * o + t ldo; ws: sl_kern_delta_chunk_ws floats. Equals delta_rule's
     * result to rounding (a different order of the same sums); bit for bit
     * alike at every level (the products are one level GEMM whose sums run
     * in the scalar order). */
    void (*delta_chunk)(float *S, const float *q, const float *k, const float *v, int64_t ld, const float *beta,
                        const float *gl, int64_t ldb, float scale, int32_t n, int32_t dk, int32_t dv, float *o,
                        int64_t ldo, float *ws);
    /* f32 -> Q8_K blocks (n a multiple of 256), bytes equal to
     * sl_quant_row_q8_k's; NULL: that scalar function */
    void (*quantize_q8_k)(const float *x, void *y, int64_t n);
} sl_kern;

/* Tokens of one delta_chunk call at most, and the scratch floats it needs. */
#define SL_DELTA_CHUNK 64
int64_t sl_kern_delta_chunk_ws(int32_t dk, int32_t dv);

/* Best level for this CPU, or the one SLUICE_ISA names (NULL + errno-style
 * failure if SLUICE_ISA names one this CPU/build lacks: see sl_kern_best_checked). */
const sl_kern *sl_kern_best(void);
int sl_kern_best_checked(const sl_kern **out);
/* A specific level; NULL if not compiled in or the CPU lacks it. */
const sl_kern *sl_kern_for(int isa);
const char *sl_isa_name(int isa);

/* ---- matvec / matmul ------------------------------------------------- */
/* Activation buffer size for n_rows rows of `cols` elements, for weight type wtype. */
size_t sl_kern_act_bytes(int wtype, int64_t cols, int64_t n_rows);
/* Quantize n_rows float rows (stride cols) into wtype's vec_dot_type. */
void sl_kern_quantize_act(const sl_kern *k, int wtype, const float *x, int64_t cols,
                          int64_t n_rows, void *act);
/* y[r] = dot(W row r, act) for r in [0, rows); W rows are sl_gguf_row_bytes(wtype, cols).
 * Split over the pool's threads by row ranges. */
int sl_kern_matvec(const sl_kern *k, sl_pool *p, int wtype, const void *W, int64_t rows,
                   int64_t cols, const void *act, float *y);
/* Several matvecs in one pool job (decode: q/k/v, gate/up read the same
 * input): part i computes y[r] = dot(W row r, act) like sl_kern_matvec, bit
 * for bit. The threads split the parts' weight bytes evenly (not rows: parts
 * may mix types of different row sizes), each streaming its contiguous runs.
 * At most SL_MV_MAX_PARTS parts (MoE decode: 8 experts' gate and up). */
#define SL_MV_MAX_PARTS 16
typedef struct sl_mv_part {
    int wtype;
    const void *W;
    int64_t rows, cols;
    const void *act;         /* in wtype's vec_dot_type */
    float *y;
} sl_mv_part;
int sl_kern_matvec_multi(const sl_kern *k, sl_pool *p, const sl_mv_part *parts, int n_parts);
/* Y[i][r] = dot(W row r, act row i) for i < n_act; Y row stride = ldy floats.
 * These three also take a rows8 wtype (type | SL_GGML_ROWS8, rows a multiple
 * of 8) where the level's rows8[type] exists: every row count then runs the
 * rows8 kernel, so its results are bit for bit alike for 1..n_act rows.
 * Tiled so each weight block is loaded once per tile of activation rows.
 * From 10 rows on levels with a panel kernel (avx2, avx512, avx512vnni,
 * dotprod) the activations are first transposed into a buffer of about
 * n_act x cols bytes (plus per-thread tiles) that is kept per calling thread,
 * grown on demand and freed when that thread exits; if it cannot be
 * allocated the per-pair tiles run instead. Panel results equal vec_dot's
 * within float rounding (same integer sums, another summation order).
 * Below 10 rows every result is vec_dot's bit for bit; types with a
 * few-row panel (avx512vnni: q4_K, q6_K, 3..9 rows) keep such a buffer too. */
int sl_kern_matmul(const sl_kern *k, sl_pool *p, int wtype, const void *W, int64_t rows,
                   int64_t cols, const void *act, int64_t n_act, float *Y, int64_t ldy);
/* Upper bound of the per-thread buffer sl_kern_matmul keeps for n_act rows of
 * at most `cols` elements on any weight type, with n_threads pool threads
 * (for memory budgets; 0 where no panel kernel runs). */
size_t sl_kern_matmul_scratch_bound(const sl_kern *k, int64_t cols, int64_t n_act, int n_threads);

/* ---- attention over an F16, Q8_0 or Q4_0 KV cache -------------------- */
/* Query row i (i < n_q) sits at position pos0 + i and attends to cache
 * positions 0..pos0+i (causal), or only the last `window` of them. q: [n_q][n_head*head_dim] f32 (stride q_stride);
 * k, v: [position][n_head_kv*head_dim] f16 (stride kv_stride elements), or
 * any layout where kv head g of position j starts at j*kv_stride +
 * g*kv_head_stride (kv_head_stride 0 means head_dim, the layout above; a
 * head-major cache [n_head_kv][n_ctx][head_dim] has kv_stride = head_dim and
 * kv_head_stride = n_ctx*head_dim and reads each head's rows contiguously,
 * about 2.5x faster from DRAM at long contexts than the interleaved layout);
 * out: [n_q][n_head*head_dim] (stride out_stride). Head h uses kv head
 * h / (n_head / n_head_kv). Numerics as llama.cpp: q rounded to f16 for q.k,
 * softmax in f32 after scale, probabilities rounded to f16 for p.v.
 * scratch: at least sl_kern_attn_scratch(n_threads, head_dim, n_ctx) bytes
 * (any alignment) with n_threads = sl_pool_n_threads(p) (1 if p is NULL)
 * and n_ctx >= pos0 + n_q; reused across calls, never allocated per call.
 * p == NULL runs single-threaded on the caller. Work is split over (query
 * row, kv head) items, longest first; returns 0 or -EINVAL (bad shape). */
typedef struct sl_attn {
    const float *q; int64_t q_stride;
    const void *k, *v; int64_t kv_stride;   /* elements of type_k / type_v */
    float *out; int64_t out_stride;
    int n_q, n_head, n_head_kv, head_dim;
    int32_t pos0;
    float scale;
    int64_t kv_head_stride;     /* 0: head_dim (kv heads interleaved per position) */
    int32_t window;             /* > 0: sliding window, row i reads only positions
                                 * pos0+i-window+1 .. pos0+i (older ones are not read) */
    /* Cache types: 0 or SL_GGML_F16 (F16), SL_GGML_Q8_0, SL_GGML_Q4_0 (llama.cpp's
     * blocks of 32: head_dim, kv_stride and kv_head_stride multiples of 32,
     * offsets still in elements). With either quantized, the numerics are
     * llama.cpp's flash-attention path: q converted to the K type's vec_dot
     * type (Q8_0, or F16 for an F16 K) and dotted with the level's vec_dot,
     * softmax in f32 (probabilities not rounded), V dequantized and
     * accumulated in f32. */
    int type_k, type_v;
    /* NULL, or one logit per query head (gpt-oss's learned sinks): an extra
     * term e^(sink - m) in the softmax denominator only, m the maximum over
     * the scores and the sink; the sink has no value row. */
    const float *sinks;
} sl_attn;
size_t sl_kern_attn_scratch(int n_threads, int head_dim, int32_t n_ctx);
int sl_kern_attention(const sl_kern *k, sl_pool *p, const sl_attn *a, void *scratch);

#endif
