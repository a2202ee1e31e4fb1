/* api_jobs.c — the HTTP face of jobs.c:
 *   POST   /v1/jobs        {"kind": "warp"|"compile"|"reduce"|"scan"|..., "request": {...that endpoint's body...}}
 *                          -> 202 {"id","state":"queued","location":"/v1/jobs/ID",...} + Location header;
 *                             503 "queue_full" + Retry-After when --max-jobs are queued or running
 *   GET    /v1/jobs        the jobs held (?state=queued|running|done|failed|cancelled), without results
 *   GET    /v1/jobs/{id}   state, progress, times; once finished the endpoint's status and its JSON
 *                          ("result") or its error ("error")
 *   DELETE /v1/jobs/{id}   queued: cancelled (200); running: cancel requested, result dropped (202);
 *                          finished: forgotten (200, "deleted": true)
 * Kinds are the POST work routes (jobs.h); an invalid inner request is found when the job runs and
 * ends the job "failed" with the endpoint's 4xx error. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "engine/jobs.h"
#include "jsonval.h"
#include "util/json.h"

#define JOBS_PATH "/v1/jobs/"
#define RETRY_AFTER_S "1"

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && isspace((unsigned char)*p)) p++;
    return p;
}

static const char *skip_string(const char *p, const char *end) { /* p at the opening quote */
    for (p++; p < end && *p != '"'; p++)
        if (*p == '\\') p++;
    return p < end ? p + 1 : end;
}

static const char *skip_value(const char *p, const char *end) {
    if (p < end && *p == '"') return skip_string(p, end);
    if (p < end && (*p == '{' || *p == '[')) {
        int depth = 0;
        while (p < end) {
            if (*p == '"') {
                p = skip_string(p, end);
                continue;
            }
            if (*p == '{' || *p == '[')
                depth++;
            else if ((*p == '}' || *p == ']') && --depth == 0)
                return p + 1;
            p++;
        }
        return end;
    }
    while (p < end && *p != ',' && *p != '}' && *p != ']' && !isspace((unsigned char)*p)) p++;
    return p;
}

/* Where the first "request" member's value lies in the (already validated) body text, so the job gets
 * the client's own text, byte for byte, without printing a parsed tree again. false if not found as
 * plain text (an escaped key): the caller prints the parsed value instead. */
static bool request_span(const char *text, size_t len, const char **start, size_t *n) {
    const char *p = text, *end = text + len;
    p = skip_ws(p, end);
    if (p >= end || *p != '{') return false;
    for (p++;;) {
        p = skip_ws(p, end);
        if (p >= end || *p != '"') return false;
        const char *key = p;
        p = skip_string(p, end);
        if (memchr(key, '\\', (size_t)(p - key))) return false; /* an escaped name: let cJSON decide */
        p = skip_ws(p, end);
        if (p >= end || *p != ':') return false;
        p = skip_ws(p + 1, end);
        const char *value = p;
        p = skip_value(p, end);
        if (skip_string(key, end) == key + 9 && !memcmp(key, "\"request\"", 9)) {
            *start = value, *n = (size_t)(p - value);
            return true;
        }
        p = skip_ws(p, end);
        if (p >= end || *p != ',') return false;
        p++;
    }
}

static const char *const submit_fields[] = {"kind", "request", NULL};

void wp_api_jobs_submit(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    char *printed = NULL;
    cJSON *view = NULL;
    cJSON *body = wp_api_parse_body(app, req, &err);
    if (!body || wp_json_only(body, "", submit_fields, &err)) goto fail;
    const cJSON *kind = wp_json_get(body, "kind");
    const cJSON *request = wp_json_get(body, "request");
    if (!kind) {
        WP_FAIL(&err, 400, "missing_field", "kind", "kind is required: one of the POST endpoints (warp, compile, ...)");
        goto fail;
    }
    if (!cJSON_IsString(kind)) {
        WP_FAIL(&err, 400, "wrong_type", "kind", "kind must be a string");
        goto fail;
    }
    if (!request) {
        WP_FAIL(&err, 400, "missing_field", "request", "request is required: the body of POST /v1/%.40s",
                kind->valuestring);
        goto fail;
    }
    if (!cJSON_IsObject(request)) {
        WP_FAIL(&err, 400, "wrong_type", "request", "request must be a JSON object: the body of POST /v1/%.40s",
                kind->valuestring);
        goto fail;
    }
    const char *text;
    size_t text_len;
    if (!request_span(req->body, req->body_len, &text, &text_len)) {
        printed = cJSON_PrintUnformatted(request);
        if (!printed) {
            WP_FAIL(&err, 500, "no_memory", "", "out of memory");
            goto fail;
        }
        text = printed, text_len = strlen(printed);
    }
    char id[WP_JOB_ID_LEN];
    if (wp_jobs_submit(app->jobs, req->user, kind->valuestring, text, text_len, req->peer_local, id, &view, &err))
        goto fail;
    snprintf(resp->location, sizeof resp->location, "%s%s", JOBS_PATH, id);
    wp_resp_json(resp, 202, view);
    goto done;
fail:
    if (err.status == 503) snprintf(resp->retry_after, sizeof resp->retry_after, "%s", RETRY_AFTER_S);
    wp_resp_error(resp, &err);
done:
    free(printed);
    cJSON_Delete(body);
}

void wp_api_jobs_list(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    cJSON *o = wp_jobs_list(app->jobs, req->user, wp_req_query(req, "state"), &err);
    if (!o) {
        wp_resp_error(resp, &err);
        return;
    }
    cJSON_AddItemToObject(o, "kinds", wp_jobs_kinds(app->jobs));
    wp_resp_json(resp, 200, o);
}

/* The id after /v1/jobs/, or NULL (404) when empty or with more path after it. */
static const char *job_id(const wp_req *req, wp_err *err) {
    const char *id = req->path + strlen(JOBS_PATH);
    if (!*id || strchr(id, '/')) {
        WP_FAIL(err, 404, "unknown_job", "id", "no job at %.80s", req->path);
        return NULL;
    }
    return id;
}

void wp_api_job_get(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    const char *id = job_id(req, &err);
    cJSON *o = id ? wp_jobs_view(app->jobs, req->user, id, true, &err) : NULL;
    if (o)
        wp_resp_json(resp, 200, o);
    else
        wp_resp_error(resp, &err);
}

void wp_api_job_delete(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    bool running = false, forgotten = false;
    const char *id = job_id(req, &err);
    cJSON *o = id ? wp_jobs_cancel(app->jobs, req->user, id, &running, &forgotten, &err) : NULL;
    if (o)
        wp_resp_json(resp, running ? 202 : 200, o);
    else
        wp_resp_error(resp, &err);
}
