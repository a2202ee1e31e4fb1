// bench_bykey.cu — warpd's reduce_by_key against CUB's DeviceReduce::ReduceByKey in the same program, on
// the same resident buffers: f32 values (sum) over i32 keys in runs of RUN (1000) elements, n = 2^24,
// 2^26, 2^28 (target: >= 1.0x CUB). warpd runs through its engine (bench/lib/reduce_entry.h: the
// NVRTC kernel of templates/bykey.cu, launched by the Driver API backend); CUB through the runtime API
// (its tile-state init kernel and its main kernel: one call). Both are timed with CUDA events around
// R back-to-back calls, first call (compile, warm-up) excluded, the median of 5 turns alternating warpd
// and CUB. GB/s counts the bytes read (keys and values: 8 per element). Each size also checks that
// both find the same runs and keys, and values within 1e-4 relative (the orders differ). Below the table,
// warpd's time per call at other block sizes (the family's default, the table's, is 512), to tune it.
//   bench_bykey [--run N] [--log2 A,B,...] [--repeat R] [--blocks B,B,...]   (--blocks "": none)
#include <cub/cub.cuh>
#include <cuda/std/functional>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
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

__global__ void fill_keys(int *keys, unsigned long long n, int run) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        keys[i] = (int)(i / (unsigned long long)run);
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? NAN : v[v.size() / 2];
}

int main(int argc, char **argv) {
    int run = 1000, repeat = 20;
    std::vector<int> logs = {24, 26, 28}, blocks = {256, 1024};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--run") && i + 1 < argc)
            run = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--log2") && i + 1 < argc) {
            logs.clear();
            for (char *t = strtok(argv[++i], ","); t; t = strtok(NULL, ",")) logs.push_back(atoi(t));
        } else if (!strcmp(argv[i], "--blocks") && i + 1 < argc) {
            blocks.clear();
            for (char *t = strtok(argv[++i], ","); t; t = strtok(NULL, ",")) blocks.push_back(atoi(t));
        } else {
            fprintf(stderr, "usage: %s [--run N] [--log2 A,B,...] [--repeat R] [--blocks B,B,...]\n", argv[0]);
            return 2;
        }
    }
    char why[400];
    if (wpb_open(why, sizeof why)) {
        printf("SKIPPED: no CUDA device (%s)\n", why);
        return 0;
    }
    CHECK_CUDA(cudaSetDevice(0));
    printf("device: %s; CUB %d.%d.%d\n", wpb_device(), CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
    printf("reduce_by_key: f32 sum over i32 keys in runs of %d; time per call, median of 5 turns of %d calls\n", run,
           repeat);
    printf("%-6s %8s | %10s %8s | %10s %8s | %6s | %s\n", "n", "runs", "warpd us", "GB/s", "CUB us", "GB/s", "vs CUB",
           "check");
    int failures = 0;
    for (int lg : logs) {
        const unsigned long long n = 1ull << lg, max_runs = n / (unsigned long long)run + 2;
        unsigned long long a_keys, a_vals, a_ok, a_ov;
        void *keys = wpb_alloc(n * 4, &a_keys), *vals = wpb_alloc(n * 4, &a_vals);
        void *ok = wpb_alloc(n * 4, &a_ok), *ov = wpb_alloc(n * 4, &a_ov);
        if (!keys || !vals || !ok || !ov) {
            printf("2^%d: out of device memory\n", lg);
            failures++;
            break;
        }
        fill_keys<<<4096, 256>>>((int *)a_keys, n, run);
        CHECK_CUDA(cudaDeviceSynchronize());
        wpb_generate(vals, "f32", n, 42);
        int *c_keys, *c_runs;
        float *c_vals;
        CHECK_CUDA(cudaMalloc(&c_keys, max_runs * 4));
        CHECK_CUDA(cudaMalloc(&c_vals, max_runs * 4));
        CHECK_CUDA(cudaMalloc(&c_runs, 8));
        size_t tb = 0;
        void *temp = nullptr;
        const int *d_keys = (const int *)a_keys;
        const float *d_vals = (const float *)a_vals;
        auto cub_call = [&] {
            cub::DeviceReduce::ReduceByKey(temp, tb, d_keys, c_keys, d_vals, c_vals, c_runs, cuda::std::plus<float>{},
                                           (long long)n);
        };
        cub_call();
        CHECK_CUDA(cudaMalloc(&temp, tb));
        cub_call();
        CHECK_CUDA(cudaDeviceSynchronize());
        double us = 0;
        unsigned long long runs = 0;
        if (wpb_run_bykey("f32", "i32", "sum", 0, keys, vals, n, ok, ov, 1, &us, &runs, why, sizeof why)) {
            printf("2^%d: warpd: %s\n", lg, why);
            failures++;
            break;
        }
        cudaEvent_t e0, e1;
        CHECK_CUDA(cudaEventCreate(&e0));
        CHECK_CUDA(cudaEventCreate(&e1));
        std::vector<double> ours, theirs;
        for (int turn = 0; turn < 5; turn++) {
            wpb_run_bykey("f32", "i32", "sum", 0, keys, vals, n, ok, ov, repeat, &us, &runs, why, sizeof why);
            ours.push_back(us);
            CHECK_CUDA(cudaEventRecord(e0));
            for (int r = 0; r < repeat; r++) cub_call();
            CHECK_CUDA(cudaEventRecord(e1));
            CHECK_CUDA(cudaEventSynchronize(e1));
            float ms = 0;
            CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
            theirs.push_back(ms * 1e3 / repeat);
        }
        // the same runs and keys; values within 1e-4 relative
        int cub_runs = 0;
        CHECK_CUDA(cudaMemcpy(&cub_runs, c_runs, 4, cudaMemcpyDeviceToHost));
        std::vector<int> k1(runs), k2(runs);
        std::vector<float> v1(runs), v2(runs);
        bool same = (unsigned long long)cub_runs == runs;
        if (same) {
            CHECK_CUDA(cudaMemcpy(k1.data(), (void *)a_ok, runs * 4, cudaMemcpyDeviceToHost));
            CHECK_CUDA(cudaMemcpy(v1.data(), (void *)a_ov, runs * 4, cudaMemcpyDeviceToHost));
            CHECK_CUDA(cudaMemcpy(k2.data(), c_keys, runs * 4, cudaMemcpyDeviceToHost));
            CHECK_CUDA(cudaMemcpy(v2.data(), c_vals, runs * 4, cudaMemcpyDeviceToHost));
            for (unsigned long long i = 0; i < runs && same; i++)
                same = k1[i] == k2[i] && std::fabs(v1[i] - v2[i]) <= 1e-4 * (std::fabs(v2[i]) + 1.0f);
        }
        failures += !same;
        const double mo = median(ours), mc = median(theirs), bytes = 8.0 * (double)n;
        printf("2^%-4d %8llu | %10.1f %8.0f | %10.1f %8.0f | %5.2fx | %s\n", lg, runs, mo, bytes / mo / 1e3, mc,
               bytes / mc / 1e3, mc / mo, same ? "same runs" : "MISMATCH");
        for (int b : blocks) { // the same job at another block size: the median of 3 turns
            std::vector<double> t;
            for (int turn = 0; turn < 3; turn++)
                if (wpb_run_bykey("f32", "i32", "sum", b, keys, vals, n, ok, ov, turn ? repeat : 1, &us, &runs, why,
                                  sizeof why) == 0 && turn)
                    t.push_back(us);
            if (t.empty())
                printf("       block %4d: %s\n", b, why);
            else
                printf("       block %4d: %10.1f us %8.0f GB/s (%.2fx CUB)\n", b, median(t), bytes / median(t) / 1e3,
                       mc / median(t));
        }
        CHECK_CUDA(cudaFree(temp));
        CHECK_CUDA(cudaFree(c_keys));
        CHECK_CUDA(cudaFree(c_vals));
        CHECK_CUDA(cudaFree(c_runs));
        wpb_free(keys);
        wpb_free(vals);
        wpb_free(ok);
        wpb_free(ov);
    }
    wpb_close();
    printf("bench_bykey: %s\n", failures ? "FAILED" : "done");
    return failures ? 1 : 0;
}
