/* libmicrohttpd front: one thread per connection (a generation blocks only
 * its own connection; serve_guard.c caps them and enforces deadlines).
 * Routes, API key and body limit are checked from the header, before any
 * body is read; errors are OpenAI error objects; server-sent events; and
 * cancellation: while a request waits, its socket is polled. A reset (or a
 * failed SSE write) cancels the job; end of file alone is a half-close, legal
 * once the request is complete, so it is answered with an interim
 * "100 Continue" (HTTP/1.1), which a peer that closed entirely answers with a
 * reset. */
#include "serve.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "../../../gguf/base/sl_internal.h"

struct sl_srv_http {
    struct MHD_Daemon *d;
    sl_srv *e;
    sl_srv_http_config c;
    sl_srv_guard *g;
    long long created;
};

typedef struct conn {
    char *body;
    size_t len, cap;
    bool too_big;
    bool probed;            /* the half-close probe was sent */
    const struct route *rt;
} conn;

/* Endpoints and the methods each allows (the Allow header of OPTIONS and 405). */
typedef struct route { const char *path, *allow; bool post, open; } route;
#define GET_ALLOW "GET, HEAD, OPTIONS"
#define POST_ALLOW "POST, OPTIONS"
static const route routes[] = {
    { "/health", GET_ALLOW, false, true },   /* open: no API key */
    { "/metrics", GET_ALLOW, false, false },
    { "/v1/models", GET_ALLOW, false, false },
    { "/v1/completions", POST_ALLOW, true, false },
    { "/v1/chat/completions", POST_ALLOW, true, false },
};

/* SSE response state (connection thread only; job fields under the lock). */
typedef struct sse {
    sl_srv_http *h;
    sl_srv_job *job;
    int fd;
    size_t sent;            /* bytes of job->out turned into chunks */
    size_t rsent;           /* bytes of job->reason turned into chunks */
    size_t ei;              /* job->ends[ei] is the first token end past sent */
    size_t li;              /* the first token whose log probabilities are not sent */
    char *stage;            /* formatted bytes not yet handed to MHD */
    size_t stage_len, stage_off;
    bool final;
} sse;

/* The client is gone: reset or error. probed NULL: end of file never probes
 * (SSE: the next chunk's write finds a closed peer). */
static bool peer_gone(int fd, bool *probed)
{
    struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return true;
    if ((p.revents & POLLRDHUP) && probed && !*probed) {
        static const char probe[] = "HTTP/1.1 100 Continue\r\n\r\n";
        *probed = true;
        if (send(fd, probe, sizeof probe - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) return true;
    }
    return false;
}

static int conn_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

static enum MHD_Result respond(sl_srv_http *h, struct MHD_Connection *c, unsigned status, char *text,
                               const char *type, const char *allow)
{
    if (!text) { status = 500; text = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}"); }
    if (!text) return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!r) { free(text); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", type);
    if (status == 429) MHD_add_response_header(r, "Retry-After", "1");
    if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    if (allow) MHD_add_response_header(r, "Allow", allow);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    sl_srv_count_http(h->e, (int)status);
    return ok;
}

static enum MHD_Result send_text(sl_srv_http *h, struct MHD_Connection *c, unsigned status, char *text,
                                 const char *type)
{
    return respond(h, c, status, text, type, NULL);
}

static char *error_json(unsigned status, const char *msg, const char *param, const char *code)
{
    const char *type = status == 401 ? "authentication_error" : status == 404 ? "not_found_error"
                     : status == 429 ? "rate_limit_error" : status >= 500 ? "server_error"
                     : "invalid_request_error";
    return sl_srv_error_json(msg, type, param, code);
}

static enum MHD_Result send_error(sl_srv_http *h, struct MHD_Connection *c, unsigned status, const char *msg,
                                  const char *param, const char *code)
{
    return send_text(h, c, status, error_json(status, msg, param, code), "application/json");
}

/* Byte i of s begins a UTF-8 character (is not a continuation byte). */
static bool char_start(const char *s, size_t i) { return ((unsigned char)s[i] & 0xC0) != 0x80; }

/* The "logprobs" of tokens [*from, ...) whose text begins before end, or NULL
 * when the request asked for none; *from moves past them. Lock held. */
static cJSON *logprobs_upto(const sl_srv_http *h, const sl_srv_job *j, size_t *from, size_t end)
{
    if (j->g.logprobs < 0) return NULL;
    size_t i = *from, base = i ? j->ends[i - 1] : 0;
    while (i < j->n_ends && (i ? j->ends[i - 1] : 0) < end) i++;
    cJSON *r = sl_srv_logprobs_json(sl_srv_model(h->e), j->g.chat, j->lps + *from, j->ends + *from, i - *from,
                                    base, j->g.echo ? strlen(j->g.prompt) : 0);
    *from = i;
    return r;
}

/* Formats the next SSE bytes into st->stage; false when nothing is ready. Lock held. */
static bool sse_next_locked(sse *st)
{
    sl_srv_job *j = st->job;
    const char *model = st->h->c.model_name;
    size_t end = j->safe_len;
    if (j->state != SL_SRV_DONE)   /* a chunk ends on a character boundary */
        while (end > st->sent && !char_start(j->out, end)) end--;
    /* one chunk per token: stop at the first token end past what was sent
     * (on a character boundary; text after a stop-string cut is not there) */
    for (; st->ei < j->n_ends && j->ends[st->ei] <= st->sent; st->ei++) {}
    for (size_t i = st->ei; i < j->n_ends && j->ends[i] < end; i++)
        if (char_start(j->out, j->ends[i])) { end = j->ends[i]; break; }
    char *a = NULL, *b = NULL;
    /* Harmony's analysis channel (it comes before the final one) as reasoning_content deltas */
    size_t rend = j->reason_len;
    if (j->state != SL_SRV_DONE)
        while (rend > st->rsent && !char_start(j->reason, rend)) rend--;
    if (rend > st->rsent) {
        a = sl_srv_result_json_r(true, true, j->id, model, st->h->created, NULL, 0, j->reason + st->rsent,
                                 rend - st->rsent, NULL, false, 0, 0, 0, NULL);
        st->rsent = rend;
    } else if (end > st->sent) {
        a = sl_srv_result_json(j->g.chat, true, j->id, model, st->h->created, j->out + st->sent, end - st->sent,
                               NULL, false, 0, 0, 0, logprobs_upto(st->h, j, &st->li, end));
        st->sent = end;
    } else if (j->state == SL_SRV_DONE && !st->final) {
        a = sl_srv_result_json(j->g.chat, true, j->id, model, st->h->created, NULL, 0,
                               j->finish ? j->finish : "stop", false, 0, 0, 0, NULL);
        b = strdup("[DONE]");
        st->final = true;
    } else {
        return false;
    }
    free(st->stage);
    size_t la = a ? strlen(a) : 0, lb = b ? strlen(b) : 0;
    st->stage = malloc(la + lb + 32);
    st->stage_len = st->stage_off = 0;
    if (st->stage) {
        if (a) st->stage_len += (size_t)sprintf(st->stage, "data: %s\n\n", a);
        if (b) st->stage_len += (size_t)sprintf(st->stage + st->stage_len, "data: %s\n\n", b);
    }
    free(a); free(b);
    return true;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    sse *st = cls;
    sl_srv *e = st->h->e;
    for (;;) {
        if (st->stage && st->stage_off < st->stage_len) {
            size_t n = st->stage_len - st->stage_off < max ? st->stage_len - st->stage_off : max;
            memcpy(buf, st->stage + st->stage_off, n);
            st->stage_off += n;
            return (ssize_t)n;
        }
        if (st->final) return MHD_CONTENT_READER_END_OF_STREAM;
        sl_srv_lock(e);
        while (!sse_next_locked(st)) {
            sl_srv_wait(e, st->job, 50);
            if (st->job->state != SL_SRV_DONE && peer_gone(st->fd, NULL)) {
                sl_srv_cancel_locked(e, st->job);
                sl_srv_unlock(e);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
        }
        sl_srv_unlock(e);
        if (!st->stage) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
}

static void sse_free(void *cls)
{
    sse *st = cls;
    sl_srv *e = st->h->e;
    sl_srv_lock(e);
    sl_srv_cancel_locked(e, st->job);   /* no-op once done */
    sl_srv_unref_locked(e, st->job);
    sl_srv_unlock(e);
    free(st->stage);
    free(st);
}

static enum MHD_Result generate(sl_srv_http *h, struct MHD_Connection *c, conn *cn, bool chat, bool http11)
{
    sl_srv_job *j = calloc(1, sizeof *j);
    if (!j) return send_error(h, c, 500, "out of memory", NULL, NULL);
    char err[256];
    const char *param = NULL;
    sl_srv_limits lim = h->c.lim;
    int st = sl_srv_parse(cn->body ? cn->body : "", cn->len, chat, &lim, h->c.tmpl, h->c.bos, h->c.eos,
                          &j->g, err, sizeof err, &param);
    if (st) {
        free(j);
        return send_error(h, c, (unsigned)st, err, param, NULL);
    }
    if (sl_srv_submit(h->e, j) == SL_EBUSY) {
        sl_srv_gen_free(&j->g);
        free(j);
        return send_error(h, c, 429, "the server is busy: request queue full", NULL, NULL);
    }
    int fd = conn_fd(c);
    sl_srv *e = h->e;
    sl_srv_lock(e);
    /* until admitted (or, without streaming, done); a vanished client cancels */
    while (j->state == SL_SRV_QUEUED || (!j->g.stream && j->state == SL_SRV_RUNNING)) {
        sl_srv_wait(e, j, 50);
        if (j->state != SL_SRV_DONE && j->state != SL_SRV_REJECTED && fd >= 0 &&
            peer_gone(fd, http11 ? &cn->probed : NULL)) {
            sl_srv_cancel_locked(e, j);
            sl_srv_unref_locked(e, j);
            sl_srv_unlock(e);
            return MHD_NO;   /* nobody to answer */
        }
    }
    if (j->state == SL_SRV_REJECTED) {
        int status = j->http_status;
        const char *code = j->err_code;
        snprintf(err, sizeof err, "%s", j->err);
        sl_srv_unref_locked(e, j);
        sl_srv_unlock(e);
        return send_error(h, c, (unsigned)status, err, status == 400 ? (chat ? "messages" : "prompt") : NULL, code);
    }
    if (!j->g.stream) {
        char *body = NULL, *text = j->out ? j->out : "";
        size_t len = j->out_len, from = 0;
        if (j->g.echo && (text = malloc(strlen(j->g.prompt) + len + 1))) {
            len = (size_t)sprintf(text, "%s", j->g.prompt);
            memcpy(text + len, j->out ? j->out : "", j->out_len);
            len += j->out_len;
        }
        if (text && strcmp(j->finish, "error") && strcmp(j->finish, "cancelled"))
            body = sl_srv_result_json_r(chat, false, j->id, h->c.model_name, h->created, text, len,
                                        j->g.channels ? (j->reason ? j->reason : "") : NULL, j->reason_len,
                                        j->finish, true, j->n_prompt, j->n_cached, j->n_gen,
                                        logprobs_upto(h, j, &from, j->out_len));
        if (j->g.echo) free(text);
        sl_srv_unref_locked(e, j);
        sl_srv_unlock(e);
        if (!body) return send_error(h, c, 500, "generation failed", NULL, NULL);
        return send_text(h, c, 200, body, "application/json");
    }
    sl_srv_unlock(e);
    sse *ss = calloc(1, sizeof *ss);
    struct MHD_Response *r = NULL;
    if (ss) {
        ss->h = h; ss->job = j; ss->fd = fd;
        if (chat || j->g.echo) {   /* the first chunk names the role, or echoes the prompt */
            const char *first = chat ? "" : j->g.prompt;
            char *a = sl_srv_result_json(chat, true, j->id, h->c.model_name, h->created, first, strlen(first), NULL,
                                         true, 0, 0, 0, NULL);
            if (a && (ss->stage = malloc(strlen(a) + 16)))
                ss->stage_len = (size_t)sprintf(ss->stage, "data: %s\n\n", a);
            free(a);
        }
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, ss, sse_free);
    }
    if (!r) {
        sl_srv_lock(e);
        sl_srv_cancel_locked(e, j);
        sl_srv_unref_locked(e, j);
        sl_srv_unlock(e);
        if (ss) free(ss->stage);
        free(ss);
        return send_error(h, c, 500, "out of memory", NULL, NULL);
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    sl_srv_count_http(e, 200);
    return ok;
}

static bool authorized(const sl_srv_http *h, struct MHD_Connection *c)
{
    if (!h->c.api_key) return true;
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!a || strncasecmp(a, "Bearer ", 7)) return false;   /* scheme names are case-insensitive */
    const char *k = a + 7, *want = h->c.api_key;
    while (*k == ' ') k++;
    size_t lk = strlen(k), lw = strlen(want);
    unsigned diff = lk != lw;
    for (size_t i = 0; i < lw; i++) diff |= (unsigned)(want[i] ^ (i < lk ? k[i] : 0));   /* no early exit */
    return diff == 0;
}

static sl_srv_conn *conn_guard(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* The request's header is in, its body not yet read: everything that can be
 * refused from the header is refused here, so no body is buffered for it. */
static enum MHD_Result on_header(sl_srv_http *h, struct MHD_Connection *c, conn *cn, const char *url,
                                 const char *method)
{
    sl_srv_guard_headers_done(h->g, conn_guard(c));
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strcmp(url, routes[i].path)) cn->rt = &routes[i];
    const route *rt = cn->rt;
    if (!rt) return send_error(h, c, 404, "no such endpoint", NULL, NULL);
    if (!strcmp(method, "OPTIONS"))
        return respond(h, c, 204, strdup(""), "text/plain", rt->allow);
    bool ok = rt->post ? !strcmp(method, "POST") : !strcmp(method, "GET") || !strcmp(method, "HEAD");
    if (!ok)
        return respond(h, c, 405, error_json(405, rt->post ? "use POST" : "use GET", NULL, NULL),
                       "application/json", rt->allow);
    if (!rt->open && !authorized(h, c))
        return send_error(h, c, 401, "invalid or missing API key", NULL, "invalid_api_key");
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > h->c.max_body)
        return send_error(h, c, 413, "the request body is too large", NULL, NULL);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    sl_srv_http *h = cls;
    conn *cn = *con_cls;
    if (!cn) {
        if (!(cn = calloc(1, sizeof *cn))) return MHD_NO;
        *con_cls = cn;
        return on_header(h, c, cn, url, method);
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (cn->too_big || cn->len + n > h->c.max_body) { cn->too_big = true; return MHD_YES; }
        if (cn->len + n + 1 > cn->cap) {
            size_t cap = (cn->len + n + 1) * 2;
            if (cap > h->c.max_body + 1) cap = h->c.max_body + 1;
            char *b = realloc(cn->body, cap);
            if (!b) { cn->too_big = true; return MHD_YES; }
            cn->body = b; cn->cap = cap;
        }
        memcpy(cn->body + cn->len, upload, n);
        cn->len += n;
        cn->body[cn->len] = 0;
        return MHD_YES;
    }
    sl_srv_guard_request_done(h->g, conn_guard(c));
    const route *rt = cn->rt;
    if (cn->too_big) return send_error(h, c, 413, "the request body is too large", NULL, NULL);
    if (!strcmp(rt->path, "/health"))
        return send_text(h, c, 200, strdup("{\"status\":\"ok\"}"), "application/json");
    if (!strcmp(rt->path, "/metrics"))
        return send_text(h, c, 200, sl_srv_metrics(h->e), "text/plain; version=0.0.4");
    if (!strcmp(rt->path, "/v1/models"))
        return send_text(h, c, 200, sl_srv_models_json(h->c.model_name, h->created), "application/json");
    return generate(h, c, cn, !strcmp(rt->path, "/v1/chat/completions"), !strcmp(version, "HTTP/1.1"));
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
    (void)t;
    sl_srv_http *h = cls;
    conn *cn = *con_cls;
    if (cn) { free(cn->body); free(cn); }
    *con_cls = NULL;
    sl_srv_guard_reply_done(h->g, conn_guard(c));
}

static uint32_t ipv4_of(const struct sockaddr *sa)
{
    return sa && sa->sa_family == AF_INET ? ((const struct sockaddr_in *)sa)->sin_addr.s_addr : 0;
}

static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t len)
{
    (void)len;
    const sl_srv_http *h = cls;
    return sl_srv_guard_admit(h->g, ipv4_of(addr)) ? MHD_YES : MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    sl_srv_http *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        int fd = conn_fd(c);
        *socket_context = sl_srv_guard_open(h->g, ipv4_of(ci ? ci->client_addr : NULL), fd);
        if (!*socket_context && fd >= 0) shutdown(fd, SHUT_RDWR);   /* untracked: not served */
    } else {
        sl_srv_guard_close(h->g, *socket_context);
        *socket_context = NULL;
    }
}

int sl_srv_http_start(sl_srv_http **out, sl_srv *engine, const sl_srv_http_config *c, int *port_out)
{
    *out = NULL;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)c->port);
    if (c->port < 0 || c->port > 65535 || inet_pton(AF_INET, c->host, &sa.sin_addr) != 1)
        return sl_err_set(SL_EINVAL, "serve: bad address %s:%d (IPv4 address and port 0..65535)", c->host, c->port);
    sl_srv_http *h = calloc(1, sizeof *h);
    if (!h) return sl_err_set(SL_ENOMEM, "serve: out of memory");
    h->e = engine;
    h->c = *c;
    h->created = (long long)time(NULL);
    int st = sl_srv_guard_create(&h->g, &c->guard);
    if (st) { free(h); return st; }
    /* libmicrohttpd's connection limit backs the guard's up; its idle
     * timeout (which a trickle restarts) only covers a reply the client
     * stops reading: a long generation must not trip it */
    const sl_srv_guard_config *gc = &c->guard;
    h->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, on_accept, h,
                            on_request, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)gc->max_conns,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600, MHD_OPTION_END);
    if (!h->d) {
        sl_srv_guard_destroy(h->g);
        free(h);
        return sl_err_set(SL_EIO, "serve: cannot listen on %s:%d", c->host, c->port);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    *port_out = di ? di->port : c->port;
    *out = h;
    return 0;
}

void sl_srv_http_stop(sl_srv_http *h)
{
    if (!h) return;
    MHD_stop_daemon(h->d);
    sl_srv_guard_destroy(h->g);
    free(h);
}
