/* The ring's MPI parts under mpirun on loopback (tests/ring/ring_mpi.sh does the
 * launching): the profiles of 1..4 ranks collected into a cluster.json the planner
 * takes; a rank without a profile and a rank that is killed end the run on every
 * rank, with a message and without hanging. Built only where Open MPI is. SL_HOST_ONLY */
#include "../sl_test.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef SL_BUILD_DIR
#define SL_BUILD_DIR "build"
#endif

static int driver(const char *c, int n)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sh tests/ring/ring_mpi.sh %s %s %s %d 2>&1", SL_BUILD_DIR, SL_SHARED_DIR, c, n);
    int rc = system(cmd);
    return rc == -1 ? -1 : WEXITSTATUS(rc);
}

/* One test, the cases in turn: run as parallel tests, Criterion's own runner reports a
 * 48-byte leak of its own under ASan (libcriterion's allocation, not ours). */
Test(ring_mpi, loopback_cases, .timeout = 600)
{
    for (int n = 1; n <= 4; n++) cr_assert_eq(driver("collect", n), 0, "mpirun -np %d", n);
    cr_assert_eq(driver("missing", 2), 0, "a rank without a profile");
    cr_assert_eq(driver("dies", 2), 0, "a killed rank");
}
