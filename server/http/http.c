/* http.c — libmicrohttpd glue: listens on one address, reads bodies up to a limit, routes by method and
 * path, runs WP_ROUTE_WORK handlers on a worker pool while the connection is suspended, hands raw
 * bodies of routes with stream hooks to them chunk by chunk as they arrive, sends responses.
 * Owns: wp_http (the daemon, the route table pointer, the work queue and its workers, the counters).
 * Knows nothing of what a handler does. */
#include "http.h"
#include "util/jsonout.h"

#include "access.h"
#include "conn_guard.h"
#include "listen.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http_loop.h"
#include "reqlog.h"

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
#define WP_HTTP_DISCARD_MAX                                                                                            \
    (64u << 20)                            /* bytes of an oversize chunked body read and dropped before                \
                                              the connection is cut instead of answered 413 */
#define WP_HTTP_BODY_INITIAL (16u * 1024u) /* first body buffer; grows by doubling */
#define WP_HTTP_STOP_GRACE_MS 3000         /* wp_http_stop waits this long for resumed replies to go out */
#define WP_HTTP_DEFAULT_THREADS 4          /* used when a config field is 0 */
#define WP_HTTP_DEFAULT_WORKERS 4
#define WP_HTTP_DEFAULT_MAX_BODY (64u << 20)
#define WP_HTTP_DEFAULT_MAX_QUEUE 256
#define WP_HTTP_RETRY_AFTER_S "1"

static const char json_type[] = "application/json";

/* One request, from its first callback to MHD's "completed" notification. */
typedef enum { CALL_READING, CALL_TOO_LARGE, CALL_STREAM_FAILED, CALL_QUEUED, CALL_DONE } call_state;

typedef struct wp_call {
    struct wp_call *next; /* work queue link */
    struct MHD_Connection *mc;
    wp_http_loop *loop; /* its daemon's event loop, to wake after a resume (set when suspended; NULL: none) */
    const wp_route *route;
    call_state state;
    bool suspended; /* counted in wp_http.in_work until completed */
    char *body;
    size_t body_len, body_cap, discarded; /* body_len: bytes received (streamed ones included) */
    uint64_t length;                      /* Content-Length, when the request has one */
    bool has_length;
    void *sink;        /* route->stream's, for a streamed body */
    wp_err stream_err; /* CALL_STREAM_FAILED: the answer */
    wp_req req;
    wp_resp resp;
    wp_access_verdict access; /* the checks' answer: denied or not, and the headers it adds */
    wp_reqrec rec;            /* id, trace context, what the access log and /metrics get (reqlog.h) */
} wp_call;

struct wp_http {
    struct MHD_Daemon **daemons; /* one (libmicrohttpd's pool), or one per thread on SO_REUSEPORT sockets */
    wp_http_loop **loops;        /* each single-thread daemon's event loop (http_loop.h); NULL for a pool */
    MHD_socket *quiesced_fd;     /* each one's listen socket after MHD_quiesce_daemon; closed after it stops */
    int n_daemons;
    const wp_route *routes;
    void *app;
    wp_http_config cfg;
    int port;

    pthread_mutex_t mu;     /* guards everything below */
    pthread_cond_t work_cv; /* work queued or stopping */
    pthread_cond_t idle_cv; /* in_work dropped */
    wp_call *queue_head, *queue_tail;
    int queue_depth, in_work;
    atomic_int workers_busy; /* not under mu: a worker counts itself out without the queue's lock */
    bool stopping;
    pthread_t *workers;
    int workers_started;

    atomic_uint_least64_t requests, responses_2xx, responses_4xx, responses_5xx, rejected_busy;
    atomic_uint_least64_t answered_inline, deferred, streamed, streamed_bytes;
    atomic_int active; /* requests begun and not yet completed (wp_http_active) */
    atomic_bool starting;
    char start_log[160]; /* last libmicrohttpd message while starting, for the error */

    /* Transport (start/stop only; the guard is fed by the connection-notify callback). */
    wp_guard *guard;
    int unix_fd;              /* the Unix socket handed to MHD, -1 when listening on host:port */
    ino_t unix_ino;           /* to remove only our own socket file */
    char *tls_cert, *tls_key; /* PEM copies, alive as long as the daemon */

    /* Finished calls kept for the next requests (call_new): a call is ~3 KB, and glibc answers every
     * allocation that large by consolidating its fast bins first, a visible share of a small request. */
    pthread_mutex_t calls_mu; /* guards the two below */
    wp_call *idle_calls;      /* linked through next */
    int n_idle_calls;
};

#define WP_HTTP_IDLE_CALLS 64

/* A zeroed call: an idle one, else a new one. Any thread. */
static wp_call *call_new(wp_http *h) {
    pthread_mutex_lock(&h->calls_mu);
    wp_call *c = h->idle_calls;
    if (c) {
        h->idle_calls = c->next;
        h->n_idle_calls--;
    }
    pthread_mutex_unlock(&h->calls_mu);
    if (!c) return calloc(1, sizeof *c);
    memset(c, 0, sizeof *c);
    return c;
}

/* c (its own allocations freed already) kept idle, or freed past WP_HTTP_IDLE_CALLS. Any thread. */
static void call_free(wp_http *h, wp_call *c) {
    pthread_mutex_lock(&h->calls_mu);
    bool keep = h->n_idle_calls < WP_HTTP_IDLE_CALLS;
    if (keep) {
        c->next = h->idle_calls;
        h->idle_calls = c;
        h->n_idle_calls++;
    }
    pthread_mutex_unlock(&h->calls_mu);
    if (!keep) free(c);
}

/* ---------- responses ---------- */

static void resp_set(wp_resp *r, int status, const char *content_type, char *body, size_t n) {
    free(r->body);
    r->status = status;
    r->content_type = content_type;
    r->body = body;
    r->body_len = n;
}

void wp_resp_json(wp_resp *r, int status, cJSON *obj) {
    size_t n = 0;
    char *text = obj ? wp_json_print(obj, &n) : NULL; /* cJSON_PrintUnformatted's bytes, faster */
    cJSON_Delete(obj);
    if (!text) {
        static const char oom[] = "{\"error\":{\"code\":\"internal\",\"message\":\"cannot build the response\"}}";
        text = strdup(oom);
        n = text ? strlen(text) : 0;
        status = 500;
    }
    resp_set(r, status, json_type, text, n);
}

void wp_resp_error(wp_resp *r, const wp_err *e) {
    cJSON *root = cJSON_CreateObject();
    cJSON *error = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(error, "code", e && e->code ? e->code : "internal");
    cJSON_AddStringToObject(error, "message", e ? e->msg : "internal error");
    if (e && e->field[0]) cJSON_AddStringToObject(error, "field", e->field);
    wp_resp_json(r, e && e->status ? e->status : 500, root);
}

void wp_resp_bytes(wp_resp *r, int status, const char *content_type, const void *data, size_t n) {
    char *copy = malloc(n ? n : 1);
    if (!copy) {
        wp_err e;
        WP_FAIL(&e, 500, "internal", "", "out of memory for a %zu-byte response", n);
        wp_resp_error(r, &e);
        return;
    }
    if (n) memcpy(copy, data, n);
    resp_set(r, status, content_type, copy, n);
}

static void resp_fail(wp_resp *r, int status, const char *code, const char *field, const char *msg) {
    wp_err e;
    WP_FAIL(&e, status, code, field, "%s", msg);
    wp_resp_error(r, &e);
}

const char *wp_req_query(const wp_req *req, const char *name) {
    if (!req->conn) return NULL;
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

static bool is_json(const char *content_type) { return strncmp(content_type, json_type, sizeof json_type - 1) == 0; }

static bool is_octet_stream(const char *s) {
    return s && !strncmp(s, "application/octet-stream", 24) && (!s[24] || s[24] == ';' || s[24] == ' ');
}

/* libmicrohttpd 0.9.75 with epoll (edge-triggered) takes a short read for a drained socket, so when a
 * client's FIN arrives with the last bytes it sent, it is never read: the connection then waits for its
 * timeout (60 s) holding what its body holds — for a stream, a device buffer and its quota. A peek after
 * each chunk of a body that is not complete yet notices the client has gone. */
static bool peer_gone(struct MHD_Connection *mc) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return false;
    char byte;
    ssize_t r = recv(ci->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0 || (r < 0 && (errno == ECONNRESET || errno == EPIPE));
}

/* The request as handlers see it, but for the body. */
static void request_fill(wp_call *c, struct MHD_Connection *mc, const char *method, const char *url) {
    const char *type = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *accept = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    c->req.method = method;
    c->req.path = url;
    c->req.content_type = type ? type : "";
    c->req.accept = accept ? accept : "";
    c->req.conn = mc;
}

static void add_header(void *mr, const char *name, const char *value) { MHD_add_response_header(mr, name, value); }

/* Host, Origin, token and body type (access.h), before routing: every route passes here. True when
 * c->resp is the answer (a refusal, or a CORS preflight's 204). */
static bool access_refused(wp_http *h, wp_call *c, struct MHD_Connection *mc, const char *method, const char *url) {
#define HEADER(name) MHD_lookup_connection_value(mc, MHD_HEADER_KIND, name)
    const char *length = HEADER(MHD_HTTP_HEADER_CONTENT_LENGTH);
    bool has_body = HEADER(MHD_HTTP_HEADER_TRANSFER_ENCODING) || (length && strspn(length, "0") < strlen(length));
    wp_access_req q = {.method = method,
                       .path = url,
                       .host = HEADER(MHD_HTTP_HEADER_HOST),
                       .origin = HEADER("Origin"),
                       .content_type = HEADER(MHD_HTTP_HEADER_CONTENT_TYPE),
                       .authorization = HEADER(MHD_HTTP_HEADER_AUTHORIZATION),
                       .cors_method = HEADER("Access-Control-Request-Method"),
                       .has_body = has_body};
#undef HEADER
    wp_access_check(h->cfg.access, &q, &c->access);
    if (c->access.action == WP_ACCESS_PASS) return false;
    if (c->access.action == WP_ACCESS_PREFLIGHT)
        resp_set(&c->resp, 204, NULL, NULL, 0);
    else
        wp_resp_error(&c->resp, &c->access.err);
    return true;
}

/* Hands c->resp to libmicrohttpd (which frees the body) and counts it. allow: Allow header or NULL. */
static enum MHD_Result send_resp(wp_http *h, wp_call *c, const char *allow) {
    wp_resp *r = &c->resp;
    if (r->status == 0) resp_fail(r, 500, "internal", "", "the handler set no response");
    wp_reqlog_respond(&c->rec, r); /* the request id into an error body */
    struct MHD_Response *mr = r->body ? MHD_create_response_from_buffer(r->body_len, r->body, MHD_RESPMEM_MUST_FREE)
                                      : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!mr) return MHD_NO; /* c->resp.body is still ours: freed when the request completes */
    r->body = NULL;
    const char *type = r->content_type ? r->content_type : json_type;
    MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (is_json(type)) MHD_add_response_header(mr, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (r->retry_after[0]) MHD_add_response_header(mr, MHD_HTTP_HEADER_RETRY_AFTER, r->retry_after);
    if (r->location[0]) MHD_add_response_header(mr, MHD_HTTP_HEADER_LOCATION, r->location);
    if (allow) MHD_add_response_header(mr, MHD_HTTP_HEADER_ALLOW, allow);
    wp_access_headers(&c->access, add_header, mr);
    MHD_add_response_header(mr, "X-Request-Id", c->rec.id);
    enum MHD_Result ok = MHD_queue_response(c->mc, (unsigned)r->status, mr);
    MHD_destroy_response(mr);
    if (r->status >= 500)
        atomic_fetch_add(&h->responses_5xx, 1);
    else if (r->status >= 400)
        atomic_fetch_add(&h->responses_4xx, 1);
    else if (r->status >= 200 && r->status < 300)
        atomic_fetch_add(&h->responses_2xx, 1);
    return ok;
}

/* ---------- routing ---------- */

static bool path_matches(const wp_route *rt, const char *path) {
    if (rt->flags & WP_ROUTE_PREFIX) return strncmp(path, rt->path, strlen(rt->path)) == 0;
    return strcmp(path, rt->path) == 0;
}

/* The route for method+path, or NULL; *path_known tells 404 from 405. HEAD is served by GET routes. */
static const wp_route *route_find(const wp_route *routes, const char *method, const char *path, bool *path_known) {
    const char *want = strcmp(method, "HEAD") == 0 ? "GET" : method;
    *path_known = false;
    /* Exact paths first: a path the table names exactly is never served by a prefix route, so
     * GET /v1/warp is a 405, not a static file lookup. */
    for (int pass = 0; pass < 2 && !*path_known; pass++) {
        for (const wp_route *rt = routes; rt->method; rt++) {
            if (((rt->flags & WP_ROUTE_PREFIX) != 0) != (pass == 1) || !path_matches(rt, path)) continue;
            /* The catch-all "/" (static files) knows only the paths it serves with its own method:
             * POST /v1/nothing is a 404, not a 405. */
            if (strcmp(rt->path, "/") != 0 || strcmp(rt->method, want) == 0) *path_known = true;
            if (strcmp(rt->method, want) == 0) return rt;
        }
    }
    return NULL;
}

/* "GET, HEAD, POST": the methods the table has for path. */
static void route_allow(const wp_route *routes, const char *path, char *out, size_t cap) {
    size_t used = 0;
    out[0] = 0;
    for (const wp_route *rt = routes; rt->method; rt++) {
        if (!path_matches(rt, path)) continue;
        const char *names[2] = {rt->method, strcmp(rt->method, "GET") == 0 ? "HEAD" : NULL};
        for (int i = 0; i < 2 && names[i]; i++) {
            size_t n = strlen(names[i]);
            bool seen = false;
            for (const char *p = out; (p = strstr(p, names[i])); p += n)
                if ((p == out || p[-1] == ' ') && (p[n] == ',' || p[n] == 0)) seen = true;
            if (seen || used + n + 3 > cap) continue;
            used += (size_t)snprintf(out + used, cap - used, "%s%s", used ? ", " : "", names[i]);
        }
    }
}

/* ---------- the work queue ---------- */

/* Workers run compiles and jobs; they yield the CPU to the HTTP threads so that cheap requests
 * (health, info) stay fast while every core compiles. Raising one's own nice value needs no privilege. */
#define WORKER_NICE 5

/* Marks c done and gives its connection back to its daemon, waking the loop that runs it: from here on
 * c belongs to the daemon's thread. Any thread. */
static void resume(wp_call *c) {
    struct MHD_Connection *mc = c->mc;
    wp_http_loop *loop = c->loop;
    c->state = CALL_DONE;
    MHD_resume_connection(mc);
    wp_http_loop_wake(loop);
}

static void *worker_main(void *arg) {
    wp_http *h = arg;
    if (setpriority(PRIO_PROCESS, (id_t)gettid(), WORKER_NICE) != 0) { /* best effort */
    }
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->queue_head && !h->stopping) pthread_cond_wait(&h->work_cv, &h->mu);
        wp_call *c = h->queue_head;
        if (!c) break; /* stopping, nothing left */
        h->queue_head = c->next;
        if (!h->queue_head) h->queue_tail = NULL;
        h->queue_depth--;
        atomic_fetch_add(&h->workers_busy, 1);
        pthread_mutex_unlock(&h->mu);
        wp_reqlog_dequeued(h->cfg.reqlog, &c->rec);

        c->route->fn(h->app, &c->req, &c->resp);
        atomic_fetch_sub(&h->workers_busy, 1); /* before the reply can reach the client, so stats never lag it */
        resume(c);                             /* from here on c belongs to the MHD thread */
        pthread_mutex_lock(&h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Queues c for a worker and suspends its connection, or fills c->resp with 503. Returns true if queued. */
static bool work_submit(wp_http *h, wp_call *c) {
    pthread_mutex_lock(&h->mu);
    if (h->stopping || h->queue_depth >= h->cfg.max_queue) {
        bool busy = !h->stopping;
        pthread_mutex_unlock(&h->mu);
        if (busy) {
            atomic_fetch_add(&h->rejected_busy, 1);
            resp_fail(&c->resp, 503, "busy", "", "the work queue is full; retry shortly");
        } else {
            resp_fail(&c->resp, 503, "shutting_down", "", "the server is stopping");
        }
        snprintf(c->resp.retry_after, sizeof c->resp.retry_after, "%s", WP_HTTP_RETRY_AFTER_S);
        return false;
    }
    /* Suspend before a worker can see c, so its resume always follows this suspend. */
    c->loop = wp_http_loop_current(); /* this thread's (NULL on libmicrohttpd's pool: it signals resumes) */
    MHD_suspend_connection(c->mc);
    wp_reqlog_queued(&c->rec);
    c->state = CALL_QUEUED;
    c->suspended = true;
    c->next = NULL;
    if (h->queue_tail)
        h->queue_tail->next = c;
    else
        h->queue_head = c;
    h->queue_tail = c;
    h->queue_depth++;
    h->in_work++;
    pthread_mutex_unlock(&h->mu);
    pthread_cond_signal(&h->work_cv); /* after the unlock: the woken worker does not wait for our lock */
    return true;
}

/* ---------- libmicrohttpd callbacks ---------- */

static const char *header_of(void *mc, const char *name) {
    return MHD_lookup_connection_value(mc, MHD_HEADER_KIND, name);
}
static const struct sockaddr *peer_of(struct MHD_Connection *mc) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return ci ? ci->client_addr : NULL;
}

/* The announced Content-Length of c's request: a body past the limit is answered 413 before it is
 * read; a raw body of a route with stream hooks goes to them as it arrives; else the body's buffer is
 * made at once. MHD_YES to go on reading. */
static enum MHD_Result announced_length(wp_http *h, wp_call *c, struct MHD_Connection *mc, const char *method,
                                        const char *url, const char *length) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(length, &end, 10);
    if (errno == ERANGE || n > h->cfg.max_body) {
        char msg[96];
        snprintf(msg, sizeof msg, "the body is larger than the %zu-byte limit", h->cfg.max_body);
        resp_fail(&c->resp, 413, "body_too_large", "body", msg);
        return send_resp(h, c, NULL); /* answered before the body: MHD will not read it */
    }
    c->length = n;
    c->has_length = true;
    /* A raw body of a route with stream hooks goes to them as it arrives (a device buffer
     * filled while the rest is still on the wire), or is refused before it is read. */
    if (n && c->route->stream &&
        is_octet_stream(MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE))) {
        request_fill(c, mc, method, url);
        c->sink = c->route->stream->open(h->app, &c->req, n, &c->resp);
        if (c->sink) {
            atomic_fetch_add(&h->streamed, 1);
            return MHD_YES;
        }
        if (c->resp.status) return send_resp(h, c, NULL); /* refused before the body */
    }
    /* A known length gets its whole buffer now, of that size: a large upload is copied once,
     * from the socket into it, never again by growing; a small one takes no more than it needs. */
    if (n && (c->body = malloc((size_t)n + 1))) c->body_cap = (size_t)n + 1;
    return MHD_YES;
}

/* The first call of a request: its headers are in. Access checks, the route, the announced size;
 * then wait for the body. */
static enum MHD_Result on_headers(wp_http *h, struct MHD_Connection *mc, const char *url, const char *method,
                                  void **con_cls) {
    wp_call *c = call_new(h);
    if (!c) return MHD_NO;
    *con_cls = c;
    c->mc = mc;
    c->req.t_start_ns = wp_now_ns();
    wp_reqlog_begin(h->cfg.reqlog, &c->rec, method, url, header_of, mc, peer_of(mc));
    atomic_fetch_add(&h->requests, 1);
    atomic_fetch_add(&h->active, 1); /* until on_completed */
    if (access_refused(h, c, mc, method, url)) return send_resp(h, c, NULL);
    bool path_known;
    c->route = route_find(h->routes, method, url, &path_known);
    if (!c->route && !path_known) {
        resp_fail(&c->resp, 404, "not_found", "", "no such endpoint");
        return send_resp(h, c, NULL);
    }
    if (!c->route) {
        char allow[128];
        route_allow(h->routes, url, allow, sizeof allow);
        resp_fail(&c->resp, 405, "method_not_allowed", "", "method not allowed here");
        return send_resp(h, c, allow);
    }
    const char *length = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return length ? announced_length(h, c, mc, method, url, length) : MHD_YES;
}

/* n more bytes of the body: to the stream hooks, or into the body's buffer (past the limit: dropped,
 * and answered 413 at the end). MHD_NO closes the connection. */
static enum MHD_Result on_body_piece(wp_http *h, wp_call *c, struct MHD_Connection *mc, const char *upload_data,
                                     size_t n) {
    if (c->sink) { /* MHD hands over no more than Content-Length, which was checked */
        if (c->state == CALL_READING && c->route->stream->write(c->sink, upload_data, n, c->body_len, &c->stream_err))
            c->state = CALL_STREAM_FAILED; /* drop the rest; answer at the end */
        c->body_len += n;
        return c->body_len < c->length && peer_gone(mc) ? MHD_NO : MHD_YES; /* MHD_NO: close it now */
    }
    if (c->state == CALL_READING && n > h->cfg.max_body - c->body_len) {
        c->state = CALL_TOO_LARGE; /* a chunked body past the limit: drop what came, answer at the end */
        free(c->body);
        c->body = NULL;
        c->body_len = c->body_cap = 0;
    }
    if (c->state == CALL_TOO_LARGE) {
        c->discarded += n;
        return c->discarded > WP_HTTP_DISCARD_MAX ? MHD_NO : MHD_YES;
    }
    if (c->body_len + n + 1 > c->body_cap) {
        size_t cap = c->body_cap ? c->body_cap : WP_HTTP_BODY_INITIAL;
        while (cap < c->body_len + n + 1) cap *= 2;
        if (cap > h->cfg.max_body + 1) cap = h->cfg.max_body + 1;
        char *grown = realloc(c->body, cap);
        if (!grown) return MHD_NO;
        c->body = grown;
        c->body_cap = cap;
    }
    memcpy(c->body + c->body_len, upload_data, n);
    c->body_len += n;
    c->body[c->body_len] = 0;
    return c->has_length && c->body_len < c->length && peer_gone(mc) ? MHD_NO : MHD_YES;
}

/* The whole request is in: answered here (a route without work, or a small job that need not wait),
 * or handed to a worker (the connection suspended until it is done). */
static enum MHD_Result on_body_done(wp_http *h, wp_call *c, struct MHD_Connection *mc, const char *url,
                                    const char *method) {
    if (c->state == CALL_TOO_LARGE) {
        char msg[96];
        snprintf(msg, sizeof msg, "the body is larger than the %zu-byte limit", h->cfg.max_body);
        resp_fail(&c->resp, 413, "body_too_large", "body", msg);
        return send_resp(h, c, NULL);
    }
    if (c->state == CALL_QUEUED) return MHD_YES; /* not expected: a suspended call is not called back */
    if (c->state == CALL_STREAM_FAILED) {
        wp_resp_error(&c->resp, &c->stream_err);
        return send_resp(h, c, NULL);
    }
    c->req.t_body_ns = wp_now_ns();
    request_fill(c, mc, method, url);
    c->req.body = c->body_len && !c->sink ? c->body : NULL;
    c->req.body_len = c->body_len;
    c->req.sink = c->sink;
    if (c->sink) atomic_fetch_add(&h->streamed_bytes, c->body_len);
    if (!(c->route->flags & WP_ROUTE_WORK)) {
        c->route->fn(h->app, &c->req, &c->resp);
        return send_resp(h, c, NULL);
    }
    if (c->route->flags & WP_ROUTE_TRY_INLINE) {
        c->req.may_defer = true;
        c->route->fn(h->app, &c->req, &c->resp);
        c->req.may_defer = false;
        if (!c->resp.defer) {
            atomic_fetch_add(&h->answered_inline, 1);
            return send_resp(h, c, NULL);
        }
        atomic_fetch_add(&h->deferred, 1);
        free(c->resp.body);
        memset(&c->resp, 0, sizeof c->resp);
    }
    if (work_submit(h, c)) return MHD_YES;
    return send_resp(h, c, NULL);
}

/* libmicrohttpd's access handler: called once with the headers, once per piece of the body, once
 * when it is all in (and again after a worker finished a suspended call). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    (void)version;
    wp_http *h = cls;
    wp_call *c = *con_cls;
    if (!c) return on_headers(h, mc, url, method, con_cls);
    if (c->state == CALL_DONE) return send_resp(h, c, NULL); /* resumed after a worker ran the handler */
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        return on_body_piece(h, c, mc, upload_data, n);
    }
    return on_body_done(h, c, mc, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls, enum MHD_RequestTerminationCode why) {
    (void)mc;
    wp_http *h = cls;
    wp_call *c = *con_cls;
    if (!c) return;
    *con_cls = NULL;
    atomic_fetch_sub(&h->active, 1);
    wp_reqlog_end(h->cfg.reqlog, &c->rec, c->route, c->body_len + c->discarded,
                  why == MHD_REQUEST_TERMINATED_COMPLETED_OK);
    if (c->suspended) {
        pthread_mutex_lock(&h->mu);
        h->in_work--;
        pthread_cond_broadcast(&h->idle_cv);
        pthread_mutex_unlock(&h->mu);
    }
    if (c->sink) c->route->stream->close(c->sink);
    free(c->body);
    free(c->resp.body);
    call_free(h, c);
}

static void on_log(void *cls, const char *fmt, va_list ap) {
    wp_http *h = cls;
    if (atomic_load(&h->starting)) vsnprintf(h->start_log, sizeof h->start_log, fmt, ap);
}

/* ---------- connection guard hooks (conn_guard.h) ---------- */

static void *conn_token(struct MHD_Connection *mc) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* MHD_OPTION_NOTIFY_CONNECTION: every accepted connection is watched until it closes. */
static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    wp_http *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *peer = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        *socket_context = ci ? wp_guard_conn_open(h->guard, ci->connect_fd, peer ? peer->client_addr : NULL) : NULL;
    } else {
        wp_guard_conn_close(h->guard, *socket_context); /* MHD closes the descriptor after this returns */
        *socket_context = NULL;
    }
}

/* on_request and on_completed as MHD calls them: the guard learns when a request's headers are in
 * (the first call of a request) and when the request is over. */
static enum MHD_Result on_request_guarded(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
                                          const char *version, const char *upload_data, size_t *upload_data_size,
                                          void **con_cls) {
    wp_http *h = cls;
    if (!*con_cls) wp_guard_request_begin(h->guard, conn_token(mc));
    return on_request(cls, mc, url, method, version, upload_data, upload_data_size, con_cls);
}

static void on_completed_guarded(void *cls, struct MHD_Connection *mc, void **con_cls,
                                 enum MHD_RequestTerminationCode why) {
    wp_http *h = cls;
    wp_guard_request_end(h->guard, conn_token(mc));
    on_completed(cls, mc, con_cls, why);
}

/* ---------- start / stop ---------- */

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
        free(c);
    }
    pthread_mutex_destroy(&h->calls_mu);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->work_cv);
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
    OPT(MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h);
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
    struct MHD_Daemon *d =
        MHD_start_daemon(flags, (uint16_t)h->cfg.port, NULL, NULL, on_request_guarded, h, MHD_OPTION_EXTERNAL_LOGGER,
                         on_log, h, MHD_OPTION_ARRAY, transport, MHD_OPTION_CONNECTION_MEMORY_LIMIT, h->cfg.conn_memory,
                         MHD_OPTION_NOTIFY_COMPLETED, on_completed_guarded, h, MHD_OPTION_THREAD_POOL_SIZE, pool,
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
    pthread_cond_init(&h->work_cv, NULL);
    pthread_cond_init(&h->idle_cv, NULL);

    h->workers = calloc((size_t)h->cfg.workers, sizeof *h->workers);
    if (!h->workers) {
        WP_FAIL(err, 500, "internal", "", "out of memory");
        http_free(h);
        return NULL;
    }
    for (; h->workers_started < h->cfg.workers; h->workers_started++) {
        if (pthread_create(&h->workers[h->workers_started], NULL, worker_main, h) != 0) {
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
        pthread_cond_broadcast(&h->work_cv);
        pthread_mutex_unlock(&h->mu);
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
    wp_call *waiting = h->queue_head;
    h->queue_head = h->queue_tail = NULL;
    h->queue_depth = 0;
    pthread_cond_broadcast(&h->work_cv);
    pthread_mutex_unlock(&h->mu);

    /* 2. Work nobody started is answered 503; work under way finishes. */
    while (waiting) {
        wp_call *c = waiting;
        waiting = c->next;
        resp_fail(&c->resp, 503, "shutting_down", "", "the server is stopping");
        snprintf(c->resp.retry_after, sizeof c->resp.retry_after, "%s", WP_HTTP_RETRY_AFTER_S);
        resume(c);
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
    out->queue_depth = h->queue_depth;
    pthread_mutex_unlock(&h->mu);
}
