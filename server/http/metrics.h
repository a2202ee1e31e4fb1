/* metrics.h — the daemon's Prometheus registry beyond the plain counters each module keeps (api_metrics.c
 * writes those): latency histograms (HTTP requests by route pattern and status class, the wait for a
 * worker, NVRTC compiles, kernels by family and backend), the process's own metrics from /proc, build
 * info and per-device gauges, in the text exposition format 0.0.4.
 * Owns: wp_metrics (the histograms). Made once by main.c; every observe function may be called from any
 * thread at any time (lock-free histograms, histo.h) and takes NULL as "not measuring". */
#ifndef WP_METRICS_H
#define WP_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "http.h"

#define WP_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

typedef struct wp_metrics wp_metrics; /* opaque */

/* routes: the daemon's table (it must outlive the registry); every route pattern gets its series. */
wp_metrics *wp_metrics_open(const wp_route *routes);
void wp_metrics_close(wp_metrics *m);

/* The route pattern of a request, never its raw path: an exact route's path ("/v1/warp"), a prefix
 * route's path with "{id}" ("/v1/jobs/{id}"; the catch-all "/" is "/{file}"). rt NULL (a 404 or 405):
 * the pattern of a route with that path for another method, else "unmatched". Static storage. */
const char *wp_metrics_route(const wp_metrics *m, const wp_route *rt, const char *path);

/* One answered request: its route (as for wp_metrics_route), HTTP status and seconds from the request
 * line to the last byte of the response handed to the socket. */
void wp_metrics_observe_request(wp_metrics *m, const wp_route *rt, const char *path, int status, double seconds);
/* Seconds a deferred request waited in the work queue for a worker. */
void wp_metrics_observe_queue_wait(wp_metrics *m, double seconds);
/* Seconds of one NVRTC compile (failed ones included). */
void wp_metrics_observe_compile(wp_metrics *m, double seconds);
/* Seconds of one kernel run of a family on a backend ("cuda": device time; "emu": the emulation's wall
 * time). Unknown families or backends are not counted. */
void wp_metrics_observe_kernel(wp_metrics *m, const char *family, const char *backend, double seconds);

typedef struct {
    const char *version; /* warpd's */
    char nvrtc[16];      /* "12.4" */
    char driver[16];     /* CUDA driver "12.4", or "none" */
} wp_metrics_build;

typedef struct {
    int ordinal;      /* CUDA device ordinal */
    const char *name; /* device name */
    uint64_t mem_total, mem_free;
    uint64_t zero_copy_runs;                   /* a counter */
    uint64_t resident_runs, resident_launches; /* counters */
} wp_metrics_device;

/* Writes every metric this module owns, each with # HELP and # TYPE: the histograms (series with at
 * least one observation), warpd_build_info, the devices' gauges and the process_* metrics. Called by
 * the /metrics handler on an HTTP thread. */
void wp_metrics_write(wp_metrics *m, FILE *f, const wp_metrics_build *build, const wp_metrics_device *devs, int ndevs);

/* A label value escaped for the exposition format (backslash, double quote, line feed), truncated to
 * fit cap (never inside an escape). */
void wp_metrics_escape_label(const char *in, char *out, size_t cap);

#endif
