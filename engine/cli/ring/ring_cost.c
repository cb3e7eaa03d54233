/* The piped-ring latency model (formulas in ring_plan.h) and the exhaustive
 * search the ILPs are tested against. */
#include "ring_plan.h"
#include "../../../gguf/gguf_type.h"
#include "../../../gguf/base/sl_internal.h"
#include "../../../gguf/base/sl_status.h"

#include <string.h>

static double layer_bytes(const sl_ring_model *m)
{
    double b = 0;
    for (int t = 0; t < SL_RING_NTYPE; t++) b += m->layer_bytes[t];
    return b;
}

static double head_bytes(const sl_ring_model *m)
{
    double b = 0;
    for (int t = 0; t < SL_RING_NTYPE; t++) b += m->head_bytes[t];
    return b;
}

/* f32 tensors are norms and biases (vectors read once, not matvecs; `sluice profile`
 * has no f32 rate): memory bandwidth. Every other type at its matvec rate. */
static double type_bps(const sl_ring_device *d, int t)
{
    return t == SL_GGML_F32 ? d->mem_bps : d->matvec_bps[t];
}

/* Seconds of one layer on device d: weights through the matvec of their type,
 * plus attention reading ctx tokens of KV from memory. */
static double layer_s(const sl_ring_model *m, const sl_ring_device *d)
{
    double s = 0;
    for (int t = 0; t < SL_RING_NTYPE; t++)
        if (m->layer_bytes[t] > 0) s += m->layer_bytes[t] / type_bps(d, t);
    return s + m->kv_bytes_per_token_layer * m->ctx / d->mem_bps;
}

static double head_s(const sl_ring_model *m, const sl_ring_device *d)
{
    double s = 0;
    for (int t = 0; t < SL_RING_NTYPE; t++)
        if (m->head_bytes[t] > 0) s += m->head_bytes[t] / type_bps(d, t);
    return s;
}

static double hop_s(const sl_ring_cluster *c)
{
    return c->n_dev > 1 ? c->link_latency_s + 4.0 * c->model.n_embd / c->link_bps : 0;
}

/* Coefficients of the model for device m at rounds k, shared with ring_ilp.c
 * through this one function so the ILP and the oracle cannot drift apart. */
void sl_ring_coef(const sl_ring_cluster *c, int m, int k, double *lb, double *kvl, double *head,
                  double *t_layer, double *t_head, double *hop)
{
    *lb = layer_bytes(&c->model);
    *kvl = c->model.kv_bytes_per_token_layer * c->model.n_ctx;
    *head = m == 0 ? head_bytes(&c->model) : 0;
    *t_layer = layer_s(&c->model, &c->dev[m]);
    *t_head = m == 0 ? head_s(&c->model, &c->dev[m]) : 0;
    *hop = hop_s(c);
    (void)k;
}

/* The streamer works with no fewer than 2 slots (stream_plan.c: one computed on, one
 * loading), so a window of one layer still holds two. */
#define SL_RING_MIN_SLOTS 2

int sl_ring_slots(int w)
{
    return w > SL_RING_MIN_SLOTS ? w : SL_RING_MIN_SLOTS;
}

int sl_ring_cost_eval(const sl_ring_cluster *c, int k, const int *w, sl_ring_cost *out)
{
    memset(out, 0, sizeof *out);
    double sum_w = 0, ring = 0;
    for (int m = 0; m < c->n_dev; m++) {
        if (w[m] < 1) return sl_err_set(SL_EINVAL, "ring: device %d (%s) has an empty window", m, c->dev[m].name);
        sum_w += w[m];
    }
    if (k < 1 || sum_w * k != c->model.n_layers)
        return sl_err_set(SL_EINVAL, "ring: %d rounds of %.0f layers do not make %d layers", k, sum_w, c->model.n_layers);
    double hop = 0;
    for (int m = 0; m < c->n_dev; m++) {
        const sl_ring_device *d = &c->dev[m];
        sl_ring_cost_dev *o = &out->dev[m];
        double lb, kvl, head, tl, th;
        sl_ring_coef(c, m, k, &lb, &kvl, &head, &tl, &th, &hop);
        double x = (double)k * w[m];
        double resident = x * (lb + kvl) + head + d->reserve;
        if (resident <= d->budget) {
            o->mem_bytes = resident;
        } else {
            double fixed = sl_ring_slots(w[m]) * lb + x * kvl + d->reserve;   /* window slots, KV, reserve */
            if (fixed > d->budget)
                return sl_err_set(SL_ERANGE, "ring: device %d (%s): a window of %d layers (%.0f MB) + KV + reserve "
                                  "needs %.0f MB, budget %.0f MB", m, d->name, w[m], w[m] * lb / 1e6, fixed / 1e6,
                                  d->budget / 1e6);
            o->streams = 1;
            o->mem_bytes = d->budget;
            o->streamed_bytes = (x + sl_ring_slots(w[m])) * lb + x * kvl + head + d->reserve - d->budget;
            o->disk_s = o->streamed_bytes / d->disk_bps;
        }
        o->compute_s = x * tl + th;
        o->comm_s = k * hop;          /* this device's sends */
        ring += o->compute_s;
    }
    ring += (double)k * c->n_dev * hop;
    out->ring_s = ring;
    out->t_s = ring;
    out->bound = -1;
    for (int m = 0; m < c->n_dev; m++) {
        double own = out->dev[m].compute_s + out->dev[m].disk_s;
        if (own > out->t_s) { out->t_s = own; out->bound = m; }
    }
    return 0;
}

void sl_ring_plan_window(const sl_ring_plan *p, int m, int r, int *first)
{
    int f = 0;
    for (int j = 0; j < p->n_dev; j++) f += p->w[j];
    f *= r;
    for (int j = 0; j < m; j++) f += p->w[j];
    *first = f;
}

/* Next composition of total into n positive parts (lexicographic); 0 when done. */
static int next_split(int *w, int n, int total)
{
    (void)total;
    /* move one unit from the last part into the rightmost part that can take it */
    for (int i = n - 2; i >= 0; i--) {
        int tail = 0;
        for (int j = i + 1; j < n; j++) tail += w[j];
        if (tail > n - 1 - i) {   /* the tail can give one and keep every part >= 1 */
            w[i]++;
            tail--;
            for (int j = i + 1; j < n - 1; j++) { w[j] = 1; tail--; }
            w[n - 1] = tail;
            return 1;
        }
    }
    return 0;
}

int sl_ring_plan_brute(const sl_ring_cluster *c, sl_ring_plan *p)
{
    memset(p, 0, sizeof *p);
    p->n_dev = c->n_dev;
    p->t_s = -1;
    int n = c->n_dev, L = c->model.n_layers;
    for (int k = 1; k <= L; k++) {
        if (L % k || L / k < n) continue;
        int W = L / k, w[SL_RING_MAX_DEV];
        for (int m = 0; m < n - 1; m++) w[m] = 1;
        w[n - 1] = W - (n - 1);
        double best_k = -1;
        do {
            sl_ring_cost cost;
            if (sl_ring_cost_eval(c, k, w, &cost)) continue;
            if (best_k < 0 || cost.t_s < best_k) best_k = cost.t_s;
            if (p->t_s < 0 || cost.t_s < p->t_s) {
                p->t_s = cost.t_s;
                p->k = k;
                memcpy(p->w, w, sizeof(int) * (size_t)n);
            }
        } while (next_split(w, n, W));
        if (p->n_tried < 64) { p->tried_k[p->n_tried] = k; p->tried_t[p->n_tried++] = best_k; }
    }
    sl_err_clear();
    if (p->t_s < 0) return sl_err_set(SL_ERANGE, "ring: no window split fits every device's budget");
    return 0;
}
