/* bench_json.c — inline JSON of 10^6 values, both ways, for every type, on the CPU. In process: the
 * "data" list read in place (wp_json_scan_array) and an answer's list written (wp_json_append_values into
 * the answer's text, as api_reduce.c's scan answer does), MB/s of JSON text (wall clock: lists of a MiB
 * and more use up to a thread a CPU). Through the daemon's HTTP path
 * (build/warpd
 * --backend emu, or $WARPD_BIN, on a free port, keep-alive): POST /v1/reduce with the 10^6 values as
 * "data" (request bytes over the round trip), and POST /v1/scan of them answered as "data" (request and
 * answer bytes over the round trip). The best of ROUNDS. Prints numbers, never pass/fail.
 *   bench_json [ROUNDS]      BENCH_JSON_ONLY=inproc|http picks one half; BENCH_JSON_BACKEND=cuda runs
 *                            the daemon on the GPU (default emu); BENCH_JSON_FLAGS="--conn-memory 1048576"
 *                            adds daemon flags (split at spaces, at most 8). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonval.h"
#include "bench/lib/bench_daemon.h"
#include "kernels/data.h"
#include "tests/http_client.h"
#include "util/jsonout.h"

#define N 1000000

static const wp_type types[] = {WP_F32, WP_F64, WP_F16, WP_BF16, WP_I32, WP_U32, WP_I64, WP_U64};

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* N values a client might send: floats uniform in [-1, 1) (every digit a float has), integers up to a
 * million in magnitude (unsigned: positive), packed as the type's words. */
static void *make_values(wp_type t) {
    void *v = malloc((size_t)N * wp_type_size(t));
    for (uint64_t i = 0; v && i < N; i++) {
        const double u = (double)(rnd() >> 11) / 9007199254740992.0 * 2 - 1;
        const int64_t k = (int64_t)(u * 1e6);
        const uint64_t bits =
            wp_type_is_int(t) ? (uint64_t)(wp_type_is_signed(t) ? k : (k < 0 ? -k : k)) : wp_value_from_double(t, u);
        wp_data_store(t, v, i, bits & wp_type_bitmask(t));
    }
    return v;
}

/* The request body {"type":T,"op":"sum","data":[...]}, NUL-terminated. */
static char *make_body(wp_type t, const void *values, size_t *len) {
    wp_jtext b = {0};
    char head[64];
    const int k = snprintf(head, sizeof head, "{\"type\":\"%s\",\"op\":\"sum\",\"data\":", wp_type_name(t));
    wp_jtext_put(&b, head, (size_t)k);
    wp_json_append_values(&b, t, values, N);
    wp_jtext_put(&b, "}", 2); /* the NUL too */
    *len = b.n - 1;
    return b.p;
}

/* The best of n: the machine's other work only ever adds time. */
static double best(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[0];
}

/* The process's CPU time in microseconds, all threads: MB per CPU second holds on a shared machine and
 * says what more CPUs would give. */
static double cpu_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void bench_inproc(wp_type t, int rounds) {
    void *values = make_values(t), *back = malloc((size_t)N * 8);
    size_t body_len, list_len = 0;
    char *body = make_body(t, values, &body_len);
    const char *list = strchr(body, '[');
    double in_us[64], out_us[64], in_cpu[64], out_cpu[64];
    for (int r = 0; r < rounds; r++) {
        uint64_t count = 0;
        size_t used = 0;
        double t0 = bench_now_us(), c0 = cpu_now_us();
        bool ok = wp_json_scan_array(list, body_len - (size_t)(list - body), t, back, N, &count, &used);
        in_us[r] = bench_now_us() - t0, in_cpu[r] = cpu_now_us() - c0;
        if (!ok || count != N || memcmp(back, values, (size_t)N * wp_type_size(t)))
            printf("%s: the list did not read back\n", wp_type_name(t));
        t0 = bench_now_us(), c0 = cpu_now_us();
        wp_jtext o = {0};
        wp_jtext_open(&o, '{');
        wp_jtext_key(&o, "data");
        wp_json_append_values(&o, t, values, N);
        wp_jtext_close(&o, '}');
        free(wp_jtext_take(&o, &list_len));
        out_us[r] = bench_now_us() - t0, out_cpu[r] = cpu_now_us() - c0;
    }
    const double in = best(in_us, rounds), out = best(out_us, rounds);
    const double in_c = best(in_cpu, rounds), out_c = best(out_cpu, rounds);
    const size_t in_len = body_len - (size_t)(list - body) - 1; /* the list, without the closing brace */
    printf("in process %-4s: read %zu bytes in %.1f ms = %.0f MB/s (%.0f MB a CPU second); write %zu bytes in %.1f ms "
           "= %.0f MB/s (%.0f MB a CPU second)\n",
           wp_type_name(t), in_len, in / 1e3, (double)in_len / in, (double)in_len / in_c, list_len, out / 1e3,
           (double)list_len / out, (double)list_len / out_c);
    free(body);
    free(values);
    free(back);
}

/* One POST on c, timed; the answer's length in *answer (0 on failure, said on stdout). Its Server-Timing
 * header into timing when it is the fastest so far (*best_us). */
static double post(hc_conn *c, const char *path, const char *body, size_t len, size_t *answer, double *best_us,
                   char *timing, size_t cap) {
    static const char *const hdr[] = {"Content-Type: application/json", NULL};
    hc_resp r = {0};
    double t0 = bench_now_us();
    int rc = hc_send(c, "POST", path, hdr, body, len, 0) || hc_recv(c, "POST", &r);
    double us = bench_now_us() - t0;
    *answer = !rc && r.status == 200 ? r.body_len : 0;
    if (!*answer) printf("%s failed (%d): %.200s\n", path, r.status, r.body ? r.body : c->err);
    if (*answer && us < *best_us && hc_header(&r, "Server-Timing", timing, cap)) *best_us = us;
    hc_resp_free(&r);
    return us;
}

static void bench_http(int port, wp_type t, int rounds) {
    void *values = make_values(t);
    size_t len, answer = 0, scan_answer = 0;
    char *body = make_body(t, values, &len);
    double red_us[64], scan_us[64], red_best = 1e300, scan_best = 1e300;
    char red_timing[1024] = "", scan_timing[1024] = "";
    hc_conn c;
    int n = 0;
    if (body && hc_open(&c, "127.0.0.1", port, 120000) == 0) {
        for (int r = -1; r < rounds; r++) { /* one warm-up */
            double red = post(&c, "/v1/reduce", body, len, &answer, &red_best, red_timing, sizeof red_timing);
            double scan = post(&c, "/v1/scan", body, len, &scan_answer, &scan_best, scan_timing, sizeof scan_timing);
            if (!answer || !scan_answer) break;
            if (r >= 0) red_us[n] = red, scan_us[n++] = scan;
        }
        hc_close(&c);
    }
    if (n) {
        const double red = best(red_us, n), scan = best(scan_us, n);
        printf("HTTP %-4s: reduce of %zu bytes of JSON in %.1f ms = %.0f MB/s; scan %zu in + %zu out in %.1f ms = "
               "%.0f MB/s\n",
               wp_type_name(t), len, red / 1e3, (double)len / red, len, scan_answer, scan / 1e3,
               (double)(len + scan_answer) / scan);
        printf("  reduce's Server-Timing: %s\n  scan's: %s\n", red_timing, scan_timing);
    }
    free(body);
    free(values);
}

int main(int argc, char **argv) {
    const int rounds = argc > 1 && atoi(argv[1]) > 0 && atoi(argv[1]) <= 64 ? atoi(argv[1]) : 3;
    const char *only = getenv("BENCH_JSON_ONLY");
    const size_t ntypes = sizeof types / sizeof types[0];
    if (!only || !strcmp(only, "inproc"))
        for (size_t i = 0; i < ntypes; i++) bench_inproc(types[i], rounds);
    if (only && strcmp(only, "http")) return 0;
    const char *bin = getenv("WARPD_BIN") ? getenv("WARPD_BIN") : "build/warpd";
    char cache_dir[] = "/tmp/warpd-bench-json-XXXXXX", banner[1024], cmd[128];
    if (!mkdtemp(cache_dir)) return 1;
    const char *backend = getenv("BENCH_JSON_BACKEND") ? getenv("BENCH_JSON_BACKEND") : "emu";
    const char *args[32] = {"--backend", backend,      "--listen",  "127.0.0.1:0", "--cache-dir",
                            cache_dir,   "--max-body", "268435456", NULL};
    char flags[512];
    snprintf(flags, sizeof flags, "%s", getenv("BENCH_JSON_FLAGS") ? getenv("BENCH_JSON_FLAGS") : "");
    int na = 8;
    for (char *save = NULL, *f = strtok_r(flags, " ", &save); f && na < 16; f = strtok_r(NULL, " ", &save))
        args[na++] = f;
    args[na] = NULL;
    pid_t pid = bench_daemon_start(bin, args, true, banner, sizeof banner);
    if (pid > 0) {
        for (size_t i = 0; i < ntypes; i++) bench_http(bench_daemon_port(banner), types[i], rounds);
        bench_daemon_stop(pid);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
    return system(cmd) != 0 || pid <= 0;
}
