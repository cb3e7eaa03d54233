/* The ring's MPI parts under mpirun on loopback (tests/ring/ring_mpi.sh does the
 * launching): the profiles of 1..4 ranks collected into a cluster.json the planner
 * takes; a rank without a profile and a rank that is killed end the run on every
 * rank, with a message and without hanging. `sluice run --ring` on 1..4 ranks gives
 * the greedy tokens of a single process (llama, qwen3, qwen3moe; one and several
 * rounds; resident and streamed windows; ranks with different budgets); a rank
 * that aborts or hangs, or a rank without the model file, ends every rank.
 * Built only where Open MPI is. SL_HOST_ONLY */
#include "../sl_test.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef SL_BUILD_DIR
#define SL_BUILD_DIR "build"
#endif

static int driver_args(const char *c, int n, const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sh tests/ring/ring_mpi.sh %s %s %s %d %s 2>&1", SL_BUILD_DIR, SL_SHARED_DIR, c, n,
             args);
    int rc = system(cmd);
    return rc == -1 ? -1 : WEXITSTATUS(rc);
}

static int driver(const char *c, int n) { return driver_args(c, n, ""); }

/* The runtime's cases: rank 0's text after greedy decoding is the single process's.
 * Streamed windows: --max-pinned 0 (every layer of a window read per token) and
 * per-rank budgets. */
static const struct { const char *c; int n; const char *args; } run_cases[] = {
    { "same", 1, "synth-tiny-q4_k 1" },                         /* one rank, 2 rounds, no messages */
    { "same", 2, "synth-tiny-q4_k 1,1" },                       /* llama */
    { "same", 2, "synth2-qwen3-q4_k_m 1,1" },                   /* 2 rounds */
    { "same", 3, "synth2-qwen3-q4_k_m 2,1,1" },
    { "streams", 4, "synth2-qwen3-q4_k_m 1,1,1,1 --max-pinned 0 --ring-budgets 64M,40M,32M,48M" },
    { "same", 2, "synth2-qwen3moe-q4_k_m 2,2" },                /* MoE */
    { "streams", 2, "synth2-qwen3moe-q4_k_m 1,1 --max-pinned 0 --ring-budgets 48M,32M" },
    { "same", 2, "synth2-qwen3-q4_k_m auto --mem-budget 64M" },   /* profiles gathered, ILPs */
    /* every other golden model: architectures, quant types, layer counts */
    { "same", 2, "TinyStories-656K-Q8_0 1,1" },
    { "same", 1, "llama-2-tiny-random 1" },                     /* one layer */
    { "same", 2, "stories260K 3,2" },                           /* 5 layers, unequal windows */
    { "same", 2, "synth-tiny-q2_k 1,1" },
    { "same", 2, "synth-tiny-q4_0 1,1" },
    { "same", 2, "synth-tiny-q8_0 1,1" },
    { "same", 2, "synth-tiny-qwen2-q4_k 1,1" },
    { "same", 3, "synth2-gemma3-q4_k_m 1,1,1" },                /* sliding-window rings */
    { "streams", 2, "synth2-gemma3-q4_k_m 1,2 --max-pinned 0 --ring-budgets 48M,40M" },
    { "same", 2, "synth2-phi3-q4_k_m 1,1" },                    /* fused qkv, gate|up */
    { "streams", 2, "synth2-phi3-q4_k_m 1,1 --max-pinned 0 --ring-budgets 48M,40M" },
    { "same", 2, "synth2-mixtral-q4_k_m 1,1" },
    { "same", 2, "synth2-qwen2moe-q4_k_m 1,1" },                /* shared expert */
    { "same", 2, "iq/synth2-llama-iq2_xs 1,1" },
    { "same", 2, "iq/synth2-llama-iq4_xs 1,1" },
};

/* One test, the cases in turn: run as parallel tests, Criterion's own runner reports a
 * 48-byte leak of its own under ASan (libcriterion's allocation, not ours). */
Test(ring_mpi, loopback_cases, .timeout = 900)
{
    for (int n = 1; n <= 4; n++) cr_assert_eq(driver("collect", n), 0, "mpirun -np %d", n);
    cr_assert_eq(driver("missing", 2), 0, "a rank without a profile");
    cr_assert_eq(driver("dies", 2), 0, "a killed rank");
    for (size_t i = 0; i < sizeof run_cases / sizeof run_cases[0]; i++)
        cr_expect_eq(driver_args(run_cases[i].c, run_cases[i].n, run_cases[i].args), 0, "run --ring: %s -np %d %s",
                     run_cases[i].c, run_cases[i].n, run_cases[i].args);
    cr_expect_eq(driver("rankdies", 4), 0, "run --ring: rank 2 of 4 aborts");
    cr_expect_eq(driver("rankhangs", 2), 0, "run --ring: rank 1 of 2 hangs");
    cr_expect_eq(driver("nomodel", 2), 0, "run --ring: rank 1 has no model file");
}
