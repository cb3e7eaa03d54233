/* balloon: make this machine look like a device with less free memory, without
 * cgroups. Holds touched anonymous memory until MemAvailable (/proc/meminfo)
 * drops to a target, then either runs a command while holding it or holds
 * until killed. A safety valve re-reads MemAvailable periodically and gives
 * memory back whenever it falls below a floor, so the machine never runs out
 * of memory because of the balloon (the program under test may still be
 * squeezed: that is the point). Standalone tool (build/balloon); `sluice bench
 * --free` starts it as a separate process. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../engine/cli/cli.h"
#include "perf.h"

#define MiB (1024ull * 1024)
#define GiB (1024ull * MiB)
#define MAX_CHUNKS 65536

typedef struct {
    void *ptr[MAX_CHUNKS];
    uint64_t len[MAX_CHUNKS];
    int n;
    uint64_t held;
} balloon;

static volatile sig_atomic_t g_stop;
static volatile sig_atomic_t g_child_pid;

static void on_signal(int sig)
{
    g_stop = sig;
    if (g_child_pid > 0) kill((pid_t)g_child_pid, sig);
}

static int parse_size(const char *s, uint64_t *out)
{
    unsigned long long v;
    if (sl_cli_parse_size(s, &v)) return -1;
    *out = v;
    return 0;
}

static double gib(uint64_t b) { return (double)b / (double)GiB; }

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) && errno == EINTR && !g_stop) {}
}

/* One chunk: mapped, huge pages requested (faster to fault), every 4 KiB page
 * written so it is real, private memory (a read would map the zero page). */
static int grow(balloon *b, uint64_t len, int lock)
{
    if (b->n >= MAX_CHUNKS) return -1;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE);
#endif
    for (uint64_t o = 0; o < len; o += 4096) ((volatile unsigned char *)p)[o] = (unsigned char)(o >> 12 | 1);
    if (lock) mlock(p, len);   /* best effort: keeps it out of swap where there is swap */
    b->ptr[b->n] = p;
    b->len[b->n] = len;
    b->n++;
    b->held += len;
    return 0;
}

static void shrink(balloon *b)
{
    if (!b->n) return;
    b->n--;
    munmap(b->ptr[b->n], b->len[b->n]);
    b->held -= b->len[b->n];
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: balloon (--leave SIZE | --hold SIZE) [options] [-- CMD [ARGS...]]\n"
        "Holds anonymous memory so that MemAvailable drops to SIZE (--leave) or by SIZE\n"
        "(--hold), then runs CMD while holding it (exit status = CMD's) or, without CMD,\n"
        "holds until SIGINT/SIGTERM. No cgroups, no cache dropping.\n"
        "  --leave SIZE      target MemAvailable, e.g. 2.5G, 800M\n"
        "  --hold SIZE       hold this much instead\n"
        "  --floor SIZE      safety valve: release memory whenever MemAvailable < SIZE\n"
        "                    (default: max(256M, 2%% of MemTotal), never above the target)\n"
        "  --track           also re-grow when MemAvailable rises above target + 5%%\n"
        "                    (default: reach the target once, then only the valve acts)\n"
        "  --interval MS     re-check period (default 100)\n"
        "  --chunk SIZE      allocation granule (default 64M)\n"
        "  --mlock           lock held memory (best effort)\n"
        "  --ready-fd N      write \"ready <held_bytes> <avail_bytes>\\n\" to fd N when the\n"
        "                    target is reached, then close it\n"
        "  -q                quiet\n");
}

int main(int argc, char **argv)
{
    uint64_t leave = 0, hold = 0, floor_b = 0, chunk = 64 * MiB;
    int have_leave = 0, have_hold = 0, have_floor = 0, track = 0, lock = 0, quiet = 0;
    int ready_fd = -1;
    long interval = 100;
    char **cmd = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) { if (i + 1 < argc) cmd = argv + i + 1; break; }
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--track")) track = 1;
        else if (!strcmp(a, "--mlock")) lock = 1;
        else if (!strcmp(a, "-q")) quiet = 1;
        else if (v && !strcmp(a, "--leave")) { if (parse_size(v, &leave)) goto bad; have_leave = 1; i++; }
        else if (v && !strcmp(a, "--hold")) { if (parse_size(v, &hold)) goto bad; have_hold = 1; i++; }
        else if (v && !strcmp(a, "--floor")) { if (parse_size(v, &floor_b)) goto bad; have_floor = 1; i++; }
        else if (v && !strcmp(a, "--chunk")) { if (parse_size(v, &chunk) || chunk < 4096) goto bad; i++; }
        else if (v && !strcmp(a, "--interval")) { interval = atol(v); if (interval < 1) goto bad; i++; }
        else if (v && !strcmp(a, "--ready-fd")) { ready_fd = atoi(v); if (ready_fd < 0) goto bad; i++; }
        else { fprintf(stderr, "balloon: bad argument '%s'\n", a); usage(stderr); return 2; }
        continue;
    bad:
        fprintf(stderr, "balloon: bad value for %s: '%s'\n", a, v);
        return 2;
    }
    if (have_leave == have_hold) { usage(stderr); return 2; }
    chunk = (chunk + 2 * MiB - 1) & ~(2 * MiB - 1);

    uint64_t avail, total;
    if (perf_meminfo(&avail, &total)) { fprintf(stderr, "balloon: cannot read /proc/meminfo\n"); return 1; }
    if (!have_floor) {
        floor_b = total / 50;
        if (floor_b < 256 * MiB) floor_b = 256 * MiB;
    }
    uint64_t target = have_leave ? leave : (hold < avail ? avail - hold : 0);
    if (target < floor_b) {
        if (have_floor) {
            fprintf(stderr, "balloon: target MemAvailable %.2f GiB is below the floor %.2f GiB\n",
                    gib(target), gib(floor_b));
            return 2;
        }
        floor_b = target;   /* default floor never above the target */
        if (floor_b < 64 * MiB) {
            fprintf(stderr, "balloon: target %.2f GiB leaves too little memory\n", gib(target));
            return 2;
        }
    }

    static balloon b;   /* large: keep it off the stack */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    /* Fill: never allocate more than the gap, so the target is not overshot. */
    while (!g_stop) {
        if (perf_meminfo(&avail, &total)) break;
        if (avail <= target + 2 * MiB) break;
        uint64_t gap = avail - target;
        uint64_t len = gap < chunk ? (gap & ~(2 * MiB - 1)) : chunk;
        if (len < 2 * MiB) break;
        if (grow(&b, len, lock)) {
            fprintf(stderr, "balloon: mmap of %.0f MiB failed (%s); holding %.2f GiB\n",
                    (double)len / MiB, strerror(errno), gib(b.held));
            break;
        }
    }
    if (g_stop) { while (b.n) shrink(&b); return 128 + (int)g_stop; }
    perf_meminfo(&avail, &total);
    if (!quiet)
        fprintf(stderr, "balloon: holding %.2f GiB; MemAvailable %.2f GiB (target %.2f, floor %.2f)\n",
                gib(b.held), gib(avail), gib(target), gib(floor_b));
    if (avail > target + target / 20 + 64 * MiB && !quiet)
        fprintf(stderr, "balloon: note: could not reach the target\n");
    if (ready_fd >= 0) {
        char msg[96];
        int n = snprintf(msg, sizeof msg, "ready %llu %llu\n", (unsigned long long)b.held,
                         (unsigned long long)avail);
        if (write(ready_fd, msg, (size_t)n) < 0) {}
        close(ready_fd);
    }

    pid_t child = -1;
    if (cmd) {
        child = fork();
        if (child < 0) { perror("balloon: fork"); while (b.n) shrink(&b); return 1; }
        if (child == 0) {
            execvp(cmd[0], cmd);
            fprintf(stderr, "balloon: cannot run %s: %s\n", cmd[0], strerror(errno));
            _exit(127);
        }
        g_child_pid = child;
    }

    int status = 0, rc = 0;
    uint64_t released = 0;
    while (!g_stop) {
        if (child > 0) {
            pid_t r = waitpid(child, &status, WNOHANG);
            if (r == child) {
                rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                child = -1;
                break;
            }
        }
        if (perf_meminfo(&avail, &total) == 0) {
            /* Safety valve: give back chunks until above the floor again. */
            while (avail < floor_b && b.n) {
                uint64_t l = b.len[b.n - 1];
                shrink(&b);
                released += l;
                avail += l;
            }
            if (released && !quiet) {
                fprintf(stderr, "balloon: MemAvailable below floor %.2f GiB: released %.0f MiB (holding %.2f GiB)\n",
                        gib(floor_b), (double)released / MiB, gib(b.held));
                released = 0;
            }
            if (track && avail > target + target / 20 + chunk) {
                uint64_t len = avail - target;
                if (len > chunk) len = chunk;
                len &= ~(2 * MiB - 1);
                if (len) grow(&b, len, lock);
            }
        }
        sleep_ms(interval);
    }
    if (child > 0) {   /* stopped by a signal: the handler forwarded it */
        waitpid(child, &status, 0);
        rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    } else if (!cmd) {
        rc = 0;
    }
    while (b.n) shrink(&b);
    return rc;
}
