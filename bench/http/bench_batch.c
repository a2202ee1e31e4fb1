/* bench_batch.c — many concurrent small jobs, with and without dynamic batching: a cached 3-element
 * POST /v1/reduce and a 32-lane POST /v1/warp, keep-alive, from 1, 16, 64 and 256 connections (one
 * client thread each) for a fixed time; req/s, p50 and p99 latency and the mean batch size the
 * responses report. Each configuration is a fresh daemon (build/warpd, or $WARPD_BIN) started with
 * the flags of its row: `--streams-per-device 1 --batch-max 1` (today's engine: one job on a device
 * at a time, none batched), `--batch-max 1` (streams, no batching), the default (window 0) and a
 * 100 us window. Prints numbers, never pass/fail. BENCH_BATCH_SECONDS sets the time per point
 * (default 2). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/lib/bench_daemon.h"
#include "tests/http_client.h"

#define MAX_CONN 256
#define LAT_MAX 200000 /* latencies kept per thread */

/* Starts bin with the row's flags on a free loopback port; its pid, and the port in *port. */
static pid_t daemon_start(const char *bin, const char *const *flags, int *port) {
    const char *args[24] = {"--listen", "127.0.0.1:0", "--no-disk-cache"};
    int k = 3;
    for (int i = 0; flags[i] && k < 23; i++) args[k++] = flags[i];
    char banner[1024];
    pid_t pid = bench_daemon_start(bin, args, false, banner, sizeof banner);
    if (pid > 0) *port = bench_daemon_port(banner);
    return pid;
}

typedef struct {
    int port;
    const char *path, *body;
    double until;
    double *lat;
    long n, errors;
    long batch_sum;
    pthread_barrier_t *start;
} worker;

static void *run(void *arg) {
    worker *w = arg;
    static const char *const hdr[] = {"Content-Type: application/json", NULL};
    hc_conn c;
    int open_rc = hc_open(&c, "127.0.0.1", w->port, 0);
    pthread_barrier_wait(w->start);
    if (open_rc) {
        w->errors++;
        return NULL;
    }
    while (bench_now_us() < w->until) {
        hc_resp r;
        memset(&r, 0, sizeof r);
        double t0 = bench_now_us();
        int rc = hc_send(&c, "POST", w->path, hdr, w->body, strlen(w->body), 0);
        if (rc == 0) rc = hc_recv(&c, "POST", &r);
        double dt = bench_now_us() - t0;
        if (rc || r.status != 200) {
            w->errors++;
            hc_resp_free(&r);
            hc_close(&c);
            if (hc_open(&c, "127.0.0.1", w->port, 0)) break;
            continue;
        }
        const char *b = strstr(r.body, "\"batch\":{\"size\":");
        w->batch_sum += b ? atol(b + 16) : 1;
        if (w->n < LAT_MAX) w->lat[w->n] = dt;
        w->n++;
        hc_resp_free(&r);
    }
    hc_close(&c);
    return NULL;
}

static void point(int port, const char *label, const char *path, const char *body, int conns, double seconds) {
    static worker ws[MAX_CONN];
    static pthread_t th[MAX_CONN];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)conns + 1);
    for (int i = 0; i < conns; i++) {
        ws[i] = (worker){.port = port, .path = path, .body = body, .start = &start};
        ws[i].lat = malloc(sizeof(double) * LAT_MAX);
        pthread_create(&th[i], NULL, run, &ws[i]);
    }
    double t0 = bench_now_us();
    for (int i = 0; i < conns; i++) ws[i].until = t0 + seconds * 1e6; /* read after the barrier */
    pthread_barrier_wait(&start);
    long total = 0, errors = 0, batch_sum = 0, kept = 0;
    for (int i = 0; i < conns; i++) {
        pthread_join(th[i], NULL);
        total += ws[i].n, errors += ws[i].errors, batch_sum += ws[i].batch_sum;
        kept += ws[i].n < LAT_MAX ? ws[i].n : LAT_MAX;
    }
    double wall = (bench_now_us() - t0) / 1e6;
    double *all = malloc(sizeof(double) * (size_t)(kept ? kept : 1));
    long k = 0;
    for (int i = 0; i < conns; i++) {
        long m = ws[i].n < LAT_MAX ? ws[i].n : LAT_MAX;
        memcpy(all + k, ws[i].lat, sizeof(double) * (size_t)m);
        k += m;
        free(ws[i].lat);
    }
    qsort(all, (size_t)k, sizeof *all, bench_cmp_double);
    double p50 = k ? all[(long)(0.5 * (k - 1))] : 0, p99 = k ? all[(long)(0.99 * (k - 1))] : 0;
    printf("| %-22s | %-6s | %4d | %9.0f | %8.1f | %8.1f | %6.2f | %ld |\n", label, path + 4, conns, total / wall, p50,
           p99, total ? (double)batch_sum / total : 0, errors);
    fflush(stdout);
    free(all);
    pthread_barrier_destroy(&start);
}

int main(void) {
    const char *bin = getenv("WARPD_BIN") ? getenv("WARPD_BIN") : "build/warpd";
    double seconds = getenv("BENCH_BATCH_SECONDS") ? atof(getenv("BENCH_BATCH_SECONDS")) : 2.0;
    static const char *reduce_body = "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1,2,3]}";
    static const char *warp_body =
        "{\"family\":\"shfl_xor\",\"type\":\"i32\",\"args\":{\"lane_mask\":1},\"input\":{\"iota\":32}}";
    static const char *today[] = {"--streams-per-device", "1", "--batch-max", "1", "--threads", "16", NULL};
    static const char *no_batch[] = {"--batch-max", "1", "--threads", "16", NULL};
    static const char *batch0[] = {"--threads", "16", NULL};
    static const char *batch100[] = {"--batch-window-us", "100", "--threads", "16", NULL};
    static const struct {
        const char *label;
        const char *const *flags;
    } configs[] = {{"today (1 stream, 1 job)", today},
                   {"--batch-max 1", no_batch},
                   {"batching, window 0", batch0},
                   {"batching, window 100us", batch100}};
    static const int conns[] = {1, 16, 64, 256};
    signal(SIGPIPE, SIG_IGN);
    printf("| config                 | route  | conn |     req/s |  p50 us  |  p99 us  | batch  | errors |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        int port = 0;
        pid_t pid = daemon_start(bin, configs[c].flags, &port);
        if (pid <= 0) return 1;
        hc_resp r; /* compile both kernels first */
        hc_request("127.0.0.1", port, "POST", "/v1/reduce", NULL, reduce_body, strlen(reduce_body), 0, &r, NULL, 0);
        hc_resp_free(&r);
        hc_request("127.0.0.1", port, "POST", "/v1/warp", NULL, warp_body, strlen(warp_body), 0, &r, NULL, 0);
        hc_resp_free(&r);
        for (size_t k = 0; k < sizeof conns / sizeof conns[0]; k++) {
            point(port, configs[c].label, "/v1/reduce", reduce_body, conns[k], seconds);
            point(port, configs[c].label, "/v1/warp", warp_body, conns[k], seconds);
        }
        bench_daemon_stop(pid);
    }
    return 0;
}
