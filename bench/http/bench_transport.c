/* bench_transport.c — the same raw uploads over loopback TCP and over a Unix socket, in one run: a
 * 1 GiB f32 octet-stream POST /v1/reduce (upload + reduce, end to end) and the same bytes PUT to
 * /v1/buffers (the transport alone), keep-alive, best and mean of BENCH_TRANSPORT_RUNS (3) after one
 * warm-up, the two transports taking turns run by run. Starts two build/warpd (or $WARPD_BIN), one per
 * transport, with --backend
 * $BENCH_BACKEND (default auto) and no disk cache. BENCH_TRANSPORT_MIB picks the size (1024). Prints
 * numbers, never pass/fail. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/lib/bench_daemon.h"
#include "tests/http_client.h"

#define MAX_BODY "1200000000"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef struct {
    const char *name;
    char listen[160]; /* --listen value */
    char sock[100];   /* the Unix socket path, "" for TCP (fits sun_path) */
    int port;
    pid_t pid;
} endpoint;

static int daemon_start(endpoint *e, const char *bin, const char *backend) {
    const char *args[] = {"--listen", e->listen, "--no-disk-cache", "--backend", backend, "--max-body", MAX_BODY, NULL};
    char banner[1024];
    e->pid = bench_daemon_start(bin, args, true, banner, sizeof banner); /* quiet: "no usable GPU" and the like */
    if (e->pid <= 0) return -1;
    if (!e->sock[0]) e->port = bench_daemon_port(banner);
    printf("daemon: %s", banner);
    return 0;
}

static void daemon_stop(endpoint *e) { bench_daemon_stop(e->pid); }

/* A keep-alive connection to the endpoint: TCP through hc_open, a Unix socket by hand. */
static int conn_open(const endpoint *e, hc_conn *c) {
    if (!e->sock[0]) return hc_open(c, "127.0.0.1", e->port, 120000);
    memset(c, 0, sizeof *c);
    c->timeout_ms = 120000;
    snprintf(c->host, sizeof c->host, "localhost");
    c->port = 80;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", e->sock);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof sa)) return hc_fail(c, "cannot connect");
    return 0;
}

/* One raw upload: POST /v1/reduce (reduce) or PUT /v1/buffers then DELETE (put). ms, or -1. */
static double upload(hc_conn *c, bool reduce, const float *data, size_t bytes, char *backend, size_t cap) {
    static const char *const hdr[] = {"Content-Type: application/octet-stream", NULL};
    hc_resp r;
    double t0 = now_ms();
    int rc = hc_send(c, reduce ? "POST" : "PUT", reduce ? "/v1/reduce?type=f32&op=sum" : "/v1/buffers?type=f32", hdr,
                     data, bytes, 0);
    if (rc == 0) rc = hc_recv(c, reduce ? "POST" : "PUT", &r);
    double ms = now_ms() - t0;
    if (rc || r.status / 100 != 2) {
        printf("  upload failed (%d): %.200s\n", rc ? 0 : r.status, rc ? c->err : r.body);
        if (!rc) hc_resp_free(&r);
        return -1;
    }
    const char *b = strstr(r.body, "\"backend\":\"");
    if (b && backend) sscanf(b + 11, "%31[^\"]", backend), (void)cap;
    char id[64] = "";
    const char *p = strstr(r.body, "\"id\":\"");
    if (!reduce && p) sscanf(p + 6, "%63[^\"]", id);
    hc_resp_free(&r);
    if (id[0]) { /* free the buffer before the next one */
        char path[128];
        snprintf(path, sizeof path, "/v1/buffers/%s", id);
        if (hc_send(c, "DELETE", path, NULL, NULL, 0, 0) == 0 && hc_recv(c, "DELETE", &r) == 0) hc_resp_free(&r);
    }
    return ms;
}

typedef struct {
    hc_conn c;
    bool up;
    char backend[32];
    double best, sum;
    int ok;
} series;

static void report(const endpoint *e, const series *s, bool reduce, size_t bytes) {
    if (!s->ok) return;
    double gb = (double)bytes / 1e9;
    printf("%-11s %s %zu MiB f32 (backend %s): best %.1f ms = %.2f GB/s, mean %.1f ms = %.2f GB/s (n=%d)\n", e->name,
           reduce ? "POST /v1/reduce raw" : "PUT /v1/buffers raw", bytes >> 20, s->backend, s->best,
           gb / (s->best / 1e3), s->sum / s->ok, gb / (s->sum / s->ok / 1e3), s->ok);
}

/* Both endpoints in turn, run after run (so that a busy moment of the machine hits both alike). */
static void measure(endpoint *eps, int n, bool reduce, const float *data, size_t bytes, int runs) {
    series s[2] = {{.best = 1e30}, {.best = 1e30}};
    for (int i = 0; i < n; i++) {
        s[i].up = eps[i].pid > 0 && conn_open(&eps[i], &s[i].c) == 0;
        if (s[i].up) s[i].up = upload(&s[i].c, reduce, data, bytes, s[i].backend, sizeof s[i].backend) >= 0;
    }
    for (int r = 0; r < runs; r++)
        for (int i = 0; i < n; i++) {
            if (!s[i].up) continue;
            double ms = upload(&s[i].c, reduce, data, bytes, s[i].backend, sizeof s[i].backend);
            if (ms < 0) {
                s[i].up = false;
                continue;
            }
            s[i].best = ms < s[i].best ? ms : s[i].best;
            s[i].sum += ms;
            s[i].ok++;
        }
    for (int i = 0; i < n; i++) {
        hc_close(&s[i].c);
        report(&eps[i], &s[i], reduce, bytes);
    }
}

int main(void) {
    const char *bin = getenv("WARPD_BIN") ? getenv("WARPD_BIN") : "build/warpd";
    const char *backend = getenv("BENCH_BACKEND") ? getenv("BENCH_BACKEND") : "auto";
    size_t mib = getenv("BENCH_TRANSPORT_MIB") ? strtoull(getenv("BENCH_TRANSPORT_MIB"), NULL, 10) : 1024;
    int runs = getenv("BENCH_TRANSPORT_RUNS") ? atoi(getenv("BENCH_TRANSPORT_RUNS")) : 3;
    size_t bytes = mib << 20;
    float *data = malloc(bytes);
    if (!data || !mib || runs < 1) {
        printf("bench_transport: out of memory or bad BENCH_TRANSPORT_MIB/RUNS\n");
        return 1;
    }
    for (size_t i = 0; i < bytes / sizeof *data; i++) data[i] = (float)(i & 1023) * 0.5f;
    char dir[] = "/tmp/warpd-bench-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    endpoint eps[2] = {{.name = "loopback"}, {.name = "unix socket"}};
    snprintf(eps[0].listen, sizeof eps[0].listen, "127.0.0.1:0");
    snprintf(eps[1].sock, sizeof eps[1].sock, "%s/warpd.sock", dir);
    snprintf(eps[1].listen, sizeof eps[1].listen, "unix:%s", eps[1].sock);
    for (int i = 0; i < 2; i++)
        if (daemon_start(&eps[i], bin, backend)) eps[i].pid = 0;
    measure(eps, 2, true, data, bytes, runs);
    measure(eps, 2, false, data, bytes, runs);
    for (int i = 0; i < 2; i++)
        if (eps[i].pid > 0) daemon_stop(&eps[i]);
    rmdir(dir);
    free(data);
    return 0;
}
