/* batch_exec.h — what a batch runs: the glue between the handlers (api_warp.c, api_reduce.c), the
 * batcher (batch.h) and the backends. A handler hands in one job; it is queued by its kernel key,
 * and its batch runs as one backend call: on cuda one upload, one launch and one download for all of
 * its jobs (batch_warp.c: the requests' warps side by side in one grid; batch_reduce.c: a segmented
 * launch of the kernel's _batch entry, block b running its job's block exactly as alone), on emu the
 * jobs one after the other inside the one call. A job's result is bit for bit what it gives alone;
 * a batch of one runs the job's own path, unchanged.
 *
 * Threads: every call here may be made from any thread and blocks until the job has run (batch.h
 * says for how long at most). A GPU job reaches them on a worker (HTTP threads defer it, unless
 * --inline-gpu), so followers wait on workers; that cannot deadlock: each batch's leader is one of
 * its own waiting callers, and a device's stream (cuda_op_begin) is taken only inside one backend
 * call, never held while a job waits in a queue. Queues are per device (owner: the placed device's
 * backend), so a batch runs on one device, with that device's kernel and memory (the caller places
 * the job first; a sharded input never batches). wp_batch_mem_* are called by the batch runs
 * (leaders' threads).
 * Owns: wp_batch_mem (idle device memory of batched launches, per backend: with several devices,
 * each device's buffers are its own). */
#ifndef WP_BATCH_EXEC_H
#define WP_BATCH_EXEC_H

#include "backend/backend.h"
#include "backend/buffer.h"
#include "reduce.h"

struct wp_app;

#define WP_BATCH_INPUT_MAX (64u << 10) /* /v1/reduce, /v1/scan: bytes of input a batched job may have */

/* ---- /v1/warp (batch_warp.c) ----
 * Runs job on be (fn: the loaded kernel on cuda, NULL on emu) as wp_backend_run_warp does, batched
 * with concurrent jobs of the same kernel and run-time scalars. *size gets the batch's size. no_wait:
 * the caller is an HTTP thread (it never waits out --batch-window-us, wp_batch_job.no_wait). */
int wp_batch_run_warp(struct wp_app *app, wp_backend *be, void *fn, const wp_spec *s, const wp_warp_job *job,
                      wp_warp_result *res, wp_run_timing *t, bool no_wait, int *size, wp_err *err);

/* A warp job's time in the batcher (or a hand-over) that no other field holds, from elapsed_us: less the
 * device's run (t->device_us when untimed, else the timed steps); never below 0, to the ns. */
double wp_batch_warp_own_us(const wp_run_timing *t, double elapsed_us);

/* The same handed to the batcher's runners (see wp_batch_hand_reduce below: 1, nothing done, or 0 and
 * done(ctx, rc, err) once it has run; job, res, t, size and room must stay put until then). */
typedef bool (*wp_batch_park_fn)(void *ctx);
typedef void (*wp_batch_done_fn)(void *ctx, int rc, const wp_err *err);
typedef struct {
    wp_batch_park_fn park;
    wp_batch_done_fn done;
    void *ctx;
} wp_batch_hand_hooks;
int wp_batch_hand_warp(struct wp_app *app, wp_backend *be, void *fn, const wp_spec *s, const wp_warp_job *job,
                       wp_warp_result *res, wp_run_timing *t, int *size, const wp_batch_hand_hooks *hooks, void *room);
/* The room a hand-over keeps its state in while the runners have it: the caller's memory, at least this
 * many bytes, aligned as malloc aligns. The caller allocates it and gives it back once done has
 * returned, on its own thread: glibc's malloc takes the owning thread's arena lock for a block that
 * another thread frees, which the HTTP threads and the runners would contend for on every job. */
size_t wp_batch_hand_warp_room(void);
size_t wp_batch_hand_reduce_room(void);

/* ---- /v1/reduce, /v1/scan (batch_reduce.c) ----
 * A job with its input on the host (in_host: n packed elements) or in job.in (a buffer on be), and,
 * for segmented_reduce, its offsets on the host (groups + 1). Results: res as wp_reduce_run gives
 * them; array families' results are downloaded into out_host (plan.out_bytes, caller-allocated),
 * unless job.out names a buffer (then the job runs alone). upload_us/download_us: what the job's share
 * of the copies cost (the whole batch's copies, which it waited for). */
typedef struct {
    wp_reduce_job job;
    const void *in_host;
    const void *in2_host; /* a map over y: the second input on the host (n elements), or in job.in2; runs alone */
    const uint64_t *offsets_host;
    uint8_t *out_host;
    wp_reduce_result res;
    double upload_us, download_us;
    int size; /* the batch's size */
    /* in: the job asks for no timing events (a request without "profile"); out: whether its run was
     * untimed (cuda, batched: res.kernel_us and the two copies' times were not measured) */
    bool untimed;
    double device_us; /* cuda, batched: the batch's round trip on the host's clock (wp_run_timing) */
    double queue_us;  /* batched: its time in the batcher outside the kernel's lookup and the device's run: the
                       * entry, the wait in the batch queue, the batch's bookkeeping */
    /* in (may be NULL): the caller's own work while the device runs the job, on its thread, when a batch
     * of the job alone runs there (not handed); res's facts (strategy, deterministic, block, grid, the
     * kernel's key, hash and source) are set by then, its values not. Called at most once (a resident
     * that did not take the job, then a launch, call it once between them). */
    void (*meanwhile)(void *ctx);
    void *meanwhile_ctx;
} wp_batch_reduce;

/* Runs the job, batched when it is small (at most WP_BATCH_INPUT_MAX bytes of input, no output buffer).
 * Returns as wp_reduce_run: 0, -1 with err, or 1 (job.memory_only: a kernel is not in memory; nothing
 * ran). On success the caller frees res with wp_reduce_result_free. */
int wp_batch_run_reduce(struct wp_app *app, wp_backend *be, wp_batch_reduce *j, wp_err *err);

/* The job's time in the batcher that no other field holds (its queue_us), from elapsed_us, its time from
 * the start of its entry's making to its batch's end: less its kernel's lookup (res.key_us, cache_us,
 * load_us) and the device's run (device_us when untimed, else the timed steps); never below 0, to the ns. */
double wp_batch_reduce_own_us(const wp_batch_reduce *j, double elapsed_us);

/* Hands a small GPU job to the batcher's runners instead (wp_batcher_hand): the caller, an HTTP thread,
 * does not wait for it. Returns 1 when the job cannot be handed (not on a GPU, not batchable, no
 * runners, or park(ctx) said no), and nothing was done: run it with wp_batch_run_reduce. Else 0: park(ctx)
 * was called first, then the job queued, and done(ctx, rc, err) is called once it has run, on a runner
 * (or on this thread when it could not be queued): rc as wp_batch_run_reduce returns. The job and room
 * (wp_batch_hand_reduce_room bytes, the caller's) must stay where they are until done. */
int wp_batch_hand_reduce(struct wp_app *app, wp_backend *be, wp_batch_reduce *j, wp_batch_park_fn park,
                         wp_batch_done_fn done, void *ctx, void *room);

/* ---- device memory of batched launches ---- */
typedef struct wp_batch_mem wp_batch_mem;
wp_batch_mem *wp_batch_mem_open(void);
void wp_batch_mem_close(wp_batch_mem *m); /* before the backends close */
/* A buffer of at least `need` bytes on b (an idle one, or a new one); give it back with put (ok:
 * reusable) — a buffer of a launch that failed is freed. */
wp_buf *wp_batch_mem_take(wp_batch_mem *m, wp_backend *b, size_t need, wp_err *err);
void wp_batch_mem_put(wp_batch_mem *m, wp_buf *buf, bool ok);

#endif
