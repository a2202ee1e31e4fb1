/* vote.c — emulation of the vote families: vote_all, vote_any, vote_uni, ballot, activemask. Each is
 * one combine function of (participants, lanes whose predicate holds); the tile and member-mask
 * rules are in lanes.c. */
#include "lanes.h"
#include "spec.h"

enum { VOTE_ALL, VOTE_ANY, VOTE_UNI, VOTE_BALLOT, VOTE_ACTIVEMASK };

typedef uint32_t (*vote_fn)(uint32_t parts, uint32_t holds, int width, int lane);

static uint32_t vote_all(uint32_t parts, uint32_t holds, int width, int lane) {
    (void)width, (void)lane;
    return (holds & parts) == parts;
}
static uint32_t vote_any(uint32_t parts, uint32_t holds, int width, int lane) {
    (void)width, (void)lane;
    return (holds & parts) != 0;
}
static uint32_t vote_uni(uint32_t parts, uint32_t holds, int width, int lane) {
    (void)width, (void)lane;
    return (holds & parts) == 0 || (holds & parts) == parts;
}
static uint32_t ballot(uint32_t parts, uint32_t holds, int width, int lane) {
    return wp_lanes_tile_relative(parts & holds, width, lane);
}
static uint32_t activemask(uint32_t parts, uint32_t holds, int width, int lane) {
    (void)holds;
    return wp_lanes_tile_relative(parts, width, lane);
}

static const vote_fn votes[] = {
    [VOTE_ALL] = vote_all,  [VOTE_ANY] = vote_any,          [VOTE_UNI] = vote_uni,
    [VOTE_BALLOT] = ballot, [VOTE_ACTIVEMASK] = activemask,
};

/* The participants whose predicate holds (none are read for NO_INPUT families). */
static uint32_t holding(const wp_spec *s, const wp_warp_job *job, const wp_lanes_warp *warp, uint32_t parts) {
    uint32_t holds = 0;
    if (s->family->flags & WP_F_NO_INPUT) return 0;
    for (int k = 0; k < WP_WARP_SIZE; k++) {
        if (!wp_lanes_has(parts, k)) continue;
        uint64_t x = job->in[(size_t)(warp->base + k) * job->elems];
        if (wp_lanes_pred(s->type, job->pred_kind, x, job->pred_a, job->pred_b)) holds |= 1u << k;
    }
    return holds;
}

static void vote_lane(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res, const wp_lanes_warp *warp,
                      int lane, int how) {
    int t = warp->base + lane;
    /* NO_MASK (activemask): every active lane calls, whatever the mask says. */
    uint32_t member_mask = (s->family->flags & WP_F_NO_MASK) ? 0xffffffffu : s->mask;
    wp_why why = wp_lanes_call_why(warp, member_mask, lane);
    wp_lanes_set_why(res, job->elems, t, why);
    if (why != WP_WHY_DEFINED) return;
    uint32_t parts = wp_lanes_participants(warp, member_mask, s->width, lane);
    res->out[(size_t)t * job->elems] = votes[how](parts, holding(s, job, warp, parts), s->width, lane);
}

void wp_emu_vote_all(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    wp_lanes_each(s, job, res, vote_lane, VOTE_ALL);
}
void wp_emu_vote_any(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    wp_lanes_each(s, job, res, vote_lane, VOTE_ANY);
}
void wp_emu_vote_uni(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    wp_lanes_each(s, job, res, vote_lane, VOTE_UNI);
}
void wp_emu_ballot(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    wp_lanes_each(s, job, res, vote_lane, VOTE_BALLOT);
}
void wp_emu_activemask(const wp_spec *s, const wp_warp_job *job, wp_warp_result *res) {
    wp_lanes_each(s, job, res, vote_lane, VOTE_ACTIVEMASK);
}
