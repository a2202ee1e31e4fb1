/* families.c — the family table: every kernel family warpd knows, one row each (name, template,
 * run-time argument, flags, operators, output kind, types, widths, minimum sm, emulator). The HTTP
 * schema, spec validation, the compiler and the emulator all read these rows; this is the only
 * place that lists families. Also the names of wp_why. */
#include <string.h>

#include "data.h"
#include "expr.h"
#include "hist.h"
#include "lanes.h"

#define BOTH (WP_BACKEND_CUDA | WP_BACKEND_EMU)
#define T_MATCH (WP_T_ALL & ~(WP_TBIT(WP_F16) | WP_TBIT(WP_BF16)))
#define OPS_REDUX                                                                                                      \
    (WP_OPBIT(WP_OP_SUM) | WP_OPBIT(WP_OP_MIN) | WP_OPBIT(WP_OP_MAX) | WP_OPBIT(WP_OP_AND) | WP_OPBIT(WP_OP_OR) |      \
     WP_OPBIT(WP_OP_XOR))
/* What a 32-bit register moves (AMD ds_* permutes). */
#define T_B32 (WP_T_32 | WP_TBIT(WP_F32))
#define STRATS_TREE                                                                                                    \
    (WP_STRATBIT(WP_STRAT_GMEM) | WP_STRATBIT(WP_STRAT_SMEM) | WP_STRATBIT(WP_STRAT_SHFL_XOR) |                        \
     WP_STRATBIT(WP_STRAT_SHFL_DOWN))
#define STRATS_REDUCE (STRATS_TREE | WP_STRATBIT(WP_STRAT_REDUX) | WP_STRATBIT(WP_STRAT_ATOMIC))
#define STRATS_SCAN (WP_STRATBIT(WP_STRAT_SHFL_UP) | WP_STRATBIT(WP_STRAT_SMEM))
#define STRATS_SHFL WP_STRATBIT(WP_STRAT_SHFL_DOWN)
/* A data-parallel row: packed data, a grid of blocks, a plan and a CPU reference (kernels/data.h). */
#define DATA_ROW(nm, file, kern, dc, fl, tys, wid, strats, strat_def, outk, planfn, emufn, ...)                        \
    &(const wp_family) {                                                                                               \
        .name = (nm), .template_file = (file), .kernel = (kern), .doc = (dc), .types = (tys), .widths = (wid),         \
        .flags = WP_F_DATA | (fl), .ops = ((fl)&WP_F_OP) ? WP_OPS_ALL : 0, .out = WP_OUT_VALUE, .backends = BOTH,      \
        .min_sm = 70, .strategies = (strats), .strategy_default = (strat_def), .block_default = 256,                   \
        .data_out = (outk), .plan = (planfn), .data_emulate = (emufn), __VA_ARGS__                                     \
    }
#define LANE_ARG(n) .arg = (n), .arg_default = 1, .arg_min = 0, .arg_max = 31 /* delta, lane_mask */

/* Rows are file-scope compound literals (static storage), so this one list is the table. */
static const wp_family *const families[] = {
    &(const wp_family){.name = "shfl",
                       .template_file = "shfl.cu",
                       .kernel = "wp_shfl",
                       .doc = "__shfl_sync: read lane src_lane of the width segment (wraps modulo width)",
                       .types = WP_T_ALL,
                       .widths = WP_W_ALL,
                       .arg = "src_lane",
                       .arg_default = 0,
                       .arg_min = INT32_MIN,
                       .arg_max = INT32_MAX,
                       .flags = WP_F_ARRAY,
                       .out = WP_OUT_VALUE,
                       .backends = BOTH,
                       .emulate = wp_emu_shfl},
    &(const wp_family){.name = "shfl_up",
                       .template_file = "shfl.cu",
                       .kernel = "wp_shfl_up",
                       .doc =
                           "__shfl_up_sync: read lane - delta; lanes whose source is below the segment keep their own",
                       .types = WP_T_ALL,
                       .widths = WP_W_ALL,
                       LANE_ARG("delta"),
                       .flags = WP_F_ARRAY,
                       .out = WP_OUT_VALUE,
                       .backends = BOTH,
                       .emulate = wp_emu_shfl_up},
    &(const wp_family){.name = "shfl_down",
                       .template_file = "shfl.cu",
                       .kernel = "wp_shfl_down",
                       .doc =
                           "__shfl_down_sync: read lane + delta; lanes whose source is past the segment keep their own",
                       .types = WP_T_ALL,
                       .widths = WP_W_ALL,
                       LANE_ARG("delta"),
                       .flags = WP_F_ARRAY,
                       .out = WP_OUT_VALUE,
                       .backends = BOTH,
                       .emulate = wp_emu_shfl_down},
    &(const wp_family){.name = "shfl_xor",
                       .template_file = "shfl.cu",
                       .kernel = "wp_shfl_xor",
                       .doc = "__shfl_xor_sync: read lane ^ lane_mask (butterfly); a partner in a later segment is out "
                              "of range",
                       .types = WP_T_ALL,
                       .widths = WP_W_ALL,
                       LANE_ARG("lane_mask"),
                       .flags = WP_F_ARRAY,
                       .out = WP_OUT_VALUE,
                       .backends = BOTH,
                       .emulate = wp_emu_shfl_xor},
    &(const wp_family){.name = "swap",
                       .template_file = "shfl.cu",
                       .kernel = "wp_swap",
                       .doc = "exchange element first of a lane's array with element second of lane ^ lane_mask's",
                       .types = WP_T_ALL,
                       .widths = WP_W_ALL,
                       LANE_ARG("lane_mask"),
                       .flags = WP_F_ARRAY | WP_F_SWAP,
                       .out = WP_OUT_VALUE,
                       .backends = BOTH,
                       .emulate = wp_emu_swap},
    &(const wp_family){.name = "vote_all",
                       .template_file = "vote.cu",
                       .kernel = "wp_vote_all",
                       .doc = "__all_sync: 1 iff the predicate holds in every participating lane",
                       .types = WP_T_ALL,
                       .widths = WP_W_ALL,
                       .flags = WP_F_PRED | WP_F_TILED,
                       .out = WP_OUT_BOOL,
                       .backends = BOTH,
                       .emulate = wp_emu_vote_all},
    &(const wp_family){.name = "vote_any",
                       .template_file = "vote.cu",
                       .kernel = "wp_vote_any",
                       .doc = "__any_sync: 1 iff the predicate holds in some participating lane",
                       .types = WP_T_ALL,
                       .widths = WP_W_ALL,
                       .flags = WP_F_PRED | WP_F_TILED,
                       .out = WP_OUT_BOOL,
                       .backends = BOTH,
                       .emulate = wp_emu_vote_any},
    &(const wp_family){.name = "vote_uni",
                       .template_file = "vote.cu",
                       .kernel = "wp_vote_uni",
                       .doc = "__uni_sync: 1 iff the predicate is the same in every participating lane",
                       .types = WP_T_ALL,
                       .widths = WP_W_ALL,
                       .flags = WP_F_PRED | WP_F_TILED,
                       .out = WP_OUT_BOOL,
                       .backends = BOTH,
                       .emulate = wp_emu_vote_uni},
    &(const wp_family){.name = "ballot",
                       .template_file = "vote.cu",
                       .kernel = "wp_ballot",
                       .doc = "__ballot_sync: a bit per participating lane whose predicate holds",
                       .types = WP_T_ALL,
                       .widths = WP_W_ALL,
                       .flags = WP_F_PRED | WP_F_TILED,
                       .out = WP_OUT_MASK,
                       .backends = BOTH,
                       .emulate = wp_emu_ballot},
    &(const wp_family){.name = "activemask",
                       .template_file = "vote.cu",
                       .kernel = "wp_activemask",
                       .doc = "__activemask: the lanes of the warp that have not returned early",
                       .types = WP_TBIT(WP_U32),
                       .widths = WP_W_ALL,
                       .flags = WP_F_NO_MASK | WP_F_TILED | WP_F_NO_INPUT,
                       .out = WP_OUT_MASK,
                       .backends = BOTH,
                       .emulate = wp_emu_activemask},
    &(const wp_family){.name = "match_any",
                       .template_file = "match.cu",
                       .kernel = "wp_match_any",
                       .doc = "__match_any_sync: the participating lanes whose value has this lane's bit pattern",
                       .types = T_MATCH,
                       .widths = WP_W_ALL,
                       .flags = WP_F_TILED,
                       .out = WP_OUT_MASK,
                       .backends = BOTH,
                       .min_sm = 70,
                       .emulate = wp_emu_match_any},
    &(const wp_family){.name = "match_all",
                       .template_file = "match.cu",
                       .kernel = "wp_match_all",
                       .doc = "__match_all_sync: the participants' mask and pred 1 if all have the same bits, else 0",
                       .types = T_MATCH,
                       .widths = WP_W_ALL,
                       .flags = WP_F_TILED,
                       .out = WP_OUT_MASK_PRED,
                       .backends = BOTH,
                       .min_sm = 70,
                       .emulate = wp_emu_match_all},
    &(const wp_family){.name = "redux",
                       .template_file = "redux.cu",
                       .kernel = "wp_redux",
                       .doc = "__reduce_*_sync: integer reduction over the participating lanes (sm_80+)",
                       .types = WP_T_32,
                       .widths = WP_W_ALL,
                       .flags = WP_F_OP | WP_F_TILED,
                       .ops = OPS_REDUX,
                       .out = WP_OUT_VALUE,
                       .backends = BOTH,
                       .min_sm = 80,
                       .emulate = wp_emu_redux},
    &(const wp_family){.name = "warp_allreduce",
                       .template_file = "allreduce.cu",
                       .kernel = "wp_warp_allreduce",
                       .doc = "butterfly all-reduce with __shfl_xor_sync in each width segment; every lane gets it",
                       .types = WP_T_ALL,
                       .widths = WP_W_ALL,
                       .flags = WP_F_OP,
                       .ops = WP_OPS_ALL,
                       .out = WP_OUT_VALUE,
                       .backends = BOTH,
                       .emulate = wp_emu_warp_allreduce},
    /* AMD's LDS permutes, emulator only (kernels/permute.c): width is the wave size, arg a byte address. */
    &(const wp_family){.name = "ds_permute",
                       .doc = "AMD ds_permute_b32 (forward, emulator only): lane i writes its value to lane addr/4 "
                              "of its wave (width 32 or 64); the highest lane wins a collision, unwritten lanes get 0",
                       .types = T_B32,
                       .widths = WP_W_32 | WP_W_64,
                       .arg = "addr",
                       .arg_default = 0,
                       .arg_min = INT32_MIN,
                       .arg_max = INT32_MAX,
                       .flags = WP_F_WAVE | WP_F_NO_MASK,
                       .out = WP_OUT_VALUE,
                       .backends = WP_BACKEND_EMU,
                       .emulate = wp_emu_ds_permute},
    &(const wp_family){.name = "ds_bpermute",
                       .doc = "AMD ds_bpermute_b32 (backward, emulator only): lane i reads lane addr/4 of its wave "
                              "(width 32 or 64), like __shfl_sync; reading an inactive lane gives 0",
                       .types = T_B32,
                       .widths = WP_W_32 | WP_W_64,
                       .arg = "addr",
                       .arg_default = 0,
                       .arg_min = INT32_MIN,
                       .arg_max = INT32_MAX,
                       .flags = WP_F_WAVE | WP_F_NO_MASK,
                       .out = WP_OUT_VALUE,
                       .backends = WP_BACKEND_EMU,
                       .emulate = wp_emu_ds_bpermute},

    DATA_ROW("device_reduce", "reduce.cu", "wp_device_reduce",
             "reduce the whole array to one value in one launch: blocks reduce 16-byte vectors, the last block "
             "(atomic ticket) combines their partials in a fixed order",
             WP_F_OP | WP_F_ACCUM | WP_F_MAP | WP_F_STATS | WP_F_RESIDENT, WP_T_ALL, WP_W_32, STRATS_REDUCE,
             WP_STRAT_SHFL_DOWN, WP_DATA_VALUE, wp_plan_device_reduce, wp_emu_device_reduce,
             .block_for = wp_block_device_reduce),
    DATA_ROW("device_scan", "scan.cu", "wp_device_scan",
             "inclusive or exclusive scan of the whole array in one pass (decoupled look-back with a fixed fold)",
             WP_F_OP | WP_F_ACCUM | WP_F_SCAN | WP_F_MAP, WP_T_ALL, WP_W_32, STRATS_SCAN, WP_STRAT_SHFL_UP,
             WP_DATA_EACH, wp_plan_device_scan, wp_emu_device_scan),
    DATA_ROW("warp_reduce", "reduce.cu", "wp_warp_reduce",
             "reduce each group of `width` consecutive elements, any width 1..32 (a logical warp, __shfl_down_sync "
             "tree; the last group may be short)",
             WP_F_OP | WP_F_ACCUM | WP_F_WIDTH_GROUP | WP_F_MAP, WP_T_ALL, WP_W_ALL | WP_W_ANY, STRATS_REDUCE,
             WP_STRAT_SHFL_DOWN, WP_DATA_GROUPS, wp_plan_group_reduce, wp_emu_group_reduce),
    DATA_ROW("warp_scan", "scan.cu", "wp_warp_scan",
             "scan each group of `width` consecutive elements, any width 1..32 (a logical warp, __shfl_up_sync)",
             WP_F_OP | WP_F_ACCUM | WP_F_SCAN | WP_F_WIDTH_GROUP | WP_F_MAP, WP_T_ALL, WP_W_ALL | WP_W_ANY, STRATS_SCAN,
             WP_STRAT_SHFL_UP, WP_DATA_EACH, wp_plan_group_scan, wp_emu_group_scan),
    DATA_ROW("block_reduce", "reduce.cu", "wp_block_reduce",
             "reduce each group of `block` consecutive elements, any block 1..1024 (one block each: warps, then their "
             "results)",
             WP_F_OP | WP_F_ACCUM | WP_F_BLOCK_GROUP | WP_F_MAP, WP_T_ALL, WP_W_32, STRATS_REDUCE, WP_STRAT_SHFL_DOWN,
             WP_DATA_GROUPS, wp_plan_group_reduce, wp_emu_group_reduce),
    DATA_ROW("block_scan", "scan.cu", "wp_block_scan",
             "scan each group of `block` consecutive elements, any block 1..1024 (one block each)",
             WP_F_OP | WP_F_ACCUM | WP_F_SCAN | WP_F_BLOCK_GROUP | WP_F_MAP, WP_T_ALL, WP_W_32, STRATS_SCAN,
             WP_STRAT_SHFL_UP, WP_DATA_EACH, wp_plan_group_scan, wp_emu_group_scan),
    DATA_ROW("argmin", "reduce.cu", "wp_argmin",
             "the smallest value and the index of its first occurrence (NaN only when all are NaN)",
             WP_F_MAP | WP_F_RESIDENT, WP_T_ALL, WP_W_32, STRATS_TREE, WP_STRAT_SHFL_DOWN, WP_DATA_ARG, wp_plan_arg,
             wp_emu_argmin),
    DATA_ROW("argmax", "reduce.cu", "wp_argmax",
             "the largest value and the index of its first occurrence (NaN only when all are NaN)",
             WP_F_MAP | WP_F_RESIDENT, WP_T_ALL, WP_W_32, STRATS_TREE, WP_STRAT_SHFL_DOWN, WP_DATA_ARG, wp_plan_arg,
             wp_emu_argmax),
    DATA_ROW("segmented_reduce", "reduce.cu", "wp_segmented_reduce",
             "reduce each segment [offsets[i], offsets[i+1]) (a warp per segment); an empty one gives the identity",
             WP_F_OP | WP_F_ACCUM | WP_F_SEGMENTS | WP_F_MAP, WP_T_ALL, WP_W_32,
             WP_STRATBIT(WP_STRAT_SHFL_DOWN) | WP_STRATBIT(WP_STRAT_SHFL_XOR) | WP_STRATBIT(WP_STRAT_REDUX),
             WP_STRAT_SHFL_DOWN, WP_DATA_GROUPS, wp_plan_segmented, wp_emu_segmented),
    DATA_ROW("stencil", "stencil.cu", "wp_stencil",
             "weighted moving average of radius 1..4 (halo through edge lanes, neighbours by shuffles); 0 where "
             "the window leaves the array",
             WP_F_ACCUM | WP_F_RADIUS, WP_T_FLOAT, WP_W_32, STRATS_SHFL, WP_STRAT_SHFL_DOWN, WP_DATA_EACH,
             wp_plan_stencil, wp_emu_stencil),
    DATA_ROW("reduce_by_key", "bykey.cu", "wp_reduce_by_key",
             "reduce each run of equal consecutive keys (\"keys\": an integer array as long as the data) to one "
             "value: the runs' keys and values, in one pass (decoupled look-back with a fixed fold)",
             WP_F_OP | WP_F_ACCUM | WP_F_KEYS, WP_T_ALL, WP_W_32, WP_STRATBIT(WP_STRAT_SHFL_UP), WP_STRAT_SHFL_UP,
             WP_DATA_RUNS, wp_plan_reduce_by_key, wp_emu_reduce_by_key, .block_for = wp_block_reduce_by_key),
    DATA_ROW("generate", "generate.cu", "wp_generate",
             "fill n elements on the device: iota, random (seeded, counter-based) or a constant", WP_F_NO_INPUT,
             WP_T_ALL, WP_W_32, STRATS_SHFL, WP_STRAT_SHFL_DOWN, WP_DATA_EACH, wp_plan_generate, wp_emu_generate),
    DATA_ROW("histogram", "histogram.cu", "wp_histogram",
             "numpy's np.histogram(x, bins, range): counts of `bins` equal bins over [lo, hi] (the last closed), "
             "exactly numpy's at the edges; smem: per-block counts (bins <= 12288), atomic: global atomics",
             WP_F_BINS, WP_T_ALL, WP_W_32, WP_STRATBIT(WP_STRAT_SMEM) | WP_STRATBIT(WP_STRAT_ATOMIC), WP_STRAT_SMEM,
             WP_DATA_COUNTS, wp_plan_histogram, wp_emu_histogram, .block_for = wp_block_histogram),
};

const wp_family *wp_family_find(const char *name) {
    for (size_t i = 0; name && i < WP_ARRAY_LEN(families); i++)
        if (families[i]->name[0] == name[0] && !strcmp(families[i]->name, name)) return families[i]; /* a byte first */
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
