/* shard.h — data-parallel jobs over a sharded buffer (buffer.h): device_reduce over every part at
 * once with the partials combined on the host in part order, and device_scan with per-part totals,
 * their exclusive scan and a carry-in per part (shard.c says how). wp_reduce_run is the engine's entry
 * for every data-parallel job: a sharded input runs here, the rest on one device (reduce.h's
 * wp_reduce_run_local). Any thread. */
#ifndef WP_SHARD_H
#define WP_SHARD_H

#include "reduce.h"

struct wp_app;

/* Runs the job: over its parts' devices when job->in is sharded (a scan's result, engine-owned unless
 * job->out, is sharded like the input; a job->out that is not is filled through the host), else on b (app->cuda or
 * app->emu; a buffer must live on b). 409 for a strategy the device cannot run (redux below sm_80); 400 for an
 * exclusive scan of an expression with no init. On failure nothing is left allocated. Returns 0, -1 with err, or 1
 * (job->memory_only: the kernel is not in the memory cache; nothing was run or allocated). */
int wp_reduce_run(struct wp_app *app, wp_backend *b, const wp_reduce_job *job, wp_reduce_result *res, wp_err *err);

#endif
