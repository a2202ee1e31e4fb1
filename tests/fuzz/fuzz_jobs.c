/* fuzz_jobs.c — POST /v1/jobs through its handler (server/api/api_jobs.c) and the job it queues (server/
 * jobs.c), on the emulator: any bytes as the body. A job that is accepted (202) runs its inner request
 * on the job worker, as a synthesized request, through the real warp, reduce, scan and compile
 * handlers; each is wrapped so that nothing compiles per input (fuzz_app.h): warp, reduce and scan run
 * first with may_defer (a deferral that would compile answers 200 "not compiled"), compile runs only
 * for a body the handler must refuse. The harness waits for the job, reads it with GET /v1/jobs/{id}
 * (the endpoint's status is 2xx or 4xx, a failed job has error.code) and deletes it. */
#include "api/jsonval.h"
#include "fuzz_app.h"

static void not_compiled(wp_resp *resp) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "fuzz", "stopped where NVRTC would compile");
    memset(resp, 0, sizeof *resp);
    wp_resp_json(resp, 200, o);
}

static void job_try_inline(wp_handler fn, bool again_ok, void *app, const wp_req *req, wp_resp *resp) {
    wp_req first = *req;
    first.may_defer = true;
    fn(app, &first, resp);
    if (!resp->defer) return;
    if (again_ok) {
        memset(resp, 0, sizeof *resp);
        fn(app, req, resp);
    } else {
        not_compiled(resp);
    }
}

static void job_warp(void *app, const wp_req *req, wp_resp *resp) {
    job_try_inline(wp_api_warp, false, app, req, resp);
}

static void job_reduce(void *app, const wp_req *req, wp_resp *resp) {
    job_try_inline(wp_api_reduce, !fz_asks_compile((const uint8_t *)req->body, req->body_len), app, req, resp);
}

static void job_scan(void *app, const wp_req *req, wp_resp *resp) {
    job_try_inline(wp_api_scan, !fz_asks_compile((const uint8_t *)req->body, req->body_len), app, req, resp);
}

static void job_compile(void *app, const wp_req *req, wp_resp *resp) {
    if (fz_would_compile((const uint8_t *)req->body, req->body_len))
        not_compiled(resp);
    else
        wp_api_compile(app, req, resp);
}

/* The job kinds of the daemon (main.c's POST work routes), each through its wrapper. */
static const wp_route routes[] = {
    {"POST", "/v1/compile", job_compile, WP_ROUTE_WORK, NULL},
    {"POST", "/v1/warp", job_warp, WP_ROUTE_WORK | WP_ROUTE_TRY_INLINE, NULL},
    {"POST", "/v1/reduce", job_reduce, WP_ROUTE_WORK | WP_ROUTE_TRY_INLINE, NULL},
    {"POST", "/v1/scan", job_scan, WP_ROUTE_WORK | WP_ROUTE_TRY_INLINE, NULL},
    {NULL, NULL, NULL, 0, NULL},
};

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_app_open(routes);
    return 0;
}

/* Polls until the job has finished; its state. */
static char *wait_finished(const char *id) {
    for (long waited = 0; waited < 60 * 1000 * 1000L; waited += 20) {
        wp_err err = {0};
        cJSON *v = wp_jobs_view(fz_app.jobs, NULL, id, false, &err);
        if (!v) abort(); /* nobody else deletes it */
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(v, "state");
        char *state = cJSON_IsString(s) ? strdup(s->valuestring) : NULL;
        cJSON_Delete(v);
        if (!state) abort();
        if (strcmp(state, "queued") && strcmp(state, "running")) return state;
        free(state);
        fz_sleep_us(20);
    }
    fprintf(stderr, "fuzz: job %s never finished\n", id);
    abort();
}

static void finish(const char *id) {
    char *state = wait_finished(id);
    char path[160];
    snprintf(path, sizeof path, "/v1/jobs/%s", id);
    wp_resp r;
    fz_call(wp_api_job_get, "GET", path, "", NULL, 0, false, &r);
    cJSON *o = fz_check_resp("GET /v1/jobs/{id}", &r);
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(o, "status");
    if (r.status != 200 || !cJSON_IsNumber(status)) fz_fail(path, &r, "no status");
    if (status->valueint < 200 || status->valueint >= 500 || (status->valueint >= 300 && status->valueint < 400))
        fz_fail(path, &r, "the job's endpoint answered outside 2xx/4xx");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "error"), "code");
    if (!strcmp(state, "failed") && (!cJSON_IsString(code) || !code->valuestring[0]))
        fz_fail(path, &r, "a failed job without error.code");
    cJSON_Delete(o);
    free(r.body);
    fz_call(wp_api_job_delete, "DELETE", path, "", NULL, 0, false, &r);
    cJSON_Delete(fz_check_resp("DELETE /v1/jobs/{id}", &r));
    if (r.status != 200) fz_fail(path, &r, "a finished job was not forgotten");
    free(r.body);
    free(state);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    wp_resp r;
    fz_call(wp_api_jobs_submit, "POST", "/v1/jobs", "application/json", data, size, false, &r);
    cJSON *o = fz_check_resp("POST /v1/jobs", &r);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
    if (r.status == 202) {
        if (!cJSON_IsString(id)) fz_fail("POST /v1/jobs", &r, "202 without an id");
        finish(id->valuestring);
    }
    cJSON_Delete(o);
    free(r.body);
    fz_drop_buffers();
    return 0;
}
