/* stats.h — device_reduce's statistics and norms ("op": mean, var, std, norm1, norm2, norminf,
 * count_nonzero; their kinds and names are stat_kinds.h's): the accumulator each folds (WP_SACC_*,
 * wp_abi.h), the host's copy of the kernels' combines (templates/stats.cuh, operation for operation,
 * so that parts of a sharded buffer meet with the device's bits), the answer made from an
 * accumulator, the emulator and the float64 reference of "check". An accumulator is
 * WP_STAT_ACC_BYTES raw bytes laid out as the template's struct. docs/semantics.md ("Statistics and
 * norms") gives the order and the accuracy. Any thread; nothing here keeps state. */
#ifndef WP_STATS_H
#define WP_STATS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "stat_kinds.h"
#include "types.h"
#include "wp_abi.h"

struct wp_spec;
struct wp_data_plan;

/* templates/stats.cuh's accumulators. */
typedef struct {
    double c, k, s1, s2; /* count, shift (an element), sum(x - k), sum((x - k)^2) */
} wp_moments;
typedef struct {
    double med, big, small; /* norm2: LAPACK dnrm2's three sums of squares */
} wp_sqsum;

#define WP_NRM2_TSML 0x1p-511
#define WP_NRM2_TBIG 0x1p486
#define WP_NRM2_SSML 0x1p537
#define WP_NRM2_SBIG 0x1p-538

int wp_stat_parse(const char *name); /* WP_STAT_*, or WP_STAT_NONE for any other name */
bool wp_stat_takes_ddof(int stat);   /* var, std */
/* The answer's type for elements of type t: floats their own (count_nonzero u64), integers f64 (u64). */
wp_type wp_stat_value_type(int stat, wp_type t);
/* The answer (raw bits of wp_stat_value_type) from the accumulator of all the elements. Empty: mean,
 * var and std NaN, the norms and the count 0. var/std with ddof >= count: NaN, as numpy. */
uint64_t wp_stat_finish(int stat, wp_type t, const void *acc, int ddof);
/* The CPU emulator of wp_device_stats (the device's order: kernels/reduce.c's thread and block
 * orders, the same partial tiles): writes the accumulator (WP_STAT_ACC_BYTES) at p->out. */
void wp_emu_device_stats(const struct wp_spec *s, const wp_data_params *p, const struct wp_data_plan *plan);
/* The float64 reference of "check": a two-pass mean and variance in long double, the norms in long
 * double, the count exactly; the same empty and ddof rules. */
double wp_stat_reference(int stat, wp_type t, const void *host, uint64_t n, int ddof);

/* The bytes of accumulator sacc (WP_SACC_*) the kernel writes: the rest of WP_STAT_ACC_BYTES is never
 * written (a read of it would see what the buffer held before). */
static inline size_t wp_stat_acc_bytes(int sacc) {
    return sacc == WP_SACC_MOMENTS ? sizeof(wp_moments) : sacc == WP_SACC_SQ_SUM ? sizeof(wp_sqsum) : 8;
}

/* ---- the combines, as templates/stats.cuh has them (a op b into *a) ---- */

static inline void wp_moments_combine(wp_moments *a, const wp_moments *b) {
    if (b->c == 1.0) { /* one element */
        const double d = b->k - a->k;
        a->c = a->c + 1.0;
        a->s1 = a->s1 + d;
        a->s2 = a->s2 + d * d;
        return;
    }
    if (a->c == 0.0) {
        *a = *b;
        return;
    }
    if (b->c == 0.0) return;
    const double d = b->k - a->k; /* b's sums moved to a's shift */
    a->c = a->c + b->c;
    a->s1 = a->s1 + (b->s1 + b->c * d);
    a->s2 = a->s2 + (b->s2 + d * (2.0 * b->s1 + b->c * d));
}

/* One accumulator of kind sacc (WP_SACC_*) combined into another: raw bytes, any alignment. */
static inline void wp_stat_combine(int sacc, void *a, const void *b) {
    if (sacc == WP_SACC_MOMENTS) {
        wp_moments x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        wp_moments_combine(&x, &y);
        memcpy(a, &x, sizeof x);
    } else if (sacc == WP_SACC_SQ_SUM) {
        wp_sqsum x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        x.med = x.med + y.med, x.big = x.big + y.big, x.small = x.small + y.small;
        memcpy(a, &x, sizeof x);
    } else if (sacc == WP_SACC_NONZERO) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        x += y;
        memcpy(a, &x, 8);
    } else { /* abs sum, abs max (a NaN wins, else the larger) */
        double x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        x = sacc == WP_SACC_ABS_SUM ? x + y : isnan(x) ? x : isnan(y) ? y : y > x ? y : x;
        memcpy(a, &x, 8);
    }
}

#endif
