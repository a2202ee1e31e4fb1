/* redux.c — emulation of redux.sync (i32/u32; sum min max and or xor): the reduction over the
 * participants of the call, the same in every participant. Arithmetic is kernels/expr.c's
 * wp_op_apply (sum wraps, min/max signed for i32, unsigned for u32). */
#include "lanes.h"
#include "spec.h"

static void redux_lane(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res, const wp_lanes_warp *warp,
                       int lane, int how) {
    (void)how;
    int t = warp->base + lane;
    wp_why why = wp_lanes_call_why(warp, s->mask, lane);
    wp_lanes_set_why(res, job->elems, t, why);
    if (why != WP_WHY_DEFINED) return;
    uint32_t parts = wp_lanes_participants(warp, s->mask, s->width, lane);
    bool first = true;
    uint64_t acc = 0;
    for (int k = 0; k < WP_WARP_SIZE; k++) {
        if (!wp_lanes_has(parts, k)) continue;
        uint64_t x = wp_lanes_bits(s->type, job->in[(size_t)(warp->base + k) * job->elems]);
        acc = first ? x : wp_op_apply(&s->op, s->type, acc, x);
        first = false;
    }
    res->out[(size_t)t * job->elems] = acc; /* parts always holds the calling lane */
}

void wp_emu_redux(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    wp_lanes_each(s, job, res, redux_lane, 0);
}
