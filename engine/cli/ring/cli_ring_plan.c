/* `sluice plan --ring cluster.json [--brute]`: the piped-ring assignment for
 * a cluster described by its devices' profile numbers (a cluster the user may
 * not have): windows, rounds, predicted ms/token and where each device's time goes. */
#include "ring_cli.h"
#include "../cli_opts.h"
#include "../../sluice.h"
#include "ring_plan.h"
#include "../../../gguf/base/sl_status.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fputs("usage: sluice plan --ring CLUSTER.json [-m MODEL [-c CTX] [-b N] [-t N]] [--brute]\n"
          "Chooses the layer windows of a piped ring (one ILP per valid number of rounds, GLPK)\n"
          "for the devices CLUSTER.json describes and prints the windows, the predicted ms/token\n"
          "and where each device's time goes. --brute: exhaustive search instead (small cases).\n"
          "-m MODEL: the model part from a GGUF file (its layer sizes by type, lm head, KV, and the\n"
          "engine's reserve for devices without reserve_bytes) instead of CLUSTER.json's \"model\".\n"
          "CLUSTER.json: {\"model\": {n_layers, n_embd, n_ctx, ctx, layer_bytes{type: B},\n"
          "  head_bytes{type: B}, kv_bytes_per_token_layer}, \"link\": {latency_s, bytes_per_s},\n"
          "  \"devices\": [{name, mem_budget_bytes, reserve_bytes, disk_bytes_per_s, mem_bytes_per_s,\n"
          "  matvec{type: B/s}, profile: \"a `sluice profile` JSON for the numbers not given\"}]}\n", f);
}

int sl_ring_plan_main(int argc, char **argv)
{
    const char *path = NULL;
    int brute = 0;
    sl_cli_model_opts o;
    sl_cli_model_opts_init(&o);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--brute")) { brute = 1; continue; }
        if (!strcmp(argv[i], "--ring") && i + 1 < argc) { path = argv[++i]; continue; }
        int r = sl_cli_model_opt(&o, argc, argv, &i, "plan");
        if (r < 0) return 2;
        if (r > 0) continue;
        fprintf(stderr, "plan --ring: unknown or incomplete argument '%s'\n", argv[i]);
        usage(stderr);
        return 2;
    }
    if (!path) { usage(stderr); return 2; }
    sl_ring_model gm;
    double reserve = 0;
    if (o.path && sl_ring_model_from_gguf(&gm, &reserve, o.path, &o.mp)) {
        fprintf(stderr, "plan: %s\n", sl_last_error());
        return 1;
    }
    static sl_ring_cluster c;   /* 64 devices' tables: not on the stack */
    if (sl_ring_cluster_load(&c, path, o.path ? &gm : NULL, reserve)) { fprintf(stderr, "plan: %s\n", sl_last_error()); return 1; }
    sl_ring_plan p;
    int rc = brute ? sl_ring_plan_brute(&c, &p) : sl_ring_plan_solve(&c, &p);
    if (rc) { fprintf(stderr, "plan: %s\n", sl_last_error()); return 1; }
    sl_ring_cost cost;
    if (sl_ring_cost_eval(&c, p.k, p.w, &cost)) { fprintf(stderr, "plan: %s\n", sl_last_error()); return 1; }

    const sl_ring_model *mo = &c.model;
    printf("cluster                        %s (%d devices, %s)\n", path, c.n_dev,
           brute ? "exhaustive search" : "one ILP per round count, GLPK");
    printf("model                          %s: %d layers, n_embd %d, KV for %d tokens, attention over %d\n",
           mo->name[0] ? mo->name : "(unnamed)", mo->n_layers, mo->n_embd, mo->n_ctx, mo->ctx);
    printf("rounds tried                  ");
    for (int i = 0; i < p.n_tried; i++) {
        if (p.tried_t[i] < 0) printf(" k=%d: no fit;", p.tried_k[i]);
        else printf(" k=%d: %.0f ms;", p.tried_k[i], p.tried_t[i] * 1e3);
    }
    printf("\nchosen                         k = %d rounds of %d layers, windows", p.k, mo->n_layers / p.k);
    for (int m = 0; m < c.n_dev; m++) printf(" %d", p.w[m]);
    printf("\npredicted                      %.1f ms/token (%.2f tok/s), bound by %s\n", p.t_s * 1e3, 1 / p.t_s,
           cost.bound < 0 ? "the ring (compute + hops)" : "one device's loads + compute");
    if (cost.bound >= 0) printf("                               (%s: its window loads while the others compute do not finish in time)\n",
                                c.dev[cost.bound].name);
    printf("\n| device | window | layers/token | first layers | memory | budget | streamed/token | compute | disk | sends | idle |\n"
           "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|\n");
    for (int m = 0; m < c.n_dev; m++) {
        const sl_ring_cost_dev *d = &cost.dev[m];
        char first[64] = "";
        size_t o = 0;
        for (int r = 0; r < p.k && r < 4 && o < sizeof first - 12; r++) {
            int f;
            sl_ring_plan_window(&p, m, r, &f);
            o += (size_t)snprintf(first + o, sizeof first - o, "%s%d-%d", r ? "," : "", f, f + p.w[m] - 1);
        }
        if (p.k > 4) snprintf(first + o, sizeof first - o, ",...");
        double idle = p.t_s - d->compute_s - d->comm_s;
        printf("| %s%s | %d | %d | %s | %s %.2f GB | %.2f GB | %.2f GB | %.1f ms | %.1f ms | %.1f ms | %.1f ms |\n",
               c.dev[m].name, m == 0 ? " (rank 0, head)" : "", p.w[m], p.k * p.w[m], first,
               d->streams ? "stream" : "resident", d->mem_bytes / 1e9, c.dev[m].budget / 1e9,
               d->streamed_bytes / 1e9, d->compute_s * 1e3, d->disk_s * 1e3, d->comm_s * 1e3, idle < 0 ? 0 : idle * 1e3);
    }
    printf("\ncompute: weights through each type's matvec rate + KV reads at memory bandwidth;\n"
           "disk: streamed bytes / disk bandwidth, overlapped with the other devices' compute;\n"
           "sends: k hops of n_embd floats; idle: waiting for the ring (token time - compute - sends).\n");
    return 0;
}
