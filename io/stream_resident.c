/* Resident mode: the whole tensor data read once through the loader into one
 * buffer; acquire is a pointer into it. */
#include "stream_core.h"
#include "stream_loader.h"
#include "stream_rows8.h"
#include "../gguf/base/sl_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct resident {
    sl_owned_buf mem;
    uint8_t *buf;
    uint64_t base;           /* file offset of buf[0] */
} resident;

static const uint8_t *resident_at(const sl_stream *s, uint64_t off)
{
    const resident *r = s->mode_state;
    return r->buf + (off - r->base);
}

/* cfg.rows8: the layers' matrices it picks, and the lm head (one tensor
 * over the head units, each a row range), packed and their views retyped. */
static int resident_rows8(sl_stream *s)
{
    sl_unit_map *um = &s->um;
    for (int32_t l = 0; l < um->n_layers; l++) {
        int rc = sl_stream_rows8_unit(s, &um->units[l], resident_at(s, um->units[l].abeg), "resident load");
        if (rc) return rc;
    }
    const sl_gguf_tensor *h = um->head;
    if (!h || h == um->embd || um->n_head_chunks < 1) return 0;
    sl_stream_tensor whole = um->units[um->n_layers].tensors[0];
    whole.ne[1] = h->ne[1];
    whole.nbytes = h->nbytes;
    for (int32_t c = 0; c < um->n_head_chunks; c++)
        if (um->units[um->n_layers + c].info.row_begin % 8) return 0;
    if (!sl_stream_rows8_wanted(s, &whole)) return 0;
    int rc = sl_stream_rows8_pack(&whole, (uint8_t *)resident_at(s, h->file_offset), "resident load");
    if (rc) return rc;
    for (int32_t c = 0; c < um->n_head_chunks; c++) um->units[um->n_layers + c].tensors[0].type = whole.type;
    return 0;
}

static int resident_open(sl_stream *s)
{
    resident *r = calloc(1, sizeof *r);
    if (!r) return sl_err_set(SL_ENOMEM, "resident mode: out of memory");
    s->mode_state = r;
    uint64_t a = s->align, fsize = sl_gguf_file_size(s->g);
    uint64_t beg = sl_gguf_data_offset(s->g) / a * a, end = (fsize + a - 1) / a * a;
    r->buf = sl_stream_alloc(s, &r->mem, (size_t)(end - beg));
    if (!r->buf) return sl_err_set(SL_ENOMEM, "resident mode: cannot allocate %llu bytes",
                                   (unsigned long long)(end - beg));
    r->base = beg;
    int rc = sl_stream_make_loader(s, NULL, 0);
    if (rc) return rc;
    sl_io_job j;
    sl_stream_job_init(s, &j, r->buf, beg, end, fsize, -1, -1);
    sl_loader_submit(s->L, &j);
    rc = s->cfg.progress ? sl_loader_wait_progress(s->L, &j, s->cfg.progress, s->cfg.progress_ctx)
                         : sl_loader_wait(s->L, &j);
    if (rc) return sl_err_set(rc, "resident load: %s", j.err);
    if (s->cfg.rows8 && (rc = resident_rows8(s))) return rc;   /* before anyone reads it */
    if (s->cfg.mlock && mlock(r->buf, (size_t)(end - beg)) != 0) {
        char m[160];
        snprintf(m, sizeof m, "mlock of %llu bytes failed (%s): memory not locked",
                 (unsigned long long)(end - beg), strerror(errno));
        sl_stream_add_notice(s, m);
    }
    return 0;
}

static void resident_close(sl_stream *s)
{
    resident *r = s->mode_state;
    if (!r) return;
    sl_owned_free(&r->mem);
    free(r);
    s->mode_state = NULL;
}

static int resident_acquire(sl_stream *s, int32_t unit, const uint8_t **base)
{
    const sl_unit *un = &s->um.units[unit];
    *base = un->n_tensors ? resident_at(s, un->abeg) : NULL;
    return 0;
}

const sl_stream_mode_ops sl_stream_resident_ops = {
    .open = resident_open, .close = resident_close,
    .file_at = resident_at, .acquire = resident_acquire,
};
