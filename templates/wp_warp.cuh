/* wp_warp.cuh — the warp layer (CUB's WarpXxx): device functions over one warp's lanes that the
 * warp-primitive kernels wrap and that warp_reduce, block_reduce and device_reduce build on.
 * A header, not a .cu, because NVRTC is given only the *.cuh files as includable headers.
 * Shuffles, votes, ballot, activemask, match, redux and the butterfly allreduce, each following
 * docs/semantics.md: shuffles move raw bits; TILED primitives use MASK & tile and answer tile-relative. */
#ifndef WP_WARP_CUH
#define WP_WARP_CUH

#include "wp_common.cuh"
#include "wp_ops.cuh"

/* ---- shuffles: move the raw word, so no type is ever converted ------------------------------- */

template <typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ T wp_warp_shfl(T v, int src_lane) {
    WP_CHECK_WIDTH(WIDTH);
    return wp_raw<T>::value(__shfl_sync(MASK, wp_raw<T>::bits(v), src_lane, WIDTH));
}
template <typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ T wp_warp_shfl_up(T v, int delta) {
    WP_CHECK_WIDTH(WIDTH);
    return wp_raw<T>::value(__shfl_up_sync(MASK, wp_raw<T>::bits(v), (unsigned)delta, WIDTH));
}
template <typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ T wp_warp_shfl_down(T v, int delta) {
    WP_CHECK_WIDTH(WIDTH);
    return wp_raw<T>::value(__shfl_down_sync(MASK, wp_raw<T>::bits(v), (unsigned)delta, WIDTH));
}
template <typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ T wp_warp_shfl_xor(T v, int lane_mask) {
    WP_CHECK_WIDTH(WIDTH);
    return wp_raw<T>::value(__shfl_xor_sync(MASK, wp_raw<T>::bits(v), lane_mask, WIDTH));
}

/* PTX `pval`: whether the source lane is inside the caller's segment. When false the hardware hands
 * the caller its own value back (src = -1 in the contract). idx always wraps into the segment. */
template <int WIDTH> __device__ __forceinline__ bool wp_shfl_in_range(int lane, int src_lane) {
    (void)lane, (void)src_lane;
    return true;
}
template <int WIDTH> __device__ __forceinline__ bool wp_shfl_up_in_range(int lane, int delta) {
    return lane - delta >= wp_segment_base<WIDTH>(lane);
}
template <int WIDTH> __device__ __forceinline__ bool wp_shfl_down_in_range(int lane, int delta) {
    return lane + delta <= wp_segment_base<WIDTH>(lane) + WIDTH - 1;
}
template <int WIDTH> __device__ __forceinline__ bool wp_shfl_xor_in_range(int lane, int lane_mask) {
    return (lane ^ lane_mask) <= wp_segment_base<WIDTH>(lane) + WIDTH - 1;
}

/* ---- votes, ballot, activemask (tiles when WIDTH < 32) ---------------------------------------- */

template <int WIDTH, unsigned MASK> __device__ __forceinline__ bool wp_warp_vote_all(bool pred) {
    return __all_sync(wp_tile_mask<WIDTH, MASK>(wp_lane()), pred) != 0;
}
template <int WIDTH, unsigned MASK> __device__ __forceinline__ bool wp_warp_vote_any(bool pred) {
    return __any_sync(wp_tile_mask<WIDTH, MASK>(wp_lane()), pred) != 0;
}
template <int WIDTH, unsigned MASK> __device__ __forceinline__ bool wp_warp_vote_uni(bool pred) {
    return __uni_sync(wp_tile_mask<WIDTH, MASK>(wp_lane()), pred) != 0;
}
template <int WIDTH, unsigned MASK> __device__ __forceinline__ unsigned wp_warp_ballot(bool pred) {
    const int lane = wp_lane();
    return wp_tile_relative<WIDTH>(__ballot_sync(wp_tile_mask<WIDTH, MASK>(lane), pred), lane);
}
/* No member mask: the lanes executing together right now, tile-relative. */
template <int WIDTH> __device__ __forceinline__ unsigned wp_warp_activemask() {
    return wp_tile_relative<WIDTH>(__activemask(), wp_lane());
}

/* ---- match: bit patterns, so +0 != -0 and NaNs match by payload ------------------------------- */

template <typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ unsigned wp_warp_match_any(T v) {
    const int lane = wp_lane();
    return wp_tile_relative<WIDTH>(__match_any_sync(wp_tile_mask<WIDTH, MASK>(lane), wp_raw<T>::bits(v)), lane);
}
/* Returns the participants' mask when all hold the same bits (pred = true), else 0 (pred = false). */
template <typename T, int WIDTH, unsigned MASK>
__device__ __forceinline__ unsigned wp_warp_match_all(T v, bool *all_same) {
    const int lane = wp_lane();
    int pred = 0;
    const unsigned m = __match_all_sync(wp_tile_mask<WIDTH, MASK>(lane), wp_raw<T>::bits(v), &pred);
    *all_same = pred != 0;
    return wp_tile_relative<WIDTH>(m, lane);
}

/* ---- redux (sm_80+): the hardware reduction for int/unsigned and the builtin operators -------- */

template <typename T> struct wp_redux_type { static const bool ok = false; };
template <> struct wp_redux_type<int> { static const bool ok = true; };
template <> struct wp_redux_type<unsigned> { static const bool ok = true; };

/* Op -> __reduce_*_sync. and/or/xor exist only for unsigned, so int goes through its bits. */
template <class Op> struct wp_redux_sync; /* no other operator has a hardware reduction */
template <typename T> struct wp_redux_sync<wp_op_sum<T> > {
    static __device__ __forceinline__ T run(unsigned m, T v) { return __reduce_add_sync(m, v); }
};
template <typename T> struct wp_redux_sync<wp_op_min<T> > {
    static __device__ __forceinline__ T run(unsigned m, T v) { return __reduce_min_sync(m, v); }
};
template <typename T> struct wp_redux_sync<wp_op_max<T> > {
    static __device__ __forceinline__ T run(unsigned m, T v) { return __reduce_max_sync(m, v); }
};
template <typename T> struct wp_redux_sync<wp_op_and<T> > {
    static __device__ __forceinline__ T run(unsigned m, T v) { return (T)__reduce_and_sync(m, (unsigned)v); }
};
template <typename T> struct wp_redux_sync<wp_op_or<T> > {
    static __device__ __forceinline__ T run(unsigned m, T v) { return (T)__reduce_or_sync(m, (unsigned)v); }
};
template <typename T> struct wp_redux_sync<wp_op_xor<T> > {
    static __device__ __forceinline__ T run(unsigned m, T v) { return (T)__reduce_xor_sync(m, (unsigned)v); }
};

template <typename T, int WIDTH, unsigned MASK, class Op> __device__ __forceinline__ T wp_warp_redux(T v) {
    static_assert(wp_redux_type<T>::ok, "redux: T must be int or unsigned");
    WP_CHECK_WIDTH(WIDTH);
    return wp_redux_sync<Op>::run(wp_tile_mask<WIDTH, MASK>(wp_lane()), v);
}

/* ---- allreduce: butterfly over xor shuffles; every lane of a segment ends with the result -----
 * Operand order is fixed (a = own value, b = partner's), so expressions and floats give the
 * emulator's bits exactly. */

template <typename T, int WIDTH, unsigned MASK, class Op>
__device__ __forceinline__ T wp_warp_allreduce_value(T v, Op op) {
    WP_CHECK_WIDTH(WIDTH);
#pragma unroll
    for (int offset = WIDTH / 2; offset > 0; offset >>= 1) v = op(v, wp_warp_shfl_xor<T, WIDTH, MASK>(v, offset));
    return v;
}

#endif
