/* Routed experts of an MoE file, one (layer, expert) at a time.
 *
 * Split (stream mode): an expert cache, a pool of slots each holding one
 * expert's gate/up/down slices (three file ranges widened to the O_DIRECT
 * alignment, read as three jobs into the slot's registered buffer). A
 * request of a layer's experts maps each to its slot (hit) or evicts a slot
 * and queues its reads (miss); the misses of one request go to the loader as
 * one batch ahead of the dense prefetch. Slots wanted by the current request
 * and not yet acquired, held ones and loading ones are never evicted; a miss
 * that finds no slot waits in `pending` and starts when one is released.
 *
 * The pool is not registered as io_uring fixed buffers: the kernel keeps
 * registered pages pinned, and the pressure ladder (sl_stream_set_expert_slots)
 * must be able to give a shrunk pool's pages back with MADV_DONTNEED.
 *
 * Not split (resident, mmap, or experts streamed with their layer): an
 * expert is a slice of the layer unit's 3-D tensors; the layer must be held. */
#include "stream_experts.h"
#include "stream_core.h"
#include "stream_loader.h"
#include "stream_units.h"
#include "../gguf/base/sl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { X_FREE = 0, X_LOADING, X_READY, X_HELD };

/* decay policy: routing counts lose half their weight every 16 tokens,
 * 2^(-1/16) per token (README "Routed experts": halving every token hit
 * like LRU) */
#define SL_EXPERT_DECAY 0.95760328f

typedef struct xslot {
    int32_t key;             /* layer * n_expert + expert, -1 when free */
    int state;
    uint64_t want;           /* generation of the request that wants it (0: none) */
    uint64_t last;           /* last request that used it (LRU) */
    uint8_t *buf;
    int buf_index;           /* registered buffer, or -1 */
    sl_io_job job[3];
    sl_stream_tensor t[3];
    bool pref;               /* read ahead and not requested since */
} xslot;

struct sl_experts {
    int32_t n_layers, n_expert, n_slots;
    int32_t max_slots, step;  /* slots allocated; a pressure step (sl_stream_set_expert_slots) */
    int32_t *rank;           /* [max_slots] scratch of set_expert_slots */
    int policy;
    sl_owned_buf mem;
    xslot *slots;
    int32_t *slot_of;        /* [L * NE] */
    float *freq;             /* [L * NE] routing counts (LFU, decay) */
    uint64_t gen;            /* requests so far */
    int32_t *pending; int32_t n_pending;   /* keys of the current request without a slot */
    uint64_t *hits, *misses; /* [L] */
    uint64_t bytes;
    uint64_t prefetched, prefetch_used;
    double stall_ms;
};

static void set_fail(sl_stream *s, int st) { snprintf(s->err, sizeof s->err, "%s", sl_last_error()); (void)st; }

int32_t sl_stream_n_experts(const sl_stream *s) { return s ? s->um.moe.n_expert : 0; }

/* ---- the cache ------------------------------------------------------------ */

int sl_experts_create(sl_stream *s)
{
    const sl_unit_moe *mo = &s->um.moe;
    struct sl_experts *X = calloc(1, sizeof *X);
    if (!X) return sl_err_set(SL_ENOMEM, "expert cache: out of memory");
    s->ex = X;
    X->n_layers = s->um.n_layers; X->n_expert = mo->n_expert;
    X->n_slots = X->max_slots = s->plan.n_expert_slots;
    /* measured (README "Expert streaming"): decay best or equal on every run */
    X->policy = s->cfg.expert_policy == SL_EVICT_AUTO ? SL_EVICT_DECAY : s->cfg.expert_policy;
    size_t nk = (size_t)X->n_layers * (size_t)X->n_expert;
    X->slots = calloc((size_t)X->n_slots, sizeof *X->slots);
    X->slot_of = malloc(nk * sizeof *X->slot_of);
    X->freq = calloc(nk, sizeof *X->freq);
    X->pending = calloc((size_t)X->n_expert, sizeof *X->pending);
    X->hits = calloc((size_t)X->n_layers, sizeof *X->hits);
    X->misses = calloc((size_t)X->n_layers, sizeof *X->misses);
    X->rank = malloc((size_t)X->n_slots * sizeof *X->rank);
    uint64_t sb = mo->slot_bytes, total = sb * (uint64_t)X->n_slots;
    uint8_t *m = sl_owned_alloc(&X->mem, (size_t)total);
    if (!X->slots || !X->slot_of || !X->freq || !X->pending || !X->hits || !X->misses || !X->rank || !m)
        return sl_err_set(SL_ENOMEM, "expert cache: cannot allocate %d slots of %llu bytes",
                          (int)X->n_slots, (unsigned long long)sb);
    /* pressure steps: an eighth of the pool, at most 64 MiB, at least a slot */
    uint64_t step = ((uint64_t)X->n_slots + 7) / 8, cap = (64ull << 20) / sb;
    if (step > cap) step = cap;
    X->step = step ? (int32_t)step : 1;
    for (size_t k = 0; k < nk; k++) X->slot_of[k] = -1;
    for (int32_t i = 0; i < X->n_slots; i++) {
        xslot *x = &X->slots[i];
        x->key = -1;
        x->buf = m + (uint64_t)i * sb;
        x->buf_index = -1;   /* never registered: see the file's comment */
    }
    return 0;
}

void sl_experts_destroy(sl_stream *s)
{
    struct sl_experts *X = s->ex;
    if (!X) return;
    for (int32_t i = 0; X->slots && s->L && i < X->n_slots; i++)
        if (X->slots[i].state == X_LOADING)
            for (int p = 0; p < 3; p++) sl_loader_wait(s->L, &X->slots[i].job[p]);
    sl_owned_free(&X->mem);
    free(X->slots); free(X->slot_of); free(X->freq); free(X->pending);
    free(X->hits); free(X->misses); free(X->rank);
    free(X);
    s->ex = NULL;
}

void sl_experts_get_stats(const sl_stream *s, sl_stream_stats *out)
{
    const struct sl_experts *X = s->ex;
    for (int32_t l = 0; l < X->n_layers; l++) { out->expert_hits += X->hits[l]; out->expert_misses += X->misses[l]; }
    out->expert_bytes_read = X->bytes;
    out->expert_stall_ms = X->stall_ms;
    out->expert_prefetched = X->prefetched;
    out->expert_prefetch_used = X->prefetch_used;
}

void sl_experts_reset_stats(sl_stream *s)
{
    struct sl_experts *X = s->ex;
    memset(X->hits, 0, (size_t)X->n_layers * sizeof *X->hits);
    memset(X->misses, 0, (size_t)X->n_layers * sizeof *X->misses);
    X->bytes = 0;
    X->prefetched = X->prefetch_used = 0;
    X->stall_ms = 0;
}

/* A loading slot nobody waits for any more becomes ready (or free if its
 * read failed) once its reads are done. */
static void settle(sl_stream *s, xslot *x)
{
    if (x->state != X_LOADING || x->want == s->ex->gen) return;
    for (int p = 0; p < 3; p++) if (!sl_loader_is_done(s->L, &x->job[p])) return;
    bool ok = true;
    for (int p = 0; p < 3; p++) ok = ok && x->job[p].status == 0;
    if (ok) { x->state = X_READY; return; }
    s->ex->slot_of[x->key] = -1;
    x->key = -1; x->state = X_FREE;
}

static double score(const struct sl_experts *X, const xslot *x)
{
    if (X->policy == SL_EVICT_LRU) return (double)x->last;
    return X->freq[x->key];
}

/* A free slot, else the evictable one the policy likes least; -1 if none. */
static int32_t victim(sl_stream *s)
{
    struct sl_experts *X = s->ex;
    int32_t best = -1;
    for (int32_t i = 0; i < X->n_slots; i++) {
        xslot *x = &X->slots[i];
        settle(s, x);
        if (x->state == X_FREE) return i;
        if (x->state != X_READY || x->want == X->gen) continue;
        if (best < 0) { best = i; continue; }
        double a = score(X, x), b = score(X, &X->slots[best]);
        if (a < b || (a == b && x->last < X->slots[best].last)) best = i;
    }
    return best;
}

/* victim(), and when every slot is loading or held: waits for a read that no
 * current request wants (a read-ahead guess of an earlier request) to land,
 * which makes its slot evictable. A guess may take the last slots just before
 * its layer's request; the request must not fail for it. -1 only when every
 * slot is held or wanted by the current request. */
static int32_t victim_wait(sl_stream *s)
{
    struct sl_experts *X = s->ex;
    int32_t i;
    while ((i = victim(s)) < 0) {
        xslot *w = NULL;
        for (int32_t j = 0; j < X->n_slots && !w; j++)
            if (X->slots[j].state == X_LOADING && X->slots[j].want != X->gen) w = &X->slots[j];
        if (!w) return -1;
        double t0 = sl_now_ms();
        for (int p = 0; p < 3; p++) (void)sl_loader_wait(s->L, &w->job[p]);   /* settle() reads the status */
        double dt = sl_now_ms() - t0;
        X->stall_ms += dt; s->stall_ms += dt;
        settle(s, w);
    }
    return i;
}

/* Slot i takes expert key: its three jobs (not yet submitted) in *jobs. */
static void start_load(sl_stream *s, int32_t i, int32_t key, sl_io_job **jobs)
{
    struct sl_experts *X = s->ex;
    xslot *x = &X->slots[i];
    if (x->key >= 0) X->slot_of[x->key] = -1;
    x->key = key; x->state = X_LOADING; x->want = X->gen; x->last = X->gen; x->pref = false;
    X->slot_of[key] = i;
    const int32_t l = key / X->n_expert, e = key % X->n_expert;
    uint64_t pos = 0, a = s->align;
    for (int p = 0; p < 3; p++) {
        uint64_t off, len;
        sl_unit_map_expert_range(&s->um, l, e, p, &off, &len);
        uint64_t abeg = off / a * a, aend = (off + len + a - 1) / a * a;
        sl_stream_job_init(s, &x->job[p], x->buf + pos, abeg, aend, off + len, -1,
                           sl_loader_fixed(s->L) ? x->buf_index : -1);
        const sl_gguf_tensor *t = s->um.moe.exps[l][p];
        sl_stream_tensor *st = &x->t[p];
        jobs[p] = &x->job[p];
        if (!t) { memset(st, 0, sizeof *st); continue; }   /* a fused gate|up's absent up: a 0-byte job */
        st->name = t->name; st->type = t->type; st->n_dims = 2;
        st->ne[0] = t->ne[0]; st->ne[1] = t->ne[1]; st->ne[2] = st->ne[3] = 1;
        st->nbytes = len;
        st->data = x->buf + pos + (off - abeg);
        X->bytes += x->job[p].len;
        pos += s->um.moe.part_cap[p];
    }
}

/* Pending misses get the slots that have come free, as one batch. */
static void start_pending(sl_stream *s)
{
    struct sl_experts *X = s->ex;
    sl_io_job *jobs[3 * 64];
    int nj = 0;
    while (X->n_pending > 0 && nj + 3 <= (int)(sizeof jobs / sizeof jobs[0])) {
        int32_t i = victim(s);
        if (i < 0) break;
        int32_t key = X->pending[0];
        memmove(X->pending, X->pending + 1, (size_t)--X->n_pending * sizeof *X->pending);
        start_load(s, i, key, jobs + nj);
        nj += 3;
    }
    if (nj) sl_loader_submit_front(s->L, jobs, nj);
}

static int cache_request(sl_stream *s, int32_t l, const int32_t *ex, int32_t n)
{
    struct sl_experts *X = s->ex;
    X->gen++;
    X->n_pending = 0;
    size_t nk = (size_t)X->n_layers * (size_t)X->n_expert;
    if (X->policy == SL_EVICT_DECAY && X->gen % (uint64_t)X->n_layers == 0)   /* once per token */
        for (size_t k = 0; k < nk; k++) X->freq[k] *= SL_EXPERT_DECAY;
    sl_io_job *stack_jobs[3 * 16], **jobs = stack_jobs;
    if (n > 16 && !(jobs = malloc((size_t)n * 3 * sizeof *jobs)))
        return sl_err_set(SL_ENOMEM, "expert request: out of memory");
    int nj = 0;
    for (int32_t j = 0; j < n; j++) {
        int32_t key = l * X->n_expert + ex[j];
        X->freq[key] += 1.0f;
        int32_t i = X->slot_of[key];
        if (i >= 0) {
            X->hits[l]++;
            if (X->slots[i].pref) { X->prefetch_used++; X->slots[i].pref = false; }
            X->slots[i].want = X->gen; X->slots[i].last = X->gen;
            continue;
        }
        X->misses[l]++;
        if ((i = victim(s)) < 0) { X->pending[X->n_pending++] = key; continue; }
        start_load(s, i, key, jobs + nj);
        nj += 3;
    }
    if (nj) sl_loader_submit_front(s->L, jobs, nj);
    if (jobs != stack_jobs) free(jobs);
    return 0;
}

static int cache_prefetch(sl_stream *s, int32_t l, const int32_t *ex, int32_t n)
{
    struct sl_experts *X = s->ex;
    if (X->n_pending > 0) return 0;   /* the current request waits for slots: they are its */
    sl_io_job *jobs[3 * 16];
    int nj = 0, started = 0;
    for (int32_t j = 0; j < n && nj + 3 <= (int)(sizeof jobs / sizeof jobs[0]); j++) {
        int32_t key = l * X->n_expert + ex[j];
        if (X->slot_of[key] >= 0) continue;
        int32_t i = victim(s);   /* never a slot the current request wants */
        if (i < 0) break;
        start_load(s, i, key, jobs + nj);
        X->slots[i].pref = true;
        nj += 3;
        started++;
    }
    if (nj) sl_loader_submit_next(s->L, jobs, nj);
    X->prefetched += (uint64_t)started;
    return started;
}

static int cache_acquire(sl_stream *s, int32_t l, int32_t e, sl_stream_view *view)
{
    struct sl_experts *X = s->ex;
    int32_t key = l * X->n_expert + e, i = X->slot_of[key];
    if (i < 0) {
        /* not requested (or still pending): a request of one, now */
        bool pend = false;
        for (int32_t j = 0; j < X->n_pending; j++) pend = pend || X->pending[j] == key;
        if (!pend) {
            X->misses[l]++;
            X->freq[key] += 1.0f;
        }
        if ((i = victim_wait(s)) < 0)
            return sl_err_set(SL_EBUSY, "expert acquire: no free slot for layer %d expert %d "
                              "(all %d expert slots held or wanted)", (int)l, (int)e, (int)X->n_slots);
        for (int32_t j = 0; j < X->n_pending; j++)
            if (X->pending[j] == key) {
                memmove(X->pending + j, X->pending + j + 1, (size_t)(X->n_pending - j - 1) * sizeof *X->pending);
                X->n_pending--;
                break;
            }
        sl_io_job *jobs[3];
        start_load(s, i, key, jobs);
        sl_loader_submit_front(s->L, jobs, 3);
    }
    xslot *x = &X->slots[i];
    if (x->state == X_HELD)
        return sl_err_set(SL_EINVAL, "expert acquire: layer %d expert %d is already acquired", (int)l, (int)e);
    if (x->state == X_LOADING) {
        double t0 = sl_now_ms();
        int st = 0;
        const char *msg = "";
        for (int p = 0; p < 3; p++) {
            int r = sl_loader_wait(s->L, &x->job[p]);
            if (r && !st) { st = r; msg = x->job[p].err; }
        }
        double dt = sl_now_ms() - t0;
        X->stall_ms += dt; s->stall_ms += dt;
        if (st) {
            /* nothing of a half-read expert stays */
            sl_err_set(st, "layer %d expert %d: %s", (int)l, (int)e, msg);
            X->slot_of[key] = -1;
            x->key = -1; x->state = X_FREE; x->want = 0;
            return st;
        }
    }
    x->state = X_HELD;
    x->want = 0;
    x->last = X->gen;
    view->unit = l; view->n_tensors = 3; view->tensors = x->t;
    return 0;
}

static int cache_release(sl_stream *s, int32_t l, int32_t e)
{
    struct sl_experts *X = s->ex;
    int32_t i = X->slot_of[l * X->n_expert + e];
    if (i < 0 || X->slots[i].state != X_HELD)
        return sl_err_set(SL_EINVAL, "expert release: layer %d expert %d is not acquired", (int)l, (int)e);
    X->slots[i].state = X_READY;
    start_pending(s);
    return 0;
}

/* ---- the pressure rung: fewer slots ------------------------------------- */

/* Resident bytes of [p, p + len) (whole pages inside it). */
static uint64_t resident_bytes(uint8_t *p, uint64_t len, uint64_t *beg, uint64_t *end)
{
    const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)p + pg - 1) / pg * pg, b = ((uintptr_t)p + len) / pg * pg;
    *beg = a; *end = b > a ? b : a;
    uint64_t n = (*end - *beg) / pg, res = 0;
    unsigned char vec[4096];
    for (uint64_t i = 0; i < n; i += sizeof vec) {
        uint64_t c = n - i < sizeof vec ? n - i : sizeof vec;
        if (mincore((void *)(*beg + i * pg), (size_t)(c * pg), vec)) return 0;
        for (uint64_t j = 0; j < c; j++) res += vec[j] & 1;
    }
    return res * pg;
}

static _Thread_local xslot *g_rank_slots;   /* qsort context */
static _Thread_local const struct sl_experts *g_rank_x;

/* Most valuable first: policy score, then most recent use. */
static int rank_cmp(const void *pa, const void *pb)
{
    const xslot *a = &g_rank_slots[*(const int32_t *)pa], *b = &g_rank_slots[*(const int32_t *)pb];
    double sa = score(g_rank_x, a), sb = score(g_rank_x, b);
    if (sa != sb) return sa > sb ? -1 : 1;
    return a->last > b->last ? -1 : a->last < b->last;
}

static void plan_slots(sl_stream *s, int32_t n)
{
    const sl_unit_moe *mo = &s->um.moe;
    sl_stream_plan *p = &s->plan;
    double total = (double)s->um.n_layers * (double)mo->n_expert;
    p->n_expert_slots = n;
    p->expected_hit_rate = total > 0 ? (double)n / total : 0;
    uint64_t per = (uint64_t)((double)mo->n_expert_used * (double)mo->slice_bytes_sum * (1.0 - p->expected_hit_rate));
    p->streamed_bytes_per_token = p->streamed_bytes_per_token - p->expert_bytes_per_token + per;
    p->expert_bytes_per_token = per;
}

int32_t sl_stream_expert_slots(const sl_stream *s, int32_t *max_slots, int32_t *step)
{
    const struct sl_experts *X = s ? s->ex : NULL;
    if (max_slots) *max_slots = X ? X->max_slots : 0;
    if (step) *step = X ? X->step : 0;
    return X ? X->n_slots : 0;
}

int sl_stream_set_expert_slots(sl_stream *s, int32_t n, uint64_t *freed)
{
    if (freed) *freed = 0;
    if (!s) return SL_EINVAL;
    struct sl_experts *X = s->ex;
    int rc = 0;
    if (!X) rc = sl_err_set(SL_ENOSYS, "set_expert_slots: no expert cache (experts not streamed one by one)");
    else if (n < 1 || n > X->max_slots)
        rc = sl_err_set(SL_EINVAL, "set_expert_slots: %d outside 1..%d", (int)n, (int)X->max_slots);
    for (int32_t i = 0; !rc && i < X->n_slots; i++)
        if (X->slots[i].state == X_HELD)
            rc = sl_err_set(SL_EBUSY, "set_expert_slots: layer %d expert %d is acquired",
                            (int)(X->slots[i].key / X->n_expert), (int)(X->slots[i].key % X->n_expert));
    if (rc) { set_fail(s, rc); return rc; }
    if (n >= X->n_slots) {   /* grow: the new slots are free; their pages come on first read */
        X->n_slots = n;
        plan_slots(s, n);
        return 0;
    }
    /* reads in flight finish first (a read must not land in a page given back) */
    int32_t nr = 0;
    for (int32_t i = 0; i < X->n_slots; i++) {
        xslot *x = &X->slots[i];
        if (x->state == X_LOADING) {
            for (int p = 0; p < 3; p++) sl_loader_wait(s->L, &x->job[p]);
            x->want = 0;
            settle(s, x);
        }
        if (x->state == X_READY) X->rank[nr++] = i;
    }
    /* the policy keeps the n most valuable; the rest are evicted */
    g_rank_slots = X->slots; g_rank_x = X;
    qsort(X->rank, (size_t)nr, sizeof *X->rank, rank_cmp);
    for (int32_t r = n; r < nr; r++) {
        xslot *x = &X->slots[X->rank[r]];
        X->slot_of[x->key] = -1;
        x->key = -1; x->state = X_FREE; x->want = 0;
    }
    /* survivors past the new end move down into free slots */
    const uint64_t sb = s->um.moe.slot_bytes;
    int32_t j = 0;
    for (int32_t i = n; i < X->n_slots; i++) {
        xslot *x = &X->slots[i];
        if (x->state == X_FREE) continue;
        while (X->slots[j].state != X_FREE) j++;   /* < n: at most n survivors */
        xslot *y = &X->slots[j];
        uint8_t *buf = y->buf;
        int bi = y->buf_index;
        memcpy(buf, x->buf, (size_t)sb);
        *y = *x;
        y->buf = buf; y->buf_index = bi;
        for (int p = 0; p < 3; p++)
            if (x->t[p].data) y->t[p].data = buf + ((const uint8_t *)x->t[p].data - x->buf);
        X->slot_of[y->key] = j;
        x->key = -1; x->state = X_FREE; x->want = 0;
    }
    /* pending misses keep waiting for a slot of the smaller pool */
    uint64_t beg, end;
    uint64_t res = resident_bytes(X->slots[n].buf, (uint64_t)(X->n_slots - n) * sb, &beg, &end);
    if (end > beg) (void)madvise((void *)beg, (size_t)(end - beg), MADV_DONTNEED);
    if (freed) *freed = res;
    X->n_slots = n;
    plan_slots(s, n);
    return 0;
}

/* ---- not split: slices of the held layer unit ---------------------------- */

static int slice_acquire(sl_stream *s, int32_t l, int32_t e, sl_stream_view *view)
{
    const sl_unit_moe *mo = &s->um.moe;
    const sl_unit *un = &s->um.units[l];
    if (!un->acquired)
        return sl_err_set(SL_EINVAL, "expert acquire: layer %d expert %d: its layer unit is not "
                          "acquired (experts are streamed with their layer)", (int)l, (int)e);
    size_t nk = (size_t)s->um.n_layers * (size_t)mo->n_expert, key = (size_t)l * (size_t)mo->n_expert + (size_t)e;
    if (!s->xviews) {
        s->xviews = calloc(nk * 3, sizeof *s->xviews);
        s->xheld = calloc(nk, sizeof *s->xheld);
        if (!s->xviews || !s->xheld) return sl_err_set(SL_ENOMEM, "expert acquire: out of memory");
    }
    if (s->xheld[key])
        return sl_err_set(SL_EINVAL, "expert acquire: layer %d expert %d is already acquired", (int)l, (int)e);
    sl_stream_tensor *t = s->xviews + key * 3;
    for (int p = 0; p < 3; p++) {
        const sl_gguf_tensor *g = mo->exps[l][p];
        const sl_stream_tensor *lt = NULL;
        if (!g) { memset(&t[p], 0, sizeof t[p]); continue; }   /* a fused gate|up's absent up */
        for (uint32_t i = 0; i < un->n_tensors && !lt; i++)
            if (un->tensors[i].name == g->name) lt = &un->tensors[i];
        if (!lt || !lt->data)
            return sl_err_set(SL_ENOENT, "expert acquire: layer %d: '%s' is not in its unit", (int)l, g->name);
        uint64_t sl = g->nbytes / g->ne[2];
        t[p] = *lt;
        t[p].n_dims = 2; t[p].ne[2] = 1; t[p].nbytes = sl;
        t[p].data = (const uint8_t *)lt->data + (uint64_t)e * sl;
    }
    s->xheld[key] = true;
    view->unit = l; view->n_tensors = 3; view->tensors = t;
    return 0;
}

/* ---- public -------------------------------------------------------------- */

static int check(sl_stream *s, int32_t l, int32_t e, const char *what)
{
    if (s->um.moe.n_expert == 0)
        return sl_err_set(SL_EINVAL, "%s: the model has no routed experts", what);
    if (l < 0 || l >= s->um.n_layers || e < 0 || e >= s->um.moe.n_expert)
        return sl_err_set(SL_EINVAL, "%s: layer %d expert %d out of range (%d layers x %d experts)", what,
                          (int)l, (int)e, (int)s->um.n_layers, (int)s->um.moe.n_expert);
    if (!s->um.moe.exps[l][0])
        return sl_err_set(SL_EINVAL, "%s: layer %d has no routed experts (a dense layer)", what, (int)l);
    return 0;
}

int sl_stream_expert_request(sl_stream *s, int32_t layer, const int32_t *experts, int32_t n)
{
    if (!s) return SL_EINVAL;
    int rc = 0;
    if (n < 0 || n > s->um.moe.n_expert || (n > 0 && !experts))
        rc = sl_err_set(SL_EINVAL, "expert request: %d experts", (int)n);
    for (int32_t j = 0; !rc && j < n; j++) {
        rc = check(s, layer, experts[j], "expert request");
        for (int32_t i = 0; !rc && i < j; i++)
            if (experts[i] == experts[j])
                rc = sl_err_set(SL_EINVAL, "expert request: layer %d expert %d twice", (int)layer, (int)experts[j]);
    }
    if (!rc && s->ex) rc = cache_request(s, layer, experts, n);
    if (rc) set_fail(s, rc);
    return rc;
}

int sl_stream_expert_prefetch(sl_stream *s, int32_t layer, const int32_t *experts, int32_t n)
{
    if (!s) return SL_EINVAL;
    int rc = 0;
    if (n < 0 || n > s->um.moe.n_expert || (n > 0 && !experts))
        rc = sl_err_set(SL_EINVAL, "expert prefetch: %d experts", (int)n);
    for (int32_t j = 0; !rc && j < n; j++) rc = check(s, layer, experts[j], "expert prefetch");
    if (rc) { set_fail(s, rc); return rc; }
    return s->ex ? cache_prefetch(s, layer, experts, n) : 0;
}

int sl_stream_expert_acquire_sized(sl_stream *s, int32_t layer, int32_t expert, sl_stream_view *view,
                                   size_t size)
{
    if (!s || !view) return SL_EINVAL;
    sl_stream_view full;
    int rc = sl_struct_check(size, SL_STREAM_VIEW_MIN_SIZE, sizeof full, "sl_stream_view");
    if (!rc) rc = check(s, layer, expert, "expert acquire");
    if (!rc) rc = s->ex ? cache_acquire(s, layer, expert, &full) : slice_acquire(s, layer, expert, &full);
    if (rc) { set_fail(s, rc); return rc; }
    s->acquires++;
    memcpy(view, &full, size);
    return 0;
}

int sl_stream_expert_release(sl_stream *s, int32_t layer, int32_t expert)
{
    if (!s) return SL_EINVAL;
    int rc = check(s, layer, expert, "expert release");
    if (!rc && s->ex) rc = cache_release(s, layer, expert);
    else if (!rc) {
        size_t key = (size_t)layer * (size_t)s->um.moe.n_expert + (size_t)expert;
        if (!s->xheld || !s->xheld[key])
            rc = sl_err_set(SL_EINVAL, "expert release: layer %d expert %d is not acquired", (int)layer,
                            (int)expert);
        else s->xheld[key] = false;
    }
    if (rc) set_fail(s, rc);
    return rc;
}

int sl_stream_expert_ready(sl_stream *s, int32_t layer, int32_t expert)
{
    if (!s) return SL_EINVAL;
    int rc = check(s, layer, expert, "expert ready");
    if (rc) { set_fail(s, rc); return rc; }
    struct sl_experts *X = s->ex;
    if (!X) return 1;
    int32_t i = X->slot_of[layer * X->n_expert + expert];
    if (i < 0) return 0;
    xslot *x = &X->slots[i];
    if (x->state != X_LOADING) return 1;
    for (int p = 0; p < 3; p++) if (!sl_loader_is_done(s->L, &x->job[p])) return 0;
    return 1;
}

int sl_stream_expert_layer_stats(const sl_stream *s, int32_t layer, uint64_t *hits, uint64_t *misses)
{
    if (!s || !hits || !misses || layer < 0 || layer >= s->um.n_layers) return SL_EINVAL;
    *hits = s->ex ? s->ex->hits[layer] : 0;
    *misses = s->ex ? s->ex->misses[layer] : 0;
    return 0;
}
