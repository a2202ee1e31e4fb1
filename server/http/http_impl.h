/* http_impl.h — wp_http and a request's wp_call as the http*.c files see them (http.c: requests, routing,
 * the work queue, libmicrohttpd's callbacks; http_resp.c: responses; http_start.c: start, stop,
 * transport). Nothing else includes it. */
#ifndef WP_HTTP_IMPL_H
#define WP_HTTP_IMPL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "access.h"
#include "conn_guard.h"
#include "fairq.h"

#include "http.h"
#include "http_loop.h"
#include "reqlog.h"
#include <semaphore.h>

#define WP_HTTP_RETRY_AFTER_S "1"

/* One request, from its first callback to MHD's "completed" notification. */
typedef enum { CALL_READING, CALL_TOO_LARGE, CALL_STREAM_FAILED, CALL_QUEUED, CALL_DONE } call_state;

typedef struct wp_call {
    struct wp_call *next; /* the idle calls' link */
    wp_fair_node qnode;   /* the work queue's (fairq.h): taken in turn by user */
    struct MHD_Connection *mc;
    wp_http_loop *loop; /* its daemon's event loop, to wake after a resume (set when suspended; NULL: none) */
    const wp_route *route;
    call_state state;
    bool suspended;       /* counted in wp_http.in_work until completed */
    struct wp_http *http; /* its server (wp_req_park and wp_req_unpark reach it from the request) */
    wp_park_fn park_fn;   /* parked (wp_req_park): the answer's maker once unparked, then NULL */
    void *park_ctx;
    void (*release)(void *); /* wp_req_on_end's: called once, by call_end */
    void *release_ctx;
    bool parked; /* the handler parked the call (the HTTP thread's own note) */
    /* a call parked on warpd's own loop stays in its daemon, not suspended: PARK_RUNNING until the
     * other thread is done (PARK_DONE), or PARK_ORPHAN when its connection ended first (http.c) */
    atomic_int park_state;
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
    /* last: kept when a call is reused (wp_req_room's), freed with the call */
    void *room;
    size_t room_size;
    char *text; /* the last small answer's buffer, kept for the next one (wp_req_take_text) */
    size_t text_cap;
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
    sem_t work_sem;         /* a post per call queued, and one per worker when stopping (no condvar: its
                               internal lock made HTTP threads wait on workers under load) */
    pthread_cond_t idle_cv; /* in_work dropped */
    wp_fairq queue;         /* WP_ROUTE_WORK calls waiting for a worker, round-robin by user (fairq.h) */
    int in_work;
    atomic_int workers_busy; /* not under mu: a worker counts itself out without the queue's lock */
    bool stopping;
    pthread_t *workers;
    int workers_started;

    atomic_uint_least64_t requests, responses_2xx, responses_4xx, responses_5xx, rejected_busy;
    atomic_uint_least64_t answered_inline, deferred, handed, streamed, streamed_bytes;
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

    atomic_int parked; /* calls parked (wp_req_park) and not yet unparked: the stop waits for them */
};

/* http_resp.c */
void http_resp_set(wp_resp *r, int status, const char *content_type, char *body, size_t n);
void http_resp_fail(wp_resp *r, int status, const char *code, const char *field, const char *msg);
/* Hands c->resp to libmicrohttpd (which frees the body, or leaves a small kept answer's to c: c->text) and
 * counts it. allow: Allow header or NULL. */
enum MHD_Result http_send_resp(wp_http *h, wp_call *c, const char *allow);

/* http.c */
void http_call_destroy(wp_call *c); /* an idle call freed, its room and kept text with it */
void http_resume(wp_call *c);       /* c done: its connection back to its daemon (any thread) */
void *http_worker_main(void *arg);  /* a worker thread of h (arg) */
/* libmicrohttpd's callbacks, cls the wp_http (MHD_OPTION_NOTIFY_CONNECTION, the access handler,
 * MHD_OPTION_NOTIFY_COMPLETED) */
void http_on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe);
enum MHD_Result http_on_request_guarded(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
                                        const char *version, const char *upload_data, size_t *upload_data_size,
                                        void **con_cls);
void http_on_completed_guarded(void *cls, struct MHD_Connection *mc, void **con_cls,
                               enum MHD_RequestTerminationCode why);

#endif
