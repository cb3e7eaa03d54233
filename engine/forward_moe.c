/* Routed-expert FFN, numerically as llama.cpp's build_moe_ffn on the CPU:
 * router logits in F32 (plus the router bias where there is one), softmax
 * over all experts (or each one's sigmoid), the k largest selection scores
 * (descending; ties to the lower expert id: the probability, plus
 * exp_probs_b where the block has it, only within the best expert groups
 * where the model has groups), weighted by their probabilities divided by
 * their sum (clamped to 6.1e-5) where the architecture renormalizes, times
 * its weight scale; or (gpt-oss) the k largest logits with a softmax over
 * those k. Each expert's down output times its weight, then the k terms
 * added in order of the choice; qwen2moe adds the shared expert times
 * sigmoid(ffn_gate_inp_shexp . h), deepseek2 / glm4moe add theirs as it is.
 * Expert biases (gpt-oss) are F32 rows added after each product; the
 * activation is SwiGLU or gpt-oss's clamped variant. Expert matrices take activations
 * quantized to their vec_dot_type like every other matmul. Experts come from
 * the streamer one (layer, expert) at a time: the batch's union of chosen
 * experts is requested at once (one read batch for those not cached), then
 * each is acquired, multiplied over all its rows and released.
 *
 * Pre-gating (decode, f->pregate): once layer l's experts are requested,
 * layer l+1's router runs on layer l's post-attention residual normed with
 * l+1's ffn_norm, and the experts it ranks first are read ahead
 * (sl_stream_expert_prefetch) while layer l's experts and l+1's attention
 * compute. That input is the earliest state with layer l's attention in it:
 * waiting for l's FFN output would leave the reads no compute to hide behind.
 * Only guesses: layer l+1 routes on its true input as always, so the logits
 * do not depend on it. Only the leading ranks of the guess whose measured
 * precision is at least SL_PREGATE_PRECISION are read: when the disk is the
 * bottleneck a wrong guess costs its whole read, a right one only hides a
 * latency. */
#include "forward_moe.h"
#include "forward_ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"
#include "../quant/quant.h"

#define A64(x) (((x) + 63) & ~(uint64_t)63)
#define SL_MOE_MAX_GROUPS 64   /* expert groups (arch_moe.c refuses more than n_expert / 2) */

/* Pre-gating reads a guess of rank i ahead while that rank was among the
 * chosen experts at least this often (its hits and guesses decayed by
 * SL_PREGATE_DECAY per guessed layer, ~2 tokens of a 48-layer model; both
 * start at 1, so every rank is read until measured). 30B-A3B on a disk-bound
 * run (perf/results/2026-11-25-moe-readahead.md): ranks 1-3 were right
 * 91-95% of the time, 4: 85%, 5: 79%, 6: 70%, 7-8: 52%; reading the top 3-4
 * decoded 1.2x faster than all 8. */
#define SL_PREGATE_PRECISION 0.85f
#define SL_PREGATE_DECAY 0.99f

/* The scratch, carved in this order from f->moe. */
typedef struct moe_buf {
    float *probs;      /* [B][n_expert] router logits, then probabilities */
    float *score;      /* [n_expert] one token's selection scores (bias, groups) */
    int32_t *sel;      /* [B][k] chosen experts, by decreasing probability */
    float *w;          /* [B][k] their weights */
    int32_t *cnt;      /* [n_expert + 1] rows per expert, then start offsets */
    int32_t *rows;     /* [B*k] (token * k + slot), grouped by expert */
    int32_t *uni;      /* [n_expert] the batch's chosen experts, ascending */
    float *xg;         /* [B][n_embd] gathered inputs / one expert's outputs */
    float *g, *u;      /* [B][max(n_ff_exp, n_ff_shexp)] */
    float *ys;         /* [B][k][n_embd] weighted expert outputs */
    float *out;        /* [B][n_embd] */
    float *keep, *side;   /* [n_embd] each: the experts' input row and the side work's result (decode) */
} moe_buf;

static uint64_t carve(const sl_model_desc *d, int32_t n_batch, char *p, moe_buf *b)
{
    const uint64_t B = (uint64_t)n_batch, NE = (uint64_t)d->n_expert, K = (uint64_t)d->n_expert_used;
    const uint64_t E = (uint64_t)d->n_embd;
    const uint64_t FF = (uint64_t)(d->n_ff_exp > d->n_ff_shexp ? d->n_ff_exp : d->n_ff_shexp);
    uint64_t o = 0;
#define PART(field, bytes) do { if (p) b->field = (void *)(p + o); o += A64(bytes); } while (0)
    PART(probs, B * NE * 4);
    PART(score, NE * 4);
    PART(sel, B * K * 4);
    PART(w, B * K * 4);
    PART(cnt, (NE + 1) * 4);
    PART(rows, B * K * 4);
    PART(uni, NE * 4);
    PART(xg, B * E * 4);
    PART(g, B * FF * 4);
    PART(u, B * FF * 4);
    PART(ys, B * K * E * 4);
    PART(out, B * E * 4);
    PART(keep, E * 4);
    PART(side, E * 4);
#undef PART
    return o;
}

uint64_t sl_forward_moe_arena_bytes(const sl_model_desc *d, int32_t n_batch)
{
    return d->n_expert ? carve(d, n_batch, NULL, NULL) : 0;
}

/* Y[n][rows] = W . x rows, x quantized to W's vec_dot_type in f->act. */
static int moe_mm(sl_forward *f, const float *x, int64_t n, int wtype, const void *W, int64_t rows,
                  int64_t cols, float *y, int64_t ldy, const char *name)
{
    sl_kern_quantize_act(f->k, wtype, x, cols, n, f->act);
    int rc = n == 1 ? sl_kern_matvec(f->k, f->pool, wtype, W, rows, cols, f->act, y)
                    : sl_kern_matmul(f->k, f->pool, wtype, W, rows, cols, f->act, n, y, ldy);
    if (rc) return sl_err_set(rc, "matmul with '%s' (%lld x %lld, type %d) failed", name,
                              (long long)rows, (long long)cols, wtype);
    return 0;
}

/* The k largest of p[0..n) in sel, largest first (k <= n <= 512: repeated scan;
 * ties keep the lower index). */
static void top_k(const float *p, int n, int k, int32_t *sel)
{
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int e = 0; e < n; e++) {
            bool taken = false;
            for (int i = 0; i < j; i++) taken |= sel[i] == e;
            if (!taken && (best < 0 || p[e] > p[best])) best = e;
        }
        sel[j] = best;
    }
}

/* Only the n_expert_group_used groups with the largest scores stay
 * choosable (the others' scores -inf); a group's score is the sum of its two
 * largest (DeepSeek-V3's group-limited routing). */
static void mask_groups(const sl_model_desc *d, float *s)
{
    const int ng = d->n_expert_group, per = d->n_expert / ng;
    float gs[SL_MOE_MAX_GROUPS] = { 0 };
    int32_t keep[SL_MOE_MAX_GROUPS];
    for (int g = 0; g < ng; g++) {
        float a = -INFINITY, b = -INFINITY;
        for (int e = g * per; e < (g + 1) * per; e++) {
            if (s[e] > a) { b = a; a = s[e]; }
            else if (s[e] > b) b = s[e];
        }
        gs[g] = a + b;
    }
    top_k(gs, ng, d->n_expert_group_used, keep);
    for (int g = 0; g < ng; g++) {
        bool kept = false;
        for (int i = 0; i < d->n_expert_group_used; i++) kept |= keep[i] == g;
        if (!kept) for (int e = g * per; e < (g + 1) * per; e++) s[e] = -INFINITY;
    }
}

/* One token's router logits p -> probabilities in place (softmax over all
 * experts, or each one's sigmoid), its top k by the selection score (the
 * probability, plus exp_probs_b where given, within the best groups where
 * the model has groups; scratch s) and their weights: the probabilities,
 * renormalized when the block says, times its scale. With softmax_k (the
 * router bias already in p): the top k logits and a softmax over them. */
static void route(const sl_model_desc *d, const sl_ffn_block *blk, const float *bias, float *p, float *s,
                  int32_t *sel, float *w)
{
    const int NE = d->n_expert, K = d->n_expert_used;
    if (blk->softmax_k) {   /* gpt-oss: sel[0] holds the largest logit */
        double sum = 0;
        top_k(p, NE, K, sel);
        for (int j = 0; j < K; j++) { w[j] = expf(p[sel[j]] - p[sel[0]]); sum += w[j]; }
        const float inv = (float)(1.0 / sum);
        for (int j = 0; j < K; j++) w[j] *= inv;
        return;
    }
    if (blk->gating == SL_GATING_SIGMOID) {
        for (int e = 0; e < NE; e++) p[e] = 1.0f / (1.0f + expf(-p[e]));
    } else {
        float mx = -INFINITY;
        for (int e = 0; e < NE; e++) if (p[e] > mx) mx = p[e];
        double sum = 0;
        for (int e = 0; e < NE; e++) { p[e] = expf(p[e] - mx); sum += p[e]; }
        const float inv = (float)(1.0 / sum);
        for (int e = 0; e < NE; e++) p[e] *= inv;
    }
    const float *score = p;
    if (bias || d->n_expert_group > 1) {
        for (int e = 0; e < NE; e++) s[e] = bias ? p[e] + bias[e] : p[e];
        if (d->n_expert_group > 1) mask_groups(d, s);
        score = s;
    }
    top_k(score, NE, K, sel);
    for (int j = 0; j < K; j++) w[j] = p[sel[j]];
    if (blk->weights_norm) {
        float sum = 0;
        for (int j = 0; j < K; j++) sum += w[j];
        if (sum < 6.103515625e-5f) sum = 6.103515625e-5f;
        for (int j = 0; j < K; j++) w[j] /= sum;
    }
    if (blk->weights_scale > 0)
        for (int j = 0; j < K; j++) w[j] *= blk->weights_scale;
}

int32_t sl_forward_moe_pregate_depth(const float *hit, float seen, int32_t k)
{
    int32_t r = 0;
    while (r < k && hit[r] + 1.0f >= SL_PREGATE_PRECISION * (seen + 1.0f)) r++;
    return r;
}

void sl_forward_moe_pregate_learn(float *hit, float *seen, const int32_t *guess, int32_t n_guess,
                                  const int32_t *chosen, int32_t k, uint64_t *n_right)
{
    *seen = *seen * SL_PREGATE_DECAY + 1.0f;
    for (int32_t i = 0; i < n_guess; i++) {
        int h = 0;
        for (int32_t j = 0; j < k; j++) h |= guess[i] == chosen[j];
        hit[i] = hit[i] * SL_PREGATE_DECAY + (float)h;
        *n_right += (uint64_t)h;
    }
}

/* The router's input rows: dst = rmsnorm(x) * sc / sqrt(n_embd) from the
 * residual x, sc the layer's ffn_gate_inp.scale (gemma4's dense_moe; other
 * routers read the FFN's pre-normed rows). */
static void router_in(sl_forward *f, const sl_stream_tensor *sc, const float *x, float *dst, int32_t n)
{
    const int32_t E = f->d->n_embd;
    for (int32_t t = 0; t < n; t++) {
        f->k->rmsnorm(dst + (int64_t)t * E, x + (int64_t)t * E, sc->data, E, f->d->rms_eps);
        sl_forward_scale_row(dst + (int64_t)t * E, E, 1.0f / sqrtf((float)E));
    }
}

/* Guesses layer l + 1's experts from f->x (layer l's post-attention residual)
 * and reads them ahead. Only when l + 1's dense part is pinned (its acquire
 * cannot block); xg and probs of b are free here. */
static void pregate(sl_forward *f, moe_buf *b, int32_t l)
{
    const sl_model_desc *d = f->d;
    const int32_t E = d->n_embd, NE = d->n_expert, n = d->n_expert_used;   /* guess: its top k */
    f->pg_layer = -1;
    sl_stream_unit ui;
    float w[64];
    if (l + 1 >= d->n_layer || n > (int32_t)(sizeof f->pg_guess / sizeof f->pg_guess[0]) || n > NE ||
        sl_model_layer(d, l + 1)->ffn.kind != SL_FFN_MOE || sl_stream_unit_info(f->st, l + 1, &ui) || !ui.pinned)
        return;
    const sl_ffn_block *blk = &sl_model_layer(d, l + 1)->ffn;
    sl_stream_view v;
    if (sl_stream_acquire(f->st, l + 1, &v)) return;
    const sl_stream_tensor *fn = sl_stream_view_find(&v, blk->dense_moe ? "ffn_gate_inp.scale" : sl_ffn_norm_name(blk));
    const sl_stream_tensor *gi = sl_stream_view_find(&v, "ffn_gate_inp.weight");
    const sl_stream_tensor *gb = blk->router_bias ? sl_stream_view_find(&v, "ffn_gate_inp.bias") : NULL;
    const sl_stream_tensor *pb = blk->sel_bias ? sl_stream_view_find(&v, "exp_probs_b.bias") : NULL;
    int rc = fn && gi && (gb || !blk->router_bias) && (pb || !blk->sel_bias) ? 0 : SL_ENOENT;
    if (!rc) {
        if (blk->dense_moe) router_in(f, fn, f->x, b->xg, 1);
        else f->k->rmsnorm(b->xg, f->x, fn->data, E, d->rms_eps);
        if (!rc) rc = moe_mm(f, b->xg, 1, (int)gi->type, gi->data, NE, E, b->probs, NE, gi->name);
        if (!rc && gb) f->k->add(b->probs, b->probs, gb->data, NE);   /* the logits it selects on */
    }
    if (!rc) route(d, blk, pb ? pb->data : NULL, b->probs, b->score, f->pg_guess, w);
    (void)sl_stream_release(f->st, l + 1);
    if (rc) { sl_err_clear(); return; }
    f->pg_layer = l + 1;
    f->pg_n = n;
    const int32_t r = sl_forward_moe_pregate_depth(f->pg_hit, f->pg_seen, n);
    if (r && sl_stream_expert_prefetch(f->st, l + 1, f->pg_guess, r) < 0) sl_err_clear();
}

/* gpt-oss's clamped SwiGLU (llama.cpp's swiglu_oai with its alpha and limit). */
#define SL_OAI_ALPHA 1.702f
#define SL_OAI_LIMIT 7.0f

/* g <- act(g) * u over n values: SiLU, GELU (gemma4), or the clamped variant. */
static void gate_act(const sl_forward *f, const sl_ffn_block *blk, float *g, const float *u, int64_t n)
{
    if (blk->act != SL_ACT_SWIGLU_OAI) {
        (blk->act == SL_ACT_GELU ? f->k->gelu_mul : f->k->silu_mul)(g, g, u, n);
        return;
    }
    f->k->swiglu_oai(g, g, u, n, SL_OAI_ALPHA, SL_OAI_LIMIT);
}

/* A layer's expert biases (F32 [width, n_expert]; NULL: none) and down
 * scales (F32 [n_expert], gemma4; NULL: none). */
typedef struct moe_bias { const float *g, *u, *d, *ds; } moe_bias;

static int find_bias(const sl_ffn_block *blk, const sl_stream_view *v, int32_t l, moe_bias *eb)
{
    const sl_stream_tensor *t[3];
    int rc;
    memset(eb, 0, sizeof *eb);
    if (blk->down_scale) {
        if ((rc = sl_forward_find(v, l, "ffn_down_exps.scale", &t[0]))) return rc;
        eb->ds = t[0]->data;
    }
    if (!blk->expert_bias) return 0;
    if ((rc = sl_forward_find(v, l, "ffn_gate_exps.bias", &t[0])) ||
        (rc = sl_forward_find(v, l, "ffn_up_exps.bias", &t[1])) ||
        (rc = sl_forward_find(v, l, "ffn_down_exps.bias", &t[2])))
        return rc;
    eb->g = t[0]->data; eb->u = t[1]->data; eb->d = t[2]->data;
    return 0;
}

/* y[i] += row e of bias (width w) for the m rows of y (stride w); none when bias is NULL. */
static void add_bias(const sl_forward *f, float *y, const float *bias, int64_t e, int64_t m, int64_t w)
{
    if (!bias) return;
    for (int64_t i = 0; i < m; i++) f->k->add(y + i * w, y + i * w, bias + e * w, w);
}

/* y's m rows times expert e's down scale (before the routing weight, as
 * llama.cpp orders the products). */
static void down_scale(const moe_bias *eb, float *y, int64_t e, int64_t m, int64_t w)
{
    if (eb->ds) sl_forward_scale_row(y, m * w, eb->ds[e]);
}

/* An expert's gate, up and down matrices from its view: the three slices,
 * or a fused gate|up slice's two row halves (gate first) and down. */
static int expert_mats(const sl_ffn_block *blk, int32_t l, const sl_stream_view *ev, sl_stream_tensor m[3])
{
    m[2] = ev->tensors[2];
    if (!blk->fused_gate_up) {
        m[0] = ev->tensors[0]; m[1] = ev->tensors[1];
        return 0;
    }
    const int64_t ff = (int64_t)ev->tensors[2].ne[0];
    return sl_forward_split_rows(l, &ev->tensors[0], (int64_t[]){ ff, ff }, 2, m);
}

/* One expert's matrices (the view's slices, or the shared expert's) over
 * the m gathered rows in b->xg; its down outputs land in b->xg. e: the
 * expert's row in the layer's expert biases (those of eb; none: NULL). */
static int expert_ffn(sl_forward *f, moe_buf *b, const sl_ffn_block *blk, const moe_bias *eb, int64_t m,
                      int64_t e, const sl_stream_tensor *wg, const sl_stream_tensor *wu,
                      const sl_stream_tensor *wd)
{
    const int64_t E = f->d->n_embd, FF = (int64_t)wg->ne[1];
    const void *G = wg->data, *U = wu->data, *D = wd->data;
    int rc;
    if ((rc = moe_mm(f, b->xg, m, (int)wg->type, G, FF, E, b->g, FF, wg->name))) return rc;
    if (sl_quant_vec_dot_type((int)wu->type) == sl_quant_vec_dot_type((int)wg->type))
        rc = m == 1 ? sl_kern_matvec(f->k, f->pool, (int)wu->type, U, FF, E, f->act, b->u)
                    : sl_kern_matmul(f->k, f->pool, (int)wu->type, U, FF, E, f->act, m, b->u, FF);
    else
        rc = moe_mm(f, b->xg, m, (int)wu->type, U, FF, E, b->u, FF, wu->name);
    if (rc) return sl_err_set(rc, "matmul with '%s' failed", wu->name);
    add_bias(f, b->g, eb->g, e, m, FF);
    add_bias(f, b->u, eb->u, e, m, FF);
    gate_act(f, blk, b->g, b->u, m * FF);
    if ((rc = moe_mm(f, b->g, m, (int)wd->type, D, E, FF, b->xg, E, wd->name))) return rc;
    add_bias(f, b->xg, eb->d, e, m, E);
    down_scale(eb, b->xg, e, m, E);
    return 0;
}

/* Decode's routed experts in two pool jobs per group (sl_kern_matvec_multi):
 * every expert's gate and up rows, then every expert's down rows, instead of
 * three small matvecs each (a Qwen3-30B expert matrix is 768 x 2048, ~25 us
 * of work against a pool hand-off). A group is the experts whose reads have
 * completed (experts_decode). Each row is the same dot of the same quantized activation as
 * in the per-expert loop, so the outputs are bit for bit the same.
 * experts_group returns 1 (nothing done) when f->act cannot hold the
 * group's quantized inputs: the caller then runs the per-expert loop. */
#define SL_MOE_GROUP (SL_MV_MAX_PARTS / 2)

/* dst[c] = src[c] * w: an expert's output row weighted into ys (in place or not). */
static void weigh(float *dst, const float *src, float w, int32_t n)
{
    for (int32_t c = 0; c < n; c++) dst[c] = src[c] * w;
}

/* Slot of expert e in token 0's choice (decode: its row in ys). */
static int32_t slot_of(const moe_buf *b, int32_t K, int32_t e)
{
    int32_t j = 0;
    while (j < K - 1 && b->sel[j] != e) j++;
    return j;
}

static int experts_group(sl_forward *f, moe_buf *b, const sl_ffn_block *blk, const moe_bias *eb, int32_t l,
                         const int32_t *ids, int32_t ng)
{
    const int32_t E = f->d->n_embd, K = f->d->n_expert_used;
    sl_stream_view ev[SL_MOE_GROUP];
    sl_stream_tensor mt[SL_MOE_GROUP][3];   /* each one's gate, up, down (expert_mats) */
    int32_t slot[SL_MOE_GROUP];   /* each expert's slot in token 0's choice: its row in ys */
    for (int32_t i = 0; i < ng; i++) slot[i] = slot_of(b, K, ids[i]);
    int32_t held = 0;
    int rc = 0;
    while (held < ng && !rc) {
        rc = sl_stream_expert_acquire(f->st, l, ids[held], &ev[held]);
        if (rc) rc = sl_err_set(rc, "%s", sl_stream_errmsg(f->st));
        else if (!(rc = expert_mats(blk, l, &ev[held], mt[held]))) held++;
        else sl_stream_expert_release(f->st, l, ids[held]);
    }
    const sl_stream_tensor *t0 = rc ? NULL : mt[0];
    int tg = 0, tu = 0, td = 0;
    int64_t FF = 0;
    size_t ga = 0, ua = 0, da = 0;
    char *gact = f->act, *uact = NULL, *dact = NULL;
    if (!rc) {
        /* one 3-D tensor per kind and layer: every expert has these types */
        tg = (int)t0[0].type; tu = (int)t0[1].type; td = (int)t0[2].type;
        FF = (int64_t)t0[0].ne[1];
        ga = sl_kern_act_bytes(tg, E, 1);
        const bool same = sl_quant_vec_dot_type(tu) == sl_quant_vec_dot_type(tg);
        ua = same ? 0 : sl_kern_act_bytes(tu, E, 1);
        da = sl_kern_act_bytes(td, FF, 1);
        uact = same ? gact : gact + A64(ga);
        dact = gact + A64(ga) + A64(ua);
        if (ga == 0 || da == 0 || (!same && ua == 0) ||
            A64(ga) + A64(ua) + (size_t)ng * da > f->act_bytes)
            rc = 1;
    }
    if (!rc) {
        sl_kern_quantize_act(f->k, tg, f->xn, E, 1, gact);
        if (uact != gact) sl_kern_quantize_act(f->k, tu, f->xn, E, 1, uact);
        sl_mv_part parts[SL_MV_MAX_PARTS];
        for (int32_t i = 0; i < ng; i++) {
            const sl_stream_tensor *w = mt[i];
            parts[2 * i] = (sl_mv_part){ .wtype = tg, .W = w[0].data, .rows = FF, .cols = E,
                                         .act = gact, .y = b->g + (int64_t)i * FF };
            parts[2 * i + 1] = (sl_mv_part){ .wtype = tu, .W = w[1].data, .rows = FF, .cols = E,
                                             .act = uact, .y = b->u + (int64_t)i * FF };
        }
        rc = sl_kern_matvec_multi(f->k, f->pool, parts, 2 * ng);
        if (rc) rc = sl_err_set(rc, "layer %d: the experts' gate/up matvec failed", (int)l);
        for (int32_t i = 0; i < ng && !rc; i++) {
            float *g = b->g + (int64_t)i * FF, *u = b->u + (int64_t)i * FF;
            add_bias(f, g, eb->g, ids[i], 1, FF);
            add_bias(f, u, eb->u, ids[i], 1, FF);
            gate_act(f, blk, g, u, FF);
            sl_kern_quantize_act(f->k, td, g, FF, 1, dact + (size_t)i * da);
            parts[i] = (sl_mv_part){ .wtype = td, .W = mt[i][2].data, .rows = E, .cols = FF,
                                     .act = dact + (size_t)i * da, .y = b->ys + (int64_t)slot[i] * E };
        }
        if (!rc && (rc = sl_kern_matvec_multi(f->k, f->pool, parts, ng)))
            rc = sl_err_set(rc, "layer %d: the experts' down matvec failed", (int)l);
    }
    for (int32_t i = 0; i < held; i++) {
        int rr = sl_stream_expert_release(f->st, l, ids[i]);
        if (rr && rc >= 0) rc = sl_err_set(rr, "%s", sl_stream_errmsg(f->st));
    }
    if (rc) return rc;
    for (int32_t i = 0; i < ng; i++) {
        float *y = b->ys + (int64_t)slot[i] * E;
        add_bias(f, y, eb->d, ids[i], 1, E);
        down_scale(eb, y, ids[i], 1, E);
        weigh(y, y, b->w[slot[i]], E);
    }
    return 0;
}

/* 0: done; 1: not taken (the per-expert loop runs); < 0: a status.
 * Experts are computed as their reads complete: those in RAM first, then
 * whichever of the rest have arrived, else the oldest request alone (the
 * loader serves requests in order, so it is the next to complete) while the
 * others keep reading. Each expert's ys row is the same computation in any
 * group and the rows are summed in slot order afterwards, so the order they
 * arrive in does not change a bit of the output. */
static int experts_decode(sl_forward *f, moe_buf *b, const sl_ffn_block *blk, const moe_bias *eb, int32_t l,
                          int32_t n_uni)
{
    /* g and u hold n_batch rows of n_ff_exp: a group needs SL_MOE_GROUP */
    if (!f->fuse || f->d->n_ff_exp <= 0 || f->n_batch < SL_MOE_GROUP || n_uni > 64) return 1;
    int32_t left[64], nl = n_uni;
    memcpy(left, b->uni, (size_t)n_uni * sizeof *left);
    /* 1 from a later group after others were computed is still safe: the
     * per-expert loop then recomputes every expert's ys row, identically */
    int rc = 0;
    while (nl > 0 && !rc) {
        int32_t grp[SL_MOE_GROUP], ng = 0, keep = 0;
        for (int32_t i = 0; i < nl; i++) {
            int r = ng < SL_MOE_GROUP ? sl_stream_expert_ready(f->st, l, left[i]) : 0;
            if (r < 0) return sl_err_set(r, "%s", sl_stream_errmsg(f->st));
            if (r) grp[ng++] = left[i]; else left[keep++] = left[i];
        }
        if (ng == 0) {   /* none arrived yet: wait for the oldest */
            grp[ng++] = left[0];
            memmove(left, left + 1, (size_t)--keep * sizeof *left);
        }
        nl = keep;
        rc = experts_group(f, b, blk, eb, l, grp, ng);
    }
    return rc;
}

/* The caller's side work while a decode row's experts are read: f->xn (the
 * experts' input) is kept around it, and its result row (f->xn after it)
 * kept in the scratch. Its own ops are timed as themselves, not as MoE. */
static int side_work(sl_forward *f, moe_buf *b, sl_moe_side *side)
{
    const size_t row = (size_t)f->d->n_embd * sizeof(float);
    memcpy(b->keep, f->xn, row);
    const uint64_t t0 = f->prof ? sl_prof_now_ns() : 0;
    int rc = side->run(f, side->ctx);
    if (f->prof) {
        f->prof->ns[SL_PROF_MOE] -= sl_prof_now_ns() - t0;   /* the MoE timer's end adds it back */
        sl_pool_set_tag(f->pool, SL_PROF_MOE);
    }
    if (rc) return rc;
    memcpy(b->side, f->xn, row);
    memcpy(f->xn, b->keep, row);
    side->res = b->side;
    return 0;
}

int sl_forward_moe_ffn(sl_forward *f, int32_t l, const sl_ffn_block *blk, const sl_stream_view *v, int32_t n,
                       float **out, sl_moe_side *side)
{
    const sl_model_desc *d = f->d;
    const int32_t E = d->n_embd, NE = d->n_expert, K = d->n_expert_used;
    moe_buf b;
    carve(d, f->n_batch, f->moe, &b);
    const sl_stream_tensor *gi, *gb = NULL, *pb = NULL, *sc = NULL;
    moe_bias eb;
    int rc;
    if ((rc = sl_forward_find(v, l, "ffn_gate_inp.weight", &gi)) ||
        (blk->dense_moe && (rc = sl_forward_find(v, l, "ffn_gate_inp.scale", &sc))) ||
        (blk->router_bias && (rc = sl_forward_find(v, l, "ffn_gate_inp.bias", &gb))) ||
        (blk->sel_bias && (rc = sl_forward_find(v, l, "exp_probs_b.bias", &pb))) ||
        (rc = find_bias(blk, v, l, &eb)))
        return rc;

    /* routing */
    if (blk->dense_moe) router_in(f, sc, f->x, b.xg, n);
    if ((rc = moe_mm(f, blk->dense_moe ? b.xg : f->xn, n, (int)gi->type, gi->data, NE, E, b.probs, NE, gi->name)))
        return rc;
    if (gb) add_bias(f, b.probs, gb->data, 0, n, NE);
    memset(b.cnt, 0, (size_t)(NE + 1) * sizeof *b.cnt);
    for (int32_t t = 0; t < n; t++) {
        route(d, blk, pb ? pb->data : NULL, b.probs + (int64_t)t * NE, b.score, b.sel + (int64_t)t * K,
              b.w + (int64_t)t * K);
        for (int32_t j = 0; j < K; j++) b.cnt[b.sel[(int64_t)t * K + j] + 1]++;
    }
    if (n == 1 && f->pg_layer == l) {   /* how good the guess was, rank by rank */
        sl_forward_moe_pregate_learn(f->pg_hit, &f->pg_seen, f->pg_guess, f->pg_n, b.sel, K, &f->pg_right);
        f->pg_chosen += (uint64_t)K;
    }
    f->pg_layer = -1;
    for (int32_t e = 0; e < NE; e++) b.cnt[e + 1] += b.cnt[e];   /* cnt[e] = start of expert e */
    for (int32_t t = 0; t < n; t++)
        for (int32_t j = 0; j < K; j++) {
            int32_t e = b.sel[(int64_t)t * K + j];
            b.rows[b.cnt[e]++] = t * K + j;
        }
    /* cnt[e] is now the end of expert e = the start of e + 1 */

    /* the union of chosen experts, read (if not cached) as one batch */
    int32_t n_uni = 0;
    for (int32_t e = 0; e < NE; e++)
        if (b.cnt[e] - (e ? b.cnt[e - 1] : 0)) b.uni[n_uni++] = e;
    if ((rc = sl_stream_expert_request(f->st, l, b.uni, n_uni)))
        return sl_err_set(rc, "layer %d: %s", l, sl_stream_errmsg(f->st));
    if (f->pregate && n == 1) pregate(f, &b, l);
    if (side) side->res = NULL;
    if (side && n == 1 && (rc = side_work(f, &b, side))) return rc;
    int fused = n == 1 ? experts_decode(f, &b, blk, &eb, l, n_uni) : 1;
    if (fused < 0) return fused;
    /* otherwise each chosen expert once, over all its rows */
    for (int32_t ui = 0; fused && ui < n_uni; ui++) {
        const int32_t e = b.uni[ui];
        int32_t r0 = e ? b.cnt[e - 1] : 0, m = b.cnt[e] - r0;
        for (int32_t i = 0; i < m; i++)
            memcpy(b.xg + (int64_t)i * E, f->xn + (int64_t)(b.rows[r0 + i] / K) * E, (size_t)E * 4);
        sl_stream_view ev;
        sl_stream_tensor mt[3];
        if ((rc = sl_stream_expert_acquire(f->st, l, e, &ev)))
            return sl_err_set(rc, "%s", sl_stream_errmsg(f->st));
        if (!(rc = expert_mats(blk, l, &ev, mt))) rc = expert_ffn(f, &b, blk, &eb, m, e, &mt[0], &mt[1], &mt[2]);
        int rr = sl_stream_expert_release(f->st, l, e);
        if (rc) return rc;
        if (rr) return sl_err_set(rr, "%s", sl_stream_errmsg(f->st));
        for (int32_t i = 0; i < m; i++) {
            const int32_t ts = b.rows[r0 + i];
            weigh(b.ys + (int64_t)ts * E, b.xg + (int64_t)i * E, b.w[ts], E);
        }
    }
    /* terms added in slot order (decreasing weight) */
    for (int32_t t = 0; t < n; t++) {
        float *o = b.out + (int64_t)t * E;
        const float *ys = b.ys + (int64_t)t * K * E;
        memcpy(o, ys, (size_t)E * 4);
        for (int32_t j = 1; j < K; j++) f->k->add(o, o, ys + (int64_t)j * E, E);
    }

    if (blk->shared_expert) {
        const sl_stream_tensor *gs = NULL, *sg, *su, *sd;
        if ((!blk->shared_ungated && (rc = sl_forward_find(v, l, "ffn_gate_inp_shexp.weight", &gs))) ||
            (rc = sl_forward_find(v, l, "ffn_gate_shexp.weight", &sg)) ||
            (rc = sl_forward_find(v, l, "ffn_up_shexp.weight", &su)) ||
            (rc = sl_forward_find(v, l, "ffn_down_shexp.weight", &sd)))
            return rc;
        /* gate logits z[t] (one row of [n_embd]) land in probs, free again */
        if (gs && (rc = moe_mm(f, f->xn, n, (int)gs->type, gs->data, 1, E, b.probs, 1, gs->name))) return rc;
        memcpy(b.xg, f->xn, (size_t)n * (size_t)E * 4);
        const moe_bias none = { NULL, NULL, NULL, NULL };
        if ((rc = expert_ffn(f, &b, blk, &none, n, 0, sg, su, sd))) return rc;
        for (int32_t t = 0; t < n; t++) {
            float *y = b.xg + (int64_t)t * E, *o = b.out + (int64_t)t * E;
            if (gs) {
                /* sigmoid as llama.cpp forms it: silu(z) / z */
                const float z = b.probs[t], s = z / (1.0f + expf(-z)) / z;
                for (int32_t c = 0; c < E; c++) y[c] *= s;
            }
            f->k->add(o, o, y, E);
        }
    }
    if (out) *out = b.out;
    else f->k->add(f->x, f->x, b.out, (int64_t)n * E);
    return 0;
}
