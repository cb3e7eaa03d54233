/* What the stream's parts share: notices, the loader over the stream's file
 * and the read jobs of a unit (stream_core.h). */
#include "stream_core.h"
#include "stream_io.h"

#include <stdio.h>
#include <string.h>

void sl_stream_add_notice(sl_stream *s, const char *msg)
{
    size_t n = strlen(s->notice);
    snprintf(s->notice + n, sizeof s->notice - n, "%s%s", n ? "; " : "", msg);
}

int sl_stream_make_loader(sl_stream *s, const struct iovec *fixed, int n_fixed)
{
    sl_loader_cfg lc;
    memset(&lc, 0, sizeof lc);
    lc.io = s->cfg.io;
    lc.fd = s->direct ? s->dfd : s->fd;
    lc.files = s->files; lc.n_files = s->n_files;
    lc.direct = s->direct;
    lc.align = s->align;
    lc.req_bytes = s->cfg.req_bytes;
    lc.queue_depth = s->cfg.queue_depth;
    lc.n_threads = s->cfg.n_io_threads;
    lc.hook = s->cfg.read_hook; lc.hook_ctx = s->cfg.read_hook_ctx;
    lc.fixed = fixed; lc.n_fixed = n_fixed;
    char notice[256] = "";
    int rc = sl_loader_create(&s->L, &lc, notice, sizeof notice);
    if (notice[0]) sl_stream_add_notice(s, notice);
    if (rc == 0) s->plan.io = sl_loader_backend(s->L);
    return rc;
}

void sl_stream_job_init(const sl_stream *s, sl_io_job *j, uint8_t *dst, uint64_t abeg, uint64_t aend,
                        uint64_t need_end, int32_t unit, int buf_index)
{
    memset(j, 0, sizeof *j);
    uint64_t fsize = sl_gguf_file_size(s->g);
    uint64_t a = s->align;
    uint64_t fend = (fsize + a - 1) / a * a;   /* never ask past the aligned EOF */
    j->dst = dst; j->off = abeg; j->len = (aend < fend ? aend : fend) - abeg;
    j->need_end = need_end; j->unit = unit; j->buf_index = buf_index;
}

int sl_stream_unit_jobs(const sl_stream *s, int32_t u, sl_io_job *jobs, uint8_t *buf, int buf_index)
{
    const sl_unit *un = &s->um.units[u];
    for (int k = 0; k < un->n_seg; k++) {
        const sl_seg *sg = &un->seg[k];
        sl_stream_job_init(s, &jobs[k], buf + sg->buf_off, sg->abeg, sg->aend, sg->end, u, buf_index);
    }
    return un->n_seg;
}
