/* api_openapi.c — the OpenAPI document against a live daemon (run by tests/api/api.sh):
 *  - GET /v1/openapi.json serves exactly clients/web/openapi.json;
 *  - every documented example request is sent — request-body examples, path and query parameter
 *    examples (examples, then x-invalid-examples: those the schema itself refuses), and a bare request
 *    for an operation that has neither — in document order (paths as listed; put, post, get, delete
 *    within a path), and its answer must have the example's x-status (default: the operation's first
 *    2xx), a documented content type, and, for JSON, a body valid against the documented response schema
 *    (tests/jsonschema.h). "{{example.field}}" in an example (a parameter's x-value or value, or a string
 *    in a body) is a field of an earlier example's response (the id of a job or buffer it made).
 *   api_openapi BASE_URL */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api/api_lib.h"
#include "tests/jsonschema.h"
#include "tests/unit/t.h"
#include "util/common.h"

#define DOC_FILE "clients/web/openapi.json"
#define URL_MAX 1024

static const char *const methods[] = {"put", "post", "get", "delete", "patch"};

typedef struct {
    api_ctx ctx;
    const cJSON *doc;
    cJSON *saved; /* example name -> its response JSON */
} live;

typedef struct {
    const char *name;
    const cJSON *example;  /* {summary, value, x-value, x-status, x-query} */
    const char *body_type; /* the requestBody content type, or NULL */
    const cJSON *param;    /* the parameter the example belongs to, or NULL */
} request;

/* "{{name.field}}" -> the saved value's text (or the text unchanged); into out. */
static void substitute(live *l, const char *text, char *out, size_t cap) {
    char name[128], field[128];
    if (sscanf(text, "{{%127[^.}].%127[^}]}}", name, field) == 2) {
        const cJSON *v = api_lookup(cJSON_GetObjectItemCaseSensitive(l->saved, name), field);
        if (cJSON_IsString(v)) text = v->valuestring;
    }
    snprintf(out, cap, "%s", text);
}

/* Every string of a JSON value that is a "{{name.field}}", substituted in place. */
static void substitute_json(live *l, cJSON *v) {
    if (cJSON_IsString(v) && !strncmp(v->valuestring, "{{", 2)) {
        char text[256];
        substitute(l, v->valuestring, text, sizeof text);
        cJSON_SetValuestring(v, text);
    }
    for (cJSON *c = v ? v->child : NULL; c; c = c->next) substitute_json(l, c);
}

static void param_value(live *l, const cJSON *param, const request *r, char *out, size_t cap) {
    const cJSON *v = NULL;
    if (r->param == param) { /* x-value: the {{reference}} that value, held to the parameter's pattern, stands for */
        v = cJSON_GetObjectItemCaseSensitive(r->example, "x-value");
        if (!v) v = cJSON_GetObjectItemCaseSensitive(r->example, "value");
    }
    if (!v) v = cJSON_GetObjectItemCaseSensitive(param, "example");
    if (!v) { /* the parameter's first example */
        const cJSON *ex = cJSON_GetObjectItemCaseSensitive(param, "examples");
        v = ex && ex->child ? cJSON_GetObjectItemCaseSensitive(ex->child, "value") : NULL;
    }
    char text[256] = "";
    if (cJSON_IsString(v))
        snprintf(text, sizeof text, "%s", v->valuestring);
    else if (cJSON_IsNumber(v))
        snprintf(text, sizeof text, "%g", v->valuedouble);
    substitute(l, text, out, cap);
}

/* The request's URL: the path with its parameters filled in, then the query. */
static void build_url(live *l, const char *path, const cJSON *op, const request *r, char *url, size_t cap) {
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(op, "parameters");
    size_t n = (size_t)snprintf(url, cap, "%s", l->ctx.prefix);
    for (const char *p = path; *p && n + 1 < cap;) {
        if (*p != '{') {
            url[n++] = *p++;
            url[n] = 0;
            continue;
        }
        const char *close = strchr(p, '}');
        char name[64] = "", value[256] = "";
        snprintf(name, sizeof name, "%.*s", close ? (int)(close - p - 1) : 0, p + 1);
        for (const cJSON *q = params ? params->child : NULL; q; q = q->next) {
            const cJSON *qn = cJSON_GetObjectItemCaseSensitive(q, "name");
            if (cJSON_IsString(qn) && !strcmp(qn->valuestring, name)) param_value(l, q, r, value, sizeof value);
        }
        n += (size_t)snprintf(url + n, cap - n, "%s", value);
        p = close ? close + 1 : p + strlen(p);
    }
    char sep = '?';
    const cJSON *query = cJSON_GetObjectItemCaseSensitive(r->example, "x-query");
    for (const cJSON *q = query ? query->child : NULL; q && n + 1 < cap; q = q->next, sep = '&')
        n += (size_t)snprintf(url + n, cap - n, "%c%s=%s", sep, q->string, cJSON_IsString(q) ? q->valuestring : "");
    const cJSON *in = r->param ? cJSON_GetObjectItemCaseSensitive(r->param, "in") : NULL;
    if (cJSON_IsString(in) && !strcmp(in->valuestring, "query") && n + 1 < cap) {
        char value[256];
        param_value(l, r->param, r, value, sizeof value);
        snprintf(url + n, cap - n, "%c%s=%s", sep, cJSON_GetObjectItemCaseSensitive(r->param, "name")->valuestring,
                 value);
    }
}

static bool status_expected(const cJSON *want, int status) {
    for (const cJSON *s = cJSON_IsArray(want) ? want->child : want; s; s = cJSON_IsArray(want) ? s->next : NULL)
        if (cJSON_IsNumber(s) && s->valueint == status) return true;
    return false;
}

static void send_one(live *l, const char *path, const char *method, const cJSON *op, const request *r) {
    char label[256], url[URL_MAX], upper[8] = "";
    for (int i = 0; method[i] && i < 7; i++) upper[i] = (char)(method[i] & ~0x20);
    snprintf(label, sizeof label, "%s %s: %s", upper, path, r->name);
    T_CASE(label);
    build_url(l, path, op, r, url, sizeof url);
    char *body = NULL;
    size_t body_len = 0;
    char ctype[128] = "";
    const char *headers[3] = {NULL, NULL, NULL};
    const cJSON *value = r->body_type ? cJSON_GetObjectItemCaseSensitive(r->example, "value") : NULL;
    if (value) {
        snprintf(ctype, sizeof ctype, "Content-Type: %s", r->body_type);
        headers[0] = ctype;
        cJSON *copy = cJSON_Duplicate(value, true);
        substitute_json(l, copy);
        body = cJSON_IsString(copy) && strcmp(r->body_type, "application/json") ? strdup(copy->valuestring)
                                                                                : cJSON_PrintUnformatted(copy);
        cJSON_Delete(copy);
        body_len = body ? strlen(body) : 0;
    }
    /* the expected status: the example's x-status, or the first 2xx documented */
    const cJSON *responses = cJSON_GetObjectItemCaseSensitive(op, "responses");
    cJSON *want = NULL;
    const cJSON *xs = r->example ? cJSON_GetObjectItemCaseSensitive(r->example, "x-status") : NULL;
    if (xs) want = cJSON_Duplicate(xs, true);
    for (const cJSON *s = responses ? responses->child : NULL; s && !want; s = s->next)
        if (s->string[0] == '2') want = cJSON_CreateNumber(atoi(s->string));
    hc_resp resp;
    char err[160] = "";
    int rc = hc_request(l->ctx.host, l->ctx.port, upper, url, headers, body, body_len, 0, &resp, err, sizeof err);
    free(body);
    CHECKF(rc == 0, "%s: %s", label, err);
    if (rc != 0) {
        cJSON_Delete(want);
        return;
    }
    char shown[201];
    snprintf(shown, sizeof shown, "%.200s", resp.body);
    CHECKF(status_expected(want, resp.status), "%s (%s): status %d, not the example's (body %s)", label, url,
           resp.status, shown);
    cJSON_Delete(want);
    char code[8], media[128] = "";
    snprintf(code, sizeof code, "%d", resp.status);
    const cJSON *documented = cJSON_GetObjectItemCaseSensitive(responses, code);
    CHECKF(documented != NULL, "%s: status %d is not documented", label, resp.status);
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(documented, "content");
    hc_header(&resp, "Content-Type", media, sizeof media);
    media[strcspn(media, "; ")] = 0;
    cJSON *json = cJSON_ParseWithLength(resp.body, resp.body_len);
    if (content) {
        const cJSON *media_doc = cJSON_GetObjectItemCaseSensitive(content, media);
        CHECKF(media_doc != NULL, "%s: Content-Type %s is not documented for %d", label, media, resp.status);
        if (media_doc && !strcmp(media, "application/json")) {
            char why[512];
            CHECKF(json != NULL, "%s: the body is not JSON: %s", label, shown);
            const cJSON *schema = cJSON_GetObjectItemCaseSensitive(media_doc, "schema");
            if (json) CHECKF(js_validate(l->doc, schema, json, why, sizeof why), "%s: %s", label, why);
        }
    }
    if (json) cJSON_AddItemToObject(l->saved, r->name, json);
    hc_resp_free(&resp);
}

/* The examples a media type or a parameter holds: those that match its schema, then those it refuses. */
static const char *const example_sets[] = {"examples", "x-invalid-examples"};

static void run_operation(live *l, const char *path, const char *method, const cJSON *op) {
    int sent = 0;
    const cJSON *rb = cJSON_GetObjectItemCaseSensitive(op, "requestBody");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(rb, "content");
    for (const cJSON *c = content ? content->child : NULL; c; c = c->next)
        for (size_t set = 0; set < WP_ARRAY_LEN(example_sets); set++) {
            const cJSON *examples = cJSON_GetObjectItemCaseSensitive(c, example_sets[set]);
            for (const cJSON *e = examples ? examples->child : NULL; e; e = e->next, sent++)
                send_one(l, path, method, op, &(request){e->string, e, c->string, NULL});
        }
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(op, "parameters");
    for (const cJSON *q = params ? params->child : NULL; q; q = q->next)
        for (size_t set = 0; set < WP_ARRAY_LEN(example_sets); set++) {
            const cJSON *examples = cJSON_GetObjectItemCaseSensitive(q, example_sets[set]);
            for (const cJSON *e = examples ? examples->child : NULL; e; e = e->next, sent++)
                send_one(l, path, method, op, &(request){e->string, e, NULL, q});
        }
    if (!sent) { /* a bare request: no body, no parameters */
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(op, "operationId");
        send_one(l, path, method, op, &(request){cJSON_IsString(id) ? id->valuestring : path, NULL, NULL, NULL});
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s BASE_URL\n", argv[0]);
        return 2;
    }
    live l = {0};
    if (api_ctx_init(&l.ctx, argv[1])) {
        fprintf(stderr, "api_openapi: bad base URL %s\n", argv[1]);
        return 2;
    }
    T_CASE("document");
    size_t n = 0;
    char *text = wp_read_file(DOC_FILE, &n);
    cJSON *doc = text ? cJSON_ParseWithLength(text, n) : NULL;
    CHECKF(doc != NULL, "%s is JSON (run from the repository root)", DOC_FILE);
    char url[URL_MAX];
    snprintf(url, sizeof url, "%s/v1/openapi.json", l.ctx.prefix);
    hc_resp resp;
    char err[160] = "";
    cJSON *served = NULL;
    if (hc_request(l.ctx.host, l.ctx.port, "GET", url, NULL, NULL, 0, 0, &resp, err, sizeof err) == 0) {
        served = cJSON_ParseWithLength(resp.body, resp.body_len);
        hc_resp_free(&resp);
    }
    CHECKF(served && doc && cJSON_Compare(served, doc, true), "GET /v1/openapi.json serves %s (%s)", DOC_FILE, err);
    cJSON_Delete(served);
    l.doc = doc;
    l.saved = cJSON_CreateObject();
    const cJSON *paths = cJSON_GetObjectItemCaseSensitive(doc, "paths");
    for (const cJSON *p = paths ? paths->child : NULL; p; p = p->next)
        for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++) {
            const cJSON *op = cJSON_GetObjectItemCaseSensitive(p, methods[m]);
            if (op) run_operation(&l, p->string, methods[m], op);
        }
    cJSON_Delete(l.saved);
    cJSON_Delete(doc);
    free(text);
    api_ctx_free(&l.ctx);
    return t_done("openapi-live");
}
