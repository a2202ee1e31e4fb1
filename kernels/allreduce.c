/* allreduce.c — emulation of warp_allreduce: the butterfly
 *     for (o = W/2; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(MASK, v, o, W));
 * run step by step over a warp's lanes, with definedness carried along: a lane whose shuffle is
 * undefined, or whose partner's value already is, stays undefined (first reason kept). */
#include "lanes.h"
#include "spec.h"

typedef struct {
    uint64_t value[WP_WARP_SIZE];
    uint8_t why[WP_WARP_SIZE]; /* wp_why */
} lanes_state;

/* One butterfly step with offset o: every lane reads the values of the previous step. */
static void butterfly_step(const wp_spec *s, const wp_lanes_warp *warp, const lanes_state *before, lanes_state *after,
                           int o) {
    *after = *before;
    for (int lane = 0; lane < warp->lanes; lane++) {
        if (before->why[lane] != WP_WHY_DEFINED) continue;
        wp_why why;
        int j = wp_lanes_shfl_src(WP_SHFL_BFLY, s->width, lane, o, s->mask, warp->active, &why);
        int partner = j < 0 ? lane : j;
        if (why == WP_WHY_DEFINED && before->why[partner] != WP_WHY_DEFINED) why = WP_WHY_UNDEF_OPERAND;
        after->why[lane] = (uint8_t)why;
        if (why == WP_WHY_DEFINED)
            after->value[lane] = wp_op_apply(&s->op, s->type, before->value[lane], before->value[partner]);
    }
}

static void allreduce_element(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res, const wp_lanes_warp *warp,
                              int e) {
    lanes_state state[2] = {0};
    int cur = 0;
    for (int lane = 0; lane < warp->lanes; lane++) {
        size_t slot = (size_t)(warp->base + lane) * job->elems + e;
        state[0].why[lane] = (uint8_t)wp_lanes_call_why(warp, s->mask, lane);
        state[0].value[lane] = wp_lanes_bits(s->type, job->in[slot]);
    }
    for (int o = s->width / 2; o > 0; o >>= 1, cur ^= 1) butterfly_step(s, warp, &state[cur], &state[cur ^ 1], o);
    for (int lane = 0; lane < warp->lanes; lane++) {
        size_t slot = (size_t)(warp->base + lane) * job->elems + e;
        res->why[slot] = state[cur].why[lane];
        if (state[cur].why[lane] == WP_WHY_DEFINED) res->out[slot] = state[cur].value[lane];
    }
}

void wp_emu_warp_allreduce(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    for (int w = 0; w < wp_lanes_warp_count(job->n); w++) {
        wp_lanes_warp warp;
        wp_lanes_warp_at(job, w, &warp);
        for (int e = 0; e < job->elems; e++) allreduce_element(s, job, res, &warp, e);
    }
}
