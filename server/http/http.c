/* http.c — a request's way through libmicrohttpd: access checks, reads bodies up to a limit, routes by
 * method and path, runs WP_ROUTE_WORK handlers on a worker pool while the connection is suspended,
 * hands raw bodies of routes with stream hooks to them chunk by chunk as they arrive.
 * Owns: wp_call (a request, and the idle ones kept for the next: each thread's own, then the
 * server's), the routing, the work queue and its workers. Responses are http_resp.c's; start, stop and
 * the transport http_start.c's.
 * Knows nothing of what a handler does. */
#include "http_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/on_behalf.h"

/* Limits of a request's body, fixed by this module (the rest are in http_start.c). */
#define WP_HTTP_DISCARD_MAX                                                                                            \
    (64u << 20)                            /* bytes of an oversize chunked body read and dropped before                \
                                              the connection is cut instead of answered 413 */
#define WP_HTTP_BODY_INITIAL (16u * 1024u) /* first body buffer; grows by doubling */

#define WP_HTTP_IDLE_CALLS 64

/* Each thread's idle calls: a request's call is made and ended on its HTTP thread, so the common case
 * takes no lock. A thread's are freed when it ends (the key's destructor); past WP_HTTP_THREAD_CALLS,
 * and when the key cannot be had, the server's shared list (under calls_mu) takes them. */
#define WP_HTTP_THREAD_CALLS 32
typedef struct {
    wp_call *head;
    int n;
    bool registered; /* with calls_key: its destructor frees them */
} call_cache;
static _Thread_local call_cache thread_calls;
static pthread_key_t calls_key;
static pthread_once_t calls_once = PTHREAD_ONCE_INIT;
static bool calls_key_ok;

static void calls_drop(void *p) {
    call_cache *cc = p;
    while (cc->head) {
        wp_call *c = cc->head;
        cc->head = c->next;
        http_call_destroy(c);
    }
    cc->n = 0;
    cc->registered = false;
}

static void calls_key_make(void) { calls_key_ok = pthread_key_create(&calls_key, calls_drop) == 0; }

/* This thread's cache, registered for its end; NULL when it cannot be. */
static call_cache *thread_cache(void) {
    call_cache *cc = &thread_calls;
    if (!cc->registered) {
        pthread_once(&calls_once, calls_key_make);
        cc->registered = calls_key_ok && pthread_setspecific(calls_key, cc) == 0;
    }
    return cc->registered ? cc : NULL;
}

/* A zeroed call: this thread's idle one, the server's, else a new one. Any thread. */
static wp_call *call_new(wp_http *h) {
    call_cache *cc = &thread_calls;
    wp_call *c = cc->head;
    if (c) {
        cc->head = c->next;
        cc->n--;
    } else {
        pthread_mutex_lock(&h->calls_mu);
        if ((c = h->idle_calls)) {
            h->idle_calls = c->next;
            h->n_idle_calls--;
        }
        pthread_mutex_unlock(&h->calls_mu);
    }
    if (!c) return calloc(1, sizeof *c);
    memset(c, 0, offsetof(wp_call, room)); /* the room stays the call's */
    return c;
}

/* c (its own allocations freed already) kept idle: by this thread, else by the server up to
 * WP_HTTP_IDLE_CALLS, else freed. Any thread. */
static void call_free(wp_http *h, wp_call *c) {
    call_cache *cc = thread_cache();
    if (cc && cc->n < WP_HTTP_THREAD_CALLS) {
        c->next = cc->head;
        cc->head = c;
        cc->n++;
        return;
    }
    pthread_mutex_lock(&h->calls_mu);
    bool keep = h->n_idle_calls < WP_HTTP_IDLE_CALLS;
    if (keep) {
        c->next = h->idle_calls;
        h->idle_calls = c;
        h->n_idle_calls++;
    }
    pthread_mutex_unlock(&h->calls_mu);
    if (!keep) http_call_destroy(c);
}

void http_call_destroy(wp_call *c) {
    free(c->room);
    free(c->text);
    free(c);
}

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
static const struct sockaddr *peer_of(struct MHD_Connection *mc) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return ci ? ci->client_addr : NULL;
}

/* A peer on this machine: a Unix socket, or a loopback address (127/8, ::1, ::ffff:127/104). */
static bool peer_is_local(const wp_http *h, struct MHD_Connection *mc) {
    const struct sockaddr *sa = h->cfg.unix_path ? NULL : peer_of(mc);
    if (h->cfg.unix_path || (sa && sa->sa_family == AF_UNIX)) return true;
    if (sa && sa->sa_family == AF_INET) return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (!sa || sa->sa_family != AF_INET6) return false;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

static void request_fill(wp_http *h, wp_call *c, struct MHD_Connection *mc, const char *method, const char *url) {
    const char *type = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    const char *accept = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    c->req.method = method;
    c->req.path = url;
    c->req.content_type = type ? type : "";
    c->req.accept = accept ? accept : "";
    c->req.conn = mc;
    c->req.peer_local = peer_is_local(h, mc);
}

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
    c->req.user = c->rec.user = c->access.user;
    if (c->access.retry_after_s)
        snprintf(c->resp.retry_after, sizeof c->resp.retry_after, "%u", c->access.retry_after_s);
    if (c->access.action == WP_ACCESS_PASS) return false;
    if (c->access.action == WP_ACCESS_PREFLIGHT)
        http_resp_set(&c->resp, 204, NULL, NULL, 0);
    else
        wp_resp_error(&c->resp, &c->access.err);
    return true;
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
void http_resume(wp_call *c) {
    struct MHD_Connection *mc = c->mc;
    wp_http_loop *loop = c->loop;
    c->state = CALL_DONE;
    MHD_resume_connection(mc);
    wp_http_loop_wake(loop);
}

void *http_worker_main(void *arg) {
    wp_http *h = arg;
    if (setpriority(PRIO_PROCESS, (id_t)gettid(), WORKER_NICE) != 0) { /* best effort */
    }
    for (;;) {
        while (sem_wait(&h->work_sem) != 0) { /* EINTR */
        }
        pthread_mutex_lock(&h->mu);
        wp_fair_node *n = wp_fairq_pop(&h->queue); /* the next user in turn */
        if (!n && h->stopping) break;              /* stopping, nothing left */
        if (!n) {                                  /* taken by another worker's earlier post */
            pthread_mutex_unlock(&h->mu);
            continue;
        }
        wp_call *c = (wp_call *)(void *)((char *)n - offsetof(wp_call, qnode));
        atomic_fetch_add(&h->workers_busy, 1);
        pthread_mutex_unlock(&h->mu);
        wp_reqlog_dequeued(h->cfg.reqlog, &c->rec);

        c->req.t_handler_ns = wp_now_ns();
        wp_on_behalf_set(wp_user_name(c->req.user)); /* its user's turn at a device's lanes */
        c->route->fn(h->app, &c->req, &c->resp);
        wp_on_behalf_set(NULL);
        atomic_fetch_sub(&h->workers_busy, 1); /* before the reply can reach the client, so stats never lag it */
        http_resume(c);                        /* from here on c belongs to the MHD thread */
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* ---------- parking (http.h) ---------- */

/* A call parked on warpd's own loop (http_loop.h) is not suspended: suspending and resuming cost its
 * HTTP thread two epoll_ctl calls, an empty read and a wake a request. Its daemon asks the handler
 * again each pass (on_request), which answers once park_state says the other thread is done. */
enum { PARK_NONE, PARK_RUNNING, PARK_DONE, PARK_ORPHAN };

static wp_call *call_of(const wp_req *req) { return (wp_call *)(void *)((char *)req - offsetof(wp_call, req)); }

bool wp_req_park(const wp_req *req, wp_park_fn finish, void *ctx) {
    if (!req->conn || !req->may_defer) return false;
    wp_call *c = call_of(req);
    c->loop = wp_http_loop_current();
    c->park_fn = finish; /* NULL: the other thread fills resp */
    c->park_ctx = ctx;
    c->parked = true;
    c->state = CALL_QUEUED;
    atomic_fetch_add(&c->http->parked, 1);
    if (c->loop) { /* the hand-over to the other thread publishes this store */
        atomic_store_explicit(&c->park_state, PARK_RUNNING, memory_order_relaxed);
        wp_http_loop_park(c->loop);
    } else {
        MHD_suspend_connection(c->mc);
    }
    return true;
}

static void call_end(wp_http *h, wp_call *c, bool completed);

void wp_req_on_end(const wp_req *req, void (*release)(void *ctx), void *ctx) {
    wp_call *c = call_of(req);
    c->release = release;
    c->release_ctx = ctx;
}

void *wp_req_room(const wp_req *req, size_t bytes) {
    if (!req->conn || !req->may_defer) return NULL;
    wp_call *c = call_of(req);
    if (c->room_size < bytes) {
        free(c->room);
        c->room = malloc(bytes);
        c->room_size = c->room ? bytes : 0;
    }
    return c->room;
}

char *wp_req_take_text(const wp_req *req, size_t *cap) {
    *cap = 0;
    if (!req->conn) return NULL;
    wp_call *c = call_of(req);
    char *t = c->text;
    *cap = t ? c->text_cap : 0;
    c->text = NULL, c->text_cap = 0;
    return t;
}

void wp_req_unpark(const wp_req *req) {
    wp_call *c = call_of(req);
    wp_http *h = c->http;
    wp_http_loop *loop = c->loop;
    if (!loop) {
        http_resume(c); /* from here on c belongs to the HTTP thread */
    } else {            /* from the exchange on c belongs to the HTTP thread, unless orphaned */
        if (atomic_exchange(&c->park_state, PARK_DONE) == PARK_ORPHAN) call_end(h, c, false);
        wp_http_loop_ended(loop);
    }
    atomic_fetch_sub(&h->parked, 1); /* h and the loops outlive it: the stop waits for this */
}

/* On the HTTP thread, at each call of the handler: true while c is parked on its loop and the other
 * thread runs it; false when it is not parked there, or once it is done (c is then the HTTP thread's
 * again, as after a resume). */
static bool park_running(wp_call *c) {
    const int st = atomic_load_explicit(&c->park_state, memory_order_acquire);
    if (st != PARK_DONE) return st != PARK_NONE;
    atomic_store_explicit(&c->park_state, PARK_NONE, memory_order_relaxed);
    wp_http_loop_unpark(c->loop);
    c->state = CALL_DONE;
    return false;
}

/* On the HTTP thread, when c's connection ends while it is parked on its loop: true if the other
 * thread still runs it (it now ends c, wp_req_unpark), false if it was done. */
static bool park_orphaned(wp_call *c) {
    if (atomic_load_explicit(&c->park_state, memory_order_relaxed) == PARK_NONE) return false;
    wp_http_loop_unpark(c->loop);
    int running = PARK_RUNNING;
    return atomic_compare_exchange_strong(&c->park_state, &running, PARK_ORPHAN);
}

/* A parked call back on its HTTP thread: its answer made (finish), or the handler run again on a
 * worker when finish asks (resp->defer). */
static void park_finish(wp_http *h, wp_call *c) {
    wp_park_fn fn = c->park_fn;
    c->parked = false;
    c->req.may_defer = false;
    if (fn) fn(h->app, &c->req, &c->resp, c->park_ctx);
}

/* Queues c for a worker and suspends its connection, or fills c->resp with 503. Returns true if queued. */
static bool work_submit(wp_http *h, wp_call *c) {
    pthread_mutex_lock(&h->mu);
    if (h->stopping || h->queue.depth >= h->cfg.max_queue) {
        bool busy = !h->stopping;
        pthread_mutex_unlock(&h->mu);
        if (busy) {
            atomic_fetch_add(&h->rejected_busy, 1);
            http_resp_fail(&c->resp, 503, "busy", "", "the work queue is full; retry shortly");
        } else {
            http_resp_fail(&c->resp, 503, "shutting_down", "", "the server is stopping");
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
    wp_fairq_push(&h->queue, &c->qnode, wp_user_name(c->req.user));
    h->in_work++;
    pthread_mutex_unlock(&h->mu);
    sem_post(&h->work_sem); /* after the unlock: the woken worker does not wait for our lock */
    return true;
}

/* ---------- libmicrohttpd callbacks ---------- */

static const char *header_of(void *mc, const char *name) {
    return MHD_lookup_connection_value(mc, MHD_HEADER_KIND, name);
}

/* Whether the client waits for "100 Continue" before it sends the body. */
static bool expects_continue(struct MHD_Connection *mc) {
    const char *e = MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT);
    return e && !strcasecmp(e, "100-continue");
}

/* The announced Content-Length of c's request: a body past the limit is answered 413 (before it is
 * read where the client waits for that or it is past the limit by more than WP_HTTP_DISCARD_MAX; else
 * after it is read and dropped); a raw body of a route with stream hooks goes to them as it arrives; else the body's
 * buffer is made at once. MHD_YES to go on reading. */
static enum MHD_Result announced_length(wp_http *h, wp_call *c, struct MHD_Connection *mc, const char *method,
                                        const char *url, const char *length) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(length, &end, 10);
    if (errno == ERANGE || n > h->cfg.max_body) {
        if (errno != ERANGE && n - h->cfg.max_body <= WP_HTTP_DISCARD_MAX && !expects_continue(mc)) {
            /* The body is on its way: read and dropped, then answered (on_body_done). Answered now and
             * closed, a reset of the connection with the body still arriving can reach the client before
             * the answer does (seen over TLS). */
            c->state = CALL_TOO_LARGE;
            c->length = n;
            c->has_length = true;
            return MHD_YES;
        }
        char msg[96];
        snprintf(msg, sizeof msg, "the body is larger than the %zu-byte limit", h->cfg.max_body);
        http_resp_fail(&c->resp, 413, "body_too_large", "body", msg);
        return http_send_resp(h, c, NULL); /* answered before the body: MHD will not read it */
    }
    c->length = n;
    c->has_length = true;
    /* A raw body of a route with stream hooks goes to them as it arrives (a device buffer
     * filled while the rest is still on the wire), or is refused before it is read. */
    if (n && c->route->stream &&
        is_octet_stream(MHD_lookup_connection_value(mc, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE))) {
        request_fill(h, c, mc, method, url);
        c->sink = c->route->stream->open(h->app, &c->req, n, &c->resp);
        if (c->sink) {
            atomic_fetch_add(&h->streamed, 1);
            return MHD_YES;
        }
        if (c->resp.status) return http_send_resp(h, c, NULL); /* refused before the body */
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
    c->http = h;
    c->req.t_start_ns = wp_now_ns();
    wp_reqlog_begin(h->cfg.reqlog, &c->rec, method, url, header_of, mc, peer_of(mc));
    atomic_fetch_add(&h->requests, 1);
    atomic_fetch_add(&h->active, 1); /* until on_completed */
    if (access_refused(h, c, mc, method, url)) return http_send_resp(h, c, NULL);
    bool path_known;
    c->route = route_find(h->routes, method, url, &path_known);
    if (!c->route && !path_known) {
        http_resp_fail(&c->resp, 404, "not_found", "", "no such endpoint");
        return http_send_resp(h, c, NULL);
    }
    if (!c->route) {
        char allow[128];
        route_allow(h->routes, url, allow, sizeof allow);
        http_resp_fail(&c->resp, 405, "method_not_allowed", "", "method not allowed here");
        return http_send_resp(h, c, allow);
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
    if (c->state == CALL_TOO_LARGE) { /* a known length was checked in announced_length */
        c->discarded += n;
        return !c->has_length && c->discarded > WP_HTTP_DISCARD_MAX ? MHD_NO : MHD_YES;
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
        http_resp_fail(&c->resp, 413, "body_too_large", "body", msg);
        return http_send_resp(h, c, NULL);
    }
    if (c->state == CALL_QUEUED) return MHD_YES; /* not expected: a suspended call is not called back */
    if (c->state == CALL_STREAM_FAILED) {
        wp_resp_error(&c->resp, &c->stream_err);
        return http_send_resp(h, c, NULL);
    }
    c->req.t_body_ns = wp_now_ns();
    request_fill(h, c, mc, method, url);
    c->req.body = c->body_len && !c->sink ? c->body : NULL;
    c->req.body_len = c->body_len;
    c->req.sink = c->sink;
    if (c->sink) atomic_fetch_add(&h->streamed_bytes, c->body_len);
    c->req.t_handler_ns = c->req.t_body_ns;
    if (!(c->route->flags & WP_ROUTE_WORK)) {
        c->route->fn(h->app, &c->req, &c->resp);
        return http_send_resp(h, c, NULL);
    }
    if (c->route->flags & WP_ROUTE_TRY_INLINE) {
        c->req.may_defer = true;
        c->route->fn(h->app, &c->req, &c->resp);
        c->req.may_defer = false;
        if (c->parked) { /* unparked later (wp_req_unpark): then park_finish */
            atomic_fetch_add(&h->handed, 1);
            return MHD_YES;
        }
        if (!c->resp.defer) {
            atomic_fetch_add(&h->answered_inline, 1);
            return http_send_resp(h, c, NULL);
        }
        atomic_fetch_add(&h->deferred, 1);
        free(c->resp.body);
        memset(&c->resp, 0, sizeof c->resp);
    }
    if (work_submit(h, c)) return MHD_YES;
    return http_send_resp(h, c, NULL);
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
    if (park_running(c)) return MHD_YES;
    if (c->state == CALL_DONE && c->parked) { /* unparked: its answer, or a worker after all */
        park_finish(h, c);
        if (!c->resp.defer) return http_send_resp(h, c, NULL);
        atomic_fetch_add(&h->deferred, 1);
        free(c->resp.body);
        memset(&c->resp, 0, sizeof c->resp);
        return work_submit(h, c) ? MHD_YES : http_send_resp(h, c, NULL);
    }
    if (c->state == CALL_DONE) return http_send_resp(h, c, NULL); /* resumed after a worker ran the handler */
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        return on_body_piece(h, c, mc, upload_data, n);
    }
    return on_body_done(h, c, mc, url, method);
}

/* The end of c: its log line and metrics, its memory. On its HTTP thread, or on the thread that ran it
 * when its connection ended while it was parked. */
static void call_end(wp_http *h, wp_call *c, bool completed) {
    wp_reqlog_end(h->cfg.reqlog, &c->rec, c->route, c->body_len + c->discarded, completed);
    if (c->suspended) {
        pthread_mutex_lock(&h->mu);
        h->in_work--;
        pthread_cond_broadcast(&h->idle_cv);
        pthread_mutex_unlock(&h->mu);
    }
    if (c->sink) c->route->stream->close(c->sink);
    if (c->release) c->release(c->release_ctx);
    free(c->body);
    free(c->resp.body);
    call_free(h, c);
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls, enum MHD_RequestTerminationCode why) {
    (void)mc;
    wp_http *h = cls;
    wp_call *c = *con_cls;
    if (!c) return;
    *con_cls = NULL;
    const bool orphaned = park_orphaned(c); /* then the thread that runs it ends it */
    atomic_fetch_sub(&h->active, 1);        /* after: once it no longer counts, who ends it is settled */
    if (!orphaned) call_end(h, c, why == MHD_REQUEST_TERMINATED_COMPLETED_OK);
}

/* ---------- connection guard hooks (conn_guard.h) ---------- */

static void *conn_token(struct MHD_Connection *mc) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* MHD_OPTION_NOTIFY_CONNECTION: every accepted connection is watched until it closes. */
void http_on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
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
enum MHD_Result http_on_request_guarded(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
                                        const char *version, const char *upload_data, size_t *upload_data_size,
                                        void **con_cls) {
    wp_http *h = cls;
    if (!*con_cls) wp_guard_request_begin(h->guard, conn_token(mc));
    return on_request(cls, mc, url, method, version, upload_data, upload_data_size, con_cls);
}

void http_on_completed_guarded(void *cls, struct MHD_Connection *mc, void **con_cls,
                               enum MHD_RequestTerminationCode why) {
    wp_http *h = cls;
    wp_guard_request_end(h->guard, conn_token(mc));
    on_completed(cls, mc, con_cls, why);
}
