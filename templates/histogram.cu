/* histogram.cu — wp_histogram: numpy's np.histogram(x, bins, range) over packed data (kernels/hist.h
 * says the binning, wp_abi.h the parameters; kernels/hist.c is the same steps on the CPU).
 * kernel<T, A, WIDTH, BLOCK, STRAT, VARIANT, Op> like every data kernel; only T and STRAT matter:
 *   smem:   each block counts into bins u32 counters in shared memory (p.groups <= WP_HIST_SMEM_BINS),
 *           then adds its non-zero counts to out[] with one 64-bit global atomic each;
 *   atomic: each value adds 1 to out[bin] with a 64-bit global atomic (any number of bins).
 * A value is compared in E (f32 for f32/f16/bf16, f64 for f64 and the integers); it counts when
 * first <= v <= last (NaN never). Its bin: WP_HIST_FAST, x = (v - first) * scale rounded in E at each
 * step (never an FMA), floor(x) clamped to bins - 1, checked against the edges at p.aux only when x is
 * within the slack of an integer; WP_HIST_SEARCH, a binary search of the edges (wp_abi.h). Blocks
 * read tiles of 4 * BLOCK 16-byte vectors (block b tiles b, b + G, ..: contiguous 32 KiB at a time
 * at BLOCK 512, four vectors in flight per thread: 2 % faster than a grid-stride on H100); counts are
 * integers, so the result is the same whatever order the atomics land in, and on cuda the grid may be
 * cut to the blocks the device holds at once (wp_plan_fit_device, kernels/data.c). out[] is zeroed by the engine
 * before the launch. */
#include "wp_block.cuh"

/* The compare type E of an element type, and the element as a value of E (numpy's astype). */
template <typename T> struct wp_hist_cmp {
    typedef double E; /* the integers: to float64, rounded to nearest */
    static WP_DEV double of(T v) { return (double)v; }
};
template <> struct wp_hist_cmp<float> {
    typedef float E;
    static WP_DEV float of(float v) { return v; }
};
#ifdef WP_NEED_FP16
template <> struct wp_hist_cmp<__half> {
    typedef float E;
    static WP_DEV float of(__half v) { return __half2float(v); }
};
template <> struct wp_hist_cmp<__nv_bfloat16> {
    typedef float E;
    static WP_DEV float of(__nv_bfloat16 v) { return __bfloat162float(v); }
};
#endif

WP_DEV float wp_hist_g(float v, float first, float scale) { return __fmul_rn(__fsub_rn(v, first), scale); }
WP_DEV double wp_hist_g(double v, double first, double scale) { return __dmul_rn(__dsub_rn(v, first), scale); }

/* The bin of v, first <= v <= last (kernels/hist.c's emu_bin, step for step). */
template <typename E>
WP_DEV unsigned wp_hist_bin(E v, E first, E scale, E slack, unsigned bins, bool fast, const double *edges) {
    if (fast) {
        const E x = wp_hist_g(v, first, scale);
        unsigned i = x < (E)(bins - 1) ? (unsigned)x : bins - 1;
        if (x - (E)i > slack && (E)(i + 1) - x > slack) return i;
        const double dv = (double)v; /* near an edge: settle it against the edges, one step at most */
        while (i > 0 && dv < __ldg(edges + i)) i--;
        while (i + 1 < bins && dv >= __ldg(edges + i + 1)) i++;
        return i;
    }
    unsigned lo = 0, hi = bins - 1; /* the last of edge[0 .. bins - 1] <= v */
    const double dv = (double)v;
    while (lo < hi) {
        const unsigned mid = lo + (hi - lo + 1) / 2;
        if (__ldg(edges + mid) <= dv)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

template <typename T, int STRAT> struct wp_hist_counter {
    typedef typename wp_hist_cmp<T>::E E;
    E first, last, scale, slack;
    unsigned bins;
    bool fast;
    const double *edges;
    unsigned *smem;
    unsigned long long *out;
    WP_DEV void add(T x) const {
        const E v = wp_hist_cmp<T>::of(x);
        if (!(v >= first && v <= last)) return;
        const unsigned b = wp_hist_bin<E>(v, first, scale, slack, bins, fast, edges);
        if (STRAT == WP_STRAT_SMEM)
            atomicAdd(smem + b, 1u);
        else
            atomicAdd(out + b, 1ull);
    }
    WP_DEV void add_vec(const uint4 &w) const {
        T x[16 / sizeof(T)];
        memcpy(x, &w, 16);
#pragma unroll
        for (int j = 0; j < (int)(16 / sizeof(T)); j++) add(x[j]);
    }
};

template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_histogram(wp_data_params p) {
    static_assert(STRAT == WP_STRAT_SMEM || STRAT == WP_STRAT_ATOMIC, "histogram: strategy smem or atomic");
    typedef typename wp_hist_cmp<T>::E E;
    extern __shared__ unsigned wp_hist_smem[];
    wp_hist_counter<T, STRAT> c;
    c.first = (E)p.weights[WP_HIST_W_FIRST];
    c.last = (E)p.weights[WP_HIST_W_LAST];
    c.scale = (E)p.weights[WP_HIST_W_SCALE];
    c.slack = (E)p.weights[WP_HIST_W_SLACK];
    c.fast = p.weights[WP_HIST_W_MODE] == WP_HIST_FAST;
    c.bins = (unsigned)p.groups;
    c.edges = (const double *)p.aux;
    c.smem = wp_hist_smem;
    c.out = (unsigned long long *)p.out;
    if (STRAT == WP_STRAT_SMEM) {
        for (unsigned b = threadIdx.x; b < c.bins; b += BLOCK) wp_hist_smem[b] = 0;
        __syncthreads();
    }
    wp_grid_wait();
    const T *in = (const T *)p.in;
    const unsigned long long n = p.n, V = 16 / sizeof(T);
    const unsigned long long nv = (p.in % 16 == 0) ? n / V : 0; /* an unaligned input: element by element */
    const unsigned long long stride = (unsigned long long)gridDim.x * BLOCK;
    const unsigned long long t0 = (unsigned long long)blockIdx.x * BLOCK + threadIdx.x;
    const uint4 *vec = (const uint4 *)in;
    /* tiles of 4 * BLOCK vectors: block b takes tiles b, b + G, ..; thread t its vectors t, t + BLOCK, .. */
    const unsigned long long TV = 4ull * BLOCK, step = (unsigned long long)gridDim.x * TV;
    unsigned long long i = (unsigned long long)blockIdx.x * TV + threadIdx.x;
    for (; i + 3 * BLOCK < nv; i += step) {
        uint4 w[4];
#pragma unroll
        for (int k = 0; k < 4; k++) w[k] = __ldg(vec + i + k * BLOCK);
#pragma unroll
        for (int k = 0; k < 4; k++) c.add_vec(w[k]);
    }
    for (int k = 0; k < 3 && i + k * BLOCK < nv; k++) c.add_vec(__ldg(vec + i + k * BLOCK)); /* the last tile */
    for (unsigned long long e = nv * V + t0; e < n; e += stride) c.add(in[e]);
    wp_grid_launch_next();
    if (STRAT == WP_STRAT_SMEM) {
        __syncthreads();
        for (unsigned b = threadIdx.x; b < c.bins; b += BLOCK) {
            const unsigned k = wp_hist_smem[b];
            if (k) atomicAdd(c.out + b, (unsigned long long)k);
        }
    }
}
