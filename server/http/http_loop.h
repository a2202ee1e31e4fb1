/* http_loop.h — the event loop of one single-thread libmicrohttpd daemon, run by warpd's own thread
 * instead of libmicrohttpd's internal one, so that it can busy-poll: after the daemon had something to
 * do, the loop keeps polling it without sleeping for busy_poll_us microseconds before it blocks again.
 * A client that sends its next request within that window finds the thread awake: on loopback and in
 * virtual machines the wake-up of a sleeping thread is a large share of a small request's round trip.
 * A gate (may_poll) can forbid the polling: http.c's while any HTTP worker runs a call, whose CPU it
 * is (async jobs' and compiles' threads are not counted: at the default window that costs them little).
 * Nor does a loop poll while it has parked calls (http_loop.c says why). While it waits past the
 * window it sleeps in epoll_wait on the daemon's epoll descriptor (and its own eventfd), bounded by
 * the daemon's next connection timeout.
 *
 * The daemon must be started with MHD_USE_EPOLL and MHD_ALLOW_SUSPEND_RESUME, without
 * MHD_USE_INTERNAL_POLLING_THREAD or a thread pool. Every libmicrohttpd call on it but
 * MHD_resume_connection (thread-safe) then belongs to the loop's thread: the loop quiesces the daemon
 * itself when asked to, and it is stopped before the daemon is. Without an internal thread
 * libmicrohttpd signals nothing when a connection is resumed: whoever resumes one wakes its loop
 * (wp_http_loop_wake), which then runs the daemon. A parked call is not suspended (below): no
 * resume, and a wake only when the loop sleeps.
 *
 * Threads: wp_http_loop_start, _quiesce and _stop are called by the thread that owns the daemon (the
 * one starting and stopping the server), never from the loop's own thread (that is, never from a
 * request callback). wp_http_loop_wake, wp_http_loop_ended and wp_http_loop_current: any thread;
 * wp_http_loop_park and _unpark: the loop's thread. The callbacks of the daemon run on the loop's thread.
 * Owns: wp_http_loop, its thread, epoll descriptor and eventfd, and each loop thread's note of its
 * loop (thread-local, for wp_http_loop_current); not the daemon. */
#ifndef WP_HTTP_LOOP_H
#define WP_HTTP_LOOP_H

#include <microhttpd.h>

#include "util/common.h"

#define WP_BUSY_POLL_DEFAULT_US 50  /* --busy-poll-us */
#define WP_BUSY_POLL_MAX_US 1000000 /* at most one second */

typedef struct wp_http_loop wp_http_loop;

/* Asked on the loop's thread before each poll of the window: false makes the loop sleep instead (the
 * server's workers are busy: a polling HTTP thread would take a CPU they need). */
typedef bool (*wp_http_loop_may_poll)(void *ctx);

/* Starts the loop of d on a new thread named name (at most 15 characters); may_poll (NULL: always)
 * and ctx gate the busy-poll. NULL with err set when the daemon has no epoll descriptor or a
 * descriptor or the thread cannot be made. */
wp_http_loop *wp_http_loop_start(struct MHD_Daemon *d, int busy_poll_us, wp_http_loop_may_poll may_poll, void *ctx,
                                 const char *name, wp_err *err);

/* The loop running on the calling thread (so: called from a callback of its daemon); NULL on any
 * other thread, libmicrohttpd's own included. */
wp_http_loop *wp_http_loop_current(void);

/* Makes the loop run its daemon soon (after an MHD_resume_connection on another thread). NULL is
 * ignored. */
void wp_http_loop_wake(wp_http_loop *l);

/* Parked calls: a call whose handler returned without an answer while another thread finishes it
 * stays in its daemon (not suspended), which asks its handler again each pass until it answers. The
 * loop's thread notes each such call (park) and its end as it sees it (unpark); the other thread,
 * once it is done with one, calls wp_http_loop_ended, which wakes the loop only if it sleeps. */
void wp_http_loop_park(wp_http_loop *l);   /* the loop's thread */
void wp_http_loop_unpark(wp_http_loop *l); /* the loop's thread */
void wp_http_loop_ended(wp_http_loop *l);  /* any thread */

/* MHD_quiesce_daemon on the loop's thread; returns what it returned (the listening socket, now the
 * caller's, or MHD_INVALID_SOCKET). The loop goes on serving the connections already open. */
MHD_socket wp_http_loop_quiesce(wp_http_loop *l);

/* Ends the loop and joins its thread; the daemon is left for the caller to stop. NULL is ignored. */
void wp_http_loop_stop(wp_http_loop *l);

#endif
