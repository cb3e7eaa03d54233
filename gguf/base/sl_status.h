/* Status codes and error messages shared by every Sluice module.
 *
 * Every public function returns int: 0 on success, a negative SL_E* code on
 * failure. Codes that have a POSIX errno twin ARE that errno negated, so
 * kernels/ (which includes nothing of gguf/ but the type table through quant/)
 * can return -ENOMEM and mean SL_ENOMEM. The human message ("tensor 'x': data ... past end
 * of file") is kept per thread; handles copy it so it survives later calls. */
#ifndef SL_STATUS_H
#define SL_STATUS_H

#include <errno.h>

#include "sl_api.h"

#define SL_OK          0
#define SL_EINVAL      (-EINVAL)   /* bad argument or flag */
#define SL_ENOMEM      (-ENOMEM)   /* allocation failed */
#define SL_EIO         (-EIO)      /* read/write failed (errno in the message) */
#define SL_ENOENT      (-ENOENT)   /* file, key or tensor not found */
#define SL_ENOSYS      (-ENOSYS)   /* feature unavailable here (io_uring, ISA) */
#define SL_ERANGE      (-ERANGE)   /* value out of range / overflow */
#define SL_EBUSY       (-EBUSY)    /* no free slot: every streamer slot is held */
#define SL_ECANCELED   (-ECANCELED) /* read cancelled (the schedule moved on) */
#define SL_EFORMAT     (-1001)     /* malformed or hostile file contents */
#define SL_EVERSION    (-1002)     /* unsupported file version */
#define SL_ETYPE       (-1003)     /* value of an unexpected type */
#define SL_EUNSUPPORTED (-1004)    /* valid but not supported (arch, tensor type) */
#define SL_ESHAPE      (-1005)     /* tensor shape does not match the model */
#define SL_ETRUNC      (-1006)     /* file shorter than its contents claim */
#define SL_ECTX        (-1007)     /* context window exhausted */

#ifdef __cplusplus
extern "C" {
#endif

/* Static description of a status code ("malformed file"). Never NULL. */
SL_API const char *sl_strerror(int status);

/* The calling thread's last error message ("" if none). */
SL_API const char *sl_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
