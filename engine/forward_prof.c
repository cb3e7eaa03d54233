/* The decode profile's op names and its export into the public struct
 * (sluice.h: sl_profile); the accumulation itself is inline (forward_pass.h). */
#include <stdlib.h>
#include <string.h>

#include "../gguf/base/sl_status.h"
#include "forward_pass.h"

static const char *const op_names[SL_PROF_N_OPS] = {
    [SL_PROF_EMBD] = "embd",       [SL_PROF_MV_Q] = "mv_q",       [SL_PROF_MV_K] = "mv_k",
    [SL_PROF_MV_V] = "mv_v",       [SL_PROF_MV_O] = "mv_o",       [SL_PROF_MV_GATE] = "mv_gate",
    [SL_PROF_MV_UP] = "mv_up",     [SL_PROF_MV_DOWN] = "mv_down", [SL_PROF_MV_HEAD] = "mv_head",
    [SL_PROF_MV_QKV] = "mv_qkv",   [SL_PROF_MV_GATE_UP] = "mv_gate_up",
    [SL_PROF_MOE] = "moe",         [SL_PROF_ATTN] = "attn",       [SL_PROF_NORM] = "norm",
    [SL_PROF_ROPE] = "rope",       [SL_PROF_KV] = "kv",           [SL_PROF_QUANT] = "quant",
    [SL_PROF_ACT] = "act",         [SL_PROF_ADD] = "add",         [SL_PROF_STREAM] = "stream",
    [SL_PROF_SAMPLE] = "sample",
};
_Static_assert(SL_PROF_N_OPS <= SL_PROF_STRIDE, "a pool row holds every op");

const char *sl_prof_op_name(int op)
{
    return op >= 0 && op < SL_PROF_N_OPS ? op_names[op] : NULL;
}

int sl_forward_prof_alloc(sl_forward_prof *p, int n_threads)
{
    memset(p, 0, sizeof *p);
    size_t bytes = (size_t)(n_threads > 0 ? n_threads : 1) * SL_PROF_STRIDE * sizeof(uint64_t);
    p->thread_ns = aligned_alloc(64, bytes);
    if (!p->thread_ns) return SL_ENOMEM;
    memset(p->thread_ns, 0, bytes);
    p->n_threads = n_threads > 0 ? n_threads : 1;
    return 0;
}

void sl_forward_prof_clear(sl_forward_prof *p)
{
    memset(p->ns, 0, sizeof p->ns);
    memset(p->bytes, 0, sizeof p->bytes);
    memset(p->calls, 0, sizeof p->calls);
    if (p->thread_ns)
        memset(p->thread_ns, 0, (size_t)p->n_threads * SL_PROF_STRIDE * sizeof(uint64_t));
}

void sl_forward_prof_free(sl_forward_prof *p)
{
    free(p->thread_ns);
    memset(p, 0, sizeof *p);
}

void sl_forward_prof_export(const sl_forward_prof *p, sl_profile *out)
{
    memset(out, 0, sizeof *out);
    out->n_threads = p->n_threads;
    for (int o = 0; o < SL_PROF_N_OPS; o++) {
        out->op_ms[o] = (double)p->ns[o] * 1e-6;
        out->op_bytes[o] = p->bytes[o];
        out->op_calls[o] = p->calls[o];
    }
    int nt = p->n_threads < SL_PROF_MAX_THREADS ? p->n_threads : SL_PROF_MAX_THREADS;
    for (int t = 0; t < nt && p->thread_ns; t++)
        for (int o = 0; o < SL_PROF_N_OPS; o++)
            out->thread_ms[t][o] = (double)p->thread_ns[(size_t)t * SL_PROF_STRIDE + (size_t)o] * 1e-6;
}
