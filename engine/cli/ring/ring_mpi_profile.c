/* `mpirun -np N sluice ring-profile [-o cluster.json] [--profile FILE] [--mem-budget SIZE]`:
 * every rank reads its own device profile (`sluice profile`'s JSON) and budget, the
 * link is measured with MPI ping-pong over every hop of the ring (one hop at a
 * time), and rank 0 writes the cluster.json `sluice plan --ring` reads. A rank that
 * cannot read its profile ends the run on every rank with its message; a watchdog
 * ends a rank that waits longer than --timeout (a rank that died or hangs), so
 * nothing waits forever. Built only where Open MPI is (Makefile ring block). */
#include "ring_plan.h"
#include "ring_mpi.h"
#include "../cli.h"
#include "../../../gguf/base/sl_file.h"
#include "../../../gguf/base/sl_status.h"

#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static int g_rank;
static char g_wait_what[64] = "start-up";

static void on_alarm(int sig)
{
    (void)sig;
    char buf[160];
    int n = snprintf(buf, sizeof buf, "ring-profile: rank %d: timed out waiting for %s; ending the run\n", g_rank,
                     g_wait_what);
    if (n > 0) { ssize_t w = write(2, buf, (size_t)n); (void)w; }
    _exit(3);   /* mpirun sees a rank end without MPI_Finalize and ends the others */
}

static void usage(FILE *f)
{
    fputs("usage: mpirun -np N sluice ring-profile [-o CLUSTER.json] [--profile FILE] [--mem-budget SIZE]\n"
          "                                      [--timeout S]\n"
          "Each rank reads its device profile (default ~/.cache/sluice/profile.json, written by\n"
          "`sluice profile`) and its budget (default MemAvailable minus a margin); the link's latency\n"
          "and bandwidth are measured with MPI over each hop of the ring. Rank 0 writes CLUSTER.json\n"
          "(default cluster.json) for `sluice plan --ring CLUSTER.json -m MODEL`.\n"
          "--timeout S: a rank waiting longer (a peer died or hangs) ends the run (default 120).\n", f);
}

static int ring_profile_main(int argc, char **argv)
{
    const char *out = "cluster.json", *prof = NULL;
    unsigned long long budget = 0;
    long long timeout = 120;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (i + 1 >= argc) { fprintf(stderr, "ring-profile: %s needs a value\n", a); usage(stderr); return 2; }
        const char *v = argv[++i];
        if (!strcmp(a, "-o")) out = v;
        else if (!strcmp(a, "--profile")) prof = v;
        else if (!strcmp(a, "--mem-budget")) {
            if (sl_cli_parse_size(v, &budget) || !budget) { fprintf(stderr, "ring-profile: bad size '%s'\n", v); return 2; }
        } else if (!strcmp(a, "--timeout")) {
            char *e;
            timeout = strtoll(v, &e, 10);
            if (*e || timeout < 1 || timeout > 86400) { fprintf(stderr, "ring-profile: bad --timeout '%s'\n", v); return 2; }
        } else { fprintf(stderr, "ring-profile: unknown option '%s'\n", a); usage(stderr); return 2; }
    }
    signal(SIGALRM, on_alarm);
    alarm((unsigned)timeout);
    MPI_Init(&argc, &argv);
    int n;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n > SL_RING_MAX_DEV) {
        if (!g_rank) fprintf(stderr, "ring-profile: %d ranks; the ring plans at most %d devices\n", n, SL_RING_MAX_DEV);
        MPI_Finalize();
        return 1;
    }

    static sl_ring_cluster c;
    if (sl_ring_mpi_cluster(&c, prof, (double)budget, "ring-profile", g_wait_what, sizeof g_wait_what, true)) {
        if (!g_rank) fprintf(stderr, "ring-profile: nothing written\n");
        MPI_Finalize();
        return 1;
    }
    int rc = 0;
    if (!g_rank) {
        sl_file_out fo;
        FILE *f = sl_file_out_open(&fo, out, "cluster file") ? NULL : sl_file_out_stream(&fo);
        char src[160];
        snprintf(src, sizeof src, "sluice ring-profile: %d ranks; link = the slowest hop", n);
        if (!f) {
            sl_file_out_abort(&fo);
            rc = 1;
        } else {
            int wr = sl_ring_cluster_write(f, &c, src);
            if (wr) { fclose(f); sl_file_out_abort(&fo); rc = 1; }
            else if (sl_file_out_close_stream(&fo, f)) rc = 1;
        }
        if (rc) fprintf(stderr, "ring-profile: cannot write %s: %s\n", out, sl_last_error());
        for (int r = 0; r < n && !rc; r++)
            printf("rank %d: %s, budget %.2f GB, disk %.2f GB/s, memory %.2f GB/s\n", r, c.dev[r].name,
                   c.dev[r].budget / 1e9, c.dev[r].disk_bps / 1e9, c.dev[r].mem_bps / 1e9);
        if (!rc) printf("cluster saved to %s (plan it: sluice plan --ring %s -m MODEL)\n", out, out);
    }
    snprintf(g_wait_what, sizeof g_wait_what, "the end of the run");
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    alarm(0);
    return rc;
}

SL_CLI_COMMAND(sl_cmd_ring_profile, "ring-profile",
               "under mpirun: collect every rank's device profile and measure the links -> cluster.json",
               ring_profile_main)
