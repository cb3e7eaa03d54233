/* iobench: sequential read bandwidth of the streamer's own loader (io_uring
 * or pread pool; O_DIRECT into 2 MiB-aligned huge-page buffers registered as
 * fixed buffers) for a grid of request sizes x queue depths, on one file.
 * The file is evicted from the page cache with posix_fadvise(DONTNEED)
 * before every run (O_DIRECT bypasses it anyway; buffered runs need it).
 *
 *   iobench FILE [--io uring|pread] [--req LIST] [--qd LIST] [--bytes N] [--reps N]
 *               [--chunk BYTES] [--no-direct] [--experts [--slots N]]
 * LIST: comma-separated, sizes accept K/M suffixes. Prints the median GB/s.
 *
 * --experts (an MoE GGUF): instead of the file in order, the reads a token of
 * expert streaming makes with no cache hit: per layer, k distinct experts
 * drawn uniformly (seeded), each as its three slices (one read each, widened
 * to the O_DIRECT alignment) into huge-page slots that are not registered,
 * as in the expert cache. The rate the disk gives these sizes and offsets
 * (a Qwen3-30B-A3B slice is 864 KiB or 1.23 MiB) is the bound of an
 * expert-streamed token; a split model (any shard given) reads each shard
 * through its own descriptor, as the streamer does; --req is ignored (the streamer's 2 MiB requests).
 * --slots N: the reads cycle through N slots (64): give the expert cache's
 * slot count (`sluice plan`) to land them in as much memory as the engine's
 * do; on the 2026-11 VM 640-800 slots read 0-7% slower than 64. */
#include "../engine/cli/cli.h"
#include "../io/stream_dio.h"
#include "../io/stream_io.h"
#include "../io/stream_limits.h"
#include "../io/stream_units.h"
#include "../gguf/base/sl_platform.h"
#include "../gguf/base/sl_status.h"
#include "perf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* A size argument ("2M", "4G"), or 0 when malformed. */
static uint64_t parse_size(const char *s)
{
    unsigned long long v;
    return sl_cli_parse_size(s, &v) ? 0 : v;
}

static int parse_list(const char *s, uint64_t *out, int max)
{
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *t = strtok(buf, ","); t && n < max; t = strtok(NULL, ",")) out[n++] = parse_size(t);
    return n;
}

/* xorshift64*: the expert draw, the same for every run */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s >> 12; *s ^= *s << 25; *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

#define XB_SLOTS 64   /* default of the expert slots cycled through (a read waits for its slot's previous one) */
#define XB_MAX_SLOTS 65536

/* The --experts pattern: GB/s of one pass of `limit` bytes at queue depth qd. */
static int experts_pass(const sl_io_file *files, int n_files, const sl_unit_map *um, uint32_t align, int io,
                        int qd, uint64_t limit, uint8_t *pool, uint64_t slot_bytes, int n_slots,
                        sl_io_job (*jobs)[3], bool *busy, double *gbs)
{
    sl_loader_cfg lc;
    memset(&lc, 0, sizeof lc);
    lc.io = io; lc.fd = files[0].fd; lc.direct = true; lc.align = align;
    if (n_files > 1) { lc.files = files; lc.n_files = n_files; }   /* each shard through its own fd */
    lc.req_bytes = SL_DEFAULT_REQ_BYTES;   /* as the streamer cuts them */
    lc.queue_depth = qd; lc.n_threads = qd;
    sl_loader *L;
    if (sl_loader_create(&L, &lc, NULL, 0) != 0) { fprintf(stderr, "iobench: %s\n", sl_last_error()); return 1; }
    const int32_t NL = um->n_layers, NE = um->moe.n_expert, K = um->moe.n_expert_used;
    memset(busy, 0, (size_t)n_slots * sizeof *busy);
    uint64_t seed = 0x9e3779b97f4a7c15ull, done = 0;
    int slot = 0, bad = 0;
    for (int i = 0; i < n_files; i++) posix_fadvise(files[i].fd, 0, 0, POSIX_FADV_DONTNEED);
    double t0 = sl_now_ms();
    for (int32_t l = 0; done < limit; l = (l + 1) % NL) {
        int32_t pick[64];
        for (int32_t j = 0; j < K && done < limit; j++) {
            int32_t e;
            bool dup;
            do {   /* k distinct experts of this layer */
                e = (int32_t)(rnd(&seed) % (uint64_t)NE);
                dup = false;
                for (int32_t i = 0; i < j; i++) dup |= pick[i] == e;
            } while (dup);
            pick[j] = e;
            if (busy[slot])
                for (int p = 0; p < 3; p++) bad |= sl_loader_wait(L, &jobs[slot][p]) != 0;
            uint64_t pos = 0;
            for (int p = 0; p < 3; p++) {
                uint64_t off, len;
                sl_unit_map_expert_range(um, l, e, p, &off, &len);
                uint64_t abeg = off / align * align, aend = (off + len + align - 1) / align * align;
                sl_io_job *jb = &jobs[slot][p];
                memset(jb, 0, sizeof *jb);
                jb->dst = pool + (uint64_t)slot * slot_bytes + pos; jb->off = abeg; jb->len = aend - abeg;
                jb->need_end = off + len; jb->buf_index = -1; jb->unit = l;
                sl_loader_submit(L, jb);
                pos += um->moe.part_cap[p];
                done += aend - abeg;
            }
            busy[slot] = true;
            slot = (slot + 1) % n_slots;
        }
    }
    for (int i = 0; i < n_slots; i++)
        if (busy[i]) for (int p = 0; p < 3; p++) bad |= sl_loader_wait(L, &jobs[i][p]) != 0;
    double dt = (sl_now_ms() - t0) / 1e3;
    sl_loader_destroy(L);
    if (bad) { fprintf(stderr, "iobench: read failed\n"); return 1; }
    *gbs = (double)done / dt / 1e9;
    return 0;
}

/* --experts: the grid over qd of the expert-read pattern. */
static int experts_bench(const char *path, int io, const uint64_t *qds, int n_qd, uint64_t limit, int reps,
                         int n_slots)
{
    /* a split model: every shard read through its own O_DIRECT descriptor */
    sl_gguf *g = NULL;
    sl_unit_map um;
    memset(&um, 0, sizeof um);
    int rc = sl_gguf_open_path(&g, path);
    if (rc) { fprintf(stderr, "iobench: %s: %s\n", path, sl_last_error()); return 1; }
    const int n_files = (int)sl_gguf_n_shards(g);
    int dfds[SL_GGUF_MAX_SHARDS];
    sl_io_file files[SL_GGUF_MAX_SHARDS];
    uint32_t align = 0;
    char why[200];
    int refused = sl_dio_open_files(g, dfds, &align, why, sizeof why);
    if (refused) {
        fprintf(stderr, "iobench: --experts: O_DIRECT refused on %s: %s\n", sl_gguf_shard_at(g, (uint32_t)refused - 1)->path, why);
        sl_gguf_close(g);
        return 1;
    }
    sl_dio_file_table(g, dfds, files);
    rc = sl_unit_map_init(&um, g, align, true);
    if (rc) {
        fprintf(stderr, "iobench: %s: %s\n", path, sl_last_error());
        sl_dio_close_files(dfds, (uint32_t)n_files); sl_gguf_close(g);
        return 1;
    }
    if (um.moe.n_expert <= 0 || um.moe.n_expert_used <= 0 || um.moe.n_expert_used > 64 ||
        um.moe.n_expert_used > um.moe.n_expert) {
        fprintf(stderr, "iobench: --experts: not an MoE file with routed experts\n");
        sl_unit_map_free(&um); sl_gguf_close(g); sl_dio_close_files(dfds, (uint32_t)n_files);
        return 1;
    }
    if (!limit) limit = 2ull << 30;
    size_t ml; void *mb;
    uint64_t slot_bytes = um.moe.slot_bytes;
    uint8_t *pool = sl_buf_alloc((size_t)(slot_bytes * (uint64_t)n_slots), &ml, &mb);
    sl_io_job (*jobs)[3] = calloc((size_t)n_slots, sizeof *jobs);
    bool *busy = calloc((size_t)n_slots, sizeof *busy);
    if (!pool || !jobs || !busy) {
        fprintf(stderr, "iobench: cannot allocate %d expert slots of %llu bytes\n", n_slots,
                (unsigned long long)slot_bytes);
        if (pool) sl_buf_free(mb, ml);
        free(jobs); free(busy);
        sl_unit_map_free(&um); sl_gguf_close(g); sl_dio_close_files(dfds, (uint32_t)n_files);
        return 1;
    }
    memset(pool, 0, (size_t)(slot_bytes * (uint64_t)n_slots));   /* fault the huge pages in before timing */
    uint64_t off, len[3];
    for (int p = 0; p < 3; p++) sl_unit_map_expert_range(&um, 0, 0, p, &off, &len[p]);
    printf("# iobench %s --experts: %d of %d experts per layer drawn uniformly, three slices each "
           "(%llu + %llu + %llu bytes in layer 0) into %d slots (%.2f GB), %.2f GB per run, %s, O_DIRECT, align %u, "
           "median of %d\n",
           path, (int)um.moe.n_expert_used, (int)um.moe.n_expert, (unsigned long long)len[0],
           (unsigned long long)len[1], (unsigned long long)len[2], n_slots,
           (double)slot_bytes * n_slots / 1e9, (double)limit / 1e9,
           sl_stream_io_name(io), align, reps);
    printf("%10s %4s %10s %10s %10s\n", "req", "qd", "GB/s", "min", "max");
    double best = 0; uint64_t best_qd = 0;
    int bad = 0;
    for (int qi = 0; qi < n_qd && !bad; qi++) {
        double gbs[100];
        for (int r = 0; r < reps && !bad; r++)
            bad = experts_pass(files, n_files, &um, align, io, (int)qds[qi], limit, pool, slot_bytes, n_slots,
                               jobs, busy, &gbs[r]);
        if (bad) break;
        perf_sort(gbs, reps);
        double med = gbs[reps / 2];
        printf("%10s %4llu %10.3f %10.3f %10.3f\n", "experts", (unsigned long long)qds[qi], med, gbs[0], gbs[reps - 1]);
        fflush(stdout);
        if (med > best) { best = med; best_qd = qds[qi]; }
    }
    if (!bad) printf("# best: experts x qd %llu: %.3f GB/s\n", (unsigned long long)best_qd, best);
    sl_buf_free(mb, ml);
    free(jobs); free(busy);
    sl_unit_map_free(&um);
    sl_gguf_close(g);
    sl_dio_close_files(dfds, (uint32_t)n_files);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: iobench FILE [--io uring|pread] [--req 256K,1M,4M] [--qd 1,2,4,8,16]\n"
                        "               [--bytes N] [--reps 3] [--chunk 64M] [--no-direct] [--experts [--slots 64]]\n");
        return 2;
    }
    const char *path = argv[1];
    int io = SL_IO_URING, reps = 3, n_slots = XB_SLOTS;
    bool direct = true, experts = false, slots_set = false;
    uint64_t reqs[16] = { 256 << 10, 1 << 20, 4 << 20 }, qds[16] = { 1, 2, 4, 8, 16 };
    int n_req = 3, n_qd = 5;
    uint64_t limit = 0, chunk = 64ull << 20;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--no-direct")) { direct = false; continue; }
        if (!strcmp(a, "--experts")) { experts = true; continue; }
        i++;
        if (!strcmp(a, "--io")) {
            if (sl_stream_io_parse(v, &io)) { fprintf(stderr, "iobench: bad --io '%s'\n", v); return 2; }
        } else if (!strcmp(a, "--req")) n_req = parse_list(v, reqs, 16);
        else if (!strcmp(a, "--qd")) n_qd = parse_list(v, qds, 16);
        else if (!strcmp(a, "--bytes")) limit = parse_size(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--chunk")) chunk = parse_size(v);
        else if (!strcmp(a, "--slots")) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*v == 0 || *end || n < 1 || n > XB_MAX_SLOTS) {
                fprintf(stderr, "iobench: --slots '%s': want 1..%d\n", v, XB_MAX_SLOTS);
                return 2;
            }
            n_slots = (int)n;
            slots_set = true;
        }
        else { fprintf(stderr, "iobench: unknown option %s\n", a); return 2; }
    }
    if (reps < 1 || reps > 99) reps = 3;
    if (slots_set && !experts) { fprintf(stderr, "iobench: --slots goes with --experts\n"); return 2; }
    if (experts) {
        if (!direct) { fprintf(stderr, "iobench: --experts reads with O_DIRECT only\n"); return 2; }
        return experts_bench(path, io, qds, n_qd, limit, reps, n_slots);
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | (direct ? O_DIRECT : 0));
    if (fd < 0) { fprintf(stderr, "iobench: %s: %s\n", path, strerror(errno)); return 1; }
    struct stat st;
    fstat(fd, &st);
    uint64_t size = (uint64_t)st.st_size;
    uint32_t align = direct ? sl_dio_align(fd, size) : 1;
    if (direct && align == 0) { fprintf(stderr, "iobench: O_DIRECT refused on %s\n", path); return 1; }
    if (limit && limit < size) size = limit;
    size = size / (align ? align : 1) * (align ? align : 1);
    chunk = sl_buf_round(chunk);

    /* two chunk buffers: one filling while the previous completes */
    size_t ml[2]; void *mb[2]; uint8_t *buf[2];
    struct iovec iov[2];
    for (int b = 0; b < 2; b++) {
        buf[b] = sl_buf_alloc((size_t)chunk, &ml[b], &mb[b]);
        if (!buf[b]) { fprintf(stderr, "iobench: cannot allocate %llu bytes\n", (unsigned long long)chunk); return 1; }
        memset(buf[b], 0, (size_t)chunk);   /* fault the huge pages in before timing */
        iov[b].iov_base = buf[b]; iov[b].iov_len = (size_t)chunk;
    }
    printf("# iobench %s: %.2f GB read per run, %s, %s, align %u, chunk %llu MiB, median of %d\n",
           path, (double)size / 1e9, sl_stream_io_name(io),
           direct ? "O_DIRECT" : "buffered", align, (unsigned long long)(chunk >> 20), reps);
    printf("%10s %4s %10s %10s %10s\n", "req", "qd", "GB/s", "min", "max");
    double best = 0; uint64_t best_req = 0, best_qd = 0;
    for (int ri = 0; ri < n_req; ri++)
        for (int qi = 0; qi < n_qd; qi++) {
            sl_loader_cfg lc;
            memset(&lc, 0, sizeof lc);
            lc.io = io; lc.fd = fd; lc.direct = direct; lc.align = align;
            lc.req_bytes = (uint32_t)reqs[ri]; lc.queue_depth = (int)qds[qi];
            lc.n_threads = (int)qds[qi];
            lc.fixed = iov; lc.n_fixed = 2;
            sl_loader *L;
            char notice[256] = "";
            if (sl_loader_create(&L, &lc, notice, sizeof notice) != 0) {
                fprintf(stderr, "iobench: %s\n", sl_last_error());
                return 1;
            }
            double gbs[100];
            for (int r = 0; r < reps; r++) {
                posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                sl_io_job jobs[2];
                int in_flight[2] = { 0, 0 };
                double t0 = sl_now_ms();
                uint64_t off = 0;
                int k = 0, bad = 0;
                while (off < size || in_flight[0] || in_flight[1]) {
                    int b = k & 1;
                    if (in_flight[b]) { bad |= sl_loader_wait(L, &jobs[b]) != 0; in_flight[b] = 0; }
                    if (off < size) {
                        uint64_t n = size - off < chunk ? size - off : chunk;
                        memset(&jobs[b], 0, sizeof jobs[b]);
                        jobs[b].dst = buf[b]; jobs[b].off = off; jobs[b].len = n; jobs[b].need_end = off + n;
                        jobs[b].buf_index = sl_loader_fixed(L) ? b : -1; jobs[b].unit = k;
                        sl_loader_submit(L, &jobs[b]);
                        in_flight[b] = 1;
                        off += n;
                    }
                    k++;
                }
                double dt = (sl_now_ms() - t0) / 1e3;
                if (bad) { fprintf(stderr, "iobench: read failed\n"); return 1; }
                gbs[r] = (double)size / dt / 1e9;
            }
            sl_loader_destroy(L);
            perf_sort(gbs, reps);
            double med = gbs[reps / 2];
            printf("%9lluK %4llu %10.3f %10.3f %10.3f\n", (unsigned long long)(reqs[ri] >> 10),
                   (unsigned long long)qds[qi], med, gbs[0], gbs[reps - 1]);
            fflush(stdout);
            if (med > best) { best = med; best_req = reqs[ri]; best_qd = qds[qi]; }
        }
    printf("# best: req %lluK x qd %llu: %.3f GB/s\n", (unsigned long long)(best_req >> 10),
           (unsigned long long)best_qd, best);
    for (int b = 0; b < 2; b++) sl_buf_free(mb[b], ml[b]);
    close(fd);
    return 0;
}
