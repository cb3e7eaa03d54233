/* `--profile`: the decode profile (sluice.h: sl_profile) as a table per
 * decode token, or as one JSON object. Per thread: time inside pool jobs
 * (work), the rest of the pooled ops' time (waiting: wake-up, imbalance,
 * barrier), and the time outside pooled ops (the caller's serial ops; idle
 * for the workers). */
#include <stdio.h>

#include "cli.h"
#include "../sluice.h"

static bool is_matvec(int op) { return op >= SL_PROF_MV_Q && op <= SL_PROF_MV_GATE_UP; }

static bool pooled(const sl_profile *p, int op, int nt)
{
    for (int t = 0; t < nt; t++)
        if (p->thread_ms[t][op] > 0) return true;
    return false;
}

void sl_cli_print_profile(FILE *f, const sl_profile *p, bool json)
{
    int nt = p->n_threads < SL_PROF_MAX_THREADS ? p->n_threads : SL_PROF_MAX_THREADS;
    double per = p->n_tokens > 0 ? (double)p->n_tokens : 1;
    double sum = 0, pooled_ms = 0;
    for (int o = 0; o < SL_PROF_N_OPS; o++) {
        if (o != SL_PROF_SAMPLE) sum += p->op_ms[o];
        if (pooled(p, o, nt)) pooled_ms += p->op_ms[o];
    }
    double work[SL_PROF_MAX_THREADS] = { 0 };
    for (int t = 0; t < nt; t++)
        for (int o = 0; o < SL_PROF_N_OPS; o++) work[t] += p->thread_ms[t][o];
    if (json) {
        fprintf(f, "{\"profile\":{\"n_tokens\":%lld,\"threads\":%d,\"forward_ms_per_token\":%.4f,"
                   "\"ops_sum_ms_per_token\":%.4f,\"n_samples\":%lld,\"ops\":{",
                (long long)p->n_tokens, p->n_threads, p->forward_ms / per, sum / per,
                (long long)p->n_samples);
        const char *sep = "";
        for (int o = 0; o < SL_PROF_N_OPS; o++) {
            if (!p->op_calls[o]) continue;
            double ms = p->op_ms[o];
            fprintf(f, "%s\"%s\":{\"ms_per_token\":%.4f,\"bytes_per_token\":%.0f,\"calls\":%llu,"
                       "\"gb_s\":%.3f,\"thread_ms_per_token\":[",
                    sep, sl_prof_op_name(o), ms / per, (double)p->op_bytes[o] / per,
                    (unsigned long long)p->op_calls[o],
                    ms > 0 ? (double)p->op_bytes[o] / (ms * 1e6) : 0.0);
            for (int t = 0; t < nt; t++) fprintf(f, "%s%.4f", t ? "," : "", p->thread_ms[t][o] / per);
            fprintf(f, "]}");
            sep = ",";
        }
        fprintf(f, "},\"per_thread\":[");
        for (int t = 0; t < nt; t++)
            fprintf(f, "%s{\"work_ms\":%.4f,\"wait_ms\":%.4f,\"outside_ms\":%.4f}", t ? "," : "",
                    work[t] / per, (pooled_ms - work[t]) / per, (p->forward_ms - pooled_ms) / per);
        fprintf(f, "]}}\n");
        return;
    }
    fprintf(f, "profile: %lld decode tokens, %.3f ms/token forward, ops sum %.3f ms (%.1f%%), %d threads\n",
            (long long)p->n_tokens, p->forward_ms / per, sum / per,
            p->forward_ms > 0 ? 100.0 * sum / p->forward_ms : 0.0, p->n_threads);
    fprintf(f, "  %-8s %9s %6s %9s %10s %7s", "op", "ms/tok", "%", "calls/tok", "MB/tok", "GB/s");
    for (int t = 0; t < nt; t++) fprintf(f, "   t%-2d ms", t);
    fprintf(f, "\n");
    for (int o = 0; o < SL_PROF_N_OPS; o++) {
        if (!p->op_calls[o]) continue;
        double ms = p->op_ms[o];
        double dper = o == SL_PROF_SAMPLE && p->n_samples ? (double)p->n_samples : per;
        fprintf(f, "  %-8s %9.3f %6.1f %9.1f", sl_prof_op_name(o), ms / dper,
                p->forward_ms > 0 ? 100.0 * ms / p->forward_ms : 0.0, (double)p->op_calls[o] / dper);
        if (is_matvec(o) || o == SL_PROF_EMBD)
            fprintf(f, " %10.2f %7.2f", (double)p->op_bytes[o] / 1e6 / per,
                    ms > 0 ? (double)p->op_bytes[o] / (ms * 1e6) : 0.0);
        else
            fprintf(f, " %10s %7s", "", "");
        for (int t = 0; t < nt; t++) {
            if (pooled(p, o, nt)) fprintf(f, " %8.3f", p->thread_ms[t][o] / per);
            else fprintf(f, " %8s", "-");
        }
        fprintf(f, "\n");
    }
    double mvb = 0, mvms = 0;
    for (int o = SL_PROF_MV_Q; o <= SL_PROF_MV_GATE_UP; o++) { mvb += (double)p->op_bytes[o]; mvms += p->op_ms[o]; }
    fprintf(f, "  matvecs: %.1f MB/tok in %.3f ms/tok = %.2f GB/s; whole token: %.2f GB/s\n", mvb / 1e6 / per,
            mvms / per, mvms > 0 ? mvb / (mvms * 1e6) : 0.0, p->forward_ms > 0 ? mvb / (p->forward_ms * 1e6) : 0.0);
    for (int t = 0; t < nt; t++)
        fprintf(f, "  thread %d: work in pool jobs %.3f ms/tok, waiting in pooled ops %.3f ms/tok, "
                   "outside pooled ops %.3f ms/tok (%s)\n", t, work[t] / per, (pooled_ms - work[t]) / per,
                (p->forward_ms - pooled_ms) / per, t ? "idle" : "serial ops, stream, loop");
}
