/* Sampling chain over one logits row. */
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"

int sl_sampling_init_sized(sl_sampling *s, size_t struct_size)
{
    sl_sampling d;
    memset(&d, 0, sizeof d);
    d.temp = 0.8f;
    d.top_k = 40;
    d.top_p = 0.95f;
    d.min_p = 0.05f;
    d.repeat_penalty = 1.0f;
    d.repeat_last_n = 64;
    d.seed = 0x5eed;
    return sl_struct_init(s, struct_size, &d, sizeof d, SL_SAMPLING_MIN_SIZE, "sl_sampling");
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_u64(sl_sampler *s)
{
    uint64_t *q = s->s;
    uint64_t r = rotl(q[1] * 5, 7) * 9, t = q[1] << 17;
    q[2] ^= q[0]; q[3] ^= q[1]; q[1] ^= q[2]; q[0] ^= q[3];
    q[2] ^= t; q[3] = rotl(q[3], 45);
    return r;
}

void sl_sampler_seed(sl_sampler *s, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) s->s[i] = splitmix64(&x);
}

double sl_sampler_uniform(sl_sampler *s)
{
    return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

int sl_sampler_init(sl_sampler *s, int32_t n_vocab, const sl_sampling *p)
{
    memset(s, 0, sizeof *s);
    if (n_vocab < 1) return sl_err_set(SL_EINVAL, "sampler: n_vocab %d", n_vocab);
    s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
    s->prob = malloc((size_t)n_vocab * sizeof *s->prob);
    s->seen = calloc((size_t)n_vocab, 1);
    if (!s->cand || !s->prob || !s->seen) {
        sl_sampler_free(s);
        return sl_err_set(SL_ENOMEM, "sampler: cannot allocate scratch for %d tokens", n_vocab);
    }
    s->n_vocab = n_vocab;
    if (p) s->p = *p; else sl_sampling_init(&s->p);
    sl_sampler_seed(s, s->p.seed);
    return 0;
}

void sl_sampler_free(sl_sampler *s)
{
    free(s->cand); free(s->prob); free(s->seen);
    memset(s, 0, sizeof *s);
}

int32_t sl_sampler_greedy(const float *logits, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

/* Descending by logit, ties by ascending id: a total order, so results do
 * not depend on the sort algorithm. */
static int cand_cmp(const void *a, const void *b)
{
    const sl_cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int cand_before(const sl_cand *x, const sl_cand *y)
{
    return x->logit > y->logit || (x->logit == y->logit && x->id < y->id);
}

/* Keeps the k best of c[0..n) in c[0..k), sorted (min-heap of the k best). */
static int32_t keep_top_k(sl_cand *c, int32_t n, int32_t k)
{
    if (k >= n) {
        qsort(c, (size_t)n, sizeof *c, cand_cmp);
        return n;
    }
    /* heap in c[0..k): root = worst of the kept */
    for (int32_t i = 0; i < n; i++) {
        sl_cand v = c[i];
        int32_t pos;
        if (i < k) {
            pos = i;
            while (pos > 0) {       /* sift up */
                int32_t par = (pos - 1) / 2;
                if (!cand_before(&c[par], &v)) break;
                c[pos] = c[par];
                pos = par;
            }
            c[pos] = v;
            continue;
        }
        if (!cand_before(&v, &c[0])) continue;
        pos = 0;                    /* replace root, sift down */
        for (;;) {
            int32_t l = 2 * pos + 1, r = l + 1, w = pos;
            const sl_cand *wv = &v;
            if (l < k && cand_before(wv, &c[l])) { w = l; wv = &c[l]; }
            if (r < k && cand_before(wv, &c[r])) { w = r; }
            if (w == pos) break;
            c[pos] = c[w];
            pos = w;
        }
        c[pos] = v;
    }
    qsort(c, (size_t)k, sizeof *c, cand_cmp);
    return k;
}

/* The repetition penalty of one logit (as llama.cpp). */
static float penalize(float l, float pen) { return l > 0 ? l / pen : l * pen; }

int32_t sl_sampler_dist(sl_sampler *s, const float *logits, const int32_t *hist, int32_t n_hist,
                        double *sum_out)
{
    const sl_sampling *p = &s->p;
    const int32_t n = s->n_vocab;
    sl_cand *c = s->cand;
    /* repetition penalty over the distinct tokens of the last n (as llama.cpp):
     * they are marked in seen[] for the time of this call */
    const bool pen = p->repeat_penalty != 1.0f && p->repeat_penalty > 0 && n_hist > 0;
    int32_t w = 0;
    if (pen) {
        w = p->repeat_last_n < 0 || p->repeat_last_n > n_hist ? n_hist : p->repeat_last_n;
        for (int32_t j = n_hist - w; j < n_hist; j++)
            if (hist[j] >= 0 && hist[j] < n) s->seen[hist[j]] = 1;
    }

    if (!(p->temp > 0)) {
        /* greedy: the first largest (penalized) logit, read in place - no
         * candidate copy, which cost ~1 ms a token at a 128k vocabulary */
        int32_t best = 0;
        float bv = pen && s->seen[0] ? penalize(logits[0], p->repeat_penalty) : logits[0];
        for (int32_t i = 1; i < n; i++) {
            float v = pen && s->seen[i] ? penalize(logits[i], p->repeat_penalty) : logits[i];
            if (v > bv) { bv = v; best = i; }
        }
        for (int32_t j = n_hist - w; j < n_hist; j++)
            if (hist[j] >= 0 && hist[j] < n) s->seen[hist[j]] = 0;
        c[0].logit = bv; c[0].id = best;
        s->prob[0] = 1;
        *sum_out = 1;
        return 1;
    }

    for (int32_t i = 0; i < n; i++) { c[i].logit = logits[i]; c[i].id = i; }
    if (pen) {
        for (int32_t j = n_hist - w; j < n_hist; j++) {
            int32_t id = hist[j];
            if (id < 0 || id >= n || !s->seen[id]) continue;
            s->seen[id] = 0;          /* each distinct id once */
            c[id].logit = penalize(c[id].logit, p->repeat_penalty);
        }
    }

    int32_t m = keep_top_k(c, n, p->top_k > 0 ? p->top_k : n);
    /* softmax over the kept (sorted: c[0] is the max) */
    double sum = 0;
    for (int32_t i = 0; i < m; i++) { s->prob[i] = expf(c[i].logit - c[0].logit); sum += s->prob[i]; }
    if (p->top_p < 1.0f) {
        double cum = 0;
        int32_t keep = m;
        for (int32_t i = 0; i < m; i++) {
            cum += s->prob[i] / sum;
            if (cum >= p->top_p) { keep = i + 1; break; }
        }
        m = keep;
    }
    if (p->min_p > 0.0f) {
        /* keep tokens with p >= min_p * p_max, i.e. logit >= max + log(min_p) */
        float thr = c[0].logit + logf(p->min_p);
        int32_t keep = 1;
        while (keep < m && c[keep].logit >= thr) keep++;
        m = keep;
    }
    /* temperature */
    sum = 0;
    for (int32_t i = 0; i < m; i++) {
        s->prob[i] = expf((c[i].logit - c[0].logit) / p->temp);
        sum += s->prob[i];
    }
    *sum_out = sum;
    return m;
}

int32_t sl_sampler_draw(sl_sampler *s, int32_t m, double sum)
{
    double r = sl_sampler_uniform(s) * sum, acc = 0;
    for (int32_t i = 0; i < m; i++) {
        acc += s->prob[i];
        if (r < acc) return s->cand[i].id;
    }
    return s->cand[m - 1].id;
}

int32_t sl_sampler_sample(sl_sampler *s, const float *logits, const int32_t *hist, int32_t n_hist)
{
    double sum;
    int32_t m = sl_sampler_dist(s, logits, hist, n_hist, &sum);
    if (!(s->p.temp > 0)) return s->cand[0].id;   /* greedy: no draw */
    return sl_sampler_draw(s, m, sum);
}
