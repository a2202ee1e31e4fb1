/* stats.c — device_reduce's statistics and norms on the host (stats.h): names, the answer made from
 * an accumulator, the emulator of wp_device_stats (templates/stats.cuh) in the device's combining
 * order (its blocks on up to 8 CPU threads, joined before it returns), and the long-double reference
 * of "check". */
#include "stats.h"

#include <stdlib.h>

#include "data.h"
#include "spec.h"

int wp_stat_parse(const char *name) {
    for (int k = 1; name && k < WP_STAT_KINDS; k++)
        if (name[0] == wp_stat_name(k)[0] && !strcmp(name, wp_stat_name(k))) return k;
    return WP_STAT_NONE;
}

bool wp_stat_takes_ddof(int stat) { return stat == WP_STAT_VAR || stat == WP_STAT_STD; }

wp_type wp_stat_value_type(int stat, wp_type t) {
    if (stat == WP_STAT_COUNT_NONZERO) return WP_U64;
    return wp_type_is_float(t) ? t : WP_F64;
}

/* LAPACK 3.10 dnrm2's last step: the three sums into one norm. */
static double sqsum_norm(wp_sqsum q) {
    double scl = 1.0, sumsq = q.med;
    if (q.big > 0) {
        if (q.med > 0 || isnan(q.med)) q.big += (q.med * WP_NRM2_SBIG) * WP_NRM2_SBIG;
        scl = 1.0 / WP_NRM2_SBIG;
        sumsq = q.big;
    } else if (q.small > 0) {
        if (q.med > 0 || isnan(q.med)) {
            const double ymed = sqrt(q.med), ysml = sqrt(q.small) / WP_NRM2_SSML;
            const double ymin = ysml > ymed ? ymed : ysml, ymax = ysml > ymed ? ysml : ymed;
            sumsq = ymax * ymax * (1.0 + (ymin / ymax) * (ymin / ymax));
        } else {
            scl = 1.0 / WP_NRM2_SSML;
            sumsq = q.small;
        }
    }
    return scl * sqrt(sumsq);
}

static double moments_value(int stat, wp_moments m, int ddof) {
    if (stat == WP_STAT_MEAN) return m.c > 0 ? m.k + m.s1 / m.c : NAN;
    if (m.c - ddof <= 0) return NAN; /* numpy: nothing to divide by */
    double m2 = m.s2 - m.s1 * (m.s1 / m.c);
    if (m2 < 0) m2 = 0; /* rounding; NaN stays */
    const double var = m2 / (m.c - ddof);
    return stat == WP_STAT_STD ? sqrt(var) : var;
}

uint64_t wp_stat_finish(int stat, wp_type t, const void *acc, int ddof) {
    const int sacc = wp_stat_acc(stat);
    double v;
    if (sacc == WP_SACC_NONZERO) {
        uint64_t count;
        memcpy(&count, acc, 8);
        return count;
    }
    if (sacc == WP_SACC_MOMENTS) {
        wp_moments m;
        memcpy(&m, acc, sizeof m);
        v = moments_value(stat, m, ddof);
    } else if (sacc == WP_SACC_SQ_SUM) {
        wp_sqsum q;
        memcpy(&q, acc, sizeof q);
        v = sqsum_norm(q);
    } else {
        memcpy(&v, acc, 8);
    }
    return wp_value_from_double(wp_stat_value_type(stat, t), v);
}

/* ---- the emulator: stats.cuh's makes, then device_reduce's order (kernels/reduce.c) ---- */

typedef struct {
    wp_type type;
    int sacc;
    const void *in;
    unsigned char acc[WP_STAT_ACC_BYTES]; /* scratch of make */
} stat_emu;

/* Element i as an accumulator (stats.cuh's makes). */
static void stat_make(const stat_emu *e, uint64_t i, unsigned char *out) {
    const uint64_t bits = wp_data_load(e->type, e->in, i);
    const double v = wp_value_to_double(e->type, bits);
    memset(out, 0, WP_STAT_ACC_BYTES);
    if (e->sacc == WP_SACC_MOMENTS) {
        const wp_moments m = {1.0, v, -0.0, -0.0};
        memcpy(out, &m, sizeof m);
    } else if (e->sacc == WP_SACC_SQ_SUM) {
        wp_sqsum q = {v * v, -0.0, -0.0};
        if (e->type == WP_F64) {
            const double ax = fabs(v);
            const bool big = ax > WP_NRM2_TBIG, small = ax < WP_NRM2_TSML;
            const double y = ax * (big ? WP_NRM2_SBIG : small ? WP_NRM2_SSML : 1.0), yy = y * y;
            q = (wp_sqsum){big || small ? 0.0 : yy, big ? yy : 0.0, small ? yy : 0.0};
        }
        memcpy(out, &q, sizeof q);
    } else if (e->sacc == WP_SACC_NONZERO) {
        const uint64_t mag = e->type == WP_F16 || e->type == WP_BF16 ? 0x7fffu
                             : e->type == WP_F32                     ? 0x7fffffffu
                             : e->type == WP_F64                     ? 0x7fffffffffffffffull
                                                                     : wp_type_bitmask(e->type);
        const uint64_t one = (bits & mag) != 0; /* floats: not +-0 (NaN counts); integers: not 0 */
        memcpy(out, &one, 8);
    } else {
        const double a = fabs(v);
        memcpy(out, &a, 8);
    }
}

/* acc = has ? acc op x : x */
static void fold_in(const stat_emu *e, unsigned char *acc, const unsigned char *x, bool *has) {
    if (*has)
        wp_stat_combine(e->sacc, acc, x);
    else
        memcpy(acc, x, WP_STAT_ACC_BYTES);
    *has = true;
}

/* Thread t of block b (reduce.c's thread_fold): its tiles' vectors, then the partial last vector. */
static void thread_fold(const stat_emu *e, unsigned b, unsigned t, unsigned grid, unsigned block, uint64_t n,
                        unsigned vec, unsigned char *acc) {
    const uint64_t nvec = n / vec, tile = (uint64_t)WP_REDUCE_UNROLL * block;
    unsigned char x[WP_STAT_ACC_BYTES];
    bool has = false;
    memset(acc, 0, WP_STAT_ACC_BYTES);
    for (uint64_t base = (uint64_t)b * tile + t; base < nvec; base += (uint64_t)grid * tile)
        for (unsigned u = 0; u < WP_REDUCE_UNROLL && base + (uint64_t)u * block < nvec; u++)
            for (uint64_t k = base + (uint64_t)u * block, i = k * vec; i < k * vec + vec; i++) {
                stat_make(e, i, x);
                fold_in(e, acc, x, &has);
            }
    if ((nvec % tile) % block == t && (nvec / tile) % grid == b)
        for (uint64_t i = nvec * vec; i < n; i++) {
            stat_make(e, i, x);
            fold_in(e, acc, x, &has);
        }
}

/* tree(valid) over v[0..valid) of WP_STAT_ACC_BYTES each: slot i takes op(v[i], v[i+o]) when i + o < valid. */
static void stat_tree(const stat_emu *e, unsigned char *v, int valid) {
    int p = 1;
    while (p < valid) p <<= 1;
    for (int o = p / 2; o > 0; o >>= 1)
        for (int i = 0; i < o && i + o < valid; i++)
            wp_stat_combine(e->sacc, v + (size_t)i * WP_STAT_ACC_BYTES, v + (size_t)(i + o) * WP_STAT_ACC_BYTES);
}

/* wp_group_reduce over a whole block (templates/wp_block.cuh): smem a tree over every thread, the
 * shuffles a tree per warp then over the warps' results. The result lands in v[0]. */
static void stat_group(const stat_emu *e, int strategy, unsigned char *v, int block, int valid) {
    if (valid <= 0) return;
    if (block <= 32 || strategy == WP_STRAT_SMEM || strategy == WP_STRAT_GMEM) {
        stat_tree(e, v, valid);
        return;
    }
    int warps = (valid + 31) / 32;
    for (int w = 0; w < warps; w++) {
        int wv = valid - 32 * w < 32 ? valid - 32 * w : 32;
        stat_tree(e, v + (size_t)32 * w * WP_STAT_ACC_BYTES, wv);
        if (w) memcpy(v + (size_t)w * WP_STAT_ACC_BYTES, v + (size_t)32 * w * WP_STAT_ACC_BYTES, WP_STAT_ACC_BYTES);
    }
    stat_tree(e, v, warps);
}

/* Blocks b0 .. b1 - 1: each block's threads, then its block combine, into partials. */
typedef struct {
    const stat_emu *e;
    int strategy;
    unsigned b0, b1, grid, block, vec;
    uint64_t n, nv;
    unsigned char *partials;
} stat_range;

static bool stat_blocks(const stat_range *r) {
    unsigned char *vals = calloc(r->block, WP_STAT_ACC_BYTES);
    if (!vals) return false;
    const uint64_t tile = (uint64_t)WP_REDUCE_UNROLL * r->block;
    for (unsigned b = r->b0; b < r->b1; b++) {
        for (unsigned t = 0; t < r->block; t++)
            thread_fold(r->e, b, t, r->grid, r->block, r->n, r->vec, vals + (size_t)t * WP_STAT_ACC_BYTES);
        const uint64_t left = r->nv - (uint64_t)b * tile; /* threads with a first vector */
        stat_group(r->e, r->strategy, vals, (int)r->block, left < r->block ? (int)left : (int)r->block);
        memcpy(r->partials + (size_t)b * WP_STAT_ACC_BYTES, vals, WP_STAT_ACC_BYTES);
    }
    free(vals);
    return true;
}

/* wp_emu_blocks' fold: blocks b0 .. b1 - 1 of the job all (a stat_range over every block). */
static bool stat_range_fold(const void *all, unsigned b0, unsigned b1) {
    stat_range r = *(const stat_range *)all;
    r.b0 = b0;
    r.b1 = b1;
    return stat_blocks(&r);
}

void wp_emu_device_stats(const struct wp_spec *s, const wp_data_params *p, const struct wp_data_plan *plan) {
    stat_emu e = {.type = s->type, .sacc = wp_stat_acc(s->data.stat), .in = (const void *)(uintptr_t)p->in};
    const unsigned vec = 16 / (unsigned)wp_type_size(s->type), grid = plan->grid, block = plan->block;
    const uint64_t n = p->n;
    unsigned char *out = (unsigned char *)(uintptr_t)p->out;
    memset(out, 0, WP_STAT_ACC_BYTES);
    unsigned char *vals = calloc(block, WP_STAT_ACC_BYTES), *partials = calloc(grid ? grid : 1, WP_STAT_ACC_BYTES);
    stat_range all = {.e = &e,
                      .strategy = s->data.strategy,
                      .b0 = 0,
                      .b1 = grid,
                      .grid = grid,
                      .block = block,
                      .vec = vec,
                      .n = n,
                      .nv = (n + vec - 1) / vec,
                      .partials = partials};
    if (!vals || !partials || grid == 0 || !wp_emu_blocks(n, grid, stat_range_fold, &all)) goto done;
    if (grid == 1) {
        memcpy(out, partials, WP_STAT_ACC_BYTES);
    } else { /* the last block: thread t folds partials t, t + block, ... */
        for (unsigned t = 0; t < block && t < grid; t++) {
            unsigned char *v = vals + (size_t)t * WP_STAT_ACC_BYTES;
            memcpy(v, partials + (size_t)t * WP_STAT_ACC_BYTES, WP_STAT_ACC_BYTES);
            for (unsigned i = t + block; i < grid; i += block)
                wp_stat_combine(e.sacc, v, partials + (size_t)i * WP_STAT_ACC_BYTES);
        }
        stat_group(&e, s->data.strategy, vals, (int)block, grid < block ? (int)grid : (int)block);
        memcpy(out, vals, WP_STAT_ACC_BYTES);
    }
done:
    free(vals);
    free(partials);
}

/* ---- the reference of "check" ---- */

double wp_stat_reference(int stat, wp_type t, const void *host, uint64_t n, int ddof) {
    if (stat == WP_STAT_COUNT_NONZERO) {
        stat_emu e = {.type = t, .sacc = WP_SACC_NONZERO, .in = host};
        uint64_t count = 0, one;
        unsigned char x[WP_STAT_ACC_BYTES];
        for (uint64_t i = 0; i < n; i++) {
            stat_make(&e, i, x);
            memcpy(&one, x, 8);
            count += one;
        }
        return (double)count;
    }
    long double sum = 0, sq = 0, big = 0;
    for (uint64_t i = 0; i < n; i++) {
        const long double x = wp_value_to_double(t, wp_data_load(t, host, i)), a = fabsl(x);
        sum += stat == WP_STAT_NORM1 ? a : x;
        if (stat == WP_STAT_NORMINF && (isnan(a) || a > big)) big = isnan(big) ? big : a;
    }
    if (stat == WP_STAT_NORM1) return (double)sum;
    if (stat == WP_STAT_NORMINF) return (double)big;
    const long double mean = n ? sum / (long double)n : 0;
    for (uint64_t i = 0; i < n; i++) {
        const long double x = wp_value_to_double(t, wp_data_load(t, host, i));
        const long double d = stat == WP_STAT_NORM2 ? x : x - mean; /* long double: no f64 square overflows */
        sq += d * d;
    }
    if (stat == WP_STAT_NORM2) return (double)sqrtl(sq);
    if (stat == WP_STAT_MEAN) return n ? (double)mean : NAN;
    if ((long double)n - ddof <= 0) return NAN;
    const long double var = sq / ((long double)n - ddof);
    return stat == WP_STAT_STD ? (double)sqrtl(var) : (double)var;
}
