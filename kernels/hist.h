/* hist.h — the histogram family's binning, numpy's np.histogram(x, bins, range) for uniform bins:
 * the edges are np.linspace(lo, hi, bins + 1) in float64, rounded to the compare type E (f32 for f32,
 * f16 for f16, bf16 for bf16, f64 for f64 and the integers, as numpy's result_type picks); a value v
 * (in E) is counted when edge[0] <= v <= edge[bins] (NaN never), in the bin i with
 * edge[i] <= v < edge[i + 1], the last bin closed. That is the bin numpy's fast path ends at (its
 * index guess, corrected by one against the edges). Rows of families.c: wp_plan_histogram and
 * wp_emu_histogram; the API (server/api) calls wp_hist_setup and reads the edges. */
#ifndef WP_HIST_H
#define WP_HIST_H

#include <stdint.h>

#include "data.h"
#include "util/common.h"

typedef struct {
    wp_type type;      /* the input's element type */
    wp_type edge_type; /* E: F32, F16, BF16 or F64 */
    uint64_t bins;
    double lo, hi, step; /* the range asked for and linspace's step, (hi - lo) / bins */
    double first, last;  /* edge[0] and edge[bins], values of E */
    double scale, slack; /* WP_HIST_FAST: values of E (wp_abi.h) */
    int mode;            /* WP_HIST_FAST or WP_HIST_SEARCH */
} wp_hist;

/* Checks bins (1..WP_HIST_BINS_MAX) and range (finite, lo < hi, its edges finite in E and strictly
 * increasing: a range too narrow for the type's resolution is 400 bad_bins, where numpy would go on
 * with repeated edges) and picks the mode (WP_HIST_FAST where the slack is small). 0, or -1 with a 400 naming "bins" or
 * "range". */
int wp_hist_setup(wp_type t, uint64_t bins, double lo, double hi, wp_hist *h, wp_err *err);
/* Edge i (0..bins) as numpy computes it, a value of E widened to double. */
double wp_hist_edge(const wp_hist *h, uint64_t i);
/* The kernel's run-time binning into p->weights (WP_HIST_W_*), as wp_abi.h says. */
void wp_hist_weights(const wp_hist *h, double *weights);
/* The bin of element bits (of h->type) by a plain search of the edges, or -1 outside the range:
 * the reference "check" compares the kernel's counts with. */
int64_t wp_hist_bin_ref(const wp_hist *h, uint64_t bits);

/* The block when the request names none: 512 (fewer blocks flush their counts). */
int wp_block_histogram(const struct wp_spec *s, uint64_t n);

void wp_plan_histogram(const struct wp_spec *s, uint64_t n, uint64_t groups, wp_data_plan *out);
void wp_emu_histogram(const struct wp_spec *s, const wp_data_params *p, const wp_data_plan *plan);

#endif
