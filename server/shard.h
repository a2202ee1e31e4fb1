/* shard.h — data-parallel jobs over a sharded buffer (buffer.h): device_reduce over every part at
 * once with the partials combined on the host in part order, and device_scan with per-part totals,
 * their exclusive scan and a carry-in per part (shard.c says how). wp_reduce_run calls it for a job
 * whose input is sharded; any thread may. */
#ifndef WP_SHARD_H
#define WP_SHARD_H

#include "reduce.h"

struct wp_app;

/* job->in is sharded. Same contract as wp_reduce_run: 0, -1 with err, or 1 (job->memory_only and a
 * kernel not in the memory cache). A scan's result (res->out, engine-owned unless job->out) is sharded
 * like the input; a job->out that is not is filled through the host. */
int wp_shard_run(struct wp_app *app, const wp_reduce_job *job, wp_reduce_result *res, wp_err *err);

#endif
