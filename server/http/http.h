/* http.h — libmicrohttpd glue: listens, reads bodies up to a limit, routes by method and path, and
 * sends responses. Handlers marked WP_ROUTE_WORK run on a worker pool while the connection is
 * suspended, so a compile or a GPU job never holds an HTTP thread; the rest run inline. A route with
 * stream hooks takes a raw body chunk by chunk as it arrives (see wp_stream_hooks). */
#ifndef WP_HTTP_H
#define WP_HTTP_H

#include <cjson/cJSON.h>

#include "http/users.h"
#include "util/common.h"

typedef struct wp_http wp_http;
typedef struct wp_reqlog wp_reqlog; /* request ids, access log, request metrics (reqlog.h) */

typedef struct {
    const char *method;       /* "GET", "POST", ... */
    const char *path;         /* URL path, no query */
    const char *content_type; /* header or "" */
    const char *accept;       /* header or "" */
    const char *body;         /* NUL-terminated copy of the body (NULL when empty) */
    size_t body_len;
    void *conn;            /* opaque, for wp_req_query; NULL when synthesized (an async job, jobs.c) */
    uint64_t t_start_ns;   /* when the request line arrived */
    uint64_t t_body_ns;    /* when the whole body was in (0 when synthesized: read as t_start_ns) */
    uint64_t t_handler_ns; /* when this call of the handler began (0 when synthesized: read as t_body_ns);
                              from t_body_ns to here is the hand-off: a worker's queue, a deferred try */
    bool may_defer;        /* WP_ROUTE_TRY_INLINE, first call: the handler may set resp->defer */
    bool peer_local;       /* the client is on this machine (a Unix socket or loopback): /v1/shm's check */
    void *job;             /* the async job that runs this request (jobs.c), NULL on a live connection */
    void *sink;            /* a streamed body (wp_stream_hooks): what open made, body NULL and body_len
                              the bytes that went into it; NULL otherwise */
    const wp_user *user;   /* who asks (users.h): from the token; NULL only for the daemon's own calls */
} wp_req;

/* Query argument of the request, or NULL (always NULL for a synthesized request: it has no URL). */
const char *wp_req_query(const wp_req *req, const char *name);

/* What a handler tells the access log about its request (reqlog.c); every field optional. */
typedef struct {
    const char *backend; /* "cuda" | "emu" (static storage) */
    const char *cache;   /* where the kernel came from: "memory" | "disk" | "compile" | "none" (static) */
    const char *family;  /* the family's name (static: the family table's) */
    char key[65];        /* the kernel's cache hash (hex), "" when none */
} wp_resp_note;

/* The stages a handler timed, in order (wp_resp_stage): the Server-Timing header carries them, then
 * "answer" (from t_done_ns, the job's end, to the hand-over of the answer) and "total". */
#define WP_RESP_STAGES 14
typedef struct {
    int n;
    uint64_t t_done_ns;
    struct {
        const char *name; /* static: a token (Server-Timing's metric name) */
        double us;
    } s[WP_RESP_STAGES];
} wp_resp_stages;

typedef struct {
    int status;
    char *body; /* malloc'd; http.c frees it */
    size_t body_len;
    size_t body_cap; /* body's size when the call may keep it for its next answer: set by wp_resp_json_text_kept
                        only, cleared by http_resp_set; kept only with a 200 JSON answer */
    const char *content_type; /* static string */
    char retry_after[16];     /* "" or seconds, for 503 */
    char location[128];       /* "" or a Location header */
    bool defer;               /* set by a handler called with may_defer: run me again on a worker */
    wp_resp_note note;        /* for the access log */
    wp_resp_stages stages;    /* for the Server-Timing header */
} wp_resp;

/* Fills resp->note (NULLs and "" leave a field unset). */
static inline void wp_resp_note_kernel(wp_resp *r, const char *backend, const char *cache, const char *family,
                                       const char *hash) {
    r->note.backend = backend;
    r->note.cache = cache;
    r->note.family = family;
    size_t n = 0;
    for (; hash && hash[n] && n < sizeof r->note.key - 1; n++) r->note.key[n] = hash[n];
    r->note.key[n] = 0;
}

/* Records a stage for the Server-Timing header (name: a static token such as "parse"). */
static inline void wp_resp_stage(wp_resp *r, const char *name, double us) {
    if (r->stages.n < WP_RESP_STAGES) {
        r->stages.s[r->stages.n].name = name;
        r->stages.s[r->stages.n++].us = us;
    }
}
/* The start of a handler's own time: t_handler_ns, else the body's arrival, else the request's. */
static inline uint64_t wp_req_t_handler(const wp_req *q) {
    return q->t_handler_ns ? q->t_handler_ns : q->t_body_ns ? q->t_body_ns : q->t_start_ns;
}
/* The hand-off: from the body's arrival to this call of the handler, in µs (0 when synthesized). */
double wp_req_handoff_us(const wp_req *q);

/* Sets a JSON body (takes ownership of obj, prints it unformatted) and status. */
void wp_resp_json(wp_resp *r, int status, cJSON *obj);
/* The same for an answer already JSON text (jsonout.h's wp_jtext_take): takes ownership of text (n
 * bytes, malloc'd); NULL (out of memory) gives the 500 wp_resp_json gives. */
void wp_resp_json_text(wp_resp *r, int status, char *text, size_t n);
/* The same for text in a buffer of cap bytes (from wp_req_take_text, grown or not): once the answer is
 * sent, the request's call keeps a small one for its next answer instead of freeing it. */
void wp_resp_json_text_kept(wp_resp *r, int status, char *text, size_t n, size_t cap);
/* {"error":{"code":..., "message":..., "field":...}} with e->status (500 if 0). */
void wp_resp_error(wp_resp *r, const wp_err *e);
/* Plain bytes (copied). */
void wp_resp_bytes(wp_resp *r, int status, const char *content_type, const void *data, size_t n);

typedef void (*wp_handler)(void *app, const wp_req *req, wp_resp *resp);

/* Parking. A handler called with req->may_defer (on an HTTP thread) may hand its request to another
 * thread that does not block one per request (the batcher's runners, batch.h) instead of answering
 * or deferring it: it calls wp_req_park before that thread can see the request, hands it over and
 * returns without an answer. The connection waits and its event loop serves others (on warpd's own
 * loop it is not suspended: the loop asks after it each pass, http_loop.h). While parked, the other
 * thread may use req's own fields (times, user, body, may_defer) and resp, never what libmicrohttpd
 * keeps (conn, wp_req_query, method, path, content_type, accept): the client may go meanwhile. The
 * other thread calls wp_req_unpark once it is done with the request; then, on the HTTP thread,
 * finish(app, req, resp, ctx) fills the answer, or sets resp->defer to have the handler run again on
 * a worker (as a deferred call: may_defer false). finish may be NULL: the other thread filled the
 * handler's resp itself before it unparked (while parked, nothing else touches resp). wp_req_park returns false (and
 * parks nothing) for a request without a connection or a call that may not park; the handler then goes on as it would.
 * Threads: wp_req_park on the HTTP thread inside the handler; wp_req_unpark on any thread, once per
 * park, after which the caller must not touch req. The server's stop waits for every parked request. */
typedef void (*wp_park_fn)(void *app, const wp_req *req, wp_resp *resp, void *ctx);
bool wp_req_park(const wp_req *req, wp_park_fn finish, void *ctx);
void wp_req_unpark(const wp_req *req);

/* The release of a request's own state (a parked request's, kept on the heap while another thread ran
 * its job): release(ctx) is called once, when the call ends — on its HTTP thread after the answer is
 * sent or the connection ended, or on the other thread when the connection ended while that thread
 * still ran the job (wp_req_unpark). So what the HTTP thread allocated for a request is given back on
 * it: glibc's malloc takes the owning thread's arena lock for a block another thread frees, a lock the
 * HTTP threads and the runners would contend for on every handed job. At most one a request, and only
 * for one that wp_req_park parked (a request of a connection's call).
 * Threads: the handler, on the HTTP thread, after wp_req_park and before it returns. */
void wp_req_on_end(const wp_req *req, void (*release)(void *ctx), void *ctx);

/* Memory of at least bytes for a request's state, whether the handler answers it at once or parks it
 * (a handed job's): it belongs to the request's call and stays until the call ends (after the
 * wp_req_on_end release), then serves the next request of a call made on the same thread. So the state
 * costs no allocation of its own, and it is memory the HTTP thread wrote a moment ago. Not zeroed. A
 * later call for the same request with more bytes moves it (the first memory is freed): ask once for
 * all a request needs. NULL when the request is not an HTTP thread's that may park (!req->may_defer)
 * or there is no memory. Threads: the handler, on the HTTP thread. */
void *wp_req_room(const wp_req *req, size_t bytes);

/* The buffer of the call's last small answer (malloc'd, *cap bytes), taken: an answer written into it
 * and given to wp_resp_json_text_kept costs no malloc and no free a request. A call made on one HTTP
 * thread serves that thread's next requests, so it is memory the thread wrote a moment ago. NULL (*cap
 * 0) when the call has none yet, or the request has no connection. req: the handler's own, not a copy
 * (as wp_req_room's). Threads: the handler's. */
char *wp_req_take_text(const wp_req *req, size_t *cap);

/* A route's streaming hooks. When a request to the route announces its length (Content-Length, not
 * 0) and its Content-Type is application/octet-stream, the body is not gathered in memory:
 *   open:  on the HTTP thread as soon as the headers are in (req has method, path, content type,
 *          query; no body): checks what it can (query arguments, the length) and makes a sink — a
 *          device buffer being filled, say. NULL with resp filled answers at once, before the body
 *          is read (a 400, 413, 507 ...); NULL with resp->status 0 reads the body into memory as usual.
 *   write: each chunk in order, at its offset, on the HTTP thread. -1 with err: the rest of the body
 *          is read and dropped, and err is the answer (the handler does not run).
 *   close: once, after the request is over, however it ended (answered, or the client went away).
 * Between the last write and close the handler runs as for any request (inline or on a worker) with
 * req->sink set; it may be called twice (WP_ROUTE_TRY_INLINE) and must leave the sink usable until
 * close. */
typedef struct {
    void *(*open)(void *app, const wp_req *req, uint64_t length, wp_resp *resp);
    int (*write)(void *sink, const void *data, size_t len, uint64_t offset, wp_err *err);
    void (*close)(void *sink);
} wp_stream_hooks;

/* WP_ROUTE_TRY_INLINE (with WP_ROUTE_WORK): the handler is first called on the HTTP thread with
 * req->may_defer; when what it needs is at hand (a kernel in the memory cache) it answers there and
 * then, saving two thread hand-offs; otherwise it sets resp->defer and is called again on a worker. */
enum { WP_ROUTE_INLINE = 0, WP_ROUTE_WORK = 1, WP_ROUTE_PREFIX = 2, WP_ROUTE_TRY_INLINE = 4 };
typedef struct {
    const char *method; /* NULL ends the table */
    const char *path;   /* exact, or a prefix when flags has WP_ROUTE_PREFIX ("/v1/jobs/") */
    wp_handler fn;
    unsigned flags;
    const wp_stream_hooks *stream; /* NULL: bodies are gathered in memory */
} wp_route;

typedef struct {
    const char *host;   /* "127.0.0.1" */
    int port;           /* 0 picks a free port (see wp_http_port) */
    int threads;        /* HTTP threads: on host:port one listener each (see pool), else libmicrohttpd's pool */
    bool pool;          /* true: one listening socket for libmicrohttpd's thread pool, whose threads take
                           connections unevenly (a burst of 256 left 3 of 8 idle); false: with threads > 1
                           on host:port, one single-thread libmicrohttpd daemon per thread on its own
                           SO_REUSEPORT socket of the same address, the kernel spreading connections
                           evenly over them. A Unix socket always uses the pool. */
    int workers;        /* worker pool for WP_ROUTE_WORK handlers */
    size_t max_body;    /* bytes; larger bodies get 413 "body_too_large" */
    int max_queue;      /* suspended requests waiting for a worker; beyond: 503 + Retry-After */
    size_t conn_memory; /* libmicrohttpd's per-connection memory (headers + read buffer); 0: 64 KiB */
    int busy_poll_us;   /* a single-thread daemon's thread polls without sleeping this long after its last
                           event (http_loop.h; not libmicrohttpd's pool); 0: it sleeps at once */
    /* who may talk to it (access.h); NULL: the defaults (loopback hosts, no other origin, no token) */
    const struct wp_access *access;
    /* Transport (listen.c, conn_guard.c). */
    const char *unix_path;    /* non-NULL: serve on this Unix socket file, not host:port; the file's mode is
                                 the access control (a request over it comes from this machine, with no
                                 peer address: access checks read this field) */
    unsigned socket_mode;     /* the socket file's permissions (0: 0600) */
    const char *tls_cert_pem; /* both non-NULL: HTTPS only (libmicrohttpd's GnuTLS), PEM text (copied) */
    const char *tls_key_pem;
    unsigned max_connections;  /* open connections (conn_guard.h); 0: from RLIMIT_NOFILE */
    unsigned header_timeout_s; /* seconds for a new connection's headers to be complete; 0: 10 */
    unsigned idle_timeout_s;   /* seconds a connection may stay silent (keep-alive, uploads); 0: 60 */
    wp_reqlog *reqlog;         /* request ids, access log and request metrics; NULL: ids only (reqlog.h) */
} wp_http_config;

wp_http *wp_http_start(const wp_http_config *cfg, const wp_route *routes, void *app, wp_err *err);
int wp_http_port(const wp_http *h);
void wp_http_stop(wp_http *h);
/* Requests begun (headers in) and not yet completed, the caller's own included: how busy the server is
 * now (an atomic read; any thread). 0 for NULL. */
int wp_http_active(const wp_http *h);

/* Counters for /metrics. */
typedef struct {
    uint64_t requests, responses_2xx, responses_4xx, responses_5xx, rejected_busy;
    uint64_t answered_inline, deferred; /* WP_ROUTE_TRY_INLINE: answered on the HTTP thread, or not */
    uint64_t handed;                    /* ... or parked while another thread ran the job (wp_req_park) */
    uint64_t streamed, streamed_bytes;  /* bodies handed to stream hooks, and their bytes */
    int queue_depth, workers_busy;
    /* Connections (conn_guard.h): open now, the limit, and those the guard closed, by why. */
    unsigned connections, max_connections;
    uint64_t closed_header_timeout, closed_peer_gone, closed_evicted, closed_peer_limit;
} wp_http_stats;
void wp_http_stats_get(wp_http *h, wp_http_stats *out);

#endif
