/* prewarm.h — many compiles at once, spread over threads: POST /v1/compile {"specs":[...]}, and
 * --prewarm FILE (the same JSON), run in the background at start (GET /v1/ready answers 503
 * "warming" with its progress until it is over) or, with --exit, in the foreground to fill a cache
 * directory. Each spec is what POST /v1/compile takes for one kernel; a bad spec fails alone. */
#ifndef WP_PREWARM_H
#define WP_PREWARM_H

#include <cjson/cJSON.h>
#include <stdatomic.h>

#include "util/common.h"

struct wp_app;
typedef struct wp_prewarm wp_prewarm;

#define WP_PREWARM_MAX_SPECS 4096

/* The "specs" array of a document {"specs":[...], "description"?: "..."} (borrowed from doc), or NULL
 * with a 400 naming the field. */
const cJSON *wp_prewarm_specs(const cJSON *doc, wp_err *err);

/* How far a batch has got; read by any thread. stop: ask the remaining specs to be skipped. */
typedef struct {
    int total;
    atomic_int done, failed, compiled; /* done counts failed ones; compiled: built by NVRTC (not cached) */
    atomic_int shared;                 /* served by a kernel another spec of the batch compiled (i32 and u32 sum) */
    atomic_bool stop;
    atomic_int next_task; /* internal: the next task to hand out (shared by the processes of --exit) */
} wp_batch_progress;

/* Compiles every spec on up to `threads` threads. Returns an array of results in spec order: each
 * POST /v1/compile's answer for that spec, or {"error":{...}} with the field named "specs[i]...."
 * (skipped ones after a stop: code "stopped"). */
cJSON *wp_compile_batch(struct wp_app *app, const cJSON *specs, int threads, wp_batch_progress *p);

/* Reads and checks a prewarm file: the parsed document (delete it), or NULL with err. */
cJSON *wp_prewarm_load(const char *path, wp_err *err);

/* Starts compiling doc's specs in the background (a thread, which takes doc), on threads - 1 threads
 * (at least 1): one compile slot stays free for requests. NULL on failure. */
wp_prewarm *wp_prewarm_start(struct wp_app *app, cJSON *doc, int threads, wp_err *err);
/* Progress: *running is false once every spec has been tried. elapsed_s: since start, or its run. */
void wp_prewarm_progress(wp_prewarm *p, int *total, int *done, int *failed, bool *running, double *elapsed_s);
/* GET /v1/ready while there is a --prewarm: sets "status" ("warming" or "ready") and adds
 * "prewarm": {total, done, failed, elapsed_s}; returns the HTTP status (503 while warming). */
int wp_prewarm_ready_json(wp_prewarm *p, cJSON *ready);
/* Stops what has not started, waits for the rest, frees. */
void wp_prewarm_stop(wp_prewarm *p);

/* --prewarm FILE --exit: compiles in the foreground on `workers` processes (forked after start-up;
 * NVRTC compiles in one process stop scaling after a few threads, processes scale with the cores:
 * bench/RESULTS.md), prints a summary (and each failure) to stdout/stderr, returns the process exit
 * status: 0 when every spec compiled, 1 otherwise. Call it before any other thread of warpd starts. */
int wp_prewarm_run_and_exit(struct wp_app *app, cJSON *doc, int workers);
/* For --prewarm --exit, first thing in main: execs warpd again (same argv) with the malloc tunables
 * that speed NVRTC up, unless GLIBC_TUNABLES is set already (then, or when the exec fails, returns). */
void wp_prewarm_exec_tuned(char **argv);

#endif
