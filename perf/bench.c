/* `sluice bench`: storage + inference benchmark. Every configuration (mode x
 * io x memory budget or free memory x threads) and repetition runs in a
 * forked child, so peak RSS (VmHWM) is per configuration; the parent samples
 * MemAvailable meanwhile (memory pressure as in prima.cpp: drop in
 * MemAvailable during the run / MemTotal). "Device with N GiB free" runs hold
 * the rest of RAM in build/balloon (no cgroups). The disk bandwidth is measured
 * in the same run, and each configuration is set against its physical bound. */
#include "../engine/cli/cli.h"
#include "../engine/cli/cli_progress.h"
#include "../gguf/base/sl_file.h"
#include "../io/sluice_stream.h"
#include "bench.h"
#include "perf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RUNNERS 8
#define MAX_LIST 16

static const bench_runner *g_runners[MAX_RUNNERS];   /* filled by constructors before main */
static int g_n_runners;

void bench_register(const bench_runner *r)
{
    if (g_n_runners < MAX_RUNNERS) g_runners[g_n_runners++] = r;
}

double bench_cold_start(const char *model)
{
    perf_evict(model);
    return perf_now();
}

void bench_sample_names(bench_sample *o, int mode, int io)
{
    snprintf(o->mode, sizeof o->mode, "%s", sl_stream_mode_name(mode));
    snprintf(o->io, sizeof o->io, "%s", mode == SL_MODE_MMAP ? "mmap" : sl_stream_io_name(io));
}

/* ---- statistics ----------------------------------------------------------- */
enum { M_PP, M_TG, M_TTFT_COLD, M_TTFT_WARM, M_MSTOK, M_STALL, M_BPT, M_DISK, M_RSS, M_PRESS, M_BOUND, M_FRAC, M_HIT, M_BASE, M_N };
static const char *const m_keys[M_N] = {
    "prompt_tps", "decode_tps", "ttft_cold_ms", "ttft_warm_ms", "ms_per_token", "stall_pct", "bytes_per_token",
    "disk_bytes_per_s", "peak_rss_bytes", "mem_pressure", "bound_ms_per_token", "bound_fraction",
    "expert_hit_rate", "base_rss_bytes",
};

typedef struct {
    bench_cfg cfg;
    uint64_t free_bytes;       /* balloon target, 0 = none */
    uint64_t avail_bytes;      /* MemAvailable when the configuration started */
    char mode[16], io[16];
    bool compute_included;
    uint64_t budget_bytes, model_bytes;
    int n;                     /* successful reps */
    double v[M_N][64];
    char note[160];
    char error[256];
} bench_result;

static void mean_sd(const double *x, int n, double *m, double *sd)
{
    double s = 0, s2 = 0;
    for (int i = 0; i < n; i++) s += x[i];
    *m = n ? s / n : NAN;
    for (int i = 0; i < n; i++) s2 += (x[i] - *m) * (x[i] - *m);
    *sd = n > 1 ? sqrt(s2 / (n - 1)) : 0;
}

/* ---- lists -------------------------------------------------------------------- */
static int split_list(char *s, char **items, int max)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ",")) items[n++] = tok;
    return n;
}

/* ---- profile.json (optional): read request size and queue depth ---------------- */
static double json_num(const char *text, const char *key)
{
    char pat[80];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    return p ? strtod(p + strlen(pat), NULL) : 0;
}

static void read_profile(uint32_t *req, int *qd)
{
    char path[4200], dir[4096];
    snprintf(path, sizeof path, "%s/profile.json", perf_cache_dir(dir, sizeof dir));
    FILE *f = fopen(path, "r");
    if (!f) return;
    char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    double r = json_num(buf, "req_bytes"), q = json_num(buf, "queue_depth");
    if (r >= 4096 && r <= (64 << 20)) *req = (uint32_t)r;
    if (q >= 1 && q <= 256) *qd = (int)q;
}

/* ---- balloon -------------------------------------------------------------------- */
static pid_t balloon_start(uint64_t leave, char *err, size_t err_len)
{
    char self[PATH_MAX], bin[PATH_MAX + 16];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) { snprintf(err, err_len, "cannot find own path"); return -1; }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash) *slash = 0;
    snprintf(bin, sizeof bin, "%s/balloon", self);
    if (access(bin, X_OK)) { snprintf(err, err_len, "%.200s not found (make builds it)", bin); return -1; }
    int pfd[2];
    if (pipe(pfd)) { snprintf(err, err_len, "pipe: %s", strerror(errno)); return -1; }
    char leave_s[32], fd_s[16];
    snprintf(leave_s, sizeof leave_s, "%llu", (unsigned long long)leave);
    snprintf(fd_s, sizeof fd_s, "%d", pfd[1]);
    pid_t pid = fork();
    if (pid < 0) { close(pfd[0]); close(pfd[1]); snprintf(err, err_len, "fork: %s", strerror(errno)); return -1; }
    if (pid == 0) {
        close(pfd[0]);
        /* --track: if other processes free memory meanwhile, take it, so the device keeps N free */
        execl(bin, bin, "--leave", leave_s, "--track", "--ready-fd", fd_s, "-q", (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    char line[128] = "";
    struct pollfd p = { pfd[0], POLLIN, 0 };
    ssize_t got = 0;
    if (poll(&p, 1, 300000) > 0) got = read(pfd[0], line, sizeof line - 1);
    close(pfd[0]);
    if (got <= 0 || strncmp(line, "ready", 5)) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        snprintf(err, err_len, "balloon did not come up");
        return -1;
    }
    return pid;
}

static void balloon_stop(pid_t pid)
{
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

/* ---- one repetition in a child ------------------------------------------------ */
typedef struct { int rc; bench_sample s; char err[256]; } child_msg;

static int run_child(const bench_runner *rn, const bench_cfg *c, bench_sample *s, double *pressure,
                     uint64_t *rss, char *err, size_t err_len)
{
    uint64_t a0 = 0, total = 1, amin;
    perf_meminfo(&a0, &total);
    amin = a0;
    int pfd[2];
    if (pipe(pfd)) { snprintf(err, err_len, "pipe: %s", strerror(errno)); return -1; }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) { close(pfd[0]); close(pfd[1]); snprintf(err, err_len, "fork: %s", strerror(errno)); return -1; }
    if (pid == 0) {
        close(pfd[0]);
        static child_msg m;
        memset(&m, 0, sizeof m);
        m.s.expert_hit_rate = NAN;   /* runners without an expert cache leave it */
        uint64_t anon0 = perf_rss_of("RssAnon");   /* the C runtime's memory before the model opens */
        m.rc = rn->run(c, &m.s, m.err, sizeof m.err);
        /* + the program's code and shared libraries: file-backed pages at the end (a
         * streamed model is never mapped, so they are all the program's) */
        m.s.base_rss = anon0 + perf_rss_of("RssFile");
        m.s.peak_rss = perf_vmhwm(0);
        const char *p = (const char *)&m;
        size_t left = sizeof m;
        while (left) {
            ssize_t w = write(pfd[1], p, left);
            if (w <= 0) { if (errno == EINTR) continue; break; }
            p += w; left -= (size_t)w;
        }
        _exit(0);
    }
    close(pfd[1]);
    static child_msg m;
    memset(&m, 0, sizeof m);
    size_t got = 0;
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    for (;;) {
        struct pollfd p = { pfd[0], POLLIN, 0 };
        int pr = poll(&p, 1, 50);
        uint64_t a, t;
        if (!perf_meminfo(&a, &t) && a < amin) amin = a;
        if (pr > 0) {
            ssize_t r = read(pfd[0], (char *)&m + got, sizeof m - got);
            if (r > 0) { got += (size_t)r; continue; }
            if (r == 0) break;
            if (errno != EINTR) break;
        }
    }
    close(pfd[0]);
    wait4(pid, &status, 0, &ru);
    if (got != sizeof m) {
        snprintf(err, err_len, "child %s (status %d)", WIFSIGNALED(status) ? "killed by a signal" : "failed",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        return -1;
    }
    if (m.rc) { snprintf(err, err_len, "%s", m.err); return -1; }
    *s = m.s;
    *pressure = (double)(a0 - amin) / (double)total;
    *rss = s->peak_rss > (uint64_t)ru.ru_maxrss * 1024 ? s->peak_rss : (uint64_t)ru.ru_maxrss * 1024;
    return 0;
}

/* ---- output ---------------------------------------------------------------------- */
static void fmt_ms(char *b, size_t n, double m, double sd)
{
    if (isnan(m)) snprintf(b, n, "-");
    else if (m >= 1000) snprintf(b, n, "%.2f s ± %.2f", m / 1000, sd / 1000);
    else snprintf(b, n, "%.1f ± %.1f", m, sd);
}

static void print_md(FILE *f, bench_result *res, int nres, const char *model, double disk_bw, double mem_bw,
                     const char *runner, bool compute)
{
    char sz[32];
    perf_fmt_bytes(sz, sizeof sz, (double)perf_file_size(model));
    fprintf(f, "model: `%s` (%s); runner: %s%s\n", model, sz, runner,
            compute ? "" : " — **weights only, compute NOT included** (runner without the engine): "
                           "decode = reading every streamed weight byte once per token");
    fprintf(f, "disk: %.2f GB/s sequential O_DIRECT measured in this run; memory: %.2f GB/s\n\n", disk_bw / 1e9,
            mem_bw / 1e9);
    fprintf(f, "| mode | io | budget | free | th | pp t/s | tg t/s | TTFT cold ms | TTFT warm ms | ms/token | stall %% | GB/token | disk GB/s | bound ms/token | of bound | peak RSS | mem pressure | expert hit |\n");
    fprintf(f, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < nres; i++) {
        bench_result *r = &res[i];
        char b1[32], b2[32];
        perf_fmt_bytes(b1, sizeof b1, (double)r->budget_bytes);
        if (r->free_bytes) perf_fmt_bytes(b2, sizeof b2, (double)r->free_bytes); else snprintf(b2, sizeof b2, "-");
        if (!r->n) {
            fprintf(f, "| %s | %s | %s | %s | %d | failed: %s |||||||||||\n", sl_stream_mode_name(r->cfg.mode),
                    sl_stream_io_name(r->cfg.io),
                    r->cfg.mem_budget ? b1 : "auto", b2, r->cfg.threads, r->error);
            continue;
        }
        double m[M_N], sd[M_N];
        for (int k = 0; k < M_N; k++) mean_sd(r->v[k], r->n, &m[k], &sd[k]);
        char c[8][48];
        fmt_ms(c[0], sizeof c[0], m[M_TTFT_COLD], sd[M_TTFT_COLD]);
        fmt_ms(c[1], sizeof c[1], m[M_TTFT_WARM], sd[M_TTFT_WARM]);
        fmt_ms(c[2], sizeof c[2], m[M_MSTOK], sd[M_MSTOK]);
        fmt_ms(c[3], sizeof c[3], m[M_BOUND], sd[M_BOUND]);
        char rss[32];
        perf_fmt_bytes(rss, sizeof rss, m[M_RSS]);
        fprintf(f, "| %s | %s | %s | %s | %d | %.2f ± %.2f | %.3f ± %.3f | %s | %s | %s | %.1f | %.3f | %.2f ± %.2f | %s | %s | %s | %.3f ± %.3f | %s |\n",
                r->mode, r->io, r->budget_bytes ? b1 : "-", b2, r->cfg.threads, m[M_PP], sd[M_PP], m[M_TG], sd[M_TG],
                c[0], c[1], c[2], m[M_STALL], m[M_BPT] / 1e9, m[M_DISK] / 1e9, sd[M_DISK] / 1e9, c[3],
                isnan(m[M_FRAC]) ? "-" : (snprintf(c[4], sizeof c[4], "%.0f%%", 100 * m[M_FRAC]), c[4]), rss,
                m[M_PRESS], sd[M_PRESS],
                isnan(m[M_HIT]) ? "-" : (snprintf(c[5], sizeof c[5], "%.3f", m[M_HIT]), c[5]));
    }
    fprintf(f, "\npp = prompt processing (%d tokens, warm), tg = decode (%d tokens); mean ± stddev over %d reps, each "
               "in its own process; TTFT cold: file evicted with posix_fadvise(DONTNEED), then open + prompt + first "
               "token; bound = max(bytes read per token / disk bandwidth, model bytes / memory bandwidth; MoE: dense + k/n of the "
               "expert bytes); expert hit = decode expert requests served by the expert cache (random weights route "
               "near uniformly: a floor); "
               "mem pressure = drop in MemAvailable during the run / MemTotal.\n",
            nres ? res[0].cfg.n_prompt : 0, nres ? res[0].cfg.n_gen : 0, nres ? res[0].n : 0);
}

static void print_json(FILE *f, bench_result *res, int nres, const char *runner, double disk_bw, double mem_bw,
                       uint64_t weight_bytes)
{
    fprintf(f, "[");
    for (int i = 0; i < nres; i++) {
        bench_result *r = &res[i];
        fprintf(f, "%s\n  {\"model\": ", i ? "," : "");
        perf_json_str(f, r->cfg.model);
        fprintf(f, ", \"runner\": \"%s\", \"compute_included\": %s, \"mode\": \"%s\", \"io\": \"%s\", "
                   "\"mem_budget_bytes\": %llu, \"free_bytes\": %llu, \"threads\": %d, \"n_prompt\": %d, "
                   "\"n_gen\": %d, \"reps\": %d, \"mem_available_bytes\": %llu, \"model_bytes\": %llu, "
                   "\"weight_bytes\": %llu, \"disk_bytes_per_s_measured\": %.0f, \"mem_bytes_per_s\": %.0f",
                runner, r->compute_included ? "true" : "false", r->n ? r->mode : sl_stream_mode_name(r->cfg.mode),
                r->n ? r->io : sl_stream_io_name(r->cfg.io), (unsigned long long)(r->n ? r->budget_bytes : r->cfg.mem_budget),
                (unsigned long long)r->free_bytes, r->cfg.threads, r->cfg.n_prompt, r->cfg.n_gen, r->n,
                (unsigned long long)r->avail_bytes, (unsigned long long)r->model_bytes, (unsigned long long)weight_bytes,
                disk_bw, mem_bw);
        if (!r->n) {
            fprintf(f, ", \"error\": ");
            perf_json_str(f, r->error);
        }
        for (int k = 0; k < M_N && r->n; k++) {
            double m, sd;
            mean_sd(r->v[k], r->n, &m, &sd);
            if (isnan(m)) fprintf(f, ", \"%s\": null, \"%s_stddev\": null", m_keys[k], m_keys[k]);
            else fprintf(f, ", \"%s\": %.6g, \"%s_stddev\": %.6g", m_keys[k], m, m_keys[k], sd);
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n]\n");
}

static void print_csv(FILE *f, bench_result *res, int nres, const char *runner)
{
    fprintf(f, "runner,compute_included,mode,io,mem_budget_bytes,free_bytes,threads,n_prompt,n_gen,reps");
    for (int k = 0; k < M_N; k++) fprintf(f, ",%s,%s_stddev", m_keys[k], m_keys[k]);
    fprintf(f, ",error\n");
    for (int i = 0; i < nres; i++) {
        bench_result *r = &res[i];
        fprintf(f, "%s,%d,%s,%s,%llu,%llu,%d,%d,%d,%d", runner, r->compute_included, r->n ? r->mode : sl_stream_mode_name(r->cfg.mode),
                r->n ? r->io : sl_stream_io_name(r->cfg.io), (unsigned long long)(r->n ? r->budget_bytes : r->cfg.mem_budget),
                (unsigned long long)r->free_bytes, r->cfg.threads, r->cfg.n_prompt, r->cfg.n_gen, r->n);
        for (int k = 0; k < M_N; k++) {
            double m = NAN, sd = NAN;
            if (r->n) mean_sd(r->v[k], r->n, &m, &sd);
            if (isnan(m)) fprintf(f, ",,");
            else fprintf(f, ",%.6g,%.6g", m, sd);
        }
        fprintf(f, ",\"%s\"\n", r->error);
    }
}

/* decode tok/s against memory (budget, or free memory for balloon runs), one line per mode,
 * with the bound as a dashed line. 0, 1 = skipped (no gnuplot), -1 = failed. */
static int plot_svg(const char *path, bench_result *res, int nres, bool compute)
{
    if (system("command -v gnuplot > /dev/null 2>&1")) return 1;
    char dat[4200];
    snprintf(dat, sizeof dat, "%s.dat", path);
    FILE *d = fopen(dat, "w");
    if (!d) return -1;
    const char *modes[8];
    int nm = 0;
    for (int i = 0; i < nres; i++) {
        if (!res[i].n) continue;
        int k;
        for (k = 0; k < nm; k++) if (!strcmp(modes[k], res[i].mode)) break;
        if (k == nm && nm < 8) modes[nm++] = res[i].mode;
    }
    for (int k = 0; k < nm; k++) {
        fprintf(d, "# %s\n", modes[k]);
        for (int i = 0; i < nres; i++) {
            bench_result *r = &res[i];
            if (!r->n || strcmp(r->mode, modes[k])) continue;
            double m, sd, b, bsd;
            mean_sd(r->v[M_TG], r->n, &m, &sd);
            mean_sd(r->v[M_BOUND], r->n, &b, &bsd);
            double x = (double)(r->free_bytes ? r->free_bytes : r->budget_bytes ? r->budget_bytes : r->avail_bytes) / (1u << 30);
            fprintf(d, "%.3f %.5f %.5f %.5f\n", x, m, sd, isnan(b) || b <= 0 ? NAN : 1000.0 / b);
        }
        fprintf(d, "\n\n");
    }
    fclose(d);
    FILE *g = popen("gnuplot", "w");
    if (!g) return -1;
    fprintf(g, "set terminal svg size 900,520 dynamic background rgb 'white'\nset output '%s'\n", path);
    fprintf(g, "set title 'decode tokens/s vs memory%s'\nset xlabel 'memory budget / free memory (GiB)'\n"
               "set ylabel 'tokens/s'\nset grid\nset key left top\nset yrange [0:*]\n",
            compute ? "" : " (weights only, no compute)");
    fprintf(g, "plot ");
    for (int k = 0; k < nm; k++)
        fprintf(g, "%s'%s' index %d using 1:2:3 with yerrorlines title '%s', '' index %d using 1:4 with lines dt 2 title '%s bound'",
                k ? ", " : "", dat, k, modes[k], k, modes[k]);
    fprintf(g, "\n");
    int rc = pclose(g);
    unlink(dat);
    return rc == 0 ? 0 : -1;
}

/* ---- CLI ------------------------------------------------------------------------- */
static void usage(FILE *f)
{
    fprintf(f,
        "usage: sluice bench -m MODEL [options]\n"
        "  --mem-budget LIST  planner budgets, e.g. 2.5G,4G,auto (default auto)\n"
        "  --free LIST        simulate a device with this much free memory: build/balloon holds the\n"
        "                     rest of RAM while the configuration runs (e.g. 2.5G,6G)\n"
        "  --mode LIST        auto,resident,stream,mmap (default auto)\n"
        "  --io LIST          auto,uring,pread (default auto)\n"
        "  -p N               prompt tokens (default 32)      -n N  generated tokens (default 16)\n"
        "  -r N               repetitions (default 3)          -t LIST  threads (default all CPUs)\n"
        "  -o md|csv|json     stdout format (default md); tables and progress also go to stderr\n"
        "  --out FILE         write the -o output there instead of stdout\n"
        "  --plot FILE.svg    decode tok/s vs memory with the bound (gnuplot)\n"
        "  --runner NAME      engine|stream|raw (default: the best linked in)\n"
        "  --req SIZE --qd N  read request size / queue depth (default from ~/.cache/sluice/profile.json)\n"
        "Each configuration and repetition runs in its own process (peak RSS = its VmHWM). The disk's\n"
        "sequential O_DIRECT bandwidth is measured first, in the same run, for the bound.\n");
}

/* What the command line asks for: the sweep's dimensions and the output. */
typedef struct { uint64_t budget, free; const char *label; } mem_entry;

typedef struct bench_opts {
    const char *model, *fmt, *outp, *plot, *force;
    int n_prompt, n_gen, reps;
    unsigned long long req;    /* 0 = from the profile */
    int qd;                    /* 0 = from the profile */
    mem_entry mem[2 * MAX_LIST]; int nmem;
    int modes[MAX_LIST]; int nmo;
    int ios[MAX_LIST]; int nio;
    int threads[MAX_LIST]; int nth;
    char budgets_s[256], free_s[256], modes_s[128], ios_s[128], th_s[64];   /* the lists' storage */
} bench_opts;

/* Lists of names ("stream,mmap") into enum values; -1 on a bad name. */
static int parse_names(char *list, int (*parse)(const char *, int *), int *out, const char *what)
{
    char *items[MAX_LIST];
    int n = split_list(list, items, MAX_LIST);
    for (int i = 0; i < n; i++)
        if (parse(items[i], &out[i])) { fprintf(stderr, "bench: bad %s '%s'\n", what, items[i]); return -1; }
    return n;
}

/* 0, or the exit code (help printed: 0 is returned as -1). */
static int parse_args(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->fmt = "md"; o->n_prompt = 32; o->n_gen = 16; o->reps = 3;
    snprintf(o->budgets_s, sizeof o->budgets_s, "auto");
    snprintf(o->modes_s, sizeof o->modes_s, "auto");
    snprintf(o->ios_s, sizeof o->ios_s, "auto");
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return -1; }
        if (!v) { fprintf(stderr, "bench: %s needs a value\n", a); return 2; }
        if (!strcmp(a, "-m")) o->model = v;
        else if (!strcmp(a, "--mem-budget")) snprintf(o->budgets_s, sizeof o->budgets_s, "%s", v);
        else if (!strcmp(a, "--free")) snprintf(o->free_s, sizeof o->free_s, "%s", v);
        else if (!strcmp(a, "--mode")) snprintf(o->modes_s, sizeof o->modes_s, "%s", v);
        else if (!strcmp(a, "--io")) snprintf(o->ios_s, sizeof o->ios_s, "%s", v);
        else if (!strcmp(a, "-t")) snprintf(o->th_s, sizeof o->th_s, "%s", v);
        else if (!strcmp(a, "-p")) o->n_prompt = atoi(v);
        else if (!strcmp(a, "-n")) o->n_gen = atoi(v);
        else if (!strcmp(a, "-r")) o->reps = atoi(v);
        else if (!strcmp(a, "-o")) o->fmt = v;
        else if (!strcmp(a, "--out")) o->outp = v;
        else if (!strcmp(a, "--plot")) o->plot = v;
        else if (!strcmp(a, "--runner")) o->force = v;
        else if (!strcmp(a, "--req")) { if (sl_cli_parse_size(v, &o->req) || o->req < 4096 || o->req % 4096 || o->req > (64u << 20)) { fprintf(stderr, "bench: bad --req\n"); return 2; } }
        else if (!strcmp(a, "--qd")) { o->qd = atoi(v); if (o->qd < 1 || o->qd > 256) { fprintf(stderr, "bench: bad --qd\n"); return 2; } }
        else { fprintf(stderr, "bench: unknown argument '%s'\n", a); usage(stderr); return 2; }
    }
    if (!o->model) { usage(stderr); return 2; }
    if (o->n_prompt < 1 || o->n_gen < 1 || o->reps < 1 || o->reps > 64) { fprintf(stderr, "bench: -p, -n >= 1, -r 1..64\n"); return 2; }
    if (strcmp(o->fmt, "md") && strcmp(o->fmt, "csv") && strcmp(o->fmt, "json")) { fprintf(stderr, "bench: -o md|csv|json\n"); return 2; }
    if (access(o->model, R_OK)) { fprintf(stderr, "bench: %s: %s\n", o->model, strerror(errno)); return 1; }

    /* memory entries: budgets (no balloon), then free-memory entries (balloon, planner default budget) */
    char *budgets[MAX_LIST], *frees[MAX_LIST], *ths[MAX_LIST];
    bool auto_budget = !strcmp(o->budgets_s, "auto");
    int nb = split_list(o->budgets_s, budgets, MAX_LIST), nf = o->free_s[0] ? split_list(o->free_s, frees, MAX_LIST) : 0;
    if (!nf || !auto_budget)
        for (int i = 0; i < nb; i++) {
            unsigned long long b = 0;
            if (strcmp(budgets[i], "auto") && sl_cli_parse_size(budgets[i], &b)) { fprintf(stderr, "bench: bad budget '%s'\n", budgets[i]); return 2; }
            o->mem[o->nmem++] = (mem_entry){ b, 0, b ? budgets[i] : "auto" };
        }
    for (int i = 0; i < nf; i++) {
        unsigned long long b = 0;
        if (sl_cli_parse_size(frees[i], &b) || b < (256u << 20)) { fprintf(stderr, "bench: bad --free '%s' (>= 256M)\n", frees[i]); return 2; }
        o->mem[o->nmem++] = (mem_entry){ 0, b, "auto" };
    }
    if ((o->nmo = parse_names(o->modes_s, sl_stream_mode_parse, o->modes, "mode")) < 0) return 2;
    if ((o->nio = parse_names(o->ios_s, sl_stream_io_parse, o->ios, "io")) < 0) return 2;
    if (!o->th_s[0]) {
        int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
        snprintf(o->th_s, sizeof o->th_s, "%d", ncpu > 0 ? ncpu : 1);
    }
    o->nth = split_list(o->th_s, ths, MAX_LIST);
    for (int i = 0; i < o->nth; i++) o->threads[i] = atoi(ths[i]) < 1 ? 1 : atoi(ths[i]);
    return 0;
}

static const bench_runner *pick_runner(const char *force)
{
    const bench_runner *rn = NULL;
    for (int i = 0; i < g_n_runners; i++)
        if (force ? !strcmp(g_runners[i]->name, force) : (!rn || g_runners[i]->priority > rn->priority)) rn = g_runners[i];
    return rn;
}

/* The physical figures of this run, for the bound. */
typedef struct bench_bounds {
    uint32_t req; int qd;      /* read shape the runners use */
    double disk_bw, mem_bw;    /* bytes/s */
    uint64_t weight_bytes;     /* tensor bytes but token_embd: what a token reads when nothing is cached */
} bench_bounds;

static int measure_bounds(const bench_opts *o, const bench_runner *rn, bench_bounds *bb)
{
    bb->req = 1u << 20; bb->qd = 8; bb->mem_bw = 0;
    read_profile(&bb->req, &bb->qd);
    if (o->req) bb->req = (uint32_t)o->req;
    if (o->qd) bb->qd = o->qd;
    perf_disk_result dr;
    char err[256];
    uint64_t wb, we, mbytes;
    if (bench_weight_range(o->model, &wb, &we, &mbytes, err, sizeof err)) { fprintf(stderr, "bench: %s\n", err); return -1; }
    fprintf(stderr, "bench: runner '%s'%s; measuring disk bandwidth: one sequential O_DIRECT pass over the %.2f GB "
                    "of weights (%u KiB x %d, and 4 MiB x 8)...\n", rn->name,
            rn->compute_included ? "" : " (weights only: compute not included)", (we - wb) / 1e9, bb->req >> 10, bb->qd);
    /* two passes (profile's best request shape, and 4 MiB x 8): the better one is the bound,
     * so a noisy profile cannot make the bound look easy */
    perf_evict(o->model);
    if (perf_disk_read_range(o->model, wb, we, bb->req, bb->qd, &dr, err, sizeof err)) { fprintf(stderr, "bench: %s\n", err); return -1; }
    if (bb->req != (4u << 20) || bb->qd != 8) {
        perf_disk_result d2;
        perf_evict(o->model);
        if (!perf_disk_read_range(o->model, wb, we, 4u << 20, 8, &d2, err, sizeof err) && d2.bytes_per_s > dr.bytes_per_s) dr = d2;
    }
    bb->disk_bw = dr.bytes_per_s;
    bb->weight_bytes = we - wb;
    /* memory too is measured in this run, never taken from the profile: on a
     * shared machine it moves by 1.5x from one hour to the next */
    {
        int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
        size_t mb = 256u << 20;
        void *buf = malloc(mb);
        if (buf) { memset(buf, 1, mb); bb->mem_bw = perf_mem_read_bw(buf, mb, ncpu > 0 ? ncpu : 1, 3); free(buf); }
    }
    fprintf(stderr, "bench: disk %.2f GB/s (%s%s), memory %.2f GB/s\n", bb->disk_bw / 1e9, dr.engine,
            dr.direct ? ", O_DIRECT" : ", buffered", bb->mem_bw / 1e9);
    return 0;
}

/* One repetition's figures into r's columns; returns ms/token and its bound. */
static void record_sample(bench_result *r, const bench_sample *s, double press, uint64_t rss, int n_prompt,
                          const bench_bounds *bb)
{
    int k = r->n++;
    snprintf(r->mode, sizeof r->mode, "%s", s->mode);
    snprintf(r->io, sizeof r->io, "%s", s->io);
    snprintf(r->note, sizeof r->note, "%s", s->note);
    r->compute_included = s->compute_included;
    r->budget_bytes = s->budget_bytes;
    r->model_bytes = s->model_bytes;
    double dec_s = s->decode_ms / 1e3;
    double bpt = s->n_decode ? (double)s->decode_bytes / s->n_decode : 0;
    r->v[M_PP][k] = s->prompt_ms > 0 ? n_prompt / (s->prompt_ms / 1e3) : NAN;
    r->v[M_TG][k] = dec_s > 0 ? s->n_decode / dec_s : NAN;
    r->v[M_TTFT_COLD][k] = s->ttft_cold_ms;
    r->v[M_TTFT_WARM][k] = s->ttft_warm_ms;
    r->v[M_MSTOK][k] = s->n_decode ? s->decode_ms / s->n_decode : NAN;
    r->v[M_STALL][k] = s->decode_ms > 0 ? 100.0 * s->stall_ms / s->decode_ms : NAN;
    r->v[M_BPT][k] = bpt;
    r->v[M_DISK][k] = dec_s > 0 ? (double)s->decode_bytes / dec_s : 0;
    r->v[M_RSS][k] = (double)rss;
    r->v[M_PRESS][k] = press;
    r->v[M_HIT][k] = s->expert_hit_rate;
    r->v[M_BASE][k] = (double)s->base_rss;
    /* a token must stream its bytes from disk AND read every weight from RAM */
    double bound = NAN, bd = bpt > 0 && bb->disk_bw > 0 ? bpt / bb->disk_bw * 1e3 : 0;
    /* (runners without compute do not read the pinned weights: disk part only) */
    double bm = bb->mem_bw > 0 && (s->compute_included || !strcmp(s->mode, "resident"))
                    ? (double)(s->token_bytes ? s->token_bytes : s->model_bytes) / bb->mem_bw * 1e3 : 0;
    if (bd > 0 || bm > 0) bound = bd > bm ? bd : bm;
    r->v[M_BOUND][k] = bound;
    r->v[M_FRAC][k] = isnan(bound) ? NAN : bound / r->v[M_MSTOK][k];
}

/* Every configuration x repetition, each in a child; returns the number that failed. */
static int run_sweep(const bench_opts *o, const bench_runner *rn, const bench_bounds *bb, bench_result *res)
{
    int nconf = o->nmem * o->nmo * o->nio * o->nth, ci = 0, failed = 0;
    char err[256];
    double t_all = perf_now();
    sl_cli_progress pg;   /* points measured, between the per-point lines */
    uint64_t points = 0;
    sl_cli_progress_begin(&pg, "bench: sweep", (uint64_t)nconf * (uint64_t)o->reps, false);
    for (int mi = 0; mi < o->nmem; mi++) {
        const mem_entry *me = &o->mem[mi];
        pid_t bal = -1;
        if (me->free) {
            sl_cli_progress_clear(&pg);
            fprintf(stderr, "bench: balloon: leaving %.2f GiB of MemAvailable...\n", (double)me->free / (1u << 30));
            bal = balloon_start(me->free, err, sizeof err);
            if (bal < 0) fprintf(stderr, "bench: %s\n", err);
        }
        for (int a = 0; a < o->nmo; a++)
            for (int b = 0; b < o->nio; b++)
                for (int t = 0; t < o->nth; t++) {
                    bench_result *r = &res[ci++];
                    r->cfg = (bench_cfg){ o->model, o->modes[a], o->ios[b], me->budget, o->threads[t], o->n_prompt,
                                          o->n_gen, bb->req, bb->qd };
                    r->free_bytes = me->free;
                    { uint64_t av = 0, tt = 0; perf_meminfo(&av, &tt); r->avail_bytes = av; }
                    if (me->free && bal < 0) { snprintf(r->error, sizeof r->error, "balloon failed"); failed++; continue; }
                    for (int rep = 0; rep < o->reps; rep++) {
                        bench_sample s;
                        double press;
                        uint64_t rss;
                        sl_cli_progress_clear(&pg);
                        fprintf(stderr, "[%d/%d] mode %s io %s budget %s%s th %d rep %d/%d ... ", ci, nconf,
                                sl_stream_mode_name(r->cfg.mode), sl_stream_io_name(r->cfg.io), me->label,
                                me->free ? " (balloon)" : "", r->cfg.threads, rep + 1, o->reps);
                        if (run_child(rn, &r->cfg, &s, &press, &rss, err, sizeof err)) {
                            fprintf(stderr, "failed: %s\n", err);
                            snprintf(r->error, sizeof r->error, "%s", err);
                            break;
                        }
                        record_sample(r, &s, press, rss, o->n_prompt, bb);
                        fprintf(stderr, "%.1f ms/token (bound %.1f)\n", r->v[M_MSTOK][r->n - 1], r->v[M_BOUND][r->n - 1]);
                        sl_cli_progress_update(&pg, ++points);
                    }
                    if (!r->n) failed++;
                }
        balloon_stop(bal);
    }
    sl_cli_progress_end(&pg);
    fprintf(stderr, "bench: %d configurations in %.1f s\n\n", nconf, perf_now() - t_all);
    return failed;
}

/* The -o output (and the table on stderr), the plot. 0 or 1. */
static int report(const bench_opts *o, const bench_runner *rn, const bench_bounds *bb, bench_result *res, int nconf)
{
    FILE *out = stdout;
    sl_file_out fo = { .fd = -1 };
    if (o->outp && (sl_file_out_open(&fo, o->outp, "bench output") || !(out = sl_file_out_stream(&fo)))) {
        fprintf(stderr, "bench: %s\n", sl_last_error());
        sl_file_out_abort(&fo);
        return 1;
    }
    if (!strcmp(o->fmt, "md")) print_md(out, res, nconf, o->model, bb->disk_bw, bb->mem_bw, rn->name, rn->compute_included);
    else if (!strcmp(o->fmt, "json")) print_json(out, res, nconf, rn->name, bb->disk_bw, bb->mem_bw, bb->weight_bytes);
    else print_csv(out, res, nconf, rn->name);
    if (strcmp(o->fmt, "md") || o->outp)
        print_md(stderr, res, nconf, o->model, bb->disk_bw, bb->mem_bw, rn->name, rn->compute_included);
    if (out != stdout && sl_file_out_close_stream(&fo, out)) { fprintf(stderr, "bench: %s\n", sl_last_error()); return 1; }
    int prc = o->plot ? plot_svg(o->plot, res, nconf, rn->compute_included) : 0;
    if (prc > 0) fprintf(stderr, "bench: gnuplot not found: plot %s skipped (the data is in -o json|csv)\n", o->plot);
    else if (prc < 0) fprintf(stderr, "bench: gnuplot failed for %s\n", o->plot);
    return 0;
}

int perf_bench_main(int argc, char **argv)
{
    static bench_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    const bench_runner *rn = pick_runner(o.force);
    if (!rn) { fprintf(stderr, "bench: no runner%s%s\n", o.force ? " named " : "", o.force ? o.force : ""); return 2; }
    int nconf = o.nmem * o.nmo * o.nio * o.nth;
    bench_result *res = calloc((size_t)nconf, sizeof *res);
    if (!res) return 1;
    bench_bounds bb;
    if (measure_bounds(&o, rn, &bb)) { free(res); return 1; }
    int failed = run_sweep(&o, rn, &bb, res);
    rc = report(&o, rn, &bb, res, nconf);
    free(res);
    return rc ? rc : failed ? 1 : 0;
}

SL_CLI_COMMAND(sl_cmd_bench, "bench", "benchmark modes x memory budgets x threads: tok/s, TTFT, stall, bound, RSS",
               perf_bench_main)
