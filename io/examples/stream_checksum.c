/* Streams a GGUF model with the Sluice streamer alone (only io/sluice_stream.h)
 * and prints a checksum per unit: what another runtime embedding Sluice as its
 * weight-streaming backend would do.
 *
 *   stream_checksum MODEL [--mode auto|resident|stream|mmap] [--io auto|uring|pread]
 *                   [--mem-budget BYTES] [--passes N] [--req BYTES] [--qd N] [--no-direct]
 *                   [--touch]   (one byte per 4 KiB instead of a full hash: measures I/O)
 */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime under -std=c11 */
#include "sluice_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t fnv1a(uint64_t h, const void *p, uint64_t n)
{
    const unsigned char *b = p;
    for (uint64_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
    return h;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int usage(void)
{
    fprintf(stderr, "usage: stream_checksum MODEL [--mode auto|resident|stream|mmap] [--io auto|uring|pread]\n"
                    "       [--mem-budget BYTES] [--passes N] [--req BYTES] [--qd N] [--no-direct] [--touch]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) return usage();
    sl_stream_config c;
    sl_stream_config_init(&c);
    int passes = 1;
    bool touch_only = false;   /* --touch: one byte per 4 KiB instead of hashing (I/O speed) */
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-direct")) { c.no_direct = true; continue; }
        if (!strcmp(a, "--touch")) { touch_only = true; continue; }
        if (!v) return usage();
        i++;
        if (!strcmp(a, "--mode")) {
            if (sl_stream_mode_parse(v, &c.mode)) return usage();
        } else if (!strcmp(a, "--io")) {
            if (sl_stream_io_parse(v, &c.io)) return usage();
        } else if (!strcmp(a, "--mem-budget")) c.mem_budget = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--passes")) passes = atoi(v);
        else if (!strcmp(a, "--req")) c.req_bytes = (uint32_t)strtoul(v, NULL, 0);
        else if (!strcmp(a, "--qd")) c.queue_depth = atoi(v);
        else return usage();
    }
    sl_stream *s;
    int rc = sl_stream_open(&s, argv[1], &c);
    if (rc) { fprintf(stderr, "open: %s\n", sl_stream_open_errmsg()); return 1; }
    if (sl_stream_notice(s)[0]) fprintf(stderr, "notice: %s\n", sl_stream_notice(s));
    const sl_stream_plan *p = sl_stream_get_plan(s);
    printf("mode %s io %s units %d pinned %d slots %d x %llu\n", sl_stream_mode_name(p->mode), sl_stream_io_name(p->io),
           (int)p->n_units, (int)p->n_pinned, (int)p->n_slots, (unsigned long long)p->slot_bytes);
    int32_t U = sl_stream_n_units(s);
    sl_stream_reset_stats(s);   /* count the passes, not the loading of pinned units */
    uint64_t total = 1469598103934665603ull;
    double t0 = now_s();
    for (int pass = 0; pass < passes; pass++) {
        for (int32_t u = 0; u < U; u++) {
            sl_stream_view v;
            rc = sl_stream_acquire(s, u, &v);
            if (rc) { fprintf(stderr, "acquire %d: %s\n", (int)u, sl_stream_errmsg(s)); sl_stream_close(s); return 1; }
            uint64_t h = 1469598103934665603ull, bytes = 0;
            for (uint32_t i = 0; i < v.n_tensors; i++) {
                h = fnv1a(h, v.tensors[i].name, strlen(v.tensors[i].name));
                if (touch_only) {
                    const unsigned char *d = v.tensors[i].data;
                    for (uint64_t k = 0; k < v.tensors[i].nbytes; k += 4096) h = fnv1a(h, d + k, 1);
                } else {
                    h = fnv1a(h, v.tensors[i].data, v.tensors[i].nbytes);
                }
                bytes += v.tensors[i].nbytes;
            }
            if (pass == 0) {
                sl_stream_unit info;
                sl_stream_unit_info(s, u, &info);
                printf("unit %3d %-5s %3u tensors %12llu bytes %s  %016llx\n", (int)u,
                       info.kind == SL_UNIT_LAYER ? "layer" : "head", v.n_tensors,
                       (unsigned long long)bytes, info.pinned ? "pinned" : "      ",
                       (unsigned long long)h);
            }
            total = fnv1a(total, &h, sizeof h);
            sl_stream_release(s, u);
        }
    }
    double dt = now_s() - t0;
    sl_stream_stats st;
    sl_stream_get_stats(s, &st);
    printf("total %016llx\n", (unsigned long long)total);
    printf("passes %d: %.3f s, read %llu bytes in %llu requests (%llu retries), %.1f MB/s, stall %.1f ms, io busy %.1f ms\n",
           passes, dt, (unsigned long long)st.bytes_read, (unsigned long long)st.n_reads,
           (unsigned long long)st.n_retries, dt > 0 ? (double)st.bytes_read / dt / 1e6 : 0.0,
           st.stall_ms, st.io_busy_ms);
    sl_stream_close(s);
    return 0;
}
