/* The streamer's loader (io/stream_loader.c) on its own: a cancelled job ends
 * with SL_ECANCELED, a one-request read on the caller's thread follows the
 * same retry policy and stays out of the stats, a failed start of a forced
 * backend is an error, submit_front / submit_next / submit jobs are read in
 * that order, read-ahead (submit_next) never has more than SL_READAHEAD_QD
 * requests in flight and does not hold back the reads needed now. Portable
 * (pread pool). */
#include "sl_test.h"
#include "../gguf/base/sl_status.h"
#include "../io/stream_io.h"
#include "../io/stream_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_BYTES (1u << 20)

static int make_file(char *path, size_t n)
{
    snprintf(path, n, "/tmp/sl_test_loader_%d.bin", (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    cr_assert(fd >= 0);
    uint8_t *b = malloc(FILE_BYTES);
    for (uint32_t i = 0; i < FILE_BYTES; i++) b[i] = (uint8_t)(i * 7 + (i >> 8));
    cr_assert_eq(write(fd, b, FILE_BYTES), (ssize_t)FILE_BYTES);
    free(b);
    return fd;
}

/* What every hook does after its own part: the plain read, as a read hook answers. */
static int64_t plain_read(int fd, void *buf, size_t len, uint64_t off)
{
    ssize_t r = pread(fd, buf, len, (off_t)off);
    return r < 0 ? -errno : r;
}

typedef struct slow { atomic_int calls; } slow;

/* 2 ms per request, every third call EINTR: a long job to cancel, retries to count */
static int64_t slow_hook(void *ctx, int fd, void *buf, size_t len, uint64_t off)
{
    slow *s = ctx;
    int n = atomic_fetch_add(&s->calls, 1);
    if (n % 3 == 1) return -EINTR;
    usleep(2000);
    return plain_read(fd, buf, len, off);
}

/* A pread pool of n threads, 4 KiB requests, every read through hook. */
static sl_loader *hooked(int fd, int n, sl_stream_read_hook hook, void *ctx)
{
    sl_loader_cfg lc;
    memset(&lc, 0, sizeof lc);
    lc.io = SL_IO_PREAD; lc.fd = fd; lc.align = 1; lc.req_bytes = 4096; lc.n_threads = n;
    lc.hook = hook; lc.hook_ctx = ctx;
    sl_loader *L;
    cr_assert_eq(sl_loader_create(&L, &lc, NULL, 0), 0, "%s", sl_last_error());
    cr_assert_eq(sl_loader_backend(L), SL_IO_PREAD);
    return L;
}

/* Each test's file, a buffer of its size and a loader over it (done frees them). */
typedef struct rig { char path[256]; int fd; uint8_t *buf; sl_loader *L; } rig;

/* Returns r->L. */
static sl_loader *rig_up(rig *r, int n_threads, sl_stream_read_hook hook, void *ctx)
{
    r->fd = make_file(r->path, sizeof r->path);
    r->L = hooked(r->fd, n_threads, hook, ctx);
    r->buf = calloc(1, FILE_BYTES);
    cr_assert_not_null(r->buf);
    return r->L;
}

static void rig_done(rig *r)
{
    sl_loader_destroy(r->L);
    free(r->buf);
    close(r->fd);
    unlink(r->path);
}

/* A job reading [off, off + len) into dst, all of it needed. */
static sl_io_job job_of(uint8_t *dst, uint64_t off, uint64_t len, int32_t unit)
{
    sl_io_job j;
    memset(&j, 0, sizeof j);
    j.dst = dst; j.off = off; j.len = len; j.need_end = off + len; j.unit = unit; j.buf_index = -1;
    return j;
}

Test(stream_loader, cancelled_job_ends_with_ecanceled)
{
    slow h = { 0 };
    rig r;
    sl_loader *L = rig_up(&r, 2, slow_hook, &h);
    sl_io_job j = job_of(r.buf, 0, FILE_BYTES, 7);
    sl_loader_submit(L, &j);   /* 256 requests of 2 ms on 2 threads: ~250 ms */
    usleep(5000);
    sl_loader_cancel(L, &j);
    cr_assert_eq(sl_loader_wait(L, &j), SL_ECANCELED);
    cr_assert_not_null(strstr(j.err, "unit 7"), "%s", j.err);
    cr_assert_not_null(strstr(j.err, "cancelled"), "%s", j.err);
    cr_assert_lt(atomic_load(&h.calls), 200, "the rest of the job was not handed out");
    cr_assert_str_eq(sl_strerror(SL_ECANCELED), "cancelled");
    /* the loader goes on serving */
    j.len = 65536; j.need_end = 65536;
    sl_loader_submit(L, &j);
    cr_assert_eq(sl_loader_wait(L, &j), 0, "%s", j.err);
    rig_done(&r);
}

Test(stream_loader, read_now_retries_and_stays_out_of_the_stats)
{
    slow h = { 0 };
    rig r;
    sl_loader *L = rig_up(&r, 2, slow_hook, &h);
    sl_loader_stats st;
    for (uint64_t off = 3; off < FILE_BYTES; off += 77777) {
        uint8_t got[300], want[300];
        sl_io_job j = job_of(got, off, sizeof got, -1);
        cr_assert_eq(sl_loader_read_now(L, &j, r.fd, 0), 0, "%s", j.err);
        cr_assert_eq(pread(r.fd, want, sizeof want, (off_t)off), (ssize_t)sizeof want);
        cr_assert_eq(memcmp(got, want, sizeof got), 0, "offset %llu", (unsigned long long)off);
    }
    cr_assert_gt(atomic_load(&h.calls), 14, "EINTR was retried");
    sl_loader_get_stats(L, &st);
    cr_assert_eq(st.bytes, 0);
    cr_assert_eq(st.retries, 0);
    /* past the end: SL_ETRUNC with the offset, no "unit" prefix */
    uint8_t b[16];
    sl_io_job j = job_of(b, FILE_BYTES - 8, 16, -1);
    cr_assert_eq(sl_loader_read_now(L, &j, r.fd, 0), SL_ETRUNC);
    cr_assert_not_null(strstr(j.err, "file offset"), "%s", j.err);
    cr_assert_null(strstr(j.err, "unit"), "%s", j.err);
    rig_done(&r);
}

Test(stream_loader, bad_backend_is_an_error)
{
    sl_loader_cfg lc;
    memset(&lc, 0, sizeof lc);
    lc.io = 42; lc.fd = -1;
    sl_loader *L = (sl_loader *)&lc;
    cr_assert_eq(sl_loader_create(&L, &lc, NULL, 0), SL_EINVAL);
    cr_assert_null(L);
}

typedef struct order { atomic_int calls, go; uint64_t off[16]; } order;

/* the first request waits for go; every request's offset in call order */
static int64_t order_hook(void *ctx, int fd, void *buf, size_t len, uint64_t off)
{
    order *o = ctx;
    int n = atomic_fetch_add(&o->calls, 1);
    if (n < 16) o->off[n] = off;
    while (n == 0 && !atomic_load(&o->go)) usleep(1000);
    return plain_read(fd, buf, len, off);
}

/* submit_front jobs first (newest first), then submit_next ones in their
 * order, then plain submits. */
Test(stream_loader, next_jobs_queue_behind_front_ones)
{
    order o = { 0 };
    rig r;
    sl_loader *L = rig_up(&r, 1, order_hook, &o);
    enum { BLOCK, N, F, X, F2, X2, NJ };
    sl_io_job j[NJ];
    for (int i = 0; i < NJ; i++) j[i] = job_of(r.buf + i * 4096, (uint64_t)i * 4096, 4096, i);
    sl_loader_submit(L, &j[BLOCK]);
    while (atomic_load(&o.calls) == 0) usleep(1000);   /* the one thread is held in the hook */
    sl_io_job *p;
    sl_loader_submit(L, &j[N]);
    p = &j[F]; sl_loader_submit_front(L, &p, 1);
    p = &j[X]; sl_loader_submit_next(L, &p, 1);
    p = &j[F2]; sl_loader_submit_front(L, &p, 1);
    p = &j[X2]; sl_loader_submit_next(L, &p, 1);
    atomic_store(&o.go, 1);
    for (int i = 0; i < NJ; i++) cr_assert_eq(sl_loader_wait(L, &j[i]), 0, "%s", j[i].err);
    const int want[NJ] = { BLOCK, F2, F, X, X2, N };
    cr_assert_eq(atomic_load(&o.calls), NJ);
    for (int i = 0; i < NJ; i++) cr_assert_eq(o.off[i], (uint64_t)want[i] * 4096, "read %d", i);
    rig_done(&r);
}

typedef struct conc { atomic_int cur, peak; } conc;

/* 2 ms per request; the peak number of requests in the hook at once */
static int64_t conc_hook(void *ctx, int fd, void *buf, size_t len, uint64_t off)
{
    conc *c = ctx;
    int now = atomic_fetch_add(&c->cur, 1) + 1, p = atomic_load(&c->peak);
    while (now > p && !atomic_compare_exchange_weak(&c->peak, &p, now)) { }
    usleep(2000);
    int64_t r = plain_read(fd, buf, len, off);
    atomic_fetch_sub(&c->cur, 1);
    return r;
}

/* 64 requests of read-ahead on 16 threads stay within the cap; reads needed
 * now start beside them at once and finish first; plain jobs use every thread. */
Test(stream_loader, read_ahead_is_capped)
{
    conc c = { 0 };
    rig r;
    sl_loader *L = rig_up(&r, 16, conc_hook, &c);
    uint8_t *buf = r.buf;
    sl_io_job ahead = job_of(buf, 0, 64 * 4096, 1), plain;
    sl_io_job now = job_of(buf + ahead.len, ahead.len, 4 * 4096, 2);
    sl_io_job *p = &ahead;
    sl_loader_submit_next(L, &p, 1);   /* ~16 ms at 8 in flight */
    usleep(3000);
    p = &now;
    sl_loader_submit_front(L, &p, 1);
    cr_assert_eq(sl_loader_wait(L, &now), 0, "%s", now.err);
    cr_assert(!sl_loader_is_done(L, &ahead), "the needed reads waited for the read-ahead");
    cr_assert_eq(sl_loader_wait(L, &ahead), 0, "%s", ahead.err);
    cr_assert_leq(atomic_load(&c.peak), SL_READAHEAD_QD + 4, "peak %d", atomic_load(&c.peak));
    cr_assert_geq(atomic_load(&c.peak), SL_READAHEAD_QD, "peak %d", atomic_load(&c.peak));
    for (uint32_t i = 0; i < 68 * 4096; i++) cr_assert_eq(buf[i], (uint8_t)(i * 7 + (i >> 8)), "byte %u", i);
    /* plain jobs are not capped */
    atomic_store(&c.peak, 0);
    plain = ahead;
    sl_loader_submit(L, &plain);
    cr_assert_eq(sl_loader_wait(L, &plain), 0, "%s", plain.err);
    cr_assert_gt(atomic_load(&c.peak), SL_READAHEAD_QD, "peak %d", atomic_load(&c.peak));
    rig_done(&r);
}
