/* NUMA placement (io/stream_numa.c) with injected topologies: cpulist parsing,
 * a fake sysfs tree, the local / distribute decisions, the one-node no-op, and
 * binding real memory where the kernel has the nodes. SL_HOST_ONLY (libnuma is a
 * host-build dependency; the cross build places nothing). */
#include "sl_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/stream_numa.h"

static void two_nodes(sl_numa_topo *t)
{
    memset(t, 0, sizeof *t);
    memset(t->node_of_cpu, 0xff, sizeof t->node_of_cpu);
    cr_assert_eq(sl_numa_parse_cpulist(t, 0, "0-3,8-11\n"), 0);
    cr_assert_eq(sl_numa_parse_cpulist(t, 1, "4-7,12-15"), 0);
}

Test(numa, cpulist)
{
    sl_numa_topo t;
    two_nodes(&t);
    cr_assert_eq(t.n_nodes, 2);
    cr_assert_eq(t.n_cpus, 16);
    cr_assert_eq(t.node_of_cpu[0], 0);
    cr_assert_eq(t.node_of_cpu[9], 0);
    cr_assert_eq(t.node_of_cpu[5], 1);
    cr_assert_eq(t.node_of_cpu[15], 1);
    cr_assert_eq(t.node_of_cpu[16], -1);
    cr_assert_eq(sl_numa_parse_cpulist(&t, 2, "3-1"), -1);
    cr_assert_eq(sl_numa_parse_cpulist(&t, 2, "x"), -1);
    cr_assert_eq(sl_numa_parse_cpulist(&t, 2, "1,,2"), -1);
}

Test(numa, decisions)
{
    sl_numa_topo t;
    two_nodes(&t);
    sl_numa_place p;
    int32_t on1[] = { 5, 6, 12, 1 }, split[] = { 9, 4, 0, 13 }, unknown[] = { 99, 500 };
    sl_numa_decide(&t, SL_NUMA_LOCAL, on1, 4, &p);
    cr_assert(!p.noop);
    cr_assert(!p.interleave);
    cr_assert_eq(p.node, 1, "three of four threads on node 1");
    cr_assert_eq(p.nodes, 2u);
    sl_numa_decide(&t, SL_NUMA_LOCAL, split, 4, &p);
    cr_assert_eq(p.node, 0, "a tie goes to the first thread's node");
    sl_numa_decide(&t, SL_NUMA_LOCAL, unknown, 2, &p);
    cr_assert(p.noop, "CPUs outside the topology: no opinion");
    sl_numa_decide(&t, SL_NUMA_DISTRIBUTE, on1, 4, &p);
    cr_assert(!p.noop);
    cr_assert(p.interleave);
    cr_assert_eq(p.nodes, 3u);
    sl_numa_decide(&t, SL_NUMA_NONE, on1, 4, &p);
    cr_assert(p.noop);
    /* one node: nothing to place, whatever the policy */
    sl_numa_topo one;
    memset(&one, 0, sizeof one);
    memset(one.node_of_cpu, 0xff, sizeof one.node_of_cpu);
    cr_assert_eq(sl_numa_parse_cpulist(&one, 0, "0-1"), 0);
    sl_numa_decide(&one, SL_NUMA_DISTRIBUTE, on1, 4, &p);
    cr_assert(p.noop);
    sl_numa_decide(&one, SL_NUMA_LOCAL, (int32_t[]){ 0, 1 }, 2, &p);
    cr_assert(p.noop);
    char buf[64];
    cr_assert_eq(sl_numa_apply(&p, buf, sizeof buf), 0, "no-op");
}

Test(numa, sysfs_tree)
{
    char root[64], path[128];
    snprintf(root, sizeof root, "/tmp/sl_test_numa_%d", (int)getpid());
    mkdir(root, 0755);
    const char *lists[] = { "0-1\n", "2-3\n", "" };   /* node2: memory only */
    for (int n = 0; n < 3; n++) {
        snprintf(path, sizeof path, "%s/node%d", root, n);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/node%d/cpulist", root, n);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs(lists[n], f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/possible", root);   /* not a node directory */
    FILE *f = fopen(path, "w");
    fputs("0-2\n", f);
    fclose(f);
    sl_numa_topo t;
    cr_assert_eq(sl_numa_topo_read(&t, root), 0);
    cr_assert_eq(t.n_nodes, 3);
    cr_assert_eq(t.node_of_cpu[3], 1);
    sl_numa_place p;
    sl_numa_decide(&t, SL_NUMA_DISTRIBUTE, NULL, 0, &p);
    cr_assert_eq(p.nodes, 7u);
    for (int n = 0; n < 3; n++) {
        snprintf(path, sizeof path, "%s/node%d/cpulist", root, n); unlink(path);
        snprintf(path, sizeof path, "%s/node%d", root, n); rmdir(path);
    }
    snprintf(path, sizeof path, "%s/possible", root); unlink(path);
    rmdir(root);
    cr_assert_eq(sl_numa_topo_read(&t, "/nonexistent/sl_numa"), 0);
    cr_assert_eq(t.n_nodes, 1, "no sysfs: one node");
}

/* On this machine: placing on node 0 (always present) succeeds, and the
 * memory is usable; a node the kernel does not have is refused with a message. */
Test(numa, apply_here)
{
    size_t len = 1 << 20;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(m, MAP_FAILED);
    sl_numa_place p = { .noop = false, .interleave = false, .node = 0, .nodes = 1 };
    cr_assert_eq(sl_numa_apply(&p, m + 100, len - 100), 0);
    memset(m, 1, len);
    p.interleave = true;
    cr_assert_eq(sl_numa_apply(&p, m, len), 0);
    sl_numa_topo t;
    sl_numa_topo_read(&t, "/sys/devices/system/node");
    if (t.n_nodes < 63) {
        p.nodes = 1ull << 62;
        p.node = 62;
        p.interleave = false;
        cr_assert_lt(sl_numa_apply(&p, m, len), 0, "node 62 does not exist here");
    }
    munmap(m, len);
}
