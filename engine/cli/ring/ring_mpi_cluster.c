/* The cluster of the ranks of an MPI run (ring_mpi.h): every rank's device
 * profile and budget, and the link measured with MPI, gathered on rank 0.
 * Shared by `sluice ring-profile` and `sluice run --ring auto`. */
#include "ring_mpi.h"
#include "../../../gguf/base/sl_status.h"
#include "../../../gguf/base/sl_platform.h"   /* sl_mem_available: the default budget */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MSG_LEN 512
#define LAT_ITERS 50
#define BW_BYTES (1u << 20)
#define BW_ITERS 4

/* Round trips between a and b: half the mean time of small messages (n_embd floats of a
 * large model: 32 KiB) and the bandwidth of 1 MiB ones. Only a and b take part. */
static void hop_measure(int me, int a, int b, char *buf, double *lat, double *bps)
{
    int peer = me == a ? b : a;
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

int sl_ring_mpi_cluster(sl_ring_cluster *c, const char *prof, double budget, const char *who, char *wait_what,
                        size_t wait_cap, bool verbose)
{
    int g_rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    memset(c, 0, sizeof *c);
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
    snprintf(wait_what, wait_cap, "the other ranks' profiles");
    int bad = msg[0] != 0, any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    static char msgs[SL_RING_MAX_DEV][MSG_LEN];
    MPI_Gather(msg, MSG_LEN, MPI_CHAR, msgs, MSG_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (any_bad) {
        if (!g_rank)
            for (int r = 0; r < n; r++)
                if (msgs[r][0]) fprintf(stderr, "%s: %s\n", who, msgs[r]);
        if (!g_rank) fprintf(stderr, "%s: not every rank has a profile\n", who);
        return 1;
    }
    MPI_Gather(&d, (int)sizeof d, MPI_BYTE, c->dev, (int)sizeof d, MPI_BYTE, 0, MPI_COMM_WORLD);

    /* the link, one hop at a time so hops do not share the wire while measured */
    snprintf(wait_what, wait_cap, "a link measurement");
    char *buf = calloc(1, BW_BYTES);
    double worst_lat = 0, worst_bps = 0;
    int ok = buf != NULL, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (!g_rank) fprintf(stderr, "%s: out of memory for the link measurement\n", who);
        free(buf);
        return 1;
    }
    int hops = n == 1 ? 0 : n == 2 ? 1 : n;   /* with two ranks both hops are the same wire */
    for (int h = 0; h < hops; h++) {
        int a = h, b = (h + 1) % n;
        double lat = 0, bps = 0;
        if (g_rank == a || g_rank == b) hop_measure(g_rank, a, b, buf, &lat, &bps);
        double res[2] = { lat, bps };
        if (g_rank == a && a != 0) MPI_Send(res, 2, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
        if (g_rank == 0 && a != 0) MPI_Recv(res, 2, MPI_DOUBLE, a, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (g_rank == 0) {
            if (verbose) printf("hop %d -> %d: latency %.1f us, %.2f GB/s\n", a, b, res[0] * 1e6, res[1] / 1e9);
            if (res[0] > worst_lat) worst_lat = res[0];
            if (worst_bps == 0 || res[1] < worst_bps) worst_bps = res[1];
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);

    if (!g_rank) {
        c->n_dev = n;
        c->link_latency_s = worst_lat;
        c->link_bps = worst_bps;
    } else {
        c->dev[0] = d;
        c->n_dev = 1;
    }
    return 0;
}
