/* The model's files as the stream reads them: the reader's buffered
 * descriptors, O_DIRECT descriptors of every file (all of them or none), and
 * for a split model the loader's table of files in model offsets. */
#include "stream_core.h"
#include "stream_dio.h"
#include "../gguf/base/sl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* O_DIRECT on every file when allowed: the largest alignment any of them
 * needs; a file that refuses it makes all reads buffered (with a notice). */
static int open_direct(sl_stream *s, uint32_t n)
{
    s->dfd = -1; s->align = 1; s->direct = false;
    if (s->cfg.no_direct || s->cfg.mode == SL_MODE_MMAP || n == 0) return 0;
    int *dfds = malloc(n * sizeof *dfds);
    if (!dfds) return sl_err_set(SL_ENOMEM, "streamer: out of memory");
    uint32_t align;
    char why[200], m[300];
    int bad = sl_dio_open_files(s->g, dfds, &align, why, sizeof why);
    if (bad) {
        snprintf(m, sizeof m, "%s: buffered reads", why);
        if (n > 1) snprintf(m + strlen(m), sizeof m - strlen(m), " (%s)", sl_gguf_shard_at(s->g, (uint32_t)bad - 1)->path);
        sl_stream_add_notice(s, m);
        free(dfds);
        return 0;
    }
    s->dfd = dfds[0]; s->align = align; s->direct = true;
    if (n > 1) s->dfds = dfds;
    else free(dfds);
    return 0;
}

int sl_stream_open_files(sl_stream *s)
{
    uint32_t n = sl_gguf_n_shards(s->g);
    s->fd = sl_gguf_shard_at(s->g, 0)->fd;
    int rc = open_direct(s, n);
    if (rc || n <= 1) return rc;
    s->files = calloc(n, sizeof *s->files);
    if (!s->files) return sl_err_set(SL_ENOMEM, "streamer: out of memory");
    int bfds[SL_GGUF_MAX_SHARDS];   /* buffered: the reader's own descriptors */
    for (uint32_t i = 0; i < n; i++) bfds[i] = sl_gguf_shard_at(s->g, i)->fd;
    sl_dio_file_table(s->g, s->direct ? s->dfds : bfds, s->files);
    s->n_files = (int)n;
    return 0;
}

void sl_stream_close_files(sl_stream *s)
{
    if (s->dfds) sl_dio_close_files(s->dfds, sl_gguf_n_shards(s->g));
    else if (s->dfd >= 0) close(s->dfd);
    free(s->dfds);
    free(s->files);
    s->dfds = NULL; s->files = NULL; s->dfd = -1; s->n_files = 0;
}

int sl_stream_buffered_fd(const sl_stream *s, uint64_t off, uint64_t *base)
{
    const sl_gguf_shard *sh = sl_gguf_shard_of(s->g, off);
    if (!sh) sh = sl_gguf_shard_at(s->g, 0);
    *base = sh->base;
    return sh->fd;
}
