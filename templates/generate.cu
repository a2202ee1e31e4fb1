/* generate.cu — wp_generate: fills n packed elements on the device (benchmarks, tests), the same
 * values kernels/stencil.c makes on the host. Element i of the output is element p.aux + i of the
 * sequence (p.aux: 0, or where a shard of a longer sequence starts). p.kind: WP_GEN_IOTA (element j
 * is j converted to T, through f32 for f16/bf16), WP_GEN_RANDOM (splitmix64 of seed and j: integers
 * 0..999, floats uniform in [0, 1) with 24 bits, 53 for f64), WP_GEN_CONSTANT (the raw bits in p.init). */
#include "wp_block.cuh"

WP_DEV unsigned long long wp_splitmix(unsigned long long seed, unsigned long long i) {
    unsigned long long z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

template <typename T> struct wp_gen { /* integers */
    static WP_DEV T iota(unsigned long long i) { return (T)i; }
    static WP_DEV T random(unsigned long long h) { return (T)(h % 1000); }
};
template <> struct wp_gen<float> {
    static WP_DEV float iota(unsigned long long i) { return __ull2float_rn(i); }
    static WP_DEV float random(unsigned long long h) { return (float)(h >> 40) * 0x1p-24f; }
};
template <> struct wp_gen<double> {
    static WP_DEV double iota(unsigned long long i) { return __ull2double_rn(i); }
    static WP_DEV double random(unsigned long long h) { return (double)(h >> 11) * 0x1p-53; }
};
#ifdef WP_NEED_FP16
template <> struct wp_gen<__half> {
    static WP_DEV __half iota(unsigned long long i) { return __float2half_rn(__ull2float_rn(i)); }
    static WP_DEV __half random(unsigned long long h) { return __float2half_rn((float)(h >> 40) * 0x1p-24f); }
};
template <> struct wp_gen<__nv_bfloat16> {
    static WP_DEV __nv_bfloat16 iota(unsigned long long i) { return __float2bfloat16_rn(__ull2float_rn(i)); }
    static WP_DEV __nv_bfloat16 random(unsigned long long h) { return __float2bfloat16_rn((float)(h >> 40) * 0x1p-24f); }
};
#endif

template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int VARIANT, class Op>
__global__ void __launch_bounds__(BLOCK) wp_generate(wp_data_params p) {
    wp_grid_entry();
    T *out = (T *)p.out;
    const unsigned long long stride = (unsigned long long)gridDim.x * BLOCK;
    const T constant = wp_raw<T>::value((typename wp_raw<T>::word)p.init);
    for (unsigned long long i = (unsigned long long)blockIdx.x * BLOCK + threadIdx.x; i < p.n; i += stride)
        out[i] = p.kind == WP_GEN_IOTA     ? wp_gen<T>::iota(p.aux + i)
                 : p.kind == WP_GEN_RANDOM ? wp_gen<T>::random(wp_splitmix(p.seed, p.aux + i))
                                           : constant;
}
