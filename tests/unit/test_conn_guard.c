/* test_conn_guard.c — server/http/conn_guard.c over socket pairs (the guard's end stands for libmicrohttpd's
 * descriptor; the other end shows whether the guard shut it down): the oldest connections outside a
 * request make room when too many are open, never one inside a request (the newcomer goes when nothing
 * else may); headers not complete in time; a peer that has gone; idle and in-request connections left
 * alone; RLIMIT_NOFILE raised; one peer address held to per_peer. Waits are bounded generously and assert what
 * happened, not when. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/conn_guard.h"
#include "t.h"

#define WAIT_MAX_MS 10000

typedef struct {
    int ours, peer; /* ours: what the guard watches; peer: the client's end */
    void *token;
} conn;

static void conn_open_from(wp_guard *g, conn *c, const void *addr) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) abort();
    c->ours = sv[0];
    c->peer = sv[1];
    c->token = wp_guard_conn_open(g, c->ours, addr);
}
static void conn_open(wp_guard *g, conn *c) { conn_open_from(g, c, NULL); }

static void conn_close(wp_guard *g, conn *c) {
    wp_guard_conn_close(g, c->token);
    close(c->ours);
    if (c->peer >= 0) close(c->peer);
}

/* Whether the guard shut our end down: the peer reads the end of the stream. */
static bool shut(const conn *c) {
    char b;
    return recv(c->peer, &b, 1, MSG_DONTWAIT) == 0;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static wp_guard_stats wait_stats(wp_guard *g, int which, uint64_t at_least) {
    wp_guard_stats s;
    for (int waited = 0;; waited += 20) {
        wp_guard_stats_get(g, &s);
        uint64_t v = which == 0 ? s.header_timeouts : which == 1 ? s.peer_gone : s.evicted;
        if (v >= at_least || waited >= WAIT_MAX_MS) return s;
        sleep_ms(20);
    }
}

static void test_eviction(void) {
    T_CASE("eviction");
    wp_err err = {0};
    wp_guard_config cfg = {.max_connections = 2, .header_timeout_s = 600, .idle_timeout_s = 600};
    wp_guard *g = wp_guard_open(&cfg, &err);
    CHECK(g != NULL);
    if (!g) return;
    conn a, b, c, d;
    conn_open(g, &a);
    sleep_ms(2);
    conn_open(g, &b);
    wp_guard_request_begin(g, b.token); /* inside a request: never taken */
    sleep_ms(2);
    conn_open(g, &c); /* three open, two allowed: the oldest outside a request goes */
    CHECK(shut(&a));
    CHECK(!shut(&b));
    CHECK(!shut(&c));
    sleep_ms(2);
    conn_open(g, &d); /* a has not closed yet (MHD would close it): c is next */
    CHECK(shut(&c));
    CHECK(!shut(&b));
    CHECK(!shut(&d));
    wp_guard_stats s;
    wp_guard_stats_get(g, &s);
    CHECKF(s.evicted == 2 && s.open == 4, "evicted %llu open %u", (unsigned long long)s.evicted, s.open);
    conn_close(g, &a);
    conn_close(g, &c);
    wp_guard_request_begin(g, d.token); /* now both in a request: a newcomer is the only one to take */
    conn e;
    conn_open(g, &e);
    CHECK(shut(&e));
    CHECK(!shut(&b) && !shut(&d));
    wp_guard_request_end(g, b.token); /* b idle between requests: the oldest outside a request */
    conn_close(g, &e);
    conn f;
    conn_open(g, &f);
    CHECK(shut(&b));
    CHECK(!shut(&d) && !shut(&f));
    conn_close(g, &b);
    conn_close(g, &d);
    conn_close(g, &f);
    wp_guard_stats_get(g, &s);
    CHECK(s.open == 0);
    wp_guard_close(g);
}

static void test_header_timeout(void) {
    T_CASE("header timeout");
    wp_err err = {0};
    wp_guard_config cfg = {.max_connections = 100, .header_timeout_s = 0.3, .idle_timeout_s = 600};
    wp_guard *g = wp_guard_open(&cfg, &err);
    CHECK(g != NULL);
    if (!g) return;
    conn slow, busy, idle;
    conn_open(g, &slow);
    conn_open(g, &busy);
    wp_guard_request_begin(g, busy.token);
    conn_open(g, &idle);
    wp_guard_request_begin(g, idle.token);
    wp_guard_request_end(g, idle.token); /* kept alive: idle_timeout + header_timeout applies */
    wp_guard_stats s = wait_stats(g, 0, 1);
    CHECKF(s.header_timeouts == 1, "header_timeouts %llu", (unsigned long long)s.header_timeouts);
    CHECK(shut(&slow));
    sleep_ms(3 * WP_GUARD_TICK_MS); /* more ticks: the others are still left alone */
    CHECK(!shut(&busy));
    CHECK(!shut(&idle));
    conn_close(g, &slow);
    conn_close(g, &busy);
    conn_close(g, &idle);
    wp_guard_close(g);
}

static void test_peer_gone(void) {
    T_CASE("peer gone");
    wp_err err = {0};
    wp_guard_config cfg = {.max_connections = 100, .header_timeout_s = 600, .idle_timeout_s = 600};
    wp_guard *g = wp_guard_open(&cfg, &err);
    CHECK(g != NULL);
    if (!g) return;
    conn gone, stays;
    conn_open(g, &gone);
    conn_open(g, &stays);
    CHECK(send(gone.peer, "GET / HTTP/1.1\r\n", 16, 0) == 16); /* part of a request, then the peer leaves */
    close(gone.peer);
    gone.peer = -1;
    wp_guard_stats s = wait_stats(g, 1, 1);
    CHECKF(s.peer_gone == 1, "peer_gone %llu", (unsigned long long)s.peer_gone);
    CHECK(!shut(&stays));
    conn_close(g, &gone);
    conn_close(g, &stays);
    wp_guard_close(g);
}

static void test_nofile(void) {
    T_CASE("RLIMIT_NOFILE");
    unsigned long nofile = 0;
    unsigned n = wp_guard_connections_for_nofile(&nofile);
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    CHECK(rl.rlim_cur == rl.rlim_max); /* raised to the hard limit */
    CHECK(nofile == (rl.rlim_cur == RLIM_INFINITY ? 1ul << 20 : (unsigned long)rl.rlim_cur));
    CHECKF(n > 0 && n <= WP_GUARD_MAX_CONNECTIONS && n < nofile, "%u connections for %lu fds", n, nofile);
}

/* per_peer 3: a fourth and fifth connection from one address are shut at once (an IPv4-mapped IPv6
 * address is the same peer), another address is not; when one closes, the next gets in. */
static void test_per_peer(void) {
    T_CASE("per peer");
    wp_guard_config cfg = {.max_connections = 64, .header_timeout_s = 60, .idle_timeout_s = 60, .per_peer = 3};
    wp_guard *g = wp_guard_open(&cfg, &(wp_err){0});
    CHECK(g != NULL);
    if (!g) return;
    struct sockaddr_in a = {.sin_family = AF_INET}, b = {.sin_family = AF_INET};
    inet_pton(AF_INET, "10.0.0.1", &a.sin_addr);
    inet_pton(AF_INET, "10.0.0.2", &b.sin_addr);
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
    inet_pton(AF_INET6, "::ffff:10.0.0.1", &a6.sin6_addr);
    conn c[8];
    for (int i = 0; i < 4; i++) conn_open_from(g, &c[i], &a);
    conn_open_from(g, &c[4], &a6);
    conn_open_from(g, &c[5], &b);
    conn_open_from(g, &c[6], NULL); /* no address: never counted */
    CHECK(!shut(&c[0]) && !shut(&c[1]) && !shut(&c[2]));
    CHECK(shut(&c[3]) && shut(&c[4])); /* the fourth, and the mapped address as the fifth */
    CHECK(!shut(&c[5]) && !shut(&c[6]));
    wp_guard_stats st;
    wp_guard_stats_get(g, &st);
    CHECKF(st.peer_refused == 2, "%llu refused", (unsigned long long)st.peer_refused);
    conn_close(g, &c[3]); /* refused ones closing change nothing */
    conn_close(g, &c[4]);
    conn_close(g, &c[0]);
    conn_open_from(g, &c[7], &a);
    CHECK(!shut(&c[7])); /* room again */
    for (int i = 1; i < 8; i++)
        if (i != 3 && i != 4) conn_close(g, &c[i]);
    wp_guard_close(g);
}

int main(void) {
    test_eviction();
    test_header_timeout();
    test_peer_gone();
    test_nofile();
    test_per_peer();
    return t_done("conn_guard");
}
