/* Entry points of the ring into the `sluice` command (engine/cli/cli_plan.c,
 * engine/cli/cli_run.c call them when the binary is built with the ring). */
#ifndef SL_RING_CLI_H
#define SL_RING_CLI_H

/* `sluice plan --ring CLUSTER.json ...`: argv as cmd_plan got it. */
int sl_ring_plan_main(int argc, char **argv);

/* `mpirun -np N sluice run --ring SPEC ...` (ring_mpi_run.c): argv as run_main got it. */
int sl_ring_run_main(int argc, char **argv);

#endif
