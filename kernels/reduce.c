/* reduce.c — CPU references of the reduction families (templates/reduce.cu): device_reduce,
 * argmin/argmax, warp_reduce/block_reduce and segmented_reduce. Each follows its kernel's combining
 * order step for step (docs/semantics.md), so integers and floats alike come out with the GPU's bits;
 * atomic is the exception: there the emulator takes the blocks (or warps) in index order, one of
 * the orders the GPU may take. Also the tree helpers scan.c shares. device_reduce folds its blocks on
 * up to 8 CPU threads (wp_emu_blocks, data.c: each block's partial depends on nothing else; the combine
 * stays in order), so the result is the same bits on any number of cores. */
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "reduce_emu.h"
#include "spec.h"
#include "stats.h"

uint64_t wp_remu_apply(const wp_remu *c, uint64_t a, uint64_t b) { return wp_op_apply(c->op, c->acc, a, b); }

void wp_remu_init(wp_remu *c, const wp_spec *s, const wp_data_params *p) {
    c->op = &s->op;
    c->type = s->type;
    c->acc = wp_data_acc_type(s);
    c->strategy = s->data.strategy;
    c->in = (const void *)(uintptr_t)p->in;
    c->ident = p->init;
    c->map = s->data.map.expr ? &s->data.map : NULL;
    c->in2 = c->map && s->data.map_y ? (const void *)(uintptr_t)p->in2 : NULL;
}

/* A map's value is computed in the element type (as templates/wp_map.cuh), then widened. */
uint64_t wp_remu_elem(const wp_remu *c, uint64_t i) {
    uint64_t x = wp_data_load(c->type, c->in, i);
    if (c->map) x = wp_op_apply(c->map, c->type, x, c->in2 ? wp_data_load(c->type, c->in2, i) : 0);
    return wp_data_to_acc(c->type, c->acc, x);
}

/* tree(valid): for o = P/2 .. 1, slot i < o takes op(v[i], v[i+o]) when i + o < valid. */
uint64_t wp_remu_tree(const wp_remu *c, uint64_t *v, int valid) {
    int p = 1;
    while (p < valid) p <<= 1;
    for (int o = p / 2; o > 0; o >>= 1)
        for (int i = 0; i < o && i + o < valid; i++) v[i] = wp_remu_apply(c, v[i], v[i + o]);
    return v[0];
}

/* tree_up(valid), CUB's order for a logical warp of any width (WarpReduceSmem, and the shuffle reduce
 * of CCCL's warp_reduce_impl): for o = 1, 2, 4, .., lane l takes op(v[l], v[l+o]) when l + o < valid.
 * Lane 0 only ever reads lanes that are multiples of 2o, so only those are computed here. */
uint64_t wp_remu_tree_up(const wp_remu *c, uint64_t *v, int valid) {
    for (int o = 1; o < valid; o <<= 1)
        for (int l = 0; l + o < valid; l += 2 * o) v[l] = wp_remu_apply(c, v[l], v[l + o]);
    return v[0];
}

/* A left fold from the identity: the atomic strategies' order in the emulator. */
static uint64_t fold_from_identity(const wp_remu *c, const uint64_t *v, int count) {
    uint64_t acc = c->ident;
    for (int i = 0; i < count; i++) acc = wp_remu_apply(c, acc, v[i]);
    return acc;
}

/* wp_group_reduce (templates/wp_block.cuh): the first `valid` of v[0..group) hold values. Clobbers v. */
uint64_t wp_remu_group_reduce(const wp_remu *c, int strategy, uint64_t *v, int group, int valid) {
    if (valid <= 0) return 0;
    bool tree_all = strategy == WP_STRAT_SMEM || strategy == WP_STRAT_GMEM;
    if (group <= 32 && strategy == WP_STRAT_ATOMIC) return fold_from_identity(c, v, valid);
    if (group <= 32 || tree_all) return wp_remu_tree(c, v, valid);
    /* per warp (tree: shfl_down, shfl_xor and redux agree), then over the warps' results */
    uint64_t warp_results[32];
    int warps = (valid + 31) / 32;
    for (int w = 0; w < warps; w++) {
        int wv = valid - 32 * w < 32 ? valid - 32 * w : 32;
        warp_results[w] = wp_remu_tree(c, v + 32 * w, wv);
    }
    if (strategy == WP_STRAT_ATOMIC) return fold_from_identity(c, warp_results, warps);
    return wp_remu_tree(c, warp_results, warps);
}

/* ---- device_reduce ---- */

/* Thread t of block b (see wp_device_reduce_run): tiles b, b + grid, ... of WP_REDUCE_UNROLL * block
 * vectors; in each, vectors t, t + block, ... below n / vec; then the partial last vector (elements
 * n - n % vec .. n - 1) if it falls to this thread. False when the thread has nothing. */
static bool thread_fold(const wp_remu *c, unsigned b, unsigned t, unsigned grid, unsigned block, uint64_t n,
                        unsigned vec, uint64_t *out) {
    const uint64_t nvec = n / vec, tile = (uint64_t)WP_REDUCE_UNROLL * block;
    bool has = false;
    uint64_t acc = 0;
    for (uint64_t base = (uint64_t)b * tile + t; base < nvec; base += (uint64_t)grid * tile)
        for (unsigned u = 0; u < WP_REDUCE_UNROLL && base + (uint64_t)u * block < nvec; u++)
            for (uint64_t k = base + (uint64_t)u * block, i = k * vec; i < k * vec + vec; i++) {
                uint64_t x = wp_remu_elem(c, i);
                acc = has ? wp_remu_apply(c, acc, x) : x;
                has = true;
            }
    if ((nvec % tile) % block == t && (nvec / tile) % grid == b)
        for (uint64_t i = nvec * vec; i < n; i++) {
            uint64_t x = wp_remu_elem(c, i);
            acc = has ? wp_remu_apply(c, acc, x) : x;
            has = true;
        }
    *out = acc;
    return has;
}

/* Blocks b0 .. b1 - 1 of a device_reduce: each block's threads, then its block combine, into partials. */
typedef struct {
    const wp_remu *c;
    int bstrat;
    unsigned b0, b1, grid, block, vec;
    uint64_t n, nv, *partials;
} block_range;

/* A block's thread values: on the stack up to this block size (a small job's one block: no heap, whose
 * 2 KiB requests miss malloc's per-thread cache), else on the heap. Only the first `valid` are read. */
#define EMU_STACK_BLOCK 256

static bool fold_blocks(const block_range *r) {
    uint64_t small[EMU_STACK_BLOCK];
    uint64_t *vals = r->block <= EMU_STACK_BLOCK ? small : calloc(r->block, sizeof *vals);
    if (!vals) return false;
    for (unsigned b = r->b0; b < r->b1; b++) {
        uint64_t left = r->nv - (uint64_t)b * WP_REDUCE_UNROLL * r->block; /* threads with a first vector */
        const unsigned valid = left < r->block ? (unsigned)left : r->block;
        /* only those threads' values are combined (wp_remu_group_reduce reads v[0..valid)): a small job's
         * block skips its idle threads */
        for (unsigned t = 0; t < valid; t++) thread_fold(r->c, b, t, r->grid, r->block, r->n, r->vec, &vals[t]);
        r->partials[b] = wp_remu_group_reduce(r->c, r->bstrat, vals, (int)r->block, (int)valid);
    }
    if (vals != small) free(vals);
    return true;
}

/* wp_emu_blocks' fold: blocks b0 .. b1 - 1 of the job all (a block_range over every block). */
static bool fold_range(const void *all, unsigned b0, unsigned b1) {
    block_range r = *(const block_range *)all;
    r.b0 = b0;
    r.b1 = b1;
    return fold_blocks(&r);
}

void wp_emu_device_reduce(const wp_spec *s, const wp_data_params *p, const wp_data_plan *plan) {
    if (s->data.stat) { /* a statistic: its accumulator, the same order (stats.c) */
        wp_emu_device_stats(s, p, plan);
        return;
    }
    wp_remu c;
    wp_remu_init(&c, s, p);
    unsigned vec = 16 / (unsigned)wp_type_size(s->type), grid = plan->grid, block = plan->block;
    int bstrat = c.strategy == WP_STRAT_ATOMIC ? WP_STRAT_SHFL_DOWN : c.strategy;
    uint64_t n = p->n, nv = (n + vec - 1) / vec;
    uint64_t *vals = NULL, *partials = calloc(grid ? grid : 1, sizeof *partials);
    if (!partials || grid == 0) goto done;
    block_range all = {.c = &c,
                       .bstrat = bstrat,
                       .b0 = 0,
                       .b1 = grid,
                       .grid = grid,
                       .block = block,
                       .vec = vec,
                       .n = n,
                       .nv = nv,
                       .partials = partials};
    if (!wp_emu_blocks(n, grid, fold_range, &all)) goto done;
    uint64_t result;
    if (grid == 1) {
        result = partials[0];
    } else if (c.strategy == WP_STRAT_ATOMIC) {
        result = fold_from_identity(&c, partials, (int)grid);
    } else { /* the last block: thread t folds partials t, t + block, ... */
        if (!(vals = calloc(block, sizeof *vals))) goto done;
        for (unsigned t = 0; t < block && t < grid; t++) {
            vals[t] = partials[t];
            for (unsigned i = t + block; i < grid; i += block) vals[t] = wp_remu_apply(&c, vals[t], partials[i]);
        }
        result = wp_remu_group_reduce(&c, bstrat, vals, (int)block, grid < block ? (int)grid : (int)block);
    }
    wp_data_store(c.acc, (void *)(uintptr_t)p->out, 0, result);
done:
    free(vals);
    free(partials);
}

/* ---- argmin / argmax: a total order, so a left fold gives the kernel's answer ---- */

static bool arg_isnan(wp_type acc, uint64_t v) { return wp_type_is_float(acc) && wp_value_cmp(acc, v, v) == 2; }

/* Whether (a, ia) beats (b, ib): a NaN loses to any number, ties go to the smaller index. */
static bool arg_better(wp_type acc, bool max, uint64_t a, uint64_t ia, uint64_t b, uint64_t ib) {
    bool an = arg_isnan(acc, a), bn = arg_isnan(acc, b);
    if (an != bn) return bn;
    if (!an) {
        int cmp = wp_value_cmp(acc, a, b);
        if (cmp != 0) return max ? cmp > 0 : cmp < 0;
    }
    return ia < ib;
}

static void emu_arg(const wp_spec *s, const wp_data_params *p, bool max) {
    wp_remu c;
    wp_remu_init(&c, s, p);
    uint64_t best = 0, best_i = 0;
    for (uint64_t i = 0; i < p->n; i++) {
        uint64_t x = wp_remu_elem(&c, i);
        if (i == 0 || arg_better(c.acc, max, x, i, best, best_i)) best = x, best_i = i;
    }
    unsigned char *out = (unsigned char *)(uintptr_t)p->out;
    memset(out, 0, 16);
    wp_data_store(c.acc, out, 0, best);
    memcpy(out + 8, &best_i, 8);
}

void wp_emu_argmin(const wp_spec *s, const wp_data_params *p, const wp_data_plan *plan) {
    (void)plan;
    emu_arg(s, p, false);
}
void wp_emu_argmax(const wp_spec *s, const wp_data_params *p, const wp_data_plan *plan) {
    (void)plan;
    emu_arg(s, p, true);
}

/* ---- warp_reduce / block_reduce: groups of `width` or `block` elements ---- */

void wp_emu_group_reduce(const wp_spec *s, const wp_data_params *p, const wp_data_plan *plan) {
    wp_remu c;
    wp_remu_init(&c, s, p);
    int group = (s->family->flags & WP_F_WIDTH_GROUP) ? s->width : s->data.block;
    bool logical_warp = (s->family->flags & WP_F_WIDTH_GROUP) && (group & (group - 1));
    uint64_t *vals = calloc((size_t)group, sizeof *vals);
    if (!vals) return;
    for (uint64_t g = 0; g < plan->groups; g++) {
        uint64_t base = g * (uint64_t)group;
        int valid = p->n - base < (uint64_t)group ? (int)(p->n - base) : group;
        for (int i = 0; i < valid; i++) vals[i] = wp_remu_elem(&c, base + (uint64_t)i);
        uint64_t r = logical_warp && c.strategy != WP_STRAT_ATOMIC
                         ? wp_remu_tree_up(&c, vals, valid) /* CUB's order for a logical warp of any width */
                         : wp_remu_group_reduce(&c, c.strategy, vals, group, valid);
        wp_data_store(s->type, (void *)(uintptr_t)p->out, g, wp_data_from_acc(s->type, c.acc, r));
    }
    free(vals);
}

/* ---- segmented_reduce: a warp per segment, lane l folds elements start + l + 32k ---- */

void wp_emu_segmented(const wp_spec *s, const wp_data_params *p, const wp_data_plan *plan) {
    (void)plan;
    wp_remu c;
    wp_remu_init(&c, s, p);
    const uint64_t *offsets = (const uint64_t *)(uintptr_t)p->aux;
    for (uint64_t seg = 0; seg < p->groups; seg++) {
        uint64_t start = offsets[seg], end = offsets[seg + 1], len = end - start;
        uint64_t lanes[32], r = p->init;
        int valid = len < 32 ? (int)len : 32;
        for (int l = 0; l < valid; l++) {
            lanes[l] = wp_remu_elem(&c, start + (uint64_t)l);
            for (uint64_t i = start + (uint64_t)l + 32; i < end; i += 32)
                lanes[l] = wp_remu_apply(&c, lanes[l], wp_remu_elem(&c, i));
        }
        if (valid) r = wp_remu_tree(&c, lanes, valid);
        wp_data_store(s->type, (void *)(uintptr_t)p->out, seg, wp_data_from_acc(s->type, c.acc, r));
    }
}
