/* `mpirun -np N sluice ring-profile [-o cluster.json] [--profile FILE] [--mem-budget SIZE]`:
 * every rank reads its own device profile (`sluice profile`'s JSON) and budget, the
 * link is measured with MPI ping-pong over every hop of the ring (one hop at a
 * time), and rank 0 writes the cluster.json `sluice plan --ring` reads. A rank that
 * cannot read its profile ends the run on every rank with its message; a watchdog
 * ends a rank that waits longer than --timeout (a rank that died or hangs), so
 * nothing waits forever. Built only where Open MPI is (Makefile ring block). */
#include "ring_plan.h"
#include "../cli.h"
#include "../../gguf/sl_status.h"
#include "../../io/stream_internal.h"   /* sl_mem_available: the planner's default budget */

#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MSG_LEN 512
#define LAT_ITERS 50
#define BW_BYTES (1u << 20)
#define BW_ITERS 4

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

/* Round trips between a and b: half the mean time of small messages (n_embd floats of a
 * large model: 32 KiB) and the bandwidth of 1 MiB ones. Only a and b take part. */
static void hop_measure(int a, int b, char *buf, double *lat, double *bps)
{
    int me = g_rank, peer = me == a ? b : a;
    const int small = 32 << 10;
    MPI_Status st;
    for (int pass = 0; pass < 2; pass++) {
        int len = pass ? (int)BW_BYTES : small, iters = pass ? BW_ITERS : LAT_ITERS;
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (me == a) {
                MPI_Send(buf, len, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
                MPI_Recv(buf, len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &st);
            } else {
                MPI_Recv(buf, len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &st);
                MPI_Send(buf, len, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
            }
        }
        double dt = (MPI_Wtime() - t0) / iters / 2;   /* one way */
        if (pass == 0) *lat = dt;
        else *bps = dt > 0 ? len / dt : 0;
    }
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

    /* this rank's device */
    sl_ring_device d;
    memset(&d, 0, sizeof d);
    char host[40] = "";
    gethostname(host, sizeof host - 1);
    snprintf(d.name, sizeof d.name, "%s:%d", host, g_rank);
    char path[4096], msg[MSG_LEN] = "";
    if (prof) snprintf(path, sizeof path, "%s", prof);
    else snprintf(path, sizeof path, "%s/.cache/sluice/profile.json", getenv("HOME") ? getenv("HOME") : ".");
    if (sl_ring_device_read_profile(&d, path))
        snprintf(msg, sizeof msg, "rank %d (%s): %s (run `sluice profile` there first)", g_rank, host, sl_last_error());
    if (budget) d.budget = (double)budget;
    else {
        uint64_t avail = sl_mem_available(), margin = avail / 10 < (256ull << 20) ? 256ull << 20 : avail / 10;
        d.budget = avail > margin ? (double)(avail - margin) : 0;
    }

    /* every rank learns whether all could: one failure ends all, with each message on rank 0 */
    snprintf(g_wait_what, sizeof g_wait_what, "the other ranks' profiles");
    int bad = msg[0] != 0, any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    static char msgs[SL_RING_MAX_DEV][MSG_LEN];
    static sl_ring_cluster c;
    MPI_Gather(msg, MSG_LEN, MPI_CHAR, msgs, MSG_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (any_bad) {
        if (!g_rank)
            for (int r = 0; r < n; r++)
                if (msgs[r][0]) fprintf(stderr, "ring-profile: %s\n", msgs[r]);
        if (!g_rank) fprintf(stderr, "ring-profile: not every rank has a profile; nothing written\n");
        MPI_Finalize();
        return 1;
    }
    MPI_Gather(&d, (int)sizeof d, MPI_BYTE, c.dev, (int)sizeof d, MPI_BYTE, 0, MPI_COMM_WORLD);

    /* the link, one hop at a time so hops do not share the wire while measured */
    snprintf(g_wait_what, sizeof g_wait_what, "a link measurement");
    char *buf = calloc(1, BW_BYTES);
    double worst_lat = 0, worst_bps = 0;
    int ok = buf != NULL, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (!g_rank) fprintf(stderr, "ring-profile: out of memory for the link measurement\n");
        free(buf);
        MPI_Finalize();
        return 1;
    }
    int hops = n == 1 ? 0 : n == 2 ? 1 : n;   /* with two ranks both hops are the same wire */
    for (int h = 0; h < hops; h++) {
        int a = h, b = (h + 1) % n;
        double lat = 0, bps = 0;
        if (g_rank == a || g_rank == b) hop_measure(a, b, buf, &lat, &bps);
        double res[2] = { lat, bps };
        if (g_rank == a && a != 0) MPI_Send(res, 2, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
        if (g_rank == 0 && a != 0) MPI_Recv(res, 2, MPI_DOUBLE, a, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (g_rank == 0) {
            printf("hop %d -> %d: latency %.1f us, %.2f GB/s\n", a, b, res[0] * 1e6, res[1] / 1e9);
            if (res[0] > worst_lat) worst_lat = res[0];
            if (worst_bps == 0 || res[1] < worst_bps) worst_bps = res[1];
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);

    int rc = 0;
    if (!g_rank) {
        c.n_dev = n;
        c.link_latency_s = worst_lat;
        c.link_bps = worst_bps;
        FILE *f = fopen(out, "w");
        char src[160];
        snprintf(src, sizeof src, "sluice ring-profile: %d ranks; link = the slowest hop", n);
        if (!f || sl_ring_cluster_write(f, &c, src)) {
            fprintf(stderr, "ring-profile: cannot write %s\n", out);
            rc = 1;
        }
        if (f && fclose(f)) rc = 1;
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
