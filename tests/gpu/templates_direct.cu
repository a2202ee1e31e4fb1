/* templates_direct.cu — launches a few template kernels straight from nvcc (no daemon, no NVRTC) and
 * checks them against expected values written here, so a template bug shows without the rest of
 * warpd. Run on the GPU machine:
 *   nvcc -std=c++17 -arch=sm_90 -I kernels -I templates -DWP_NEED_FP16 tests/gpu/templates_direct.cu \
 *        -o build/tests/gpu/templates_direct && build/tests/gpu/templates_direct
 * Prints PASS/FAIL per case and ends with "templates_direct: N passed, N failed". */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "allreduce.cu"
#include "match.cu"
#include "redux.cu"
#include "shfl.cu"
#include "vote.cu"

#define UNWRITTEN 0xdeadbeefdeadbeefull /* out slots a kernel must not touch keep this */

static int passed, failed;

typedef void (*kernel_fn)(wp_warp_params);

/* One launch in the daemon's geometry: one block of ceil(n/32)*32 threads. */
struct launch {
    int n = 32, elems = 1;
    unsigned long long in[WP_MAX_LANES * WP_MAX_ELEMS] = {};
    int arg[WP_MAX_LANES] = {};
    unsigned char active[WP_MAX_LANES];
    int pred_kind = WP_PRED_NONZERO, first = 0, second = 0;
    unsigned long long pred_a = 0, pred_b = 0;
    unsigned long long out[WP_MAX_LANES * WP_MAX_ELEMS];
    int src[WP_MAX_LANES];
    launch() { memset(active, 1, sizeof active); }
};

static bool run(kernel_fn k, launch &L) {
    size_t slots = (size_t)L.n * L.elems * sizeof(unsigned long long);
    for (int i = 0; i < L.n * L.elems; i++) L.out[i] = UNWRITTEN;
    for (int i = 0; i < L.n; i++) L.src[i] = -1; /* the host pre-fills -1 */
    void *d_in, *d_out, *d_src, *d_arg, *d_active;
    cudaMalloc(&d_in, slots);
    cudaMalloc(&d_out, slots);
    cudaMalloc(&d_src, L.n * sizeof(int));
    cudaMalloc(&d_arg, L.n * sizeof(int));
    cudaMalloc(&d_active, L.n);
    cudaMemcpy(d_in, L.in, slots, cudaMemcpyHostToDevice);
    cudaMemcpy(d_out, L.out, slots, cudaMemcpyHostToDevice);
    cudaMemcpy(d_src, L.src, L.n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemcpy(d_arg, L.arg, L.n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemcpy(d_active, L.active, L.n, cudaMemcpyHostToDevice);
    wp_warp_params p;
    memset(&p, 0, sizeof p);
    p.in = (unsigned long long)d_in;
    p.out = (unsigned long long)d_out;
    p.src = (unsigned long long)d_src;
    p.arg = (unsigned long long)d_arg;
    p.active = (unsigned long long)d_active;
    p.pred_a = L.pred_a;
    p.pred_b = L.pred_b;
    p.n = L.n;
    p.elems = L.elems;
    p.pred_kind = L.pred_kind;
    p.first = L.first;
    p.second = L.second;
    k<<<1, (L.n + 31) / 32 * 32>>>(p);
    cudaError_t e = cudaDeviceSynchronize();
    cudaMemcpy(L.out, d_out, slots, cudaMemcpyDeviceToHost);
    cudaMemcpy(L.src, d_src, L.n * sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(d_in), cudaFree(d_out), cudaFree(d_src), cudaFree(d_arg), cudaFree(d_active);
    if (e != cudaSuccess) printf("  launch failed: %s\n", cudaGetErrorString(e));
    return e == cudaSuccess;
}

/* Compares every out slot (and src when given) with the expected values; reports the first miss. */
static void check(const char *name, const launch &L, const unsigned long long *want_out, const int *want_src) {
    int bad = -1;
    for (int i = 0; i < L.n * L.elems && bad < 0; i++)
        if (L.out[i] != want_out[i] || (want_src && L.src[i / L.elems] != want_src[i / L.elems])) bad = i;
    if (bad < 0) {
        printf("PASS %s\n", name);
        passed++;
    } else {
        int t = bad / L.elems;
        printf("FAIL %s: lane %d slot %d out 0x%llx (want 0x%llx) src %d (want %d)\n", name, t, bad, L.out[bad],
               want_out[bad], L.src[t], want_src ? want_src[t] : L.src[t]);
        failed++;
    }
}

static unsigned long long f32_bits(float f) {
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}

static launch L; /* big: keep it off the stack */
static unsigned long long want[WP_MAX_LANES * WP_MAX_ELEMS];
static int want_src[WP_MAX_LANES];

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("SKIPPED: no CUDA device\ntemplates_direct: 0 passed, 0 failed\n");
        return 0;
    }

    /* shfl_xor, width 16, lane_mask 1, i32 iota: every lane reads its neighbour lane ^ 1. */
    L = launch();
    for (int t = 0; t < 32; t++) L.in[t] = t, L.arg[t] = 1, want[t] = t ^ 1, want_src[t] = t ^ 1;
    if (run(wp_shfl_xor<int, 16, 0xffffffffu>, L)) check("shfl_xor i32 w16 lane_mask 1", L, want, want_src);
    else failed++;

    /* shfl_xor, width 16, lane_mask 16: the first segment's partners lie in a later segment (out of
     * range: own value, src -1); the second segment's lie in an earlier one and are read. */
    L = launch();
    for (int t = 0; t < 32; t++) {
        L.in[t] = 100 + t, L.arg[t] = 16;
        want[t] = t < 16 ? 100 + t : 100 + (t - 16);
        want_src[t] = t < 16 ? -1 : t - 16;
    }
    if (run(wp_shfl_xor<int, 16, 0xffffffffu>, L)) check("shfl_xor i32 w16 lane_mask 16 (segment edge)", L, want, want_src);
    else failed++;

    /* ballot of 42 < x < 53 over 128 threads of i32 iota: x = 43..52 are lanes 11..20 of warp 1. */
    L = launch();
    L.n = 128;
    L.pred_kind = WP_PRED_BETWEEN, L.pred_a = 42, L.pred_b = 53;
    for (int t = 0; t < 128; t++) L.in[t] = t, want[t] = t / 32 == 1 ? 0x001ff800ull : 0;
    if (run(wp_ballot<int, 32, 0xffffffffu>, L)) check("ballot 42<x<53, 128 lanes", L, want, NULL);
    else failed++;

    /* activemask with the odd lanes returned: the even lanes see 0x55555555; odd slots stay unwritten. */
    L = launch();
    for (int t = 0; t < 32; t++) L.active[t] = !(t & 1), want[t] = (t & 1) ? UNWRITTEN : 0x55555555ull;
    if (run(wp_activemask<unsigned, 32, 0xffffffffu>, L)) check("activemask odd lanes returned", L, want, NULL);
    else failed++;

    /* The same with width 8 tiles: each tile's answer is tile-relative. */
    L = launch();
    for (int t = 0; t < 32; t++) L.active[t] = !(t & 1), want[t] = (t & 1) ? UNWRITTEN : 0x55ull;
    if (run(wp_activemask<unsigned, 8, 0xffffffffu>, L)) check("activemask odd lanes returned, w8", L, want, NULL);
    else failed++;

    /* match_any on f32 bits: lanes 0..15 alternate +0 / -0 (different bits), lanes 16..31 hold 1.0. */
    L = launch();
    for (int t = 0; t < 32; t++) {
        L.in[t] = t >= 16 ? f32_bits(1.0f) : (t & 1) ? f32_bits(-0.0f) : f32_bits(0.0f);
        want[t] = t >= 16 ? 0xffff0000ull : (t & 1) ? 0x0000aaaaull : 0x00005555ull;
    }
    if (run(wp_match_any<float, 32, 0xffffffffu>, L)) check("match_any f32 +0/-0", L, want, NULL);
    else failed++;

    /* shfl_up, i64, width 8, delta 3: the high 32 bits travel too; lanes 0..2 of a segment keep their own. */
    L = launch();
    for (int t = 0; t < 32; t++) {
        L.in[t] = 0x100000000ull * (t + 1) + t, L.arg[t] = 3;
        bool in_range = t % 8 >= 3;
        want[t] = in_range ? L.in[t - 3] : L.in[t], want_src[t] = in_range ? t - 3 : -1;
    }
    if (run(wp_shfl_up<long long, 8, 0xffffffffu>, L)) check("shfl_up i64 w8 delta 3", L, want, want_src);
    else failed++;

    /* shfl_down, f64 arrays of 2, delta 5: NaN payloads arrive bit for bit. */
    L = launch();
    L.elems = 2;
    for (int t = 0; t < 32; t++) {
        for (int e = 0; e < 2; e++) L.in[t * 2 + e] = 0xfff8000000000000ull | (unsigned long long)(t << 4 | e);
        L.arg[t] = 5;
    }
    for (int t = 0; t < 32; t++) {
        bool in_range = t + 5 <= 31;
        for (int e = 0; e < 2; e++) want[t * 2 + e] = L.in[(in_range ? t + 5 : t) * 2 + e];
        want_src[t] = in_range ? t + 5 : -1;
    }
    if (run(wp_shfl_down<double, 32, 0xffffffffu>, L)) check("shfl_down f64[2] delta 5 (NaN payloads)", L, want, want_src);
    else failed++;

    /* shfl idx, f16 signalling NaNs, src_lane 31 - lane: 16-bit payloads arrive untouched. */
    L = launch();
    for (int t = 0; t < 32; t++) L.in[t] = 0x7c01 + t, L.arg[t] = 31 - t;
    if (run(wp_shfl<__half, 32, 0xffffffffu>, L)) {
        for (int t = 0; t < 32; t++) want[t] = 0x7c01 + (31 - t), want_src[t] = 31 - t;
        check("shfl f16 src_lane 31-lane (sNaN bits kept)", L, want, want_src);
    } else failed++;

    /* swap, u32 arrays of 3, lane_mask 1, first 0, second 2. */
    L = launch();
    L.elems = 3, L.first = 0, L.second = 2;
    for (int t = 0; t < 32; t++) {
        for (int e = 0; e < 3; e++) L.in[t * 3 + e] = 10 * t + e;
        L.arg[t] = 1;
    }
    for (int t = 0; t < 32; t++) {
        int partner = t ^ 1;
        want[t * 3 + 0] = L.in[partner * 3 + 2], want[t * 3 + 1] = L.in[t * 3 + 1], want[t * 3 + 2] = L.in[partner * 3 + 0];
        want_src[t] = partner;
    }
    if (run(wp_swap<unsigned, 32, 0xffffffffu>, L)) check("swap u32[3] lane_mask 1 first 0 second 2", L, want, want_src);
    else failed++;

    /* redux sum, i32, width 16 over t - 10: -40 (as zero-extended bits) and 216. */
    L = launch();
    for (int t = 0; t < 32; t++) L.in[t] = (unsigned)(t - 10), want[t] = t < 16 ? (unsigned)-40 : 216u;
    if (run(wp_redux<int, 16, 0xffffffffu, wp_op_sum<int> >, L)) check("redux sum i32 w16", L, want, NULL);
    else failed++;

    /* redux min, u32, mask 0x0000ffff: min over lanes 0..15 of 1000 - t; lanes 16..31 unwritten. */
    L = launch();
    for (int t = 0; t < 32; t++) L.in[t] = 1000 - t, want[t] = t < 16 ? 985u : UNWRITTEN;
    if (run(wp_redux<unsigned, 32, 0x0000ffffu, wp_op_min<unsigned> >, L)) check("redux min u32 mask 0xffff", L, want, NULL);
    else failed++;

    /* match_all, i32, width 8: tile 1 holds one different value (mask 0, pred 0), the others agree. */
    L = launch();
    for (int t = 0; t < 32; t++) {
        L.in[t] = t == 12 ? 8 : 7;
        bool same = t / 8 != 1;
        want[t] = same ? 0xffu : 0u, want_src[t] = same ? 1 : 0;
    }
    if (run(wp_match_all<int, 8, 0xffffffffu>, L)) check("match_all i32 w8", L, want, want_src);
    else failed++;

    /* warp_allreduce sum, i32, width 8, iota: tile k gets 64k + 28. */
    L = launch();
    for (int t = 0; t < 32; t++) L.in[t] = t, want[t] = 64 * (t / 8) + 28;
    if (run(wp_warp_allreduce<int, 8, 0xffffffffu, wp_op_sum<int> >, L)) check("warp_allreduce sum i32 w8", L, want, NULL);
    else failed++;

    printf("templates_direct: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
