/* shfl.cu — the shuffle kernels: wp_shfl (idx), wp_shfl_up, wp_shfl_down, wp_shfl_xor, and wp_swap
 * (partner exchange of two array elements). Thin wrappers over wp_warp.cuh; every element of a
 * lane's array is shuffled with the same argument, and src[t] gets the lane the value came from
 * (the lane id shuffled alongside) or -1 when the source was out of range (docs/semantics.md). */
#include "wp_resident.cuh"
#include "wp_warp.cuh"

/* One shuffle kind: how it moves a value and when its source lies in the caller's segment. */
struct wp_shfl_idx_kind {
    template <typename T, int WIDTH, unsigned MASK> static __device__ __forceinline__ T move(T v, int b) {
        return wp_warp_shfl<T, WIDTH, MASK>(v, b);
    }
    template <int WIDTH> static __device__ __forceinline__ bool in_range(int lane, int b) {
        return wp_shfl_in_range<WIDTH>(lane, b);
    }
};
struct wp_shfl_up_kind {
    template <typename T, int WIDTH, unsigned MASK> static __device__ __forceinline__ T move(T v, int b) {
        return wp_warp_shfl_up<T, WIDTH, MASK>(v, b);
    }
    template <int WIDTH> static __device__ __forceinline__ bool in_range(int lane, int b) {
        return wp_shfl_up_in_range<WIDTH>(lane, b);
    }
};
struct wp_shfl_down_kind {
    template <typename T, int WIDTH, unsigned MASK> static __device__ __forceinline__ T move(T v, int b) {
        return wp_warp_shfl_down<T, WIDTH, MASK>(v, b);
    }
    template <int WIDTH> static __device__ __forceinline__ bool in_range(int lane, int b) {
        return wp_shfl_down_in_range<WIDTH>(lane, b);
    }
};
struct wp_shfl_xor_kind {
    template <typename T, int WIDTH, unsigned MASK> static __device__ __forceinline__ T move(T v, int b) {
        return wp_warp_shfl_xor<T, WIDTH, MASK>(v, b);
    }
    template <int WIDTH> static __device__ __forceinline__ bool in_range(int lane, int b) {
        return wp_shfl_xor_in_range<WIDTH>(lane, b);
    }
};

/* The body every shuffle kernel shares. */
template <class Kind, typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ void wp_shfl_run(const wp_warp_params &p) {
    const int t = wp_thread(), lane = wp_lane();
    if (!wp_thread_runs(p, t)) return;     /* past n or inactive: exits */
    if (!wp_in_mask(MASK, lane)) return;   /* active non-member: does not call */
    const int b = wp_arg_load(p, t);
    const int row = t * p.elems;
    for (int e = 0; e < p.elems; e++)
        wp_slot_store<T>(p.out, row + e, Kind::template move<T, WIDTH, MASK>(wp_slot_load<T>(p.in, row + e), b));
    const int from = Kind::template move<int, WIDTH, MASK>(lane, b);
    wp_src_store(p, t, Kind::template in_range<WIDTH>(lane, b) ? from : -1);
}

template <typename T, int WIDTH, unsigned MASK> __global__ void __launch_bounds__(WP_MAX_LANES) wp_shfl(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_shfl_run<wp_shfl_idx_kind, T, WIDTH, MASK>);
}
template <typename T, int WIDTH, unsigned MASK> __global__ void __launch_bounds__(WP_MAX_LANES) wp_shfl_up(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_shfl_run<wp_shfl_up_kind, T, WIDTH, MASK>);
}
template <typename T, int WIDTH, unsigned MASK> __global__ void __launch_bounds__(WP_MAX_LANES) wp_shfl_down(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_shfl_run<wp_shfl_down_kind, T, WIDTH, MASK>);
}
template <typename T, int WIDTH, unsigned MASK> __global__ void __launch_bounds__(WP_MAX_LANES) wp_shfl_xor(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_shfl_run<wp_shfl_xor_kind, T, WIDTH, MASK>);
}

/* Lane l and partner l ^ lane_mask exchange element `first` of one with element `second` of the
 * other: out[first] = partner.in[second], out[second] = partner.in[first]; the rest is copied.
 * Out of range, the xor shuffle returns the lane's own operand, so the lane swaps locally. */
template <typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ void wp_swap_run(const wp_warp_params &p) {
    const int t = wp_thread(), lane = wp_lane();
    if (!wp_thread_runs(p, t)) return;
    if (!wp_in_mask(MASK, lane)) return;
    if (p.first < 0 || p.first >= p.elems || p.second < 0 || p.second >= p.elems) return; /* host validates; never write out of bounds */
    const int lane_mask = wp_arg_load(p, t);
    const int row = t * p.elems;
    const T to_first = wp_warp_shfl_xor<T, WIDTH, MASK>(wp_slot_load<T>(p.in, row + p.second), lane_mask);
    const T to_second = wp_warp_shfl_xor<T, WIDTH, MASK>(wp_slot_load<T>(p.in, row + p.first), lane_mask);
    for (int e = 0; e < p.elems; e++)
        if (e != p.first && e != p.second) wp_slot_store<T>(p.out, row + e, wp_slot_load<T>(p.in, row + e));
    wp_slot_store<T>(p.out, row + p.second, to_second);
    wp_slot_store<T>(p.out, row + p.first, to_first);
    const int from = wp_warp_shfl_xor<int, WIDTH, MASK>(lane, lane_mask);
    wp_src_store(p, t, wp_shfl_xor_in_range<WIDTH>(lane, lane_mask) ? from : -1);
}
template <typename T, int WIDTH, unsigned MASK> __global__ void __launch_bounds__(WP_MAX_LANES) wp_swap(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_swap_run<T, WIDTH, MASK>);
}
