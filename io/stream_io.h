/* The I/O backends as one table (stream_io.c), one row per enum sl_stream_io:
 * its name and the backend that serves the loader's queue. A new backend is
 * its own file defining a const sl_io_backend (stream_loader.h), its extern
 * below, an enum value before SL_IO_COUNT and its row. */
#ifndef SL_STREAM_IO_H
#define SL_STREAM_IO_H

#include "stream_loader.h"

/* The backends' rows, each defined in its file. */
extern const sl_io_backend sl_io_uring_backend;   /* stream_uring.c */
extern const sl_io_backend sl_io_pread_backend;   /* stream_pread.c */
/* 0 if io_uring_setup works in this process (stream_uring.c). Probed once per
 * process (see sluice_stream.h: the SIGSYS guard). */
int sl_uring_probe(void);

/* The backend SL_IO_AUTO stands for on this machine: io_uring, else the pool. */
int sl_io_auto(void);
/* A loader serving cfg with cfg->io's backend; SL_IO_AUTO tries io_uring then
 * falls back to the pread pool (notice set). SL_EINVAL for an io out of range. */
int sl_loader_create(sl_loader **out, const sl_loader_cfg *cfg, char *notice, size_t notice_len);

#endif
