// ops_gpu_check.cu — runs templates/wp_ops.cuh on a GPU and compares every result, bit for bit, with
// the host evaluator (wp_op_apply in kernels/expr.c): every builtin functor and every expression of
// tests/unit/ops_gpu_cases.c, for every type they parse for, over all pairs of edge values (NaNs,
// signed zeros, infinities, subnormals, INT_MIN, -1, shift counts past the width) plus random pairs.
// Then every f32 -> f16/bf16 conversion (all 2^32 inputs) and every f16/bf16 -> f32 against
// kernels/types.c. Built and run by tests/unit/ops_gpu_check.sh on the GPU machine.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "wp_ops.cuh"
extern "C" {
#include "kernels/expr.h"
}
#include WP_GPU_CASES_FILE

#define CUDA_OK(call)                                                                                                  \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                                \
            exit(2);                                                                                                   \
        }                                                                                                              \
    } while (0)

// ---- raw bits <-> T on the device ----
template <typename T> struct raw;
template <> struct raw<int> {
    static constexpr wp_type id = WP_I32;
    static __device__ int from(unsigned long long b) { return (int)(unsigned)b; }
    static __device__ unsigned long long to(int v) { return (unsigned)v; }
};
template <> struct raw<unsigned> {
    static constexpr wp_type id = WP_U32;
    static __device__ unsigned from(unsigned long long b) { return (unsigned)b; }
    static __device__ unsigned long long to(unsigned v) { return v; }
};
template <> struct raw<long long> {
    static constexpr wp_type id = WP_I64;
    static __device__ long long from(unsigned long long b) { return (long long)b; }
    static __device__ unsigned long long to(long long v) { return (unsigned long long)v; }
};
template <> struct raw<unsigned long long> {
    static constexpr wp_type id = WP_U64;
    static __device__ unsigned long long from(unsigned long long b) { return b; }
    static __device__ unsigned long long to(unsigned long long v) { return v; }
};
template <> struct raw<float> {
    static constexpr wp_type id = WP_F32;
    static __device__ float from(unsigned long long b) { return __uint_as_float((unsigned)b); }
    static __device__ unsigned long long to(float v) { return __float_as_uint(v); }
};
template <> struct raw<double> {
    static constexpr wp_type id = WP_F64;
    static __device__ double from(unsigned long long b) { return __longlong_as_double((long long)b); }
    static __device__ unsigned long long to(double v) { return (unsigned long long)__double_as_longlong(v); }
};
template <> struct raw<__half> {
    static constexpr wp_type id = WP_F16;
    static __device__ __half from(unsigned long long b) { return __ushort_as_half((unsigned short)b); }
    static __device__ unsigned long long to(__half v) { return __half_as_ushort(v); }
};
template <> struct raw<__nv_bfloat16> {
    static constexpr wp_type id = WP_BF16;
    static __device__ __nv_bfloat16 from(unsigned long long b) { return __ushort_as_bfloat16((unsigned short)b); }
    static __device__ unsigned long long to(__nv_bfloat16 v) { return __bfloat16_as_ushort(v); }
};

template <typename T, class Op>
__global__ void apply_kernel(const unsigned long long *a, const unsigned long long *b, unsigned long long *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = raw<T>::to(Op()(raw<T>::from(a[i]), raw<T>::from(b[i])));
}

// ---- inputs ----
static const uint64_t int_edges[] = {0,
                                     1,
                                     2,
                                     3,
                                     5,
                                     7,
                                     8,
                                     31,
                                     32,
                                     33,
                                     63,
                                     64,
                                     65,
                                     0xff00ff,
                                     ~0ull,
                                     ~1ull,
                                     ~2ull,
                                     ~6ull,
                                     0xffffffff80000000ull,
                                     0x7fffffff,
                                     0xffffffff80000001ull,
                                     0x80000000ull,
                                     0xffffffffull,
                                     0x8000000000000000ull,
                                     0x7fffffffffffffffull,
                                     0x5555555555555555ull,
                                     0xaaaaaaaaaaaaaaaaull};
static const uint64_t f32_edges[] = {0,          0x80000000, 0x3f800000, 0xbf800000, 0x40000000, 0x3f000000, 0x3fc00000,
                                     0x40400000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7f800001, 0x7fffffff,
                                     0x7f7fffff, 0xff7fffff, 0x00800000, 0x00000001, 0x00000003, 0x80000001, 0x4cbebc20,
                                     0x3dcccccd, 0x4b800001, 0xc0a00000, 0x33000000};
static const uint64_t f64_edges[] = {0,
                                     0x8000000000000000ull,
                                     0x3ff0000000000000ull,
                                     0xbff0000000000000ull,
                                     0x4000000000000000ull,
                                     0x3fe0000000000000ull,
                                     0x7ff0000000000000ull,
                                     0xfff0000000000000ull,
                                     0x7ff8000000000000ull,
                                     0xfff8000000000001ull,
                                     0x7ff0000000000001ull,
                                     0x7fefffffffffffffull,
                                     0x0010000000000000ull,
                                     1,
                                     3,
                                     0x3fb999999999999aull,
                                     0x4341c37937e08000ull,
                                     0xc014000000000000ull,
                                     0x4170000010000000ull};
static const uint64_t f16_edges[] = {0,      0x8000, 0x3c00, 0xbc00, 0x4000, 0x3800, 0x3e00, 0x7bff,
                                     0xfbff, 0x0001, 0x0003, 0x03ff, 0x0400, 0x7c00, 0xfc00, 0x7e00,
                                     0xfe01, 0x7c01, 0x6800, 0x1000, 0x2e66, 0x3c01};
static const uint64_t bf16_edges[] = {0,      0x8000, 0x3f80, 0xbf80, 0x4000, 0x3f00, 0x3fc0,
                                      0x7f7f, 0xff7f, 0x0001, 0x0003, 0x0080, 0x7f80, 0xff80,
                                      0x7fc0, 0xff81, 0x7f81, 0x4380, 0x3b80, 0x3dcd, 0x3f81};

struct inputs {
    std::vector<uint64_t> a, b;
    unsigned long long *da = nullptr, *db = nullptr, *dout = nullptr;
};

static uint64_t next_random(uint64_t *s) { // splitmix64
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inputs make_inputs(wp_type t) {
    const uint64_t *edges = int_edges;
    size_t n = sizeof int_edges / 8;
    if (t == WP_F32) edges = f32_edges, n = sizeof f32_edges / 8;
    if (t == WP_F64) edges = f64_edges, n = sizeof f64_edges / 8;
    if (t == WP_F16) edges = f16_edges, n = sizeof f16_edges / 8;
    if (t == WP_BF16) edges = bf16_edges, n = sizeof bf16_edges / 8;
    uint64_t m = wp_type_bitmask(t), seed = 42 + (uint64_t)t;
    inputs in;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) in.a.push_back(edges[i] & m), in.b.push_back(edges[j] & m);
    for (int k = 0; k < 8192; k++) {
        uint64_t x = next_random(&seed), y = next_random(&seed);
        if (k % 2 && wp_type_is_float(t)) { // ordinary numbers too, not only random bit patterns
            x = wp_value_from_double(t, (double)(int64_t)(x % 2001) / 8 - 125);
            y = wp_value_from_double(t, (double)(int64_t)(y % 2001) / 8 - 125);
        } else if (k % 4 == 1) { // small integers and shift counts
            x = (x % 200) - 100, y = (y % 80) - 8;
        }
        in.a.push_back(x & m), in.b.push_back(y & m);
    }
    size_t bytes = in.a.size() * 8;
    CUDA_OK(cudaMalloc(&in.da, bytes));
    CUDA_OK(cudaMalloc(&in.db, bytes));
    CUDA_OK(cudaMalloc(&in.dout, bytes));
    CUDA_OK(cudaMemcpy(in.da, in.a.data(), bytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(in.db, in.b.data(), bytes, cudaMemcpyHostToDevice));
    return in;
}

static int g_pass, g_fail;

template <typename T, class Op> static void check(const char *text, const inputs &in) {
    const wp_type t = raw<T>::id;
    const int n = (int)in.a.size();
    apply_kernel<T, Op><<<(n + 255) / 256, 256>>>(in.da, in.db, in.dout, n);
    CUDA_OK(cudaGetLastError());
    std::vector<uint64_t> got(n);
    CUDA_OK(cudaMemcpy(got.data(), in.dout, (size_t)n * 8, cudaMemcpyDeviceToHost));
    wp_op op;
    wp_err err = {};
    if (wp_op_parse(text, t, "op", &op, &err)) {
        printf("FAIL %s %s: host rejects: %s\n", wp_type_name(t), text, err.msg);
        g_fail++;
        return;
    }
    int bad = 0;
    for (int i = 0; i < n; i++) {
        uint64_t want = wp_op_apply(&op, t, in.a[i], in.b[i]);
        if (got[i] != want && bad++ < 3)
            printf("FAIL %s %s (a=%llx, b=%llx): gpu %llx, host %llx\n", wp_type_name(t), text,
                   (unsigned long long)in.a[i], (unsigned long long)in.b[i], (unsigned long long)got[i],
                   (unsigned long long)want);
    }
    wp_op_free(&op);
    if (bad)
        g_fail++;
    else
        g_pass++;
}

template <typename T, unsigned MASK, class Op> static void check_if(const char *text, const inputs &in) {
    if constexpr (((MASK >> raw<T>::id) & 1u) != 0) check<T, Op>(text, in);
}

template <typename T> static void run_type() {
    const wp_type t = raw<T>::id;
    inputs in = make_inputs(t);
    check<T, wp_op_sum<T>>("sum", in);
    check<T, wp_op_prod<T>>("prod", in);
    check<T, wp_op_min<T>>("min", in);
    check<T, wp_op_max<T>>("max", in);
    if constexpr (raw<T>::id <= WP_U64) {
        check<T, wp_op_and<T>>("and", in);
        check<T, wp_op_or<T>>("or", in);
        check<T, wp_op_xor<T>>("xor", in);
    }
#define X(i, text, mask) check_if<T, mask, c##i::wp_op_expr>(text, in);
    WP_GPU_CASES(X)
#undef X
    printf("%-5s %zu input pairs: done\n", wp_type_name(t), in.a.size());
    cudaFree(in.da), cudaFree(in.db), cudaFree(in.dout);
}

// ---- conversions: every input ----
__global__ void f32_to_16(unsigned base, unsigned short *h, unsigned short *bh, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float f = __uint_as_float(base + i);
    h[i] = __half_as_ushort(wp_from_calc<__half>(f));
    bh[i] = __bfloat16_as_ushort(wp_from_calc<__nv_bfloat16>(f));
}
__global__ void from_16(unsigned *h, unsigned *bh) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0xffff) return;
    h[i] = __float_as_uint(wp_to_calc(__ushort_as_half((unsigned short)i)));
    bh[i] = __float_as_uint(wp_to_calc(__ushort_as_bfloat16((unsigned short)i)));
}

static void check_conversions() {
    const unsigned chunk = 1u << 28;
    unsigned short *dh, *dbh;
    CUDA_OK(cudaMalloc(&dh, chunk * 2ull));
    CUDA_OK(cudaMalloc(&dbh, chunk * 2ull));
    std::vector<unsigned short> h(chunk), bh(chunk);
    long long bad_h = 0, bad_bh = 0;
    for (uint64_t base = 0; base < (1ull << 32); base += chunk) {
        f32_to_16<<<chunk / 256, 256>>>((unsigned)base, dh, dbh, chunk);
        CUDA_OK(cudaMemcpy(h.data(), dh, chunk * 2ull, cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(bh.data(), dbh, chunk * 2ull, cudaMemcpyDeviceToHost));
#pragma omp parallel for reduction(+ : bad_h, bad_bh)
        for (long long i = 0; i < (long long)chunk; i++) {
            float f = wp_bits_f32(base + (uint64_t)i);
            if (wp_f32_to_f16(f) != h[i]) bad_h++;
            if (wp_f32_to_bf16(f) != bh[i]) bad_bh++;
        }
    }
    printf("f32 -> f16: %lld of 2^32 differ; f32 -> bf16: %lld differ\n", bad_h, bad_bh);
    (bad_h || bad_bh) ? g_fail++ : g_pass++;
    unsigned *d32h, *d32bh;
    CUDA_OK(cudaMalloc(&d32h, 65536 * 4));
    CUDA_OK(cudaMalloc(&d32bh, 65536 * 4));
    from_16<<<256, 256>>>(d32h, d32bh);
    std::vector<unsigned> g32h(65536), g32bh(65536);
    CUDA_OK(cudaMemcpy(g32h.data(), d32h, 65536 * 4, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(g32bh.data(), d32bh, 65536 * 4, cudaMemcpyDeviceToHost));
    int bad16 = 0;
    for (unsigned i = 0; i <= 0xffff; i++) {
        if (wp_f32_bits(wp_f16_to_f32((uint16_t)i)) != g32h[i]) bad16++;
        if (wp_f32_bits(wp_bf16_to_f32((uint16_t)i)) != g32bh[i]) bad16++;
    }
    printf("f16/bf16 -> f32: %d of 2*65536 differ\n", bad16);
    bad16 ? g_fail++ : g_pass++;
    cudaFree(dh), cudaFree(dbh), cudaFree(d32h), cudaFree(d32bh);
}

int main() {
    run_type<int>();
    run_type<unsigned>();
    run_type<long long>();
    run_type<unsigned long long>();
    run_type<float>();
    run_type<double>();
    run_type<__half>();
    run_type<__nv_bfloat16>();
    check_conversions();
    printf("ops_gpu_check: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
