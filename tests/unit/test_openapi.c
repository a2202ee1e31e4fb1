/* test_openapi.c — the OpenAPI document (clients/web/openapi.json, served at GET /v1/openapi.json)
 * against the code, offline:
 *  - every route of server/main.c's route table is documented, and every documented operation is
 *    served by a route (a prefix route "/v1/jobs/" serves "/v1/jobs/{id}"; "/" serves "/" and "/{file}");
 *  - the document hangs together: OpenAPI 3.1, info.version = WP_VERSION, every $ref resolves, unique
 *    operationIds, every path parameter declared, every example's x-status documented, example names
 *    unique and "{{example.field}}" (in value or x-value) naming an earlier example, every example meant
 *    to succeed valid against its request schema (tests/jsonschema.h), and every x-invalid-examples
 *    entry (a request the schema refuses) answered 4xx. tests/lint/run.sh holds the examples proper
 *    to their schemas in full (redocly lint).
 * tests/api/api_openapi.c then sends the examples to a live daemon. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "t.h"
#include "tests/jsonschema.h"

#define DOC_FILE "clients/web/openapi.json"
#define MAIN_FILE "server/main.c"
#define MAX_ROUTES 64

static const char *const methods[] = {"put", "post", "get", "delete", "patch", "head", "options"};

typedef struct {
    char method[8]; /* lower case, as OpenAPI keys */
    char path[128];
    bool prefix;
} route;

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
        free(text);
        text = NULL;
    }
    if (text) text[n] = 0;
    fclose(f);
    return text;
}

/* The rows {"GET", "/v1/health", handler, flags} of the `routes[]` table in main.c's text. */
static int parse_routes(const char *text, route *out, int cap) {
    const char *p = strstr(text, "routes[] = {");
    const char *end = p ? strstr(p, "};") : NULL;
    int n = 0;
    if (!p || !end) return -1;
    for (p = strchr(p, '{') + 1; (p = strstr(p, "{\"")) && p < end && n < cap; p++) {
        route r = {0};
        char method[16];
        if (sscanf(p, "{\"%15[^\"]\", \"%127[^\"]\"", method, r.path) != 2) return -1;
        for (int i = 0; method[i] && i < (int)sizeof r.method - 1; i++) r.method[i] = (char)(method[i] | 0x20);
        const char *close = strchr(p, '}');
        if (!close || close > end) return -1;
        const char *flag = strstr(p, "WP_ROUTE_PREFIX");
        r.prefix = flag && flag < close;
        out[n++] = r;
    }
    return n;
}

/* A documented path is served by a prefix route when it starts with the prefix and the rest is one
 * "{param}" (or, for "/", the playground's index itself). */
static bool prefix_serves(const route *r, const char *doc_path) {
    size_t n = strlen(r->path);
    if (strncmp(doc_path, r->path, n)) return false;
    const char *rest = doc_path + n;
    if (!*rest) return true;
    return rest[0] == '{' && strchr(rest, '}') == rest + strlen(rest) - 1;
}

static void test_routes(const cJSON *doc, const route *routes, int nr) {
    T_CASE("routes <-> document");
    const cJSON *paths = cJSON_GetObjectItemCaseSensitive(doc, "paths");
    CHECK(nr > 5);
    for (int i = 0; i < nr; i++) { /* every route is documented */
        const route *r = &routes[i];
        bool found = false;
        for (const cJSON *p = paths ? paths->child : NULL; p && !found; p = p->next) {
            if (!cJSON_GetObjectItemCaseSensitive(p, r->method)) continue;
            found = r->prefix ? strcmp(p->string, r->path) && prefix_serves(r, p->string) : !strcmp(p->string, r->path);
        }
        CHECKF(found, "route %s %s%s is not in " DOC_FILE, r->method, r->path, r->prefix ? "{...} (prefix)" : "");
    }
    for (const cJSON *p = paths ? paths->child : NULL; p; p = p->next) /* every operation is served */
        for (size_t m = 0; m < WP_ARRAY_LEN(methods); m++) {
            if (!cJSON_GetObjectItemCaseSensitive(p, methods[m])) continue;
            bool served = false;
            for (int i = 0; i < nr && !served; i++)
                served = !strcmp(routes[i].method, methods[m]) &&
                         (routes[i].prefix ? prefix_serves(&routes[i], p->string) : !strcmp(routes[i].path, p->string));
            CHECKF(served, "%s %s is documented but " MAIN_FILE " has no route for it", methods[m], p->string);
        }
}

/* The matcher itself, on a table that holds a prefix route. */
static void test_route_parser(void) {
    T_CASE("route parser");
    const char *text = "static const wp_route routes[] = {\n"
                       "    {\"GET\", \"/v1/health\", wp_api_health, WP_ROUTE_INLINE},\n"
                       "    {\"DELETE\", \"/v1/jobs/\", wp_api_job_delete, WP_ROUTE_INLINE | WP_ROUTE_PREFIX},\n"
                       "    {NULL, NULL, NULL, 0},\n};\n";
    route r[4];
    int n = parse_routes(text, r, 4);
    CHECK(n == 2);
    CHECK(n == 2 && !strcmp(r[0].method, "get") && !strcmp(r[0].path, "/v1/health") && !r[0].prefix);
    CHECK(n == 2 && !strcmp(r[1].method, "delete") && !strcmp(r[1].path, "/v1/jobs/") && r[1].prefix);
    CHECK(n == 2 && prefix_serves(&r[1], "/v1/jobs/{id}") && !prefix_serves(&r[1], "/v1/jobs/{id}/x") &&
          !prefix_serves(&r[1], "/v1/jobsx"));
    CHECK(parse_routes("no table here", r, 4) == -1);
}

/* ---- the document on its own ---- */

typedef struct {
    const cJSON *doc;
    cJSON *names; /* example names seen so far, in execution order */
} walk;

/* Every "{{other.field}}" string in v names an earlier example. */
static void check_refs(walk *w, const char *label, const cJSON *v) {
    if (cJSON_IsString(v) && !strncmp(v->valuestring, "{{", 2)) {
        char ref[128] = "";
        sscanf(v->valuestring + 2, "%127[^.}]", ref);
        CHECKF(cJSON_GetObjectItemCaseSensitive(w->names, ref) != NULL, "%s: {{%s...}} is not an earlier example",
               label, ref);
    }
    for (const cJSON *c = v ? v->child : NULL; c; c = c->next) check_refs(w, label, c);
}

/* invalid: an x-invalid-examples entry, a request its schema refuses, so it cannot succeed. */
static void check_example(walk *w, const char *where, const char *name, const cJSON *example, const cJSON *op,
                          const cJSON *schema, bool invalid) {
    char label[256];
    snprintf(label, sizeof label, "%s example %s", where, name);
    CHECKF(!cJSON_GetObjectItemCaseSensitive(w->names, name), "%s: the name is used twice", label);
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(example, "value");
    check_refs(w, label, value);
    check_refs(w, label, cJSON_GetObjectItemCaseSensitive(example, "x-value"));
    cJSON_AddTrueToObject(w->names, name);
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(example, "x-status");
    const cJSON *responses = cJSON_GetObjectItemCaseSensitive(op, "responses");
    bool success = true;
    CHECKF(status != NULL, "%s has no x-status", label);
    for (const cJSON *s = cJSON_IsArray(status) ? status->child : status; s;
         s = cJSON_IsArray(status) ? s->next : NULL) {
        char code[8];
        snprintf(code, sizeof code, "%d", s->valueint);
        CHECKF(cJSON_IsNumber(s) && cJSON_GetObjectItemCaseSensitive(responses, code), "%s: x-status %s undocumented",
               label, code);
        success &= s->valueint < 300;
        if (invalid) CHECKF(s->valueint >= 400 && s->valueint < 500, "%s: x-status %s, not 4xx", label, code);
    }
    if (success && !invalid && schema && value) {
        char why[512];
        CHECKF(js_validate(w->doc, schema, value, why, sizeof why), "%s does not match its request schema: %s", label,
               why);
    }
}

static void check_operation(walk *w, const char *path, const char *method, const cJSON *op, cJSON *op_ids) {
    char where[200];
    snprintf(where, sizeof where, "%s %s", method, path);
    T_CASE(where);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(op, "operationId");
    CHECKF(cJSON_IsString(id), "%s has an operationId", where);
    if (cJSON_IsString(id)) {
        CHECKF(!cJSON_GetObjectItemCaseSensitive(op_ids, id->valuestring), "operationId %s is used twice",
               id->valuestring);
        cJSON_AddTrueToObject(op_ids, id->valuestring);
    }
    const cJSON *responses = cJSON_GetObjectItemCaseSensitive(op, "responses");
    bool has_2xx = false;
    for (const cJSON *r = responses ? responses->child : NULL; r; r = r->next) {
        has_2xx |= r->string[0] == '2';
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(r, "content");
        for (const cJSON *c = content ? content->child : NULL; c; c = c->next)
            CHECKF(cJSON_GetObjectItemCaseSensitive(c, "schema") != NULL, "%s %s %s has a schema", where, r->string,
                   c->string);
    }
    CHECKF(has_2xx, "%s documents a 2xx response", where);
    /* every {param} of the path is a declared path parameter with an example */
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(op, "parameters");
    for (const char *p = strchr(path, '{'); p; p = strchr(p + 1, '{')) {
        char name[64] = "";
        sscanf(p + 1, "%63[^}]", name);
        bool declared = false;
        for (const cJSON *q = params ? params->child : NULL; q && !declared; q = q->next) {
            const cJSON *qn = cJSON_GetObjectItemCaseSensitive(q, "name"),
                        *in = cJSON_GetObjectItemCaseSensitive(q, "in");
            declared =
                cJSON_IsString(qn) && !strcmp(qn->valuestring, name) && cJSON_IsString(in) &&
                !strcmp(in->valuestring, "path") &&
                (cJSON_GetObjectItemCaseSensitive(q, "examples") || cJSON_GetObjectItemCaseSensitive(q, "example"));
        }
        CHECKF(declared, "%s: path parameter %s is declared, with examples", where, name);
    }
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(op, "requestBody");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(body, "content");
    static const char *const sets[] = {"examples", "x-invalid-examples"}; /* as api_openapi.c sends them */
    for (const cJSON *c = content ? content->child : NULL; c; c = c->next) {
        const cJSON *schema = cJSON_GetObjectItemCaseSensitive(c, "schema");
        bool json = !strcmp(c->string, "application/json");
        for (size_t set = 0; set < WP_ARRAY_LEN(sets); set++) {
            const cJSON *examples = cJSON_GetObjectItemCaseSensitive(c, sets[set]);
            for (const cJSON *e = examples ? examples->child : NULL; e; e = e->next)
                check_example(w, where, e->string, e, op, json ? schema : NULL, set == 1);
        }
    }
    for (const cJSON *q = params ? params->child : NULL; q; q = q->next)
        for (size_t set = 0; set < WP_ARRAY_LEN(sets); set++) {
            const cJSON *examples = cJSON_GetObjectItemCaseSensitive(q, sets[set]);
            for (const cJSON *e = examples ? examples->child : NULL; e; e = e->next)
                check_example(w, where, e->string, e, op, cJSON_GetObjectItemCaseSensitive(q, "schema"), set == 1);
        }
}

static void test_document(const cJSON *doc) {
    T_CASE("document");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "openapi");
    CHECK(cJSON_IsString(v) && !strncmp(v->valuestring, "3.1.", 4));
    const cJSON *info = cJSON_GetObjectItemCaseSensitive(doc, "info");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(info, "version");
    CHECKF(cJSON_IsString(version) && !strcmp(version->valuestring, WP_VERSION), "info.version is %s (WP_VERSION)",
           WP_VERSION);
    char bad[256] = "";
    CHECKF(js_refs_resolve(doc, doc, bad, sizeof bad), "$ref %s resolves", bad);
    walk w = {doc, cJSON_CreateObject()};
    cJSON *op_ids = cJSON_CreateObject();
    const cJSON *paths = cJSON_GetObjectItemCaseSensitive(doc, "paths");
    CHECK(cJSON_IsObject(paths));
    for (const cJSON *p = paths ? paths->child : NULL; p; p = p->next)
        for (size_t m = 0; m < WP_ARRAY_LEN(methods); m++) {
            const cJSON *op = cJSON_GetObjectItemCaseSensitive(p, methods[m]);
            if (op) check_operation(&w, p->string, methods[m], op, op_ids);
        }
    cJSON_Delete(w.names);
    cJSON_Delete(op_ids);
}

/* The validator, on the corners the document relies on. */
static void test_validator(void) {
    T_CASE("validator");
    cJSON *doc = cJSON_Parse(
        "{\"components\":{\"schemas\":{\"L\":{\"type\":[\"integer\",\"null\"]},"
        "\"O\":{\"type\":\"object\",\"required\":[\"a\"],\"properties\":{\"a\":{\"type\":\"array\",\"items\":"
        "{\"$ref\":\"#/components/schemas/L\"}},\"e\":{\"enum\":[\"x\",null]}}}}}}");
    const cJSON *o = js_pointer(doc, "#/components/schemas/O");
    static const struct {
        const char *json;
        bool ok;
    } cases[] = {{"{\"a\":[1,null,3]}", true},    {"{\"a\":[1.5]}", false},          {"{\"b\":1}", false},
                 {"{\"a\":[],\"e\":null}", true}, {"{\"a\":[],\"e\":\"y\"}", false}, {"[1]", false},
                 {"{\"a\":\"1\"}", false}};
    char why[512];
    for (size_t i = 0; i < WP_ARRAY_LEN(cases); i++) {
        cJSON *v = cJSON_Parse(cases[i].json);
        CHECKF(js_validate(doc, o, v, why, sizeof why) == cases[i].ok, "%s: %s", cases[i].json, why);
        cJSON_Delete(v);
    }
    cJSON *any = cJSON_Parse("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}");
    cJSON *one = cJSON_Parse("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}");
    cJSON *n1 = cJSON_CreateNumber(1), *n2 = cJSON_CreateNumber(1.5), *s = cJSON_CreateString("x");
    CHECK(js_validate(doc, any, s, why, sizeof why) && js_validate(doc, any, n1, why, sizeof why) &&
          !js_validate(doc, any, n2, why, sizeof why));
    CHECK(!js_validate(doc, one, n1, why, sizeof why) && js_validate(doc, one, n2, why, sizeof why));
    char bad[64];
    cJSON *broken = cJSON_Parse("{\"x\":{\"$ref\":\"#/nope\"}}");
    CHECK(!js_refs_resolve(broken, broken, bad, sizeof bad) && !strcmp(bad, "#/nope"));
    CHECK(js_refs_resolve(doc, doc, bad, sizeof bad));
    cJSON_Delete(broken);
    cJSON_Delete(any);
    cJSON_Delete(one);
    cJSON_Delete(n1);
    cJSON_Delete(n2);
    cJSON_Delete(s);
    cJSON_Delete(doc);
}

int main(void) {
    test_validator();
    test_route_parser();
    char *doc_text = slurp(DOC_FILE), *main_text = slurp(MAIN_FILE);
    T_CASE("files");
    CHECKF(doc_text && main_text, "run from the repository root: %s and %s", DOC_FILE, MAIN_FILE);
    cJSON *doc = doc_text ? cJSON_Parse(doc_text) : NULL;
    CHECKF(doc != NULL, DOC_FILE " is JSON");
    route routes[MAX_ROUTES];
    int nr = main_text ? parse_routes(main_text, routes, MAX_ROUTES) : -1;
    CHECKF(nr > 0, "the route table of " MAIN_FILE " parses");
    if (doc) test_document(doc);
    if (doc && nr > 0) test_routes(doc, routes, nr);
    cJSON_Delete(doc);
    free(doc_text);
    free(main_text);
    return t_done("openapi");
}
