/* conn_guard.c — closes connections that hold the HTTP server without asking anything of it: slow
 * headers, a vanished peer, idle ones when the server is full (conn_guard.h says when and why).
 * Owns: wp_guard (a slot per open connection, the watch thread, the counters). Knows nothing of
 * libmicrohttpd but the descriptor of each connection. */
#include "conn_guard.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#define FD_RESERVE_MIN 256u /* descriptors kept for cache files, workers, libraries */
#define FD_RESERVE_DIV 8u   /* ... or this fraction of the limit, when larger */

typedef enum { SLOT_FREE, SLOT_WAIT_HEADERS, SLOT_IN_REQUEST, SLOT_IDLE } slot_state;

/* A slot's state, since and rdhup are written by the HTTP threads at a request's begin and end without
 * the lock (relaxed atomics: the watch thread reads a snapshot, as it would have read one just before or
 * after the lock); the rest only under it. */
typedef struct {
    int fd;
    atomic_int state;                 /* a slot_state */
    bool closing;                     /* shut down by the guard; MHD has yet to close it */
    atomic_bool rdhup;                /* the peer had hung up at the last tick */
    atomic_uint_least64_t since;      /* when the state began (ns) */
    unsigned next;                    /* free list */
    unsigned char peer[16], peer_len; /* the peer's address (IPv4 as 4 bytes, mapped ones too); 0: unknown */
} slot;

struct wp_guard {
    wp_guard_config cfg;
    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t stop_cv;
    bool stopping;
    pthread_t thread;
    slot *slots;
    unsigned cap, free_head, open, closing;
    struct pollfd *pfd; /* the watch thread's scratch */
    unsigned *pidx;
    uint64_t header_timeouts, peer_gone, evicted, peer_refused;
};

#define NO_SLOT UINT32_MAX

static slot_state state(const slot *s) { return (slot_state)atomic_load_explicit(&s->state, memory_order_relaxed); }
static uint64_t since(const slot *s) { return atomic_load_explicit(&s->since, memory_order_relaxed); }
static bool hung_up(const slot *s) { return atomic_load_explicit(&s->rdhup, memory_order_relaxed); }
static void set_hung_up(slot *s, bool v) { atomic_store_explicit(&s->rdhup, v, memory_order_relaxed); }

/* Open, not shut down yet, and between requests or waiting for headers: what the guard may close. */
static bool outside_request(const slot *s) {
    const slot_state st = state(s);
    return st != SLOT_FREE && st != SLOT_IN_REQUEST && !s->closing;
}

static void slot_shut(wp_guard *g, slot *s) {
    shutdown(s->fd, SHUT_RDWR); /* MHD reads the end of the stream and closes it on its own thread */
    s->closing = true;
    g->closing++;
}

/* Closes the oldest connections outside a request until at most max_connections remain open. */
static void evict_locked(wp_guard *g) {
    while (g->open - g->closing > g->cfg.max_connections) {
        slot *oldest = NULL;
        for (unsigned i = 0; i < g->cap; i++) {
            slot *s = &g->slots[i];
            if (!outside_request(s)) continue;
            if (!oldest || since(s) < since(oldest)) oldest = s;
        }
        if (!oldest) return; /* every connection is inside a request: nothing to take */
        slot_shut(g, oldest);
        g->evicted++;
    }
}

/* One tick: deadlines, then a hung-up check of every connection outside a request. */
static void tick_locked(wp_guard *g) {
    uint64_t now = wp_now_ns();
    uint64_t header_ns = (uint64_t)(g->cfg.header_timeout_s * 1e9);
    uint64_t idle_ns = (uint64_t)(g->cfg.idle_timeout_s * 1e9);
    unsigned n = 0;
    for (unsigned i = 0; i < g->cap; i++) {
        slot *s = &g->slots[i];
        if (!outside_request(s)) continue;
        uint64_t limit = state(s) == SLOT_WAIT_HEADERS ? header_ns : idle_ns + header_ns;
        if (now - since(s) >= limit) {
            slot_shut(g, s);
            g->header_timeouts++;
            continue;
        }
        g->pfd[n] = (struct pollfd){.fd = s->fd, .events = POLLRDHUP};
        g->pidx[n++] = i;
    }
    if (n == 0 || poll(g->pfd, n, 0) <= 0) {
        for (unsigned k = 0; k < n; k++) set_hung_up(&g->slots[g->pidx[k]], false);
        return;
    }
    for (unsigned k = 0; k < n; k++) {
        slot *s = &g->slots[g->pidx[k]];
        bool gone = g->pfd[k].revents & (POLLRDHUP | POLLHUP | POLLERR);
        if (gone && hung_up(s)) { /* two ticks: MHD had time to read whatever came before the FIN */
            slot_shut(g, s);
            g->peer_gone++;
        }
        set_hung_up(s, gone);
    }
}

static void *guard_main(void *arg) {
    wp_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stopping) {
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_nsec += WP_GUARD_TICK_MS * 1000000L;
        if (at.tv_nsec >= 1000000000L) at.tv_sec++, at.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&g->stop_cv, &g->mu, &at);
        if (!g->stopping) tick_locked(g);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

wp_guard *wp_guard_open(const wp_guard_config *cfg, wp_err *err) {
    if (!cfg || !cfg->max_connections || cfg->header_timeout_s <= 0 || cfg->idle_timeout_s <= 0) {
        WP_FAIL(err, 500, "internal", "", "the connection guard needs a limit and timeouts");
        return NULL;
    }
    wp_guard *g = calloc(1, sizeof *g);
    if (!g) {
        WP_FAIL(err, 500, "internal", "", "out of memory");
        return NULL;
    }
    g->cfg = *cfg;
    g->cap = cfg->max_connections + WP_GUARD_SLACK;
    g->slots = calloc(g->cap, sizeof *g->slots);
    g->pfd = calloc(g->cap, sizeof *g->pfd);
    g->pidx = calloc(g->cap, sizeof *g->pidx);
    if (!g->slots || !g->pfd || !g->pidx) {
        WP_FAIL(err, 500, "internal", "", "out of memory for %u connection slots", g->cap);
        free(g->slots), free(g->pfd), free(g->pidx), free(g);
        return NULL;
    }
    for (unsigned i = 0; i < g->cap; i++) g->slots[i].next = i + 1 < g->cap ? i + 1 : NO_SLOT;
    g->free_head = 0;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->stop_cv, NULL);
    if (pthread_create(&g->thread, NULL, guard_main, g) != 0) {
        WP_FAIL(err, 500, "internal", "", "cannot start the connection guard thread");
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->stop_cv);
        free(g->slots), free(g->pfd), free(g->pidx), free(g);
        return NULL;
    }
    pthread_setname_np(g->thread, "wp-conn-guard"); /* top -H, perf and gdb show what each thread is */
    return g;
}

void wp_guard_close(wp_guard *g) {
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->stopping = true;
    pthread_cond_broadcast(&g->stop_cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->stop_cv);
    free(g->slots), free(g->pfd), free(g->pidx), free(g);
}

/* The address bytes of a sockaddr_in / sockaddr_in6 (an IPv4-mapped IPv6 address as its IPv4 four). */
static unsigned char peer_bytes(const void *peer, unsigned char out[16]) {
    if (!peer) return 0;
    const struct sockaddr *sa = peer;
    if (sa->sa_family == AF_INET) {
        memcpy(out, &((const struct sockaddr_in *)peer)->sin_addr, 4);
        return 4;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)peer)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a)) {
            memcpy(out, a->s6_addr + 12, 4);
            return 4;
        }
        memcpy(out, a->s6_addr, 16);
        return 16;
    }
    return 0;
}

/* Lock held: open connections of s's peer, s excluded (a scan: only listeners beyond loopback count
 * peers, and a new connection is rare next to its requests). */
static unsigned peer_count_locked(const wp_guard *g, const slot *s) {
    unsigned n = 0;
    for (unsigned i = 0; i < g->cap; i++) {
        const slot *o = &g->slots[i];
        if (o != s && state(o) != SLOT_FREE && !o->closing && o->peer_len == s->peer_len &&
            !memcmp(o->peer, s->peer, s->peer_len))
            n++;
    }
    return n;
}

void *wp_guard_conn_open(wp_guard *g, int fd, const void *peer) {
    if (!g) return NULL;
    pthread_mutex_lock(&g->mu);
    if (g->free_head == NO_SLOT) { /* MHD's own limit keeps this from happening */
        pthread_mutex_unlock(&g->mu);
        shutdown(fd, SHUT_RDWR);
        return NULL;
    }
    slot *s = &g->slots[g->free_head];
    g->free_head = s->next;
    s->fd = fd;
    s->closing = false;
    s->next = NO_SLOT;
    s->peer_len = 0;
    set_hung_up(s, false);
    atomic_store_explicit(&s->since, wp_now_ns(), memory_order_relaxed);
    atomic_store_explicit(&s->state, SLOT_WAIT_HEADERS, memory_order_relaxed);
    g->open++;
    if (g->cfg.per_peer && (s->peer_len = peer_bytes(peer, s->peer)) && peer_count_locked(g, s) >= g->cfg.per_peer) {
        slot_shut(g, s);
        g->peer_refused++;
    }
    evict_locked(g);
    pthread_mutex_unlock(&g->mu);
    return s;
}

void wp_guard_conn_close(wp_guard *g, void *token) {
    slot *s = token;
    if (!g || !s) return;
    pthread_mutex_lock(&g->mu);
    if (s->closing) g->closing--;
    g->open--;
    atomic_store_explicit(&s->state, SLOT_FREE, memory_order_relaxed);
    s->closing = false;
    s->next = g->free_head;
    g->free_head = (unsigned)(s - g->slots);
    pthread_mutex_unlock(&g->mu);
}

/* A request's begin or end, on its HTTP thread: no lock (the slot's atomics). */
static void set_state(wp_guard *g, slot *s, slot_state st) {
    if (!g || !s) return;
    atomic_store_explicit(&s->since, wp_now_ns(), memory_order_relaxed);
    set_hung_up(s, false);
    atomic_store_explicit(&s->state, st, memory_order_relaxed);
}

void wp_guard_request_begin(wp_guard *g, void *token) { set_state(g, token, SLOT_IN_REQUEST); }
void wp_guard_request_end(wp_guard *g, void *token) { set_state(g, token, SLOT_IDLE); }

void wp_guard_stats_get(wp_guard *g, wp_guard_stats *out) {
    memset(out, 0, sizeof *out);
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    out->open = g->open;
    out->header_timeouts = g->header_timeouts;
    out->peer_refused = g->peer_refused;
    out->peer_gone = g->peer_gone;
    out->evicted = g->evicted;
    pthread_mutex_unlock(&g->mu);
}

unsigned wp_guard_connections_for_nofile(unsigned long *nofile) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        if (nofile) *nofile = 0;
        return 0;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit raised = {.rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl.rlim_cur = rl.rlim_max;
    }
    unsigned long lim = rl.rlim_cur == RLIM_INFINITY ? 1ul << 20 : (unsigned long)rl.rlim_cur;
    if (nofile) *nofile = lim;
    unsigned long reserve = lim / FD_RESERVE_DIV > FD_RESERVE_MIN ? lim / FD_RESERVE_DIV : FD_RESERVE_MIN;
    if (lim <= reserve + WP_GUARD_SLACK) return 0;
    unsigned long n = lim - reserve - WP_GUARD_SLACK;
    return n > WP_GUARD_MAX_CONNECTIONS ? WP_GUARD_MAX_CONNECTIONS : (unsigned)n;
}
