/* Session state files: sl_session_save / load / load_prefix (sluice.h).
 *
 * Layout (little-endian, as the host; version 1):
 *   header   struct pc_header (112 bytes), its own hash in the last field
 *   payload  tokens[n_tokens] (int32), logits[n_vocab] (f32, if has_logits),
 *            then per layer: K rows of head 0..n_head_kv-1 (n_tokens rows of
 *            k_row_bytes each), V rows likewise (a recurrent layer has
 *            none); then, for a model with recurrent layers, their state
 *            after the n_tokens (kv.h, F32)
 *   trailer  uint64 hash of the payload
 * Rows are copied through the KV cell layout (kv_cells below: cell type and
 * bytes of one kv head's row at one position), never converted, so a cache
 * of another cell type is a mismatch, not a reinterpretation.
 *
 * Model identity: sl_hash64 of the GGUF header + metadata + tensor table
 * (bytes [0, data_offset)), the file size and the first and last 64 KiB of the
 * tensor data. Not a hash of the whole file: that would read 4.7 GB (~10 s) for
 * an 8B Q4_K at every start, more than the prefill the cache saves. The table
 * pins architecture, tokenizer, hyperparameters, tensor names, types, shapes
 * and offsets; the data samples catch a re-quantization or fine-tune that kept
 * them all. */
#include "session_obj.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../gguf/gguf.h"
#include "../gguf/gguf_type.h"
#include "hash64.h"
#include "../gguf/base/sl_platform.h"
#include "../gguf/base/sl_file.h"

#define PC_MAGIC "SLUICEPC"
#define PC_VERSION 1u
#define PC_SEED_HDR 0x5c1a1ce0u
#define PC_SEED_PAY 0x5c1a1ce1u
#define PC_SEED_MODEL 0x5c1a1ce2u
#define PC_SAMPLE (64u << 10)      /* tensor data bytes hashed at each end */
#define PC_CHUNK (1u << 20)        /* I/O unit for discarded rows and the model hash */

typedef struct pc_header {
    char magic[8];
    uint32_t version, header_bytes;
    uint64_t model_ident;
    uint32_t k_type, v_type;            /* enum sl_ggml_type of the K / V cells */
    uint32_t k_row_bytes, v_row_bytes;  /* one kv head's row at one position */
    uint32_t n_layer, n_head_kv, head_dim, n_vocab;
    uint32_t n_tokens, has_logits;
    uint64_t rng[4];                    /* sampler PRNG */
    uint64_t payload_bytes;
    uint64_t header_hash;               /* of every byte above */
} pc_header;
_Static_assert(sizeof(pc_header) == 112, "pc_header has no padding");

/* The cell layout of the cache: the one place that knows how rows are typed.
 * The rows of one kv head are consecutive (kv.h), so n positions from 0 are
 * n * row_bytes contiguous bytes. */
typedef struct kv_cells { uint32_t type; size_t row_bytes; } kv_cells;

static void kv_cells_of(const sl_kv *kv, bool v, kv_cells *c)
{
    /* the cache's own types (kv.h); a quantized side is stored in its
     * Walsh-Hadamard basis, which type and head_dim determine */
    c->type = (uint32_t)(v ? kv->type_v : kv->type_k);
    c->row_bytes = v ? kv->row_v : kv->row_k;
}

static uint8_t *kv_rows(const sl_kv *kv, bool v, int32_t layer, int32_t head)
{
    return (uint8_t *)(v ? sl_kv_v(kv, layer, head, 0) : sl_kv_k(kv, layer, head, 0));
}

static const char *tname(uint32_t t)
{
    const char *n = sl_gguf_type_name(t);
    return n ? n : "?";
}


static int read_full(int fd, void *buf, size_t n)
{
    uint8_t *b = buf;
    while (n) {
        ssize_t r = read(fd, b, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return r < 0 ? -errno : SL_ETRUNC;
        b += r; n -= (size_t)r;
    }
    return 0;
}

/* ---- model identity ------------------------------------------------------ */

static int hash_range(int fd, uint64_t off, uint64_t n, uint8_t *buf, sl_hash64 *h)
{
    while (n) {
        size_t take = n < PC_CHUNK ? (size_t)n : PC_CHUNK;
        ssize_t r = pread(fd, buf, take, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return r < 0 ? -errno : SL_ETRUNC;
        sl_hash64_update(h, buf, (size_t)r);
        off += (uint64_t)r; n -= (uint64_t)r;
    }
    return 0;
}

static int model_ident(const sl_session *s, uint64_t *out)
{
    sl_model *m = s->m;
    if (m->ident) { *out = m->ident; return 0; }
    const sl_gguf *g = sl_stream_gguf(m->st);
    int fd = open(sl_gguf_shard_at(g, 0)->path, O_RDONLY | O_CLOEXEC);   /* a split model: its first file */
    if (fd < 0) return sl_err_set(SL_EIO, "prompt cache: cannot reopen model %s to name it: %s",
                                  m->path, strerror(errno));
    uint8_t *buf = malloc(PC_CHUNK);
    if (!buf) { close(fd); return sl_err_set(SL_ENOMEM, "prompt cache: out of memory"); }
    sl_hash64 h;
    sl_hash64_init(&h, PC_SEED_MODEL);
    /* a split model: its first file (all metadata) and the span of all of them */
    uint64_t size = sl_gguf_shard_at(g, 0)->file_size, data = sl_gguf_data_offset(g);   /* header + tensor table: [0, data) */
    sl_hash64_update(&h, &size, sizeof size);
    uint64_t span = sl_gguf_file_size(g);
    if (sl_gguf_n_shards(g) > 1) sl_hash64_update(&h, &span, sizeof span);
    uint64_t tail = size - data;
    uint64_t head_n = tail < PC_SAMPLE ? tail : PC_SAMPLE;
    uint64_t tail_n = tail - head_n < PC_SAMPLE ? tail - head_n : PC_SAMPLE;
    int rc = hash_range(fd, 0, data, buf, &h);
    if (!rc) rc = hash_range(fd, data, head_n, buf, &h);
    if (!rc) rc = hash_range(fd, size - tail_n, tail_n, buf, &h);
    free(buf);
    close(fd);
    if (rc) return sl_err_set(SL_EIO, "prompt cache: reading model %s to name it: %s", m->path,
                              rc == SL_ETRUNC ? "file shrank" : strerror(-rc));
    uint64_t id = sl_hash64_final(&h);
    *out = m->ident = id ? id : 1;   /* 0 means "not computed" */
    return 0;
}

/* ---- header -------------------------------------------------------------- */

static int header_of(const sl_session *s, uint32_t n_tokens, bool has_logits, pc_header *h)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, PC_MAGIC, 8);
    h->version = PC_VERSION;
    h->header_bytes = sizeof *h;
    /* a sliding-window layer's ring does not hold positions from 0 */
    uint32_t n_kv_layers = 0;   /* a recurrent layer has no rows (its state follows them) */
    for (int32_t l = 0; l < s->kv.n_layer; l++) n_kv_layers += !sl_kv_rec_layer(&s->kv, l);
    for (int32_t l = 0; l < s->kv.n_layer; l++)
        if (s->kv.cap[l] < s->kv.n_ctx && !sl_kv_rec_layer(&s->kv, l))
            return sl_err_set(SL_EUNSUPPORTED, "prompt cache: layer %d keeps a sliding-window ring (%d of %d "
                              "positions); state files of such models are not supported yet", l,
                              s->kv.cap[l], s->kv.n_ctx);
    int rc = model_ident(s, &h->model_ident);
    if (rc) return rc;
    kv_cells k, v;
    kv_cells_of(&s->kv, false, &k);
    kv_cells_of(&s->kv, true, &v);
    h->k_type = k.type; h->v_type = v.type;
    h->k_row_bytes = (uint32_t)k.row_bytes; h->v_row_bytes = (uint32_t)v.row_bytes;
    h->n_layer = (uint32_t)s->kv.n_layer;
    h->n_head_kv = (uint32_t)s->kv.n_head_kv;
    h->head_dim = (uint32_t)s->kv.head_dim;
    h->n_vocab = (uint32_t)s->m->d.n_vocab;
    h->n_tokens = n_tokens;
    h->has_logits = has_logits;
    memcpy(h->rng, s->smp.s, sizeof h->rng);
    /* sizes come from our own live cache: they fit (it was allocated) */
    h->payload_bytes = (uint64_t)n_tokens * 4u + (has_logits ? (uint64_t)h->n_vocab * 4u : 0) +
                       (uint64_t)n_kv_layers * h->n_head_kv * n_tokens * (k.row_bytes + v.row_bytes) +
                       sl_kv_rec_total(&s->kv);
    h->header_hash = sl_hash64_of(h, offsetof(pc_header, header_hash), PC_SEED_HDR);
    return 0;
}

/* Checks a header read from a file against this session; the message says
 * what differs. n_tokens is bounded by n_ctx, so every size below fits. */
static int header_check(const sl_session *s, const pc_header *h, uint64_t file_size,
                        const char *path)
{
    if (memcmp(h->magic, PC_MAGIC, 8))
        return sl_err_set(SL_EFORMAT, "prompt cache %s: not a Sluice state file (bad magic)", path);
    if (h->version != PC_VERSION || h->header_bytes != sizeof *h)
        return sl_err_set(SL_EVERSION, "prompt cache %s: version %u (header %u bytes); this build reads "
                          "version %u", path, h->version, h->header_bytes, PC_VERSION);
    if (h->header_hash != sl_hash64_of(h, offsetof(pc_header, header_hash), PC_SEED_HDR))
        return sl_err_set(SL_EFORMAT, "prompt cache %s: header checksum mismatch (corrupt file)", path);
    pc_header want;
    int rc = header_of(s, 0, false, &want);
    if (rc) return rc;
    if (h->model_ident != want.model_ident)
        return sl_err_set(SL_EUNSUPPORTED, "prompt cache %s: written for another model file "
                          "(identity %016llx, %s is %016llx)", path, (unsigned long long)h->model_ident,
                          s->m->path, (unsigned long long)want.model_ident);
    if (h->k_type != want.k_type || h->v_type != want.v_type || h->k_row_bytes != want.k_row_bytes ||
        h->v_row_bytes != want.v_row_bytes)
        return sl_err_set(SL_EUNSUPPORTED, "prompt cache %s: KV cells %s/%s (%u/%u bytes per row), this "
                          "session's are %s/%s (%u/%u)", path, tname(h->k_type),
                          tname(h->v_type), h->k_row_bytes, h->v_row_bytes,
                          tname(want.k_type), tname(want.v_type),
                          want.k_row_bytes, want.v_row_bytes);
    if (h->n_layer != want.n_layer || h->n_head_kv != want.n_head_kv || h->head_dim != want.head_dim ||
        h->n_vocab != want.n_vocab)
        return sl_err_set(SL_EUNSUPPORTED, "prompt cache %s: shape %u layers x %u kv heads x %u, vocab %u; "
                          "the model's is %u x %u x %u, vocab %u", path, h->n_layer, h->n_head_kv,
                          h->head_dim, h->n_vocab, want.n_layer, want.n_head_kv, want.head_dim,
                          want.n_vocab);
    if (h->has_logits > 1)
        return sl_err_set(SL_EFORMAT, "prompt cache %s: has_logits = %u", path, h->has_logits);
    if (h->n_tokens < 1 || h->n_tokens > (uint32_t)s->kv.n_ctx)
        return sl_err_set(SL_EUNSUPPORTED, "prompt cache %s: %u tokens; the session holds 1..%d", path,
                          h->n_tokens, s->kv.n_ctx);
    header_of(s, h->n_tokens, h->has_logits, &want);
    if (h->payload_bytes != want.payload_bytes)
        return sl_err_set(SL_EFORMAT, "prompt cache %s: payload of %llu bytes, %u tokens need %llu", path,
                          (unsigned long long)h->payload_bytes, h->n_tokens,
                          (unsigned long long)want.payload_bytes);
    uint64_t total = sizeof *h + h->payload_bytes + 8;
    if (file_size != total)
        return sl_err_set(SL_ETRUNC, "prompt cache %s: %llu bytes, its header says %llu (%s)", path,
                          (unsigned long long)file_size, (unsigned long long)total,
                          file_size < total ? "truncated" : "trailing bytes");
    return 0;
}

/* ---- save ---------------------------------------------------------------- */

typedef struct pc_writer { sl_file_out out; sl_hash64 h; int rc; } pc_writer;

static void put(pc_writer *w, const void *b, size_t n)
{
    if (w->rc) return;
    sl_hash64_update(&w->h, b, n);
    w->rc = sl_file_out_write(&w->out, b, n);
}

int sl_session_save(sl_session *s, const char *path)
{
    sl_err_clear();
    if (!path) return sl_session_fail(s, sl_err_set(SL_EINVAL, "save: path is NULL"));
    int32_t n = s->kv.n_past;
    if (n < 1) return sl_session_fail(s, sl_err_set(SL_EINVAL, "save %s: nothing fed yet", path));
    pc_header h;
    int rc = header_of(s, (uint32_t)n, s->have_logits, &h);
    if (rc) return sl_session_fail(s, rc);
    if (s->kv.rec && s->kv.rec_pos != n)
        return sl_session_fail(s, sl_err_set(SL_EINVAL, "save %s: the recurrent state holds %d positions, the "
                                             "cache %d (a failed feed)", path, s->kv.rec_pos, n));

    pc_writer w = { .rc = 0 };
    if ((rc = sl_file_out_open(&w.out, path, "prompt cache"))) return sl_session_fail(s, rc);
    w.rc = sl_file_out_write(&w.out, &h, sizeof h);
    sl_hash64_init(&w.h, PC_SEED_PAY);
    put(&w, s->hist, (size_t)n * sizeof(int32_t));
    if (h.has_logits) put(&w, s->logits, (size_t)h.n_vocab * sizeof(float));
    for (int32_t l = 0; l < s->kv.n_layer; l++)
        for (int side = 0; side < 2 && !sl_kv_rec_layer(&s->kv, l); side++)
            for (int32_t hd = 0; hd < s->kv.n_head_kv; hd++)
                put(&w, kv_rows(&s->kv, side, l, hd),
                    (size_t)n * (side ? h.v_row_bytes : h.k_row_bytes));
    if (s->kv.rec) put(&w, s->kv.rec, (size_t)sl_kv_rec_total(&s->kv));
    uint64_t sum = sl_hash64_final(&w.h);
    if (!w.rc) w.rc = sl_file_out_write(&w.out, &sum, sizeof sum);
    if (w.rc) {
        sl_file_out_abort(&w.out);
        return sl_session_fail(s, w.rc);
    }
    if ((rc = sl_file_out_commit(&w.out))) return sl_session_fail(s, rc);
    return 0;
}

/* ---- load ---------------------------------------------------------------- */

typedef struct pc_reader { int fd; sl_hash64 h; uint8_t *scratch; } pc_reader;

static int get(pc_reader *r, void *b, size_t n)
{
    int rc = read_full(r->fd, b, n);
    if (!rc) sl_hash64_update(&r->h, b, n);
    return rc;
}

/* Reads and hashes n bytes nobody keeps (rows past the restored prefix). */
static int skip(pc_reader *r, uint64_t n)
{
    while (n) {
        size_t take = n < PC_CHUNK ? (size_t)n : PC_CHUNK;
        int rc = get(r, r->scratch, take);
        if (rc) return rc;
        n -= take;
    }
    return 0;
}

/* want: NULL = the whole state (PRNG too); else restore the common prefix with want[0..n_want). */
static int load(sl_session *s, const char *path, const int32_t *want, int n_want, int32_t *n_reused)
{
    sl_err_clear();
    double t0 = sl_now_ms();
    if (n_reused) *n_reused = 0;
    sl_session_reset(s);
    if (!path) return sl_session_fail(s, sl_err_set(SL_EINVAL, "load: path is NULL"));
    if (want && n_want < 1) return sl_session_fail(s, sl_err_set(SL_EINVAL, "load %s: no tokens to match", path));
    pc_reader r = { .fd = -1 };
    int st = sl_file_open_data(path, "prompt cache", &r.fd);
    if (st) return sl_session_fail(s, st);
    int32_t *toks = NULL;
    int32_t keep = 0;
    pc_header h;
    struct stat sb;
    int rc = fstat(r.fd, &sb) ? sl_err_set(SL_EIO, "prompt cache %s: %s", path, strerror(errno)) : 0;
    if (!rc && (uint64_t)sb.st_size < sizeof h)
        rc = sl_err_set(SL_ETRUNC, "prompt cache %s: %lld bytes, shorter than its header", path,
                        (long long)sb.st_size);
    if (!rc && (rc = read_full(r.fd, &h, sizeof h)))
        rc = sl_err_set(SL_EIO, "prompt cache %s: reading the header: %s", path, strerror(-rc));
    if (!rc) rc = header_check(s, &h, (uint64_t)sb.st_size, path);
    if (rc) goto out;

    r.scratch = malloc(PC_CHUNK);
    toks = malloc((size_t)h.n_tokens * sizeof *toks);
    if (!r.scratch || !toks) { rc = sl_err_set(SL_ENOMEM, "prompt cache: out of memory"); goto out; }
    sl_hash64_init(&r.h, PC_SEED_PAY);
    if ((rc = get(&r, toks, (size_t)h.n_tokens * sizeof *toks))) goto io;
    for (uint32_t i = 0; i < h.n_tokens; i++)
        if (toks[i] < 0 || (uint32_t)toks[i] >= h.n_vocab) {
            rc = sl_err_set(SL_EFORMAT, "prompt cache %s: token %u is %d, outside the vocab", path, i, toks[i]);
            goto out;
        }
    keep = (int32_t)h.n_tokens;
    bool logits = h.has_logits;
    if (want) {
        int32_t c = 0;
        while (c < keep && c < n_want && toks[c] == want[c]) c++;
        if (c < keep || !h.has_logits) logits = false;
        if (c == n_want && !logits) c--;   /* leave one token to compute the logits */
        keep = c;
        /* the recurrent state is of all n_tokens: a shorter prefix cannot use it */
        if (s->kv.rec && keep < (int32_t)h.n_tokens) { keep = 0; logits = false; }
    }
    if (h.has_logits) {
        size_t lb = (size_t)h.n_vocab * sizeof(float);
        if ((rc = logits ? get(&r, s->logits, lb) : skip(&r, lb))) goto io;
    }
    for (uint32_t l = 0; l < h.n_layer; l++)
        for (int side = 0; side < 2 && !sl_kv_rec_layer(&s->kv, (int32_t)l); side++) {
            size_t rb = side ? h.v_row_bytes : h.k_row_bytes;
            for (uint32_t hd = 0; hd < h.n_head_kv; hd++) {
                if ((rc = get(&r, kv_rows(&s->kv, side, (int32_t)l, (int32_t)hd), (size_t)keep * rb))) goto io;
                if ((rc = skip(&r, (uint64_t)(h.n_tokens - (uint32_t)keep) * rb))) goto io;
            }
        }
    if (s->kv.rec) {
        uint64_t rb = sl_kv_rec_total(&s->kv);
        if ((rc = keep ? get(&r, s->kv.rec, (size_t)rb) : skip(&r, rb))) goto io;
    }
    uint64_t sum;
    if ((rc = read_full(r.fd, &sum, sizeof sum))) goto io;
    if (sum != sl_hash64_final(&r.h)) {
        rc = sl_err_set(SL_EFORMAT, "prompt cache %s: payload checksum mismatch (corrupt file)", path);
        goto out;
    }
    memcpy(s->hist, toks, (size_t)keep * sizeof *toks);
    s->kv.n_past = keep;
    if (s->kv.rec && keep) s->kv.rec_pos = keep;
    s->have_logits = logits;
    if (!want) memcpy(s->smp.s, h.rng, sizeof h.rng);
    if (n_reused) *n_reused = keep;
    double t1 = sl_now_ms();
    s->stats.n_restored += keep;
    s->stats.restore_ms += t1 - t0;
    /* the time to first token includes the restore; a full restore with logits
     * has nothing left to feed, so the clock starts here */
    if (keep > 0) s->t_first_feed = t0;
    goto done;
io:
    rc = sl_err_set(rc == SL_ETRUNC ? SL_ETRUNC : SL_EIO, "prompt cache %s: %s", path,
                    rc == SL_ETRUNC ? "file shrank while reading" : strerror(-rc));
out:
    sl_session_reset(s);   /* rows already copied are not trusted */
    sl_session_fail(s, rc);
done:
    free(toks);
    free(r.scratch);
    close(r.fd);
    return rc;
}

int sl_session_load(sl_session *s, const char *path)
{
    return load(s, path, NULL, 0, NULL);
}

int sl_session_load_prefix(sl_session *s, const char *path, const int32_t *ids, int n, int32_t *n_reused)
{
    if (!ids) {
        return sl_session_fail(s, sl_err_set(SL_EINVAL, "load_prefix: ids is NULL"));
    }
    return load(s, path, ids, n, n_reused);
}
