/* O_DIRECT for the streamer's files (stream_dio.c). */
#ifndef SL_STREAM_DIO_H
#define SL_STREAM_DIO_H

#include <stdint.h>

/* O_DIRECT alignment of fd (statx DIOALIGN, else probing); 0 = refused. */
uint32_t sl_dio_align(int dfd, uint64_t file_size);

#endif
