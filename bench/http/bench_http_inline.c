/* bench_http_inline.c — server/http/http.c in process, over loopback: how fast an inline route answers while
 * the worker pool is full. Each round sends 64 WORK requests that sleep 200 ms, then 200 inline GETs,
 * and prints the GETs' p50/p99/max and the slowest WORK request (200 ms when they all ran at once);
 * then the time wp_http_stop takes with 2 requests running, 4 queued, an idle keep-alive connection
 * and one stuck halfway through its body (about one WORK request: it waits for the running ones only).
 * Prints numbers, never pass/fail (tests/unit/test_http.c asserts the order and overlap only).
 *   bench_http_inline [ROUNDS] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "http/http.h"
#include "tests/http_client.h"

#define HOST "127.0.0.1"
#define SLOW_MS 200
#define LOAD_SLOW 64
#define LOAD_FAST 200

static int port_of;

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static void h_slow(void *app, const wp_req *req, wp_resp *resp) {
    (void)app, (void)req;
    sleep_ms(SLOW_MS);
    wp_resp_json(resp, 200, cJSON_CreateObject());
}

static void h_ping(void *app, const wp_req *req, wp_resp *resp) {
    (void)app, (void)req;
    wp_resp_json(resp, 200, cJSON_CreateObject());
}

static const wp_route routes[] = {
    {"POST", "/slow", h_slow, WP_ROUTE_WORK, NULL},
    {"GET", "/ping", h_ping, WP_ROUTE_INLINE, NULL},
    {NULL, NULL, NULL, 0, NULL},
};

static wp_http *start(int workers, int max_queue) {
    wp_http_config cfg = {
        .host = HOST, .port = 0, .threads = 4, .workers = workers, .max_body = 1 << 20, .max_queue = max_queue};
    wp_err err = {0};
    wp_http *h = wp_http_start(&cfg, routes, NULL, &err);
    if (!h) fprintf(stderr, "bench_http_inline: cannot start: %s\n", err.msg);
    return h;
}

typedef struct {
    int status;
    double ms;
} call_result;

static void *slow_thread(void *arg) {
    call_result *res = arg;
    hc_resp r = {0};
    char err[160];
    uint64_t t0 = wp_now_ns();
    res->status =
        hc_request(HOST, port_of, "POST", "/slow", NULL, "{}", 2, 0, &r, err, sizeof err) == 0 ? r.status : -1;
    res->ms = wp_ms_since(t0);
    hc_resp_free(&r);
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void wait_busy(wp_http *h, int busy, int queued) {
    wp_http_stats s;
    for (int i = 0; i < 30000; i++) {
        wp_http_stats_get(h, &s);
        if (s.workers_busy >= busy && s.queue_depth >= queued) return;
        sleep_ms(1);
    }
}

static void load_round(wp_http *h, int round) {
    pthread_t th[LOAD_SLOW];
    call_result res[LOAD_SLOW];
    static double fast_ms[LOAD_FAST];
    for (int i = 0; i < LOAD_SLOW; i++) pthread_create(&th[i], NULL, slow_thread, &res[i]);
    wait_busy(h, 1, 0);
    int ok = 0, overlapped = 0;
    for (int i = 0; i < LOAD_FAST; i++) {
        hc_resp r;
        char err[160];
        uint64_t t = wp_now_ns();
        ok += hc_request(HOST, port_of, "GET", "/ping", NULL, NULL, 0, 0, &r, err, sizeof err) == 0 && r.status == 200;
        fast_ms[i] = wp_ms_since(t);
        hc_resp_free(&r);
        wp_http_stats s;
        wp_http_stats_get(h, &s);
        overlapped += s.workers_busy > 0;
    }
    double slow_max = 0;
    for (int i = 0; i < LOAD_SLOW; i++) {
        pthread_join(th[i], NULL);
        if (res[i].ms > slow_max) slow_max = res[i].ms;
    }
    qsort(fast_ms, LOAD_FAST, sizeof fast_ms[0], cmp_double);
    printf("round %d: inline GET under load: p50 %.3f ms, p99 %.3f ms, max %.3f ms (%d of %d answered, %d while WORK "
           "ran); slowest of %d x %d ms WORK: %.0f ms\n",
           round, fast_ms[LOAD_FAST / 2], fast_ms[LOAD_FAST * 99 / 100 - 1], fast_ms[LOAD_FAST - 1], ok, LOAD_FAST,
           overlapped, LOAD_SLOW, SLOW_MS, slow_max);
}

static void stop_time(void) {
    wp_http *h = start(2, 8);
    if (!h) return;
    port_of = wp_http_port(h);
    enum { N = 6 };
    pthread_t th[N];
    call_result res[N];
    for (int i = 0; i < N; i++) pthread_create(&th[i], NULL, slow_thread, &res[i]);
    wait_busy(h, 2, N - 2);
    hc_conn idle, uploading;
    int idle_ok = hc_open(&idle, HOST, port_of, 0) == 0, up_ok = hc_open(&uploading, HOST, port_of, 0) == 0;
    const char *len_headers[] = {"Content-Length: 1000", NULL};
    if (up_ok) hc_send(&uploading, "POST", "/slow", len_headers, "{\"half\":", 8, 0);
    sleep_ms(20);
    uint64_t t0 = wp_now_ns();
    wp_http_stop(h);
    double stop_ms = wp_ms_since(t0);
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    if (idle_ok) hc_close(&idle);
    if (up_ok) hc_close(&uploading);
    printf("wp_http_stop with 2 running, %d queued, an idle and a half-sent connection: %.1f ms (one WORK request "
           "is %d ms)\n",
           N - 2, stop_ms, SLOW_MS);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    wp_http *h = start(LOAD_SLOW, 2 * LOAD_SLOW);
    if (!h) return 1;
    port_of = wp_http_port(h);
    for (int round = 1; round <= rounds; round++) load_round(h, round);
    wp_http_stop(h);
    stop_time();
    return 0;
}
