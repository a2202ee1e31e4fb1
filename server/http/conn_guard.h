/* conn_guard.h — keeps slow, idle and vanished connections from locking the HTTP server out.
 *
 * libmicrohttpd (0.9.75) has one idle timeout that every byte a client sends resets, so a client that
 * sends a header byte every few seconds holds its connection forever, and with epoll (edge-triggered)
 * a FIN that arrives together with the last bytes is never read (the socket sits in CLOSE-WAIT until
 * that timeout). The guard watches each connection from accept to close and, from a thread of its own
 * (every WP_GUARD_TICK_MS):
 *   - closes a connection whose first request's headers are not complete header_timeout after accept,
 *     or whose next request's headers are not complete idle_timeout + header_timeout after the
 *     previous request ended;
 *   - closes a connection that waits for headers and whose peer has gone (POLLRDHUP on two ticks in a
 *     row), which MHD would otherwise hold until its timeout;
 *   - when more than max_connections are open, closes the oldest connections that are not inside a
 *     request (waiting for headers, or idle between keep-alive requests) until there is room, so new
 *     clients get in (the newcomer itself only when every other connection is inside a request).
 * "Closes" means shutdown(2): MHD sees the end of the stream on its own thread and closes the
 * connection there; the descriptor stays MHD's. Connections inside a request (headers in, until MHD
 * reports it completed) are never touched: MHD's idle timeout covers them.
 *
 * Threads: wp_guard_conn_open/_close/_request_begin/_request_end are called from libmicrohttpd's
 * threads (the connection-notify and request callbacks) and may run concurrently; open and close
 * from anywhere once each. */
#ifndef WP_CONN_GUARD_H
#define WP_CONN_GUARD_H

#include "util/common.h"

#define WP_GUARD_TICK_MS 250
/* Slots beyond max_connections: libmicrohttpd's own limit is max_connections + WP_GUARD_SLACK, so a newcomer
 * is accepted (and an idle connection closed for it) rather than refused while the guard makes room. */
#define WP_GUARD_SLACK 64u

typedef struct wp_guard wp_guard;

typedef struct {
    unsigned max_connections; /* open connections before the oldest idle ones are closed (> 0) */
    double header_timeout_s;  /* seconds from accept until the headers must be complete (> 0) */
    double idle_timeout_s;    /* MHD's idle timeout: seconds a keep-alive connection may wait (> 0) */
    unsigned per_peer;        /* connections one peer address may hold (0: no limit); a newcomer past it
                                 is closed at once. Counted here, over every listener of the server. */
} wp_guard_config;

wp_guard *wp_guard_open(const wp_guard_config *cfg, wp_err *err);
void wp_guard_close(wp_guard *g); /* stops the thread; call after MHD has closed every connection */

/* A connection was accepted (fd is MHD's; peer its address, a sockaddr_in or sockaddr_in6, or NULL).
 * Returns the token for the other calls, NULL when the guard cannot track it (out of slots: the
 * connection is shut down at once). Past cfg.per_peer for its address it is shut down too (tracked). */
void *wp_guard_conn_open(wp_guard *g, int fd, const void *peer);
void wp_guard_conn_close(wp_guard *g, void *token);    /* before MHD closes fd */
void wp_guard_request_begin(wp_guard *g, void *token); /* headers complete */
void wp_guard_request_end(wp_guard *g, void *token);   /* request over; connection may be kept alive */

typedef struct {
    unsigned open;                       /* connections tracked now */
    uint64_t header_timeouts, peer_gone; /* closed for slow headers, for a vanished peer */
    uint64_t evicted;                    /* closed to make room */
    uint64_t peer_refused;               /* closed at once: their address held per_peer already */
} wp_guard_stats;
void wp_guard_stats_get(wp_guard *g, wp_guard_stats *out);

/* Raises RLIMIT_NOFILE's soft limit to its hard limit (once per process is enough) and returns how
 * many connections fit: the limit less what the daemon keeps for cache files, workers and libraries
 * (an eighth, at least 256), capped at WP_GUARD_MAX_CONNECTIONS. *nofile gets the limit. */
#define WP_GUARD_MAX_CONNECTIONS 16384u
unsigned wp_guard_connections_for_nofile(unsigned long *nofile);

#endif
