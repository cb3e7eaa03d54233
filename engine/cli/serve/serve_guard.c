/* Connection admission and deadlines for the HTTP front (one thread per
 * connection, so every open socket costs a thread): a cap per client address,
 * a global cap of which the last `headroom` places go only to clients holding
 * no connection yet, and absolute deadlines for a request's header and body
 * (libmicrohttpd's own timeout restarts at every byte, so a trickle defeats
 * it). A watchdog thread shuts down the socket of a request past its
 * deadline; libmicrohttpd then sees end of file and closes the connection. */
#include "serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../../../gguf/base/sl_internal.h"
#include "../../../gguf/base/sl_platform.h"

struct sl_srv_conn {
    uint32_t addr;          /* the client's IPv4 address (network order) */
    int fd;
    int phase;              /* enum below */
    double deadline;        /* sl_now_ms; past it a header/body phase is dropped */
    sl_srv_conn *prev, *next;
};

enum { PH_HEADER, PH_BODY, PH_ACTIVE };

typedef struct client { uint32_t addr; int n; } client;

struct sl_srv_guard {
    sl_srv_guard_config c;
    pthread_mutex_t mu;
    pthread_t watchdog;
    atomic_bool stop;
    int total;
    sl_srv_conn *head;
    client *cl;             /* clients with at least one connection */
    int n_cl, cap_cl;
};

static client *find_client(sl_srv_guard *g, uint32_t addr)
{
    for (int i = 0; i < g->n_cl; i++)
        if (g->cl[i].addr == addr) return &g->cl[i];
    return NULL;
}

bool sl_srv_guard_admit(sl_srv_guard *g, uint32_t addr)
{
    pthread_mutex_lock(&g->mu);
    const client *cl = find_client(g, addr);
    int mine = cl ? cl->n : 0;
    bool ok = mine < g->c.per_client && g->total < g->c.max_conns &&
              (mine == 0 || g->total < g->c.max_conns - g->c.headroom);
    pthread_mutex_unlock(&g->mu);
    return ok;
}

sl_srv_conn *sl_srv_guard_open(sl_srv_guard *g, uint32_t addr, int fd)
{
    sl_srv_conn *k = calloc(1, sizeof *k);
    pthread_mutex_lock(&g->mu);
    client *cl = find_client(g, addr);
    if (k && !cl && g->n_cl == g->cap_cl) {
        int cap = g->cap_cl ? 2 * g->cap_cl : 16;
        client *n = realloc(g->cl, (size_t)cap * sizeof *n);
        if (n) { g->cl = n; g->cap_cl = cap; }
    }
    if (k && !cl && g->n_cl < g->cap_cl) { cl = &g->cl[g->n_cl++]; cl->addr = addr; cl->n = 0; }
    if (!k || !cl) {   /* out of memory: no bookkeeping, the caller drops the connection */
        pthread_mutex_unlock(&g->mu);
        free(k);
        return NULL;
    }
    cl->n++;
    g->total++;
    k->addr = addr;
    k->fd = fd;
    k->phase = PH_HEADER;
    k->deadline = sl_now_ms() + 1000.0 * g->c.header_s;
    k->next = g->head;
    if (g->head) g->head->prev = k;
    g->head = k;
    pthread_mutex_unlock(&g->mu);
    return k;
}

void sl_srv_guard_close(sl_srv_guard *g, sl_srv_conn *k)
{
    if (!k) return;
    pthread_mutex_lock(&g->mu);
    client *cl = find_client(g, k->addr);
    if (cl && --cl->n == 0) *cl = g->cl[--g->n_cl];
    g->total--;
    if (k->prev) k->prev->next = k->next; else g->head = k->next;
    if (k->next) k->next->prev = k->prev;
    pthread_mutex_unlock(&g->mu);
    free(k);
}

static void set_phase(sl_srv_guard *g, sl_srv_conn *k, int phase, int seconds)
{
    if (!k) return;
    pthread_mutex_lock(&g->mu);
    k->phase = phase;
    k->deadline = sl_now_ms() + 1000.0 * seconds;
    pthread_mutex_unlock(&g->mu);
}

void sl_srv_guard_headers_done(sl_srv_guard *g, sl_srv_conn *k) { set_phase(g, k, PH_BODY, g->c.body_s); }
void sl_srv_guard_request_done(sl_srv_guard *g, sl_srv_conn *k) { set_phase(g, k, PH_ACTIVE, 0); }
void sl_srv_guard_reply_done(sl_srv_guard *g, sl_srv_conn *k) { set_phase(g, k, PH_HEADER, g->c.header_s); }

static void *watchdog(void *arg)
{
    sl_srv_guard *g = arg;
    const struct timespec tick = { 0, 200 * 1000000L };
    while (!atomic_load(&g->stop)) {
        pthread_mutex_lock(&g->mu);
        double now = sl_now_ms();
        /* the socket stays open until sl_srv_guard_close (under this lock),
         * so the fd here is still the connection's */
        for (sl_srv_conn *k = g->head; k; k = k->next)
            if (k->phase != PH_ACTIVE && now > k->deadline && k->fd >= 0) {
                shutdown(k->fd, SHUT_RDWR);
                k->fd = -1;
            }
        pthread_mutex_unlock(&g->mu);
        nanosleep(&tick, NULL);
    }
    return NULL;
}

int sl_srv_guard_create(sl_srv_guard **out, const sl_srv_guard_config *c)
{
    *out = NULL;
    if (c->per_client < 1 || c->max_conns < 1 || c->headroom < 0 || c->headroom >= c->max_conns ||
        c->header_s < 1 || c->body_s < 1)
        return sl_err_set(SL_EINVAL, "serve: connection limits %d per client, %d in all (%d kept for new clients), "
                          "deadlines %d s / %d s: out of range", c->per_client, c->max_conns, c->headroom,
                          c->header_s, c->body_s);
    sl_srv_guard *g = calloc(1, sizeof *g);
    if (!g) return sl_err_set(SL_ENOMEM, "serve: out of memory");
    g->c = *c;
    pthread_mutex_init(&g->mu, NULL);
    atomic_init(&g->stop, false);
    if (pthread_create(&g->watchdog, NULL, watchdog, g)) {
        pthread_mutex_destroy(&g->mu);
        free(g);
        return sl_err_set(SL_EIO, "serve: cannot start the deadline thread (%s)", strerror(errno));
    }
    *out = g;
    return 0;
}

void sl_srv_guard_destroy(sl_srv_guard *g)
{
    if (!g) return;
    atomic_store(&g->stop, true);   /* the watchdog sees it within a tick */
    pthread_join(g->watchdog, NULL);
    while (g->head) sl_srv_guard_close(g, g->head);
    free(g->cl);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

bool sl_srv_host_is_loopback(const char *host)
{
    struct in_addr a;
    return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}
