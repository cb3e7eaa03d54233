/* The Gated DeltaNet block (SL_ATTN_RECURRENT), as llama.cpp 2026-08 computes
 * it (../shared/golden/README.md, synth3 "qwen35moe"): per token,
 * qkv = W_qkv h, z = W_gate h, beta = sigmoid(W_beta h), decay
 * g = softplus(W_alpha h + ssm_dt) * ssm_a; a causal depthwise conv over the
 * last conv taps of qkv, then SiLU; q and k L2-normalized per head; v head h
 * reads q/k head h mod n_k_heads; per v head the state S (dk x dv) is
 * decayed by e^g, then corrected by the delta rule and read by q; the output
 * is RMS-normed per head (ssm_norm), gated by SiLU(z) and projected by
 * ssm_out. The conv rows and S live in the sequence (kv.h, recurrent state);
 * tokens are applied in order, in F32, as llama.cpp does (the state step is
 * the kernels' delta_rule). A pass of SL_GDN_CHUNK_MIN rows or more of a
 * sequence runs it chunkwise instead (delta_chunk: SL_DELTA_CHUNK tokens
 * per step, counted from the pass's first row), heads in parallel; the
 * result depends on where passes start, so prompts are cut at the same
 * places whenever a computed prefix must be reproduced (session.c). */
#include "forward_gdn.h"

#include <math.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"
#include "forward_ops.h"

typedef struct gdn_w {
    const sl_stream_tensor *conv, *dt, *a, *norm, *out;   /* the projections: forward_gdn_proj.c */
} gdn_w;

static int gdn_weights(const sl_stream_view *v, int32_t l, gdn_w *w)
{
    int rc;
    if ((rc = sl_forward_find(v, l, "ssm_conv1d.weight", &w->conv)) ||
        (rc = sl_forward_find(v, l, "ssm_dt.bias", &w->dt)) ||
        (rc = sl_forward_find(v, l, "ssm_a", &w->a)) ||
        (rc = sl_forward_find(v, l, "ssm_norm.weight", &w->norm)) ||
        (rc = sl_forward_find(v, l, "ssm_out.weight", &w->out)))
        return rc;
    return 0;
}

uint64_t sl_forward_gdn_row_floats(const sl_model_desc *d)
{
    if (!d->ssm_nv) return 0;
    const uint64_t ch = 2 * (uint64_t)d->ssm_nk * (uint64_t)d->ssm_dk + (uint64_t)d->ssm_nv * (uint64_t)d->ssm_dv;
    return ch + 2 * (uint64_t)d->ssm_nv * (uint64_t)d->ssm_dv + 2 * (uint64_t)d->ssm_nv   /* qkv, z, o, beta, g */
         + sl_forward_gdn_proj_floats(d);
}

uint64_t sl_forward_gdn_ws_bytes(const sl_model_desc *d, int n_threads)
{
    if (!d->ssm_nv) return 0;
    const uint64_t per = ((uint64_t)sl_kern_delta_chunk_ws(d->ssm_dk, d->ssm_dv) * 4 + 63) & ~(uint64_t)63;
    return per * (uint64_t)(n_threads > 0 ? n_threads : 1);
}

int64_t sl_forward_gdn_conv_len(const sl_model_desc *d)
{
    const int64_t ch = 2 * (int64_t)d->ssm_nk * d->ssm_dk + (int64_t)d->ssm_nv * d->ssm_dv;
    return (int64_t)(d->ssm_conv - 1) * ch;
}

int64_t sl_forward_gdn_state_len(const sl_model_desc *d)
{
    return (int64_t)d->ssm_nv * d->ssm_dk * d->ssm_dv;
}

static int32_t n_recurrent(const sl_model_desc *d)
{
    int32_t n = 0;
    for (int32_t l = 0; l < d->n_layer; l++) n += sl_model_layer(d, l)->attn.kind == SL_ATTN_RECURRENT;
    return n;
}

uint64_t sl_forward_gdn_state_bytes(const sl_model_desc *d)
{
    return sl_kv_rec_bytes(n_recurrent(d), sl_forward_gdn_conv_len(d), sl_forward_gdn_state_len(d));
}

int sl_forward_gdn_state_init(const sl_model_desc *d, sl_kv *kv)
{
    if (!n_recurrent(d)) return 0;
    bool rec[SL_MAX_LAYERS];
    for (int32_t l = 0; l < d->n_layer; l++) rec[l] = sl_model_layer(d, l)->attn.kind == SL_ATTN_RECURRENT;
    return sl_kv_rec_init(kv, rec, sl_forward_gdn_conv_len(d), sl_forward_gdn_state_len(d));
}

static float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
static float siluf(float x) { return x / (1.0f + expf(-x)); }
static float softplusf(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); }

/* x / max(||x||, eps), the sum of squares in double (ggml_l2_norm). */
static void l2norm(float *x, int32_t n, float eps)
{
    double s = 0;
    for (int32_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    const float scale = 1.0f / fmaxf(sqrtf((float)s), eps);
    for (int32_t i = 0; i < n; i++) x[i] *= scale;
}

/* The causal conv of one token's row x[ch] (in place: y_c reads only
 * channel c) over the K - 1 stored rows cs[K-1][ch], which then shift by
 * this row; SiLU after. w: [ch][K], tap K-1 the current token. */
static void conv_row(float *x, float *cs, const float *w, int32_t ch, int32_t K)
{
    for (int32_t c = 0; c < ch; c++) {
        const float *wc = w + (int64_t)c * K;
        float s = 0;
        for (int32_t j = 0; j < K - 1; j++) s += wc[j] * cs[(int64_t)j * ch + c];
        s += wc[K - 1] * x[c];
        for (int32_t j = 0; j + 1 < K - 1; j++) cs[(int64_t)j * ch + c] = cs[(int64_t)(j + 1) * ch + c];
        if (K > 1) cs[(int64_t)(K - 2) * ch + c] = x[c];
        x[c] = siluf(s);
    }
}

/* The delta rule of one sequence's rows, a pool job: v heads split over
 * the threads, each head's tokens in order (its state, dk x dv, stays in
 * cache for the whole chunk instead of all heads' states per token). */
typedef struct gdn_job {
    const sl_model_desc *d;
    const sl_kern *k;
    float *S;                  /* the sequence's states, [nv][dk][dv] */
    const float *qkv, *bg;     /* rows: conv output (q | k | v, normed); beta | g */
    float *o;                  /* rows: [nv][dv] */
    float *ws;                 /* per thread sl_kern_delta_chunk_ws floats (f->gdn_ws) */
    int64_t ws_len;
    int32_t n, chunk_min;
} gdn_job;

static void gdn_heads(void *ctx, int ith, int nth)
{
    const gdn_job *j = ctx;
    const sl_model_desc *d = j->d;
    const int32_t nk = d->ssm_nk, nv = d->ssm_nv, dk = d->ssm_dk, dv = d->ssm_dv;
    const int32_t ch = 2 * nk * dk + nv * dv;
    const float scale = 1.0f / sqrtf((float)dk);
    float mem[1024];   /* dv <= SL_MAX_SSM_DIM (arch_gdn.c) */
    for (int32_t h = ith; h < nv; h += nth) {
        /* tiled [k0, k1, k0, k1, ...]; grouped (qwen3next) [k0, k0, k1, k1, ...] */
        const int32_t hk = d->ssm_grouped ? h / (nv / nk) : h % nk;
        float *S = j->S + (int64_t)h * dk * dv;
        if (j->n >= j->chunk_min) {
            for (int32_t t = 0; t < j->n; t += SL_DELTA_CHUNK) {
                const float *x = j->qkv + (int64_t)t * ch, *b = j->bg + (int64_t)t * 2 * nv;
                j->k->delta_chunk(S, x + (int64_t)hk * dk, x + (int64_t)(nk + hk) * dk,
                                  x + 2 * (int64_t)nk * dk + (int64_t)h * dv, ch, b + h, b + nv + h, 2 * nv, scale,
                                  j->n - t < SL_DELTA_CHUNK ? j->n - t : SL_DELTA_CHUNK, dk, dv,
                                  j->o + ((int64_t)t * nv + h) * dv, (int64_t)nv * dv, j->ws + ith * j->ws_len);
            }
            continue;
        }
        for (int32_t t = 0; t < j->n; t++) {
            const float *x = j->qkv + (int64_t)t * ch, *b = j->bg + (int64_t)t * 2 * nv;
            j->k->delta_rule(S, x + (int64_t)hk * dk, x + (int64_t)(nk + hk) * dk,
                             x + 2 * (int64_t)nk * dk + (int64_t)h * dv, b[h], expf(b[nv + h]), scale, dk, dv,
                             j->o + ((int64_t)t * nv + h) * dv, mem);
        }
    }
}

/* The recurrence over n rows of one sequence. Rows: qkv [n][ch] (conv
 * input, then q | k | v), bg [n][2 nv] (raw beta | raw alpha, then beta | g),
 * o [n][nv dv]. The conv runs token by token (its state is per channel);
 * the delta rule head by head. */
static void gdn_seq(sl_forward *f, const gdn_w *w, sl_kv *kv, int32_t l, int32_t n, float *qkv, float *bg,
                    float *o)
{
    const sl_model_desc *d = f->d;
    const int32_t nk = d->ssm_nk, nv = d->ssm_nv, dk = d->ssm_dk, dv = d->ssm_dv, K = d->ssm_conv;
    const int32_t ch = 2 * nk * dk + nv * dv;
    const float *cw = w->conv->data, *dt = w->dt->data, *A = w->a->data;
    float *cs = sl_kv_rec_conv(kv, l);
    for (int32_t t = 0; t < n; t++) {
        float *x = qkv + (int64_t)t * ch, *b = bg + (int64_t)t * 2 * nv;
        conv_row(x, cs, cw, ch, K);
        for (int32_t h = 0; h < 2 * nk; h++) l2norm(x + (int64_t)h * dk, dk, d->rms_eps);
        for (int32_t h = 0; h < nv; h++) {
            b[h] = sigmoidf(b[h]);
            b[nv + h] = softplusf(b[nv + h] + dt[h]) * A[h];
        }
    }
    gdn_job j = { .d = d, .k = f->k, .S = sl_kv_rec_state(kv, l), .qkv = qkv, .bg = bg, .o = o, .ws = f->gdn_ws,
                  .ws_len = (int64_t)sl_forward_gdn_ws_bytes(d, 1) / 4, .n = n, .chunk_min = f->gdn_chunk_min };
    sl_pool_run(f->pool, gdn_heads, &j);
}

int sl_forward_gdn(sl_forward *f, const sl_forward_seq *sq, int32_t ns, int32_t l, const sl_stream_view *v,
                   int32_t n)
{
    const sl_model_desc *d = f->d;
    const int32_t nv = d->ssm_nv, dv = d->ssm_dv, inner = nv * dv;
    const int32_t ch = 2 * d->ssm_nk * d->ssm_dk + inner;
    gdn_w w;
    int rc = gdn_weights(v, l, &w);
    if (rc) return rc;
    if (d->ssm_dv > 1024) return sl_err_set(SL_EUNSUPPORTED, "layer %d: v head of %d values", l, d->ssm_dv);
    float *qkv = f->rec_buf, *z = qkv + (int64_t)n * ch, *o = z + (int64_t)n * inner, *bg = o + (int64_t)n * inner;
    sl_act_cache c = { 0 };
    if ((rc = sl_forward_gdn_proj(f, &c, v, l, n, qkv, z, bg, bg + (int64_t)n * 2 * nv))) return rc;
    for (int32_t s = 0, i = 0; s < ns; i += sq[s].n, s++)
        SL_TIMED(f, SL_PROF_ATTN, 0,
                 gdn_seq(f, &w, sq[s].kv, l, sq[s].n, qkv + (int64_t)i * ch, bg + (int64_t)i * 2 * nv,
                         o + (int64_t)i * inner));
    /* gated norm: RMSNorm(o_h, ssm_norm) * SiLU(z_h) */
    SL_TIMED(f, SL_PROF_NORM, 0, {
        for (int64_t r = 0; r < (int64_t)n * nv; r++) {
            f->k->rmsnorm(o + r * dv, o + r * dv, w.norm->data, dv, d->rms_eps);
            f->k->silu_mul(o + r * dv, z + r * dv, o + r * dv, dv);
        }
    });
    return sl_forward_mm(f, &c, o, n, w.out, f->xn, d->n_embd, SL_PROF_MV_O);
}
