/* redux.cu — wp_redux: the sm_80+ hardware warp reduction (__reduce_*_sync) for int and unsigned with
 * Op = wp_op_sum/min/max/and/or/xor<T>. TILED: MASK & tile. Every participant gets the result. */
#include "wp_resident.cuh"
#include "wp_warp.cuh"

template <typename T, int WIDTH, unsigned MASK, class Op>
__device__ __forceinline__ void wp_redux_run(const wp_warp_params &p) {
    const int t = wp_thread();
    if (!wp_thread_runs(p, t) || !wp_in_mask(MASK, wp_lane())) return;
    const T v = wp_slot_load<T>(p.in, t * p.elems);
    wp_slot_store<T>(p.out, t * p.elems, wp_warp_redux<T, WIDTH, MASK, Op>(v));
}
template <typename T, int WIDTH, unsigned MASK, class Op>
__global__ void __launch_bounds__(WP_MAX_LANES) wp_redux(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_redux_run<T, WIDTH, MASK, Op>);
}
