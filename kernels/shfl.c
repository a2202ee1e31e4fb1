/* shfl.c — emulation of the shuffle families: shfl (idx), shfl_up, shfl_down, shfl_xor, and swap
 * (two xor shuffles exchanging elements of a lane's array). Bits move, never converted. */
#include "lanes.h"
#include "spec.h"

static int32_t lane_arg(const wp_spec *s, const wp_warp_job *job, int t) {
    return job->arg ? job->arg[t] : s->family->arg_default;
}

/* One lane of a shuffle (`how` = wp_shfl_mode): every element comes from the same source lane; bits:
 * the type's (wp_lanes_bits). */
static inline void shuffle_lane(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res,
                                const wp_lanes_warp *warp, int lane, int how, uint64_t bits) {
    const int t = warp->base + lane, elems = job->elems;
    wp_why why = wp_lanes_call_why(warp, s->mask, lane);
    if (why == WP_WHY_DEFINED) {
        const int j =
            wp_lanes_shfl_src((wp_shfl_mode)how, s->width, lane, lane_arg(s, job, t), s->mask, warp->active, &why);
        res->src[t] = j;
        if (why == WP_WHY_DEFINED) {
            const uint64_t *from = job->in + (size_t)(warp->base + (j < 0 ? lane : j)) * elems;
            if (elems == 1) { /* most jobs: one value a lane */
                res->why[t] = WP_WHY_DEFINED;
                res->out[t] = from[0] & bits;
                return;
            }
            for (int e = 0; e < elems; e++) res->out[(size_t)t * elems + e] = from[e] & bits;
        }
    }
    wp_lanes_set_why(res, elems, t, why);
}

/* Every lane of every warp, as wp_lanes_each visits them, with shuffle_lane inlined (a 32-lane job is
 * a few hundred instructions, not a call through a pointer a lane). */
static void shuffle_each(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res, int how) {
    const uint64_t bits = wp_type_bitmask(s->type);
    for (int w = 0; w < wp_lanes_warp_count(job->n); w++) {
        wp_lanes_warp warp;
        wp_lanes_warp_at(job, w, &warp);
        for (int lane = 0; lane < warp.lanes; lane++) shuffle_lane(s, job, res, &warp, lane, how, bits);
    }
}

void wp_emu_shfl(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    shuffle_each(s, job, res, WP_SHFL_IDX);
}
void wp_emu_shfl_up(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    shuffle_each(s, job, res, WP_SHFL_UP);
}
void wp_emu_shfl_down(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    shuffle_each(s, job, res, WP_SHFL_DOWN);
}
void wp_emu_shfl_xor(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    shuffle_each(s, job, res, WP_SHFL_BFLY);
}

/* Element `dst` of lane t gets from[src_elem] when why is DEFINED; otherwise it is left alone. */
static void put_element(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res, int t, int dst,
                        const uint64_t *from, int src_elem, wp_why why) {
    size_t slot = (size_t)t * job->elems + dst;
    res->why[slot] = (uint8_t)why;
    if (why == WP_WHY_DEFINED) res->out[slot] = wp_lanes_bits(s->type, from[src_elem]);
}

/* One lane of a swap: out[first] = shfl_xor(in[second]), out[second] = shfl_xor(in[first]), the
 * other elements copied. */
static void swap_lane(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res, const wp_lanes_warp *warp,
                      int lane, int how) {
    (void)how;
    int t = warp->base + lane, elems = job->elems, first = job->first, second = job->second;
    wp_why why = wp_lanes_call_why(warp, s->mask, lane);
    if (why != WP_WHY_DEFINED) {
        wp_lanes_set_why(res, elems, t, why);
        return;
    }
    int j = wp_lanes_shfl_src(WP_SHFL_BFLY, s->width, lane, lane_arg(s, job, t), s->mask, warp->active, &why);
    res->src[t] = j;
    /* first/second are validated by the caller; out of range, nothing is exchanged rather than
     * reading past the lane's array. */
    bool exchange = first >= 0 && second >= 0 && first < elems && second < elems;
    const uint64_t *own = job->in + (size_t)t * elems;
    for (int e = 0; e < elems; e++)
        if (!exchange || (e != first && e != second)) put_element(s, job, res, t, e, own, e, WP_WHY_DEFINED);
    if (!exchange) return;
    const uint64_t *from = job->in + (size_t)(warp->base + (j < 0 ? lane : j)) * elems;
    put_element(s, job, res, t, first, from, second, why);
    put_element(s, job, res, t, second, from, first, why);
}

void wp_emu_swap(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    wp_lanes_each(s, job, res, swap_lane, 0);
}
