/* allreduce.cu — wp_warp_allreduce: the butterfly reduction of wp_warp_allreduce_value (wp_warp.cuh)
 * over each width-W segment, every element of a lane's array reduced on its own. Op is a functor:
 * wp_op_sum<T>.. (wp_ops.cuh) or the daemon's generated expression functor. */
#include "wp_resident.cuh"
#include "wp_warp.cuh"

template <typename T, int WIDTH, unsigned MASK, class Op>
__device__ __forceinline__ void wp_warp_allreduce_run(const wp_warp_params &p) {
    const int t = wp_thread();
    if (!wp_thread_runs(p, t) || !wp_in_mask(MASK, wp_lane())) return;
    Op op = Op();
    const int row = t * p.elems;
    for (int e = 0; e < p.elems; e++)
        wp_slot_store<T>(p.out, row + e, wp_warp_allreduce_value<T, WIDTH, MASK, Op>(wp_slot_load<T>(p.in, row + e), op));
}
template <typename T, int WIDTH, unsigned MASK, class Op>
__global__ void __launch_bounds__(WP_MAX_LANES) wp_warp_allreduce(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_warp_allreduce_run<T, WIDTH, MASK, Op>);
}
