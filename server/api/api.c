/* api.c — what every route handler shares: the request body parsed as one JSON object under the
 * depth limit (api.h). */
#include "api.h"
#include "jsonval.h"

#include "util/json.h"
#include "util/jsonparse.h"

bool wp_api_defer_unparsed(wp_app *app, const wp_req *req) {
    size_t at;
    return req->may_defer && req->body && wp_app_defers_gpu_jobs(app) &&
           !wp_json_find_top_key(req->body, req->body_len, "backend", NULL, &at, NULL, 0);
}

void wp_api_text_begin(wp_jtext *o, const wp_req *req) {
    *o = (wp_jtext){0};
    o->p = wp_req_take_text(req, &o->cap); /* no malloc a request */
}

void wp_api_text_answer(wp_jtext *o, wp_resp *resp) {
    const size_t cap = o->cap; /* before the take clears it */
    size_t n = 0;
    char *text = wp_jtext_take(o, &n);
    wp_resp_json_text_kept(resp, 200, text, n, cap);
}

cJSON *wp_api_parse_body(wp_app *app, const wp_req *req, wp_err *err) {
    if (!req->body || !req->body_len) {
        WP_FAIL(err, 400, "bad_json", "body", "the request body is empty; send a JSON object");
        return NULL;
    }
    const char *end = NULL;
    cJSON *j = wp_json_parse_fast(req->body, req->body_len, app->max_depth, &end);
    if (j && wp_json_trailing(req->body, req->body_len, end) == req->body_len) return j; /* the plain grammar */
    cJSON_Delete(j); /* else cJSON's parse, after the depth check, gives the answer it always gave */
    if (wp_json_depth(req->body, req->body_len) > app->max_depth) {
        WP_FAIL(err, 400, "too_deep", "body", "JSON nesting deeper than %d levels", app->max_depth);
        return NULL;
    }
    j = cJSON_ParseWithLengthOpts(req->body, req->body_len, &end, 0);
    if (!j) {
        size_t at = end ? (size_t)(end - req->body) : 0;
        WP_FAIL(err, 400, "bad_json", "body", "invalid JSON near byte %zu", at);
        return NULL;
    }
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        WP_FAIL(err, 400, "bad_json", "body", "the body must be a JSON object");
        return NULL;
    }
    /* one JSON text (RFC 8259): after the object only whitespace ({"a":1}xyz was taken as {"a":1}) */
    size_t at = wp_json_trailing(req->body, req->body_len, end);
    if (at < req->body_len) {
        cJSON_Delete(j);
        WP_FAIL(err, 400, "bad_json", "body", "unexpected bytes after the JSON object, at byte %zu", at);
        return NULL;
    }
    return j;
}
