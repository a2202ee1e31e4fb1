/* jobs.c — asynchronous jobs (see jobs.h): a table of jobs in creation order, a FIFO of queued ones,
 * worker threads that run a job by calling its route's handler with a synthesized request, and a
 * reaper that forgets finished jobs after their TTL.
 * Owns: wp_jobs and every wp_job in it. One mutex guards the table; a job's request body and its
 * handler run outside it, and a running job is never freed (DELETE only marks it). */
#include "jobs.h"

#include <stddef.h>

#include "http/fairq.h"
#include "util/on_behalf.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define WP_JOBS_MAX_KINDS 32            /* POST work routes taken as kinds */
#define WP_JOBS_KEEP_FACTOR 16          /* default max_kept = this x max_jobs */
#define WP_JOBS_KEEP_BYTES (1ull << 30) /* default max_result_bytes */
#define WP_JOBS_REAP_PERIOD_MS 1000     /* the reaper looks at least this often */
#define WP_JOBS_PROGRESS_SCALE 1000000u /* progress is held as millionths */
#define WP_JOBS_RETRY_AFTER_S "1"

typedef enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_FAILED, JOB_CANCELLED } job_state;
static const char *const state_names[] = {"queued", "running", "done", "failed", "cancelled"};

typedef struct wp_job {
    struct wp_job *prev, *next; /* the table, creation order */
    wp_fair_node qnode;         /* the queue, while queued (fairq.h: in turn by owner) */
    const wp_user *user;        /* who submitted it: its request runs as them (users.h keeps it valid) */
    char owner[WP_USER_NAME_MAX + 1];
    uint64_t dispatch; /* its turn: the how-many-th job a worker took (0: not yet) */
    char id[WP_JOB_ID_LEN];
    const wp_route *route;
    char *body; /* the inner request as JSON text, NUL-terminated */
    size_t body_len;
    bool peer_local; /* the submitting client was on this machine (wp_req.peer_local) */
    job_state state;
    atomic_bool cancel_requested;
    atomic_uint progress;                         /* millionths */
    double created, started, finished;            /* Unix time (s), 0 = not yet */
    uint64_t created_ns, started_ns, finished_ns; /* monotonic, for durations and the TTL */
    int status;                                   /* the handler's HTTP status, once finished */
    char *result;                                 /* the handler's body (JSON text), once finished */
    size_t result_len;
    const char *result_type;
} wp_job;

struct wp_jobs {
    wp_jobs_config cfg;
    void *app;
    const wp_route *kinds[WP_JOBS_MAX_KINDS];
    int nkinds;

    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* a job was queued, or stopping */
    pthread_cond_t reap_cv; /* stopping */
    wp_job *head, *tail;    /* the table */
    wp_fairq queue;         /* queued jobs, taken round-robin by owner */
    int count[5];           /* jobs by state */
    uint64_t submitted, rejected_full, expired, id_counter;
    uint64_t result_bytes; /* bodies of finished jobs' results */
    bool stopping;
    pthread_t *workers;
    int workers_started;
    pthread_t reaper;
    bool reaper_started;
};

/* ---------- small helpers ---------- */

/* RFC 3339 UTC with milliseconds: "2025-01-31T12:34:56.789Z". */
static cJSON *time_json(double t) {
    if (t <= 0) return cJSON_CreateNull();
    time_t secs = (time_t)t;
    struct tm tm;
    gmtime_r(&secs, &tm);
    char buf[80]; /* ample for any int fields: keeps -Wformat-truncation quiet */
    int ms = (int)((t - (double)secs) * 1000.0);
    if (ms > 999) ms = 999;
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
    return cJSON_CreateString(buf);
}

/* Unguessable ids, so one client cannot walk another's jobs. Called with j->mu held. */
static void make_id(wp_jobs *j, char out[WP_JOB_ID_LEN]) {
    uint64_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) { /* no entropy yet: still unique */
        r = wp_now_ns() ^ (++j->id_counter * 0x9E3779B97F4A7C15ull);
        r ^= r >> 31, r *= 0xBF58476D1CE4E5B9ull, r ^= r >> 27;
    }
    snprintf(out, WP_JOB_ID_LEN, "j-%016llx", (unsigned long long)r);
}

/* The job id that who may see: another user's is as unknown as an id never made. */
static wp_job *find(wp_jobs *j, const wp_user *who, const char *id) {
    for (wp_job *job = j->head; job; job = job->next)
        if (!strcmp(job->id, id)) return wp_user_sees(who, job->owner) ? job : NULL;
    return NULL;
}

static wp_job *of_node(wp_fair_node *n) { return n ? (wp_job *)(void *)((char *)n - offsetof(wp_job, qnode)) : NULL; }

/* Jobs of owner queued or running. With j->mu. */
static uint64_t owner_active(const wp_jobs *j, const char *owner) {
    uint64_t n = 0;
    for (const wp_job *job = j->head; job; job = job->next)
        n += (job->state == JOB_QUEUED || job->state == JOB_RUNNING) && !strcmp(job->owner, owner);
    return n;
}

static bool finished(const wp_job *job) { return job->state >= JOB_DONE; }

static void set_state(wp_jobs *j, wp_job *job, job_state s) {
    j->count[job->state]--;
    job->state = s;
    j->count[s]++;
}

static void job_free(wp_job *job) {
    free(job->body);
    free(job->result);
    free(job);
}

static void unlink_job(wp_jobs *j, wp_job *job) {
    if (job->prev)
        job->prev->next = job->next;
    else
        j->head = job->next;
    if (job->next)
        job->next->prev = job->prev;
    else
        j->tail = job->prev;
    j->count[job->state]--;
    j->result_bytes -= job->result_len;
}

static void queue_remove(wp_jobs *j, wp_job *job) { wp_fairq_remove(&j->queue, &job->qnode); }

/* Stamps the end of a job (its state is set by the caller). */
static void finish(wp_job *job, int status) {
    job->finished = wp_unix_now();
    job->finished_ns = wp_now_ns();
    job->status = status;
    atomic_store(&job->progress, WP_JOBS_PROGRESS_SCALE);
}

/* Forgets finished jobs past their TTL, and the oldest finished ones while more than max_kept are
 * held or their results pass max_result_bytes. With j->mu. */
static void reap_locked(wp_jobs *j) {
    uint64_t now = wp_now_ns(), ttl_ns = (uint64_t)(j->cfg.ttl_s * 1e9);
    int kept = j->count[JOB_DONE] + j->count[JOB_FAILED] + j->count[JOB_CANCELLED];
    for (wp_job *job = j->head, *next; job; job = next) {
        next = job->next;
        if (!finished(job)) continue;
        if (now - job->finished_ns >= ttl_ns || kept > j->cfg.max_kept || j->result_bytes > j->cfg.max_result_bytes) {
            unlink_job(j, job);
            job_free(job);
            j->expired++;
            kept--;
        }
    }
}

/* ---------- the view ---------- */

static cJSON *view_locked(const wp_job *job, bool with_result) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", job->id);
    cJSON_AddStringToObject(o, "kind", job->route->path + 4);
    cJSON_AddStringToObject(o, "owner", job->owner);
    cJSON_AddStringToObject(o, "state", state_names[job->state]);
    cJSON_AddNumberToObject(o, "progress", (double)atomic_load(&job->progress) / WP_JOBS_PROGRESS_SCALE);
    char location[64];
    snprintf(location, sizeof location, "/v1/jobs/%s", job->id);
    cJSON_AddStringToObject(o, "location", location);
    cJSON_AddItemToObject(o, "created", time_json(job->created));
    cJSON_AddItemToObject(o, "started", time_json(job->started));
    cJSON_AddItemToObject(o, "finished", time_json(job->finished));
    uint64_t now = wp_now_ns();
    uint64_t queue_end = job->started_ns ? job->started_ns : job->finished_ns ? job->finished_ns : now;
    cJSON_AddNumberToObject(o, "queue_ms", (double)(queue_end - job->created_ns) / 1e6);
    if (job->started_ns)
        cJSON_AddNumberToObject(o, "run_ms",
                                (double)((job->finished_ns ? job->finished_ns : now) - job->started_ns) / 1e6);
    cJSON_AddBoolToObject(o, "cancel_requested", atomic_load(&job->cancel_requested));
    if (job->dispatch) cJSON_AddNumberToObject(o, "dispatch", (double)job->dispatch);
    if (!finished(job) || job->state == JOB_CANCELLED || !with_result) {
        if (finished(job) && job->status) cJSON_AddNumberToObject(o, "status", job->status);
        return o;
    }
    cJSON_AddNumberToObject(o, "status", job->status);
    bool is_json = job->result_type && !strncmp(job->result_type, "application/json", 16);
    if (job->state == JOB_FAILED && is_json) { /* {"error":{...}} -> "error": {...} */
        cJSON *body = cJSON_ParseWithLength(job->result, job->result_len);
        cJSON *e = cJSON_DetachItemFromObjectCaseSensitive(body, "error");
        cJSON_AddItemToObject(o, "error", e ? e : cJSON_CreateNull());
        cJSON_Delete(body);
    } else if (is_json) {
        cJSON_AddRawToObject(o, job->state == JOB_DONE ? "result" : "error", job->result ? job->result : "null");
    } else { /* not expected: a synthesized request accepts JSON only */
        cJSON_AddStringToObject(o, "result_type", job->result_type ? job->result_type : "");
        cJSON_AddNumberToObject(o, "result_bytes", (double)job->result_len);
    }
    return o;
}

/* ---------- workers ---------- */

static void run_job(wp_jobs *j, wp_job *job) {
    wp_req req = {
        .method = "POST",
        .path = job->route->path,
        .content_type = "application/json",
        .accept = "application/json",
        .body = job->body,
        .body_len = job->body_len,
        .conn = NULL,
        .t_start_ns = wp_now_ns(),
        .job = job,
        .peer_local = job->peer_local,
        .user = job->user,
    };
    wp_resp resp = {0};
    wp_on_behalf_set(wp_user_name(job->user)); /* its owner's turn at a device's lanes */
    job->route->fn(j->app, &req, &resp);
    wp_on_behalf_set(NULL);

    pthread_mutex_lock(&j->mu);
    if (atomic_load(&job->cancel_requested)) {
        finish(job, 0);
        set_state(j, job, JOB_CANCELLED);
        free(resp.body);
    } else {
        job_state s = resp.status >= 200 && resp.status < 300 ? JOB_DONE : JOB_FAILED;
        finish(job, resp.status ? resp.status : 500);
        set_state(j, job, s);
        job->result = resp.body;
        job->result_len = resp.body_len;
        j->result_bytes += resp.body_len;
        job->result_type = resp.content_type ? resp.content_type : "application/json";
    }
    free(job->body); /* the request is not shown again; its memory can go now */
    job->body = NULL;
    pthread_mutex_unlock(&j->mu);
}

static void *worker_main(void *arg) {
    wp_jobs *j = arg;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        while (!j->queue.depth && !j->stopping) pthread_cond_wait(&j->work_cv, &j->mu);
        if (j->stopping) break;
        wp_job *job = of_node(wp_fairq_pop(&j->queue)); /* the next owner in turn */
        job->dispatch = j->queue.taken;
        set_state(j, job, JOB_RUNNING);
        job->started = wp_unix_now();
        job->started_ns = wp_now_ns();
        pthread_mutex_unlock(&j->mu);
        run_job(j, job);
        pthread_mutex_lock(&j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

static void *reaper_main(void *arg) {
    wp_jobs *j = arg;
    pthread_mutex_lock(&j->mu);
    while (!j->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long period_ms = WP_JOBS_REAP_PERIOD_MS;
        if (j->cfg.ttl_s * 1000.0 / 2 < period_ms) period_ms = (long)(j->cfg.ttl_s * 1000.0 / 2) + 1;
        ts.tv_sec += period_ms / 1000;
        ts.tv_nsec += (period_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&j->reap_cv, &j->mu, &ts);
        if (!j->stopping) reap_locked(j);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* ---------- open / close ---------- */

wp_jobs *wp_jobs_open(const wp_jobs_config *cfg, const wp_route *routes, void *app, wp_err *err) {
    if (!cfg || cfg->max_jobs < 1 || cfg->workers < 1 || cfg->ttl_s < 0) {
        WP_FAIL(err, 500, "internal", "", "wp_jobs_open needs max_jobs >= 1, workers >= 1, ttl >= 0");
        return NULL;
    }
    wp_jobs *j = calloc(1, sizeof *j);
    if (!j) {
        WP_FAIL(err, 500, "no_memory", "", "out of memory");
        return NULL;
    }
    j->cfg = *cfg;
    if (j->cfg.max_kept <= 0) j->cfg.max_kept = WP_JOBS_KEEP_FACTOR * cfg->max_jobs;
    if (!j->cfg.max_result_bytes) j->cfg.max_result_bytes = WP_JOBS_KEEP_BYTES;
    j->app = app;
    for (const wp_route *rt = routes; rt && rt->method; rt++) {
        if (strcmp(rt->method, "POST") || !(rt->flags & WP_ROUTE_WORK) || (rt->flags & WP_ROUTE_PREFIX) ||
            strncmp(rt->path, "/v1/", 4) || !rt->path[4] || j->nkinds == WP_JOBS_MAX_KINDS)
            continue;
        j->kinds[j->nkinds++] = rt;
    }
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->work_cv, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->reap_cv, &ca);
    pthread_condattr_destroy(&ca);
    j->workers = calloc((size_t)cfg->workers, sizeof *j->workers);
    bool ok = j->workers != NULL;
    while (ok && j->workers_started < cfg->workers) {
        ok = pthread_create(&j->workers[j->workers_started], NULL, worker_main, j) == 0;
        if (ok) pthread_setname_np(j->workers[j->workers_started++], "wp-job");
    }
    if (ok) ok = j->reaper_started = pthread_create(&j->reaper, NULL, reaper_main, j) == 0;
    if (ok) pthread_setname_np(j->reaper, "wp-job-reaper");
    if (!ok) {
        WP_FAIL(err, 500, "internal", "", "cannot start the job threads");
        wp_jobs_close(j);
        return NULL;
    }
    return j;
}

void wp_jobs_close(wp_jobs *j) {
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    j->stopping = true;
    pthread_cond_broadcast(&j->work_cv);
    pthread_cond_broadcast(&j->reap_cv);
    pthread_mutex_unlock(&j->mu);
    for (int i = 0; i < j->workers_started; i++) pthread_join(j->workers[i], NULL);
    if (j->reaper_started) pthread_join(j->reaper, NULL);
    for (wp_job *job = j->head, *next; job; job = next) {
        next = job->next;
        job_free(job);
    }
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->work_cv);
    pthread_cond_destroy(&j->reap_cv);
    free(j->workers);
    free(j);
}

/* ---------- operations ---------- */

int wp_jobs_submit(wp_jobs *j, const wp_user *who, const char *kind, const char *request, size_t request_len,
                   bool peer_local, char id_out[WP_JOB_ID_LEN], cJSON **view, wp_err *err) {
    const wp_route *route = NULL;
    for (int i = 0; i < j->nkinds && !route; i++)
        if (!strcmp(j->kinds[i]->path + 4, kind)) route = j->kinds[i];
    if (!route) {
        char names[256] = "";
        size_t used = 0;
        for (int i = 0; i < j->nkinds && used < sizeof names; i++)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", j->kinds[i]->path + 4);
        return WP_FAIL(err, 400, "bad_kind", "kind", "kind \"%.40s\" is not one of: %s", kind, names);
    }
    wp_job *job = calloc(1, sizeof *job);
    char *body = malloc(request_len + 1);
    if (body) memcpy(body, request, request_len), body[request_len] = 0;
    if (!job || !body) {
        free(job);
        free(body);
        return WP_FAIL(err, 500, "no_memory", "", "out of memory");
    }
    job->route = route;
    job->body = body;
    job->body_len = request_len;
    job->peer_local = peer_local;
    job->user = who;
    wp_user_name_copy(who, job->owner);
    uint64_t mine = wp_user_quota(who)->jobs;
    job->created = wp_unix_now();
    job->created_ns = wp_now_ns();
    job->state = JOB_QUEUED;

    pthread_mutex_lock(&j->mu);
    if (j->stopping || j->count[JOB_QUEUED] + j->count[JOB_RUNNING] >= j->cfg.max_jobs) {
        bool full = !j->stopping;
        if (full) j->rejected_full++;
        pthread_mutex_unlock(&j->mu);
        job_free(job);
        if (!full) return WP_FAIL(err, 503, "shutting_down", "", "the server is stopping");
        return WP_FAIL(err, 503, "queue_full", "", "%d jobs are queued or running (--max-jobs); retry shortly",
                       j->cfg.max_jobs);
    }
    if (mine && owner_active(j, job->owner) >= mine) {
        j->rejected_full++;
        pthread_mutex_unlock(&j->mu);
        WP_FAIL(err, 429, "quota_jobs", "jobs", "%s has %llu jobs queued or running, their jobs quota; retry shortly",
                job->owner, (unsigned long long)mine);
        job_free(job);
        return -1;
    }
    do make_id(j, job->id);
    while (find(j, NULL, job->id));
    job->prev = j->tail;
    if (j->tail)
        j->tail->next = job;
    else
        j->head = job;
    j->tail = job;
    wp_fairq_push(&j->queue, &job->qnode, job->owner);
    j->count[JOB_QUEUED]++;
    j->submitted++;
    memcpy(id_out, job->id, WP_JOB_ID_LEN);
    if (view) *view = view_locked(job, false);
    pthread_cond_signal(&j->work_cv);
    pthread_mutex_unlock(&j->mu);
    return 0;
}

cJSON *wp_jobs_view(wp_jobs *j, const wp_user *who, const char *id, bool with_result, wp_err *err) {
    pthread_mutex_lock(&j->mu);
    reap_locked(j);
    wp_job *job = find(j, who, id);
    cJSON *o = job ? view_locked(job, with_result) : NULL;
    pthread_mutex_unlock(&j->mu);
    if (!job) WP_FAIL(err, 404, "unknown_job", "id", "no job \"%.40s\" (never made, or forgotten after its TTL)", id);
    return o;
}

cJSON *wp_jobs_cancel(wp_jobs *j, const wp_user *who, const char *id, bool *was_running, bool *forgotten, wp_err *err) {
    *was_running = *forgotten = false;
    pthread_mutex_lock(&j->mu);
    reap_locked(j);
    wp_job *job = find(j, who, id);
    cJSON *o = NULL;
    if (job && job->state == JOB_QUEUED) {
        queue_remove(j, job);
        atomic_store(&job->cancel_requested, true);
        finish(job, 0);
        set_state(j, job, JOB_CANCELLED);
        free(job->body);
        job->body = NULL;
        o = view_locked(job, false);
    } else if (job && job->state == JOB_RUNNING) {
        atomic_store(&job->cancel_requested, true);
        *was_running = true;
        o = view_locked(job, false);
    } else if (job) {
        o = view_locked(job, false);
        cJSON_AddBoolToObject(o, "deleted", 1);
        unlink_job(j, job);
        job_free(job);
        *forgotten = true;
    }
    pthread_mutex_unlock(&j->mu);
    if (!job) WP_FAIL(err, 404, "unknown_job", "id", "no job \"%.40s\" (never made, or forgotten after its TTL)", id);
    return o;
}

cJSON *wp_jobs_list(wp_jobs *j, const wp_user *who, const char *state_filter, wp_err *err) {
    int want = -1;
    if (state_filter) {
        for (int s = 0; s < (int)WP_ARRAY_LEN(state_names); s++)
            if (!strcmp(state_filter, state_names[s])) want = s;
        if (want < 0) {
            WP_FAIL(err, 400, "bad_value", "state",
                    "state \"%.20s\" is not one of queued, running, done, failed, cancelled", state_filter);
            return NULL;
        }
    }
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "jobs");
    pthread_mutex_lock(&j->mu);
    reap_locked(j);
    int n = 0;
    for (const wp_job *job = j->head; job; job = job->next) {
        if ((want >= 0 && (int)job->state != want) || !wp_user_sees(who, job->owner)) continue;
        cJSON_AddItemToArray(arr, view_locked(job, false));
        n++;
    }
    cJSON_AddNumberToObject(o, "count", n);
    cJSON_AddNumberToObject(o, "queued", j->count[JOB_QUEUED]);
    cJSON_AddNumberToObject(o, "running", j->count[JOB_RUNNING]);
    cJSON_AddNumberToObject(o, "max_jobs", j->cfg.max_jobs);
    pthread_mutex_unlock(&j->mu);
    return o;
}

cJSON *wp_jobs_kinds(const wp_jobs *j) {
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < j->nkinds; i++) cJSON_AddItemToArray(arr, cJSON_CreateString(j->kinds[i]->path + 4));
    return arr;
}

void wp_jobs_stats_get(wp_jobs *j, wp_jobs_stats *out) {
    memset(out, 0, sizeof *out);
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    out->queued = j->count[JOB_QUEUED];
    out->running = j->count[JOB_RUNNING];
    out->done = j->count[JOB_DONE];
    out->failed = j->count[JOB_FAILED];
    out->cancelled = j->count[JOB_CANCELLED];
    out->submitted = j->submitted;
    out->rejected_full = j->rejected_full;
    out->expired = j->expired;
    pthread_mutex_unlock(&j->mu);
    out->max_jobs = j->cfg.max_jobs;
    out->workers = j->cfg.workers;
    out->ttl_s = j->cfg.ttl_s;
}

/* ---------- for handlers ---------- */

void wp_job_progress(const wp_req *req, double fraction) {
    wp_job *job = req ? req->job : NULL;
    if (!job) return;
    if (!(fraction >= 0)) fraction = 0; /* NaN too */
    if (fraction > 1) fraction = 1;
    unsigned v = (unsigned)(fraction * WP_JOBS_PROGRESS_SCALE), cur = atomic_load(&job->progress);
    while (v > cur && !atomic_compare_exchange_weak(&job->progress, &cur, v)) {
    }
}

bool wp_job_cancelled(const wp_req *req) {
    const wp_job *job = req ? req->job : NULL;
    return job && atomic_load(&job->cancel_requested);
}
