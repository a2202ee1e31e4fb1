// bench_launch.cu — what one kernel launch costs the host, back to back, by launch path and parameter
// size: the runtime's <<<>>>, cuLaunchKernel (kernelParams, or one packed buffer), cuLaunchKernelEx with
// and without programmatic stream serialization (PDL). warpd's data kernels go through the last one
// (160 bytes of wp_data_params + PDL). Empty kernels, one block; 2000 launches between two events, in
// 7 rounds that take every variant in turn (a drift of the host touches all alike), best round each:
// µs per launch (events) and µs per call on the host clock. When the two agree, the host is the
// bottleneck: the floor under any one-launch job (device_reduce and CUB at 2^10..2^12).
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

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

/* One variant: a label, a launch (returns 0 or the launch's error) and its best times so far. */
struct Variant {
    std::string label;
    std::function<int()> launch;
    double best_ev = 1e9, best_host = 1e9;
    int bad = 0; // launches that returned an error: the row is then not a measurement
};

/* R launches of v between two events: keeps the best µs per launch (events) and per call (host clock). */
static void measure(Variant &v, cudaStream_t st, int R) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a, st);
    auto h0 = std::chrono::steady_clock::now();
    for (int i = 0; i < R; i++) v.bad += v.launch() != 0;
    auto h1 = std::chrono::steady_clock::now();
    cudaEventRecord(b, st);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    double ev = ms * 1000.0 / R, host = std::chrono::duration<double, std::micro>(h1 - h0).count() / R;
    v.best_ev = ev < v.best_ev ? ev : v.best_ev;
    v.best_host = host < v.best_host ? host : v.best_host;
    cudaEventDestroy(a);
    cudaEventDestroy(b);
}

/* Every variant once per round, ROUNDS rounds, so a drift of the host (clock, caches) touches all alike. */
static void run_rounds(std::vector<Variant> &vs, cudaStream_t st, int R) {
    const int ROUNDS = 7;
    for (auto &v : vs)
        for (int i = 0; i < 50; i++) v.bad += v.launch() != 0; // warm-up
    cudaStreamSynchronize(st);
    for (int r = 0; r < ROUNDS; r++)
        for (auto &v : vs) measure(v, st, R);
    for (auto &v : vs) {
        if (v.bad)
            printf("%-52s %d launches failed\n", v.label.c_str(), v.bad);
        else
            printf("%-52s %6.2f us/launch (events)  %6.2f us/call (host)\n", v.label.c_str(), v.best_ev, v.best_host);
    }
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
    void *a8_[] = {&nul}, *a160_[] = {&p160}, *a32_[] = {&p32};
    void **a8 = a8_, **a160 = a160_, **a32 = a32_; // pointers, so lambdas can copy them
    for (int threads : {256, 1024}) {
        printf("-- one block of %d threads\n", threads);
        std::vector<Variant> vs;
        auto add = [&](const char *label, std::function<int()> f) {
            Variant v;
            v.label = label;
            v.launch = std::move(f);
            vs.push_back(std::move(v));
        };
        add("runtime <<<>>> 8 B", [=] {
            k8<<<1, threads, 0, st>>>(nul);
            return (int)cudaGetLastError();
        });
        add("runtime <<<>>> 160 B", [=] {
            k160<<<1, threads, 0, st>>>(p160);
            return (int)cudaGetLastError();
        });
        add("cuLaunchKernel 8 B", [=] { return (int)cuLaunchKernel(f8, 1, 1, 1, threads, 1, 1, 0, cst, a8, NULL); });
        add("cuLaunchKernel 32 B", [=] { return (int)cuLaunchKernel(f32, 1, 1, 1, threads, 1, 1, 0, cst, a32, NULL); });
        add("cuLaunchKernel 160 B",
            [=] { return (int)cuLaunchKernel(f160, 1, 1, 1, threads, 1, 1, 0, cst, a160, NULL); });
        add("cuLaunchKernel 160 B as one buffer (extra)", [=] {
            size_t sz = sizeof p160;
            P160 copy = p160;
            void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &copy, CU_LAUNCH_PARAM_BUFFER_SIZE, &sz,
                             CU_LAUNCH_PARAM_END};
            return (int)cuLaunchKernel(f160, 1, 1, 1, threads, 1, 1, 0, cst, NULL, extra);
        });
        for (int pdl = 0; pdl < 2; pdl++)
            for (int big = 0; big < 2; big++) {
                char label[80];
                snprintf(label, sizeof label, "cuLaunchKernelEx %s B%s%s", big ? "160" : "32", pdl ? " + PDL" : "",
                         pdl && big ? " (warpd's data kernels)" : "");
                CUfunction fn = big ? (pdl ? f160p : f160) : (pdl ? f32p : f32);
                void **args = big ? a160 : a32;
                add(label, [=] {
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
                    return (int)cuLaunchKernelEx(&cfg, fn, args, NULL);
                });
            }
        run_rounds(vs, st, R);
    }
    cudaError_t e = cudaStreamSynchronize(st);
    printf("status: %s\n", cudaGetErrorString(e));
    return 0;
}
