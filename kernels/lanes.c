/* lanes.c — the warp emulator core: warps of a job, lane masks, segments and tiles, the shfl.sync
 * source-lane rule and vote predicates (docs/semantics.md). Pure functions; no state. */
#include "lanes.h"

int wp_lanes_warp_count(int n) { return n > 0 ? (n + WP_WARP_SIZE - 1) / WP_WARP_SIZE : 0; }

void wp_lanes_warp_at(const wp_warp_job *job, int w, wp_lanes_warp *out) {
    out->base = w * WP_WARP_SIZE;
    out->lanes = job->n - out->base < WP_WARP_SIZE ? job->n - out->base : WP_WARP_SIZE;
    out->active = 0;
    for (int lane = 0; lane < out->lanes; lane++)
        if (!job->active || job->active[out->base + lane]) out->active |= 1u << lane;
}

uint32_t wp_lanes_tile_bits(int width, int lane) {
    if (width >= WP_WARP_SIZE) return 0xffffffffu;
    return ((1u << width) - 1u) << wp_lanes_seg(width, lane);
}

uint32_t wp_lanes_participants(const wp_lanes_warp *w, uint32_t member_mask, int width, int lane) {
    return member_mask & wp_lanes_tile_bits(width, lane) & w->active;
}

uint32_t wp_lanes_tile_relative(uint32_t mask, int width, int lane) {
    return (mask & wp_lanes_tile_bits(width, lane)) >> wp_lanes_seg(width, lane);
}

uint64_t wp_lanes_bits(wp_type t, uint64_t slot) { return slot & wp_type_bitmask(t); }

void wp_lanes_each(const struct wp_spec *s, const wp_warp_job *job, wp_warp_result *res, wp_lanes_fn fn, int how) {
    for (int w = 0; w < wp_lanes_warp_count(job->n); w++) {
        wp_lanes_warp warp;
        wp_lanes_warp_at(job, w, &warp);
        for (int lane = 0; lane < warp.lanes; lane++) fn(s, job, res, &warp, lane, how);
    }
}

/* ---- predicates ---- */

/* Outcome of comparing x with a constant, as one bit, so a predicate is the set it accepts. */
enum { CMP_LT = 1, CMP_EQ = 2, CMP_GT = 4, CMP_UN = 8 };

static double float_value(wp_type t, uint64_t bits) {
    switch (t) {
    case WP_F32:
        return wp_bits_f32(bits);
    case WP_F16:
        return wp_f16_to_f32((uint16_t)bits);
    case WP_BF16:
        return wp_bf16_to_f32((uint16_t)bits);
    default:
        return wp_bits_f64(bits);
    }
}

#define CMP3(x, y) ((x) < (y) ? CMP_LT : (x) > (y) ? CMP_GT : CMP_EQ)

static int compare(wp_type t, uint64_t x, uint64_t y) {
    x = wp_lanes_bits(t, x);
    y = wp_lanes_bits(t, y);
    switch (t) {
    case WP_I32:
        return CMP3((int32_t)(uint32_t)x, (int32_t)(uint32_t)y);
    case WP_I64:
        return CMP3((int64_t)x, (int64_t)y);
    case WP_U32:
    case WP_U64:
        return CMP3(x, y);
    default:
        break;
    }
    double fx = float_value(t, x), fy = float_value(t, y);
    if (fx != fx || fy != fy) return CMP_UN;
    return CMP3(fx, fy);
}

/* Each predicate: outcomes accepted against `a` (or 0 for nonzero), and against `b` when it has a
 * second bound (0 = none). */
static const struct {
    uint8_t vs_a, vs_b;
    bool against_zero;
} pred_rows[] = {
    [WP_PRED_NONZERO] = {CMP_LT | CMP_GT | CMP_UN, 0, true},
    [WP_PRED_GT] = {CMP_GT, 0, false},
    [WP_PRED_GE] = {CMP_GT | CMP_EQ, 0, false},
    [WP_PRED_LT] = {CMP_LT, 0, false},
    [WP_PRED_LE] = {CMP_LT | CMP_EQ, 0, false},
    [WP_PRED_EQ] = {CMP_EQ, 0, false},
    [WP_PRED_NE] = {CMP_LT | CMP_GT | CMP_UN, 0, false},
    [WP_PRED_BETWEEN] = {CMP_GT, CMP_LT, false},
};

bool wp_lanes_pred(wp_type t, int pred_kind, uint64_t x, uint64_t a, uint64_t b) {
    if (pred_kind < 0 || pred_kind >= (int)(sizeof pred_rows / sizeof pred_rows[0])) return false;
    if (!(compare(t, x, pred_rows[pred_kind].against_zero ? 0 : a) & pred_rows[pred_kind].vs_a)) return false;
    return !pred_rows[pred_kind].vs_b || (compare(t, x, b) & pred_rows[pred_kind].vs_b);
}
