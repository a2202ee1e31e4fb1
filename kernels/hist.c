/* hist.c — the histogram family (hist.h): numpy's edges, the kernel's binning parameters, its launch
 * plan, and its CPU reference (the emulator), which finds every bin the way templates/histogram.cu
 * does, so the counts are the kernel's and numpy's.
 *
 * Why the fast way is exact: x(v) = (v - edge[0]) * scale, each step rounded once in E, never
 * decreases as v grows. The host computes D = max over every edge j of |x(edge[j]) - j|. For v in
 * range with i = floor(x(v)): if x(v) - i > D then x(v) > x(edge[i]), so v > edge[i]; if i + 1 - x(v)
 * > D then x(v) < x(edge[i + 1]), so v < edge[i + 1]: i is v's bin. Otherwise v's bin is i - 1, i or
 * i + 1 (as |x - bin| <= 1 + D), settled against the edges. With D about 1e-5 bins (the usual), one
 * value in tens of thousands reads an edge; where D would be 1/4 or more, every value searches. */
#include "hist.h"

#include <math.h>
#include <string.h>

#include "spec.h"

#define HIST_SLACK_MAX 0.25          /* D at or above this: WP_HIST_SEARCH */
#define HIST_VECS 4                  /* 16-byte vectors each thread takes at least (a tile), before the grid grows */
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

/* g(v) in E, rounded as the kernel rounds it. */
static double fast_g(const wp_hist *h, double scale, double v) {
    if (h->edge_type == WP_F64) {
        double d = v - h->first;
        return d * scale;
    }
    float d = (float)v - (float)h->first;
    return (double)(d * (float)scale);
}

/* D for scale s: the largest |x(edge[j]) - j|, infinity when NaN. */
static double slack(const wp_hist *h, double scale) {
    double d = 0;
    for (uint64_t j = 0; j <= h->bins; j++) {
        const double off = fabs(fast_g(h, scale, wp_hist_edge(h, j)) - (double)j);
        if (!(off <= d)) d = off;
    }
    return d == d ? d : INFINITY;
}

static void pick_mode(wp_hist *h) {
    h->scale = (double)h->bins / (h->last - h->first);
    if (h->edge_type != WP_F64) h->scale = (double)(float)h->scale;
    h->slack = isfinite(h->scale) ? slack(h, h->scale) : INFINITY;
    h->mode = h->slack < HIST_SLACK_MAX ? WP_HIST_FAST : WP_HIST_SEARCH;
    if (h->mode == WP_HIST_SEARCH) h->slack = 0;
    if (h->edge_type != WP_F64) { /* D as a float, rounded up: the kernel compares in float */
        float d = (float)h->slack;
        if ((double)d < h->slack) d = nextafterf(d, INFINITY);
        h->slack = (double)d;
    }
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
    weights[WP_HIST_W_SLACK] = h->slack;
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
    const uint64_t per_block = (uint64_t)out->block * HIST_VECS * (16 / wp_type_size(s->type)); /* a tile */
    const uint64_t blocks = (n + per_block - 1) / per_block;
    out->grid = (unsigned)(blocks < cap ? blocks : cap);
    out->groups = bins;
    out->out_bytes = (size_t)bins * sizeof(uint64_t);
}

/* The kernel's bin of v (in range): the fast formula in E with its slack, or the search of the edges. */
static uint64_t emu_bin(wp_type et, const wp_data_params *p, uint64_t bins, double v) {
    const double *w = p->weights, *edges = (const double *)(uintptr_t)p->aux;
    if (w[WP_HIST_W_MODE] == WP_HIST_FAST) {
        double x, below, above;
        if (et == WP_F64) {
            const double d = v - w[WP_HIST_W_FIRST];
            x = d * w[WP_HIST_W_SCALE];
        } else {
            const float d = (float)v - (float)w[WP_HIST_W_FIRST];
            x = (double)(d * (float)w[WP_HIST_W_SCALE]);
        }
        uint64_t i = x < (double)(bins - 1) ? (uint64_t)x : bins - 1;
        if (et == WP_F64) {
            below = x - (double)i;
            above = (double)(i + 1) - x;
        } else {
            below = (double)((float)x - (float)i);
            above = (double)((float)(i + 1) - (float)x);
        }
        if (below > w[WP_HIST_W_SLACK] && above > w[WP_HIST_W_SLACK]) return i;
        while (i > 0 && v < edges[i]) i--; /* one step at most (the top comment) */
        while (i + 1 < bins && v >= edges[i + 1]) i++;
        return i;
    }
    uint64_t lo = 0, hi = bins - 1; /* the last of edge[0 .. bins - 1] <= v */
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
