/* histo.h — one Prometheus histogram: fixed bucket upper bounds in seconds (an implied +Inf bucket after
 * the last), a sum and a count. Lock-free: an observation is one relaxed atomic add into its bucket and
 * one into the sum (whole nanoseconds), in the calling thread's stripe (wp_thread_slot: threads that
 * observe at once write different cache lines), so any thread may observe while another renders. The count is
 * not kept apart: it is the sum of the buckets as read while rendering, so a rendering's +Inf bucket
 * always equals its _count, even while observations land (the _sum may be a few observations apart).
 * Owns: wp_histo. Knows nothing of names or labels beyond what wp_histo_write is handed. */
#ifndef WP_HISTO_H
#define WP_HISTO_H

#include <stdint.h>
#include <stdio.h>

#define WP_HISTO_MAX_BOUNDS 32

typedef struct wp_histo wp_histo; /* opaque */

/* The bucket bounds the daemon uses (seconds, increasing; +Inf implied):
 *   latency: HTTP requests and queue waits, 100 us .. 30 s (inline answers take tens of microseconds,
 *            a cold NVRTC compile 35..110 ms, a large job seconds);
 *   compile: NVRTC compiles, 5 ms .. 60 s;
 *   kernel:  one kernel run (device time on cuda, wall time of the emulation on emu), 1 us .. 10 s. */
extern const double wp_histo_bounds_latency[], wp_histo_bounds_compile[], wp_histo_bounds_kernel[];
extern const int wp_histo_nbounds_latency, wp_histo_nbounds_compile, wp_histo_nbounds_kernel;

/* bounds: n (1..WP_HISTO_MAX_BOUNDS) finite, strictly increasing values, copied. NULL when they are not
 * or out of memory. */
wp_histo *wp_histo_new(const double *bounds, int n);
void wp_histo_free(wp_histo *h);

/* Any thread. A value below 0 or NaN counts as 0; +Inf lands in the +Inf bucket with a sum of 0 added. */
void wp_histo_observe(wp_histo *h, double seconds);
/* Observations so far (the buckets' total). */
uint64_t wp_histo_count(const wp_histo *h);

/* Writes the histogram's samples in the text exposition format (no HELP/TYPE: the caller writes those
 * once per metric name): name_bucket{LABELS,le="B"} for every bound and "+Inf", cumulative, then
 * name_sum{LABELS} and name_count{LABELS}. labels: "" or already escaped pairs, `route="/v1/warp",code="2xx"`. */
void wp_histo_write(const wp_histo *h, FILE *f, const char *name, const char *labels);

/* A float as the exposition format writes it: the shortest text that reads back to the same double,
 * "+Inf", "-Inf" or "NaN". */
void wp_histo_format_float(double v, char *out, size_t cap);

#endif
