/* scan.c — CPU references of the scan families (templates/scan.cu): warp_scan and block_scan (each
 * group scanned on its own) and device_scan (tiles, the block scan of the threads' aggregates, and
 * the chain of tile prefixes P_i = op(P_i-1, A_i) that the look-back reproduces exactly). Each
 * follows its kernel's combining order, so floats come out with the GPU's bits. */
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "reduce_emu.h"
#include "spec.h"

/* Hillis-Steele: for o = 1, 2, 4, ..: v[i] = op(v[i-o], v[i]) for i >= o (all i at once). */
static void hillis_steele(const wp_remu *c, uint64_t *v, int m) {
    for (int o = 1; o < m; o <<= 1)
        for (int i = m - 1; i >= o; i--) v[i] = wp_remu_apply(c, v[i - o], v[i]);
}

/* wp_group_scan (templates/wp_block.cuh): inclusive scan of v[0..valid) in place. */
static void group_scan(const wp_remu *c, int strategy, uint64_t *v, int group, int valid) {
    if (group <= 32 || strategy == WP_STRAT_SMEM) {
        hillis_steele(c, v, valid);
        return;
    }
    uint64_t totals[32];
    int warps = (valid + 31) / 32;
    for (int w = 0; w < warps; w++) {
        int wv = valid - 32 * w < 32 ? valid - 32 * w : 32;
        hillis_steele(c, v + 32 * w, wv);
        totals[w] = v[32 * w + wv - 1];
    }
    hillis_steele(c, totals, warps);
    for (int w = 1; w < warps; w++)
        for (int i = 32 * w; i < valid && i < 32 * w + 32; i++) v[i] = wp_remu_apply(c, totals[w - 1], v[i]);
}

void wp_emu_group_scan(const wp_spec *s, const wp_data_params *p, const wp_data_plan *plan) {
    wp_remu c;
    wp_remu_init(&c, s, p);
    int group = (s->family->flags & WP_F_WIDTH_GROUP) ? s->width : s->data.block;
    bool excl = s->data.exclusive, has_init = p->has_init != 0;
    uint64_t *inc = calloc((size_t)group, sizeof *inc);
    if (!inc) return;
    void *out = (void *)(uintptr_t)p->out;
    for (uint64_t g = 0; g < plan->groups; g++) {
        uint64_t base = g * (uint64_t)group;
        int valid = p->n - base < (uint64_t)group ? (int)(p->n - base) : group;
        for (int i = 0; i < valid; i++) inc[i] = wp_remu_elem(&c, base + (uint64_t)i);
        group_scan(&c, c.strategy, inc, group, valid);
        for (int i = 0; i < valid; i++) {
            uint64_t r;
            if (excl)
                r = i == 0 ? c.ident : has_init ? wp_remu_apply(&c, c.ident, inc[i - 1]) : inc[i - 1];
            else
                r = has_init ? wp_remu_apply(&c, c.ident, inc[i]) : inc[i];
            wp_data_store(s->type, out, base + (uint64_t)i, wp_data_from_acc(s->type, c.acc, r));
        }
    }
    free(inc);
}

void wp_emu_device_scan(const wp_spec *s, const wp_data_params *p, const wp_data_plan *plan) {
    wp_remu c;
    wp_remu_init(&c, s, p);
    const int items = WP_SCAN_THREAD_BYTES / (int)wp_type_size(s->type), block = (int)plan->block;
    const uint64_t tile_elems = (uint64_t)block * (uint64_t)items, n = p->n;
    const bool excl = s->data.exclusive;
    uint64_t *inc = calloc((size_t)block, sizeof *inc);
    if (!inc) return;
    void *out = (void *)(uintptr_t)p->out;
    bool have_prev = p->has_init != 0; /* P_-1 = init when one was given */
    uint64_t prev = c.ident;
    for (uint64_t tile = 0; tile < plan->groups; tile++) {
        uint64_t tile_base = tile * tile_elems;
        int threads = 0;
        for (int t = 0; t < block; t++) { /* each thread's serial aggregate */
            uint64_t base = tile_base + (uint64_t)t * (uint64_t)items;
            if (base >= n) break;
            int cnt = n - base < (uint64_t)items ? (int)(n - base) : items;
            inc[t] = wp_remu_elem(&c, base);
            for (int j = 1; j < cnt; j++) inc[t] = wp_remu_apply(&c, inc[t], wp_remu_elem(&c, base + (uint64_t)j));
            threads = t + 1;
        }
        group_scan(&c, c.strategy, inc, block, threads);
        for (int t = 0; t < threads; t++) {
            uint64_t base = tile_base + (uint64_t)t * (uint64_t)items, pre = prev;
            int cnt = n - base < (uint64_t)items ? (int)(n - base) : items;
            bool has = have_prev;
            if (t > 0) {
                pre = has ? wp_remu_apply(&c, pre, inc[t - 1]) : inc[t - 1];
                has = true;
            }
            for (int j = 0; j < cnt; j++) {
                uint64_t x = wp_remu_elem(&c, base + (uint64_t)j), r;
                if (excl) {
                    r = has ? pre : c.ident;
                    pre = has ? wp_remu_apply(&c, pre, x) : x;
                } else {
                    pre = has ? wp_remu_apply(&c, pre, x) : x;
                    r = pre;
                }
                has = true;
                wp_data_store(s->type, out, base + (uint64_t)j, wp_data_from_acc(s->type, c.acc, r));
            }
        }
        uint64_t tile_agg = inc[threads - 1];
        prev = have_prev ? wp_remu_apply(&c, prev, tile_agg) : tile_agg;
        have_prev = true;
    }
    free(inc);
}
