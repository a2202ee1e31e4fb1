/* test_jobs.c — server/engine/jobs.c without HTTP: kinds taken from a route table, results and errors in the
 * view, FIFO order, the max_jobs bound (503 "queue_full"), cancelling queued and running jobs,
 * progress, list filters, forgetting, the TTL and max_kept reaping, and a clean close with jobs
 * queued and running (ASan checks nothing leaks). Handlers block on a gate, so every state is
 * reached on purpose, not by timing. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "engine/jobs.h"
#include "t.h"

#define WAIT_MS 10000 /* longest wait for a state before the test gives up */

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---------- the gate: h_gate holds until a permit is given ---------- */

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_permits, gate_held;

static void gate_open(int n) {
    pthread_mutex_lock(&gate_mu);
    gate_permits += n;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

static bool wait_held(int n) {
    for (int waited = 0; waited < WAIT_MS; waited += 5) {
        pthread_mutex_lock(&gate_mu);
        int h = gate_held;
        pthread_mutex_unlock(&gate_mu);
        if (h >= n) return true;
        sleep_ms(5);
    }
    return false;
}

static void h_gate(void *app, const wp_req *req, wp_resp *resp) {
    (void)app;
    wp_job_progress(req, 0.5);
    wp_job_progress(req, 0.25); /* progress never goes back */
    pthread_mutex_lock(&gate_mu);
    gate_held++;
    while (gate_permits == 0) pthread_cond_wait(&gate_cv, &gate_mu);
    gate_permits--;
    gate_held--;
    pthread_mutex_unlock(&gate_mu);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "saw_cancel", wp_job_cancelled(req));
    wp_resp_json(resp, 200, o);
}

static void h_echo(void *app, const wp_req *req, wp_resp *resp) {
    (void)app;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "echo", cJSON_ParseWithLength(req->body, req->body_len));
    cJSON_AddStringToObject(o, "path", req->path);
    cJSON_AddBoolToObject(o, "has_job", req->job != NULL);
    cJSON_AddBoolToObject(o, "no_query", wp_req_query(req, "x") == NULL);
    cJSON_AddBoolToObject(o, "terminated", req->body[req->body_len] == 0);
    wp_resp_json(resp, 200, o);
}

static void h_fail(void *app, const wp_req *req, wp_resp *resp) {
    (void)app, (void)req;
    wp_err e;
    WP_FAIL(&e, 422, "nope", "thing", "this kind always fails");
    wp_resp_error(resp, &e);
}

static const wp_route routes[] = {
    {"GET", "/v1/health", h_echo, WP_ROUTE_INLINE, NULL},  /* not POST: no kind */
    {"POST", "/v1/inline", h_echo, WP_ROUTE_INLINE, NULL}, /* not work: no kind */
    {"POST", "/v1/echo", h_echo, WP_ROUTE_WORK, NULL},
    {"POST", "/v1/gate", h_gate, WP_ROUTE_WORK, NULL},
    {"POST", "/v1/fail", h_fail, WP_ROUTE_WORK, NULL},
    {"POST", "/v1/pre/", h_echo, WP_ROUTE_WORK | WP_ROUTE_PREFIX, NULL}, /* prefix: no kind */
    {"POST", "/other", h_echo, WP_ROUTE_WORK, NULL},                     /* not under /v1/: no kind */
    {NULL, NULL, NULL, 0, NULL},
};

/* ---------- helpers ---------- */

static const char *str(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}
static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static int submit(wp_jobs *j, const char *kind, const char *body, char id[WP_JOB_ID_LEN], wp_err *err) {
    return wp_jobs_submit(j, NULL, kind, body, strlen(body), true, id, NULL, err);
}

/* The view as a client sees it: printed and parsed again (the result is a raw JSON node inside). */
static cJSON *reparse(cJSON *v) {
    char *text = v ? cJSON_PrintUnformatted(v) : NULL;
    cJSON_Delete(v);
    cJSON *out = text ? cJSON_Parse(text) : NULL;
    free(text);
    return out;
}

/* The job's view once its state is `state` (caller deletes it), or NULL after WAIT_MS. */
static cJSON *wait_state(wp_jobs *j, const char *id, const char *state) {
    for (int waited = 0; waited < WAIT_MS; waited += 5) {
        wp_err err = {0};
        cJSON *v = reparse(wp_jobs_view(j, NULL, id, true, &err));
        if (v && !strcmp(str(v, "state"), state)) return v;
        cJSON_Delete(v);
        sleep_ms(5);
    }
    return NULL;
}

static int list_count(wp_jobs *j, const char *state) {
    wp_err err = {0};
    cJSON *l = wp_jobs_list(j, NULL, state, &err);
    int n = l ? (int)num(l, "count") : -1;
    cJSON_Delete(l);
    return n;
}

/* ---------- tests ---------- */

static void test_kinds_and_results(void) {
    T_CASE("kinds and results");
    wp_err err = {0};
    wp_jobs_config cfg = {.max_jobs = 8, .workers = 2, .ttl_s = 600};
    wp_jobs *j = wp_jobs_open(&cfg, routes, NULL, &err);
    CHECK(j != NULL);
    if (!j) return;
    cJSON *kinds = wp_jobs_kinds(j);
    char *text = cJSON_PrintUnformatted(kinds);
    CHECKF(!strcmp(text, "[\"echo\",\"gate\",\"fail\"]"), "kinds %s", text);
    free(text);
    cJSON_Delete(kinds);

    char id[WP_JOB_ID_LEN];
    CHECK(submit(j, "inline", "{}", id, &err) == -1 && err.status == 400 && !strcmp(err.code, "bad_kind") &&
          !strcmp(err.field, "kind"));
    CHECK(submit(j, "pre/", "{}", id, &err) == -1 && err.status == 400);

    cJSON *first = NULL;
    const char *body = "{\"a\":12345678901234567890}"; /* the handler gets this text, not a reprint */
    CHECK(wp_jobs_submit(j, NULL, "echo", body, strlen(body), true, id, &first, &err) == 0);
    CHECK(first && !strcmp(str(first, "state"), "queued") && !strcmp(str(first, "kind"), "echo") &&
          !strncmp(id, "j-", 2) && strlen(id) == 18);
    cJSON_Delete(first);
    cJSON *v = wait_state(j, id, "done");
    CHECK(v != NULL);
    if (v) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(v, "result");
        CHECK(num(v, "status") == 200 && num(v, "progress") == 1);
        CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "started")));
        CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(v, "finished")));
        CHECK(num(v, "run_ms") >= 0 && num(v, "queue_ms") >= 0);
        CHECK(!strcmp(str(r, "path"), "/v1/echo"));
        CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "has_job")));
        CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "no_query")));
        CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "terminated")));
        CHECK(cJSON_GetObjectItemCaseSensitive(r, "echo") != NULL);
        cJSON_Delete(v);
    }
    /* Without the result (listings). */
    v = wp_jobs_view(j, NULL, id, false, &err);
    CHECK(v && !cJSON_GetObjectItemCaseSensitive(v, "result") && num(v, "status") == 200);
    cJSON_Delete(v);

    CHECK(submit(j, "fail", "{}", id, &err) == 0);
    v = wait_state(j, id, "failed");
    CHECK(v != NULL);
    if (v) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(v, "error");
        CHECK(num(v, "status") == 422 && !strcmp(str(e, "code"), "nope") && !strcmp(str(e, "field"), "thing"));
        CHECK(!cJSON_GetObjectItemCaseSensitive(v, "result"));
        cJSON_Delete(v);
    }
    CHECK(list_count(j, NULL) == 2 && list_count(j, "done") == 1 && list_count(j, "failed") == 1);
    CHECK(!wp_jobs_list(j, NULL, "bogus", &err) && err.status == 400 && !strcmp(err.field, "state"));

    /* Forgetting a finished job. */
    bool running, forgotten;
    v = wp_jobs_cancel(j, NULL, id, &running, &forgotten, &err);
    CHECK(v && forgotten && !running && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "deleted")));
    cJSON_Delete(v);
    CHECK(!wp_jobs_view(j, NULL, id, true, &err) && err.status == 404 && !strcmp(err.code, "unknown_job"));
    CHECK(!wp_jobs_cancel(j, NULL, id, &running, &forgotten, &err) && err.status == 404);
    CHECK(!wp_jobs_view(j, NULL, "j-0000000000000000", true, &err) && err.status == 404);
    wp_jobs_close(j);
}

static void test_bound_cancel_progress(void) {
    T_CASE("bound, cancel, progress");
    wp_err err = {0};
    wp_jobs_config cfg = {.max_jobs = 3, .workers = 1, .ttl_s = 600};
    wp_jobs *j = wp_jobs_open(&cfg, routes, NULL, &err);
    CHECK(j != NULL);
    if (!j) return;
    char g1[WP_JOB_ID_LEN], g2[WP_JOB_ID_LEN], g3[WP_JOB_ID_LEN], g4[WP_JOB_ID_LEN], extra[WP_JOB_ID_LEN];
    CHECK(submit(j, "gate", "{}", g1, &err) == 0);
    CHECK(wait_held(1)); /* g1 is running, held at the gate */
    CHECK(submit(j, "gate", "{}", g2, &err) == 0);
    CHECK(submit(j, "gate", "{}", g3, &err) == 0);
    wp_err_clear(&err);
    CHECK(submit(j, "echo", "{}", extra, &err) == -1 && err.status == 503 && !strcmp(err.code, "queue_full"));
    wp_jobs_stats st;
    wp_jobs_stats_get(j, &st);
    CHECK(st.queued == 2 && st.running == 1 && st.rejected_full == 1 && st.submitted == 3);

    cJSON *v = wp_jobs_view(j, NULL, g1, true, &err);
    CHECK(v && !strcmp(str(v, "state"), "running") && num(v, "progress") == 0.5);
    cJSON_Delete(v);

    /* Cancel a queued job: cancelled at once, and its slot is free again. */
    bool running, forgotten;
    v = wp_jobs_cancel(j, NULL, g3, &running, &forgotten, &err);
    CHECK(v && !running && !forgotten && !strcmp(str(v, "state"), "cancelled"));
    cJSON_Delete(v);
    CHECK(submit(j, "gate", "{}", g4, &err) == 0);

    /* Cancel the running one: it runs on, then ends cancelled with no result. */
    v = wp_jobs_cancel(j, NULL, g1, &running, &forgotten, &err);
    CHECK(v && running && !strcmp(str(v, "state"), "running") &&
          cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "cancel_requested")));
    cJSON_Delete(v);
    gate_open(1);
    v = wait_state(j, g1, "cancelled");
    CHECK(v && !cJSON_GetObjectItemCaseSensitive(v, "result") && num(v, "progress") == 1);
    cJSON_Delete(v);

    /* FIFO: g2 runs next, then g4. */
    CHECK(wait_held(1));
    v = wp_jobs_view(j, NULL, g2, true, &err);
    CHECK(v && !strcmp(str(v, "state"), "running"));
    cJSON_Delete(v);
    v = wp_jobs_view(j, NULL, g4, true, &err);
    CHECK(v && !strcmp(str(v, "state"), "queued") && num(v, "progress") == 0);
    cJSON_Delete(v);
    gate_open(2);
    cJSON *d2 = wait_state(j, g2, "done"), *d4 = wait_state(j, g4, "done");
    CHECK(d2 && d4);
    if (d2)
        CHECK(!cJSON_IsTrue(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d2, "result"), "saw_cancel")));
    cJSON_Delete(d2);
    cJSON_Delete(d4);
    CHECK(list_count(j, "cancelled") == 2 && list_count(j, "done") == 2 && list_count(j, "queued") == 0);
    wp_jobs_stats_get(j, &st);
    CHECK(st.cancelled == 2 && st.done == 2 && st.queued == 0 && st.running == 0);
    wp_jobs_close(j);
}

static void test_ttl_and_kept(void) {
    T_CASE("ttl and max_kept");
    wp_err err = {0};
    wp_jobs_config cfg = {.max_jobs = 4, .workers = 1, .ttl_s = 0.2};
    wp_jobs *j = wp_jobs_open(&cfg, routes, NULL, &err);
    CHECK(j != NULL);
    if (!j) return;
    char id[WP_JOB_ID_LEN];
    CHECK(submit(j, "echo", "{}", id, &err) == 0);
    cJSON *v = wait_state(j, id, "done");
    CHECK(v != NULL);
    cJSON_Delete(v);
    sleep_ms(400);
    CHECK(!wp_jobs_view(j, NULL, id, true, &err) && err.status == 404);
    wp_jobs_stats st;
    wp_jobs_stats_get(j, &st);
    CHECK(st.expired == 1 && st.done == 0);
    wp_jobs_close(j);

    wp_jobs_config keep = {.max_jobs = 4, .workers = 1, .ttl_s = 600, .max_kept = 2};
    j = wp_jobs_open(&keep, routes, NULL, &err);
    CHECK(j != NULL);
    if (!j) return;
    char ids[4][WP_JOB_ID_LEN];
    for (int i = 0; i < 4; i++) {
        CHECK(submit(j, "echo", "{}", ids[i], &err) == 0);
        v = wait_state(j, ids[i], "done");
        CHECK(v != NULL);
        cJSON_Delete(v);
    }
    CHECK(list_count(j, NULL) == 2);
    CHECK(!wp_jobs_view(j, NULL, ids[0], false, &err) && err.status == 404); /* the oldest went first */
    v = wp_jobs_view(j, NULL, ids[3], false, &err);
    CHECK(v != NULL);
    cJSON_Delete(v);
    wp_jobs_close(j);

    /* Results are bounded in bytes too: an echo result is about 80 bytes, so 100 hold one. */
    wp_jobs_config bytes = {.max_jobs = 4, .workers = 1, .ttl_s = 600, .max_result_bytes = 100};
    j = wp_jobs_open(&bytes, routes, NULL, &err);
    CHECK(j != NULL);
    if (!j) return;
    for (int i = 0; i < 2; i++) {
        CHECK(submit(j, "echo", "{}", ids[i], &err) == 0);
        v = wait_state(j, ids[i], "done");
        CHECK(v != NULL);
        cJSON_Delete(v);
    }
    CHECK(list_count(j, NULL) == 1);
    CHECK(!wp_jobs_view(j, NULL, ids[0], false, &err) && err.status == 404);
    wp_jobs_close(j);
}

static void test_close_busy(void) {
    T_CASE("close with jobs queued and running");
    wp_err err = {0};
    wp_jobs_config cfg = {.max_jobs = 8, .workers = 1, .ttl_s = 600};
    wp_jobs *j = wp_jobs_open(&cfg, routes, NULL, &err);
    CHECK(j != NULL);
    if (!j) return;
    char id[WP_JOB_ID_LEN];
    for (int i = 0; i < 4; i++) CHECK(submit(j, "gate", "{}", id, &err) == 0);
    CHECK(wait_held(1));
    gate_open(4); /* whichever jobs start before close sees them may finish; close waits for those */
    wp_jobs_close(j);
    pthread_mutex_lock(&gate_mu);
    CHECK(gate_held == 0);
    gate_permits = 0;
    pthread_mutex_unlock(&gate_mu);
}

static void test_no_job(void) {
    T_CASE("helpers outside a job");
    wp_req req = {0};
    wp_job_progress(&req, 0.5);
    wp_job_progress(NULL, 0.5);
    CHECK(!wp_job_cancelled(&req) && !wp_job_cancelled(NULL));
    wp_err err = {0};
    wp_jobs_config bad = {.max_jobs = 0, .workers = 1};
    CHECK(!wp_jobs_open(&bad, routes, NULL, &err) && err.status == 500);
}

int main(void) {
    test_kinds_and_results();
    test_bound_cancel_progress();
    test_ttl_and_kept();
    test_close_busy();
    test_no_job();
    return t_done("jobs");
}
