/* api_compile.c — POST /v1/compile: compile (or find in the cache) the kernel of a spec and report
 * its key, where it came from, compile time, NVRTC log, registers, spills, and on request the PTX,
 * the C++ that was compiled and the SASS (when nvdisasm is installed). Data families take the fields
 * that choose their kernel (strategy, block, ...), so any kernel a reduce or scan runs can be shown.
 * {"specs":[...]} compiles many at once (prewarm.c). */
#include <string.h>

#include "api.h"
#include "engine/compile.h"
#include "engine/prewarm.h"
#include "jsonval.h"
#include "util/json.h"

/* POST /v1/compile with "specs": 200 {"results":[...],"count","ok","failed","compiled","elapsed_ms"},
 * 400 only when the body itself is malformed. */
static void compile_many(wp_app *app, const cJSON *body, wp_resp *resp) {
    wp_err err = {0};
    const cJSON *specs = wp_prewarm_specs(body, &err);
    if (!specs) {
        wp_resp_error(resp, &err);
        return;
    }
    wp_batch_progress p = {.total = cJSON_GetArraySize(specs)};
    uint64_t t0 = wp_now_ns();
    cJSON *results = wp_compile_batch(app, specs, app->compile_threads, &p);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "count", p.total);
    cJSON_AddNumberToObject(o, "ok", p.total - atomic_load(&p.failed));
    cJSON_AddNumberToObject(o, "failed", atomic_load(&p.failed));
    cJSON_AddNumberToObject(o, "compiled", atomic_load(&p.compiled));
    cJSON_AddNumberToObject(o, "shared", atomic_load(&p.shared));
    cJSON_AddNumberToObject(o, "elapsed_ms", wp_ms_since(t0));
    cJSON_AddItemToObject(o, "results", results);
    wp_resp_json(resp, 200, o);
}

/* The access log's kernel fields from a compile's answer (static strings only: the note outlives it). */
static void note_compile(wp_resp *resp, const cJSON *body, const cJSON *out) {
    const cJSON *fam = wp_json_get(body, "family");
    const cJSON *src = wp_json_get(out, "cache");
    const cJSON *hash = wp_json_get(out, "hash");
    const wp_family *f = cJSON_IsString(fam) ? wp_family_find(fam->valuestring) : NULL;
    const char *cache = NULL;
    for (int i = 0; cJSON_IsString(src) && i <= WP_SRC_COMPILE; i++)
        if (!strcmp(src->valuestring, wp_source_name((wp_source)i))) cache = wp_source_name((wp_source)i);
    wp_resp_note_kernel(resp, NULL, cache, f ? f->name : NULL, cJSON_IsString(hash) ? hash->valuestring : NULL);
}

void wp_api_compile(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    cJSON *out = NULL;
    cJSON *body = wp_api_parse_body(app, req, &err);
    bool many = body && wp_json_get(body, "specs");
    if (many && wp_user_role(req->user) < WP_ROLE_ADMIN) { /* prewarm fills the shared cache: the admin's */
        WP_FAIL(&err, 403, "forbidden", "specs", "a prewarm ({\"specs\": [...]}) needs the admin role; %s has %s",
                wp_user_name(req->user), wp_role_name(wp_user_role(req->user)));
        wp_resp_error(resp, &err);
    } else if (many) { /* {"specs":[...]}: prewarm.c */
        compile_many(app, body, resp);
    } else if (body && wp_compile_spec(app, body, NULL, &out, &err) == 0) {
        note_compile(resp, body, out);
        wp_resp_json(resp, 200, out);
    } else {
        wp_resp_error(resp, &err);
    }
    cJSON_Delete(body);
}
