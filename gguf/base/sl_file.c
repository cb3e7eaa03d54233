/* Safe data files (sl_file.h). */
#include "sl_file.h"
#include "sl_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* An unguessable suffix: a name another user cannot pre-plant in bulk. */
static uint64_t tmp_nonce(void)
{
    uint64_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r) return r;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec ^ (uint64_t)getpid() << 32;
}

int sl_file_out_open(sl_file_out *o, const char *path, const char *what)
{
    *o = (sl_file_out){ .fd = -1, .what = what };
    if (!path) return sl_err_set(SL_EINVAL, "%s: path is NULL", what);
    size_t cap = strlen(path) + 48;
    o->path = strdup(path);
    char *tmp = malloc(cap);
    if (!o->path || !tmp) {   /* o->tmp stays NULL: abort unlinks only a name it has created */
        free(tmp);
        sl_file_out_abort(o);
        return sl_err_set(SL_ENOMEM, "%s %s: out of memory", what, path);
    }
    o->tmp = tmp;
    /* O_EXCL|O_NOFOLLOW: an existing name, a link above all, is never reused;
     * a collision just draws another name */
    int err = EEXIST;
    for (int tries = 0; tries < 16 && o->fd < 0 && err == EEXIST; tries++) {
        snprintf(o->tmp, cap, "%s.tmp.%ld.%016llx", path, (long)getpid(), (unsigned long long)tmp_nonce());
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (o->fd < 0) err = errno;
    }
    if (o->fd < 0) {
        int st = sl_err_set(err == ENOENT ? SL_ENOENT : SL_EIO, "%s %s: cannot create a temporary beside it: %s",
                            what, path, strerror(err));
        free(o->tmp);
        o->tmp = NULL;   /* nothing of ours to remove */
        sl_file_out_abort(o);
        return st;
    }
    return 0;
}

int sl_file_out_write(sl_file_out *o, const void *buf, size_t n)
{
    const uint8_t *b = buf;
    while (n) {
        ssize_t r = write(o->fd, b, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return sl_err_set(SL_EIO, "%s %s: writing %s: %s", o->what, o->path, o->tmp,
                              strerror(r < 0 ? errno : EIO));
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

FILE *sl_file_out_stream(sl_file_out *o)
{
    int fd = fcntl(o->fd, F_DUPFD_CLOEXEC, 0);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
    if (!f) {
        sl_err_set(SL_EIO, "%s %s: cannot open a stream on %s: %s", o->what, o->path, o->tmp, strerror(errno));
        if (fd >= 0) close(fd);
    }
    return f;
}

int sl_file_out_close_stream(sl_file_out *o, FILE *f)
{
    int bad = ferror(f);
    if (fclose(f) || bad) {
        int st = sl_err_set(SL_EIO, "%s %s: writing %s: %s; the previous file is unchanged", o->what, o->path,
                            o->tmp, strerror(errno ? errno : EIO));
        sl_file_out_abort(o);
        return st;
    }
    return sl_file_out_commit(o);
}

/* The rename is durable only once the directory is; some file systems refuse
 * fsync on a directory, which changes nothing about the data. */
static void sync_dir(const char *path)
{
    char *dir = strdup(path);
    if (!dir) return;
    char *slash = strrchr(dir, '/');
    const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
    int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) { (void)fsync(dfd); close(dfd); }
    free(dir);
}

int sl_file_out_commit(sl_file_out *o)
{
    const char *step = "fsync";
    int err = fsync(o->fd) ? errno : 0;
    if (!err) { step = "close"; err = close(o->fd) ? errno : 0; o->fd = -1; }
    if (!err) { step = "rename"; err = rename(o->tmp, o->path) ? errno : 0; }
    if (err) {
        int st = sl_err_set(SL_EIO, "%s %s: %s of %s: %s; the previous file is unchanged", o->what, o->path,
                            step, o->tmp, strerror(err));
        sl_file_out_abort(o);
        return st;
    }
    sync_dir(o->path);
    free(o->tmp);
    o->tmp = NULL;
    sl_file_out_abort(o);
    return 0;
}

void sl_file_out_abort(sl_file_out *o)
{
    if (o->fd >= 0) close(o->fd);
    o->fd = -1;
    if (o->tmp) unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
}

int sl_file_open_data(const char *path, const char *what, int *fd)
{
    *fd = -1;
    if (!path) return sl_err_set(SL_EINVAL, "%s: path is NULL", what);
    /* O_NONBLOCK: opening a FIFO nobody writes would otherwise wait for ever */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (f < 0)
        return sl_err_set(errno == ENOENT ? SL_ENOENT : SL_EIO, "%s %s: %s", what, path, strerror(errno));
    struct stat sb;
    int st = 0;
    if (fstat(f, &sb))
        st = sl_err_set(SL_EIO, "%s %s: %s", what, path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = sl_err_set(SL_EINVAL, "%s %s: not a regular file (%s)", what, path,
                        S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISDIR(sb.st_mode) ? "a directory"
                        : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device" : "a socket or other");
    else if (fcntl(f, F_SETFL, fcntl(f, F_GETFL) & ~O_NONBLOCK))
        st = sl_err_set(SL_EIO, "%s %s: %s", what, path, strerror(errno));
    if (st) { close(f); return st; }
    *fd = f;
    return 0;
}

int sl_file_read_data(const char *path, const char *what, size_t max, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    int fd, st = sl_file_open_data(path, what, &fd);
    if (st) return st;
    size_t cap = max < 65536 ? max + 1 : 65536, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) { st = sl_err_set(SL_ENOMEM, "%s %s: out of memory", what, path); break; }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { st = sl_err_set(SL_EIO, "%s %s: %s", what, path, strerror(errno)); break; }
        n += (size_t)r;
        if (n > max) { st = sl_err_set(SL_ERANGE, "%s %s: larger than %zu bytes", what, path, max); break; }
        if (r == 0) break;
        if (n == cap) {   /* grow up to max + 1: one byte past max tells a larger file */
            cap = cap > max / 2 ? max + 1 : cap * 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    close(fd);
    if (st) { free(buf); return st; }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return 0;
}
