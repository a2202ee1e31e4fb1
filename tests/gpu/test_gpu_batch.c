/* test_gpu_batch.c — dynamic batching on the GPU: starts build/warpd on cuda with a 20 ms batch window
 * and runs the rounds of tests/api/batch_rounds.h against it: for every warp family and the reduce and
 * scan families (several types, ops, strategies; inputs of a few elements to 64 KiB, jobs of one and
 * of several blocks), 8 or 16 concurrent jobs of one kernel key with different inputs, each compared
 * with what the same request gives alone — bit for bit. On cuda a batch of several is one grid (warp
 * families) or one launch of the kernel's _batch entry (data families), so this is what proves those
 * give each job its alone bits. Batches of more than one must happen. The batching daemon runs small
 * untimed jobs zero-copy (the default: kernels on page-locked host memory), the reference copies
 * (--zero-copy off), so the same comparisons prove zero-copy gives the copied bits; zero-copy runs must
 * happen. Lone small reduces through the device's resident kernel answer as the reference does.
 * Without a CUDA device it says
 * SKIPPED and passes. Run from the repository root (tests/run.sh does); BUILD names the build dir. */
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include "backend/backend.h"
#include "bench/lib/bench_daemon.h"
#include "tests/api/batch_rounds.h"

/* Starts build/warpd on cuda with the extra flags (bench/lib/bench_daemon.h: fork, exec, the banner gives
 * the port); its stderr stays this program's. 0, or -1 when it did not start. */
static int start_daemon(const char *build, const char *const *flags, int *port, pid_t *pid) {
    char bin[512], banner[256];
    snprintf(bin, sizeof bin, "%s/warpd", build);
    const char *args[16] = {"--listen", "127.0.0.1:0", "--no-disk-cache", "--backend", "cuda", "--threads", "16"};
    for (int i = 0, k = 7; flags[i] && k < 15; i++) args[k++] = flags[i];
    *pid = bench_daemon_start(bin, args, false, banner, sizeof banner);
    *port = *pid > 0 ? bench_daemon_port(banner) : 0;
    if (*port) printf("daemon on port %d (pid %d)\n", *port, (int)*pid);
    return *port ? 0 : -1;
}

/* A small scan no round used (its own key): the first answer alone comes from its own path and asks for
 * the _batch kernel in the background; within a few seconds the same request alone comes back from
 * the _batch kernel (key ending in /batch, a batch of 1), with the reference daemon's result. */
static void lone_job(const char *host, int port) {
    const char *body = "{\"family\":\"device_scan\",\"type\":\"i64\",\"op\":\"xor\",\"exclusive\":true,"
                       "\"data\":[5,7,11,13,17,19,23,29,31,37]}";
    client ref = {.host = host, .port = ref_port, .path = "/v1/scan"};
    snprintf(ref.body, sizeof ref.body, "%s", body);
    run_client(&ref);
    CHECKF(ref.rc == 0 && ref.resp.status == 200, "reference: %d", ref.resp.status);
    bool batched = false;
    for (int i = 0; i < 100 && !batched && ref.rc == 0; i++) {
        client c = {.host = host, .port = port, .path = "/v1/scan"};
        snprintf(c.body, sizeof c.body, "%s", body);
        run_client(&c);
        CHECKF(c.rc == 0 && c.resp.status == 200 && batch_size(c.resp.body) == 1, "alone %d: %d %s", i, c.resp.status,
               c.resp.body ? c.resp.body : "");
        if (c.rc == 0 && c.resp.body && ref.resp.body) {
            size_t na = result_prefix(ref.resp.body), nc = result_prefix(c.resp.body);
            CHECKF(na == nc && !memcmp(ref.resp.body, c.resp.body, na),
                   "alone %d differs from the reference:\n  %.*s\n  %.*s", i, (int)na, ref.resp.body, (int)nc,
                   c.resp.body);
            batched = strstr(c.resp.body, "/batch\",") != NULL;
        }
        hc_resp_free(&c.resp);
        if (!batched) usleep(100 * 1000);
    }
    CHECKF(batched, "a lone small scan never ran the _batch kernel");
    long long built = metric(host, port, "warpd_background_builds_total{outcome=\"built\"}");
    CHECKF(built >= 1, "warpd_background_builds_total{outcome=\"built\"} is %lld", built);
    hc_resp_free(&ref.resp);
}

/* Sends body (an object's text without its closing brace) to the daemon under test as it is and to the
 * reference with "profile": true: both must answer 200, with the same result. c keeps the daemon's
 * answer (the caller frees it); true when both answered. what names the job in a failure. */
static bool against_reference(const char *host, int port, const char *path, const char *body, client *c,
                              const char *what) {
    client ref = {.host = host, .port = ref_port, .path = path};
    *c = (client){.host = host, .port = port, .path = path};
    snprintf(c->body, sizeof c->body, "%s}", body);
    snprintf(ref.body, sizeof ref.body, "%s,\"profile\":true}", body);
    run_client(c);
    run_client(&ref);
    CHECKF(c->rc == 0 && c->resp.status == 200 && ref.rc == 0 && ref.resp.status == 200, "%s %s: %d / %d", path, what,
           c->resp.status, ref.resp.status);
    const bool both = c->rc == 0 && ref.rc == 0 && c->resp.body && ref.resp.body;
    if (both) {
        size_t na = result_prefix(ref.resp.body), nc = result_prefix(c->resp.body);
        CHECKF(na == nc && !memcmp(ref.resp.body, c->resp.body, na),
               "%s %s differs from the reference:\n  %.*s\n  %.*s", path, what, (int)na, ref.resp.body, (int)nc,
               c->resp.body);
    }
    hc_resp_free(&ref.resp);
    return both;
}

/* Lone untimed jobs of one shape with fresh inputs, one after another (each uploads its own input into
 * memory the one before used): each answer must be the reference daemon's for the same input sent
 * with "profile": true (timed, its own way), and must say it was untimed. A warp shape, and a reduce
 * shape until at least 10 of its answers came from the _batch kernel. */
static void replays(const char *host, int port) {
    for (int kind = 0; kind < 2; kind++) {
        int from_batch = 0, asked = 0;
        for (int i = 0; i < 200 && (kind ? from_batch < 10 : i < 16); i++, asked++) {
            char vals[2048], body[4096], what[16];
            values(vals, sizeof vals, kind ? 40 : 32, kind == 1);
            if (kind)
                snprintf(body, sizeof body, "{\"type\":\"f32\",\"op\":\"sum\",\"data\":%s", vals);
            else
                snprintf(body, sizeof body,
                         "{\"family\":\"shfl_xor\",\"type\":\"i32\",\"width\":32,\"args\":{\"lane_mask\":3},"
                         "\"input\":%s",
                         vals);
            snprintf(what, sizeof what, "%d", i);
            const char *path = kind ? "/v1/reduce" : "/v1/warp";
            client c;
            if (against_reference(host, port, path, body, &c, what)) {
                /* untimed when it ran batched (a warp job always; a reduce from the _batch kernel): a reduce
                 * that ran alone, before that kernel was built, is timed */
                const bool batched = strstr(c.resp.body, "/batch\",") != NULL;
                const bool untimed = strstr(c.resp.body, "\"kernel_us\":null") != NULL;
                CHECKF(untimed == (!kind || batched), "%s %d: %s", path, i,
                       untimed ? "untimed alone" : "timed batched");
                from_batch += batched;
            }
            hc_resp_free(&c.resp);
            if (kind && !from_batch) usleep(50 * 1000); /* the _batch kernel builds in the background */
        }
        if (kind) CHECKF(from_batch >= 10, "reduce: %d of %d answers from the _batch kernel", from_batch, asked);
        printf("replays: %s, %d lone jobs of one shape%s\n", kind ? "reduce" : "warp", asked,
               kind ? " (10 from the _batch kernel)" : "");
    }
}

/* The sum of every series of a labelled counter (name{...} v lines), or -1 without /metrics. */
static long long metric_sum(const char *host, int port, const char *name) {
    hc_resp r;
    if (hc_request(host, port, "GET", "/metrics", NULL, NULL, 0, 0, &r, NULL, 0)) return -1;
    char key[96];
    snprintf(key, sizeof key, "\n%s{", name);
    long long v = 0;
    for (const char *p = r.body ? strstr(r.body, key) : NULL; p; p = strstr(p + 1, key)) {
        const char *end = strchr(p + 1, '}'); /* label values may hold spaces: the value follows the '}' */
        if (end) v += strtoll(end + 1, NULL, 10);
    }
    hc_resp_free(&r);
    return v;
}

/* Lone untimed small reduces of one block, of families whose batched kernel serves as a resident
 * (device_reduce, argmin, argmax), several types, operators and sizes, each shape with fresh inputs
 * until the device's resident answered several: every answer is the reference daemon's for the same
 * input sent with "profile": true. Each shape's inputs change under the same resident, so a stale read
 * of the last job's input would show. */
static void resident_replays(const char *host, int port) {
    static const struct {
        const char *path, *spec;
        int n;
        bool floats;
    } shapes[] = {
        {"/v1/reduce", "\"type\":\"f32\",\"op\":\"sum\"", 3, true},
        {"/v1/reduce", "\"type\":\"f32\",\"op\":\"sum\"", 300, true},
        {"/v1/reduce", "\"type\":\"f64\",\"op\":\"sum\"", 200, true},
        {"/v1/reduce", "\"type\":\"f16\",\"op\":\"max\"", 77, true},
        {"/v1/reduce", "\"type\":\"i32\",\"op\":\"sum\",\"strategy\":\"atomic\"", 129, false},
        {"/v1/reduce", "\"type\":\"i64\",\"op\":\"min\"", 33, false},
        {"/v1/reduce", "\"type\":\"bf16\",\"op\":\"sum\",\"map\":\"x*x\"", 64, true},
        {"/v1/reduce", "\"family\":\"argmin\",\"type\":\"f32\"", 50, true},
        {"/v1/reduce", "\"family\":\"argmax\",\"type\":\"i32\"", 9, false},
    };
    const char *runs = "warpd_device_resident_runs_total";
    long long total0 = metric_sum(host, port, runs);
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int by_resident = 0, asked = 0;
        for (int i = 0; i < 300 && by_resident < 8; i++, asked++) {
            char vals[4096], body[8192], what[96];
            values(vals, sizeof vals, shapes[k].n, shapes[k].floats);
            snprintf(body, sizeof body, "{%s,\"data\":%s", shapes[k].spec, vals);
            snprintf(what, sizeof what, "{%s} n=%d, job %d", shapes[k].spec, shapes[k].n, i);
            const long long r0 = metric_sum(host, port, runs);
            client c;
            against_reference(host, port, shapes[k].path, body, &c, what);
            by_resident += metric_sum(host, port, runs) > r0;
            hc_resp_free(&c.resp);
            if (!by_resident) usleep(30 * 1000); /* the resident build comes from the background builder */
        }
        CHECKF(by_resident >= 8, "{%s} n=%d: %d of %d answers from the resident", shapes[k].spec, shapes[k].n,
               by_resident, asked);
        printf("resident replays: {%s} n=%d: %d of %d answers from the resident\n", shapes[k].spec, shapes[k].n,
               by_resident, asked);
    }
    printf("resident runs: %lld\n", metric_sum(host, port, runs) - total0);
}

int main(void) {
    wp_err err = {0};
    wp_backend *probe = wp_backend_cuda_open(0, &err);
    if (!probe) {
        printf("SKIPPED: no CUDA device (%s)\n", err.msg);
        printf("gpu_batch: 0 passed, 0 failed\n");
        return 0;
    }
    wp_backend_close(probe);
    const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
    int port = 0;
    pid_t pid = 0, rpid = 0;
    T_CASE("daemon");
    static const char *const alone[] = {"--batch-max", "1", "--zero-copy", "off", NULL}, *const window[] = {
                                                                                             "--batch-window-us",
                                                                                             "20000", NULL};
    CHECK(start_daemon(build, alone, &ref_port, &rpid) == 0); /* the reference: all alone */
    CHECK(start_daemon(build, window, &port, &pid) == 0);
    if (pid <= 0 || rpid <= 0) {
        if (pid > 0) bench_daemon_stop(pid);
        if (rpid > 0) bench_daemon_stop(rpid);
        return t_done("gpu_batch");
    }
    mode = MODE_WINDOW;
    expect_batch_kernel = true;
    const char *host = "127.0.0.1";
    long long batches0 = metric(host, port, "warpd_batches_total"),
              jobs0 = metric(host, port, "warpd_batched_jobs_total");
    all_rounds(host, port);
    T_CASE("batches happened");
    long long batches = metric(host, port, "warpd_batches_total") - batches0;
    long long jobs = metric(host, port, "warpd_batched_jobs_total") - jobs0;
    CHECKF(jobs > batches && rounds_batched >= 1, "%lld jobs in %lld batches; %d rounds batched", jobs, batches,
           rounds_batched);
    CHECKF(batch_kernel_runs > 0, "no data job ran a _batch kernel");
    printf("batches: %lld jobs in %lld batches, %d rounds batched, %d data jobs ran a _batch kernel\n", jobs, batches,
           rounds_batched, batch_kernel_runs);
    T_CASE("a small job alone runs as a batch of one once its _batch kernel is built");
    lone_job(host, port);
    T_CASE("lone untimed jobs of one shape, fresh inputs: each answers as the profiled reference");
    replays(host, port);
    T_CASE("lone small reduces through the device's resident: each answers as the profiled reference");
    resident_replays(host, port);
    T_CASE("small untimed jobs ran zero-copy; the reference copied every one");
    long long zc = metric_sum(host, port, "warpd_device_zero_copy_runs_total"),
              zc_ref = metric_sum(host, ref_port, "warpd_device_zero_copy_runs_total");
    CHECKF(zc > 0 && zc_ref == 0, "zero-copy runs: %lld (batching daemon), %lld (reference)", zc, zc_ref);
    printf("zero-copy runs: %lld (batching daemon), %lld (reference, --zero-copy off)\n", zc, zc_ref);
    /* what the daemons said (a batched kernel one could not get, say) is in this program's output */
    bench_daemon_stop(rpid);
    bench_daemon_stop(pid);
    return t_done("gpu_batch");
}
