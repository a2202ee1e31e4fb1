/* data.c — what the data-parallel families share on the host: strategy names, the accumulator type,
 * element <-> accumulator conversions, packed loads and stores, and every family's launch plan
 * (grid, block, scratch and output sizes), which the CUDA launch and the emulator both follow. */
#include "data.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "spec.h"
#include "stat_kinds.h"

static const char *const strategy_names[WP_STRAT_COUNT] = {
    [WP_STRAT_GMEM] = "gmem",           [WP_STRAT_SMEM] = "smem",   [WP_STRAT_SHFL_XOR] = "shfl_xor",
    [WP_STRAT_SHFL_DOWN] = "shfl_down", [WP_STRAT_REDUX] = "redux", [WP_STRAT_ATOMIC] = "atomic",
    [WP_STRAT_SHFL_UP] = "shfl_up",
};

const char *wp_strategy_name(int strat) {
    if (strat == WP_STRAT_AUTO) return "auto";
    return strat > 0 && strat < WP_STRAT_COUNT ? strategy_names[strat] : "unknown";
}

int wp_strategy_parse(const char *s) {
    if (!strcmp(s, "auto")) return WP_STRAT_AUTO;
    for (int k = 1; k < WP_STRAT_COUNT; k++)
        if (!strcmp(s, strategy_names[k])) return k;
    return -2;
}

wp_type wp_data_acc_type(const wp_spec *s) {
    bool half = s->type == WP_F16 || s->type == WP_BF16;
    if (half && !((s->family->flags & WP_F_ACCUM) && s->data.native)) return WP_F32;
    return s->type;
}

wp_type wp_data_kernel_type(const wp_spec *s) {
    if (!(s->family->flags & WP_F_OP) || s->data.map.expr || s->data.stat)
        return s->type; /* a map, a statistic: the signed type matters */
    switch (s->op.kind) {
    case WP_OP_SUM:
    case WP_OP_PROD:
    case WP_OP_AND:
    case WP_OP_OR:
    case WP_OP_XOR:
        return s->type == WP_I32 ? WP_U32 : s->type == WP_I64 ? WP_U64 : s->type;
    default:
        return s->type;
    }
}

bool wp_data_order_free(const wp_spec *s) { return wp_type_is_int(s->type) && s->op.kind != WP_OP_EXPR; }

size_t wp_data_out_size(const wp_spec *s) {
    return s->family->data_out == WP_DATA_COUNTS ? sizeof(uint64_t) : wp_type_size(s->type);
}

bool wp_data_deterministic(const wp_spec *s) {
    return s->family->data_out == WP_DATA_COUNTS || s->data.strategy != WP_STRAT_ATOMIC || wp_data_order_free(s);
}

uint64_t wp_data_to_acc(wp_type t, wp_type acc, uint64_t bits) {
    if (t == acc) return bits;
    if (t == WP_F16) return wp_f32_bits(wp_f16_to_f32((uint16_t)bits));
    if (t == WP_BF16) return wp_f32_bits(wp_bf16_to_f32((uint16_t)bits));
    return bits;
}

uint64_t wp_data_from_acc(wp_type t, wp_type acc, uint64_t bits) {
    if (t == acc) return bits;
    if (t == WP_F16) return wp_f32_to_f16(wp_bits_f32(bits));
    if (t == WP_BF16) return wp_f32_to_bf16(wp_bits_f32(bits));
    return bits;
}

uint64_t wp_data_load(wp_type t, const void *base, uint64_t i) {
    switch (wp_type_size(t)) {
    case 2:
        return ((const uint16_t *)base)[i];
    case 4:
        return ((const uint32_t *)base)[i];
    default:
        return ((const uint64_t *)base)[i];
    }
}

void wp_data_store(wp_type t, void *base, uint64_t i, uint64_t bits) {
    switch (wp_type_size(t)) {
    case 2:
        ((uint16_t *)base)[i] = (uint16_t)bits;
        break;
    case 4:
        ((uint32_t *)base)[i] = (uint32_t)bits;
        break;
    default:
        ((uint64_t *)base)[i] = bits;
        break;
    }
}

/* ---- launch plans ---- */

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static void plan_init(const wp_spec *s, wp_data_plan *out) {
    memset(out, 0, sizeof *out);
    out->block = (unsigned)s->data.block;
}

/* Slots of the accumulator a gmem tree needs: one per thread of the grid. */
static size_t gmem_bytes(const wp_spec *s, uint64_t threads, size_t slot) {
    return s->data.strategy == WP_STRAT_GMEM ? (size_t)threads * slot : 0;
}

/* wave: the fewest blocks once there are more tiles than that (WP_REDUCE_GRID_WAVE, or
 * WP_STATS_GRID_WAVE for the statistics whose kernels hold half the threads an SM). */
static void plan_grid_reduce(const wp_spec *s, uint64_t n, size_t acc_bytes, uint64_t wave, wp_data_plan *out) {
    plan_init(s, out);
    uint64_t nv = ceil_div(n, 16 / wp_type_size(s->type));
    uint64_t blocks = ceil_div(nv, (uint64_t)out->block * WP_REDUCE_MIN_VECS); /* one tile each */
    if (blocks > wave) {
        blocks /= WP_REDUCE_TILES_PER_BLOCK;
        blocks = blocks < wave ? wave : blocks;
        blocks = blocks > WP_REDUCE_GRID_MAX ? WP_REDUCE_GRID_MAX : blocks;
    }
    out->grid = (unsigned)blocks;
    out->groups = 1;
    out->scratch_bytes = (size_t)WP_REDUCE_GRID_MAX * 16 + gmem_bytes(s, (uint64_t)out->grid * out->block, acc_bytes);
    out->out_bytes = acc_bytes;
}

/* Measured on H100 (bench/RESULTS.md, all four of f32/i32 x sum/max alike): up to 16 KiB one tile of a
 * 256 block; to 64 KiB one block of 1024 (no ticket, no second level: 15 % faster than four blocks of
 * 256); to 1 MiB 256 (5-15 % faster than larger blocks); to 16 MiB 1024 (a quarter of the blocks and
 * of the partials the last block folds: 10 % faster at 16 MiB); above, 512 (1-1.5 % faster than 256). */
int wp_block_device_reduce(const wp_spec *s, uint64_t n) {
    const uint64_t bytes = n * wp_type_size(s->type);
    if (bytes <= (16u << 10)) return 256;
    if (bytes <= (64u << 10)) return 1024;
    if (bytes <= (1u << 20)) return 256;
    if (bytes <= (16u << 20)) return 1024;
    return 512;
}

void wp_plan_fit_device(wp_data_plan *plan, int sms) {
    const uint64_t by_threads = 2048 / (plan->block ? plan->block : 1);
    const uint64_t by_smem = (228u << 10) / ((uint64_t)plan->smem + 1024); /* 1 KiB a block is the system's */
    uint64_t per_sm = by_threads < by_smem ? by_threads : by_smem;
    per_sm = per_sm < 1 ? 1 : per_sm > 32 ? 32 : per_sm;
    const uint64_t cap = (uint64_t)(sms > 0 ? sms : 1) * per_sm;
    if (plan->grid > cap) plan->grid = (unsigned)cap;
}

void wp_plan_device_reduce(const wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out) {
    (void)groups;
    if (s->data.stat) { /* kernels/stat_kinds.h: a partial of up to 32 bytes per block (no gmem tree after them) */
        const int sacc = wp_stat_acc(s->data.stat);
        const bool wide = sacc == WP_SACC_MOMENTS || sacc == WP_SACC_SQ_SUM;
        plan_grid_reduce(s, n, WP_STAT_ACC_BYTES, wide ? WP_STATS_GRID_WAVE : WP_REDUCE_GRID_WAVE, out);
        out->scratch_bytes = (size_t)(out->grid ? out->grid : 1) * WP_STAT_ACC_BYTES;
        return;
    }
    plan_grid_reduce(s, n, wp_type_size(wp_data_acc_type(s)), WP_REDUCE_GRID_WAVE, out);
}

void wp_plan_arg(const wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out) {
    (void)groups;
    plan_grid_reduce(s, n, 16, WP_REDUCE_GRID_WAVE, out); /* {value, int64 index} */
}

static int group_size(const wp_spec *s) { return (s->family->flags & WP_F_WIDTH_GROUP) ? s->width : s->data.block; }

/* Threads a group family launches for n elements: one per element, except for logical warps of a width
 * W that is not a power of two, where each warp holds 32 / W whole groups (its last 32 mod W lanes hold
 * none) in each of WP_LW_ROWS rows (templates/wp_block.cuh, "logical warps of any width"). */
static uint64_t group_threads(const wp_spec *s, uint64_t n) {
    const int w = s->width;
    if (!(s->family->flags & WP_F_WIDTH_GROUP) || !(w & (w - 1))) return n;
    return ceil_div(n, (uint64_t)(32 / w) * (uint64_t)w * WP_LW_ROWS) * 32;
}

/* The launch of a group family: warp groups, group_threads over blocks of `block`; block groups, one
 * block per group, of the group's size rounded up to a whole warp (threads past the group hold nothing). */
static void plan_group_launch(const wp_spec *s, uint64_t n, wp_data_plan *out) {
    plan_init(s, out);
    if (s->family->flags & WP_F_BLOCK_GROUP) {
        out->block = (unsigned)(s->data.block + 31) / 32 * 32;
        out->grid = (unsigned)ceil_div(n, (uint64_t)s->data.block);
    } else {
        out->grid = (unsigned)ceil_div(group_threads(s, n), out->block);
    }
}

void wp_plan_group_reduce(const wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out) {
    (void)groups;
    plan_group_launch(s, n, out);
    out->groups = ceil_div(n, (uint64_t)group_size(s));
    out->scratch_bytes = gmem_bytes(s, (uint64_t)out->grid * out->block, wp_type_size(wp_data_acc_type(s)));
    out->out_bytes = (size_t)out->groups * wp_type_size(s->type);
}

void wp_plan_segmented(const wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out) {
    (void)n;
    plan_init(s, out);
    out->grid = (unsigned)ceil_div(groups * 32, out->block);
    out->groups = groups;
    out->out_bytes = (size_t)groups * wp_type_size(s->type);
}

void wp_plan_group_scan(const wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out) {
    (void)groups;
    plan_group_launch(s, n, out);
    out->groups = ceil_div(n, (uint64_t)group_size(s));
    out->out_bytes = (size_t)n * wp_type_size(s->type);
}

void wp_plan_device_scan(const wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out) {
    (void)groups;
    plan_init(s, out);
    uint64_t tile = (uint64_t)out->block * (WP_SCAN_THREAD_BYTES / wp_type_size(s->type));
    out->groups = ceil_div(n, tile);
    out->grid = (unsigned)out->groups;
    out->epoch_status = wp_type_size(wp_data_acc_type(s)) <= 4 ? WP_TILE_RECORD_PACKED : WP_TILE_RECORD_WIDE;
    out->scratch_bytes = (size_t)out->groups * out->epoch_status;
    out->out_bytes = (size_t)n * wp_type_size(s->type);
}

void wp_plan_stencil(const wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out) {
    (void)groups;
    plan_init(s, out);
    out->grid = (unsigned)ceil_div(n, out->block);
    out->groups = n;
    out->out_bytes = (size_t)n * wp_type_size(s->type);
}

#define WP_GENERATE_GRID_MAX 8192 /* grid-stride beyond this: enough blocks to fill any device */

void wp_plan_generate(const wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out) {
    (void)groups;
    plan_init(s, out);
    uint64_t blocks = ceil_div(n, out->block);
    out->grid = (unsigned)(blocks < WP_GENERATE_GRID_MAX ? blocks : WP_GENERATE_GRID_MAX);
    out->groups = n;
    out->out_bytes = (size_t)n * wp_type_size(s->type);
}

#define EMU_PAR_MIN (1u << 16) /* elements below which one thread folds every block */
#define EMU_THREADS_MAX 8

typedef struct {
    bool (*fold)(const void *ctx, unsigned b0, unsigned b1);
    const void *ctx;
    unsigned b0, b1;
    bool done;
} emu_range;

static void *emu_range_thread(void *arg) {
    emu_range *r = arg;
    r->done = r->fold(r->ctx, r->b0, r->b1);
    return NULL;
}

bool wp_emu_blocks(uint64_t n, unsigned grid, bool (*fold)(const void *ctx, unsigned b0, unsigned b1),
                   const void *ctx) {
    long cpus = n < EMU_PAR_MIN ? 1 : sysconf(_SC_NPROCESSORS_ONLN);
    unsigned k = cpus < 2 ? 1 : (unsigned)(cpus < EMU_THREADS_MAX ? cpus : EMU_THREADS_MAX);
    if (k > grid) k = grid;
    emu_range r[EMU_THREADS_MAX];
    pthread_t tid[EMU_THREADS_MAX];
    bool started[EMU_THREADS_MAX] = {false};
    for (unsigned i = 0; i < k; i++) {
        r[i] = (emu_range){.fold = fold,
                           .ctx = ctx,
                           .b0 = (unsigned)((uint64_t)grid * i / k),
                           .b1 = (unsigned)((uint64_t)grid * (i + 1) / k)};
        if (i > 0) started[i] = pthread_create(&tid[i], NULL, emu_range_thread, &r[i]) == 0;
    }
    bool ok = k == 0 || fold(ctx, r[0].b0, r[0].b1);
    for (unsigned i = 1; i < k; i++) {
        if (started[i]) pthread_join(tid[i], NULL);
        if (!r[i].done) ok = fold(ctx, r[i].b0, r[i].b1) && ok;
    }
    return ok;
}
