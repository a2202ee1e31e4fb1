// bench_map_cub.cu — CUB's side of bench_map (transform-reduce): cub::DeviceReduce::Sum and
// cub::DeviceReduce::TransformReduce with x*x over f32, 2^24..2^30 (GB/s read), and the dot product of
// two 2^28 f32 arrays as TransformReduce over the indexes (x[i]*y[i], TB/s of both arrays read). The
// median of 7 timings of 20 back-to-back launches between two CUDA events, on random resident data.
// bench/gpu/map.sh prints it beside bench_map (warpd through its engine) and CuPy.
//   bench_map_cub [--max-log2 N]
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK_CUDA(call)                                                                                               \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                                                \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

#define RUNS 7
#define REPEAT 20

struct Square {
    __host__ __device__ float operator()(float x) const { return x * x; }
};
struct Product { // element i of the dot product, read through the index
    const float *x, *y;
    __host__ __device__ float operator()(long long i) const { return x[i] * y[i]; }
};
struct Plus {
    __host__ __device__ float operator()(float a, float b) const { return a + b; }
};

__global__ void fill(float *p, long long n, unsigned seed) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        p[i] = (float)(h >> 8) * (1.0f / 16777216.0f);
    }
}

template <class F> static double median_us(F launch) {
    cudaEvent_t a, b;
    CHECK_CUDA(cudaEventCreate(&a));
    CHECK_CUDA(cudaEventCreate(&b));
    launch(); // warm-up
    double t[RUNS];
    for (int r = 0; r < RUNS; r++) {
        CHECK_CUDA(cudaEventRecord(a));
        for (int k = 0; k < REPEAT; k++) launch();
        CHECK_CUDA(cudaEventRecord(b));
        CHECK_CUDA(cudaEventSynchronize(b));
        float ms;
        CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
        t[r] = ms * 1e3 / REPEAT;
    }
    std::sort(t, t + RUNS);
    CHECK_CUDA(cudaEventDestroy(a));
    CHECK_CUDA(cudaEventDestroy(b));
    return t[RUNS / 2];
}

int main(int argc, char **argv) {
    int max_log2 = 30;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--max-log2") && i + 1 < argc) max_log2 = atoi(argv[++i]);
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("SKIPPED: no CUDA device\n");
        return 0;
    }
    const long long max_n = 1ll << max_log2, dot_n = 1ll << 28;
    float *x, *y, *out;
    CHECK_CUDA(cudaMalloc(&x, (size_t)std::max(max_n, dot_n) * 4));
    CHECK_CUDA(cudaMalloc(&y, (size_t)dot_n * 4));
    CHECK_CUDA(cudaMalloc(&out, 16));
    fill<<<4096, 256>>>(x, std::max(max_n, dot_n), 1);
    fill<<<4096, 256>>>(y, dot_n, 2);
    size_t temp_bytes = 0, b2 = 0, b3 = 0;
    thrust::counting_iterator<long long> idx(0);
    CHECK_CUDA(cub::DeviceReduce::Sum(nullptr, temp_bytes, x, out, max_n));
    CHECK_CUDA(cub::DeviceReduce::TransformReduce(nullptr, b2, x, out, max_n, Plus(), Square(), 0.0f));
    CHECK_CUDA(cub::DeviceReduce::TransformReduce(nullptr, b3, idx, out, dot_n, Plus(), Product{x, y}, 0.0f));
    temp_bytes = std::max(temp_bytes, std::max(b2, b3));
    void *temp;
    CHECK_CUDA(cudaMalloc(&temp, temp_bytes));
    printf("CUB: median of %d runs of %d launches\n%-8s %12s %22s %8s\n", RUNS, REPEAT, "n (f32)", "Sum GB/s",
           "TransformReduce x*x", "ratio");
    for (int l = 24; l <= max_log2; l++) {
        const long long n = 1ll << l;
        size_t tb = temp_bytes;
        double ts = median_us([&] { cub::DeviceReduce::Sum(temp, tb, x, out, n); });
        double tm = median_us([&] { cub::DeviceReduce::TransformReduce(temp, tb, x, out, n, Plus(), Square(), 0.0f); });
        printf("2^%-6d %12.0f %22.0f %8.3f\n", l, n * 4 / ts / 1e3, n * 4 / tm / 1e3, ts / tm);
    }
    size_t tb = temp_bytes;
    double td = median_us([&] { cub::DeviceReduce::TransformReduce(temp, tb, idx, out, dot_n, Plus(), Product{x, y}, 0.0f); });
    printf("CUB dot 2^28 f32 (TransformReduce over indexes): %.1f us, %.3f TB/s read\n", td, dot_n * 8 / td / 1e6);
    CHECK_CUDA(cudaGetLastError());
    cudaFree(temp);
    cudaFree(x);
    cudaFree(y);
    cudaFree(out);
    return 0;
}
