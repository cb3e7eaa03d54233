/* The stream object (struct sl_stream) and what its parts share
 * (stream_core.c): the interface a mode implements (sl_stream_mode_ops; the
 * modes' table is stream_modes.h), the loader over the stream's file, the
 * read jobs of a unit, notices and the buffers the modes own. stream.c does
 * what all modes share (open, plan, globals, views, rows, stats) and calls
 * the mode for what differs. */
#ifndef SL_STREAM_CORE_H
#define SL_STREAM_CORE_H

#include "sluice_stream.h"
#include "stream_loader.h"
#include "stream_numa.h"
#include "stream_units.h"
#include "../gguf/gguf.h"
#include "../gguf/base/sl_platform.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sl_owned_buf { void *map; size_t len; } sl_owned_buf;

/* One mode's operations, a const row in its file (stream_resident.c,
 * stream_ring.c, stream_mmap.c); the stream holds the row of its plan's mode. */
typedef struct sl_stream_mode_ops {
    /* Loads, maps or allocates what s->plan says; sets s->mode_state. */
    int (*open)(sl_stream *s);
    /* Frees the mode's state, also after a failed open. */
    void (*close)(sl_stream *s);
    /* Address of file byte off when the whole file is in memory; NULL: not this mode. */
    const uint8_t *(*file_at)(const sl_stream *s, uint64_t off);
    /* Unit in memory: *base = the buffer holding file offset abeg. Status < 0 + sl_last_error. */
    int (*acquire)(sl_stream *s, int32_t unit, const uint8_t **base);
    void (*release)(sl_stream *s, int32_t unit);      /* NULL: nothing to do */
    void (*prefetch)(sl_stream *s, int32_t unit);     /* NULL: nothing to do */
    /* memory-pressure ladder (engine/pressure.c); NULL: SL_ENOSYS in this mode */
    int (*set_pinned)(sl_stream *s, int32_t unit, bool pinned);   /* unit not acquired */
    int (*set_slots)(sl_stream *s, int32_t n_slots);              /* 1..plan n_slots, none acquired beyond */
} sl_stream_mode_ops;

struct sl_stream {
    sl_gguf *g;
    int fd, dfd;             /* the (first) file: buffered (the reader's); O_DIRECT (-1 if refused) */
    /* a split model (stream_files.c): O_DIRECT descriptors of its files (NULL:
     * buffered), the loader's table of them (n_files 0: one file) */
    int *dfds;
    sl_io_file *files; int n_files;
    sl_stream_config cfg;
    sl_stream_plan plan;
    sl_unit_map um;
    uint32_t align;
    bool direct;
    char notice[512];
    char err[512];
    sl_loader *L;            /* resident and ring modes */
    const sl_stream_mode_ops *ops;
    void *mode_state;
    /* globals */
    sl_stream_tensor *globals; uint32_t n_globals;
    sl_owned_buf gmem;
    const uint8_t *embd_data;   /* token_embd when in memory (resident, mapped, pinned) */
    /* telemetry */
    double stall_ms; uint64_t acquires;
    /* routed experts (stream_experts.c): the cache when split, else slice views */
    struct sl_experts *ex;
    sl_stream_tensor *xviews;   /* [n_layers * n_expert * 3], unsplit: lazily */
    bool *xheld;                /* [n_layers * n_expert] */
    /* memory-pressure ladder (stream_pressure.c): slots at open; 0 until first resized */
    int32_t max_slots;
    /* where the modes' big buffers go (stream_numa.h); decided at open */
    sl_numa_place numa;
    /* sl_stream_read_rows: aligned staging of a batch's rows (grown on demand) */
    sl_owned_buf rstage;
};

void sl_stream_add_notice(sl_stream *s, const char *msg);
/* The model's descriptors (s->g open): fd, O_DIRECT ones and align when
 * allowed (else a notice), the file table of a split model. */
int sl_stream_open_files(sl_stream *s);
void sl_stream_close_files(sl_stream *s);
/* The buffered descriptor of the file holding model offset off; *base: its byte 0. */
int sl_stream_buffered_fd(const sl_stream *s, uint64_t off, uint64_t *base);
/* The loader over the stream's file; fixed: buffers to register (may be NULL). */
int sl_stream_make_loader(sl_stream *s, const struct iovec *fixed, int n_fixed);
/* A job reading [abeg, aend) (clipped to the aligned EOF) into dst. */
void sl_stream_job_init(const sl_stream *s, sl_io_job *j, uint8_t *dst, uint64_t abeg, uint64_t aend,
                        uint64_t need_end, int32_t unit, int buf_index);
/* The jobs reading unit u into buf: one per segment (at most SL_MAX_SEGS),
 * not submitted. Returns their number. */
int sl_stream_unit_jobs(const sl_stream *s, int32_t u, sl_io_job *jobs, uint8_t *buf, int buf_index);

static inline void *sl_owned_alloc(sl_owned_buf *b, size_t len) { return sl_buf_alloc(len, &b->len, &b->map); }
/* sl_owned_alloc placed where the stream's NUMA decision says (before any page is touched). */
static inline void *sl_stream_alloc(sl_stream *s, sl_owned_buf *b, size_t len)
{
    void *p = sl_owned_alloc(b, len);
    if (p) (void)sl_numa_apply(&s->numa, b->map, b->len);   /* a refused bind only costs locality */
    return p;
}
static inline void sl_owned_free(sl_owned_buf *b) { sl_buf_free(b->map, b->len); b->map = NULL; b->len = 0; }

#endif
