/* http_loop.c — warpd's event loop for one single-thread libmicrohttpd daemon (http_loop.h): an epoll
 * set of the daemon's own epoll descriptor and an eventfd, polled without sleeping for busy_poll_us
 * after the daemon last had something to do, else waited on up to the daemon's next timeout; while
 * parked calls wait on other threads, not polled: woken by their ends.
 * Owns: wp_http_loop. */
#include "http_loop.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

enum { TAG_DAEMON = 1, TAG_WAKE = 2 };

/* A loop with parked calls (it does not busy-poll then) sleeps this long at most between passes: an
 * event, or the end of a parked call (wp_http_loop_ended), wakes it sooner. */
#define WP_LOOP_PARKED_SLEEP_MS 1

static _Thread_local wp_http_loop *current_loop; /* the loop this thread runs (set by loop_main) */

struct wp_http_loop {
    struct MHD_Daemon *d;
    int ep;           /* the daemon's epoll descriptor and wake */
    int wake;         /* eventfd: a resume, a quiesce or a stop */
    uint64_t busy_ns; /* the busy-poll window */
    wp_http_loop_may_poll may_poll;
    void *may_poll_ctx;
    pthread_t thread;

    pthread_mutex_t mu; /* guards the four below */
    pthread_cond_t cv;  /* quiesced */
    bool quiesce_asked, quiesced, stop;
    atomic_bool asked;    /* quiesce or stop asked (else a wake is only a resume: no lock to take) */
    MHD_socket listen_fd; /* what MHD_quiesce_daemon gave back */

    /* Parked calls (wp_http_loop_park): the loop's thread counts them; other threads count their ends
     * and wake the loop only while it sleeps (ended and sleeping: each side writes one, then reads the
     * other, both sequentially consistent, so an end is never missed by a loop going to sleep). */
    int parked;           /* the loop's thread's */
    unsigned ended_seen;  /* ended as of the loop's last pass */
    atomic_uint ended;    /* ends signalled so far */
    atomic_bool sleeping; /* the loop sleeps while calls are parked */
};

/* The daemon's own bound on the wait, in ms: 0 when a connection needs processing now, -1 for none. */
static int daemon_timeout_ms(struct MHD_Daemon *d) {
    MHD_UNSIGNED_LONG_LONG ms;
    if (MHD_get_timeout(d, &ms) != MHD_YES) return -1;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* On the loop's thread, after the eventfd fired: does what was asked; true when the loop is to end. */
static bool take_requests(wp_http_loop *l) {
    uint64_t n;
    if (read(l->wake, &n, sizeof n) < 0) { /* one read takes every wake so far (EAGAIN: none) */
    }
    if (!atomic_exchange(&l->asked, false)) return false; /* resumes only: the common case under load */
    pthread_mutex_lock(&l->mu);
    if (l->quiesce_asked && !l->quiesced) {
        l->listen_fd = MHD_quiesce_daemon(l->d);
        l->quiesced = true;
        pthread_cond_broadcast(&l->cv);
    }
    const bool stop = l->stop;
    pthread_mutex_unlock(&l->mu);
    return stop;
}

/* The wait of one pass, in ms: none within the window, else the daemon's. A parked call keeps the
 * daemon's timeout at 0 (libmicrohttpd asks its handler each pass until it answers), so while calls
 * are parked the loop does not poll: it sleeps until an event, an end or WP_LOOP_PARKED_SLEEP_MS.
 * Polling then ran the daemon, and asked every parked call's handler, on each empty pass (a cuda warp
 * request's handler was called 32 times at 256 connections, against 12 without), and took a CPU that
 * the runners and the other HTTP threads wanted. */
static int pass_wait_ms(wp_http_loop *l, int daemon_ms, bool in_window) {
    if (in_window) return 0;
    if (l->parked == 0) return daemon_ms;
    atomic_store(&l->sleeping, true);
    if (atomic_load(&l->ended) != l->ended_seen) return 0; /* one ended since the last pass */
    return WP_LOOP_PARKED_SLEEP_MS;
}

static void *loop_main(void *arg) {
    wp_http_loop *l = arg;
    current_loop = l;
    uint64_t busy_until = 0;
    for (;;) {
        const int daemon_ms = daemon_timeout_ms(l->d);
        const bool in_window =
            l->busy_ns && l->parked == 0 && wp_now_ns() < busy_until && (!l->may_poll || l->may_poll(l->may_poll_ctx));
        const int ms = pass_wait_ms(l, daemon_ms, in_window);
        struct epoll_event ev[2];
        const int n = epoll_wait(l->ep, ev, 2, ms);
        atomic_store_explicit(&l->sleeping, false, memory_order_relaxed);
        l->ended_seen = atomic_load(&l->ended); /* before the pass: an end after it is seen next time */
        bool ready = false;
        for (int i = 0; i < n; i++) {
            if (ev[i].data.u32 == TAG_WAKE && take_requests(l)) return NULL;
            ready = true; /* the daemon's events, or a connection resumed */
        }
        /* the daemon runs when it has events, or when its own timeout is due (connection timeouts) */
        if (ready || daemon_ms == 0 || (n == 0 && ms != 0)) MHD_run(l->d);
        if (ready && l->busy_ns) busy_until = wp_now_ns() + l->busy_ns;
    }
}

static void loop_free(wp_http_loop *l) {
    if (l->ep >= 0) close(l->ep);
    if (l->wake >= 0) close(l->wake);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}

static int watch(int ep, int fd, uint32_t tag) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

wp_http_loop *wp_http_loop_start(struct MHD_Daemon *d, int busy_poll_us, wp_http_loop_may_poll may_poll, void *ctx,
                                 const char *name, wp_err *err) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info || info->epoll_fd < 0) {
        WP_FAIL(err, 500, "internal", "", "the HTTP daemon has no epoll descriptor");
        return NULL;
    }
    wp_http_loop *l = calloc(1, sizeof *l);
    if (!l) {
        WP_FAIL(err, 500, "internal", "", "out of memory");
        return NULL;
    }
    l->d = d;
    l->busy_ns = busy_poll_us > 0 ? (uint64_t)busy_poll_us * 1000u : 0;
    l->may_poll = may_poll;
    l->may_poll_ctx = ctx;
    l->listen_fd = MHD_INVALID_SOCKET;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    l->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (l->ep < 0 || l->wake < 0 || watch(l->ep, info->epoll_fd, TAG_DAEMON) || watch(l->ep, l->wake, TAG_WAKE)) {
        WP_FAIL(err, 500, "internal", "", "cannot set up the HTTP event loop: %s", strerror(errno));
        loop_free(l);
        return NULL;
    }
    if (pthread_create(&l->thread, NULL, loop_main, l) != 0) {
        WP_FAIL(err, 500, "internal", "", "cannot start the HTTP event loop's thread");
        loop_free(l);
        return NULL;
    }
    pthread_setname_np(l->thread, name);
    return l;
}

/* Sets *what (unless NULL) under mu, then wakes the loop: it runs its daemon and looks at the asks. */
static void ask(wp_http_loop *l, bool *what) {
    if (what) {
        pthread_mutex_lock(&l->mu);
        *what = true;
        pthread_mutex_unlock(&l->mu);
        atomic_store(&l->asked, true); /* before the write: the loop that reads it sees the ask */
    }
    const uint64_t one = 1;
    while (write(l->wake, &one, sizeof one) < 0 && errno == EINTR) {
    }
}

wp_http_loop *wp_http_loop_current(void) { return current_loop; }

void wp_http_loop_park(wp_http_loop *l) { l->parked++; }

void wp_http_loop_unpark(wp_http_loop *l) { l->parked--; }

void wp_http_loop_ended(wp_http_loop *l) {
    atomic_fetch_add(&l->ended, 1);
    /* one wake for a sleep: the ends of a batch's other calls on this loop find it taken */
    if (atomic_load(&l->sleeping) && atomic_exchange(&l->sleeping, false)) ask(l, NULL);
}

void wp_http_loop_wake(wp_http_loop *l) {
    if (l) ask(l, NULL);
}

MHD_socket wp_http_loop_quiesce(wp_http_loop *l) {
    ask(l, &l->quiesce_asked);
    pthread_mutex_lock(&l->mu);
    while (!l->quiesced) pthread_cond_wait(&l->cv, &l->mu);
    const MHD_socket fd = l->listen_fd;
    pthread_mutex_unlock(&l->mu);
    return fd;
}

void wp_http_loop_stop(wp_http_loop *l) {
    if (!l) return;
    ask(l, &l->stop);
    pthread_join(l->thread, NULL);
    loop_free(l);
}
