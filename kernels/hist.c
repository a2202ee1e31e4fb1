/* hist.c — the histogram family (hist.h): numpy's edges, the choice between the kernel's two ways of
 * finding a bin, its launch plan, and its CPU reference (the emulator), which finds every bin the way
 * templates/histogram.cu does, so the counts are the kernel's and numpy's.
 *
 * Why the fast way is exact when chosen: g(v) = (v - edge[0]) * scale, each step rounded once in E,
 * never decreases as v grows. So if for every inner edge e = edge[i] (i = 1..bins-1) g(e) >= i and
 * g(the value of the input type just below e) < i, then floor(g(v)) is i exactly for every v in
 * [edge[i], edge[i + 1]), and min(floor(g), bins - 1) is numpy's bin for every v in range.
 * wp_hist_setup checks that for a few scales next to bins / (last - first); where none passes (edges
 * rounded far from evenly spaced, a scale that overflows) the kernel binary-searches the edges. */
#include "hist.h"

#include <math.h>
#include <string.h>

#include "spec.h"

#define HIST_SCALE_TRIES 5           /* the scale, one and two steps of E up and down */
#define HIST_ITEMS 16                /* elements each thread takes at least, before the grid grows */
#define HIST_GRID_MAX 1024           /* blocks at most ... */
#define HIST_GRID_MIN_CAP 256        /* ... and at least this cap however many bins each block flushes */
#define HIST_FLUSH_BUDGET (1u << 20) /* smem: counts all blocks flush, grid * bins, about at most */

static wp_type edge_type_of(wp_type t) { return t == WP_F32 || t == WP_F16 || t == WP_BF16 ? t : WP_F64; }

/* d rounded to float toward zero with a sticky last bit (round to odd): rounding that to f16 or bf16
 * to nearest even is d rounded to them directly, as numpy's float64 -> float16 cast is. */
static float to_odd_f32(double d) {
    float f = (float)d;
    if ((double)f == d || isinf(f) || isnan(f)) return f;
    if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u |= 1u;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* d rounded to the edge type, widened back to double. */
static double round_edge(wp_type et, double d) {
    switch (et) {
    case WP_F32:
        return (double)(float)d;
    case WP_F16:
        return (double)wp_f16_to_f32(wp_f32_to_f16(to_odd_f32(d)));
    case WP_BF16:
        return (double)wp_bf16_to_f32(wp_f32_to_bf16(to_odd_f32(d)));
    default:
        return d;
    }
}

double wp_hist_edge(const wp_hist *h, uint64_t i) {
    if (i >= h->bins) return h->last;
    double y = (double)i * h->step; /* linspace: arange * step, then + start, each rounded */
    y = y + h->lo;
    return round_edge(h->edge_type, y);
}

/* The value of the input type just below e (a value of E): where the fast check looks. */
static double below(wp_type t, double e) {
    if (t == WP_F32) return (double)nextafterf((float)e, -INFINITY);
    if (t == WP_F16 || t == WP_BF16) {
        uint16_t b = t == WP_F16 ? wp_f32_to_f16((float)e) : wp_f32_to_bf16((float)e);
        b = (b & 0x7fffu) == 0 ? 0x8001u : (b & 0x8000u) ? (uint16_t)(b + 1) : (uint16_t)(b - 1);
        return (double)(t == WP_F16 ? wp_f16_to_f32(b) : wp_bf16_to_f32(b));
    }
    return nextafter(e, -INFINITY); /* f64; for the integers a stricter check than needed */
}

/* g(v) in E, rounded as the kernel rounds it. */
static double fast_g(const wp_hist *h, double scale, double v) {
    if (h->edge_type == WP_F64) {
        double d = v - h->first;
        return d * scale;
    }
    float d = (float)v - (float)h->first;
    return (double)(d * (float)scale);
}

static int fast_ok(const wp_hist *h, double scale) {
    for (uint64_t i = 1; i < h->bins; i++) {
        const double e = wp_hist_edge(h, i);
        if (!(fast_g(h, scale, e) >= (double)i) || !(fast_g(h, scale, below(h->type, e)) < (double)i)) return 0;
    }
    return 1;
}

/* The next value of E from s toward +inf (up) or -inf. */
static double step_scale(wp_type et, double s, int up) {
    if (et == WP_F64) return nextafter(s, up ? INFINITY : -INFINITY);
    return (double)nextafterf((float)s, up ? INFINITY : -INFINITY);
}

static void pick_mode(wp_hist *h) {
    const double s0 = h->edge_type == WP_F64 ? (double)h->bins / (h->last - h->first)
                                             : (double)(float)((double)h->bins / (h->last - h->first));
    double up = s0, down = s0;
    h->mode = WP_HIST_SEARCH;
    for (int k = 0; k < HIST_SCALE_TRIES; k++) {
        double s = k == 0    ? s0
                   : (k & 1) ? (up = step_scale(h->edge_type, up, 1))
                             : (down = step_scale(h->edge_type, down, 0));
        if (isfinite(s) && s > 0 && fast_ok(h, s)) {
            h->scale = s;
            h->mode = WP_HIST_FAST;
            return;
        }
    }
    h->scale = s0;
}

int wp_hist_setup(wp_type t, uint64_t bins, double lo, double hi, wp_hist *h, wp_err *err) {
    memset(h, 0, sizeof *h);
    if (bins < 1 || bins > WP_HIST_BINS_MAX)
        return WP_FAIL(err, 400, "bad_bins", "bins", "bins must be an integer 1..%u", WP_HIST_BINS_MAX);
    if (!isfinite(lo) || !isfinite(hi))
        return WP_FAIL(err, 400, "bad_range", "range", "range must be two finite numbers [lo, hi]");
    if (!(lo < hi)) return WP_FAIL(err, 400, "bad_range", "range", "range [%g, %g] needs lo < hi", lo, hi);
    h->type = t;
    h->edge_type = edge_type_of(t);
    h->bins = bins;
    h->lo = lo;
    h->hi = hi;
    h->step = (hi - lo) / (double)bins;
    h->first = wp_hist_edge(h, 0);
    h->last = round_edge(h->edge_type, hi);
    if (!isfinite(h->first) || !isfinite(h->last) || !isfinite(h->step))
        return WP_FAIL(err, 400, "bad_range", "range", "range [%g, %g] is not finite in %s", lo, hi,
                       wp_type_name(h->edge_type));
    double prev = h->first;
    for (uint64_t i = 1; i <= bins; i++) {
        const double e = wp_hist_edge(h, i);
        if (!(e > prev))
            return WP_FAIL(err, 400, "bad_bins", "bins",
                           "%llu bins over [%g, %g] repeat edges in %s (edge %llu is %.17g again): the range is "
                           "narrower than the type resolves; ask for fewer bins or a wider range",
                           (unsigned long long)bins, lo, hi, wp_type_name(h->edge_type), (unsigned long long)i, e);
        prev = e;
    }
    pick_mode(h);
    return 0;
}

void wp_hist_weights(const wp_hist *h, double *weights) {
    weights[WP_HIST_W_FIRST] = h->first;
    weights[WP_HIST_W_LAST] = h->last;
    weights[WP_HIST_W_SCALE] = h->scale;
    weights[WP_HIST_W_MODE] = h->mode;
}

/* The element as a value of E (widened to double): numpy's astype(float64) for the integers. */
static double value_of(wp_type t, uint64_t bits) {
    switch (t) {
    case WP_I32:
        return (double)(int32_t)(uint32_t)bits;
    case WP_U32:
        return (double)(uint32_t)bits;
    case WP_I64:
        return (double)(int64_t)bits;
    case WP_U64:
        return (double)bits;
    case WP_F32:
        return (double)wp_bits_f32(bits);
    case WP_F16:
        return (double)wp_f16_to_f32((uint16_t)bits);
    case WP_BF16:
        return (double)wp_bf16_to_f32((uint16_t)bits);
    default:
        return wp_bits_f64(bits);
    }
}

int64_t wp_hist_bin_ref(const wp_hist *h, uint64_t bits) {
    const double v = value_of(h->type, bits);
    if (!(v >= h->first && v <= h->last)) return -1;
    uint64_t lo = 0, hi = h->bins - 1; /* the last edge <= v, every edge computed afresh */
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo + 1) / 2;
        if (wp_hist_edge(h, mid) <= v)
            lo = mid;
        else
            hi = mid - 1;
    }
    return (int64_t)lo;
}

/* ---- the plan and the emulator: templates/histogram.cu's steps ---- */

int wp_block_histogram(const wp_spec *s, uint64_t n) {
    (void)s;
    (void)n;
    return 512;
}

void wp_plan_histogram(const wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out) {
    memset(out, 0, sizeof *out);
    out->block = (unsigned)s->data.block;
    const uint64_t bins = groups ? groups : 1;
    uint64_t cap = HIST_GRID_MAX;
    if (s->data.strategy == WP_STRAT_SMEM) {
        cap = HIST_FLUSH_BUDGET / bins;
        cap = cap < HIST_GRID_MIN_CAP ? HIST_GRID_MIN_CAP : cap > HIST_GRID_MAX ? HIST_GRID_MAX : cap;
        out->smem = (unsigned)(bins * sizeof(uint32_t));
    }
    const uint64_t per_block = (uint64_t)out->block * HIST_ITEMS;
    const uint64_t blocks = (n + per_block - 1) / per_block;
    out->grid = (unsigned)(blocks < cap ? blocks : cap);
    out->groups = bins;
    out->out_bytes = (size_t)bins * sizeof(uint64_t);
}

/* The kernel's bin of v (in range): the fast formula in E, or the search of the edges table. */
static uint64_t emu_bin(wp_type et, const wp_data_params *p, uint64_t bins, double v) {
    const double *w = p->weights;
    if (w[WP_HIST_W_MODE] == WP_HIST_FAST) {
        double g;
        if (et == WP_F64) {
            double d = v - w[WP_HIST_W_FIRST];
            g = d * w[WP_HIST_W_SCALE];
        } else {
            float d = (float)v - (float)w[WP_HIST_W_FIRST];
            g = (double)(d * (float)w[WP_HIST_W_SCALE]);
        }
        return g < (double)(bins - 1) ? (uint64_t)g : bins - 1;
    }
    const double *edges = (const double *)(uintptr_t)p->aux;
    uint64_t lo = 0, hi = bins - 1; /* the last edge <= v among edge[0 .. bins - 1] */
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo + 1) / 2;
        if (edges[mid] <= v)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

void wp_emu_histogram(const wp_spec *s, const wp_data_params *p, const wp_data_plan *plan) {
    (void)plan;
    const wp_type t = s->type, et = edge_type_of(t);
    const uint64_t bins = p->groups;
    uint64_t *counts = (uint64_t *)(uintptr_t)p->out;
    const void *in = (const void *)(uintptr_t)p->in;
    memset(counts, 0, (size_t)bins * sizeof *counts);
    const double first = p->weights[WP_HIST_W_FIRST], last = p->weights[WP_HIST_W_LAST];
    for (uint64_t i = 0; i < p->n; i++) {
        const double v = value_of(t, wp_data_load(t, in, i));
        if (v >= first && v <= last) counts[emu_bin(et, p, bins, v)]++;
    }
}
