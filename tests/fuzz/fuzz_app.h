/* fuzz_app.h — the daemon's handlers as the libFuzzer harnesses drive them: one wp_app on the CPU
 * emulator (no GPU, as CI has), small limits so every input stays cheap (generate.n and every job at
 * most FZ_MAX_ELEMENTS), and requests synthesized the way jobs.c makes them (conn NULL, so no query).
 * Every answer must be 2xx or 4xx, never 5xx, with a JSON body, and {"error":{"code","message"}} on
 * a 4xx. Nothing here compiles per input: NVRTC runs only for the kernels fz_app_warm names, once per
 * process (or never, with their cubins in WARPD_FUZZ_CACHE, a disk cache dir), and a handler that
 * would compile anything else answers "deferred" on its first (may_defer) call and is not called again.
 * One harness per file includes this; everything is static to it. */
#ifndef WP_FUZZ_APP_H
#define WP_FUZZ_APP_H

#include <time.h>

#include "api/api.h"
#include "api/jsonval.h"
#include "fuzz.h"

#define FZ_MAX_ELEMENTS 4096 /* --emu-max-elements and --max-elements of the fuzzed app */
#define FZ_MAX_DEPTH 64
#define FZ_QUOTA (64u << 20)

static wp_app fz_app;

/* The app, once (LLVMFuzzerInitialize). routes: the job kinds (NULL: no jobs). */
static inline void fz_app_open(const wp_route *routes) {
    wp_app *a = &fz_app;
    wp_err err = {0};
    a->start_ns = wp_now_ns();
    a->max_body = 1u << 20;
    a->max_depth = FZ_MAX_DEPTH;
    a->max_elements = FZ_MAX_ELEMENTS;
    a->emu_max_elements = FZ_MAX_ELEMENTS;
    a->emu = wp_backend_emu_open();
    a->preferred = a->emu;
    a->devices[0] = a->emu; /* placement's one device, as main.c's --emu-devices 1 */
    a->n_devices = 1;
    snprintf(a->cuda_reason, sizeof a->cuda_reason, "fuzzing on the emulator");
    snprintf(a->arch, sizeof a->arch, "sm_90");
    snprintf(a->templates_dir, sizeof a->templates_dir, "%s", WP_DEFAULT_TEMPLATES);
    snprintf(a->web_dir, sizeof a->web_dir, "%s", WP_DEFAULT_WEB);
    a->jit = wp_jit_open(WP_DEFAULT_TEMPLATES, WP_DEFAULT_CUDA_HOME "/include", &err);
    const char *dir = getenv("WARPD_FUZZ_CACHE");
    if (a->jit) a->cache = wp_cache_open(dir && *dir ? dir : NULL, 64u << 20, &err);
    wp_buffers_config bc = {.quota = FZ_QUOTA, .ttl_s = 3600, .max_ttl_s = 7 * 86400};
    if (a->cache) a->buffers = wp_buffers_open(&bc, &err);
    a->reduce = wp_reduce_engine_open();
    wp_jobs_config jc = {.max_jobs = 16, .workers = 1, .ttl_s = 600};
    if (a->buffers && routes) a->jobs = wp_jobs_open(&jc, routes, a, &err);
    if (!a->emu || !a->jit || !a->cache || !a->buffers || !a->reduce || (routes && !a->jobs)) {
        fprintf(stderr, "fuzz: cannot build the app: %s\n", err.msg);
        abort();
    }
}

/* One request to a handler, its body a NUL-terminated copy of data (NULL when empty, as http.c has it). */
static inline void fz_call(wp_handler fn, const char *method, const char *path, const char *content_type,
                           const uint8_t *data, size_t n, bool may_defer, wp_resp *resp) {
    char *body = n ? fz_text(data, n) : NULL;
    wp_req req = {.method = method,
                  .path = path,
                  .content_type = content_type,
                  .accept = "application/json",
                  .body = body,
                  .body_len = n,
                  .t_start_ns = wp_now_ns(),
                  .may_defer = may_defer};
    memset(resp, 0, sizeof *resp);
    fn(&fz_app, &req, resp);
    free(body);
}

static inline void fz_fail(const char *what, const wp_resp *r, const char *why) {
    fprintf(stderr, "fuzz: %s answered %d (%s): %.*s\n", what, r->status, why,
            (int)(r->body_len < 600 ? r->body_len : 600), r->body ? r->body : "");
    abort();
}

/* The answer is what a client may get: deferred (first call only), or 2xx/4xx with well-formed JSON.
 * Returns the parsed body (caller deletes) or NULL when deferred or not JSON. */
static inline cJSON *fz_check_resp(const char *what, const wp_resp *r) {
    if (r->defer) {
        if (r->status || r->body) fz_fail(what, r, "deferred with an answer");
        return NULL;
    }
    if (r->status < 200 || r->status >= 500 || (r->status >= 300 && r->status < 400)) fz_fail(what, r, "not 2xx/4xx");
    bool json = r->content_type && !strncmp(r->content_type, "application/json", 16);
    if (!json) {
        if (r->status >= 400) fz_fail(what, r, "an error that is not JSON");
        return NULL;
    }
    cJSON *o = cJSON_ParseWithLength(r->body, r->body_len);
    if (!cJSON_IsObject(o)) fz_fail(what, r, "not a JSON object");
    if (r->status >= 400) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
        if (!cJSON_IsString(code) || !code->valuestring[0] || !cJSON_IsString(msg) || !msg->valuestring[0])
            fz_fail(what, r, "an error without code and message");
    }
    return o;
}

/* Forgets every buffer a request left (a PUT, or "output":"buffer"), so the quota never fills. */
static inline void fz_drop_buffers(void) {
    wp_buffer_info *list = NULL;
    size_t n = 0;
    wp_err err = {0};
    if (wp_buffers_list(fz_app.buffers, NULL, &list, &n, &err)) abort();
    for (size_t i = 0; i < n; i++) wp_buffers_delete(fz_app.buffers, NULL, list[i].id, NULL, &err);
    free(list);
}

/* Runs the handler of a WORK | TRY_INLINE route as http.c does: first on "the HTTP thread" (may_defer),
 * then, when it deferred and again_ok says the second call compiles nothing, on "a worker". */
static inline void fz_try_inline(const char *what, wp_handler fn, const char *path, const uint8_t *data, size_t n,
                                 bool again_ok) {
    wp_resp r;
    fz_call(fn, "POST", path, "application/json", data, n, true, &r);
    cJSON_Delete(fz_check_resp(what, &r));
    free(r.body);
    if (!r.defer || !again_ok) return;
    fz_call(fn, "POST", path, "application/json", data, n, false, &r);
    if (r.defer) fz_fail(what, &r, "deferred on a worker");
    cJSON_Delete(fz_check_resp(what, &r));
    free(r.body);
}

/* The body as the daemon reads it (wp_api_parse_body): one JSON text, nothing but whitespace after
 * it; NULL otherwise. */
static inline cJSON *fz_parse_strict(const uint8_t *data, size_t n) {
    const char *end = NULL;
    cJSON *o = n ? cJSON_ParseWithLengthOpts((const char *)data, n, &end, 0) : NULL;
    if (o && wp_json_trailing((const char *)data, n, end) < n) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* Whether POST /v1/compile with this body would run NVRTC (seconds: not per input): a valid spec of a
 * family with a template, alone or among "specs". */
static inline bool fz_would_compile(const uint8_t *data, size_t n) {
    cJSON *body = n && wp_json_depth((const char *)data, n) <= FZ_MAX_DEPTH ? fz_parse_strict(data, n) : NULL;
    bool yes = false;
    const cJSON *specs = cJSON_GetObjectItemCaseSensitive(body, "specs");
    const cJSON *one = cJSON_IsArray(specs) ? specs->child : body;
    for (; one && !yes; one = cJSON_IsArray(specs) ? one->next : NULL) {
        wp_spec spec = {0};
        wp_err err = {0};
        yes = cJSON_IsObject(one) && !wp_spec_from_json(one, fz_app.arch, &spec, &err) && spec.family->template_file;
        wp_spec_free(&spec);
    }
    cJSON_Delete(body);
    return yes;
}

/* The body's "compile" member is true (a /v1/reduce or /v1/scan that compiles on emu when deferred). */
static inline bool fz_asks_compile(const uint8_t *data, size_t n) {
    cJSON *o = cJSON_ParseWithLength((const char *)data, n);
    bool yes = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "compile"));
    cJSON_Delete(o);
    return yes;
}

/* Compiles (or reads from WARPD_FUZZ_CACHE) the kernels of these /v1/warp bodies into the memory cache,
 * so inputs that keep their spec run through the emulator instead of stopping at "deferred". */
static inline void fz_app_warm(const char *const *warp_bodies) {
    for (; *warp_bodies; warp_bodies++) {
        wp_resp r;
        fz_call(wp_api_warp, "POST", "/v1/warp", "application/json", (const uint8_t *)*warp_bodies,
                strlen(*warp_bodies), false, &r);
        if (r.status != 200) fz_fail(*warp_bodies, &r, "a warm-up kernel failed");
        free(r.body);
    }
}

static inline void fz_sleep_us(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

#endif
