/* reqlog.h — what the daemon records about each HTTP request: its id, its W3C trace context, one access
 * log line and its latency in /metrics.
 *   - Request id: the client's X-Request-Id when it is valid (1..64 characters of [A-Za-z0-9._-]), else a
 *     new one (128 random bits as 32 hex digits). Every response carries it in X-Request-Id, and a JSON
 *     error repeats it as error.request_id.
 *   - traceparent: W3C Trace Context; a valid one's trace id and parent id go to the access log, an
 *     invalid one is ignored (logged as "traceparent":"invalid").
 *   - Access log (--access-log FILE|-): one JSON object per line per request, written with one write(2)
 *     under a mutex (O_APPEND for a file), so lines never interleave. Everything a client sent is
 *     JSON-escaped (control characters as \uXXXX, bytes that are not UTF-8 as \ufffd) and cut to a
 *     bounded length.
 * http.c calls wp_reqlog_begin when a request's headers are in, wp_reqlog_queued/_dequeued around its
 * wait for a worker, wp_reqlog_respond when its response is handed over and wp_reqlog_end when it is
 * over; handlers annotate the record through wp_resp.note (http.h).
 * Owns: wp_reqlog (the access log's descriptor and lock) and each thread's random bytes for new ids.
 * A wp_reqrec lives in http.c's per-request state and is touched by one thread at a time (the request's). */
#ifndef WP_REQLOG_H
#define WP_REQLOG_H

#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "http.h"
#include "metrics.h"

#define WP_REQUEST_ID_MAX 64
#define WP_REQLOG_PATH_MAX 1024 /* bytes of a path kept for the log; longer ones are cut (and say so) */
#define WP_REQLOG_AGENT_MAX 256 /* bytes of a User-Agent kept */

typedef struct {
    char id[WP_REQUEST_ID_MAX + 1];
    char trace_id[33], parent_id[17]; /* "" without a valid traceparent */
    bool trace_invalid;               /* a traceparent came and was not valid */
    char method[16];
    char path[WP_REQLOG_PATH_MAX + 1];
    bool path_cut;
    char agent[WP_REQLOG_AGENT_MAX + 1];
    char remote[64]; /* the peer's address, "" when unknown */
    struct timespec wall;
    uint64_t t_start_ns, t_queued_ns, queue_ns;
    int status;         /* 0 until a response is handed over */
    uint64_t bytes_out; /* the response body's bytes */
    wp_resp_note note;
    const wp_user *user; /* who asked (users.h): its name goes to the log line ("user"), its counts to /metrics */
} wp_reqrec;

/* access_log: NULL (none), "-" (stdout) or a file, opened for appending (created 0640). metrics: where
 * request latencies go (NULL: nowhere). NULL with err when the file cannot be opened. */
wp_reqlog *wp_reqlog_open(const char *access_log, wp_metrics *metrics, wp_err *err);
void wp_reqlog_close(wp_reqlog *l);
/* Opens the access log file again (after logrotate moved it; main.c on SIGHUP), from any thread; lines
 * being written finish in the old file. A no-op for none or stdout. -1 with err (the old file stays in
 * use) when it cannot be opened. */
int wp_reqlog_reopen(wp_reqlog *l, wp_err *err);

/* A header's value, or NULL: how wp_reqlog_begin reads the request without knowing libmicrohttpd. */
typedef const char *(*wp_reqlog_header_fn)(void *conn, const char *name);

/* The request's headers are in: starts the record (id, trace context, what to log). l may be NULL. */
void wp_reqlog_begin(wp_reqlog *l, wp_reqrec *r, const char *method, const char *path, wp_reqlog_header_fn header,
                     void *conn, const struct sockaddr *peer);
void wp_reqlog_queued(wp_reqrec *r);                 /* put in the work queue */
void wp_reqlog_dequeued(wp_reqlog *l, wp_reqrec *r); /* a worker took it (the wait goes to /metrics) */
/* The response is about to be handed over: a JSON error body ({"error":{...}}) gets "request_id" as its
 * error's last member; status, size and the handler's note are kept for the log. */
void wp_reqlog_respond(wp_reqrec *r, wp_resp *resp);
/* The request is over (completed: its response went out whole). Writes its access log line and its
 * latency; rt is its route (NULL for a 404/405), bytes_in the body bytes received. */
void wp_reqlog_end(wp_reqlog *l, wp_reqrec *r, const wp_route *rt, uint64_t bytes_in, bool completed);

/* 1..64 characters of [A-Za-z0-9._-]. */
bool wp_request_id_valid(const char *s);
/* A W3C traceparent: version-traceid-parentid-flags, lowercase hex; version 00 is exactly 55
 * characters, a later version (not ff) at least 55 with '-' after the flags; trace and parent ids not all
 * zero. 0 with the ids copied out, -1 when not valid. */
int wp_traceparent_parse(const char *s, char trace_id[33], char parent_id[17]);
/* Appends s (n bytes) JSON-escaped, without quotes, to out (cap bytes, NUL-terminated, *len used):
 * ", \ and control characters escaped, invalid UTF-8 as \ufffd; stops before overflowing. Returns
 * false when it had to stop. */
bool wp_reqlog_escape(char *out, size_t cap, size_t *len, const char *s, size_t n);

#endif
