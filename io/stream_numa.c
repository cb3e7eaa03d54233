/* NUMA placement (stream_numa.h). */
#include "stream_numa.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/base/sl_internal.h"

#ifdef SL_HAVE_LIBNUMA
#include <numaif.h>
#endif

int sl_numa_parse_cpulist(sl_numa_topo *t, int32_t node, const char *s)
{
    while (*s && *s != '\n') {
        char *end;
        long a = strtol(s, &end, 10), b;
        if (end == s || a < 0) return -1;
        s = end;
        b = a;
        if (*s == '-') {
            b = strtol(s + 1, &end, 10);
            if (end == s + 1 || b < a) return -1;
            s = end;
        }
        for (long c = a; c <= b && c < SL_NUMA_MAX_CPUS; c++) {
            t->node_of_cpu[c] = (int16_t)node;
            if (c + 1 > t->n_cpus) t->n_cpus = (int32_t)c + 1;
        }
        if (*s == ',') s++;
        else if (*s && *s != '\n') return -1;
    }
    if (node + 1 > t->n_nodes) t->n_nodes = node + 1;
    return 0;
}

int sl_numa_topo_read(sl_numa_topo *t, const char *root)
{
    memset(t, 0, sizeof *t);
    memset(t->node_of_cpu, 0xff, sizeof t->node_of_cpu);
    DIR *d = opendir(root);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            int node;
            char tail;
            if (sscanf(e->d_name, "node%d%c", &node, &tail) != 1 || node < 0 || node >= SL_NUMA_MAX_NODES) continue;
            char path[512], line[4096];
            snprintf(path, sizeof path, "%s/%s/cpulist", root, e->d_name);
            FILE *f = fopen(path, "r");
            if (!f) continue;
            if (fgets(line, sizeof line, f)) sl_numa_parse_cpulist(t, node, line);
            else if (node + 1 > t->n_nodes) t->n_nodes = node + 1;   /* memory-only node */
            fclose(f);
        }
        closedir(d);
    }
    if (t->n_nodes == 0) t->n_nodes = 1;
    return 0;
}

void sl_numa_decide(const sl_numa_topo *t, int policy, const int32_t *cpus, int32_t n, sl_numa_place *out)
{
    memset(out, 0, sizeof *out);
    out->noop = true;
    out->node = -1;
    if (policy == SL_NUMA_NONE || t->n_nodes <= 1) return;
    if (policy == SL_NUMA_DISTRIBUTE) {
        for (int32_t i = 0; i < t->n_nodes && i < SL_NUMA_MAX_NODES; i++) out->nodes |= 1ull << i;
        out->interleave = true;
        out->noop = false;
        return;
    }
    int32_t count[SL_NUMA_MAX_NODES] = { 0 }, first = -1;
    for (int32_t i = 0; i < n; i++) {
        if (cpus[i] < 0 || cpus[i] >= t->n_cpus) continue;
        int32_t nd = t->node_of_cpu[cpus[i]];
        if (nd < 0 || nd >= SL_NUMA_MAX_NODES) continue;
        if (first < 0) first = nd;
        count[nd]++;
    }
    if (first < 0) return;   /* no known CPU: no opinion */
    int32_t best = first;
    for (int32_t i = 0; i < t->n_nodes && i < SL_NUMA_MAX_NODES; i++)
        if (count[i] > count[best]) best = i;
    out->node = best;
    out->nodes = 1ull << best;
    out->noop = false;
}

void sl_numa_decide_here(int policy, sl_numa_place *out)
{
    sl_numa_topo *t = malloc(sizeof *t);
    int32_t *cpus = malloc((SL_NUMA_MAX_CPUS + 1) * sizeof *cpus), n = 0;
    if (!t || !cpus) {   /* no opinion without memory to form one */
        free(t); free(cpus);
        sl_numa_decide(&(sl_numa_topo){ .n_nodes = 1 }, SL_NUMA_NONE, NULL, 0, out);
        return;
    }
    sl_numa_topo_read(t, "/sys/devices/system/node");
    int here = sched_getcpu();   /* the caller computes too: its node breaks ties */
    if (here >= 0) cpus[n++] = here;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE && c < SL_NUMA_MAX_CPUS; c++)
            if (CPU_ISSET(c, &set)) cpus[n++] = c;
    sl_numa_decide(t, policy, cpus, n, out);
    free(t);
    free(cpus);
}

int sl_numa_apply(const sl_numa_place *p, void *addr, size_t len)
{
    if (p->noop || !addr || !len) return 0;
    /* mbind takes whole pages: bind the pages inside the range */
    uintptr_t pg = 4096, a = ((uintptr_t)addr + pg - 1) & ~(pg - 1), e = ((uintptr_t)addr + len) & ~(pg - 1);
    if (e <= a) return 0;
    addr = (void *)a;
    len = (size_t)(e - a);
#ifdef SL_HAVE_LIBNUMA
    /* mbind (libnuma's numaif.h), not numa_tonode_memory: that one prints on failure.
     * Local is MPOL_PREFERRED: a full node spills over instead of failing the fault. */
    unsigned long mask[SL_NUMA_MAX_NODES / (8 * sizeof(unsigned long))] = { 0 };
    for (int i = 0; i < SL_NUMA_MAX_NODES; i++)
        if (p->nodes >> i & 1) mask[i / (8 * sizeof(unsigned long))] |= 1ul << (i % (8 * sizeof(unsigned long)));
    if (mbind(addr, len, p->interleave ? MPOL_INTERLEAVE : MPOL_PREFERRED, mask, SL_NUMA_MAX_NODES + 1, 0))
        return sl_err_set(SL_EINVAL, "numa: mbind of %zu bytes to nodes 0x%llx: %s", len,
                          (unsigned long long)p->nodes, strerror(errno));
    return 0;
#else
    return sl_err_set(SL_ENOSYS, "numa: built without libnuma");
#endif
}
