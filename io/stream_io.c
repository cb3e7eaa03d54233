/* The I/O backends' table: names (flags, reports, bindings) and rows, and the
 * loader's creation with the backend the config asks for. */
#include "stream_io.h"
#include "stream_names.h"
#include "../gguf/base/sl_internal.h"

#include <stdio.h>

/* indexed by enum sl_stream_io; AUTO has no backend of its own */
static const sl_named backends[SL_IO_COUNT] = {
    [SL_IO_AUTO] = { "auto", NULL },
    [SL_IO_URING] = { "uring", &sl_io_uring_backend },
    [SL_IO_PREAD] = { "pread", &sl_io_pread_backend },
};

int sl_io_auto(void) { return sl_uring_probe() == 0 ? SL_IO_URING : SL_IO_PREAD; }

const char *sl_stream_io_name(int io) { return sl_named_name(backends, SL_IO_COUNT, io); }
int sl_stream_io_parse(const char *s, int *io) { return sl_named_parse(backends, SL_IO_COUNT, s, io); }

int sl_loader_create(sl_loader **out, const sl_loader_cfg *cfg, char *notice, size_t notice_len)
{
    *out = NULL;
    if (cfg->io < 0 || cfg->io >= SL_IO_COUNT)
        return sl_err_set(SL_EINVAL, "streamer: bad io backend %d", cfg->io);
    sl_loader *L;
    int rc = sl_loader_new(&L, cfg);
    if (rc) return rc;
    if (cfg->io != SL_IO_AUTO) {
        rc = sl_loader_start(L, backends[cfg->io].row, cfg->io);
        if (rc) { sl_loader_destroy(L); return rc; }
        *out = L;
        return 0;
    }
    rc = sl_loader_start(L, &sl_io_uring_backend, SL_IO_URING);
    if (rc && notice && notice_len)
        snprintf(notice, notice_len, "io_uring unavailable (%s); using the pread pool", sl_last_error());
    if (rc && (rc = sl_loader_start(L, &sl_io_pread_backend, SL_IO_PREAD)) != 0) {
        sl_loader_destroy(L);
        return rc;
    }
    *out = L;
    return 0;
}
