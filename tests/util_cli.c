/* Running the `sluice` command from a test. */
#include "util_cli.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int sl_test_sluice(const char *args, char *out, size_t out_len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || out_len < 1) return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return -1;
    *slash = 0;   /* .../build/tests */
    char cmd[PATH_MAX + 4096];
    snprintf(cmd, sizeof cmd, "%s/../sluice %s 2>&1", exe, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t got = fread(out, 1, out_len - 1, p);
    out[got] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
