/* `sluice profile`: measures this machine in ~30 s — sequential O_DIRECT read
 * bandwidth on the model's filesystem (request size x queue depth), memory
 * read bandwidth (1..N threads), matvec GB/s per weight type — prints a table
 * and saves the device profile JSON the planner and the bench read. */
#include "../engine/cli/cli.h"
#include "../engine/cli/cli_progress.h"
#include "../gguf/base/sl_file.h"
#include "perf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const uint32_t prof_req[] = { 256u << 10, 1u << 20, 4u << 20 };
static const int prof_qd[] = { 1, 2, 4, 8 };
#define N_REQ (int)(sizeof prof_req / sizeof prof_req[0])
#define N_QD (int)(sizeof prof_qd / sizeof prof_qd[0])

static void usage(FILE *f)
{
    fprintf(f,
        "usage: sluice profile [-m MODEL | --dir DIR] [--seconds 30] [-t N] [-o FILE]\n"
        "Measures this machine and saves a device profile (JSON) for the planner and bench:\n"
        "  disk   sequential O_DIRECT reads of MODEL (or of a ~1.2 GB scratch GGUF written to DIR,\n"
        "         default ~/.cache/sluice, i.e. the filesystem the models live on), for request\n"
        "         sizes 256K/1M/4M x queue depths 1/2/4/8; page cache evicted with\n"
        "         posix_fadvise(DONTNEED) first (nothing system-wide is dropped)\n"
        "  mem    read bandwidth of a 1 GiB buffer with 1..N threads (default N = CPUs)\n"
        "  -o FILE  default ~/.cache/sluice/profile.json;  --seconds: total time budget\n");
}

int perf_matvec_profile(double seconds, int n_threads, FILE *json_out, int print);   /* profile_matvec.c */

int perf_profile_main(int argc, char **argv)
{
    const char *model = NULL, *dir = NULL, *out = NULL;
    double seconds = 30;
    int nt = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (nt < 1) nt = 1;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (!v) { fprintf(stderr, "profile: bad or incomplete argument '%s'\n", a); return 2; }
        if (!strcmp(a, "-m")) model = v;
        else if (!strcmp(a, "--dir")) dir = v;
        else if (!strcmp(a, "-o")) out = v;
        else if (!strcmp(a, "--seconds")) { seconds = atof(v); if (!(seconds >= 3 && seconds <= 3600)) { fprintf(stderr, "profile: --seconds 3..3600\n"); return 2; } }
        else if (!strcmp(a, "-t")) { nt = atoi(v); if (nt < 1 || nt > 256) { fprintf(stderr, "profile: bad -t\n"); return 2; } }
        else { fprintf(stderr, "profile: unknown argument '%s'\n", a); usage(stderr); return 2; }
    }
    char cache[4096], outbuf[4200], scratch[4200] = "";
    perf_cache_dir(cache, sizeof cache);
    if (!out) { snprintf(outbuf, sizeof outbuf, "%s/profile.json", cache); out = outbuf; }
    double t_start = perf_now();

    /* ---- disk ---- */
    const char *file = model;
    if (!file) {
        snprintf(scratch, sizeof scratch, "%s/sluice-profile-%d.gguf", dir ? dir : cache, (int)getpid());
        fprintf(stderr, "profile: writing a scratch file %s\n", scratch);
        char *mk[] = { "mkmodel", "--preset", "1b", "--type", "q8_0", "--vocab", "none", "--n-vocab", "32000",
                       "-o", scratch, NULL };
        if (perf_mkmodel_main(11, mk)) { unlink(scratch); return 1; }
        file = scratch;
    }
    uint64_t fsize = perf_file_size(file);
    double disk_s = seconds * 0.55 / (N_REQ * N_QD);
    double best = 0;
    uint32_t best_req = 0;
    int best_qd = 0, direct = 1;
    const char *eng = "";
    double sweep[N_REQ][N_QD];
    printf("disk: %s (%.2f GB), sequential reads, %.1f s per point\n", file, fsize / 1e9, disk_s);
    printf("| req size | qd 1 | qd 2 | qd 4 | qd 8 |   (GB/s)\n|---:|---:|---:|---:|---:|\n");
    fflush(stdout);
    /* progress: the disk points, the memory thread counts, the matvec pass; a table row is
     * printed whole, so that it never shares the terminal line with the progress line */
    sl_cli_progress pg;
    sl_cli_progress_begin(&pg, "profile: measuring", (uint64_t)(N_REQ * N_QD + nt + 1), false);
    for (int r = 0; r < N_REQ; r++) {
        char row[128];
        int len = snprintf(row, sizeof row, "| %4u KiB |", prof_req[r] >> 10);
        for (int q = 0; q < N_QD; q++) {
            perf_disk_result res;
            char err[256];
            int rc = perf_disk_read(file, prof_req[r], prof_qd[q], disk_s, fsize, &res, err, sizeof err);
            if (rc) {
                sl_cli_progress_end(&pg);
                fprintf(stderr, "\nprofile: %s\n", err);
                if (scratch[0]) unlink(scratch);
                return 1;
            }
            sweep[r][q] = res.bytes_per_s;
            direct = res.direct;
            eng = res.engine;
            if (res.bytes_per_s > best) { best = res.bytes_per_s; best_req = prof_req[r]; best_qd = prof_qd[q]; }
            len += snprintf(row + len, sizeof row - (size_t)len, " %.2f |", res.bytes_per_s / 1e9);
            sl_cli_progress_update(&pg, (uint64_t)(r * N_QD + q + 1));
        }
        sl_cli_progress_clear(&pg);
        printf("%s\n", row);
        fflush(stdout);
    }
    if (!direct) fprintf(stderr, "profile: note: O_DIRECT refused by this filesystem; buffered reads measured\n");
    if (scratch[0]) unlink(scratch);

    /* ---- memory ---- */
    uint64_t avail = 0, total = 0;
    perf_meminfo(&avail, &total);
    uint64_t mb = 1ull << 30;
    if (avail && mb > avail / 4) mb = avail / 4 & ~((1ull << 21) - 1);
    void *buf = mmap(NULL, mb, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        sl_cli_progress_end(&pg);
        fprintf(stderr, "profile: cannot map %llu bytes\n", (unsigned long long)mb);
        return 1;
    }
#ifdef MADV_HUGEPAGE
    madvise(buf, mb, MADV_HUGEPAGE);
#endif
    memset(buf, 0x5a, mb);
    double mem[257] = { 0 }, mem_best = 0;
    int mem_best_t = 1;
    printf("\nmemory read bandwidth (%.0f MiB buffer):\n| threads | GB/s |\n|---:|---:|\n", (double)mb / (1 << 20));
    for (int t = 1; t <= nt; t++) {
        mem[t] = perf_mem_read_bw(buf, mb, t, 5);
        if (mem[t] > mem_best) { mem_best = mem[t]; mem_best_t = t; }
        sl_cli_progress_clear(&pg);
        printf("| %d | %.2f |\n", t, mem[t] / 1e9);
        fflush(stdout);
        sl_cli_progress_update(&pg, (uint64_t)(N_REQ * N_QD + t));
    }
    munmap(buf, mb);

    /* ---- JSON ---- */
    sl_cli_progress_clear(&pg);
    sl_file_out fo = { .fd = -1 };
    FILE *f = NULL;
    if (sl_file_out_open(&fo, out, "profile") || !(f = sl_file_out_stream(&fo))) {
        sl_cli_progress_end(&pg);
        fprintf(stderr, "profile: %s\n", sl_last_error());
        sl_file_out_abort(&fo);
        return 1;
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    fprintf(f, "{\n  \"version\": 1,\n  \"host\": ");
    perf_json_str(f, host);
    fprintf(f, ",\n  \"n_cpus\": %ld,\n  \"mem_total_bytes\": %llu,\n  \"disk_file\": ",
            sysconf(_SC_NPROCESSORS_ONLN), (unsigned long long)total);
    perf_json_str(f, model ? model : (dir ? dir : cache));
    fprintf(f, ",\n  \"disk_source\": \"raw\",\n  \"disk_engine\": \"%s\",\n  \"disk_direct\": %s,\n", eng,
            direct ? "true" : "false");
    fprintf(f, "  \"disk_bytes_per_s\": %.0f,\n  \"req_bytes\": %u,\n  \"queue_depth\": %d,\n  \"disk_sweep\": [",
            best, best_req, best_qd);
    for (int r = 0; r < N_REQ; r++)
        for (int q = 0; q < N_QD; q++)
            fprintf(f, "%s\n    {\"req_bytes\": %u, \"queue_depth\": %d, \"bytes_per_s\": %.0f}",
                    r || q ? "," : "", prof_req[r], prof_qd[q], sweep[r][q]);
    fprintf(f, "\n  ],\n  \"mem_bytes_per_s\": %.0f,\n  \"mem_threads\": %d,\n  \"mem_bytes_per_s_1t\": %.0f,\n"
               "  \"mem_sweep\": [", mem_best, mem_best_t, mem[1]);
    for (int t = 1; t <= nt; t++)
        fprintf(f, "%s\n    {\"threads\": %d, \"bytes_per_s\": %.0f}", t > 1 ? "," : "", t, mem[t]);
    fprintf(f, "\n  ],\n  \"matvec\": {");
    int rc = perf_matvec_profile(seconds * 0.25, nt, f, 1);
    sl_cli_progress_update(&pg, pg.total);
    sl_cli_progress_end(&pg);
    fprintf(f, "}\n}\n");
    if (sl_file_out_close_stream(&fo, f)) { fprintf(stderr, "profile: %s\n", sl_last_error()); return 1; }
    printf("\nbest disk: %.2f GB/s (req %u KiB, qd %d, %s%s); memory %.2f GB/s (%d threads), 1 thread %.2f GB/s\n",
           best / 1e9, best_req >> 10, best_qd, eng, direct ? ", O_DIRECT" : ", buffered", mem_best / 1e9,
           mem_best_t, mem[1] / 1e9);
    printf("profile saved to %s (%.1f s)\n", out, perf_now() - t_start);
    return rc ? 1 : 0;
}

SL_CLI_COMMAND(sl_cmd_profile, "profile", "measure disk, memory and kernel bandwidth; save the device profile",
               perf_profile_main)
