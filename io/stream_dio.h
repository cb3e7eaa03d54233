/* O_DIRECT for the streamer's files (stream_dio.c). */
#ifndef SL_STREAM_DIO_H
#define SL_STREAM_DIO_H

#include <stddef.h>
#include <stdint.h>

#include "stream_loader.h"
#include "../gguf/gguf.h"

/* O_DIRECT alignment of fd (statx DIOALIGN, else probing); 0 = refused. */
uint32_t sl_dio_align(int dfd, uint64_t file_size);

/* O_DIRECT descriptors of every file of g (dfds[sl_gguf_n_shards(g)]) and
 * the largest alignment any of them needs (all or none: a split model's
 * reads go through its files' own descriptors). 0: open; i + 1: file i
 * refused O_DIRECT (why says how; every descriptor closed, dfds all -1). */
int sl_dio_open_files(const sl_gguf *g, int *dfds, uint32_t *align, char *why, size_t why_size);
void sl_dio_close_files(int *dfds, uint32_t n);
/* The loader's table of g's files (files[sl_gguf_n_shards(g)]) over fds. */
void sl_dio_file_table(const sl_gguf *g, const int *fds, sl_io_file *files);

#endif
