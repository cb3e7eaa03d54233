/* What the MPI commands of the ring share (ring_mpi_cluster.c). Included only
 * by engine/cli/ring/ring_mpi_*.c, which the Makefile builds where Open MPI is. */
#ifndef SL_RING_MPI_H
#define SL_RING_MPI_H

#include <stdbool.h>
#include <stddef.h>

#include "ring_plan.h"

/* Collective over MPI_COMM_WORLD: each rank reads its device profile (prof, or
 * ~/.cache/sluice/profile.json) and takes budget (> 0) or MemAvailable minus a
 * margin; rank 0 gets every device in c (rank order) and the link: the
 * slowest hop's latency and bandwidth, each hop measured with MPI ping-pong
 * alone. Other ranks' c: their own device only. wait_what names what a rank
 * waits for (the callers' watchdog message). verbose: rank 0 prints each hop.
 * 0 on every rank, or 1 on every rank after rank 0 printed each failing
 * rank's message (prefix "who: "). */
int sl_ring_mpi_cluster(sl_ring_cluster *c, const char *prof, double budget, const char *who, char *wait_what,
                        size_t wait_cap, bool verbose);

#endif
