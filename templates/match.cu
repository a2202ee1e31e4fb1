/* match.cu — wp_match_any and wp_match_all over bit patterns (i32 u32 i64 u64 f32 f64), so +0 and
 * -0 differ and NaNs match by payload. TILED: MASK & tile, masks tile-relative. match_all also
 * writes its predicate (0/1) to src[t]. */
#include "wp_resident.cuh"
#include "wp_warp.cuh"

template <typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ void wp_match_any_run(const wp_warp_params &p) {
    const int t = wp_thread();
    if (!wp_thread_runs(p, t) || !wp_in_mask(MASK, wp_lane())) return;
    const T v = wp_slot_load<T>(p.in, t * p.elems);
    wp_slot_store_word(p.out, t * p.elems, wp_warp_match_any<T, WIDTH, MASK>(v));
}
template <typename T, int WIDTH, unsigned MASK> __global__ void __launch_bounds__(WP_MAX_LANES) wp_match_any(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_match_any_run<T, WIDTH, MASK>);
}

template <typename T, int WIDTH, unsigned MASK> __device__ __forceinline__ void wp_match_all_run(const wp_warp_params &p) {
    const int t = wp_thread();
    if (!wp_thread_runs(p, t) || !wp_in_mask(MASK, wp_lane())) return;
    const T v = wp_slot_load<T>(p.in, t * p.elems);
    bool all_same;
    const unsigned m = wp_warp_match_all<T, WIDTH, MASK>(v, &all_same);
    wp_slot_store_word(p.out, t * p.elems, m);
    wp_src_store(p, t, all_same ? 1 : 0);
}
template <typename T, int WIDTH, unsigned MASK> __global__ void __launch_bounds__(WP_MAX_LANES) wp_match_all(wp_warp_params p) {
    WP_WARP_SERVE(p, wp_match_all_run<T, WIDTH, MASK>);
}
