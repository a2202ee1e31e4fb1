// bench_launch.cu — what one kernel launch costs the host, back to back, by launch path and parameter
// size: the runtime's <<<>>>, cuLaunchKernel (kernelParams, or one packed buffer), cuLaunchKernelEx with
// and without programmatic stream serialization (PDL). warpd's data kernels go through the last one
// (160 bytes of wp_data_params + PDL). Empty kernels, one block; 2000 launches between two events, best
// of 5 turns: µs per launch (events) and µs per call on the host clock. When the two agree, the host is
// the bottleneck: the floor under any one-launch job (device_reduce and CUB at 2^10..2^12).
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstring>

struct P160 {
    unsigned long long a[9];
    double w[9];
    unsigned e;
    int x, y, z;
};
struct P32 {
    unsigned long long a[4];
};

__global__ void k8(unsigned long long *p) {
    if (p && threadIdx.x == 1000) *p = 1;
}
__global__ void k160(P160 p) {
    if (p.a[0] && threadIdx.x == 1000) *(int *)p.a[0] = 1;
}
__global__ void k32(P32 p) {
    if (p.a[0] && threadIdx.x == 1000) *(int *)p.a[0] = 1;
}
__global__ void k160_pdl(P160 p) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (p.a[0] && threadIdx.x == 1000) *(int *)p.a[0] = 1;
}
__global__ void k32_pdl(P32 p) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (p.a[0] && threadIdx.x == 1000) *(int *)p.a[0] = 1;
}

template <typename F> static void timeit(const char *label, cudaStream_t st, int R, F f) {
    int bad = 0; // launches that returned an error: the row is then not a measurement
    for (int i = 0; i < 50; i++) bad += f() != 0;
    cudaStreamSynchronize(st);
    double best_ev = 1e9, best_host = 1e9;
    for (int turn = 0; turn < 5; turn++) {
        cudaEvent_t a, b;
        cudaEventCreate(&a);
        cudaEventCreate(&b);
        cudaEventRecord(a, st);
        auto h0 = std::chrono::steady_clock::now();
        for (int i = 0; i < R; i++) bad += f() != 0;
        auto h1 = std::chrono::steady_clock::now();
        cudaEventRecord(b, st);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        double ev = ms * 1000.0 / R, host = std::chrono::duration<double, std::micro>(h1 - h0).count() / R;
        if (ev < best_ev) best_ev = ev;
        if (host < best_host) best_host = host;
        cudaEventDestroy(a);
        cudaEventDestroy(b);
    }
    if (bad) {
        printf("%-52s %d launches failed\n", label, bad);
        return;
    }
    printf("%-52s %6.2f us/launch (events)  %6.2f us/call (host)\n", label, best_ev, best_host);
}

int main() {
    cudaFree(0);
    cudaStream_t st;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    CUstream cst = (CUstream)st;
    const int R = 2000;
    P160 p160;
    memset(&p160, 0, sizeof p160);
    P32 p32;
    memset(&p32, 0, sizeof p32);
    unsigned long long *nul = nullptr;
    CUfunction f8, f160, f32, f160p, f32p;
    cudaGetFuncBySymbol((cudaFunction_t *)&f8, (const void *)k8);
    cudaGetFuncBySymbol((cudaFunction_t *)&f160, (const void *)k160);
    cudaGetFuncBySymbol((cudaFunction_t *)&f32, (const void *)k32);
    cudaGetFuncBySymbol((cudaFunction_t *)&f160p, (const void *)k160_pdl);
    cudaGetFuncBySymbol((cudaFunction_t *)&f32p, (const void *)k32_pdl);
    void *a8[] = {&nul}, *a160[] = {&p160}, *a32[] = {&p32};
    for (int threads : {256, 1024}) {
        printf("-- one block of %d threads\n", threads);
        timeit("runtime <<<>>> 8 B", st, R, [&] {
            k8<<<1, threads, 0, st>>>(nul);
            return (int)cudaGetLastError();
        });
        timeit("runtime <<<>>> 160 B", st, R, [&] {
            k160<<<1, threads, 0, st>>>(p160);
            return (int)cudaGetLastError();
        });
        timeit("cuLaunchKernel 8 B", st, R,
               [&] { return (int)cuLaunchKernel(f8, 1, 1, 1, threads, 1, 1, 0, cst, a8, NULL); });
        timeit("cuLaunchKernel 32 B", st, R,
               [&] { return (int)cuLaunchKernel(f32, 1, 1, 1, threads, 1, 1, 0, cst, a32, NULL); });
        timeit("cuLaunchKernel 160 B", st, R,
               [&] { return (int)cuLaunchKernel(f160, 1, 1, 1, threads, 1, 1, 0, cst, a160, NULL); });
        size_t sz = sizeof p160;
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &p160, CU_LAUNCH_PARAM_BUFFER_SIZE, &sz, CU_LAUNCH_PARAM_END};
        timeit("cuLaunchKernel 160 B as one buffer (extra)", st, R,
               [&] { return (int)cuLaunchKernel(f160, 1, 1, 1, threads, 1, 1, 0, cst, NULL, extra); });
        for (int pdl = 0; pdl < 2; pdl++)
            for (int big = 0; big < 2; big++) {
                CUlaunchAttribute attr = {};
                attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
                attr.value.programmaticStreamSerializationAllowed = 1;
                CUlaunchConfig cfg = {};
                cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
                cfg.blockDimX = threads;
                cfg.blockDimY = cfg.blockDimZ = 1;
                cfg.hStream = cst;
                cfg.attrs = pdl ? &attr : NULL;
                cfg.numAttrs = pdl ? 1 : 0;
                char label[80];
                snprintf(label, sizeof label, "cuLaunchKernelEx %s B%s", big ? "160" : "32", pdl ? " + PDL" : "");
                CUfunction fn = big ? (pdl ? f160p : f160) : (pdl ? f32p : f32);
                void **args = big ? a160 : a32;
                timeit(label, st, R, [&] { return (int)cuLaunchKernelEx(&cfg, fn, args, NULL); });
            }
    }
    cudaError_t e = cudaStreamSynchronize(st);
    printf("status: %s\n", cudaGetErrorString(e));
    return 0;
}
