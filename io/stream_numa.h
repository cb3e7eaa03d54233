/* NUMA placement of the big buffers (pinned units, slots, the resident copy;
 * the engine's KV cache): on the node the compute threads run on, or
 * interleaved over all nodes (llama.cpp's --numa distribute); nothing on a
 * machine with one node. The decision is pure (a topology in, a placement out)
 * so it is tested with injected topologies; applying it is libnuma's mbind. */
#ifndef SL_STREAM_NUMA_H
#define SL_STREAM_NUMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_NUMA_MAX_NODES 64
#define SL_NUMA_MAX_CPUS 1024

/* enum sl_numa_policy: the values of sl_stream_config.numa / sl_model_params.numa */
enum { SL_NUMA_NONE = 0, SL_NUMA_LOCAL, SL_NUMA_DISTRIBUTE };

typedef struct sl_numa_topo {
    int32_t n_nodes;                        /* nodes with CPUs or memory (highest id + 1) */
    int32_t n_cpus;                         /* highest CPU id seen + 1 */
    int16_t node_of_cpu[SL_NUMA_MAX_CPUS];  /* -1: unknown */
} sl_numa_topo;

typedef struct sl_numa_place {
    bool noop;              /* one node, policy none, or nothing known: leave memory alone */
    bool interleave;        /* distribute: pages round-robin over `nodes` */
    int32_t node;           /* local: the node */
    uint64_t nodes;         /* bit i = node i */
} sl_numa_place;

/* Reads root/nodeN/cpulist ("0-3,8-11") for every nodeN (root: normally
 * "/sys/devices/system/node"). A missing root is one node holding every CPU. */
int sl_numa_topo_read(sl_numa_topo *t, const char *root);
/* Parses one cpulist into t for node `node`; -1 on malformed text. */
int sl_numa_parse_cpulist(sl_numa_topo *t, int32_t node, const char *list);
/* Local: the node holding most of cpus[0..n) (the compute threads' CPUs; ties
 * to the node of cpus[0]); distribute: every node. */
void sl_numa_decide(const sl_numa_topo *t, int policy, const int32_t *cpus, int32_t n, sl_numa_place *out);
/* The decision for this process: sysfs topology, CPUs of sched_getaffinity. */
void sl_numa_decide_here(int policy, sl_numa_place *out);
/* Binds [addr, addr+len) before its first touch; 0, or a status (kernel refused). */
int sl_numa_apply(const sl_numa_place *p, void *addr, size_t len);

#endif
