/* vote.cu — the vote kernels: wp_vote_all, wp_vote_any, wp_vote_uni (0/1 per lane), wp_ballot and
 * wp_activemask (a lane mask per lane). TILED: for WIDTH < 32 a lane votes with MASK & its tile and
 * mask results are tile-relative. The predicate compares element 0 with p.pred_a/pred_b. */
#include "wp_resident.cuh"
#include "wp_warp.cuh"

/* Prologue plus the lane's predicate; false when the lane must not call the primitive. */
template <typename T, unsigned MASK> __device__ __forceinline__ bool wp_vote_enter(const wp_warp_params &p, int t, bool *pred) {
    if (!wp_thread_runs(p, t) || !wp_in_mask(MASK, wp_lane())) return false;
    *pred = wp_pred_eval<T>(wp_slot_load<T>(p.in, t * p.elems), p);
    return true;
}

template <typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ void wp_vote_all_run(const wp_warp_params &p) {
    const int t = wp_thread();
    bool pred;
    if (!wp_vote_enter<T, MASK>(p, t, &pred)) return;
    wp_slot_store_word(p.out, t * p.elems, wp_warp_vote_all<WIDTH, MASK>(pred) ? 1u : 0u);
}
template <typename T, int WIDTH, unsigned MASK> __global__ void __launch_bounds__(WP_MAX_LANES) wp_vote_all(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_vote_all_run<T, WIDTH, MASK>);
}
template <typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ void wp_vote_any_run(const wp_warp_params &p) {
    const int t = wp_thread();
    bool pred;
    if (!wp_vote_enter<T, MASK>(p, t, &pred)) return;
    wp_slot_store_word(p.out, t * p.elems, wp_warp_vote_any<WIDTH, MASK>(pred) ? 1u : 0u);
}
template <typename T, int WIDTH, unsigned MASK> __global__ void __launch_bounds__(WP_MAX_LANES) wp_vote_any(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_vote_any_run<T, WIDTH, MASK>);
}
template <typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ void wp_vote_uni_run(const wp_warp_params &p) {
    const int t = wp_thread();
    bool pred;
    if (!wp_vote_enter<T, MASK>(p, t, &pred)) return;
    wp_slot_store_word(p.out, t * p.elems, wp_warp_vote_uni<WIDTH, MASK>(pred) ? 1u : 0u);
}
template <typename T, int WIDTH, unsigned MASK> __global__ void __launch_bounds__(WP_MAX_LANES) wp_vote_uni(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_vote_uni_run<T, WIDTH, MASK>);
}
template <typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ void wp_ballot_run(const wp_warp_params &p) {
    const int t = wp_thread();
    bool pred;
    if (!wp_vote_enter<T, MASK>(p, t, &pred)) return;
    wp_slot_store_word(p.out, t * p.elems, wp_warp_ballot<WIDTH, MASK>(pred));
}
template <typename T, int WIDTH, unsigned MASK> __global__ void __launch_bounds__(WP_MAX_LANES) wp_ballot(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_ballot_run<T, WIDTH, MASK>);
}

/* NO_MASK: every active lane calls __activemask(); MASK is not consulted. The __syncwarp over the
 * lanes that passed the prologue makes them converge first, so the answer is "the active lanes"
 * and not an accident of scheduling. */
template <typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ void wp_activemask_run(const wp_warp_params &p) {
    const int t = wp_thread();
    if (!wp_thread_runs(p, t)) return;
    __syncwarp(wp_running_lanes(p, t));
    wp_slot_store_word(p.out, t * p.elems, wp_warp_activemask<WIDTH>());
}
template <typename T, int WIDTH, unsigned MASK> __global__ void __launch_bounds__(WP_MAX_LANES) wp_activemask(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_activemask_run<T, WIDTH, MASK>);
}
