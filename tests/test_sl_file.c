/* The ground floor's data files (gguf/base/sl_file.c): reads accept only
 * regular files, at once; writes never go through a planted name and leave
 * the previous file on failure (the prompt cache and GGUF writer tests show
 * that through their users). */
#include "sl_test.h"
#include "../gguf/base/sl_file.h"

#include <fcntl.h>
#include <stdio.h>
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
