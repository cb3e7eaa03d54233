/* Files Sluice writes and reads as data, kept from being turned against their
 * owner: a write goes to a fresh temporary beside the target (O_EXCL|O_NOFOLLOW:
 * a link planted at its name is never followed), then fsync, rename, fsync of
 * the directory; any failure removes the temporary and leaves the previous
 * file as it was. A read opens without blocking and accepts only a regular
 * file, so a FIFO or device named as data fails at once instead of hanging.
 * Library-internal; messages via sl_err_set name `what`, the path and errno. */
#ifndef SL_FILE_H
#define SL_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "sl_status.h"   /* SL_E*, sl_last_error */

typedef struct sl_file_out {
    int fd;             /* the temporary; -1 when closed */
    char *path, *tmp;   /* the target and the temporary's name */
    const char *what;   /* "prompt cache", "model": the start of every message */
} sl_file_out;

/* Creates the temporary for path (mode 0644 less umask). 0 or SL_E*. */
int sl_file_out_open(sl_file_out *o, const char *path, const char *what);
/* Writes all n bytes; SL_EIO naming the errno (ENOSPC, EIO, EFBIG) on failure. */
int sl_file_out_write(sl_file_out *o, const void *buf, size_t n);
/* A stdio stream on the temporary (a dup of fd), for writers that format:
 * fclose it before commit, whose fsync then covers what it wrote. NULL and
 * a message on failure. */
FILE *sl_file_out_stream(sl_file_out *o);
/* Closes the stream f of o, then commits; aborts if the stream failed. */
int sl_file_out_close_stream(sl_file_out *o, FILE *f);
/* fsync, close, rename over the target, fsync of its directory. On failure the
 * temporary is removed (as by abort) and the target keeps its old contents. */
int sl_file_out_commit(sl_file_out *o);
/* Closes and removes the temporary; the target is untouched. Safe to repeat. */
void sl_file_out_abort(sl_file_out *o);

/* Opens path for reading as data: O_NONBLOCK while checking it is a regular
 * file, then blocking reads. *fd on success; SL_ENOENT, SL_EINVAL (not a
 * regular file) or SL_EIO otherwise. */
int sl_file_open_data(const char *path, const char *what, int *fd);
/* The whole of a data file (opened as above) into a malloc'd, NUL-terminated
 * buffer; SL_ERANGE when it is larger than max bytes. */
int sl_file_read_data(const char *path, const char *what, size_t max, char **out, size_t *len);

#endif
