/* match.c — emulation of match_any and match_all: participants grouped by the bit pattern of their
 * value (+0 and -0 differ, NaNs differ by payload), masks tile-relative. */
#include "lanes.h"
#include "spec.h"

/* Participants of the call whose value has the same bits as `lane`'s. */
static uint32_t same_bits(const wp_spec *s, const wp_warp_job *job, const wp_lanes_warp *warp, uint32_t parts,
                          int lane) {
    uint64_t own = wp_lanes_bits(s->type, job->in[(size_t)(warp->base + lane) * job->elems]);
    uint32_t same = 0;
    for (int k = 0; k < WP_WARP_SIZE; k++)
        if (wp_lanes_has(parts, k) && wp_lanes_bits(s->type, job->in[(size_t)(warp->base + k) * job->elems]) == own)
            same |= 1u << k;
    return same;
}

enum { MATCH_ANY, MATCH_ALL };

static void match_lane(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res, const wp_lanes_warp *warp,
                       int lane, int how) {
    int t = warp->base + lane;
    wp_why why = wp_lanes_call_why(warp, s->mask, lane);
    wp_lanes_set_why(res, job->elems, t, why);
    if (why != WP_WHY_DEFINED) return;
    uint32_t parts = wp_lanes_participants(warp, s->mask, s->width, lane);
    uint32_t same = same_bits(s, job, warp, parts, lane);
    uint64_t *out = &res->out[(size_t)t * job->elems];
    if (how == MATCH_ANY) {
        *out = wp_lanes_tile_relative(same, s->width, lane);
        return;
    }
    res->src[t] = same == parts;
    *out = same == parts ? wp_lanes_tile_relative(parts, s->width, lane) : 0;
}

void wp_emu_match_any(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    wp_lanes_each(s, job, res, match_lane, MATCH_ANY);
}
void wp_emu_match_all(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    wp_lanes_each(s, job, res, match_lane, MATCH_ALL);
}
