/* Piped-ring assignment (prima.cpp's idea, our own model): N devices form a
 * ring, a token takes k rounds, and in every round device m computes a window
 * of w[m] consecutive layers, so sum(w) * k = n_layers. The latency model and
 * the windows chosen by one small ILP per valid k (GLPK, ring_ilp.c) or by
 * brute force (the tests' oracle) live here.
 *
 * Model (per token; bytes as the streamer counts them; see README "Ring"):
 *   x_m       = k * w[m] layers on device m (device 0 also holds the lm head H)
 *   compute_m = x_m * (sum_t layer_bytes[t] / matvec_bps_m[t] + kv_per_layer(ctx) / mem_bps_m)
 *               (f32 tensors, norms and biases, at mem_bps_m)
 *               + head_m (device 0: sum_t head_bytes[t] / matvec_bps_0[t])
 *   memory    resident when x_m * (layer + kv_layer(n_ctx)) + H_m + reserve_m <= budget_m;
 *             else the device streams: slots for its window, s = max(w[m], 2) layers (the
 *             next window loads into them while the others compute; 2 = the streamer's floor),
 *             KV and reserve stay, the rest of the budget pins weights, and what is not
 *             pinned is read per token:
 *             streamed_m = (x_m + s) * layer + x_m * kv_layer + H_m + reserve_m - budget_m
 *             (the device cannot stream at all when s * layer + KV + reserve > budget).
 *   disk_m    = streamed_m / disk_bps_m: a device loads its next window while the others
 *             compute, so its own cycle (load, then compute its window) must fit in a token:
 *   T         = max( sum_m compute_m + k * N * hop,  max_m (compute_m + disk_m) )
 *             hop = link latency + n_embd * 4 bytes / link bandwidth (no hops when N = 1). */
#ifndef SL_RING_PLAN_H
#define SL_RING_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define SL_RING_MAX_DEV   64
#define SL_RING_MAX_LAYERS 4096
#define SL_RING_NAME      64
#define SL_RING_NTYPE     31     /* = SL_GGML_TYPE_COUNT: per-type tables indexed by ggml id */

typedef struct sl_ring_model {
    char name[SL_RING_NAME];
    int n_layers;
    int n_embd;
    int n_ctx;                            /* KV reserved for this many tokens */
    int ctx;                              /* tokens of context attention reads per step (model) */
    double layer_bytes[SL_RING_NTYPE];    /* one layer's weight bytes by ggml type */
    double head_bytes[SL_RING_NTYPE];     /* output norm + lm head, on device 0 */
    double kv_bytes_per_token_layer;      /* K + V of one token in one layer */
} sl_ring_model;

typedef struct sl_ring_device {
    char name[SL_RING_NAME];
    double budget;                        /* bytes: the rank's --mem-budget */
    double reserve;                       /* bytes besides weights and KV (arena, logits, scratch) */
    double disk_bps, mem_bps;             /* bytes/s (profile.json: disk_bytes_per_s, mem_bytes_per_s) */
    double matvec_bps[SL_RING_NTYPE];     /* weight bytes/s of matvec by type (profile.json "matvec") */
} sl_ring_device;

typedef struct sl_ring_cluster {
    sl_ring_model model;
    sl_ring_device dev[SL_RING_MAX_DEV];  /* ring order; dev[0] is rank 0 (tokens, head, sampling) */
    int n_dev;
    double link_latency_s, link_bps;
} sl_ring_cluster;

/* Where the time of one token goes on each device, for a given (k, w). */
typedef struct sl_ring_cost_dev {
    int streams;                          /* 0 resident, 1 streaming */
    double mem_bytes;                     /* bytes the device holds (<= budget) */
    double streamed_bytes;                /* per token */
    double compute_s, disk_s, comm_s;     /* per token */
} sl_ring_cost_dev;

typedef struct sl_ring_cost {
    double t_s;                           /* predicted seconds per token */
    double ring_s;                        /* sum of compute + all hops */
    int bound;                            /* -1: the ring (compute + hops); m: device m's load + compute */
    sl_ring_cost_dev dev[SL_RING_MAX_DEV];
} sl_ring_cost;

typedef struct sl_ring_plan {
    int k;                                /* rounds per token */
    int w[SL_RING_MAX_DEV];               /* window per device (layers per round) */
    int n_dev;
    double t_s;                           /* predicted seconds per token */
    int n_tried;                          /* round counts examined */
    int tried_k[64];
    double tried_t[64];                   /* < 0: infeasible for that k */
} sl_ring_plan;

/* Parses cluster.json text ("what" names it in messages); a device may say
 * "profile": "FILE" (a `sluice profile` JSON, relative to base_dir) for the numbers
 * it does not give itself. model: NULL = the file's "model"; else this one (from a
 * GGUF) and model_reserve is the reserve of devices that give no reserve_bytes.
 * 0 or SL_EFORMAT / SL_ERANGE / SL_EIO with a message; c is left empty on failure. */
int sl_ring_cluster_parse(sl_ring_cluster *c, const char *text, size_t len, const char *what,
                          const char *base_dir, const sl_ring_model *model, double model_reserve);
int sl_ring_cluster_load(sl_ring_cluster *c, const char *path, const sl_ring_model *model, double model_reserve);
/* True when a device lacks the matvec rate of a type the model uses there (the
 * first such device and type in *dev, *type): the planner cannot cost it. */
bool sl_ring_cluster_missing_rate(const sl_ring_cluster *c, int *dev, int *type);

/* A device's disk, memory and matvec rates from a `sluice profile` JSON (those not set in d). */
int sl_ring_device_read_profile(sl_ring_device *d, const char *path);

/* cluster.json for c (the model only when c->model.n_layers, reserve_bytes only when > 0:
 * else the model file's reserve applies), so that sl_ring_cluster_parse reads back the same
 * numbers. */
int sl_ring_cluster_write(FILE *f, const sl_ring_cluster *c, const char *source);

/* The model of a cluster from a GGUF file opened with p (ring_model.c): layer bytes
 * by type averaged over the layers, the lm head, KV per token and layer and
 * *reserve = the engine's reserve besides the KV cache. */
struct sl_model_params;
int sl_ring_model_from_gguf(sl_ring_model *m, double *reserve, const char *path, const struct sl_model_params *p);

/* The latency model for rounds k and windows w[0..n_dev). 0, or SL_ERANGE
 * when a window does not fit its device's budget (message names the device). */
int sl_ring_cost_eval(const sl_ring_cluster *c, int k, const int *w, sl_ring_cost *out);

/* Every valid k (divisors of n_layers with n_layers / k >= n_dev), every window
 * split: the exhaustive oracle. SL_ERANGE if nothing fits. */
int sl_ring_plan_brute(const sl_ring_cluster *c, sl_ring_plan *p);

/* One ILP per valid k with GLPK; keeps the best (ring_ilp.c). */
int sl_ring_plan_solve(const sl_ring_cluster *c, sl_ring_plan *p);

/* The model's coefficients for device m (bytes, seconds): layer and KV bytes per layer,
 * head bytes, seconds per layer and for the head, seconds per hop. One source for the
 * oracle and the ILP. */
void sl_ring_coef(const sl_ring_cluster *c, int m, int k, double *lb, double *kvl, double *head,
                  double *t_layer, double *t_head, double *hop);

/* Slots (layers) a streaming device with window w holds: max(w, 2). */
int sl_ring_slots(int w);

/* Layers of device m in round r: [*first, *first + w[m]). */
void sl_ring_plan_window(const sl_ring_plan *p, int m, int r, int *first);

#endif
