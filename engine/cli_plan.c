/* `sluice plan -m MODEL [--mem-budget X] [-c CTX] [--mode M] [--io B] ...`:
 * the streamer's memory decision and every number behind it, plus the
 * predicted ms/token from the device profile (~/.cache/sluice/profile.json,
 * written by `sluice profile`) or conservative defaults when there is none. */
#include "cli.h"
#include "../io/sluice_stream.h"
#include "../gguf/gguf.h"

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
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char buf[65536];
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    int ok = json_num(buf, "disk_bytes_per_s", disk) == 0;
    ok &= json_num(buf, "mem_bytes_per_s", mem) == 0;
    return ok ? 0 : -1;
}

/* KV cache and compute arena of a llama-style model, estimated from metadata
 * (f16 K and V per layer; f32 activations). The engine's exact figure may
 * differ a little; --reserve overrides. */
static uint64_t estimate_reserve(const char *path, uint64_t ctx, uint64_t *kv, uint64_t *arena)
{
    *kv = *arena = 0;
    sl_gguf *g;
    if (sl_gguf_open_path(&g, path) != 0) return 0;
    const char *arch = "llama";
    uint64_t alen;
    sl_gguf_get_str(g, "general.architecture", &arch, &alen);
    char key[160];
    uint32_t n_layer = 0, n_embd = 0, n_head = 0, n_head_kv = 0, n_ff = 0;
#define GETU(field, name) snprintf(key, sizeof key, "%s." name, arch); sl_gguf_get_u32(g, key, &field)
    GETU(n_layer, "block_count");
    GETU(n_embd, "embedding_length");
    GETU(n_head, "attention.head_count");
    GETU(n_head_kv, "attention.head_count_kv");
    GETU(n_ff, "feed_forward_length");
#undef GETU
    if (!n_head_kv) n_head_kv = n_head;
    uint64_t n_vocab = 0;
    const sl_gguf_tensor *e = sl_gguf_find_tensor(g, "token_embd.weight");
    if (e && e->n_dims >= 2) n_vocab = e->ne[1];
    if (!n_layer) n_layer = (uint32_t)sl_gguf_n_layers(g);
    if (!n_embd && e) n_embd = (uint32_t)e->ne[0];
    uint64_t kv_dim = n_head ? (uint64_t)n_embd * n_head_kv / n_head : n_embd;
    *kv = 2ull * n_layer * ctx * kv_dim * 2;
    *arena = (8ull * n_embd + 3ull * n_ff + n_vocab + (uint64_t)n_head * ctx) * 4 * 2;
    sl_gguf_close(g);
    return *kv + *arena;
}

static int usage(FILE *f)
{
    fprintf(f,
        "usage: sluice plan -m MODEL [--mem-budget SIZE] [-c CTX] [--mode auto|resident|stream|mmap]\n"
        "                   [--io auto|uring|pread] [--reserve SIZE] [--depth N] [--max-pinned N]\n"
        "                   [--no-direct]\n"
        "Prints the streamer's decision (resident / stream / mmap), every size it counts,\n"
        "the pinned units, slots, bytes streamed per token and the predicted ms/token.\n"
        "SIZE accepts 2.5G, 800M, 4096. Without --mem-budget: MemAvailable minus a margin.\n"
        "Without --reserve: KV cache (f16, CTX tokens, default 4096) + arena estimated\n"
        "from the model's metadata.\n");
    return f == stdout ? 0 : 2;
}

static int cmd_plan(int argc, char **argv)
{
    const char *model = NULL;
    sl_stream_config c;
    sl_stream_config_init(&c);
    uint64_t ctx = 4096;
    bool reserve_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout);
        if (!strcmp(a, "--no-direct")) { c.no_direct = true; continue; }
        if (i + 1 >= argc) { fprintf(stderr, "plan: %s needs a value\n", a); return usage(stderr); }
        const char *v = argv[++i];
        unsigned long long n;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--mem-budget")) {
            if (sl_cli_parse_size(v, &n) || n == 0) { fprintf(stderr, "plan: bad size '%s'\n", v); return 2; }
            c.mem_budget = n;
        } else if (!strcmp(a, "--reserve")) {
            if (sl_cli_parse_size(v, &n)) { fprintf(stderr, "plan: bad size '%s'\n", v); return 2; }
            c.reserve_bytes = n; reserve_given = true;
        } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx")) {
            char *end; ctx = strtoull(v, &end, 10);
            if (*end || ctx == 0 || ctx > (1u << 24)) { fprintf(stderr, "plan: bad context '%s'\n", v); return 2; }
        } else if (!strcmp(a, "--mode")) {
            if (!strcmp(v, "auto")) c.mode = SL_MODE_AUTO;
            else if (!strcmp(v, "resident")) c.mode = SL_MODE_RESIDENT;
            else if (!strcmp(v, "stream")) c.mode = SL_MODE_STREAM;
            else if (!strcmp(v, "mmap")) c.mode = SL_MODE_MMAP;
            else { fprintf(stderr, "plan: bad mode '%s'\n", v); return 2; }
        } else if (!strcmp(a, "--io")) {
            if (!strcmp(v, "auto")) c.io = SL_IO_AUTO;
            else if (!strcmp(v, "uring")) c.io = SL_IO_URING;
            else if (!strcmp(v, "pread")) c.io = SL_IO_PREAD;
            else { fprintf(stderr, "plan: bad io backend '%s'\n", v); return 2; }
        } else if (!strcmp(a, "--depth")) c.depth = atoi(v);
        else if (!strcmp(a, "--max-pinned")) c.max_pinned = atoi(v);
        else { fprintf(stderr, "plan: unknown option '%s'\n", a); return usage(stderr); }
    }
    if (!model) { fprintf(stderr, "plan: -m MODEL is required\n"); return usage(stderr); }

    uint64_t kv = 0, arena = 0;
    if (!reserve_given) c.reserve_bytes = estimate_reserve(model, ctx, &kv, &arena);

    sl_stream_plan p;
    char err[512];
    int rc = sl_stream_plan_model(model, &c, &p, err, sizeof err);
    if (rc && p.model_bytes == 0) { fprintf(stderr, "plan: %s\n", err); return 1; }

    static const char *modes[] = { "auto", "resident", "stream", "mmap" };
    static const char *ios[] = { "auto", "io_uring", "pread pool" };
    char b1[32], b2[32];
#define ROW(label, v) printf("  %-28s %14llu  %s\n", label, (ull)(v), hsize(b1, sizeof b1, (double)(v)))
    printf("model                          %s\n", model);
    printf("decision                       %s%s (io: %s, %s reads, alignment %u)\n",
           modes[p.mode], rc ? " -- DOES NOT FIT" : "", ios[p.io], p.direct ? "O_DIRECT" : "buffered",
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
    ROW("lm head", p.head_bytes);
    ROW("globals (norms, ...)", p.globals_bytes);
    ROW("GGUF metadata", p.meta_bytes);
    if (reserve_given) ROW("reserve (--reserve)", p.reserve_bytes);
    else {
        char lab[64];
        snprintf(lab, sizeof lab, "KV cache (ctx %llu, est.)", (ull)ctx);
        ROW(lab, kv);
        ROW("compute arena (est.)", arena);
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
    double t_mem = (double)p.model_bytes / mem * 1e3;
    double t = t_disk > t_mem ? t_disk : t_mem;
    printf("prediction (%s)\n", have ? ppath : "no device profile: conservative defaults; run `sluice profile`");
    printf("  disk %.2f GB/s, memory %.2f GB/s\n", disk / 1e9, mem / 1e9);
    printf("  I/O per token                %10.1f ms  (streamed bytes / disk bandwidth)\n", t_disk);
    printf("  weights through memory       %10.1f ms  (model bytes / memory bandwidth)\n", t_mem);
    printf("  predicted decode             %10.1f ms/token  (%.2f tok/s; I/O overlaps compute)\n",
           t, t > 0 ? 1e3 / t : 0.0);
    if (p.mode == SL_MODE_MMAP)
        printf("  (mmap: the page cache decides what stays; the figure assumes nothing does)\n");
    return rc ? 1 : 0;
}

SL_CLI_COMMAND(plan_cmd, "plan", "memory plan for a model: mode, sizes, pins, slots, ms/token", cmd_plan)
