/* bench_http.c — the daemon measured from outside, over loopback HTTP: round trips of POST /v1/warp
 * and of a small POST /v1/reduce with a cached kernel (keep-alive), 10^6 floats as inline JSON
 * (MB/s of JSON text), raw octet-stream uploads plus reduce (256 MiB and 1 GiB: GB/s end to end; and
 * the same bytes PUT to /v1/buffers, the transport alone),
 * GET /v1/health latency while 64 distinct cold compiles run, and the first request of a fresh
 * process served from the disk cache. Starts build/warpd itself (or $WARPD_BIN) on a free port with
 * a temporary cache. Prints numbers, never pass/fail. BENCH_HTTP_ONLY=reduce runs only the reduce
 * measurements; BENCH_HTTP_RAW_MIB=256,1024 picks the raw upload sizes. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/lib/bench_daemon.h"
#include "tests/http_client.h"

static double pct(double *v, int n, double p) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i];
}

typedef struct {
    pid_t pid;
    int port;
} daemon_t;

/* Large enough for the 1 GiB raw upload. */
#define BENCH_MAX_BODY "1200000000"

static int daemon_start(daemon_t *d, const char *bin, const char *cache_dir) {
    const char *args[] = {"--listen", "127.0.0.1:0", "--cache-dir", cache_dir, "--max-body", BENCH_MAX_BODY, NULL};
    char banner[1024];
    d->pid = bench_daemon_start(bin, args, false, banner, sizeof banner);
    if (d->pid <= 0) return -1;
    d->port = bench_daemon_port(banner);
    printf("daemon: %s", banner);
    return 0;
}

static void daemon_stop(daemon_t *d) { bench_daemon_stop(d->pid); }

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
        double t0 = bench_now_us();
        if (post(&c, "/v1/warp", warp_body, &r) || r.status != 200) {
            printf("warp request failed\n");
            hc_resp_free(&r);
            break;
        }
        t[i] = bench_now_us() - t0;
        const char *tu = strstr(r.body, "\"total_us\":");
        server[i] = tu ? atof(tu + 11) : 0;
        hc_resp_free(&r);
    }
    hc_close(&c);
    printf("  server-side total_us (request arrived to response built): p50 %.1f us  p99 %.1f us\n",
           pct(server, N, 0.5), pct(server, N, 0.99));
    printf("POST /v1/warp cached, keep-alive (backend %s): p50 %.1f us  p99 %.1f us  (n=%d)\n", backend, pct(t, N, 0.5),
           pct(t, N, 0.99), N);
    for (int i = 0; i < 1000; i++) {
        double t0 = bench_now_us();
        hc_request("127.0.0.1", port, "POST", "/v1/warp", NULL, warp_body, strlen(warp_body), 0, &r, NULL, 0);
        t[i] = bench_now_us() - t0;
        hc_resp_free(&r);
    }
    printf("POST /v1/warp cached, new connection each:  p50 %.1f us  p99 %.1f us  (n=1000)\n", pct(t, 1000, 0.5),
           pct(t, 1000, 0.99));
}

/* The first "name": number in a JSON text (the timing fields are unique), or -1. */
static double json_num(const char *body, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *p = body ? strstr(body, key) : NULL;
    return p ? atof(p + strlen(key)) : -1;
}

static void json_str(const char *body, const char *name, char *out, size_t cap) {
    char key[64];
    snprintf(key, sizeof key, "\"%s\":\"", name);
    const char *p = body ? strstr(body, key) : NULL;
    snprintf(out, cap, "?");
    if (p) {
        p += strlen(key);
        size_t n = strcspn(p, "\"");
        snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
    }
}

static const char *reduce_body = "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[1.5,2,3]}";

/* A small POST /v1/reduce, keep-alive: what a client that asks many small questions sees. */
static void bench_reduce_roundtrip(int port) {
    enum { N = 3000 };
    static double t[N], server[N];
    hc_conn c;
    hc_resp r;
    if (hc_open(&c, "127.0.0.1", port, 0)) return;
    post(&c, "/v1/reduce", reduce_body, &r); /* compile once (cuda) */
    char backend[32], cache[32];
    json_str(r.body, "backend", backend, sizeof backend);
    hc_resp_free(&r);
    for (int i = 0; i < 200; i++) {
        post(&c, "/v1/reduce", reduce_body, &r);
        hc_resp_free(&r);
    }
    int n = 0;
    for (; n < N; n++) {
        double t0 = bench_now_us();
        if (post(&c, "/v1/reduce", reduce_body, &r) || r.status != 200) {
            printf("reduce request failed (%d): %s\n", r.status, r.body ? r.body : c.err);
            hc_resp_free(&r);
            break;
        }
        t[n] = bench_now_us() - t0;
        server[n] = json_num(r.body, "total_us");
        json_str(r.body, "cache", cache, sizeof cache);
        hc_resp_free(&r);
    }
    hc_close(&c);
    if (!n) return;
    printf("  server-side total_us (request arrived to response built): p50 %.1f us  p99 %.1f us\n",
           pct(server, n, 0.5), pct(server, n, 0.99));
    printf("POST /v1/reduce small (3 f32) cached, keep-alive (backend %s, cache %s): p50 %.1f us  p99 %.1f us  "
           "(n=%d)\n",
           backend, cache, pct(t, n, 0.5), pct(t, n, 0.99), n);
}

/* 10^6 floats in [0, 1) with at most 6 decimals, as inline JSON (about 9 MB of text). */
static void bench_reduce_json(int port) {
    enum { N = 1000000, RUNS = 7 };
    size_t cap = (size_t)N * 12 + 64, len = 0;
    char *body = malloc(cap);
    if (!body) return;
    len += (size_t)snprintf(body, cap, "{\"type\":\"f32\",\"op\":\"sum\",\"data\":[");
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        char num[32];
        int k = snprintf(num, sizeof num, "%.6f", (double)(x >> 11) / 9007199254740992.0);
        while (k > 1 && num[k - 1] == '0') k--; /* 0.500000 -> 0.5, as Python prints round(x, 6) */
        if (num[k - 1] == '.') k--;
        memcpy(body + len, num, (size_t)k);
        len += (size_t)k;
        body[len++] = i + 1 < N ? ',' : ']';
    }
    body[len++] = '}';
    body[len] = 0;
    static const char *const hdr[] = {"Content-Type: application/json", NULL};
    double rt[RUNS], parse[RUNS], recv_us[RUNS], total[RUNS];
    hc_conn c;
    hc_resp r;
    int n = 0;
    if (hc_open(&c, "127.0.0.1", port, 0) == 0) {
        for (int i = -1; i < RUNS; i++) { /* one warm-up */
            double t0 = bench_now_us();
            memset(&r, 0, sizeof r);
            if (hc_send(&c, "POST", "/v1/reduce", hdr, body, len, 0) || hc_recv(&c, "POST", &r) || r.status != 200) {
                printf("JSON reduce failed (%d): %.200s\n", r.status, r.body ? r.body : c.err);
                hc_resp_free(&r);
                break;
            }
            if (i >= 0) {
                rt[n] = bench_now_us() - t0;
                parse[n] = json_num(r.body, "parse_us");
                recv_us[n] = json_num(r.body, "receive_us");
                total[n] = json_num(r.body, "total_us");
                n++;
            }
            hc_resp_free(&r);
        }
        hc_close(&c);
    }
    free(body);
    if (!n) return;
    double p = pct(parse, n, 0.5), t = pct(rt, n, 0.5), rv = pct(recv_us, n, 0.5), tt = pct(total, n, 0.5);
    printf("10^6 f32 as inline JSON (%zu bytes), median of %d: round trip %.1f ms = %.0f MB/s; server total_us %.0f;"
           " parse_us %.0f = %.0f MB/s",
           len, n, t / 1e3, len / t, tt, p, len / p);
    if (rv >= 0) printf("; receive_us %.0f", rv);
    printf("\n");
}

/* Raw f32 bodies (application/octet-stream) of each size, uploaded and reduced: GB/s end to end. */
static void bench_reduce_raw(int port, size_t mib) {
    enum { RUNS = 3 };
    size_t bytes = mib << 20;
    float *data = malloc(bytes);
    if (!data) {
        printf("raw %zu MiB: out of memory\n", mib);
        return;
    }
    for (size_t i = 0; i < bytes / 4; i++) data[i] = (float)(i & 1023);
    static const char *const hdr[] = {"Content-Type: application/octet-stream", NULL};
    hc_conn c;
    hc_resp r;
    double best = 1e30, sum = 0;
    char backend[32] = "?", timing[400] = "";
    int n = 0;
    if (hc_open(&c, "127.0.0.1", port, 600000) == 0) {
        memset(&r, 0, sizeof r); /* compile with a small body first */
        if (hc_send(&c, "POST", "/v1/reduce?type=f32&op=sum", hdr, data, 4096, 0) == 0 && hc_recv(&c, "POST", &r) == 0)
            hc_resp_free(&r);
        for (int i = 0; i < RUNS; i++) {
            double t0 = bench_now_us();
            memset(&r, 0, sizeof r);
            if (hc_send(&c, "POST", "/v1/reduce?type=f32&op=sum", hdr, data, bytes, 0) || hc_recv(&c, "POST", &r) ||
                r.status != 200) {
                printf("raw reduce failed (%d): %.200s\n", r.status, r.body ? r.body : c.err);
                hc_resp_free(&r);
                break;
            }
            double t = bench_now_us() - t0;
            sum += t;
            n++;
            if (t < best) {
                best = t;
                json_str(r.body, "backend", backend, sizeof backend);
                const char *tp = strstr(r.body, "\"timing\":");
                snprintf(timing, sizeof timing, "%s", tp ? tp + 9 : "");
                size_t tl = strlen(timing);
                if (tl && timing[tl - 1] == '}') timing[tl - 1] = 0;
            }
            hc_resp_free(&r);
        }
        hc_close(&c);
    }
    free(data);
    if (!n) return;
    printf("raw %zu MiB f32 upload + reduce (backend %s), keep-alive: best %.1f ms = %.2f GB/s, mean %.1f ms = %.2f "
           "GB/s (n=%d)\n  best's timing: %s\n",
           mib, backend, best / 1e3, bytes / best / 1e3, sum / n / 1e3, bytes / (sum / n) / 1e3, n, timing);
}

/* The transport alone: a raw PUT /v1/buffers of the same bytes (no kernel), then DELETE. */
static void bench_put_raw(int port, size_t mib) {
    enum { RUNS = 5 };
    size_t bytes = mib << 20;
    char *data = malloc(bytes);
    if (!data) return;
    memset(data, 1, bytes);
    static const char *const hdr[] = {"Content-Type: application/octet-stream", NULL};
    hc_conn c;
    hc_resp r;
    double best = 1e30, sum = 0;
    int n = 0;
    if (hc_open(&c, "127.0.0.1", port, 600000) == 0) {
        for (int i = 0; i < RUNS; i++) {
            double t0 = bench_now_us();
            memset(&r, 0, sizeof r);
            if (hc_send(&c, "PUT", "/v1/buffers?type=f32", hdr, data, bytes, 0) || hc_recv(&c, "PUT", &r) ||
                r.status != 201) {
                printf("raw PUT failed (%d): %.200s\n", r.status, r.body ? r.body : c.err);
                hc_resp_free(&r);
                break;
            }
            double t = bench_now_us() - t0;
            sum += t, n++;
            if (t < best) best = t;
            char id[64], path[96];
            json_str(r.body, "id", id, sizeof id);
            hc_resp_free(&r);
            snprintf(path, sizeof path, "/v1/buffers/%s", id);
            if (hc_send(&c, "DELETE", path, NULL, NULL, 0, 0) == 0 && hc_recv(&c, "DELETE", &r) == 0) hc_resp_free(&r);
        }
        hc_close(&c);
    }
    free(data);
    if (n)
        printf("raw PUT /v1/buffers %zu MiB (upload only), keep-alive: best %.1f ms = %.2f GB/s, mean %.1f ms = %.2f "
               "GB/s (n=%d)\n",
               mib, best / 1e3, bytes / best / 1e3, sum / n / 1e3, bytes / (sum / n) / 1e3, n);
}

static void bench_reduce(int port) {
    bench_reduce_roundtrip(port);
    bench_reduce_json(port);
    const char *sizes = getenv("BENCH_HTTP_RAW_MIB") ? getenv("BENCH_HTTP_RAW_MIB") : "256,1024";
    for (const char *p = sizes; *p;) {
        char *end;
        unsigned long mib = strtoul(p, &end, 10);
        if (end == p) break;
        if (mib) bench_put_raw(port, mib);
        if (mib) bench_reduce_raw(port, mib);
        p = *end == ',' ? end + 1 : end;
    }
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
    double t0 = bench_now_us();
    hc_request("127.0.0.1", a->port, "POST", "/v1/compile", NULL, body, strlen(body), 0, &r, NULL, 0);
    a->ms = (bench_now_us() - t0) / 1e3;
    a->status = r.status;
    hc_resp_free(&r);
    return NULL;
}

static void bench_health_under_compiles(int port) {
    enum { COMPILES = 64, MAXH = 100000 };
    static double h[MAXH];
    pthread_t th[COMPILES];
    compile_arg args[COMPILES];
    double t_start = bench_now_us();
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
        double t0 = bench_now_us();
        memset(&r, 0, sizeof r);
        if (hc_send(&c, "GET", "/v1/health", NULL, NULL, 0, 0) || hc_recv(&c, "GET", &r)) break;
        h[nh++] = bench_now_us() - t0;
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
    double total = (bench_now_us() - t_start) / 1e3;
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
    const char *only = getenv("BENCH_HTTP_ONLY");
    bool reduce_only = only && !strcmp(only, "reduce");
    if (!reduce_only) bench_warp_roundtrip(d.port);
    bench_reduce(d.port);
    if (!reduce_only) bench_health_under_compiles(d.port);
    daemon_stop(&d);
    if (!reduce_only) bench_disk_hit(bin, cache_dir);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
    if (system(cmd)) return 0;
    return 0;
}
