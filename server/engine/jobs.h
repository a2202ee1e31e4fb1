/* jobs.h — asynchronous jobs: any POST endpoint's body, queued now and run later on the jobs' own
 * threads (never the HTTP threads), with state, progress, times, the result, cancel and a TTL.
 * A job runs the endpoint's own handler with a synthesized wp_req (body = the inner request), so
 * every POST route marked WP_ROUTE_WORK is a job kind — its path after "/v1/" — with no code here.
 * Owns: wp_jobs (the job table, the FIFO queue, the workers, the reaper). Knows nothing of what a
 * kind does; api_jobs.c is its HTTP face.
 *
 * States: queued -> running -> done | failed, and queued -> cancelled. A running job whose cancel
 * is requested runs on (a handler may poll wp_job_cancelled and stop early), then ends cancelled
 * and its result is dropped. "done" means the handler answered 2xx; "failed" any other status.
 *
 * Owners and turns: a job records who submitted it (users.h; NULL: the daemon) and runs as them; only
 * they or an admin see it (anyone else: 404 "unknown_job", as an id never made). Queued jobs are taken
 * round-robin by owner (http/fairq.h), and each records its turn ("dispatch": the how-many-th job a
 * worker took), so who ran when can be read back. A user's jobs quota counts their jobs queued or
 * running: 429 "quota_jobs" (field "jobs") beyond it. */
#ifndef WP_JOBS_H
#define WP_JOBS_H

#include <cjson/cJSON.h>

#include "http/http.h"
#include "http/users.h"
#include "util/common.h"

#define WP_JOB_ID_LEN 24 /* "j-" + 16 hex digits + NUL, rounded up */

typedef struct wp_jobs wp_jobs; /* opaque */

typedef struct {
    int max_jobs;              /* jobs queued or running at once; beyond, submit fails 503 "queue_full" */
    int workers;               /* job threads */
    double ttl_s;              /* a finished job is forgotten this long after it finishes */
    int max_kept;              /* finished jobs kept at most (oldest forgotten first); 0: 16 x max_jobs */
    uint64_t max_result_bytes; /* bytes of results kept at most (oldest forgotten first); 0: 1 GiB */
} wp_jobs_config;

/* Job kinds come from routes: every POST, WP_ROUTE_WORK, non-prefix route under /v1/. The table
 * and app must outlive the wp_jobs. */
wp_jobs *wp_jobs_open(const wp_jobs_config *cfg, const wp_route *routes, void *app, wp_err *err);
/* Stops the workers after the jobs they are running, forgets queued ones, frees everything. */
void wp_jobs_close(wp_jobs *j);

/* Queues `request` (JSON text, copied: the handler's body) for the kind. 400 "bad_kind" (field
 * "kind") for a kind no route has; 503 "queue_full" when max_jobs are queued or running. On
 * success id_out gets the id and *view (if view) the new job's JSON, as wp_jobs_view. peer_local: the
 * submitting client is on this machine (the job's request says so to its handler: /v1/shm's check). */
int wp_jobs_submit(wp_jobs *j, const wp_user *who, const char *kind, const char *request, size_t request_len,
                   bool peer_local, char id_out[WP_JOB_ID_LEN], cJSON **view, wp_err *err);
/* {"id","kind","state","progress","created","started","finished","queue_ms","run_ms",
 *  "cancel_requested", and once finished "status" + "result" (done) or "error" (failed)};
 * with_result false leaves result and error out (listings). 404 "unknown_job". */
cJSON *wp_jobs_view(wp_jobs *j, const wp_user *who, const char *id, bool with_result, wp_err *err);
/* Queued: cancelled now. Running: cancel requested (*was_running set). Finished: forgotten
 * (*forgotten set). Returns the job's view after the change, or NULL with 404 "unknown_job". */
cJSON *wp_jobs_cancel(wp_jobs *j, const wp_user *who, const char *id, bool *was_running, bool *forgotten, wp_err *err);
/* {"jobs":[view without result...], "count", "queued", "running"}; state_filter NULL for all. */
cJSON *wp_jobs_list(wp_jobs *j, const wp_user *who, const char *state_filter, wp_err *err);
/* The kinds as a JSON array of strings. */
cJSON *wp_jobs_kinds(const wp_jobs *j);

typedef struct {
    int queued, running, done, failed, cancelled; /* jobs held now, by state */
    uint64_t submitted, rejected_full, expired;   /* since start */
    int max_jobs, workers;
    double ttl_s;
} wp_jobs_stats;
void wp_jobs_stats_get(wp_jobs *j, wp_jobs_stats *out);

/* For handlers: no-ops (false) when req is not an async job's. progress is clamped to 0..1 and
 * only moves forward. A handler that polls wp_job_cancelled may return early with any response:
 * it is dropped. */
void wp_job_progress(const wp_req *req, double fraction);
bool wp_job_cancelled(const wp_req *req);

#endif
