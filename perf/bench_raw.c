/* Bench runner "raw": no streamer, no compute. A decode step reads every
 * weight byte once, the way a layer-streaming engine must when nothing fits:
 *   stream   — O_DIRECT sequential reads (io_uring, else pread threads) of the
 *              weight range per token into a small ring of buffers;
 *   mmap     — the file mmapped, every byte of the weight range read per token
 *              (page faults + readahead: what an mmap engine does under pressure);
 *   resident — the weight range read once into RAM, then read from RAM per token.
 * It gives the disk/memory side of the bound while engine/io are not linked in. */
#include "../gguf/gguf.h"
#include "../io/sluice_stream.h"
#include "bench.h"
#include "perf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Weight range read per token: from the first layer tensor to the end of the
 * tensor data (layers, output norm, lm head); token_embd rows are read on demand. */
int bench_weight_range(const char *path, uint64_t *begin, uint64_t *end, uint64_t *model_bytes,
                        char *err, size_t err_len)
{
    sl_gguf *g = NULL;
    int rc = sl_gguf_open_path(&g, path);
    if (rc) { snprintf(err, err_len, "%s", sl_gguf_errmsg(NULL)); return -1; }
    uint64_t b = UINT64_MAX, e = 0;
    for (int64_t i = 0; i < sl_gguf_n_tensors(g); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        if (!strcmp(t->name, "token_embd.weight")) continue;
        if (t->file_offset < b) b = t->file_offset;
        if (t->file_offset + t->nbytes > e) e = t->file_offset + t->nbytes;
    }
    *model_bytes = sl_gguf_total_tensor_bytes(g);
    sl_gguf_close(g);
    if (b >= e) { snprintf(err, err_len, "%s: no weight tensors", path); return -1; }
    *begin = b & ~4095ull;
    *end = e;
    return 0;
}

static uint64_t sum_range(const uint8_t *p, uint64_t n)
{
    const uint64_t *w = (const uint64_t *)(const void *)p;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, k = n / 32;
    for (uint64_t i = 0; i < k; i++) {
        s0 += w[4 * i]; s1 += w[4 * i + 1]; s2 += w[4 * i + 2]; s3 += w[4 * i + 3];
    }
    return s0 ^ s1 ^ s2 ^ s3;
}

/* Reads [begin, begin+len) into dst with O_DIRECT (dst 4 KiB aligned), buffered if refused. */
static int load_direct(const char *path, uint64_t begin, uint64_t len, uint8_t *dst, char *err, size_t err_len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
    if (fd < 0) fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { snprintf(err, err_len, "%s: cannot open", path); return -1; }
    uint64_t done = 0, chunk = 8u << 20;
    while (done < len) {
        uint64_t l = len - done < chunk ? ((len - done + 4095) & ~4095ull) : chunk;
        ssize_t n = pread(fd, dst + done, l, (off_t)(begin + done));
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) { snprintf(err, err_len, "%s: read at %llu failed", path, (unsigned long long)(begin + done)); close(fd); return -1; }
        done += (uint64_t)n;
    }
    close(fd);
    return 0;
}

static int run_raw(const bench_cfg *c, bench_sample *o, char *err, size_t err_len)
{
    uint64_t begin, end, model_bytes;
    double t0 = perf_now();
    perf_evict(c->model);
    if (bench_weight_range(c->model, &begin, &end, &model_bytes, err, err_len)) return -1;
    uint64_t wbytes = end - begin;
    o->model_bytes = model_bytes;
    int mode = c->mode;
    if (mode == SL_MODE_AUTO) {
        uint64_t avail = 0, total = 0, budget = c->mem_budget;
        if (!budget && !perf_meminfo(&avail, &total)) budget = avail > (1ull << 30) ? avail - (1ull << 30) : 0;
        mode = wbytes < budget ? SL_MODE_RESIDENT : SL_MODE_STREAM;
        o->budget_bytes = budget;
    } else {
        o->budget_bytes = c->mem_budget;
    }
    snprintf(o->mode, sizeof o->mode, "%s", sl_stream_mode_name(mode));
    volatile uint64_t sink = 0;
    uint32_t req = c->req_bytes ? c->req_bytes : 1u << 20;
    int qd = c->queue_depth ? c->queue_depth : 4;
    int steps = 1 + c->n_gen;   /* step 0 = prompt (a batch reads the weights once) */
    double t_first = 0, t_dec0 = 0, stall = 0;
    uint64_t dec_bytes = 0;

    if (mode == SL_MODE_STREAM) {
        snprintf(o->io, sizeof o->io, "raw");
        for (int s = 0; s < steps; s++) {
            double ts = perf_now();
            perf_disk_result r;
            int rc = perf_disk_read_range(c->model, begin, end, req, qd, &r, err, err_len);
            if (rc) return -1;
            double te = perf_now();
            if (s == 0) { t_first = te; t_dec0 = te; }
            else { stall += te - ts; dec_bytes += r.bytes; }
            if (!strcmp(o->io, "raw")) snprintf(o->io, sizeof o->io, "%s", r.engine);
        }
    } else if (mode == SL_MODE_RESIDENT) {
        /* read once into our own memory (O_DIRECT: not the page cache's), then per token
         * read it all from RAM with the configured threads */
        snprintf(o->io, sizeof o->io, "-");
        uint8_t *res = NULL;
        if (posix_memalign((void **)&res, 1u << 21, (wbytes + 4095 + (1u << 21)) & ~((1ull << 21) - 1))) {
            snprintf(err, err_len, "cannot allocate %llu bytes", (unsigned long long)wbytes);
            return -1;
        }
#ifdef MADV_HUGEPAGE
        madvise(res, wbytes, MADV_HUGEPAGE);   /* as the streamer's buffers */
#endif
        if (load_direct(c->model, begin, wbytes, res, err, err_len)) { free(res); return -1; }
        for (int s = 0; s < steps; s++) {
            perf_mem_read_bw(res, wbytes, c->threads, 1);
            if (s == 0) { t_first = perf_now(); t_dec0 = t_first; }
        }
        free(res);
    } else if (mode == SL_MODE_MMAP) {
        int fd = open(c->model, O_RDONLY | O_CLOEXEC);
        if (fd < 0) { snprintf(err, err_len, "%s: cannot open", c->model); return -1; }
        uint64_t fsize = perf_file_size(c->model);
        uint8_t *map = mmap(NULL, fsize, PROT_READ, MAP_PRIVATE, fd, 0);
        close(fd);
        if (map == MAP_FAILED) { snprintf(err, err_len, "%s: mmap failed", c->model); return -1; }
        snprintf(o->io, sizeof o->io, "mmap");
        uint64_t rb0 = 0;
        for (int s = 0; s < steps; s++) {
            sink += sum_range(map + begin, wbytes);
            if (s == 0) { t_first = perf_now(); t_dec0 = t_first; rb0 = perf_proc_read_bytes(); }
        }
        dec_bytes = perf_proc_read_bytes() - rb0;   /* what page faults really fetched from disk */
        stall = perf_now() - t_dec0;            /* no compute: all of it is waiting on memory/disk */
        munmap(map, fsize);
    } else {
        snprintf(err, err_len, "unknown mode %d", mode);
        return -1;
    }
    double t_end = perf_now();
    (void)sink;
    o->ttft_cold_ms = (t_first - t0) * 1e3;
    o->ttft_warm_ms = o->ttft_cold_ms;   /* raw: no session to warm */
    o->prompt_ms = o->ttft_cold_ms;
    o->decode_ms = (t_end - t_dec0) * 1e3;
    o->n_decode = c->n_gen;
    o->stall_ms = stall * 1e3;
    o->decode_bytes = dec_bytes;
    o->compute_included = false;
    snprintf(o->note, sizeof o->note, "raw reads of %.2f GB per token, no compute", wbytes / 1e9);
    return 0;
}

BENCH_RUNNER(bench_runner_raw, "raw", 0, false, run_raw)
