/* bench_http.c — the daemon measured from outside, over loopback HTTP: round trip of POST /v1/warp
 * with a cached kernel, GET /v1/health latency while 64 distinct cold compiles run, and the first
 * request of a fresh process served from the disk cache. Starts build/warpd itself (or $WARPD_BIN)
 * on a free port with a temporary cache. Prints numbers, never pass/fail. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/http_client.h"

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double pct(double *v, int n, double p) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i];
}

typedef struct {
    pid_t pid;
    int port;
} daemon_t;

static int daemon_start(daemon_t *d, const char *bin, const char *cache_dir) {
    int fds[2];
    if (pipe(fds)) return -1;
    d->pid = fork();
    if (d->pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl(bin, bin, "--listen", "127.0.0.1:0", "--cache-dir", cache_dir, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char line[1024];
    size_t n = 0;
    while (n < sizeof line - 1) {
        ssize_t got = read(fds[0], line + n, 1);
        if (got <= 0) break;
        if (line[n++] == '\n') break;
    }
    line[n] = 0;
    close(fds[0]);
    const char *p = strstr(line, "http://127.0.0.1:");
    if (!p) {
        fprintf(stderr, "daemon did not start: %s\n", line);
        return -1;
    }
    d->port = atoi(p + strlen("http://127.0.0.1:"));
    printf("daemon: %s", line);
    return 0;
}

static void daemon_stop(daemon_t *d) {
    kill(d->pid, SIGTERM);
    waitpid(d->pid, NULL, 0);
}

static const char *warp_body =
    "{\"family\":\"shfl_xor\",\"type\":\"i32\",\"width\":16,\"mask\":\"0xffffffff\",\"args\":{\"lane_mask\":1},"
    "\"input\":{\"iota\":32}}";

static int post(hc_conn *c, const char *path, const char *body, hc_resp *r) {
    static const char *const hdr[] = {"Content-Type: application/json", NULL};
    memset(r, 0, sizeof *r);
    if (hc_send(c, "POST", path, hdr, body, strlen(body), 0)) return -1;
    return hc_recv(c, "POST", r);
}

static void bench_warp_roundtrip(int port) {
    enum { N = 3000 };
    static double t[N], server[N];
    hc_conn c;
    hc_resp r;
    if (hc_open(&c, "127.0.0.1", port, 0)) return;
    post(&c, "/v1/warp", warp_body, &r); /* compile once */
    char backend[32] = "?";
    const char *b = strstr(r.body, "\"backend\":\"");
    if (b) sscanf(b + 11, "%31[^\"]", backend);
    hc_resp_free(&r);
    for (int i = 0; i < 200; i++) {
        post(&c, "/v1/warp", warp_body, &r);
        hc_resp_free(&r);
    }
    for (int i = 0; i < N; i++) {
        double t0 = now_us();
        if (post(&c, "/v1/warp", warp_body, &r) || r.status != 200) {
            printf("warp request failed\n");
            hc_resp_free(&r);
            break;
        }
        t[i] = now_us() - t0;
        const char *tu = strstr(r.body, "\"total_us\":");
        server[i] = tu ? atof(tu + 11) : 0;
        hc_resp_free(&r);
    }
    hc_close(&c);
    printf("  server-side total_us (request arrived to response built): p50 %.1f us  p99 %.1f us\n",
           pct(server, N, 0.5), pct(server, N, 0.99));
    printf("POST /v1/warp cached, keep-alive (backend %s): p50 %.1f us  p99 %.1f us  (n=%d)\n", backend,
           pct(t, N, 0.5), pct(t, N, 0.99), N);
    for (int i = 0; i < 1000; i++) {
        double t0 = now_us();
        hc_request("127.0.0.1", port, "POST", "/v1/warp", NULL, warp_body, strlen(warp_body), 0, &r, NULL, 0);
        t[i] = now_us() - t0;
        hc_resp_free(&r);
    }
    printf("POST /v1/warp cached, new connection each:  p50 %.1f us  p99 %.1f us  (n=1000)\n", pct(t, 1000, 0.5),
           pct(t, 1000, 0.99));
}

typedef struct {
    int port, k;
    double ms;
    int status;
} compile_arg;

static void *compile_one(void *arg) {
    compile_arg *a = arg;
    char body[256];
    snprintf(body, sizeof body, "{\"family\":\"warp_allreduce\",\"type\":\"i32\",\"op\":\"a + b + %d\"}", a->k + 1000);
    hc_resp r;
    double t0 = now_us();
    hc_request("127.0.0.1", a->port, "POST", "/v1/compile", NULL, body, strlen(body), 0, &r, NULL, 0);
    a->ms = (now_us() - t0) / 1e3;
    a->status = r.status;
    hc_resp_free(&r);
    return NULL;
}

static void bench_health_under_compiles(int port) {
    enum { COMPILES = 64, MAXH = 100000 };
    static double h[MAXH];
    pthread_t th[COMPILES];
    compile_arg args[COMPILES];
    double t_start = now_us();
    for (int i = 0; i < COMPILES; i++) {
        args[i] = (compile_arg){port, i, 0, 0};
        pthread_create(&th[i], NULL, compile_one, &args[i]);
    }
    hc_conn c;
    hc_resp r;
    int nh = 0;
    if (hc_open(&c, "127.0.0.1", port, 0)) return;
    /* Probe health until the compiles are done (each thread's ms set on return). */
    for (;;) {
        bool done = true;
        for (int i = 0; i < COMPILES; i++) done &= args[i].status != 0;
        if (done || nh >= MAXH) break;
        double t0 = now_us();
        memset(&r, 0, sizeof r);
        if (hc_send(&c, "GET", "/v1/health", NULL, NULL, 0, 0) || hc_recv(&c, "GET", &r)) break;
        h[nh++] = now_us() - t0;
        hc_resp_free(&r);
        usleep(1000);
    }
    hc_close(&c);
    int ok = 0;
    double worst = 0;
    for (int i = 0; i < COMPILES; i++) {
        pthread_join(th[i], NULL);
        ok += args[i].status == 200;
        if (args[i].ms > worst) worst = args[i].ms;
    }
    double total = (now_us() - t_start) / 1e3;
    if (!nh) return;
    double p50 = pct(h, nh, 0.5), p99 = pct(h, nh, 0.99), mx = h[nh - 1];
    printf("GET /v1/health during %d cold compiles (%d ok, all done in %.0f ms, slowest %.0f ms): "
           "p50 %.0f us  p99 %.0f us  max %.0f us  (n=%d)\n",
           COMPILES, ok, total, worst, p50, p99, mx, nh);
}

static void bench_disk_hit(const char *bin, const char *cache_dir) {
    daemon_t d;
    if (daemon_start(&d, bin, cache_dir)) return;
    hc_resp r;
    hc_request("127.0.0.1", d.port, "POST", "/v1/warp", NULL, warp_body, strlen(warp_body), 0, &r, NULL, 0);
    const char *src = strstr(r.body ? r.body : "", "\"cache\":\"");
    const char *cu = strstr(r.body ? r.body : "", "\"cache_us\":");
    const char *lu = strstr(r.body ? r.body : "", "\"load_us\":");
    char where[16] = "?";
    if (src) sscanf(src + 9, "%15[^\"]", where);
    printf("fresh process, first POST /v1/warp: cache=%s  cache_us=%.1f  load_us=%.1f\n", where,
           cu ? atof(cu + 11) : -1, lu ? atof(lu + 10) : -1);
    hc_resp_free(&r);
    daemon_stop(&d);
}

int main(int argc, char **argv) {
    const char *bin = getenv("WARPD_BIN") ? getenv("WARPD_BIN") : "build/warpd";
    (void)argc, (void)argv;
    signal(SIGPIPE, SIG_IGN);
    char cache_dir[] = "/tmp/warpd-bench-XXXXXX";
    if (!mkdtemp(cache_dir)) return 1;
    daemon_t d;
    if (daemon_start(&d, bin, cache_dir)) return 1;
    bench_warp_roundtrip(d.port);
    bench_health_under_compiles(d.port);
    daemon_stop(&d);
    bench_disk_hit(bin, cache_dir);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
    if (system(cmd)) return 0;
    return 0;
}
