/* Per-thread error message storage (no global mutable state). */
#include "sl_internal.h"

#include <stdio.h>
#include <string.h>

#define SL_ERRMSG_MAX 512

static _Thread_local char tl_msg[SL_ERRMSG_MAX];

const char *sl_strerror(int status)
{
    switch (status) {
    case SL_OK: return "success";
    case SL_EINVAL: return "invalid argument";
    case SL_ENOMEM: return "out of memory";
    case SL_EIO: return "I/O error";
    case SL_ENOENT: return "not found";
    case SL_ENOSYS: return "not available on this system";
    case SL_ERANGE: return "value out of range";
    case SL_EBUSY: return "no free slot";
    case SL_ECANCELED: return "cancelled";
    case SL_EFORMAT: return "malformed file";
    case SL_EVERSION: return "unsupported file version";
    case SL_ETYPE: return "wrong value type";
    case SL_EUNSUPPORTED: return "unsupported";
    case SL_ESHAPE: return "tensor shape mismatch";
    case SL_ETRUNC: return "file truncated";
    case SL_ECTX: return "context full";
    default: return status < 0 ? strerror(-status) : "unknown status";
    }
}

const char *sl_last_error(void) { return tl_msg; }

int sl_err_vset(int status, const char *fmt, va_list ap)
{
    vsnprintf(tl_msg, sizeof tl_msg, fmt, ap);
    return status;
}

int sl_err_set(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sl_err_vset(status, fmt, ap);
    va_end(ap);
    return status;
}

void sl_err_clear(void) { tl_msg[0] = '\0'; }
