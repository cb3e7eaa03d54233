/* MTP drafts (engine/forward_mtp.c, engine/spec_mtp.c, SL_SPEC_MTP in
 * engine/spec.c) on mkmodel's tiny presets with a NextN block (qwen35moe,
 * glm4moe, deepseek2): the block's rows and logits against a scalar
 * reference computed here from the file's tensors (qwen35moe's gated
 * attention, glm4moe's biased attention; both with their experts), greedy
 * speculation giving the tokens of plain decoding in resident and stream
 * modes (random blocks: drafts rejected), the same on files whose blocks add
 * nothing (drafts accepted: the accept and keep path), and the refusals.
 * SL_HOST_ONLY (slow under qemu). */
#include "sl_test.h"
#include "session_testutil.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../engine/forward.h"
#include "../engine/forward_mtp.h"
#include "../engine/model_handle.h"
#include "../engine/session_obj.h"
#include "../gguf/gguf.h"
#include "../quant/quant.h"

#define NV 512

static char dir[64];

static sl_model *open_resident(const char *path)
{
    sl_model_params mp = st_params(64, 8, 2);
    mp.mode = SL_MODE_RESIDENT;
    return st_open(path, &mp);
}

/* build/sluice mkmodel --preset P (vocabulary of NV tokens) into dir/P.gguf. */
static void mk(const char *preset, char *path, size_t len)
{
    char self[PATH_MAX - 64], cmd[2 * PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert_gt(n, 0);
    self[n] = 0;
    *strrchr(self, '/') = 0;   /* .../build/tests */
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/sl_mtp_XXXXXX");
        cr_assert_not_null(mkdtemp(dir));
    }
    snprintf(path, len, "%s/%s.gguf", dir, preset);
    if (access(path, R_OK) == 0) return;
    snprintf(cmd, sizeof cmd, "'%s/../sluice' mkmodel --preset %s --vocab none --n-vocab %d -o '%s' 2>/dev/null",
             self, preset, NV, path);
    int st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "mkmodel %s", preset);
}

static void cleanup(void)
{
    if (!dir[0]) return;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- the scalar reference --------------------------------------------------- */

typedef struct { float *w; int64_t in, out; } mat;   /* w[out][in] */

static bool has(const sl_gguf *g, const char *name) { return sl_gguf_find_tensor(g, name) != NULL; }

/* Tensor `name` dequantized to floats (ne0 = in, the rest = out). */
static mat load(const sl_gguf *g, const char *name)
{
    const sl_gguf_tensor *t = sl_gguf_find_tensor(g, name);
    cr_assert_not_null(t, "%s", name);
    int64_t n = 1;
    for (uint32_t i = 0; i < t->n_dims; i++) n *= (int64_t)t->ne[i];
    void *raw = malloc(t->nbytes);
    mat m = { malloc((size_t)n * sizeof(float)), (int64_t)t->ne[0], n / (int64_t)t->ne[0] };
    cr_assert(raw && m.w);
    cr_assert_eq(sl_gguf_read(g, raw, t->nbytes, t->file_offset), 0);
    cr_assert_eq(sl_quant_dequantize_row((int)t->type, raw, m.w, n), 0, "%s", name);
    free(raw);
    return m;
}

static mat loadl(const sl_gguf *g, int l, const char *suffix)
{
    char name[96];
    snprintf(name, sizeof name, "blk.%d.%s", l, suffix);
    return load(g, name);
}

/* y[r] = W[r] . x over rows [r0, r0 + nr) of W (an expert's slice). */
static void mv(const mat *m, int64_t r0, int64_t nr, const float *x, float *y)
{
    for (int64_t r = 0; r < nr; r++) {
        double s = 0;
        for (int64_t c = 0; c < m->in; c++) s += (double)m->w[(r0 + r) * m->in + c] * x[c];
        y[r] = (float)s;
    }
}

static void rms(float *y, const float *x, const float *w, int64_t n, float eps)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    float sc = (float)(1.0 / sqrt(s / (double)n + eps));
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * sc * (w ? w[i] : 1.0f);
}

static float silu(float x) { return x / (1.0f + expf(-x)); }
static float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

/* NEOX rope of one head's first n_rot dims at position p. */
static void rope(float *x, int32_t n_rot, int32_t p, float base)
{
    for (int32_t i = 0; i < n_rot / 2; i++) {
        double th = p * pow(base, -2.0 * i / n_rot);
        float c = (float)cos(th), s = (float)sin(th), a = x[i], b = x[i + n_rot / 2];
        x[i] = a * c - b * s;
        x[i + n_rot / 2] = a * s + b * c;
    }
}

/* The NextN block l of the file over ids[0..n) at positions 0.., row i with
 * hidden state h[i]: the head-normed rows into hout, the last row's logits. */
static void ref_mtp(const char *path, const sl_model_desc *d, const int32_t *ids, const float *h, int n,
                    float *hout, float *logits)
{
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, path), 0);
    const int l = d->n_layer, E = d->n_embd, H = d->n_head, HK = d->n_head_kv, HD = d->head_dim;
    const float eps = d->rms_eps;
    const sl_ffn_block *fb = &d->kind[d->layer_kind[l]].ffn;
    mat emb = load(g, "token_embd.weight"), out = load(g, "output.weight");
    mat eh = loadl(g, l, "nextn.eh_proj.weight"), en = loadl(g, l, "nextn.enorm.weight");
    mat hn = loadl(g, l, "nextn.hnorm.weight"), sn = loadl(g, l, "nextn.shared_head_norm.weight");
    mat an = loadl(g, l, "attn_norm.weight"), wq = loadl(g, l, "attn_q.weight"), wk = loadl(g, l, "attn_k.weight");
    mat wv = loadl(g, l, "attn_v.weight"), wo = loadl(g, l, "attn_output.weight");
    mat qn = loadl(g, l, "attn_q_norm.weight"), kn = loadl(g, l, "attn_k_norm.weight");
    mat pn = loadl(g, l, "post_attention_norm.weight"), router = loadl(g, l, "ffn_gate_inp.weight");
    mat eg = loadl(g, l, "ffn_gate_exps.weight"), eu = loadl(g, l, "ffn_up_exps.weight");
    mat ed = loadl(g, l, "ffn_down_exps.weight"), sg = loadl(g, l, "ffn_gate_shexp.weight");
    mat su = loadl(g, l, "ffn_up_shexp.weight"), sd = loadl(g, l, "ffn_down_shexp.weight");
    char nm[96];
    snprintf(nm, sizeof nm, "blk.%d.attn_q.bias", l);
    const bool bias = has(g, nm);
    mat bq = { 0 }, bk = { 0 }, bv = { 0 }, sel = { 0 }, shg = { 0 };
    if (bias) { bq = loadl(g, l, "attn_q.bias"); bk = loadl(g, l, "attn_k.bias"); bv = loadl(g, l, "attn_v.bias"); }
    snprintf(nm, sizeof nm, "blk.%d.exp_probs_b.bias", l);
    if (has(g, nm)) sel = loadl(g, l, "exp_probs_b.bias");
    snprintf(nm, sizeof nm, "blk.%d.ffn_gate_inp_shexp.weight", l);
    if (has(g, nm)) shg = loadl(g, l, "ffn_gate_inp_shexp.weight");
    const bool gated = wq.out == 2 * (int64_t)H * HD;   /* qwen35: per head q | gate */
    const int NE = d->n_expert, FE = d->n_ff_exp, FS = d->n_ff_shexp;
    float *K = calloc((size_t)n * HK * HD, sizeof(float)), *V = calloc((size_t)n * HK * HD, sizeof(float));
    float *x = malloc((size_t)E * 4), *xn = malloc((size_t)E * 4), *cat = malloc((size_t)E * 8);
    float *qf = malloc((size_t)wq.out * 4), *q = malloc((size_t)H * HD * 4), *o = malloc((size_t)H * HD * 4);
    float *a = malloc((size_t)E * 4), *gt = malloc((size_t)(FE > FS ? FE : FS) * 4);
    float *up = malloc((size_t)(FE > FS ? FE : FS) * 4), *dn = malloc((size_t)E * 4), *sc = malloc((size_t)n * 4);
    float *pr = malloc((size_t)NE * 4);
    for (int p = 0; p < n; p++) {
        /* x = eh_proj [enorm(e), hnorm(h)] */
        rms(cat, emb.w + (int64_t)ids[p] * E, en.w, E, eps);
        rms(cat + E, h + (int64_t)p * E, hn.w, E, eps);
        mv(&eh, 0, E, cat, x);
        /* attention */
        rms(xn, x, an.w, E, eps);
        mv(&wq, 0, wq.out, xn, qf);
        float *kp = K + (int64_t)p * HK * HD, *vp = V + (int64_t)p * HK * HD;
        mv(&wk, 0, wk.out, xn, kp);
        mv(&wv, 0, wv.out, xn, vp);
        for (int i = 0; i < H * HD; i++) q[i] = gated ? qf[(i / HD) * 2 * HD + i % HD] : qf[i];
        if (bias) {
            for (int i = 0; i < H * HD; i++) q[i] += bq.w[i];
            for (int i = 0; i < HK * HD; i++) { kp[i] += bk.w[i]; vp[i] += bv.w[i]; }
        }
        for (int hh = 0; hh < H + HK; hh++) {   /* q heads, then k heads: per-head norm, rope */
            float *r = hh < H ? q + hh * HD : kp + (hh - H) * HD;
            rms(r, r, hh < H ? qn.w : kn.w, HD, eps);
            rope(r, d->n_rot, p, d->rope_base);
        }
        for (int hh = 0; hh < H; hh++) {
            const int kh = hh / (H / HK);
            double mx = -1e30, sum = 0;
            for (int j = 0; j <= p; j++) {
                double s = 0;
                for (int t = 0; t < HD; t++) s += (double)q[hh * HD + t] * K[((int64_t)j * HK + kh) * HD + t];
                sc[j] = (float)(s / sqrt((double)HD));
                if (sc[j] > mx) mx = sc[j];
            }
            for (int j = 0; j <= p; j++) { sc[j] = (float)exp(sc[j] - mx); sum += sc[j]; }
            for (int t = 0; t < HD; t++) {
                double s = 0;
                for (int j = 0; j <= p; j++) s += sc[j] * (double)V[((int64_t)j * HK + kh) * HD + t];
                o[hh * HD + t] = (float)(s / sum) * (gated ? sigm(qf[hh * 2 * HD + HD + t]) : 1.0f);
            }
        }
        mv(&wo, 0, E, o, a);
        for (int i = 0; i < E; i++) x[i] += a[i];
        /* experts: top n_expert_used by probability (+ selection bias), weights renormalized */
        rms(xn, x, pn.w, E, eps);
        mv(&router, 0, NE, xn, pr);
        double ps = 0, mx = -1e30;
        for (int e = 0; e < NE; e++) if (pr[e] > mx) mx = pr[e];
        for (int e = 0; e < NE; e++) {
            pr[e] = fb->gating == SL_GATING_SIGMOID ? sigm(pr[e]) : (float)exp(pr[e] - mx);
            ps += pr[e];
        }
        if (fb->gating != SL_GATING_SIGMOID) for (int e = 0; e < NE; e++) pr[e] = (float)(pr[e] / ps);
        int chosen[64];
        double wsum = 0;
        for (int c = 0; c < d->n_expert_used; c++) {
            int b = -1;
            for (int e = 0; e < NE; e++) {
                bool taken = false;
                for (int u = 0; u < c; u++) taken |= chosen[u] == e;
                if (!taken && (b < 0 || pr[e] + (sel.w ? sel.w[e] : 0) > pr[b] + (sel.w ? sel.w[b] : 0))) b = e;
            }
            chosen[c] = b;
            wsum += pr[b];
        }
        for (int c = 0; c < d->n_expert_used; c++) {
            const int e = chosen[c];
            float w = fb->weights_norm ? (float)(pr[e] / wsum) : pr[e];
            if (fb->weights_scale > 0) w *= fb->weights_scale;
            mv(&eg, (int64_t)e * FE, FE, xn, gt);
            mv(&eu, (int64_t)e * FE, FE, xn, up);
            for (int i = 0; i < FE; i++) gt[i] = silu(gt[i]) * up[i];
            mv(&ed, (int64_t)e * E, E, gt, dn);
            for (int i = 0; i < E; i++) x[i] += w * dn[i];
        }
        mv(&sg, 0, FS, xn, gt);
        mv(&su, 0, FS, xn, up);
        for (int i = 0; i < FS; i++) gt[i] = silu(gt[i]) * up[i];
        mv(&sd, 0, E, gt, dn);
        float sgate = 1.0f;
        if (shg.w) {
            double s = 0;
            for (int i = 0; i < E; i++) s += (double)shg.w[i] * xn[i];
            sgate = sigm((float)s);
        }
        for (int i = 0; i < E; i++) x[i] += sgate * dn[i];
        rms(hout + (int64_t)p * E, x, sn.w, E, eps);
    }
    mv(&out, 0, out.out, hout + (int64_t)(n - 1) * E, logits);
    mat all[] = { emb, out, eh, en, hn, sn, an, wq, wk, wv, wo, qn, kn, pn, router, eg, eu, ed, sg, su, sd,
                  bq, bk, bv, sel, shg };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i].w);
    free(K); free(V); free(x); free(xn); free(cat); free(qf); free(q); free(o); free(a); free(gt); free(up);
    free(dn); free(sc); free(pr);
    sl_gguf_close(g);
}

/* RMS of a - b over RMS of b. */
static double rel_rms(const float *a, const float *b, int64_t n)
{
    double e = 0, s = 0;
    for (int64_t i = 0; i < n; i++) { e += (double)(a[i] - b[i]) * (a[i] - b[i]); s += (double)b[i] * b[i]; }
    return sqrt(e / (s + 1e-30));
}

static int32_t argmax(const float *x, int64_t n)
{
    int32_t b = 0;
    for (int64_t i = 1; i < n; i++) if (x[i] > x[b]) b = (int32_t)i;
    return b;
}

/* The engine's block (one call over n rows, then the last row again alone
 * after n - 1 rows: the cache carries them) against the reference. */
static void block_vs_reference(const char *preset)
{
    char path[PATH_MAX];
    mk(preset, path, sizeof path);
    sl_model *m = open_resident(path);
    sl_session *s = st_session(m, true);
    const sl_model_desc *d = &m->d;
    const int n = 6, E = d->n_embd;
    cr_assert(d->n_layer_nextn == 1 && d->n_vocab == NV);
    int32_t ids[6];
    st_some_ids(ids, n, NV, 7);
    float *h = malloc((size_t)n * E * 4), *ho = malloc((size_t)n * E * 4), *hr = malloc((size_t)n * E * 4);
    float *cat = malloc((size_t)n * 2 * E * 4), *lo = malloc(NV * 4), *lr = malloc(NV * 4), *l1 = malloc(NV * 4);
    uint64_t r = 99;
    for (int i = 0; i < n * E; i++) { r = st_lcg(r); h[i] = (float)((double)(r >> 11) / 9007199254740992.0 * 4 - 2); }
    sl_kv kv;
    cr_assert_eq(sl_forward_mtp_kv_init(d, &s->kv, &kv), 0, "%s", sl_last_error());
    kv.n_past = 0;
    cr_assert_eq(sl_forward_mtp(&m->fw, &kv, ids, h, n, cat, ho, lo), 0, "%s", sl_last_error());
    ref_mtp(path, d, ids, h, n, hr, lr);
    double eh = rel_rms(ho, hr, (int64_t)n * E), el = rel_rms(lo, lr, NV);
    cr_log_info("%s: hidden rows rel RMS %.4f, logits rel RMS %.4f", preset, eh, el);
    /* the distance of activations quantized before each matmul (q8) */
    cr_assert_lt(eh, 0.03, "%s: hidden rows differ from the reference (rel RMS %.4f)", preset, eh);
    cr_assert_lt(el, 0.03, "%s: logits differ from the reference (rel RMS %.4f)", preset, el);
    cr_assert_eq(argmax(lo, NV), argmax(lr, NV));
    /* the last row alone after the others: the cache holds them */
    kv.n_past = n - 1;
    cr_assert_eq(sl_forward_mtp(&m->fw, &kv, ids + n - 1, h + (int64_t)(n - 1) * E, 1, cat, ho, l1), 0);
    cr_assert_lt(rel_rms(l1, lr, NV), 0.03);
    /* a wrong hidden state is seen: the reference can tell */
    for (int i = 0; i < E; i++) h[(int64_t)(n - 1) * E + i] = -h[(int64_t)(n - 1) * E + i];
    cr_assert_eq(sl_forward_mtp(&m->fw, &kv, ids + n - 1, h + (int64_t)(n - 1) * E, 1, cat, ho, l1), 0);
    cr_assert_gt(rel_rms(l1, lr, NV), 0.1, "the hidden state changes the draft");
    sl_kv_free(&kv);
    free(h); free(ho); free(hr); free(cat); free(lo); free(lr); free(l1);
    st_close(s, m);
}

Test(mtp, block_qwen35moe_vs_reference, .fini = cleanup, .timeout = 240) { block_vs_reference("qwen35moe-tiny-mtp"); }
Test(mtp, block_glm4moe_vs_reference, .fini = cleanup, .timeout = 240) { block_vs_reference("glm4moe-tiny"); }

/* ---- greedy speculation ----------------------------------------------------- */

static void gen(sl_model *m, bool mtp, int32_t k, const int32_t *prompt, int np, int32_t *out, int n,
                sl_spec_stats *st)
{
    sl_session *s = st_session(m, true);
    sl_spec *sp = NULL;
    if (mtp) {
        sl_spec_params p;
        sl_spec_params_init(&p);
        p.kind = SL_SPEC_MTP;
        p.k_max = k;
        p.adaptive = false;
        cr_assert_eq(sl_spec_create(&sp, s, &p), 0, "%s", sl_last_error());
    }
    cr_assert_eq(sl_session_feed_tokens(s, prompt, np), 0, "%s", sl_session_errmsg(s));
    int got = 0;
    while (got < n) {
        int32_t c = 1;
        int rc = sp ? sl_spec_step(sp, out + got, n - got, &c) : sl_session_step(s, out + got);
        cr_assert_eq(rc, 0, "%s", sp ? sl_spec_errmsg(sp) : sl_session_errmsg(s));
        got += c;
    }
    if (sp) cr_assert_eq(sl_spec_get_stats(sp, st), 0);
    sl_spec_destroy(sp);
    sl_session_destroy(s);
}

static void greedy_identity(const char *preset)
{
    char path[PATH_MAX];
    mk(preset, path, sizeof path);
    int32_t prompt[20], plain[40], spec[40];   /* the prompt in two chunks of n_batch 16 */
    st_some_ids(prompt, 20, NV, 5);
    for (int mode = 0; mode < 2; mode++) {
        sl_model_params mp = st_params(128, 16, 2);
        mp.mode = mode ? SL_MODE_STREAM : SL_MODE_RESIDENT;
        mp.keep_nextn = true;
        sl_model *m = st_open(path, &mp);
        gen(m, false, 0, prompt, 20, plain, 40, NULL);
        for (int32_t k = 1; k <= 4; k += 3) {
            sl_spec_stats st;
            gen(m, true, k, prompt, 20, spec, 40, &st);
            cr_assert_eq(memcmp(plain, spec, sizeof plain), 0, "%s mode %d k %d: MTP speculation changed the tokens",
                         preset, mode, k);
            cr_assert_gt(st.n_drafted, 0, "%s: the MTP block drafted", preset);
            cr_log_info("%s mode %d k %d: %lld passes, %lld drafted, %lld accepted", preset, mode, k,
                        (long long)st.n_passes, (long long)st.n_drafted, (long long)st.n_accepted);
        }
        sl_model_close(m);
    }
}

Test(mtp, greedy_identity_qwen35moe, .fini = cleanup, .timeout = 300) { greedy_identity("qwen35moe-tiny-mtp"); }
Test(mtp, greedy_identity_glm4moe, .fini = cleanup, .timeout = 300) { greedy_identity("glm4moe-tiny"); }
Test(mtp, greedy_identity_deepseek2, .fini = cleanup, .timeout = 300) { greedy_identity("deepseek2-tiny-mtp"); }

/* ---- accepted drafts -----------------------------------------------------------
 * A copy of a file whose blocks add nothing (every output projection zero)
 * and whose NextN input takes the embedding half ([I 0] as eh_proj, unit
 * norms): the target's next token is a function of the current one, F(t) =
 * argmax(output . norm(e(t))), and the block's draft after t is the same
 * function, so drafts are accepted. */
static bool zeroed(const char *name)
{
    return strstr(name, "attn_output.weight") || strstr(name, "ffn_down") || strstr(name, "ssm_out.weight");
}

static void write_transparent(const char *src, const char *dst)
{
    sl_gguf *g;
    cr_assert_eq(sl_gguf_open_path(&g, src), 0);
    sl_gguf_writer *w;
    cr_assert_eq(sl_gguf_writer_open(&w, dst, 3), 0);
    for (int64_t i = 0; i < sl_gguf_n_kv(g); i++) cr_assert_eq(sl_gguf_writer_copy_kv(w, g, i), 0);
    const int64_t nt = sl_gguf_n_tensors(g);
    for (int pass = 0; pass < 2; pass++) {
        if (pass) cr_assert_eq(sl_gguf_writer_begin_data(w), 0, "%s", sl_gguf_writer_errmsg(w));
        for (int64_t i = 0; i < nt; i++) {
            const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
            const bool eh = strstr(t->name, "nextn.eh_proj.weight") != NULL;
            const bool ones = !strcmp(t->name, "output_norm.weight") || strstr(t->name, "nextn.enorm") ||
                              strstr(t->name, "nextn.shared_head_norm");
            if (!pass) {
                cr_assert_eq(sl_gguf_writer_add_tensor(w, t->name, eh ? SL_GGML_F32 : t->type, t->n_dims, t->ne), 0);
                continue;
            }
            const uint64_t in = t->ne[0];
            size_t nb = eh ? (size_t)(in * t->ne[1] * sizeof(float)) : t->nbytes;
            uint8_t *buf = calloc(1, nb);
            cr_assert_not_null(buf);
            if (eh) {
                for (uint64_t r = 0; r < t->ne[1]; r++) ((float *)buf)[r * in + r] = 1.0f;   /* [I 0] */
            } else if (ones) {
                for (size_t j = 0; j < nb / 4; j++) ((float *)buf)[j] = 1.0f;
            } else if (!zeroed(t->name)) {   /* zero blocks decode to zero in every type */
                cr_assert_eq(sl_gguf_read(g, buf, nb, t->file_offset), 0);
            }
            cr_assert_eq(sl_gguf_writer_write(w, buf, nb), 0, "%s", sl_gguf_writer_errmsg(w));
            free(buf);
        }
    }
    cr_assert_eq(sl_gguf_writer_close(w), 0);
    sl_gguf_close(g);
}

static void accepted(const char *preset)
{
    char src[PATH_MAX], path[PATH_MAX + 8];
    mk(preset, src, sizeof src);
    snprintf(path, sizeof path, "%s.t.gguf", src);
    write_transparent(src, path);
    int32_t prompt[4], plain[40], spec[40];
    st_some_ids(prompt, 4, NV, 3);
    sl_model *m = open_resident(path);
    gen(m, false, 0, prompt, 4, plain, 40, NULL);
    sl_spec_stats st;
    gen(m, true, 4, prompt, 4, spec, 40, &st);
    cr_log_info("%s, transparent: %lld passes, %lld drafted, %lld accepted", preset, (long long)st.n_passes,
                (long long)st.n_drafted, (long long)st.n_accepted);
    cr_assert_eq(memcmp(plain, spec, sizeof plain), 0, "%s: MTP speculation changed the tokens", preset);
    cr_assert_geq(st.n_accepted * 10, st.n_drafted * 9, "%s: %lld of %lld drafts accepted", preset,
                  (long long)st.n_accepted, (long long)st.n_drafted);
    cr_assert_leq(st.n_passes, 10, "%s: about 5 tokens a pass", preset);
    sl_model_close(m);
}

Test(mtp, accepted_glm4moe, .fini = cleanup, .timeout = 240) { accepted("glm4moe-tiny"); }
Test(mtp, accepted_qwen35moe, .fini = cleanup, .timeout = 240) { accepted("qwen35moe-tiny-mtp"); }
Test(mtp, accepted_deepseek2, .fini = cleanup, .timeout = 240) { accepted("deepseek2-tiny-mtp"); }

/* ---- refusals ------------------------------------------------------------------ */

Test(mtp, refusals, .fini = cleanup, .timeout = 120)
{
    char with[PATH_MAX], without[PATH_MAX];
    mk("glm4moe-tiny", with, sizeof with);
    mk("deepseek2-tiny", without, sizeof without);
    sl_spec_params p;
    sl_spec_params_init(&p);
    p.kind = SL_SPEC_MTP;
    sl_spec *sp = NULL, *sp2 = NULL;
    /* no NextN block */
    sl_model *m = open_resident(without);
    sl_session *s = st_session(m, true);
    cr_assert_eq(sl_spec_create(&sp, s, &p), SL_EUNSUPPORTED);
    cr_assert(strstr(sl_last_error(), "no NextN (MTP) block"), "%s", sl_last_error());
    st_close(s, m);
    /* streamed without keep_nextn: the block is not in the schedule */
    sl_model_params mp = st_params(64, 8, 2);
    mp.mode = SL_MODE_STREAM;
    m = st_open(with, &mp);
    s = st_session(m, true);
    cr_assert_eq(sl_spec_create(&sp, s, &p), SL_EINVAL);
    cr_assert(strstr(sl_last_error(), "keep_nextn"), "%s", sl_last_error());
    st_close(s, m);
    /* one MTP spec per session */
    m = open_resident(with);
    s = st_session(m, true);
    cr_assert_eq(sl_spec_create(&sp, s, &p), 0, "%s", sl_last_error());
    cr_assert_eq(sl_spec_create(&sp2, s, &p), SL_EBUSY);
    sl_spec_destroy(sp);
    cr_assert_eq(sl_spec_create(&sp2, s, &p), 0, "the hook went with the spec");
    sl_spec_destroy(sp2);
    st_close(s, m);
}
