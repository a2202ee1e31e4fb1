// bench_hist.cu — warpd's histogram family against CUB's DeviceHistogram::HistogramEven in the same
// program, on the same resident f32 buffer (uniform random in [0, 1), the generate family's), range
// [0, 1], 256 and 65536 bins, n = 2^24 and 2^28 (or --log2 N ...). warpd runs through its engine
// (bench/lib/reduce_entry.h: the NVRTC kernel from templates/histogram.cu, the Driver API backend);
// CUB through the runtime API. Both timed with CUDA events around R back-to-back launches, the median
// of 3 turns (alternating), first call excluded. GB/s counts the bytes read. CUB bins a value by its own
// arithmetic (it may differ from numpy's at an edge; warpd's counts are numpy's): speed only is
// compared here, plus the total counted, which must agree (no value of [0, 1) is out of range).
//   bench_hist [--log2 N]... [--bins B]... [--repeat R]
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

static double median3(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char **argv) {
    std::vector<int> logs, bins_list;
    int repeat = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--log2") && i + 1 < argc) logs.push_back(atoi(argv[++i]));
        else if (!strcmp(argv[i], "--bins") && i + 1 < argc) bins_list.push_back(atoi(argv[++i]));
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
        else return fprintf(stderr, "usage: %s [--log2 N]... [--bins B]... [--repeat R]\n", argv[0]), 2;
    }
    if (logs.empty()) logs = {24, 28};
    if (bins_list.empty()) bins_list = {256, 65536};
    char why[512];
    if (wpb_open(why, sizeof why)) {
        printf("SKIPPED: %s\n", why);
        return 0;
    }
    printf("device: %s\n", wpb_device());
    printf("%-6s %-6s %-7s | %10s %8s | %10s %8s | %9s | %s\n", "n", "bins", "binning", "warpd us", "GB/s", "CUB us",
           "GB/s", "warpd/CUB", "totals");
    for (int lg : logs) {
        const unsigned long long n = 1ull << lg;
        unsigned long long dev = 0;
        void *buf = wpb_alloc(n * 4, &dev);
        if (!buf || wpb_generate(buf, "f32", n, 21)) return fprintf(stderr, "alloc/generate failed\n"), 1;
        for (int bins : bins_list) {
            std::vector<unsigned long long> counts(bins);
            double us = 0;
            const char *binning = "?";
            if (wpb_histogram("f32", bins, 0.0, 1.0, NULL, buf, n, 1, &us, counts.data(), &binning, why, sizeof why))
                return fprintf(stderr, "warpd: %s\n", why), 1;
            unsigned long long ours_total = 0;
            for (unsigned long long c : counts) ours_total += c;
            // CUB
            int *d_hist = nullptr;
            void *d_temp = nullptr;
            size_t temp_bytes = 0;
            CHECK_CUDA(cudaMalloc(&d_hist, sizeof(int) * bins));
            const float *d_samples = (const float *)dev;
            CHECK_CUDA(cub::DeviceHistogram::HistogramEven(d_temp, temp_bytes, d_samples, d_hist, bins + 1, 0.0f, 1.0f,
                                                           (long long)n));
            CHECK_CUDA(cudaMalloc(&d_temp, temp_bytes));
            auto cub_run = [&]() {
                CHECK_CUDA(cub::DeviceHistogram::HistogramEven(d_temp, temp_bytes, d_samples, d_hist, bins + 1, 0.0f,
                                                               1.0f, (long long)n));
            };
            cub_run();
            CHECK_CUDA(cudaDeviceSynchronize());
            std::vector<int> cub_counts(bins);
            CHECK_CUDA(cudaMemcpy(cub_counts.data(), d_hist, sizeof(int) * bins, cudaMemcpyDeviceToHost));
            unsigned long long cub_total = 0;
            for (int c : cub_counts) cub_total += (unsigned)c;
            cudaEvent_t a, b;
            CHECK_CUDA(cudaEventCreate(&a));
            CHECK_CUDA(cudaEventCreate(&b));
            std::vector<double> ours, cub;
            for (int turn = 0; turn < 3; turn++) {
                if (wpb_histogram("f32", bins, 0.0, 1.0, NULL, buf, n, repeat, &us, NULL, NULL, why, sizeof why))
                    return fprintf(stderr, "warpd: %s\n", why), 1;
                ours.push_back(us);
                CHECK_CUDA(cudaEventRecord(a));
                for (int r = 0; r < repeat; r++) cub_run();
                CHECK_CUDA(cudaEventRecord(b));
                CHECK_CUDA(cudaEventSynchronize(b));
                float ms = 0;
                CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
                cub.push_back(ms * 1000.0 / repeat);
            }
            const double o = median3(ours), c = median3(cub), gb = (double)n * 4 / 1e3;
            printf("2^%-4d %-6d %-7s | %10.1f %8.0f | %10.1f %8.0f | %8.2fx | warpd %llu, CUB %llu%s\n", lg, bins,
                   binning, o, gb / o, c, gb / c, c / o, ours_total, cub_total,
                   ours_total == n && cub_total == n ? "" : "  (!= n)");
            CHECK_CUDA(cudaFree(d_hist));
            CHECK_CUDA(cudaFree(d_temp));
            CHECK_CUDA(cudaEventDestroy(a));
            CHECK_CUDA(cudaEventDestroy(b));
        }
        wpb_free(buf);
    }
    wpb_close();
    return 0;
}
