/* mmap mode (the baseline): the file mapped read-only; the kernel pages it
 * in. acquire advises WILLNEED on the next depth units, release DONTNEED. */
#include "stream_core.h"
#include "../gguf/base/sl_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

typedef struct mapped { uint8_t *map; size_t len; } mapped;

static const uint8_t *mmap_at(const sl_stream *s, uint64_t off)
{
    const mapped *m = s->mode_state;
    return m->map + off;
}

/* A split model: one reserved range of its model offsets, each file mapped
 * over it at its base (bases are page multiples); the gaps stay inaccessible. */
static int map_files(sl_stream *s, mapped *m, uint64_t fsize)
{
    void *p = mmap(NULL, (size_t)fsize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return sl_err_set(-errno, "mmap: reserving %llu bytes: %s", (unsigned long long)fsize, strerror(errno));
    m->map = p; m->len = (size_t)fsize;
    for (uint32_t i = 0; i < sl_gguf_n_shards(s->g); i++) {
        const sl_gguf_shard *sh = sl_gguf_shard_at(s->g, i);
        if (sh->file_size && mmap(m->map + sh->base, (size_t)sh->file_size, PROT_READ, MAP_SHARED | MAP_FIXED,
                                  sh->fd, 0) == MAP_FAILED)
            return sl_err_set(-errno, "mmap of %s (%llu bytes): %s", sh->path, (unsigned long long)sh->file_size,
                              strerror(errno));
    }
    return 0;
}

static int mmap_open(sl_stream *s)
{
    mapped *m = calloc(1, sizeof *m);
    if (!m) return sl_err_set(SL_ENOMEM, "mmap mode: out of memory");
    s->mode_state = m;
    uint64_t fsize = sl_gguf_file_size(s->g);
    s->plan.io = SL_IO_AUTO;   /* no loader */
    if (sl_gguf_n_shards(s->g) > 1) return map_files(s, m, fsize);
    void *p = mmap(NULL, (size_t)fsize, PROT_READ, MAP_SHARED, s->fd, 0);
    if (p == MAP_FAILED)
        return sl_err_set(-errno, "mmap of %llu bytes: %s", (unsigned long long)fsize, strerror(errno));
    m->map = p; m->len = (size_t)fsize;
    return 0;
}

static void mmap_close(sl_stream *s)
{
    mapped *m = s->mode_state;
    if (!m) return;
    if (m->map) munmap(m->map, m->len);
    free(m);
    s->mode_state = NULL;
}

/* WILLNEED widens to whole pages; DONTNEED only drops pages entirely inside the unit */
static void advise(sl_stream *s, const sl_unit *un, int advice)
{
    if (un->end == un->begin) return;
    const mapped *m = s->mode_state;
    uintptr_t b = (uintptr_t)(m->map + un->begin), e = (uintptr_t)(m->map + un->end);
    long pg = sysconf(_SC_PAGESIZE);
    if (advice == MADV_DONTNEED) { b = (b + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1); e &= ~(uintptr_t)(pg - 1); }
    else b &= ~(uintptr_t)(pg - 1);
    if (e > b) madvise((void *)b, e - b, advice);
}

static int mmap_acquire(sl_stream *s, int32_t unit, const uint8_t **base)
{
    *base = mmap_at(s, s->um.units[unit].abeg);
    for (int32_t d = 1; d <= s->cfg.depth; d++)
        advise(s, &s->um.units[(unit + d) % s->um.n_units], MADV_WILLNEED);
    return 0;
}

static void mmap_release(sl_stream *s, int32_t unit) { advise(s, &s->um.units[unit], MADV_DONTNEED); }
static void mmap_prefetch(sl_stream *s, int32_t unit) { advise(s, &s->um.units[unit], MADV_WILLNEED); }

const sl_stream_mode_ops sl_stream_mmap_ops = {
    .open = mmap_open, .close = mmap_close, .file_at = mmap_at,
    .acquire = mmap_acquire, .release = mmap_release, .prefetch = mmap_prefetch,
};
