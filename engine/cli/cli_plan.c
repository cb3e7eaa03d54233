/* `sluice plan -m MODEL [--mem-budget X] [-c CTX] [-t N] [-b N] [--mode M] ...`:
 * the streamer's memory decision and every number behind it (the reserve
 * from engine/reserve.c, as `sluice run` computes it), plus the
 * predicted ms/token from the device profile (~/.cache/sluice/profile.json,
 * written by `sluice profile`) or conservative defaults when there is none. */
#include "cli.h"
#include "cli_opts.h"
#include "../reserve.h"
#include "../../gguf/gguf_type.h"
#include "../../gguf/base/sl_file.h"
#include "../../gguf/base/sl_status.h"
#include "../../io/sluice_stream.h"
#ifdef SL_HAVE_RING_PLAN
#include "ring/ring_cli.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

/* Used when no profile exists: a slow SSD / UFS 2.x and a small memory bus. */
#define DEFAULT_DISK_BPS 500e6
#define DEFAULT_MEM_BPS  5e9

static const char *hsize(char *buf, size_t n, double b)
{
    const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int i = 0;
    while (b >= 1024 && i < 4) { b /= 1024; i++; }
    snprintf(buf, n, i ? "%.2f %s" : "%.0f %s", b, u[i]);
    return buf;
}

/* Reads "key": number from a flat JSON object (the profile's format). */
static int json_num(const char *txt, const char *key, double *out)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(txt, pat);
    if (!p) return -1;
    p = strchr(p + strlen(pat), ':');
    if (!p) return -1;
    char *end;
    double v = strtod(p + 1, &end);
    if (end == p + 1 || !(v > 0)) return -1;
    *out = v;
    return 0;
}

static int load_profile(char *path, size_t n, double *disk, double *mem)
{
    const char *home = getenv("HOME");
    if (!home) return -1;
    snprintf(path, n, "%s/.cache/sluice/profile.json", home);
    char *buf;
    size_t k;
    if (sl_file_read_data(path, "device profile", 65535, &buf, &k)) return -1;
    int ok = json_num(buf, "disk_bytes_per_s", disk) == 0;
    ok &= json_num(buf, "mem_bytes_per_s", mem) == 0;
    free(buf);
    return ok ? 0 : -1;
}

static int usage(FILE *f)
{
    fprintf(f,
        "usage: sluice plan -m MODEL [options]\n"
        "Prints the streamer's decision (resident / stream / mmap), every size it counts,\n"
        "the pinned units, slots, bytes streamed per token and the predicted ms/token:\n"
        "the plan `sluice run` with the same options follows.\n"
        "%s"
        "  --reserve SIZE         memory outside the streamer instead of the engine's\n"
        "                         KV cache + arena + scratch for these options\n"
        "  --depth N              prefetch depth (default 3)\n"
        "  --no-direct            buffered reads instead of O_DIRECT\n"
        "SIZE accepts 2.5G, 800M, 4096. Without --mem-budget: MemAvailable minus a margin.\n",
        sl_cli_model_opts_help);
    return f == stdout ? 0 : 2;
}

static int cmd_plan(int argc, char **argv)
{
    sl_cli_model_opts o;
    sl_cli_model_opts_init(&o);
    bool no_direct = false, reserve_given = false;
    unsigned long long reserve = 0;
    long long depth = 0;
    for (int i = 1; i < argc; i++)   /* --ring plans a cluster of devices (engine/cli/ring/) */
        if (!strcmp(argv[i], "--ring")) {
#ifdef SL_HAVE_RING_PLAN
            return sl_ring_plan_main(argc, argv);
#else
            fprintf(stderr, "plan: --ring: this sluice was built without GLPK (apt-get install libglpk-dev; make)\n");
            return 2;
#endif
        }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout);
        if (!strcmp(a, "--no-direct")) { no_direct = true; continue; }
        if (!strcmp(a, "--ctx")) argv[i] = (char *)"--ctx-size";   /* the older spelling */
        int r = sl_cli_model_opt(&o, argc, argv, &i, "plan");
        if (r < 0) return 2;
        if (r > 0) continue;
        if (i + 1 >= argc) { fprintf(stderr, "plan: %s needs a value\n", a); return usage(stderr); }
        const char *v = argv[++i];
        if (!strcmp(a, "--reserve")) {
            if (sl_cli_parse_size(v, &reserve)) { fprintf(stderr, "plan: bad size '%s'\n", v); return 2; }
            reserve_given = true;
        } else if (!strcmp(a, "--depth")) {
            if (sl_cli_int(v, 1, 64, &depth)) { fprintf(stderr, "plan: bad depth '%s'\n", v); return 2; }
        } else { fprintf(stderr, "plan: unknown option '%s'\n", a); return usage(stderr); }
    }
    const char *model = o.path;
    if (!model) { fprintf(stderr, "plan: -m MODEL is required\n"); return usage(stderr); }

    sl_reserve rs;
    if (sl_reserve_compute_file(&rs, model, &o.mp)) { fprintf(stderr, "plan: %s\n", sl_last_error()); return 1; }
    sl_stream_config c;
    sl_reserve_stream_config(&rs, &o.mp, &c);
    if (reserve_given) c.reserve_bytes = reserve;
    if (depth) c.depth = (int)depth;
    c.no_direct = no_direct;

    sl_stream_plan p;
    char err[512];
    int rc = sl_stream_plan_model(model, &c, &p, err, sizeof err);
    if (rc && p.model_bytes == 0) { fprintf(stderr, "plan: %s\n", err); return 1; }

    char b1[32], b2[32];
#define ROW(label, v) printf("  %-28s %14llu  %s\n", label, (ull)(v), hsize(b1, sizeof b1, (double)(v)))
    printf("model                          %s\n", model);
    printf("decision                       %s%s (io: %s, %s reads, alignment %u)\n",
           sl_stream_mode_name(p.mode), rc ? " -- DOES NOT FIT" : "", sl_stream_io_name(p.io), p.direct ? "O_DIRECT" : "buffered",
           p.align);
    if (rc) printf("  %s\n", err);
    printf("budget\n");
    if (c.mem_budget) ROW("--mem-budget", p.budget);
    else {
        ROW("MemAvailable", p.mem_available);
        ROW("- safety margin", p.margin_bytes);
        ROW("= budget", p.budget);
    }
    printf("sizes\n");
    ROW("model tensors", p.model_bytes);
    ROW("token embeddings", p.embd_bytes);
    if (p.ple_bytes) {
        ROW("per-layer embeddings", p.ple_bytes);
        ROW("  read per token (a row)", p.ple_row_bytes);
    }
    ROW("lm head", p.head_bytes);
    ROW("globals (norms, ...)", p.globals_bytes);
    ROW("GGUF metadata", p.meta_bytes);
    if (reserve_given) ROW("reserve (--reserve)", p.reserve_bytes);
    else {
        char lab[96];
        snprintf(lab, sizeof lab, "KV cache (ctx %d)", (int)rs.n_ctx);
        ROW(lab, rs.kv_bytes);
        if (rs.kv_latent)   /* MLA: one row of the latent and the shared rope key, no V rows */
            snprintf(lab, sizeof lab, "  per position (latent %d + rope key %d, %s, no V)", (int)rs.kv_latent,
                     (int)rs.kv_rope, sl_gguf_type_name((uint32_t)o.mp.type_k));
        else
            snprintf(lab, sizeof lab, "  per position (%s/%s)", sl_gguf_type_name((uint32_t)o.mp.type_k),
                     sl_gguf_type_name((uint32_t)o.mp.type_v));
        ROW(lab, rs.kv_pos_bytes);
        if (rs.n_swa_layers)
            printf("    %d of %d layers keep only their sliding window of %d positions\n", (int)rs.n_swa_layers,
                   (int)p.n_layers, (int)rs.swa_window);
        snprintf(lab, sizeof lab, "compute arena (batch %d)", (int)rs.n_batch);
        ROW(lab, rs.arena_bytes);
        ROW("logits, sampler, history", rs.logits_bytes);
        ROW("tokenizer", rs.tok_bytes);
        snprintf(lab, sizeof lab, "prefill panels (%d threads)", rs.n_threads);
        ROW(lab, rs.panel_bytes);
    }
    printf("units                          %d = %d layers + %d lm-head chunks\n",
           (int)p.n_units, (int)p.n_layers, (int)p.n_head_chunks);
    printf("pinned                         %d units%s%s\n", (int)p.n_pinned,
           p.embd_pinned ? ", embeddings" : ", embeddings read by row",
           p.head_pinned ? ", lm head" : "");
    ROW("pinned bytes", p.pinned_bytes);
    printf("slots                          %d x %s (prefetch depth %d)\n", (int)p.n_slots,
           hsize(b2, sizeof b2, (double)p.slot_bytes), (int)p.depth);
    ROW("slot bytes", (uint64_t)p.n_slots * p.slot_bytes);
    ROW("peak (streamer + reserve)", p.peak_bytes);
    ROW("streamed per token", p.streamed_bytes_per_token);
    if (p.n_expert > 0) {
        printf("routed experts                 %d per layer, %d used per token%s\n", (int)p.n_expert,
               (int)p.n_expert_used, p.experts_split ? ", streamed one (layer, expert) at a time" : "");
        ROW("dense layer bytes", p.dense_bytes);
        ROW("expert bytes", p.expert_bytes);
        if (p.experts_split) {
            printf("expert cache                   %d slots x %s (%.1f%% of the experts)\n",
                   (int)p.n_expert_slots, hsize(b2, sizeof b2, (double)p.expert_slot_bytes),
                   100.0 * p.expected_hit_rate);
            ROW("expert cache bytes", (uint64_t)p.n_expert_slots * p.expert_slot_bytes);
            printf("  %-28s %14.3f  (uniform routing: a floor, trained routers hit more)\n",
                   "expected hit rate", p.expected_hit_rate);
            ROW("expert bytes per token", p.expert_bytes_per_token);
        }
    }
#undef ROW
    if (p.mode == SL_MODE_STREAM && p.n_pinned > 0 && p.n_pinned < p.n_units) {
        printf("pinned units                  ");
        for (int32_t i = 0; i < p.n_pinned; i++) {
            int32_t u = sl_stream_plan_pinned_unit(&p, i);
            if (u < p.n_layers) printf(" %d", (int)u);
            else printf(" head%d", (int)(u - p.n_layers));
        }
        printf("  (of %d, spread evenly over the schedule)\n", (int)p.n_units);
    }

    double disk = DEFAULT_DISK_BPS, mem = DEFAULT_MEM_BPS;
    char ppath[512] = "";
    bool have = load_profile(ppath, sizeof ppath, &disk, &mem) == 0;
    if (!have) { disk = DEFAULT_DISK_BPS; mem = DEFAULT_MEM_BPS; }
    double t_disk = (double)p.streamed_bytes_per_token / disk * 1e3;
    /* an MoE token touches the dense weights and k of n experts */
    double touched = (double)p.model_bytes;
    if (p.n_expert > 0)
        touched -= (double)p.expert_bytes * (1.0 - (double)p.n_expert_used / (double)p.n_expert);
    double t_mem = touched / mem * 1e3;
    double t = t_disk > t_mem ? t_disk : t_mem;
    printf("prediction (%s)\n", have ? ppath : "no device profile: conservative defaults; run `sluice profile`");
    printf("  disk %.2f GB/s, memory %.2f GB/s\n", disk / 1e9, mem / 1e9);
    printf("  I/O per token                %10.1f ms  (streamed bytes / disk bandwidth)\n", t_disk);
    printf("  weights through memory       %10.1f ms  (%s / memory bandwidth)\n", t_mem,
           p.n_expert > 0 ? "dense + k/n of the expert bytes" : "model bytes");
    printf("  predicted decode             %10.1f ms/token  (%.2f tok/s; I/O overlaps compute)\n",
           t, t > 0 ? 1e3 / t : 0.0);
    if (p.mode == SL_MODE_MMAP)
        printf("  (mmap: the page cache decides what stays; the figure assumes nothing does)\n");
    return rc ? 1 : 0;
}

SL_CLI_COMMAND(plan_cmd, "plan", "memory plan for a model: mode, sizes, pins, slots, ms/token", cmd_plan)
