/* The ground floor's data files (gguf/base/sl_file.c): reads accept only
 * regular files, at once; writes never go through a planted name and leave
 * the previous file on failure (the prompt cache and GGUF writer tests show
 * that through their users). */
#include "sl_test.h"
#include "../engine/sluice.h"
#include "../gguf/base/sl_file.h"
#include "../gguf/gguf.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Hardening finding 4: a FIFO, a directory or a device is refused by name. */
Test(sl_file, open_data_refuses_non_regular)
{
    char fifo[96], reg[96];
    snprintf(fifo, sizeof fifo, "/tmp/sl_test_file_fifo_%d", (int)getpid());
    snprintf(reg, sizeof reg, "/tmp/sl_test_file_reg_%d", (int)getpid());
    unlink(fifo);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    const char *bad[] = { fifo, "/tmp", "/dev/null" };
    const char *kind[] = { "a FIFO", "a directory", "a device" };
    alarm(10);   /* a blocking open would hang here */
    for (int i = 0; i < 3; i++) {
        int fd = 7;
        cr_assert_eq(sl_file_open_data(bad[i], "data", &fd), SL_EINVAL, "%s", bad[i]);
        cr_assert_eq(fd, -1);
        cr_assert_not_null(strstr(sl_last_error(), bad[i]), "%s", sl_last_error());
        cr_assert_not_null(strstr(sl_last_error(), kind[i]), "%s", sl_last_error());
    }
    alarm(0);
    int fd;
    unlink(fifo);
    cr_assert_eq(sl_file_open_data(fifo, "data", &fd), SL_ENOENT);
    /* a regular file opens in blocking mode */
    sl_file_out o;
    cr_assert_eq(sl_file_out_open(&o, reg, "data"), 0, "%s", sl_last_error());
    cr_assert_eq(sl_file_out_write(&o, "abc", 3), 0);
    cr_assert_eq(sl_file_out_commit(&o), 0, "%s", sl_last_error());
    cr_assert_eq(sl_file_open_data(reg, "data", &fd), 0, "%s", sl_last_error());
    cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    char b[4];
    cr_assert_eq(read(fd, b, 4), 3);
    cr_assert_eq(memcmp(b, "abc", 3), 0);
    close(fd);
    unlink(reg);
}

/* A FIFO named as the model (sluice run -m FIFO) is refused at once, with a
 * message, by the GGUF reader and by the model open (streamer) alike. */
Test(sl_file, model_fifo_refused_not_hanging)
{
    char fifo[96];
    snprintf(fifo, sizeof fifo, "/tmp/sl_test_model_fifo_%d", (int)getpid());
    unlink(fifo);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    alarm(10);   /* a blocking open waits for a writer for ever */
    sl_gguf *g = NULL;
    cr_assert_eq(sl_gguf_open_path(&g, fifo), SL_EINVAL);
    cr_assert_not_null(strstr(sl_last_error(), "not a regular file"), "%s", sl_last_error());
    sl_model_params mp;
    sl_model_params_init(&mp);
    sl_model *m = NULL;
    cr_assert_neq(sl_model_open(&m, fifo, &mp), 0);
    cr_assert_null(m);
    cr_assert_not_null(strstr(sl_last_error(), "not a regular file"), "%s", sl_last_error());
    alarm(0);
    unlink(fifo);
}

/* Whole data files (tokenize -f, the ring's cluster file, the plan's device
 * profile): the contents NUL-terminated, a size cap, a FIFO refused at once. */
Test(sl_file, read_data_whole_capped_regular_only)
{
    char reg[96], fifo[96];
    snprintf(reg, sizeof reg, "/tmp/sl_test_read_data_%d", (int)getpid());
    snprintf(fifo, sizeof fifo, "/tmp/sl_test_read_fifo_%d", (int)getpid());
    sl_file_out o;
    static char big[200000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 26);
    cr_assert_eq(sl_file_out_open(&o, reg, "data"), 0);
    cr_assert_eq(sl_file_out_write(&o, big, sizeof big), 0);
    cr_assert_eq(sl_file_out_commit(&o), 0);
    char *t;
    size_t n;
    cr_assert_eq(sl_file_read_data(reg, "data", sizeof big, &t, &n), 0, "%s", sl_last_error());
    cr_assert_eq(n, sizeof big);
    cr_assert(memcmp(t, big, n) == 0 && t[n] == 0);
    free(t);
    cr_assert_eq(sl_file_read_data(reg, "data", sizeof big - 1, &t, &n), SL_ERANGE);
    cr_assert_null(t);
    cr_assert_not_null(strstr(sl_last_error(), "larger than"), "%s", sl_last_error());
    unlink(fifo);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    alarm(10);
    cr_assert_eq(sl_file_read_data(fifo, "text file", 100, &t, &n), SL_EINVAL);
    alarm(0);
    cr_assert_not_null(strstr(sl_last_error(), "a FIFO"), "%s", sl_last_error());
    unlink(fifo);
    unlink(reg);
}
