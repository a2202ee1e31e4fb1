// bench_reduce.cu — warpd's device_reduce (sum, max) and device_scan (inclusive sum) against CUB in
// the same program, on the same resident buffers, f32 and i32, n = 2^10 .. 2^30 (even powers).
// warpd runs through its engine (bench/lib/reduce_entry.h: NVRTC kernels from templates/, launched
// by the Driver API backend); CUB through the runtime API on the same device. Both are timed with
// CUDA events around R back-to-back launches (R from 200 at 2^10 down to 5 at 2^30), first call
// (compile, warm-up) excluded. GB/s counts bytes read (reduce) or read + written (scan).
// Two timings per row: "pipelined" (R launches back to back between two events: time per launch,
// GB/s and the warpd/CUB throughput ratio; the median of 3 turns each, alternating warpd and CUB) and "one call" (the
// median of R single calls, each between its own two events: the latency a lone request sees, where CUB's second kernel
// shows). Reductions also get "graph": the R launches captured as one CUDA graph and one replay timed, per launch (the
// host's cost of submitting each launch left out: what the GPU itself takes, launch gaps included).
//   bench_reduce [--max-log2 N] [--min-log2 N] [--quick] [--only reduce|scan] [--no-sweep] [--types LIST]
// --types: the element types, of f32, i32, f64, i64 (default f32,i32). --only runs the reduce rows (sum, max) or the scan rows alone (and that family's block sweep).
// It also prints the launch floor: an empty kernel's time per launch, pipelined and one call.
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lib/reduce_entry.h"

#define CHECK_CUDA(call)                                                                                               \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                                                \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

struct Row {
    const char *what, *type;
    int log2n;
    double ours_us, cub_us;   // pipelined, per launch
    double ours_one, cub_one; // one call, median
    bool ok;
    double ours_graph, cub_graph; // per launch, R launches captured in one CUDA graph (reduce rows; else NAN)
};

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? NAN : v[v.size() / 2];
}

template <typename F> static double one_call_cub(int repeat, F launch) {
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    std::vector<double> t;
    for (int i = 0; i < repeat; i++) {
        CHECK_CUDA(cudaEventRecord(a));
        launch();
        CHECK_CUDA(cudaEventRecord(b));
        CHECK_CUDA(cudaEventSynchronize(b));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1000.0);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return median(t);
}

static double one_call_ours(const char *family, const char *type, const char *op, void *in, unsigned long long n,
                            void *out, int repeat) {
    std::vector<double> t;
    char why[400];
    for (int i = 0; i < repeat; i++) {
        double us = 0;
        if (wpb_run(family, type, op, in, n, out, 1, &us, NULL, why, sizeof why)) return NAN;
        t.push_back(us);
    }
    return median(t);
}

static int repeats_for(unsigned long long n) {
    double r = 5.0 * (double)(1ull << 28) / (double)n;
    return r < 5 ? 5 : r > 200 ? 200 : (int)r;
}

template <typename T, typename F> static double time_cub(int repeat, F launch) {
    launch(); // warm-up
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    CHECK_CUDA(cudaEventRecord(a));
    for (int i = 0; i < repeat; i++) launch();
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms * 1000.0 / repeat;
}

/* R launches captured from a stream into one CUDA graph, replayed once to warm up; the time of one
 * more replay, per launch. launch(stream) issues one call on the capturing stream. */
template <typename F> static double time_cub_graph(int repeat, F launch) {
    cudaStream_t st;
    CHECK_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CHECK_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < repeat; i++) launch(st);
    CHECK_CUDA(cudaStreamEndCapture(st, &g));
    CHECK_CUDA(cudaGraphInstantiate(&ge, g, 0));
    CHECK_CUDA(cudaGraphLaunch(ge, st));
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    CHECK_CUDA(cudaEventRecord(a, st));
    CHECK_CUDA(cudaGraphLaunch(ge, st));
    CHECK_CUDA(cudaEventRecord(b, st));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaStreamDestroy(st);
    return ms * 1000.0 / repeat;
}

/* The same for warpd: its engine captures the repeats on its own stream (WP_LAUNCH_GRAPH). */
static double time_ours_graph(const char *type, const char *op, void *in, unsigned long long n, int repeat) {
    char why[400];
    double us = 0;
    wpb_set_graph(1);
    int rc = wpb_run("device_reduce", type, op, in, n, NULL, repeat, &us, NULL, why, sizeof why);
    wpb_set_graph(0);
    if (rc) fprintf(stderr, "warpd graph %s/%s n=%llu: %s\n", type, op, n, why);
    return rc ? NAN : us;
}

static double time_ours(const char *family, const char *type, const char *op, void *in, unsigned long long n, void *out,
                        int repeat, unsigned long long *value) {
    char why[400];
    double us = 0;
    if (wpb_run(family, type, op, in, n, out, 1, &us, value, why, sizeof why) ||
        wpb_run(family, type, op, in, n, out, repeat, &us, value, why, sizeof why)) {
        fprintf(stderr, "warpd %s/%s/%s n=%llu: %s\n", family, type, op, n, why);
        return NAN;
    }
    return us;
}

/* Pipelined timing of warpd and CUB in ROUNDS alternating turns (warpd, CUB, warpd, ...), the median
 * of each side: neither always runs first, after whatever the row before left in L2 or in the clocks. */
#define ROUNDS 3
template <typename F>
static void time_pair(const char *family, const char *type, const char *op, void *in, unsigned long long n, void *out,
                      int repeat, unsigned long long *value, F cub_launch, double *ours_us, double *cub_us) {
    std::vector<double> a, b;
    for (int i = 0; i < ROUNDS; i++) {
        a.push_back(time_ours(family, type, op, in, n, out, repeat, value));
        b.push_back(time_cub<char>(repeat, cub_launch));
    }
    *ours_us = median(a);
    *cub_us = median(b);
}

static double time_ours_block(const char *family, const char *type, const char *op, int block, void *in,
                              unsigned long long n, void *out, int repeat) {
    char why[400];
    double us = 0;
    if (wpb_run_block(family, type, op, block, in, n, out, 1, &us, NULL, why, sizeof why) ||
        wpb_run_block(family, type, op, block, in, n, out, repeat, &us, NULL, why, sizeof why))
        return NAN;
    return us;
}

template <typename T> static bool same_value(unsigned long long ours_bits, T cub_value, bool exact) {
    T ours;
    memcpy(&ours, &ours_bits, sizeof ours);
    if (exact) return ours == cub_value;
    double a = (double)ours, b = (double)cub_value;
    return fabs(a - b) <= 1e-5 * fmax(fabs(b), 1.0);
}

template <typename T>
static void bench_type(const char *type, int min_log2, int max_log2, std::vector<Row> &rows, bool quick,
                       const char *only) {
    const bool do_reduce = !only || !strcmp(only, "reduce"), do_scan = !only || !strcmp(only, "scan");
    const unsigned long long max_n = 1ull << max_log2;
    unsigned long long in_dev = 0, out_dev = 0, cub_out_dev = 0;
    void *in = wpb_alloc(max_n * sizeof(T), &in_dev), *out = wpb_alloc(max_n * sizeof(T), &out_dev);
    void *cub_out = wpb_alloc(max_n * sizeof(T), &cub_out_dev);
    if (!in || !out || !cub_out || wpb_generate(in, type, max_n, 42)) {
        fprintf(stderr, "cannot allocate or fill %llu %s elements\n", max_n, type);
        exit(1);
    }
    const T *d_in = (const T *)in_dev;
    T *d_out = (T *)out_dev, *d_cub = (T *)cub_out_dev;
    T *d_value;
    CHECK_CUDA(cudaMalloc(&d_value, sizeof(T)));
    size_t temp_bytes = 0, b1 = 0, b2 = 0, b3 = 0;
    cub::DeviceReduce::Sum(nullptr, b1, d_in, d_value, (int)max_n);
    cub::DeviceReduce::Max(nullptr, b2, d_in, d_value, (int)max_n);
    cub::DeviceScan::InclusiveSum(nullptr, b3, d_in, d_cub, (int)max_n);
    temp_bytes = b1 > b2 ? b1 : b2;
    temp_bytes = temp_bytes > b3 ? temp_bytes : b3;
    void *d_temp;
    CHECK_CUDA(cudaMalloc(&d_temp, temp_bytes));
    const bool exact = std::is_integral<T>::value;
    for (int lg = min_log2; lg <= max_log2; lg += quick ? 4 : 2) {
        const unsigned long long n = 1ull << lg;
        const int r = repeats_for(n);
        unsigned long long v = 0;
        T cv;
        size_t tb = temp_bytes;
        const int r1 = r < 50 ? r : 50;
        double ours, cub_us, o1, c1;
        for (const char *op : {"sum", "max"}) {
            if (!do_reduce) continue;
            const bool is_max = !strcmp(op, "max");
            auto cub_on = [&](cudaStream_t st) {
                if (is_max)
                    cub::DeviceReduce::Max(d_temp, tb, d_in, d_value, (int)n, st);
                else
                    cub::DeviceReduce::Sum(d_temp, tb, d_in, d_value, (int)n, st);
            };
            auto cub_call = [&] { cub_on(0); };
            time_pair("device_reduce", type, op, in, n, NULL, r, &v, cub_call, &ours, &cub_us);
            CHECK_CUDA(cudaMemcpy(&cv, d_value, sizeof cv, cudaMemcpyDeviceToHost));
            o1 = one_call_ours("device_reduce", type, op, in, n, NULL, r1);
            c1 = one_call_cub(r1, cub_call);
            const int rg = r < 100 ? r * 4 : r; // a graph of at least 20 launches
            const double og = time_ours_graph(type, op, in, n, rg), cg = time_cub_graph(rg, cub_on);
            rows.push_back({is_max ? "reduce max" : "reduce sum", type, lg, ours, cub_us, o1, c1,
                            same_value<T>(v, cv, exact || is_max), og, cg});
        }
        if (!do_scan) continue;
        // inclusive scan
        time_pair(
            "device_scan", type, "sum", in, n, out, r, NULL,
            [&] { cub::DeviceScan::InclusiveSum(d_temp, tb, d_in, d_cub, (int)n); }, &ours, &cub_us);
        T ours_last, cub_last;
        CHECK_CUDA(cudaMemcpy(&ours_last, d_out + n - 1, sizeof(T), cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(&cub_last, d_cub + n - 1, sizeof(T), cudaMemcpyDeviceToHost));
        unsigned long long ob = 0;
        memcpy(&ob, &ours_last, sizeof ours_last);
        o1 = one_call_ours("device_scan", type, "sum", in, n, out, r1);
        c1 = one_call_cub(r1, [&] { cub::DeviceScan::InclusiveSum(d_temp, tb, d_in, d_cub, (int)n); });
        rows.push_back({"scan incl sum", type, lg, ours, cub_us, o1, c1, same_value<T>(ob, cub_last, exact), NAN, NAN});
    }
    cudaFree(d_temp);
    cudaFree(d_value);
    wpb_free(in);
    wpb_free(out);
    wpb_free(cub_out);
}

/* Block sizes of device_reduce and device_scan at one size (f32 sum), pipelined: to pick defaults. */
static void block_sweep(int log2n, const char *only) {
    const unsigned long long n = 1ull << log2n;
    unsigned long long dev = 0, dev2 = 0;
    void *in = wpb_alloc(n * 4, &dev), *out = wpb_alloc(n * 4, &dev2);
    if (!in || !out || wpb_generate(in, "f32", n, 7)) return;
    printf("\nblock sweep, f32 sum, n = 2^%d, pipelined:", log2n);
    static const int blocks[] = {64, 128, 256, 512, 1024};
    for (const char *family : {"device_reduce", "device_scan"}) {
        if (only && strncmp(family + 7, only, strlen(only))) continue;
        printf("\n  %-14s", family);
        for (int b : blocks) {
            double us = time_ours_block(family, "f32", "sum", b, in, n, strcmp(family, "device_scan") ? NULL : out, 10);
            double gbps = (double)n * 4.0 * (strcmp(family, "device_scan") ? 1 : 2) / us / 1e3;
            printf("  b%-4d %8.1f us %6.0f GB/s", b, us, gbps);
        }
    }
    printf("\n");
    wpb_free(in);
    wpb_free(out);
}

/* The launch floor: an empty kernel (one block of 256), pipelined (200 back to back) and one call
 * (median of 50): no single-launch reduction can take less per launch than this on this host + GPU. */
__global__ void wpb_empty_kernel() {}
static void launch_floor(double *pipelined_us, double *one_us, double *graph_us) {
    *pipelined_us = time_cub<char>(200, [&] { wpb_empty_kernel<<<1, 256>>>(); });
    *graph_us = time_cub_graph(200, [&](cudaStream_t st) { wpb_empty_kernel<<<1, 256, 0, st>>>(); });
    *one_us = one_call_cub(50, [&] { wpb_empty_kernel<<<1, 256>>>(); });
}

static double copy_gbps(unsigned long long bytes) {
    void *a, *b;
    CHECK_CUDA(cudaMalloc(&a, bytes));
    CHECK_CUDA(cudaMalloc(&b, bytes));
    double us = time_cub<char>(10, [&] { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice); });
    cudaFree(a);
    cudaFree(b);
    return 2.0 * (double)bytes / us / 1e3;
}

int main(int argc, char **argv) {
    int max_log2 = 30, min_log2 = 10;
    bool quick = false, sweep = true;
    const char *only = NULL, *types = "f32,i32";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-log2") && i + 1 < argc)
            max_log2 = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-log2") && i + 1 < argc)
            min_log2 = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--types") && i + 1 < argc)
            types = argv[++i];
        else if (!strcmp(argv[i], "--no-sweep"))
            sweep = false;
        else if (!strcmp(argv[i], "--quick"))
            quick = true;
        else {
            fprintf(stderr,
                    "usage: %s [--max-log2 N] [--min-log2 N] [--quick] [--only reduce|scan] [--no-sweep] "
                    "[--types f32,i32,f64,i64]\n",
                    argv[0]);
            return 2;
        }
    }
    char why[400];
    if (wpb_open(why, sizeof why)) {
        printf("SKIPPED: no CUDA device (%s)\n", why);
        return 0;
    }
    CHECK_CUDA(cudaSetDevice(0));
    size_t free_b = 0, total_b = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    const unsigned long long widest = strstr(types, "64") ? 8 : 4;
    while (max_log2 > 10 && (3ull << max_log2) * widest > free_b * 9 / 10) max_log2--; // three buffers per type
    printf("device: %s; CUB %d.%d.%d\n", wpb_device(), CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
    printf("device-to-device copy, 2^28 floats: %.0f GB/s (read + written)\n", copy_gbps(4ull << 28));
    double floor_pipe = 0, floor_one = 0, floor_graph = 0;
    launch_floor(&floor_pipe, &floor_one, &floor_graph);
    printf(
        "launch floor, empty kernel <<<1, 256>>> (runtime API): pipelined %.2f us, one call %.2f us, graph %.2f us\n",
        floor_pipe, floor_one, floor_graph);
    const char *pdl = getenv("WARPD_PDL");
    printf("warpd launches: programmatic dependent launch %s%s (WARPD_PDL=0: off; WARPD_PDL=BYTES: under BYTES)\n",
           wpb_overlap() ? "on" : "off", wpb_overlap() && pdl ? " for inputs under WARPD_PDL bytes" : "");
    std::vector<Row> rows;
    if (min_log2 < 10) min_log2 = 10;
    const std::string want = std::string(",") + types + ",";
    auto wants = [&](const char *t) { return want.find(std::string(",") + t + ",") != std::string::npos; };
    if (wants("f32")) bench_type<float>("f32", min_log2, max_log2, rows, quick, only);
    if (wants("i32")) bench_type<int>("i32", min_log2, max_log2, rows, quick, only);
    if (wants("f64")) bench_type<double>("f64", min_log2, max_log2, rows, quick, only);
    if (wants("i64")) bench_type<long long>("i64", min_log2, max_log2, rows, quick, only);
    printf("\n%-14s %-4s %6s | %-45s | %-30s | %-30s | %s\n", "", "", "", "pipelined (per launch)", "one call (median)",
           "graph (per launch)", "");
    printf("%-14s %-4s %6s | %9s %7s %9s %7s %5s | %9s %9s %10s | %9s %9s %10s | %s\n", "what", "type", "n", "warpd us",
           "GB/s", "CUB us", "GB/s", "ratio", "warpd us", "CUB us", "time ratio", "warpd us", "CUB us", "time ratio",
           "result");
    for (const Row &r : rows) {
        const double size = strstr(r.type, "64") ? 8.0 : 4.0;
        double bytes = (double)(1ull << r.log2n) * size * (strncmp(r.what, "scan", 4) ? 1 : 2);
        double ours_gbps = bytes / r.ours_us / 1e3, cub_gbps = bytes / r.cub_us / 1e3;
        printf("%-14s %-4s   2^%-2d | %9.2f %7.0f %9.2f %7.0f %5.3f | %9.2f %9.2f %10.3f | %9.2f %9.2f %10.3f | %s\n",
               r.what, r.type, r.log2n, r.ours_us, ours_gbps, r.cub_us, cub_gbps, ours_gbps / cub_gbps, r.ours_one,
               r.cub_one, r.ours_one / r.cub_one, r.ours_graph, r.cub_graph, r.ours_graph / r.cub_graph,
               r.ok ? "same" : "DIFFERS");
    }
    if (sweep) {
        block_sweep(max_log2 < 28 ? max_log2 : 28, only);
        block_sweep(max_log2 < 20 ? max_log2 : 20, only);
    }
    wpb_close();
    return 0;
}
