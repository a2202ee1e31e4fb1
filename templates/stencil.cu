/* stencil.cu — wp_stencil: a weighted moving average of radius R (VARIANT, 1..4) over packed data.
 * out[i] = sum_k weights[k] * in[i - R + k], k = 0..2R, folded left to right in the accumulator
 * type (each product and sum rounded, no FMA); 0 where the window leaves the array. Each warp takes
 * 32 consecutive elements; its edge lanes also load the R-element halos, and every lane gathers its
 * neighbours with shuffles (shfl_up/shfl_down inside the warp, shfl from the edge lanes' halos). */
#include "wp_block.cuh"

template <typename T, typename A, int BLOCK, int R> WP_DEV void wp_stencil_run(const wp_data_params &p, const unsigned bid) {
    static_assert(R >= 1 && R <= WP_STENCIL_MAX_RADIUS, "radius must be 1..WP_STENCIL_MAX_RADIUS");
    const T *in = (const T *)p.in;
    T *out = (T *)p.out;
    const long long n = (long long)p.n;
    const int lane = wp_lane();
    const long long i = (long long)bid * BLOCK + threadIdx.x, base = i - lane;
    const A x = i < n ? wp_convert<A>(in[i]) : wp_zero<A>();
    A left_halo = wp_zero<A>(), right_halo = wp_zero<A>();
    if (lane < R && base - R + lane >= 0 && base - R + lane < n) left_halo = wp_convert<A>(in[base - R + lane]);
    if (lane >= 32 - R && i + R < n) right_halo = wp_convert<A>(in[i + R]);
    wp_op_sum<A> add;
    wp_op_prod<A> mul;
    A acc = wp_zero<A>();
#pragma unroll
    for (int k = 0; k <= 2 * R; k++) {
        const int off = k - R;
        A v = x;
        if (off < 0) {
            const A up = wp_any_shfl_up<32>(x, -off);
            const A halo = wp_any_shfl<32>(left_halo, lane + off + R);
            v = lane + off >= 0 ? up : halo;
        } else if (off > 0) {
            const A down = wp_any_shfl_down<32>(x, off);
            const A halo = wp_any_shfl<32>(right_halo, lane + off - R);
            v = lane + off < 32 ? down : halo;
        }
        const A term = mul(wp_convert<A>(p.weights[k]), v);
        acc = k == 0 ? term : add(acc, term);
    }
    if (i < n) out[i] = (i >= R && i + R < n) ? wp_convert<T>(acc) : wp_raw<T>::value(0);
}

template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int R, class Op>
__global__ void __launch_bounds__(BLOCK) wp_stencil(wp_data_params p) {
    wp_grid_entry();
    wp_stencil_run<T, A, BLOCK, R>(p, blockIdx.x);
}
/* Batched (server/batch_reduce.c): block b runs its job (wp_batch_job) as alone. */
template <typename T, typename A, int WIDTH, int BLOCK, int STRAT, int R, class Op>
__global__ void __launch_bounds__(BLOCK) wp_stencil_batch(wp_data_params p) {
    wp_data_params q;
    unsigned G;
    const unsigned bid = wp_batch_job(p, q, G);
    wp_stencil_run<T, A, BLOCK, R>(q, bid);
}
