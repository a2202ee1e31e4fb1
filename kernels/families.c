/* families.c — the family table: every kernel family warpd knows, one row each (name, template,
 * run-time argument, flags, operators, output kind, types, widths, minimum sm, emulator). The HTTP
 * schema, spec validation, the compiler and the emulator all read these rows; this is the only
 * place that lists families. Also the names of wp_why. */
#include <string.h>

#include "../server/expr.h"
#include "lanes.h"

#define BOTH (WP_BACKEND_CUDA | WP_BACKEND_EMU)
#define T_MATCH (WP_T_ALL & ~(WP_TBIT(WP_F16) | WP_TBIT(WP_BF16)))
#define OPS_REDUX                                                                                                      \
    (WP_OPBIT(WP_OP_SUM) | WP_OPBIT(WP_OP_MIN) | WP_OPBIT(WP_OP_MAX) | WP_OPBIT(WP_OP_AND) | WP_OPBIT(WP_OP_OR) |     \
     WP_OPBIT(WP_OP_XOR))
#define LANE_ARG(n) .arg = (n), .arg_default = 1, .arg_min = 0, .arg_max = 31 /* delta, lane_mask */

/* Rows are file-scope compound literals (static storage), so this one list is the table. */
static const wp_family *const families[] = {
    &(const wp_family){.name = "shfl", .template_file = "shfl.cu", .kernel = "wp_shfl",
                       .doc = "__shfl_sync: read lane src_lane of the width segment (wraps modulo width)",
                       .types = WP_T_ALL, .widths = WP_W_ALL, .arg = "src_lane", .arg_default = 0,
                       .arg_min = INT32_MIN, .arg_max = INT32_MAX, .flags = WP_F_ARRAY, .out = WP_OUT_VALUE,
                       .backends = BOTH, .emulate = wp_emu_shfl},
    &(const wp_family){.name = "shfl_up", .template_file = "shfl.cu", .kernel = "wp_shfl_up",
                       .doc = "__shfl_up_sync: read lane - delta; lanes whose source is below the segment keep their own",
                       .types = WP_T_ALL, .widths = WP_W_ALL, LANE_ARG("delta"), .flags = WP_F_ARRAY,
                       .out = WP_OUT_VALUE, .backends = BOTH, .emulate = wp_emu_shfl_up},
    &(const wp_family){.name = "shfl_down", .template_file = "shfl.cu", .kernel = "wp_shfl_down",
                       .doc = "__shfl_down_sync: read lane + delta; lanes whose source is past the segment keep their own",
                       .types = WP_T_ALL, .widths = WP_W_ALL, LANE_ARG("delta"), .flags = WP_F_ARRAY,
                       .out = WP_OUT_VALUE, .backends = BOTH, .emulate = wp_emu_shfl_down},
    &(const wp_family){.name = "shfl_xor", .template_file = "shfl.cu", .kernel = "wp_shfl_xor",
                       .doc = "__shfl_xor_sync: read lane ^ lane_mask (butterfly); a partner in a later segment is out "
                              "of range",
                       .types = WP_T_ALL, .widths = WP_W_ALL, LANE_ARG("lane_mask"), .flags = WP_F_ARRAY,
                       .out = WP_OUT_VALUE, .backends = BOTH, .emulate = wp_emu_shfl_xor},
    &(const wp_family){.name = "swap", .template_file = "shfl.cu", .kernel = "wp_swap",
                       .doc = "exchange element first of a lane's array with element second of lane ^ lane_mask's",
                       .types = WP_T_ALL, .widths = WP_W_ALL, LANE_ARG("lane_mask"), .flags = WP_F_ARRAY | WP_F_SWAP,
                       .out = WP_OUT_VALUE, .backends = BOTH, .emulate = wp_emu_swap},
    &(const wp_family){.name = "vote_all", .template_file = "vote.cu", .kernel = "wp_vote_all",
                       .doc = "__all_sync: 1 iff the predicate holds in every participating lane", .types = WP_T_ALL,
                       .widths = WP_W_ALL, .flags = WP_F_PRED | WP_F_TILED, .out = WP_OUT_BOOL, .backends = BOTH,
                       .emulate = wp_emu_vote_all},
    &(const wp_family){.name = "vote_any", .template_file = "vote.cu", .kernel = "wp_vote_any",
                       .doc = "__any_sync: 1 iff the predicate holds in some participating lane", .types = WP_T_ALL,
                       .widths = WP_W_ALL, .flags = WP_F_PRED | WP_F_TILED, .out = WP_OUT_BOOL, .backends = BOTH,
                       .emulate = wp_emu_vote_any},
    &(const wp_family){.name = "vote_uni", .template_file = "vote.cu", .kernel = "wp_vote_uni",
                       .doc = "__uni_sync: 1 iff the predicate is the same in every participating lane",
                       .types = WP_T_ALL, .widths = WP_W_ALL, .flags = WP_F_PRED | WP_F_TILED, .out = WP_OUT_BOOL,
                       .backends = BOTH, .emulate = wp_emu_vote_uni},
    &(const wp_family){.name = "ballot", .template_file = "vote.cu", .kernel = "wp_ballot",
                       .doc = "__ballot_sync: a bit per participating lane whose predicate holds", .types = WP_T_ALL,
                       .widths = WP_W_ALL, .flags = WP_F_PRED | WP_F_TILED, .out = WP_OUT_MASK, .backends = BOTH,
                       .emulate = wp_emu_ballot},
    &(const wp_family){.name = "activemask", .template_file = "vote.cu", .kernel = "wp_activemask",
                       .doc = "__activemask: the lanes of the warp that have not returned early",
                       .types = WP_TBIT(WP_U32), .widths = WP_W_ALL,
                       .flags = WP_F_NO_MASK | WP_F_TILED | WP_F_NO_INPUT, .out = WP_OUT_MASK, .backends = BOTH,
                       .emulate = wp_emu_activemask},
    &(const wp_family){.name = "match_any", .template_file = "match.cu", .kernel = "wp_match_any",
                       .doc = "__match_any_sync: the participating lanes whose value has this lane's bit pattern",
                       .types = T_MATCH, .widths = WP_W_ALL, .flags = WP_F_TILED, .out = WP_OUT_MASK,
                       .backends = BOTH, .min_sm = 70, .emulate = wp_emu_match_any},
    &(const wp_family){.name = "match_all", .template_file = "match.cu", .kernel = "wp_match_all",
                       .doc = "__match_all_sync: the participants' mask and pred 1 if all have the same bits, else 0",
                       .types = T_MATCH, .widths = WP_W_ALL, .flags = WP_F_TILED, .out = WP_OUT_MASK_PRED,
                       .backends = BOTH, .min_sm = 70, .emulate = wp_emu_match_all},
    &(const wp_family){.name = "redux", .template_file = "redux.cu", .kernel = "wp_redux",
                       .doc = "__reduce_*_sync: integer reduction over the participating lanes (sm_80+)",
                       .types = WP_T_32, .widths = WP_W_ALL, .flags = WP_F_OP | WP_F_TILED, .ops = OPS_REDUX,
                       .out = WP_OUT_VALUE, .backends = BOTH, .min_sm = 80, .emulate = wp_emu_redux},
    &(const wp_family){.name = "warp_allreduce", .template_file = "allreduce.cu", .kernel = "wp_warp_allreduce",
                       .doc = "butterfly all-reduce with __shfl_xor_sync in each width segment; every lane gets it",
                       .types = WP_T_ALL, .widths = WP_W_ALL, .flags = WP_F_OP, .ops = WP_OPS_ALL,
                       .out = WP_OUT_VALUE, .backends = BOTH, .emulate = wp_emu_warp_allreduce},
};

const wp_family *wp_family_find(const char *name) {
    for (size_t i = 0; name && i < WP_ARRAY_LEN(families); i++)
        if (!strcmp(families[i]->name, name)) return families[i];
    return NULL;
}

const wp_family *const *wp_family_list(int *count) {
    if (count) *count = (int)WP_ARRAY_LEN(families);
    return families;
}

static const char *const why_names[] = {
    [WP_WHY_DEFINED] = "defined",
    [WP_WHY_INACTIVE] = "inactive",
    [WP_WHY_NOT_MEMBER] = "not_member",
    [WP_WHY_SRC_INACTIVE] = "src_inactive",
    [WP_WHY_SRC_NOT_MEMBER] = "src_not_member",
    [WP_WHY_UNDEF_OPERAND] = "undef_operand",
};

const char *wp_why_name(wp_why w) { return (unsigned)w < WP_ARRAY_LEN(why_names) ? why_names[w] : "unknown"; }
