/* bgbuild.h — kernels built off the request path. A job that could use a kernel it does not have
 * yet (a batch's _batch entry, batch_reduce.c) asks for it here and goes on without it (its jobs run
 * alone this time); one thread builds what was asked — memory, disk or NVRTC through the cache, then
 * the load on the asking device, as a request would — once per (key, device), and later batches find it
 * in memory. So a cold compile (100-300 ms) never stalls a batch and every request waiting behind it.
 * Asks carry a weight: a key is built once its asks weigh WP_BGBUILD_THRESHOLD (a batch of several asks
 * with the whole of it; a job alone with 1), so a spec seen once or twice costs no second compile. A
 * build that failed is not tried again for WP_BGBUILD_RETRY_S seconds (asks meanwhile are refused).
 *
 * Threads: wp_bgbuild_want from any thread: it copies the spec, queues it and returns at once (never
 * waits for a build). wp_bgbuild_open, wp_bgbuild_close (which finishes the build in progress and
 * drops the rest) from main; close before the cache and the backends close. wp_bgbuild_stats from any
 * thread.
 * Owns: wp_bgbuild, its thread and its queue of spec copies. */
#ifndef WP_BGBUILD_H
#define WP_BGBUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"
#include "kernels/spec.h"

struct wp_app;
typedef struct wp_bgbuild wp_bgbuild;

#define WP_BGBUILD_QUEUE_MAX 64 /* asks waiting; past it an ask is dropped (a later one asks again) */
#define WP_BGBUILD_THRESHOLD 8  /* the weight of asks that queues a build */
#define WP_BGBUILD_RECENT 128   /* keys whose weight (or failure) is remembered; the lightest goes first */
#define WP_BGBUILD_RETRY_S 60   /* a failed build is not tried again before this */

/* Builds into app's cache (and loads on the asking backend). NULL when the thread cannot start. */
wp_bgbuild *wp_bgbuild_open(struct wp_app *app);
void wp_bgbuild_close(wp_bgbuild *bg);

/* Asks, with weight (1..WP_BGBUILD_THRESHOLD), for s to be built and loaded on b (NULL: built only).
 * Returns true when it is queued now or was already queued or building; false when its weight is not
 * reached yet, it failed lately, the queue is full, out of memory or closing. */
bool wp_bgbuild_want(wp_bgbuild *bg, const wp_spec *s, wp_backend *b, int weight);

typedef struct {
    uint64_t asked;   /* asks taken (a repeat of a queued or building one is not counted) */
    uint64_t built;   /* builds done, wherever the kernel came from */
    uint64_t failed;  /* builds that failed (logged) */
    uint64_t dropped; /* asks refused for want of room in the queue */
    int queued;       /* waiting or building now */
} wp_bgbuild_stats;
void wp_bgbuild_stats_get(wp_bgbuild *bg, wp_bgbuild_stats *out);

#endif
