/* api_openapi.c — GET /v1/openapi.json: the OpenAPI 3.1 document of every route, request and
 * response. The document is a static file next to the playground (clients/web/openapi.json, installed
 * with it), read on each request so an edited file needs no rebuild. tests/unit/test_openapi.c checks it
 * against main.c's route table; tests/api/api_openapi.c sends its examples to a live daemon. */
#include <stdio.h>
#include <stdlib.h>

#include "api.h"

#define OPENAPI_FILE "openapi.json"

void wp_api_openapi(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    (void)req;
    wp_err err = {0};
    char path[sizeof app->web_dir + sizeof OPENAPI_FILE + 1];
    snprintf(path, sizeof path, "%s/%s", app->web_dir, OPENAPI_FILE);
    size_t n = 0;
    char *data = wp_read_file(path, &n);
    if (!data) {
        WP_FAIL(&err, 500, "no_openapi", "", "the OpenAPI document is missing: %.300s", path);
        wp_resp_error(resp, &err);
        return;
    }
    resp->status = 200;
    resp->body = data;
    resp->body_len = n;
    resp->content_type = "application/json";
}
