/* histo.c — one Prometheus histogram over fixed bucket bounds, lock-free and striped by thread (see histo.h).
 * Owns: wp_histo. */
#include "histo.h"

#include "common.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

const double wp_histo_bounds_latency[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30};
const int wp_histo_nbounds_latency = (int)(sizeof wp_histo_bounds_latency / sizeof wp_histo_bounds_latency[0]);
const double wp_histo_bounds_compile[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
const int wp_histo_nbounds_compile = (int)(sizeof wp_histo_bounds_compile / sizeof wp_histo_bounds_compile[0]);
const double wp_histo_bounds_kernel[] = {0.000001, 0.0000025, 0.000005, 0.00001, 0.000025, 0.00005, 0.0001,
                                         0.00025,  0.0005,    0.001,    0.0025,  0.005,    0.01,    0.025,
                                         0.05,     0.1,       0.25,     1,       10};
const int wp_histo_nbounds_kernel = (int)(sizeof wp_histo_bounds_kernel / sizeof wp_histo_bounds_kernel[0]);

/* Every request observes into a histogram from its thread: each thread adds into its own stripe
 * (wp_thread_slot), on cache lines of its own, and a reading adds the stripes up. */
#define HISTO_STRIPE_BITS 4
#define HISTO_STRIPES (1 << HISTO_STRIPE_BITS)
typedef struct {
    _Alignas(64) atomic_uint_least64_t buckets[WP_HISTO_MAX_BOUNDS + 1]; /* per bucket, not cumulative */
    atomic_uint_least64_t sum_ns;                                        /* whole nanoseconds: exact and one add */
} histo_stripe;

struct wp_histo {
    histo_stripe stripe[HISTO_STRIPES];
    int n;                              /* finite bounds; buckets[n] is +Inf */
    double bounds[WP_HISTO_MAX_BOUNDS]; /* upper bounds, inclusive ("le") */
};

static uint64_t bucket(const wp_histo *h, int i) {
    uint64_t v = 0;
    for (int s = 0; s < HISTO_STRIPES; s++) v += atomic_load_explicit(&h->stripe[s].buckets[i], memory_order_relaxed);
    return v;
}

wp_histo *wp_histo_new(const double *bounds, int n) {
    if (!bounds || n < 1 || n > WP_HISTO_MAX_BOUNDS) return NULL;
    for (int i = 0; i < n; i++)
        if (!isfinite(bounds[i]) || (i && bounds[i] <= bounds[i - 1])) return NULL;
    wp_histo *h = aligned_alloc(_Alignof(wp_histo), sizeof *h); /* sizeof: a multiple of its alignment */
    if (!h) return NULL;
    memset(h, 0, sizeof *h); /* every count 0 */
    h->n = n;
    memcpy(h->bounds, bounds, (size_t)n * sizeof *bounds);
    return h;
}

void wp_histo_free(wp_histo *h) { free(h); }

void wp_histo_observe(wp_histo *h, double seconds) {
    if (!h) return;
    if (!(seconds >= 0)) seconds = 0; /* NaN too */
    int lo = 0, hi = h->n;            /* the first bound >= seconds, or n (+Inf) */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (h->bounds[mid] >= seconds)
            hi = mid;
        else
            lo = mid + 1;
    }
    histo_stripe *s = &h->stripe[wp_thread_slot(HISTO_STRIPE_BITS)];
    atomic_fetch_add_explicit(&s->buckets[lo], 1, memory_order_relaxed);
    if (isfinite(seconds) && seconds < 1e9)
        atomic_fetch_add_explicit(&s->sum_ns, (uint64_t)llround(seconds * 1e9), memory_order_relaxed);
}

uint64_t wp_histo_count(const wp_histo *h) {
    uint64_t total = 0;
    if (!h) return 0;
    for (int i = 0; i <= h->n; i++) total += bucket(h, i);
    return total;
}

void wp_histo_format_float(double v, char *out, size_t cap) {
    if (isnan(v)) {
        snprintf(out, cap, "NaN");
    } else if (isinf(v)) {
        snprintf(out, cap, "%sInf", v > 0 ? "+" : "-");
    } else if (v == floor(v) && fabs(v) < 1e15) { /* integers as integers: "20000", not "2e+04" */
        snprintf(out, cap, "%.0f", v);
    } else {
        for (int prec = 1; prec <= 17; prec++) { /* shortest round trip */
            snprintf(out, cap, "%.*g", prec, v);
            if (strtod(out, NULL) == v) return;
        }
    }
}

void wp_histo_write(const wp_histo *h, FILE *f, const char *name, const char *labels) {
    if (!h) return;
    const char *sep = labels && labels[0] ? "," : "";
    if (!labels) labels = "";
    uint64_t cum = 0;
    char le[40];
    for (int i = 0; i <= h->n; i++) {
        cum += bucket(h, i);
        if (i < h->n)
            wp_histo_format_float(h->bounds[i], le, sizeof le);
        else
            snprintf(le, sizeof le, "+Inf");
        fprintf(f, "%s_bucket{%s%sle=\"%s\"} %llu\n", name, labels, sep, le, (unsigned long long)cum);
    }
    char sum[40];
    uint64_t sum_ns = 0;
    for (int s = 0; s < HISTO_STRIPES; s++) sum_ns += atomic_load_explicit(&h->stripe[s].sum_ns, memory_order_relaxed);
    wp_histo_format_float((double)sum_ns / 1e9, sum, sizeof sum);
    const char *open = labels[0] ? "{" : "", *close = labels[0] ? "}" : "";
    fprintf(f, "%s_sum%s%s%s %s\n", name, open, labels, close, sum);
    fprintf(f, "%s_count%s%s%s %llu\n", name, open, labels, close, (unsigned long long)cum);
}
