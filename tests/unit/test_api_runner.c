/* test_api_runner.c — the API test runner (tests/api/api_lib.h) against a small server built on
 * server/http/http.c: the cases of tests/api/selftest/ (pass.json must pass; each case of fail.json must fail
 * with the message its "why" gives), and the subset matcher on its own. */
#include <stdatomic.h>

#include "http/http.h"
#include "t.h"
#include "tests/api/api_lib.h"

#define MAX_BODY 4096

typedef struct {
    atomic_int polls; /* GET /v1/jobs/{id} answers "running" until the third poll */
} app_state;

static void h_thing(void *app, const wp_req *req, wp_resp *resp) {
    (void)app, (void)req;
    cJSON *o = cJSON_Parse("{\"id\":\"abc\",\"n\":5,\"f\":2.5,\"arr\":[1,2,3],\"nested\":{\"x\":null,\"ok\":true}}");
    char big[301];
    memset(big, 'b', 300);
    big[300] = 0;
    cJSON_AddStringToObject(o, "big", big);
    wp_resp_json(resp, 200, o);
}

static void h_job_create(void *app, const wp_req *req, wp_resp *resp) {
    (void)app, (void)req;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", "j7");
    wp_resp_json(resp, 202, o);
    snprintf(resp->location, sizeof resp->location, "/v1/jobs/j7");
}

static void h_job_get(void *app, const wp_req *req, wp_resp *resp) {
    app_state *st = app;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", req->path + strlen("/v1/jobs/"));
    cJSON_AddStringToObject(o, "state", atomic_fetch_add(&st->polls, 1) < 2 ? "running" : "done");
    wp_resp_json(resp, 200, o);
}

static void h_echo(void *app, const wp_req *req, wp_resp *resp) {
    (void)app;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "len", (double)req->body_len);
    cJSON_AddStringToObject(o, "content_type", req->content_type);
    cJSON *body = req->body ? cJSON_ParseWithLength(req->body, req->body_len) : NULL;
    cJSON_AddItemToObject(o, "body", body ? body : cJSON_CreateNull());
    wp_resp_json(resp, 200, o);
}

static void h_metrics(void *app, const wp_req *req, wp_resp *resp) {
    (void)app, (void)req;
    static const char text[] = "# TYPE warpd_requests_total counter\nwarpd_requests_total 3\n";
    wp_resp_bytes(resp, 200, "text/plain; version=0.0.4", text, sizeof text - 1);
}

static const wp_route routes[] = {
    {"GET", "/v1/thing", h_thing, WP_ROUTE_INLINE, NULL},   {"POST", "/v1/jobs", h_job_create, WP_ROUTE_WORK, NULL},
    {"GET", "/v1/jobs/", h_job_get, WP_ROUTE_PREFIX, NULL}, {"POST", "/v1/echo", h_echo, WP_ROUTE_WORK, NULL},
    {"GET", "/metrics", h_metrics, WP_ROUTE_INLINE, NULL},  {NULL, NULL, NULL, 0, NULL},
};

/* Cases that must pass, and cases that must fail ("why": a piece of the message each must print). Paths are
 * relative to the repository root, where tests/run.sh runs the unit tests. */
#define PASS_CASES "tests/api/selftest/pass.json"
#define FAIL_CASES "tests/api/selftest/fail.json"

static void test_matcher(void) {
    T_CASE("api_match table");
    static const struct {
        const char *expected, *got;
        bool match;
        const char *why;
    } rows[] = {
        {"{}", "{\"a\":1}", true, ""},
        {"[]", "[]", true, ""},
        {"[]", "[1]", false, "$: array length 1, expected 0"},
        {"\"*\"", "null", true, ""},
        {"{\"a\":\"*\"}", "{}", false, "$.a: expected \"*\", got (missing)"},
        {"{\"a\":{\"$type\":\"null\"}}", "{\"a\":null}", true, ""},
        {"{\"a\":{\"$type\":\"bool\"}}", "{\"a\":false}", true, ""},
        {"{\"a\":{\"$type\":\"array\"}}", "{\"a\":{}}", false, "$.a: wrong type object"},
        {"1", "1.0", true, ""},
        {"1", "\"1\"", false, "$: expected 1, got \"1\""},
        {"\"0x1\"", "\"0x1\"", true, ""},
        {"true", "1", false, "$: expected true, got 1"},
        {"[{\"x\":[0,{\"y\":2}]}]", "[{\"x\":[0,{\"y\":3}]}]", false, "$[0].x[1].y: expected 2, got 3"},
        {"{\"a\":{\"$gt\":1}}", "{\"a\":\"2\"}", false, "$.a: not a number"},
        {"{\"$len\":2}", "{\"a\":1,\"b\":2}", true, ""},
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(rows); i++) {
        cJSON *e = cJSON_Parse(rows[i].expected), *g = cJSON_Parse(rows[i].got);
        char why[512];
        bool m = api_match(e, g, why, sizeof why);
        CHECKF(m == rows[i].match && strstr(why, rows[i].why), "row %zu: %s vs %s: %s", i, rows[i].expected,
               rows[i].got, why);
        cJSON_Delete(e);
        cJSON_Delete(g);
    }
    T_CASE("api_lookup and api_subst");
    cJSON *v = cJSON_Parse("{\"a\":{\"b\":[10,{\"c\":\"deep\"}]}}");
    const cJSON *deep = api_lookup(v, "$.a.b[1].c");
    CHECK(cJSON_IsString(deep) && !strcmp(deep->valuestring, "deep"));
    CHECK(cJSON_IsNumber(api_lookup(v, "a.b[0]")) && api_lookup(v, "a.b[0]")->valueint == 10);
    CHECK(api_lookup(v, "a.zz") == NULL && api_lookup(v, "$") == v);
    api_ctx ctx;
    CHECK(api_ctx_init(&ctx, "http://127.0.0.1:9/base/") == 0 && !strcmp(ctx.prefix, "/base") && ctx.port == 9);
    cJSON_AddStringToObject(ctx.vars, "id", "j7");
    char *s = api_subst(&ctx, "/v1/jobs/{{id}}/{{other}}{{id}}");
    CHECK(s && !strcmp(s, "/v1/jobs/j7/{{other}}j7"));
    free(s);
    api_ctx_free(&ctx);
    cJSON_Delete(v);
    char host[64], prefix[64];
    int port;
    CHECK(hc_parse_url("http://[::1]:8080", host, sizeof host, &port, prefix, sizeof prefix) == 0 &&
          !strcmp(host, "[::1]") && port == 8080 && !prefix[0]);
    CHECK(hc_parse_url("https://x:1", host, sizeof host, &port, prefix, sizeof prefix) < 0);
}

static void test_cases(int port) {
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    api_ctx ctx;
    CHECK(api_ctx_init(&ctx, url) == 0);

    T_CASE("passing cases");
    CHECK(api_run_file(&ctx, PASS_CASES) == 0);
    CHECKF(ctx.passed == 12 && ctx.failed == 0, "passed %d failed %d", ctx.passed, ctx.failed);

    T_CASE("failing cases");
    char *text = wp_read_file(FAIL_CASES, NULL);
    cJSON *cases = text ? cJSON_Parse(text) : NULL;
    free(text);
    CHECKF(cJSON_IsArray(cases), "cannot read %s (run from the repository root)", FAIL_CASES);
    for (const cJSON *tc = cases ? cases->child : NULL; tc; tc = tc->next) {
        const char *why = cJSON_GetObjectItem(tc, "why")->valuestring;
        char *out = NULL;
        size_t n = 0;
        ctx.out = open_memstream(&out, &n);
        int rc = api_run_case(&ctx, tc, FAIL_CASES);
        fclose(ctx.out);
        CHECKF(rc < 0 && strstr(out, why), "want \"%s\" in: %s", why, out);
        free(out);
    }
    CHECKF(ctx.failed == cJSON_GetArraySize(cases), "failed %d", ctx.failed);
    cJSON_Delete(cases);

    T_CASE("a file that is not a case list");
    char *out = NULL;
    size_t n = 0;
    ctx.out = open_memstream(&out, &n);
    CHECK(api_run_text(&ctx, "{\"name\": 1}", "bad.json") == 1);
    CHECK(api_run_file(&ctx, "/nonexistent/cases.json") == 1);
    fclose(ctx.out);
    CHECK(strstr(out, "bad.json: not a JSON array") && strstr(out, "cannot read the file"));
    free(out);
    api_ctx_free(&ctx);
}

int main(void) {
    test_matcher();
    app_state st = {0};
    wp_http_config cfg = {.host = "127.0.0.1", .threads = 2, .workers = 2, .max_body = MAX_BODY, .max_queue = 16};
    wp_err err = {0};
    wp_http *h = wp_http_start(&cfg, routes, &st, &err);
    CHECKF(h != NULL, "%s", err.msg);
    if (h) {
        test_cases(wp_http_port(h));
        wp_http_stop(h);
    }
    return t_done("api_runner");
}
