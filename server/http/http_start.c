/* http_start.c — wp_http's start and stop: the address, the transport (connection limit and its guard, Unix
 * socket, TLS), the daemons and their event loops, the workers, the graceful stop; and the counters.
 * Owns: wp_http's life, from wp_http_start to wp_http_stop. The requests themselves are http.c's. */
#include "http_impl.h"

#include "listen.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Limits that are not in wp_http_config: fixed by this module, named here. */
#define WP_HTTP_CONNECTION_TIMEOUT_S 60u /* idle connection timeout (default of cfg.idle_timeout_s) */
#define WP_HTTP_HEADER_TIMEOUT_S 10u     /* default of cfg.header_timeout_s */
#define WP_HTTP_PER_IP_MIN 64u           /* beyond loopback, one peer may hold max_connections / 8, at least this */
#define WP_HTTP_LISTEN_BACKLOG 4096      /* accepted by the kernel before libmicrohttpd takes them */
/* libmicrohttpd's per-connection pool (headers + read buffer) when the config says 0. A body arrives in
 * reads of about half of it, and libmicrohttpd 0.9.75 clears the whole pool between the requests of a
 * keep-alive connection (about 25 us per MiB): 10 % of a small request's CPU at 256 KiB. On a 2-core
 * machine 64 KiB served 42k small reduces a second against 35k at 256 KiB, and a 256 MiB upload took
 * 0.25-0.28 s against 0.18-0.29 s (an earlier measurement: 360 against 285 ms). */
#define WP_HTTP_DEFAULT_CONN_MEMORY (64u * 1024u)
#define WP_HTTP_MIN_CONN_MEMORY (16u * 1024u)
#define WP_HTTP_STOP_GRACE_MS 3000 /* wp_http_stop waits this long for resumed replies to go out */
#define WP_HTTP_DEFAULT_THREADS 4  /* used when a config field is 0 */
#define WP_HTTP_DEFAULT_WORKERS 4
#define WP_HTTP_DEFAULT_MAX_BODY (64u << 20)
#define WP_HTTP_DEFAULT_MAX_QUEUE 256

/* ---------- start / stop ---------- */

/* libmicrohttpd's logger: keeps its last message while a daemon starts, for start_daemon's error. */
static void on_log(void *cls, const char *fmt, va_list ap) {
    wp_http *h = cls;
    if (atomic_load(&h->starting)) vsnprintf(h->start_log, sizeof h->start_log, fmt, ap);
}

/* host "127.0.0.1", "::1", "[::1]" or a name → a socket address with port. */
static int parse_addr(const char *host, int port, struct sockaddr_storage *out, wp_err *err) {
    char name[256];
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']') host++, n -= 2;
    if (n == 0 || n >= sizeof name) return WP_FAIL(err, 400, "bad_listen", "host", "bad listen host");
    memcpy(name, host, n);
    name[n] = 0;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(name, service, &hints, &res);
    if (rc != 0 || !res)
        return WP_FAIL(err, 400, "bad_listen", "host", "cannot resolve %s: %s", name, gai_strerror(rc));
    memset(out, 0, sizeof *out);
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

static void workers_join(wp_http *h) {
    for (int i = 0; i < h->workers_started; i++) pthread_join(h->workers[i], NULL);
    h->workers_started = 0;
}

static void http_free(wp_http *h) {
    while (h->idle_calls) {
        wp_call *c = h->idle_calls;
        h->idle_calls = c->next;
        http_call_destroy(c);
    }
    pthread_mutex_destroy(&h->calls_mu);
    pthread_mutex_destroy(&h->mu);
    sem_destroy(&h->work_sem);
    pthread_cond_destroy(&h->idle_cv);
    free(h->workers);
    free(h->daemons);
    free(h->loops);
    free(h->quiesced_fd);
    free(h);
}

static bool is_loopback(const struct sockaddr_storage *a) {
    if (a->ss_family == AF_INET) return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    if (a->ss_family == AF_INET6) {
        const struct in6_addr *v6 = &((const struct sockaddr_in6 *)a)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(v6) || (IN6_IS_ADDR_V4MAPPED(v6) && v6->s6_addr[12] == 127);
    }
    return false;
}

/* close_fd: the Unix socket is still ours (MHD never took it, or gave it back by quiescing). */
static void transport_release(wp_http *h, bool close_fd) {
    wp_guard_close(h->guard); /* after MHD stopped: no connection is left to watch */
    h->guard = NULL;
    if (h->unix_fd >= 0) {
        if (close_fd) close(h->unix_fd);
        wp_listen_unix_remove(h->cfg.unix_path, h->unix_ino);
    }
    h->unix_fd = -1;
    if (h->tls_key) explicit_bzero(h->tls_key, strlen(h->tls_key));
    free(h->tls_key);
    free(h->tls_cert);
    h->tls_key = h->tls_cert = NULL;
}

/* The connection limit and its guard, the Unix socket, the TLS copies. */
static int transport_prepare(wp_http *h, const struct sockaddr_storage *addr, wp_err *err) {
    wp_http_config *c = &h->cfg;
    unsigned long nofile = 0;
    unsigned fit = wp_guard_connections_for_nofile(&nofile);
    if (c->max_connections == 0) c->max_connections = fit ? fit : 64;
    if (fit && c->max_connections > fit)
        return WP_FAIL(err, 400, "bad_limit", "max_connections",
                       "--max-connections %u is more than the %u that RLIMIT_NOFILE (%lu) leaves room for",
                       c->max_connections, fit, nofile);
    if (c->header_timeout_s == 0) c->header_timeout_s = WP_HTTP_HEADER_TIMEOUT_S;
    if (c->idle_timeout_s == 0) c->idle_timeout_s = WP_HTTP_CONNECTION_TIMEOUT_S;
    if (!c->tls_cert_pem != !c->tls_key_pem)
        return WP_FAIL(err, 400, "bad_tls", "tls", "--tls-cert and --tls-key go together");
    if (c->tls_cert_pem) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
            return WP_FAIL(err, 400, "bad_tls", "tls", "this libmicrohttpd was built without TLS");
        h->tls_cert = strdup(c->tls_cert_pem);
        h->tls_key = strdup(c->tls_key_pem);
        if (!h->tls_cert || !h->tls_key) return WP_FAIL(err, 500, "internal", "", "out of memory");
    }
    /* beyond loopback one peer may hold an eighth of the connections, at least WP_HTTP_PER_IP_MIN (every
     * peer of a loopback listener or a Unix socket is this machine) */
    unsigned per_peer = c->max_connections / 8 > WP_HTTP_PER_IP_MIN ? c->max_connections / 8 : WP_HTTP_PER_IP_MIN;
    wp_guard_config gc = {.max_connections = c->max_connections,
                          .header_timeout_s = c->header_timeout_s,
                          .idle_timeout_s = c->idle_timeout_s,
                          .per_peer = c->unix_path || is_loopback(addr) ? 0 : per_peer};
    h->guard = wp_guard_open(&gc, err);
    if (!h->guard) return -1;
    if (c->unix_path) {
        h->unix_fd = wp_listen_unix(c->unix_path, c->socket_mode, WP_HTTP_LISTEN_BACKLOG, &h->unix_ino, err);
        if (h->unix_fd < 0) return -1;
    }
    return 0;
}

/* MHD options of the transport; returns how many were written (opts has room for 12). */
static int transport_options(wp_http *h, const struct sockaddr_storage *addr, struct MHD_OptionItem *opts,
                             unsigned *flags) {
    int n = 0;
#define OPT(o, v, p) (opts[n++] = (struct MHD_OptionItem){(o), (intptr_t)(v), (p)})
    if (h->unix_fd >= 0) {
        OPT(MHD_OPTION_LISTEN_SOCKET, h->unix_fd, NULL);
    } else {
        OPT(MHD_OPTION_SOCK_ADDR, 0, (void *)addr);
        OPT(MHD_OPTION_LISTEN_BACKLOG_SIZE, WP_HTTP_LISTEN_BACKLOG, NULL);
        if (addr->ss_family == AF_INET6) *flags |= MHD_USE_IPv6;
        /* (beyond loopback, one peer's connections are limited by the guard, over every listener) */
    }
    if (h->tls_cert) {
        *flags |= MHD_USE_TLS;
        OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_cert);
        OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key);
    }
    OPT(MHD_OPTION_CONNECTION_LIMIT, h->cfg.max_connections + WP_GUARD_SLACK, NULL);
    OPT(MHD_OPTION_CONNECTION_TIMEOUT, h->cfg.idle_timeout_s, NULL);
    OPT(MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)http_on_connection, h);
    OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
    return n;
}

static int daemon_port(struct MHD_Daemon *d, int fallback) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : fallback;
}

/* One libmicrohttpd daemon on addr: `pool` threads sharing its listening socket, or (pool 0) a
 * single-thread one, on its own SO_REUSEPORT socket with reuse. A single-thread daemon runs on warpd's
 * own event loop (own_loop: started by the caller, http_loop.h), a pool on libmicrohttpd's threads.
 * NULL with err set on failure. */
static struct MHD_Daemon *start_daemon(wp_http *h, const struct sockaddr_storage *addr, unsigned pool, bool reuse,
                                       bool own_loop, wp_err *err) {
    unsigned flags = MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (!own_loop) flags |= MHD_USE_INTERNAL_POLLING_THREAD;
#ifdef __linux__
    flags |= MHD_USE_EPOLL;
#else
    flags |= MHD_USE_AUTO;
#endif
    struct MHD_OptionItem transport[12];
    transport_options(h, addr, transport, &flags);
    atomic_store(&h->starting, true);
    h->start_log[0] = 0;
    errno = 0;
    /* The logger comes first so that it also hears about the options after it. */
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)h->cfg.port, NULL, NULL, http_on_request_guarded, h, MHD_OPTION_EXTERNAL_LOGGER, on_log, h,
        MHD_OPTION_ARRAY, transport, MHD_OPTION_CONNECTION_MEMORY_LIMIT, h->cfg.conn_memory,
        MHD_OPTION_NOTIFY_COMPLETED, http_on_completed_guarded, h, MHD_OPTION_THREAD_POOL_SIZE, pool,
        MHD_OPTION_LISTENING_ADDRESS_REUSE, reuse ? 1u : 0u, MHD_OPTION_END);
    int start_errno = errno;
    atomic_store(&h->starting, false);
    if (!d) {
        size_t n = strlen(h->start_log);
        while (n && (h->start_log[n - 1] == '\n' || h->start_log[n - 1] == '.')) h->start_log[--n] = 0;
        WP_FAIL(err, 500, "listen_failed", "", "cannot listen on %s:%d: %s", h->cfg.host ? h->cfg.host : "",
                h->cfg.port,
                h->start_log[0] ? h->start_log
                : start_errno   ? strerror(start_errno)
                                : "unknown error");
    }
    return d;
}

/* The event loops' busy-poll gate (http_loop.h): only while no worker runs a call, whose CPU a polling
 * HTTP thread would take. */
static bool workers_idle(void *ctx) { return atomic_load(&((wp_http *)ctx)->workers_busy) == 0; }

/* The daemons of the transport: one per thread on SO_REUSEPORT sockets (host:port, threads > 1, not
 * cfg.pool), else one with libmicrohttpd's pool. Port 0: the first one's port for the rest. n_daemons
 * counts those started; on failure (-1) they are left running for the caller to stop once the workers
 * are joined (stop_daemons), since one may already have handed a worker a connection. */
static int start_daemons(wp_http *h, const struct sockaddr_storage *addr0, wp_err *err) {
    const bool reuse = h->unix_fd < 0 && h->cfg.threads > 1 && !h->cfg.pool;
    const int n = reuse ? h->cfg.threads : 1;
    h->daemons = calloc((size_t)n, sizeof *h->daemons);
    h->loops = calloc((size_t)n, sizeof *h->loops);
    h->quiesced_fd = calloc((size_t)n, sizeof *h->quiesced_fd);
    if (!h->daemons || !h->loops || !h->quiesced_fd) return WP_FAIL(err, 500, "internal", "", "out of memory");
    struct sockaddr_storage addr = *addr0;
    if (reuse && h->cfg.port && wp_listen_probe(&addr, h->cfg.host ? h->cfg.host : "", err)) return -1;
    const unsigned pool = reuse || h->cfg.threads <= 1 ? 0u : (unsigned)h->cfg.threads; /* a pool of one is none */
#ifdef __linux__
    const bool own_loop = pool == 0; /* epoll: the loop waits on the daemon's descriptor */
#else
    const bool own_loop = false;
#endif
    for (int i = 0; i < n; i++) {
        h->quiesced_fd[i] = MHD_INVALID_SOCKET;
        if ((h->daemons[i] = start_daemon(h, &addr, pool, reuse, own_loop, err)) && own_loop &&
            !(h->loops[i] = wp_http_loop_start(h->daemons[i], h->cfg.busy_poll_us, workers_idle, h, "wp-http", err))) {
            MHD_stop_daemon(h->daemons[i]);
            h->daemons[i] = NULL;
        }
        if (!h->daemons[i]) return -1;
        if (i == 0 && reuse) { /* the others bind the port the first one got */
            uint16_t port = htons((uint16_t)daemon_port(h->daemons[0], h->cfg.port));
            if (addr.ss_family == AF_INET6)
                ((struct sockaddr_in6 *)&addr)->sin6_port = port;
            else
                ((struct sockaddr_in *)&addr)->sin_port = port;
        }
        h->n_daemons = i + 1;
    }
    return 0;
}

/* Stops every event loop, then its daemon (which closes the daemon's connections). */
static void stop_daemons(wp_http *h) {
    for (int i = 0; i < h->n_daemons; i++) {
        wp_http_loop_stop(h->loops[i]); /* then the daemon is this thread's to stop */
        MHD_stop_daemon(h->daemons[i]);
    }
}

wp_http *wp_http_start(const wp_http_config *cfg, const wp_route *routes, void *app, wp_err *err) {
    if (!cfg || !routes) {
        WP_FAIL(err, 500, "internal", "", "wp_http_start needs a config and a route table");
        return NULL;
    }
    if (cfg->port < 0 || cfg->port > 65535) {
        WP_FAIL(err, 400, "bad_listen", "port", "port %d is outside 0..65535", cfg->port);
        return NULL;
    }
    struct sockaddr_storage addr;
    if (parse_addr(cfg->host && cfg->host[0] ? cfg->host : "127.0.0.1", cfg->port, &addr, err) < 0) return NULL;

    wp_http *h = calloc(1, sizeof *h);
    if (!h) {
        WP_FAIL(err, 500, "internal", "", "out of memory");
        return NULL;
    }
    h->cfg = *cfg;
    if (h->cfg.threads <= 0) h->cfg.threads = WP_HTTP_DEFAULT_THREADS;
    if (h->cfg.workers <= 0) h->cfg.workers = WP_HTTP_DEFAULT_WORKERS;
    if (h->cfg.max_body == 0) h->cfg.max_body = WP_HTTP_DEFAULT_MAX_BODY;
    if (h->cfg.max_body > SIZE_MAX / 4) h->cfg.max_body = SIZE_MAX / 4; /* keeps the buffer arithmetic exact */
    if (h->cfg.max_queue <= 0) h->cfg.max_queue = WP_HTTP_DEFAULT_MAX_QUEUE;
    if (h->cfg.conn_memory == 0) h->cfg.conn_memory = WP_HTTP_DEFAULT_CONN_MEMORY;
    if (h->cfg.conn_memory < WP_HTTP_MIN_CONN_MEMORY) h->cfg.conn_memory = WP_HTTP_MIN_CONN_MEMORY;
    h->routes = routes;
    h->app = app;
    h->unix_fd = -1;
    pthread_mutex_init(&h->mu, NULL);
    pthread_mutex_init(&h->calls_mu, NULL);
    sem_init(&h->work_sem, 0, 0);
    pthread_cond_init(&h->idle_cv, NULL);

    h->workers = calloc((size_t)h->cfg.workers, sizeof *h->workers);
    if (!h->workers) {
        WP_FAIL(err, 500, "internal", "", "out of memory");
        http_free(h);
        return NULL;
    }
    for (; h->workers_started < h->cfg.workers; h->workers_started++) {
        if (pthread_create(&h->workers[h->workers_started], NULL, http_worker_main, h) != 0) {
            WP_FAIL(err, 500, "internal", "", "cannot start HTTP worker %d", h->workers_started);
            break;
        }
        /* event loops: wp-http; libmicrohttpd's pool: MHD-* */
        pthread_setname_np(h->workers[h->workers_started], "wp-worker");
    }
    bool tried = false, started = false;
    if (h->workers_started == h->cfg.workers && transport_prepare(h, &addr, err) == 0) {
        tried = true;
        started = start_daemons(h, &addr, err) == 0;
    }
    if (!started) {
        pthread_mutex_lock(&h->mu);
        h->stopping = true;
        pthread_mutex_unlock(&h->mu);
        for (int i = 0; i < h->workers_started; i++) sem_post(&h->work_sem);
        workers_join(h); /* before the daemons: a worker may be answering one of their connections */
        stop_daemons(h);
        transport_release(h, !tried); /* a failed MHD_start_daemon closes the socket it was given */
        http_free(h);
        return NULL;
    }
    h->port = daemon_port(h->daemons[0], cfg->port);
    return h;
}

int wp_http_port(const wp_http *h) { return h ? h->port : 0; }

void wp_http_stop(wp_http *h) {
    if (!h) return;
    /* 1. No new connections. Keep-alive ones may still ask: work_submit answers them 503 from now on. */
    for (int i = 0; i < h->n_daemons; i++)
        h->quiesced_fd[i] = h->loops[i] ? wp_http_loop_quiesce(h->loops[i]) : MHD_quiesce_daemon(h->daemons[i]);
    pthread_mutex_lock(&h->mu);
    h->stopping = true;
    wp_call *waiting = NULL;
    for (wp_fair_node *n; (n = wp_fairq_pop(&h->queue));) {
        wp_call *c = (wp_call *)(void *)((char *)n - offsetof(wp_call, qnode));
        c->next = waiting;
        waiting = c;
    }
    pthread_mutex_unlock(&h->mu);
    for (int i = 0; i < h->workers_started; i++) sem_post(&h->work_sem); /* each worker sees stopping */

    /* 2. Work nobody started is answered 503; work under way finishes. */
    while (waiting) {
        wp_call *c = waiting;
        waiting = c->next;
        http_resp_fail(&c->resp, 503, "shutting_down", "", "the server is stopping");
        snprintf(c->resp.retry_after, sizeof c->resp.retry_after, "%s", WP_HTTP_RETRY_AFTER_S);
        http_resume(c);
    }
    workers_join(h);

    /* 3. Every connection is resumed; give their replies a moment to reach the clients. */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += WP_HTTP_STOP_GRACE_MS / 1000;
    deadline.tv_nsec += (long)(WP_HTTP_STOP_GRACE_MS % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) deadline.tv_sec++, deadline.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&h->mu);
    while (h->in_work > 0)
        if (pthread_cond_timedwait(&h->idle_cv, &h->mu, &deadline) == ETIMEDOUT) break;
    pthread_mutex_unlock(&h->mu);
    /* Parked calls (wp_req_park) come back from threads that are not the server's: wait for every one,
     * since a call unparked after the daemons stop would be gone. Their jobs are small ones. */
    while (atomic_load(&h->parked) > 0) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }

    /* 4. Close everything; MHD reports each open request to on_completed, which frees it. */
    stop_daemons(h);
    bool unix_back = false;
    for (int i = 0; i < h->n_daemons; i++) {
        if (h->unix_fd >= 0 && h->quiesced_fd[i] == h->unix_fd)
            unix_back = true; /* else MHD closed it */
        else if (h->quiesced_fd[i] != MHD_INVALID_SOCKET)
            close(h->quiesced_fd[i]);
    }
    transport_release(h, unix_back);
    http_free(h);
}

int wp_http_active(const wp_http *h) { return h ? atomic_load(&((wp_http *)h)->active) : 0; }

void wp_http_stats_get(wp_http *h, wp_http_stats *out) {
    memset(out, 0, sizeof *out);
    if (!h) return;
    out->requests = atomic_load(&h->requests);
    out->responses_2xx = atomic_load(&h->responses_2xx);
    out->responses_4xx = atomic_load(&h->responses_4xx);
    out->responses_5xx = atomic_load(&h->responses_5xx);
    out->rejected_busy = atomic_load(&h->rejected_busy);
    out->answered_inline = atomic_load(&h->answered_inline);
    out->handed = atomic_load(&h->handed);
    out->deferred = atomic_load(&h->deferred);
    out->streamed = atomic_load(&h->streamed);
    out->streamed_bytes = atomic_load(&h->streamed_bytes);
    wp_guard_stats gs;
    wp_guard_stats_get(h->guard, &gs);
    out->connections = gs.open;
    out->max_connections = h->cfg.max_connections;
    out->closed_header_timeout = gs.header_timeouts;
    out->closed_peer_gone = gs.peer_gone;
    out->closed_evicted = gs.evicted;
    out->closed_peer_limit = gs.peer_refused;
    out->workers_busy = atomic_load(&h->workers_busy);
    pthread_mutex_lock(&h->mu);
    out->queue_depth = h->queue.depth;
    pthread_mutex_unlock(&h->mu);
}
