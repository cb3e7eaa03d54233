/* `mpirun -np N sluice run --ring SPEC -m MODEL -p PROMPT ...`: prima.cpp's
 * piped ring on our engine. Rank m holds the layers of its windows: with k
 * rounds and windows w[0..N), round r's window of rank m is the w[m] layers
 * from r * sum(w) + w[0] + ... + w[m-1]. Each rank opens the model with its own
 * budget and streamer, restricted to those layers (sl_model_params.layer_mask),
 * so its eager prefetch loads its next window while the others compute. Rank 0
 * also holds the embedding and the lm head (it samples: the logits never travel)
 * and does tokenization, sampling and output.
 *
 * A chunk of n <= n_batch tokens travels as one message: a header, the token
 * ids (every rank keeps the sampler's history and commits the positions) and
 * the hidden state, n x n_embd floats. Rank 0 embeds it and runs its window of
 * round 0, then it goes 1 -> 2 -> ... -> N-1 -> 0, k times; after round k-1
 * every rank commits it, and rank 0 computes the logits when the chunk is the
 * prompt's last or a decode token. Prompt chunks are pipelined: rank 0 starts
 * the next chunk while earlier ones are in the ring (at most N in flight; each
 * layer still sees the chunks in order, since every link is FIFO, so the KV
 * cache rows a chunk attends to are there). Rank 0 never waits for a send to
 * complete before it receives (so the ring cannot deadlock); the others wait
 * for theirs before the next receive. Waits poll with short sleeps rather than
 * spin (ranks may share cores).
 *
 * Failures: a start-up failure on any rank (a missing model file, a budget too
 * small) is gathered to rank 0, printed for every rank, and all exit 1. During
 * the run a failing rank prints its message and calls MPI_Abort (mpirun ends
 * every rank); a rank that dies is noticed by mpirun, which ends the others; a
 * rank that waits longer than --ring-timeout (a peer hangs) ends the run the
 * same way. MPI errors return codes (MPI_ERRORS_RETURN), reported as above.
 * Built only where Open MPI is (Makefile ring block). */
#include "ring_plan.h"
#include "ring_cli.h"
#include "ring_mpi.h"
#include "../cli.h"
#include "../cli_opts.h"
#include "../../sluice.h"
#include "../../../gguf/base/sl_internal.h"
#include "../../../gguf/base/sl_status.h"
#include "../../../io/sluice_stream.h"
#include "../../../gguf/base/sl_platform.h"

#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MSG_LEN 512
enum { CMD_RUN = 1, CMD_STOP = 2 };
enum { PH_PROMPT = 0, PH_DECODE = 1 };

typedef struct ring_hdr {
    int32_t cmd, n, round, pos0;
    int32_t last;            /* rank 0 computes the logits of the chunk's last row */
    int32_t phase;           /* PH_PROMPT / PH_DECODE: where the time is counted */
    int32_t slot;            /* rank 0's buffer of this chunk */
    int32_t pad;
} ring_hdr;

/* Per rank and phase: where the time went. */
typedef struct ring_times {
    double compute_ms, stall_ms, wait_ms, send_ms, head_ms;
    double bytes_read;
} ring_times;

typedef struct ring_opts {
    sl_cli_model_opts mo;
    sl_sampling sp;
    const char *prompt, *spec, *profile;
    long long n_predict;
    bool stats, ignore_eos, no_display_prompt;
    unsigned long long budgets[SL_RING_MAX_DEV];
    int n_budgets;
    long long timeout;
} ring_opts;

typedef struct ring_ctx {
    int rank, n;
    sl_ring_plan plan;
    int W;                   /* sum of the windows: layers per round */
    sl_model *m;
    sl_session *s;
    int32_t n_embd, n_batch;
    size_t off_h, msg_bytes;
    ring_times t[2];
    int fail_rank, fail_step, steps;   /* SLUICE_RING_FAIL=RANK:STEP[:hang] (the tests' failing rank) */
    bool fail_hang;
    uint64_t bytes_seen;     /* the streamer's bytes read until the last window */
} ring_ctx;

/* Bytes the streamer read since the last call: reads of a window are mostly
 * prefetched before it runs, so they count in the phase of the next window. */
static double bytes_since(ring_ctx *x)
{
    sl_stream_stats st;
    sl_stream_get_stats(sl_model_stream(x->m), &st);
    double d = (double)(st.bytes_read - x->bytes_seen);
    x->bytes_seen = st.bytes_read;
    return d;
}

static void run_usage(FILE *f)
{
    fprintf(f,
        "usage: mpirun -np N sluice run --ring SPEC -m MODEL -p PROMPT [options]\n"
        "  --ring SPEC            how the layers are split over the N ranks (ring order = rank order):\n"
        "                           W0,W1,...   each rank's window (layers per round); the rounds per\n"
        "                                       token are n_layer / sum (must divide)\n"
        "                           FILE.json   a cluster (`sluice ring-profile` / `sluice plan --ring`):\n"
        "                                       windows planned by the ILPs, one device per rank\n"
        "                           auto        every rank's profile and budget gathered over MPI,\n"
        "                                       the links measured, then planned as FILE.json\n"
        "  --ring-budgets B0,B1,.. memory budget of each rank (else --mem-budget for every rank;\n"
        "                         else the cluster file's budgets; else MemAvailable)\n"
        "  --ring-profile FILE    auto: this rank's `sluice profile` JSON (default ~/.cache/sluice/profile.json)\n"
        "  --ring-timeout S       a rank waiting longer for its peers ends the run (default 300)\n"
        "  -p, --prompt TEXT      prompt        -n, --n-predict N   tokens to generate (-1: until the end)\n"
        "  --temp T  --top-k N  --top-p P  --min-p P  --repeat-penalty R  --repeat-last-n N  --seed S\n"
        "  --ignore-eos  --no-display-prompt\n"
        "  --stats                per rank and decode token: compute, disk stall, waiting for the ring\n"
        "Rank 0 tokenizes, samples and prints; it holds layer 0's window, the embedding and the lm head.\n"
        "Each rank streams only its windows' layers within its own budget. Model options:\n%s",
        sl_cli_model_opts_help);
}

static int parse_budgets(ring_opts *o, const char *v)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", v);
    o->n_budgets = 0;
    for (char *sv = NULL, *tok = strtok_r(buf, ",", &sv); tok; tok = strtok_r(NULL, ",", &sv)) {
        if (o->n_budgets == SL_RING_MAX_DEV || sl_cli_parse_size(tok, &o->budgets[o->n_budgets]) ||
            !o->budgets[o->n_budgets])
            return -1;
        o->n_budgets++;
    }
    return o->n_budgets ? 0 : -1;
}

static int parse(ring_opts *o, int argc, char **argv)
{
    sl_cli_model_opts_init(&o->mo);
    o->mo.mp.context_shift = false;   /* the stages' caches stop at n_ctx */
    sl_sampling_init(&o->sp);
    o->n_predict = -1;
    o->timeout = 300;
    bool seed_set = false;
    for (int i = 1; i < argc; i++) {
        int r = sl_cli_model_opt(&o->mo, argc, argv, &i, "run");
        if (r < 0) return 2;
        if (r > 0) continue;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { run_usage(stdout); return -1; }
        if (!strcmp(a, "--stats")) { o->stats = true; continue; }
        if (!strcmp(a, "--ignore-eos")) { o->ignore_eos = true; continue; }
        if (!strcmp(a, "--no-display-prompt")) { o->no_display_prompt = true; continue; }
        if (i + 1 >= argc) {
            fprintf(stderr, "sluice run --ring: unknown option or missing value: %s\n", a);
            run_usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        long long n = 0;
        double d = 0;
        bool bad = false;
        if (!strcmp(a, "--ring")) o->spec = v;
        else if (!strcmp(a, "--ring-budgets")) bad = parse_budgets(o, v) != 0;
        else if (!strcmp(a, "--ring-profile")) o->profile = v;
        else if (!strcmp(a, "--ring-timeout")) { bad = sl_cli_int(v, 1, 86400, &n); o->timeout = n; }
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) o->prompt = v;
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) { bad = sl_cli_int(v, -1, 1 << 30, &n); o->n_predict = n; }
        else if (!strcmp(a, "--top-k")) { bad = sl_cli_int(v, 0, 1 << 30, &n); o->sp.top_k = (int32_t)n; }
        else if (!strcmp(a, "--repeat-last-n")) { bad = sl_cli_int(v, -1, 1 << 30, &n); o->sp.repeat_last_n = (int32_t)n; }
        else if (!strcmp(a, "--seed")) { bad = sl_cli_int(v, 0, INT64_MAX, &n); o->sp.seed = (uint64_t)n; seed_set = true; }
        else if (!strcmp(a, "--temp") || !strcmp(a, "--top-p") || !strcmp(a, "--min-p") ||
                 !strcmp(a, "--repeat-penalty")) {
            bad = sl_cli_float(v, &d) || d < 0;
            if (a[2] == 't' && a[3] == 'e') o->sp.temp = (float)d;
            else if (a[2] == 't') { bad = bad || d > 1; o->sp.top_p = (float)d; }
            else if (a[2] == 'm') { bad = bad || d > 1; o->sp.min_p = (float)d; }
            else { bad = bad || d <= 0; o->sp.repeat_penalty = (float)d; }
        } else {
            fprintf(stderr, "sluice run --ring: unknown option '%s'\n", a);
            run_usage(stderr);
            return 2;
        }
        if (bad) { fprintf(stderr, "sluice run --ring: invalid value '%s' for %s\n", v, a); return 2; }
    }
    if (!o->mo.path || !o->prompt || !o->spec) {
        fprintf(stderr, "sluice run --ring: --ring SPEC, -m MODEL and -p PROMPT are required\n");
        return 2;
    }
    if (!seed_set) o->sp.seed = (uint64_t)time(NULL);
    return 0;
}

/* ---- failures ------------------------------------------------------------- */

static int g_rank;
static unsigned g_timeout = 300;
static char g_wait_what[96] = "start-up";

/* The watchdog runs only while a rank waits for others. */
static void arm(void) { alarm(g_timeout); }
static void disarm(void) { alarm(0); }

static void on_alarm(int sig)
{
    (void)sig;
    char buf[200];
    int n = snprintf(buf, sizeof buf, "sluice run --ring: rank %d: timed out waiting for %s (a peer died or hangs); "
                     "ending the run\n", g_rank, g_wait_what);
    if (n > 0) { ssize_t w = write(2, buf, (size_t)n); (void)w; }
    _exit(3);   /* mpirun sees a rank end without MPI_Finalize and ends the others */
}

/* A failure once the ring runs: every rank must end, now. */
static _Noreturn void die(const char *fmt, const char *what)
{
    fprintf(stderr, "sluice run --ring: rank %d: ", g_rank);
    fprintf(stderr, fmt, what);
    fprintf(stderr, "; ending the run on every rank\n");
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
}

static void mpi_check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return;
    char es[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, es, &len);
    char m[MPI_MAX_ERROR_STRING + 128];
    snprintf(m, sizeof m, "%s: %s", what, es);
    die("MPI: %s", m);
}

/* Start-up: every rank says whether it got this far; rank 0 prints each
 * failure. 0 when all are fine, else 1 on every rank. */
static int all_ok(const char *msg, const char *stage)
{
    static char msgs[SL_RING_MAX_DEV][MSG_LEN];
    char mine[MSG_LEN];
    snprintf(mine, sizeof mine, "%s", msg ? msg : "");
    int bad = mine[0] != 0, any = 0;
    snprintf(g_wait_what, sizeof g_wait_what, "the other ranks (%s)", stage);
    arm();
    mpi_check(MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "allreduce");
    if (any) mpi_check(MPI_Gather(mine, MSG_LEN, MPI_CHAR, msgs, MSG_LEN, MPI_CHAR, 0, MPI_COMM_WORLD), "gather");
    disarm();
    if (!any) return 0;
    if (g_rank == 0) {
        int n;
        MPI_Comm_size(MPI_COMM_WORLD, &n);
        for (int r = 0; r < n; r++)
            if (msgs[r][0]) fprintf(stderr, "sluice run --ring: rank %d: %s\n", r, msgs[r]);
        fprintf(stderr, "sluice run --ring: %s failed on a rank; every rank stops\n", stage);
    }
    return 1;
}

/* ---- the plan -------------------------------------------------------------- */

/* Windows "2,1,1" for n ranks of a model of L layers. */
static int plan_windows(sl_ring_plan *p, const char *spec, int n, int L, char *msg, size_t cap)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", spec);
    int cnt = 0, sum = 0;
    for (char *sv = NULL, *tok = strtok_r(buf, ",", &sv); tok; tok = strtok_r(NULL, ",", &sv)) {
        long long w;
        if (cnt == SL_RING_MAX_DEV || sl_cli_int(tok, 1, SL_RING_MAX_LAYERS, &w)) {
            snprintf(msg, cap, "--ring %s: windows are positive layer counts", spec);
            return -1;
        }
        p->w[cnt++] = (int)w;
        sum += (int)w;
    }
    if (cnt != n) {
        snprintf(msg, cap, "--ring %s: %d windows for %d ranks", spec, cnt, n);
        return -1;
    }
    if (L % sum) {
        snprintf(msg, cap, "--ring %s: the windows' %d layers per round do not divide the model's %d layers", spec, sum, L);
        return -1;
    }
    p->n_dev = n;
    p->k = L / sum;
    p->t_s = 0;
    return 0;
}

/* The cluster of FILE.json (or gathered: auto) planned with the model's numbers. */
static int plan_cluster(sl_ring_plan *p, sl_ring_cluster *c, const char *path, const ring_opts *o, int n, char *msg,
                        size_t cap)
{
    sl_ring_model mo;
    double reserve = 0;
    int rc = sl_ring_model_from_gguf(&mo, &reserve, o->mo.path, &o->mo.mp);
    if (!rc && path) rc = sl_ring_cluster_load(c, path, &mo, reserve);
    if (!rc && !path) {   /* gathered: the model and the reserve come from the GGUF */
        c->model = mo;
        for (int m = 0; m < c->n_dev; m++) if (c->dev[m].reserve <= 0) c->dev[m].reserve = reserve;
    }
    if (!rc && c->n_dev != n) rc = sl_err_set(SL_EINVAL, "%s has %d devices for %d ranks", path ? path : "the cluster", c->n_dev, n);
    if (!rc) rc = sl_ring_plan_solve(c, p);
    if (rc) { snprintf(msg, cap, "planning the ring: %s", sl_last_error()); return -1; }
    return 0;
}

/* ---- messages ------------------------------------------------------------- */


static int32_t *msg_ids(const ring_ctx *x, void *msg) { (void)x; return (int32_t *)((char *)msg + sizeof(ring_hdr)); }
static float *msg_h(const ring_ctx *x, void *msg) { return (float *)((char *)msg + x->off_h); }
static int msg_count(const ring_ctx *x, const ring_hdr *h)
{
    return (int)(x->off_h + (size_t)h->n * (size_t)x->n_embd * sizeof(float));
}

/* Waits for a request without spinning: Open MPI's blocking calls poll a
 * core, which ranks sharing cores (--oversubscribe) take from the one that
 * computes. A few yields first (a message already on its way), then sleeps
 * growing from 20 us to 0.5 ms: at most that much latency per message,
 * against waits of a window's compute or more. */
static void wait_req(MPI_Request *r, const char *what)
{
    arm();
    for (long us = 20, spins = 0;; spins++) {
        int done = 0;
        mpi_check(MPI_Test(r, &done, MPI_STATUS_IGNORE), what);
        if (done) break;
        if (spins < 64) { sched_yield(); continue; }   /* a message on its way: no sleep yet */
        struct timespec ts = { 0, us * 1000 };
        nanosleep(&ts, NULL);
        if (us < 500) us += us / 2;
    }
    disarm();
}

static void recv_from(ring_ctx *x, void *msg, int src, int phase_hint)
{
    snprintf(g_wait_what, sizeof g_wait_what, "rank %d's hidden state", src);
    double t0 = sl_now_ms();
    MPI_Request rq;
    mpi_check(MPI_Irecv(msg, (int)x->msg_bytes, MPI_BYTE, src, 1, MPI_COMM_WORLD, &rq), "receive");
    wait_req(&rq, "receive");
    ring_hdr *h = msg;
    if (h->cmd == CMD_RUN && (h->n < 1 || h->n > x->n_batch || h->round < 0 || h->round >= x->plan.k ||
                              h->pos0 < 0 || (h->phase != PH_PROMPT && h->phase != PH_DECODE)))
        die("%s", "a malformed message from the previous rank");
    if (h->cmd != CMD_RUN && h->cmd != CMD_STOP) die("%s", "an unknown message from the previous rank");
    int ph = h->cmd == CMD_RUN ? h->phase : phase_hint;
    x->t[ph].wait_ms += sl_now_ms() - t0;
}

/* Rank m's window of round r over the chunk: layers [first, first + w[m]). */
static void run_window(ring_ctx *x, void *msg)
{
    ring_hdr *h = msg;
    int first;
    sl_ring_plan_window(&x->plan, x->rank, h->round, &first);
    if (x->fail_rank == x->rank && ++x->steps == x->fail_step) {
        fprintf(stderr, "sluice run --ring: rank %d: SLUICE_RING_FAIL: %s at window %d\n", x->rank,
                x->fail_hang ? "hanging" : "dying", x->steps);
        fflush(stderr);
        if (x->fail_hang) for (;;) pause();
        abort();
    }
    sl_stats a, b;
    sl_session_get_stats(x->s, &a);
    int rc = sl_session_forward_layers(x->s, first, first + x->plan.w[x->rank], h->pos0, msg_h(x, msg), h->n);
    if (rc) die("%s", sl_session_errmsg(x->s));
    sl_session_get_stats(x->s, &b);
    ring_times *t = &x->t[h->phase];
    t->compute_ms += b.compute_ms - a.compute_ms;
    t->stall_ms += b.stall_ms - a.stall_ms;
    t->bytes_read += bytes_since(x);
}

/* Ranks 1..N-1: receive, run the window, pass on; commit after round k-1. */
static void follower(ring_ctx *x)
{
    void *msg = malloc(x->msg_bytes);
    if (!msg) die("%s", "out of memory for a message");
    int next = (x->rank + 1) % x->n, prev = x->rank - 1, phase = PH_PROMPT;
    for (;;) {
        recv_from(x, msg, prev, phase);
        ring_hdr *h = msg;
        if (h->cmd == CMD_RUN) {
            phase = h->phase;
            run_window(x, msg);
            if (h->round == x->plan.k - 1 && sl_session_commit(x->s, msg_ids(x, msg), h->n))
                die("%s", sl_session_errmsg(x->s));
        }
        snprintf(g_wait_what, sizeof g_wait_what, "rank %d to take the hidden state", next);
        double t0 = sl_now_ms();
        MPI_Request rq;
        mpi_check(MPI_Isend(msg, h->cmd == CMD_RUN ? msg_count(x, h) : (int)sizeof *h, MPI_BYTE, next, 1,
                            MPI_COMM_WORLD, &rq), "send");
        wait_req(&rq, "send");   /* the buffer is the next receive's */
        x->t[phase].send_ms += sl_now_ms() - t0;
        if (h->cmd == CMD_STOP) break;
    }
    free(msg);
}

/* Rank 0's chunks in flight: each has its own buffer, sent with MPI_Isend. */
typedef struct ring_lead {
    void **buf;
    MPI_Request *req;
    int n_slots, in_flight;
    void *rx;
} ring_lead;

static void lead_send(ring_ctx *x, ring_lead *L, int slot)
{
    ring_hdr *h = L->buf[slot];
    double t0 = sl_now_ms();
    mpi_check(MPI_Isend(L->buf[slot], msg_count(x, h), MPI_BYTE, 1, 1, MPI_COMM_WORLD, &L->req[slot]), "send");
    x->t[h->phase].send_ms += sl_now_ms() - t0;
}

/* A chunk back from round k-1 (or done locally): commit, and the logits if wanted. */
static void lead_finish(ring_ctx *x, void *msg)
{
    ring_hdr *h = msg;
    if (sl_session_commit(x->s, msg_ids(x, msg), h->n)) die("%s", sl_session_errmsg(x->s));
    if (!h->last) return;
    sl_stats a, b;
    sl_session_get_stats(x->s, &a);
    double t0 = sl_now_ms();
    if (sl_session_head(x->s, msg_h(x, msg) + (size_t)(h->n - 1) * (size_t)x->n_embd)) die("%s", sl_session_errmsg(x->s));
    sl_session_get_stats(x->s, &b);
    x->t[h->phase].head_ms += sl_now_ms() - t0 - (b.stall_ms - a.stall_ms);   /* its stall counts as stall */
    x->t[h->phase].stall_ms += b.stall_ms - a.stall_ms;
    x->t[h->phase].bytes_read += bytes_since(x);
}

/* One chunk comes back from rank N-1: its next round, or it is done. */
static void lead_receive(ring_ctx *x, ring_lead *L, int phase)
{
    recv_from(x, L->rx, x->n - 1, phase);
    ring_hdr *h = L->rx;
    if (h->cmd != CMD_RUN) die("%s", "unexpected message from the last rank");
    int slot = h->slot;
    if (slot < 0 || slot >= L->n_slots) die("%s", "message of an unknown chunk");
    /* our send of this round was received (it came back): its buffer is free */
    wait_req(&L->req[slot], "send completion");
    memcpy(L->buf[slot], L->rx, (size_t)msg_count(x, h));
    h = L->buf[slot];
    if (h->round + 1 < x->plan.k) {
        h->round++;
        run_window(x, L->buf[slot]);
        lead_send(x, L, slot);
        return;
    }
    lead_finish(x, L->buf[slot]);
    h->cmd = 0;   /* the slot is free */
    L->in_flight--;
}

/* Feeds ids[0..n) through the ring in chunks of n_batch (pipelined); the
 * last chunk's last row gets logits. */
static void lead_feed(ring_ctx *x, ring_lead *L, const int32_t *ids, int n, int phase)
{
    int32_t pos = sl_session_n_past(x->s);
    for (int i0 = 0; i0 < n || L->in_flight > 0;) {
        if (i0 < n && L->in_flight < L->n_slots) {
            int slot = 0;
            while (slot < L->n_slots && ((ring_hdr *)L->buf[slot])->cmd == CMD_RUN) slot++;
            void *msg = L->buf[slot];
            ring_hdr *h = msg;
            int c = n - i0 < x->n_batch ? n - i0 : x->n_batch;
            *h = (ring_hdr){ .cmd = CMD_RUN, .n = c, .round = 0, .pos0 = pos + i0, .last = i0 + c == n,
                             .phase = phase, .slot = slot };
            memcpy(msg_ids(x, msg), ids + i0, (size_t)c * sizeof *ids);
            if (sl_session_embed(x->s, ids + i0, c, msg_h(x, msg))) die("%s", sl_session_errmsg(x->s));
            run_window(x, msg);
            i0 += c;
            if (x->n == 1) {   /* no ring: every round here */
                for (h->round = 1; h->round < x->plan.k; h->round++) run_window(x, msg);
                h->round = x->plan.k - 1;
                lead_finish(x, msg);
                h->cmd = 0;
                continue;
            }
            L->in_flight++;
            lead_send(x, L, slot);
            continue;
        }
        lead_receive(x, L, phase);
    }
}

static void print_stats(const ring_ctx *x, const ring_times *all, int64_t n_decode, double decode_ms)
{
    double per = n_decode > 0 ? (double)n_decode : 1;
    fprintf(stderr, "ring: %d ranks, k = %d rounds, windows", x->n, x->plan.k);
    for (int m = 0; m < x->n; m++) fprintf(stderr, " %d", x->plan.w[m]);
    fprintf(stderr, "; decode %.1f ms/token (%lld tokens)\n", decode_ms / per, (long long)n_decode);
    for (int m = 0; m < x->n; m++) {
        const ring_times *t = &all[2 * m + PH_DECODE];
        char head[48] = "";
        if (m == 0) snprintf(head, sizeof head, ", lm head %.1f ms", t->head_ms / per);
        fprintf(stderr, "ring: rank %d per decode token: compute %.1f ms, disk stall %.1f ms, waiting for the ring "
                        "%.1f ms, sending %.1f ms%s; read %.1f MB\n",
                m, t->compute_ms / per, t->stall_ms / per, t->wait_ms / per, t->send_ms / per, head,
                t->bytes_read / 1e6 / per);
    }
}

/* This rank's layers: every window of every round. */
static uint8_t *rank_mask(const sl_ring_plan *p, int rank, int L)
{
    uint8_t *mask = calloc((size_t)L, 1);
    if (!mask) return NULL;
    for (int r = 0; r < p->k; r++) {
        int f;
        sl_ring_plan_window(p, rank, r, &f);
        for (int j = 0; j < p->w[rank] && f + j < L; j++) mask[f + j] = 1;
    }
    return mask;
}

/* Rank 0: tokenize, feed the prompt, then sample and feed one token at a time. */
static int lead(ring_ctx *x, const ring_opts *o, int64_t *n_decode, double *decode_ms, double *prompt_ms,
                int *n_prompt)
{
    ring_lead L = { .n_slots = x->n };
    L.buf = calloc((size_t)L.n_slots, sizeof *L.buf);
    L.req = calloc((size_t)L.n_slots, sizeof *L.req);
    L.rx = malloc(x->msg_bytes);
    bool ok = L.buf && L.req && L.rx;
    for (int i = 0; ok && i < L.n_slots; i++) {
        ok = (L.buf[i] = calloc(1, x->msg_bytes)) != NULL;
        L.req[i] = MPI_REQUEST_NULL;
    }
    int32_t *ids = NULL;
    if (!ok) die("%s", "out of memory");
    int n = sl_cli_tokenize(x->m, o->prompt, strlen(o->prompt), true, false, &ids);
    if (n < 0) die("%s", sl_model_errmsg(x->m));
    if (n == 0) die("%s", "the prompt has no tokens");
    if (n > sl_session_n_ctx(x->s)) die("%s", "the prompt does not fit the context (-c)");
    *n_prompt = n;
    double t0 = sl_now_ms();
    lead_feed(x, &L, ids, n, PH_PROMPT);
    *prompt_ms = sl_now_ms() - t0;
    if (!o->no_display_prompt) { fputs(o->prompt, stdout); fflush(stdout); }
    char piece[2048];
    t0 = sl_now_ms();
    for (long long i = 0; o->n_predict < 0 || i < o->n_predict; i++) {
        if (sl_session_n_past(x->s) >= sl_session_n_ctx(x->s)) {
            fprintf(stderr, "\n[context full: %d tokens]\n", sl_session_n_ctx(x->s));
            break;
        }
        int32_t tok;
        if (sl_session_sample(x->s, &tok)) die("%s", sl_session_errmsg(x->s));
        if (!o->ignore_eos && sl_model_token_is_eog(x->m, tok)) break;
        int len = sl_session_detok(x->s, tok, piece, sizeof piece);
        if (len > 0) { fwrite(piece, 1, (size_t)len, stdout); fflush(stdout); }
        lead_feed(x, &L, &tok, 1, PH_DECODE);
        ++*n_decode;
    }
    *decode_ms = sl_now_ms() - t0;
    putchar('\n');
    fflush(stdout);
    /* the stop goes round once: every rank has seen it when it is back */
    if (x->n > 1) {
        ring_hdr stop = { .cmd = CMD_STOP };
        snprintf(g_wait_what, sizeof g_wait_what, "rank 1 to take the stop");
        MPI_Request rq;
        mpi_check(MPI_Isend(&stop, (int)sizeof stop, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq), "send");
        wait_req(&rq, "send");
        recv_from(x, L.rx, x->n - 1, PH_DECODE);
    }
    free(ids);
    for (int i = 0; i < L.n_slots; i++) free(L.buf[i]);
    free(L.buf);
    free(L.req);
    free(L.rx);
    return 0;
}

static void print_plan(const ring_ctx *x, const unsigned long long *budgets, int L)
{
    fprintf(stderr, "ring: %d ranks, %d layers, k = %d rounds of %d layers;", x->n, L, x->plan.k, x->W);
    if (x->plan.t_s > 0) fprintf(stderr, " predicted %.1f ms/token;", x->plan.t_s * 1e3);
    fprintf(stderr, "\n");
    for (int m = 0; m < x->n; m++) {
        fprintf(stderr, "ring: rank %d: window %d, layers", m, x->plan.w[m]);
        for (int r = 0; r < x->plan.k; r++) {
            int f;
            sl_ring_plan_window(&x->plan, m, r, &f);
            fprintf(stderr, "%s%d-%d", r ? "," : " ", f, f + x->plan.w[m] - 1);
        }
        if (budgets[m]) fprintf(stderr, ", budget %.2f GiB", (double)budgets[m] / (1 << 30));
        fprintf(stderr, "%s\n", m == 0 ? " (+ embedding, lm head, sampling)" : "");
    }
}

static int ring_run(ring_opts *o)
{
    static ring_ctx x;
    MPI_Comm_rank(MPI_COMM_WORLD, &x.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &x.n);
    g_rank = x.rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (x.n > SL_RING_MAX_DEV) {
        if (!x.rank) fprintf(stderr, "sluice run --ring: %d ranks; the ring has at most %d\n", x.n, SL_RING_MAX_DEV);
        return 1;
    }
    if (o->n_budgets && o->n_budgets != x.n) {
        if (!x.rank) fprintf(stderr, "sluice run --ring: --ring-budgets has %d sizes for %d ranks\n", o->n_budgets, x.n);
        return 2;
    }
    const char *fr = getenv("SLUICE_RING_FAIL");   /* RANK:WINDOW: that rank dies there (tests) */
    x.fail_rank = -1;
    if (fr && sscanf(fr, "%d:%d", &x.fail_rank, &x.fail_step) != 2) x.fail_rank = -1;
    x.fail_hang = fr && strstr(fr, ":hang");

    /* the plan: rank 0 decides, everyone gets it (and the budgets a cluster gives) */
    char msg[MSG_LEN] = "";
    static sl_ring_cluster c;
    unsigned long long budgets[SL_RING_MAX_DEV] = { 0 };
    unsigned long long own = o->n_budgets ? o->budgets[x.rank] : o->mo.mp.mem_budget;
    int L = 0;
    {
        sl_ring_model mo;
        double reserve;
        if (sl_ring_model_from_gguf(&mo, &reserve, o->mo.path, &o->mo.mp))
            snprintf(msg, sizeof msg, "%s", sl_last_error());
        else L = mo.n_layers;
    }
    if (all_ok(msg, "reading the model")) return 1;
    bool gather = !strcmp(o->spec, "auto");
    arm();
    if (gather && sl_ring_mpi_cluster(&c, o->profile, (double)own, "sluice run --ring", g_wait_what,
                                      sizeof g_wait_what, false))
        return 1;
    disarm();
    if (!x.rank) {
        const char *dot = strrchr(o->spec, '.');
        if (gather) plan_cluster(&x.plan, &c, NULL, o, x.n, msg, sizeof msg);
        else if (dot && !strcmp(dot, ".json")) plan_cluster(&x.plan, &c, o->spec, o, x.n, msg, sizeof msg);
        else plan_windows(&x.plan, o->spec, x.n, L, msg, sizeof msg);
        if (!msg[0] && (gather || (dot && !strcmp(dot, ".json"))))
            for (int m = 0; m < x.n; m++) budgets[m] = (unsigned long long)c.dev[m].budget;
    }
    if (all_ok(msg, "planning")) return 1;
    arm();
    mpi_check(MPI_Bcast(&x.plan, (int)sizeof x.plan, MPI_BYTE, 0, MPI_COMM_WORLD), "broadcast");
    mpi_check(MPI_Bcast(budgets, x.n, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD), "broadcast");
    disarm();
    if (!own) own = budgets[x.rank];   /* the cluster's figure unless the flags say */
    for (int m = 0; m < x.n; m++) x.W += x.plan.w[m];

    /* every rank opens its part */
    uint8_t *mask = rank_mask(&x.plan, x.rank, L);
    sl_cli_model_opts mo = o->mo;
    mo.mp.layer_mask = mask;
    mo.mp.n_layer_mask = L;
    mo.mp.no_head = x.rank != 0;
    mo.mp.mem_budget = own;
    if (!mask) snprintf(msg, sizeof msg, "out of memory");
    else if (sl_model_open(&x.m, mo.path, &mo.mp)) snprintf(msg, sizeof msg, "%s", sl_last_error());
    else if (sl_session_create(&x.s, x.m) || sl_session_set_sampling(x.s, &o->sp))
        snprintf(msg, sizeof msg, "%s", sl_last_error());
    free(mask);
    unsigned long long got = own;
    if (x.m) {
        const sl_stream_plan *sp = sl_stream_get_plan(sl_model_stream(x.m));
        got = sp->budget;
    }
    arm();
    mpi_check(MPI_Gather(&got, 1, MPI_UNSIGNED_LONG_LONG, budgets, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD),
              "gather");
    disarm();
    int bad = all_ok(msg, "opening the model");
    if (!bad) {
        sl_model_info mi;
        sl_model_get_info(x.m, &mi);
        x.n_embd = mi.n_embd;
        x.n_batch = o->mo.mp.n_batch ? o->mo.mp.n_batch : 64;
        if (x.n_batch > mi.n_ctx) x.n_batch = mi.n_ctx;
        x.off_h = sizeof(ring_hdr) + (((size_t)x.n_batch * sizeof(int32_t) + 63) & ~(size_t)63);
        x.msg_bytes = x.off_h + (size_t)x.n_batch * (size_t)x.n_embd * sizeof(float);
        if (!x.rank) print_plan(&x, budgets, L);
        (void)bytes_since(&x);   /* what open read (pinned layers) is not the run's */
        int64_t n_decode = 0;
        double decode_ms = 0, prompt_ms = 0;
        int n_prompt = 0;
        if (x.rank == 0) lead(&x, o, &n_decode, &decode_ms, &prompt_ms, &n_prompt);
        else follower(&x);
        /* where the time went, on rank 0 */
        static ring_times all[2 * SL_RING_MAX_DEV];
        snprintf(g_wait_what, sizeof g_wait_what, "the others' figures");
        arm();
        mpi_check(MPI_Gather(x.t, (int)sizeof x.t, MPI_BYTE, all, (int)sizeof x.t, MPI_BYTE, 0, MPI_COMM_WORLD),
                  "gather");
        disarm();
        if (!x.rank) {
            fprintf(stderr, "\nprompt: %d tokens in %.1f ms (%.2f tok/s); decode: %lld tokens in %.1f ms (%.2f tok/s)\n",
                    n_prompt, prompt_ms, prompt_ms > 0 ? n_prompt * 1e3 / prompt_ms : 0, (long long)n_decode,
                    decode_ms, decode_ms > 0 ? (double)n_decode * 1e3 / decode_ms : 0);
            if (o->stats) print_stats(&x, all, n_decode, decode_ms);
        }
    }
    sl_session_destroy(x.s);
    sl_model_close(x.m);
    return bad ? 1 : 0;
}

int sl_ring_run_main(int argc, char **argv)
{
    static ring_opts o;
    int r = parse(&o, argc, argv);
    if (r) return r < 0 ? 0 : r;
    /* the watchdog: any wait longer than --ring-timeout ends this rank (and so the run) */
    g_timeout = (unsigned)o.timeout;
    signal(SIGALRM, on_alarm);
    arm();
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "sluice run --ring: MPI_Init failed\n");
        return 1;
    }
    disarm();
    int rc = ring_run(&o);
    snprintf(g_wait_what, sizeof g_wait_what, "the end of the run");
    arm();
    MPI_Finalize();
    disarm();
    return rc;
}
