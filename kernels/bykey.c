/* bykey.c — reduce_by_key (templates/bykey.cu): its launch plan and its CPU reference, which takes the
 * kernel's steps in the kernel's order (tiles, each thread's fold, the block's scan of pairs, the
 * chain of tile prefixes, the walk), so floats come out with the GPU's bits. docs/semantics.md,
 * "reduce_by_key", says the order in words. Called by the engine (server/engine/bykey.c) only. */
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "reduce_emu.h"
#include "spec.h"

/* (runs started in a piece, its elements after the last start folded: accumulator bits) */
typedef struct {
    uint64_t runs, v;
} kv;

/* (c1, v1) + (c2, v2) = (c1 + c2, c2 > 0 ? v2 : op(v1, v2)) */
static kv kv_add(const wp_remu *c, kv a, kv b) {
    return (kv){a.runs + b.runs, b.runs ? b.v : wp_remu_apply(c, a.v, b.v)};
}

int wp_block_reduce_by_key(const wp_spec *s, uint64_t n) {
    (void)s;
    (void)n;
    return 512;
}

void wp_plan_reduce_by_key(const wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out) {
    (void)groups;
    memset(out, 0, sizeof *out);
    out->block = (unsigned)s->data.block;
    const uint64_t tile = (uint64_t)out->block * WP_BYKEY_ITEMS;
    out->groups = (n + tile - 1) / tile;
    out->grid = (unsigned)out->groups;
    out->epoch_status = WP_BYKEY_RECORD;
    out->scratch_bytes = (size_t)out->groups * WP_BYKEY_RECORD;
    out->out_bytes = (size_t)n * wp_type_size(s->type); /* room for n runs; the count says how many */
}

/* One tile as the kernel sees it. */
typedef struct {
    const wp_remu *c;
    const void *keys;
    wp_type key_type;
    uint64_t n, base; /* the tile's first element */
    int block;
    kv *mine, *inc, *texcl; /* per thread */
    uint8_t *thas;          /* texcl holds something (not the tile's first thread) */
    uint32_t *heads;        /* bit j: element j of the thread starts a run */
} tile_ctx;

static int thread_count(const tile_ctx *tc, int t, uint64_t *base) {
    *base = tc->base + (uint64_t)t * WP_BYKEY_ITEMS;
    if (*base >= tc->n) return 0;
    return tc->n - *base < WP_BYKEY_ITEMS ? (int)(tc->n - *base) : WP_BYKEY_ITEMS;
}

/* Step 1: each thread's run starts and its pair. */
static void tile_pairs(tile_ctx *tc) {
    for (int t = 0; t < tc->block; t++) {
        uint64_t base;
        const int cnt = thread_count(tc, t, &base);
        uint32_t heads = 0;
        kv m = {0, 0};
        for (int j = 0; j < cnt; j++) {
            const uint64_t g = base + (uint64_t)j;
            const bool head =
                g == 0 || wp_data_load(tc->key_type, tc->keys, g) != wp_data_load(tc->key_type, tc->keys, g - 1);
            const uint64_t x = wp_remu_elem(tc->c, g);
            if (head) heads |= 1u << j, m.runs++;
            m.v = j == 0 || head ? x : wp_remu_apply(tc->c, m.v, x);
        }
        tc->heads[t] = heads;
        tc->mine[t] = m;
    }
}

/* Step 2: Hillis-Steele in each warp, the warps' totals folded left to right; returns the tile's pair. */
static kv tile_scan(tile_ctx *tc) {
    const wp_remu *c = tc->c;
    const int warps = tc->block / 32;
    memcpy(tc->inc, tc->mine, (size_t)tc->block * sizeof *tc->inc);
    for (int w = 0; w < warps; w++) {
        kv *x = tc->inc + 32 * w;
        for (int o = 1; o < 32; o <<= 1)
            for (int l = 31; l >= o; l--) x[l] = kv_add(c, x[l - o], x[l]); /* x[l - o] not yet updated */
    }
    kv wpre = {0, 0};
    for (int w = 0; w < warps; w++) {
        if (w > 0) wpre = w == 1 ? tc->inc[31] : kv_add(c, wpre, tc->inc[32 * (w - 1) + 31]);
        for (int l = 0; l < 32; l++) {
            const int t = 32 * w + l;
            tc->thas[t] = l > 0 || w > 0;
            if (l > 0)
                tc->texcl[t] = w > 0 ? kv_add(c, wpre, tc->inc[t - 1]) : tc->inc[t - 1];
            else
                tc->texcl[t] = wpre;
        }
    }
    kv agg = tc->inc[31];
    for (int w = 1; w < warps; w++) agg = kv_add(c, agg, tc->inc[32 * w + 31]);
    return agg;
}

/* Step 4: the walk of each thread from (tile prefix) + (thread prefix). */
static void tile_walk(const tile_ctx *tc, const wp_spec *s, const wp_data_params *p, kv prefix, bool has_prefix) {
    const wp_remu *c = tc->c;
    void *out_v = (void *)(uintptr_t)p->out, *out_k = (void *)(uintptr_t)p->seed;
    for (int t = 0; t < tc->block; t++) {
        uint64_t base;
        const int cnt = thread_count(tc, t, &base);
        if (cnt == 0) break;
        bool has = has_prefix;
        kv pre = prefix;
        if (tc->thas[t]) {
            pre = has ? kv_add(c, pre, tc->texcl[t]) : tc->texcl[t];
            has = true;
        }
        uint64_t run = has ? pre.runs : 0, r = pre.v;
        for (int j = 0; j < cnt; j++) {
            const uint64_t g = base + (uint64_t)j, x = wp_remu_elem(c, g);
            if ((tc->heads[t] >> j) & 1u) {
                if (has) wp_data_store(s->type, out_v, run - 1, wp_data_from_acc(s->type, c->acc, r));
                wp_data_store(tc->key_type, out_k, run, wp_data_load(tc->key_type, tc->keys, g));
                run++;
                r = x;
            } else {
                r = wp_remu_apply(c, r, x);
            }
            has = true;
        }
        if (base + (uint64_t)cnt == tc->n) {
            wp_data_store(s->type, out_v, run - 1, wp_data_from_acc(s->type, c->acc, r));
            *(uint64_t *)(uintptr_t)p->counter = run;
        }
    }
}

void wp_emu_reduce_by_key(const wp_spec *s, const wp_data_params *p, const wp_data_plan *plan) {
    wp_remu c;
    wp_remu_init(&c, s, p);
    const int block = (int)plan->block;
    tile_ctx tc = {.c = &c,
                   .keys = (const void *)(uintptr_t)p->aux,
                   .key_type = s->data.keys,
                   .n = p->n,
                   .block = block,
                   .mine = malloc((size_t)block * sizeof(kv)),
                   .inc = malloc((size_t)block * sizeof(kv)),
                   .texcl = malloc((size_t)block * sizeof(kv)),
                   .thas = malloc((size_t)block),
                   .heads = malloc((size_t)block * sizeof(uint32_t))};
    *(uint64_t *)(uintptr_t)p->counter = 0;
    kv chain = {0, 0}; /* P_i-1 */
    for (uint64_t tile = 0; tc.mine && tc.inc && tc.texcl && tc.thas && tc.heads && tile < plan->groups; tile++) {
        tc.base = tile * (uint64_t)block * WP_BYKEY_ITEMS;
        tile_pairs(&tc);
        const kv agg = tile_scan(&tc);
        tile_walk(&tc, s, p, chain, tile > 0);
        chain = tile > 0 ? kv_add(&c, chain, agg) : agg;
    }
    free(tc.mine);
    free(tc.inc);
    free(tc.texcl);
    free(tc.thas);
    free(tc.heads);
}
