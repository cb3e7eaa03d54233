/* O_DIRECT for the streamer: the alignment a file's direct reads need (buffers
 * and memory figures: gguf/base/sl_platform.h). */
#include "stream_dio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

uint32_t sl_dio_align(int dfd, uint64_t file_size)
{
#ifdef STATX_DIOALIGN
    struct statx sx;
    if (statx(dfd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
        if (sx.stx_dio_offset_align == 0) return 0;     /* O_DIRECT not supported */
        uint32_t a = sx.stx_dio_offset_align;
        if (sx.stx_dio_mem_align > a) a = sx.stx_dio_mem_align;
        if (a < 512) a = 512;
        if (a <= 65536 && (a & (a - 1)) == 0) return a;
    }
#endif
    /* Probe: the smallest power of two an O_DIRECT read at that offset accepts. */
    void *buf = NULL;
    if (posix_memalign(&buf, 65536, 65536) != 0) return 4096;
    uint32_t found = 0;
    for (uint32_t a = 512; a <= 65536; a <<= 1) {
        uint64_t off = file_size >= 2ull * a ? a : 0;
        ssize_t n = pread(dfd, (char *)buf + a % 65536, a, (off_t)off);
        if (n >= 0) { found = a; break; }
        if (errno != EINVAL) { found = 4096; break; }
    }
    free(buf);
    return found;
}


int sl_dio_open_files(const sl_gguf *g, int *dfds, uint32_t *align, char *why, size_t why_size)
{
    const uint32_t n = sl_gguf_n_shards(g);
    *align = 1;
    for (uint32_t i = 0; i < n; i++) dfds[i] = -1;
    for (uint32_t i = 0; i < n; i++) {
        const sl_gguf_shard *sh = sl_gguf_shard_at(g, i);
        dfds[i] = open(sh->path, O_RDONLY | O_DIRECT | O_CLOEXEC);
        uint32_t a = dfds[i] < 0 ? 0 : sl_dio_align(dfds[i], sh->file_size);
        if (a == 0) {
            if (dfds[i] < 0) snprintf(why, why_size, "O_DIRECT refused by the filesystem (%s)", strerror(errno));
            else snprintf(why, why_size, "O_DIRECT not supported on this file");
            sl_dio_close_files(dfds, n);
            return (int)i + 1;
        }
        if (a > *align) *align = a;
    }
    return 0;
}

void sl_dio_close_files(int *dfds, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (dfds[i] >= 0) close(dfds[i]);
        dfds[i] = -1;
    }
}

void sl_dio_file_table(const sl_gguf *g, const int *fds, sl_io_file *files)
{
    for (uint32_t i = 0; i < sl_gguf_n_shards(g); i++) {
        const sl_gguf_shard *sh = sl_gguf_shard_at(g, i);
        files[i] = (sl_io_file){ .fd = fds[i], .base = sh->base, .end = sh->base + sh->file_size };
    }
}
