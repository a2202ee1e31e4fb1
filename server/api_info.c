/* api_info.c — the read-only endpoints: /v1/health, /v1/ready, /v1/info, /v1/families, /metrics,
 * and the playground's static files at /. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "jsonval.h"

cJSON *wp_app_parse_body(wp_app *app, const wp_req *req, wp_err *err) {
    if (!req->body || !req->body_len) {
        WP_FAIL(err, 400, "bad_json", "body", "the request body is empty; send a JSON object");
        return NULL;
    }
    if (wp_json_depth(req->body, req->body_len) > app->max_depth) {
        WP_FAIL(err, 400, "too_deep", "body", "JSON nesting deeper than %d levels", app->max_depth);
        return NULL;
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(req->body, req->body_len, &end, 0);
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
    return j;
}

void wp_api_health(void *appv, const wp_req *req, wp_resp *resp) {
    (void)appv, (void)req;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", "ok");
    wp_resp_json(resp, 200, o);
}

void wp_api_ready(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    (void)req;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", "ready");
    cJSON_AddStringToObject(o, "backend", wp_backend_name(app->preferred));
    wp_resp_json(resp, 200, o);
}

static cJSON *device_json(wp_backend *b) {
    wp_device_info di;
    wp_backend_info(b, &di);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "backend", di.backend ? di.backend : wp_backend_name(b));
    cJSON_AddStringToObject(d, "name", di.name);
    if (di.sm) {
        char sm[16];
        snprintf(sm, sizeof sm, "sm_%d", di.sm);
        cJSON_AddStringToObject(d, "sm", sm);
    }
    cJSON_AddNumberToObject(d, "sms", di.sms);
    cJSON_AddNumberToObject(d, "memory_total", (double)di.mem_total);
    cJSON_AddNumberToObject(d, "memory_free", (double)di.mem_free);
    if (di.driver_version) cJSON_AddNumberToObject(d, "driver_version", di.driver_version);
    return d;
}

void wp_api_info(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    (void)req;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", "warpd");
    cJSON_AddStringToObject(o, "version", WP_VERSION);
    cJSON_AddStringToObject(o, "backend", wp_backend_name(app->preferred));
    cJSON_AddItemToObject(o, "device", device_json(app->preferred));
    cJSON *bks = cJSON_AddArrayToObject(o, "backends");
    if (app->cuda) cJSON_AddItemToArray(bks, cJSON_CreateString("cuda"));
    cJSON_AddItemToArray(bks, cJSON_CreateString("emu"));
    if (!app->cuda) cJSON_AddStringToObject(o, "cuda_unavailable", app->cuda_reason);
    cJSON_AddStringToObject(o, "arch", app->arch);
    int maj, min;
    wp_jit_version(app->jit, &maj, &min);
    cJSON *nv = cJSON_AddObjectToObject(o, "nvrtc");
    char ver[16];
    snprintf(ver, sizeof ver, "%d.%d", maj, min);
    cJSON_AddStringToObject(nv, "version", ver);
    cJSON_AddStringToObject(nv, "options", wp_jit_options_text(app->jit));
    wp_cache_stats cs;
    wp_cache_stats_get(app->cache, &cs);
    cJSON *c = cJSON_AddObjectToObject(o, "cache");
    cJSON_AddStringToObject(c, "dir", wp_cache_dir(app->cache) ? wp_cache_dir(app->cache) : "");
    cJSON_AddNumberToObject(c, "entries", (double)cs.entries);
    cJSON_AddNumberToObject(c, "bytes", (double)cs.bytes);
    cJSON_AddNumberToObject(c, "cap_bytes", (double)cs.cap_bytes);
    cJSON_AddNumberToObject(c, "hits_memory", (double)cs.hits_memory);
    cJSON_AddNumberToObject(c, "hits_disk", (double)cs.hits_disk);
    cJSON_AddNumberToObject(c, "misses", (double)cs.misses);
    cJSON_AddNumberToObject(c, "compiles", (double)cs.compiles);
    cJSON_AddNumberToObject(c, "compile_failures", (double)cs.compile_failures);
    cJSON_AddNumberToObject(c, "evictions", (double)cs.evictions);
    cJSON_AddNumberToObject(c, "corrupt_files", (double)cs.corrupt_files);
    cJSON *l = cJSON_AddObjectToObject(o, "limits");
    cJSON_AddNumberToObject(l, "max_body", (double)app->max_body);
    cJSON_AddNumberToObject(l, "max_depth", app->max_depth);
    cJSON_AddNumberToObject(l, "max_lanes", WP_MAX_LANES);
    cJSON_AddNumberToObject(l, "max_elems", WP_MAX_ELEMS);
    cJSON_AddNumberToObject(o, "uptime_s", wp_ms_since(app->start_ns) / 1000.0);
    wp_resp_json(resp, 200, o);
}

static const char *const out_names[] = {"value", "bool", "mask", "mask_pred"};
static const char *const op_names[] = {"sum", "prod", "min", "max", "and", "or", "xor"};

static cJSON *family_json(const wp_family *f) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", f->name);
    cJSON_AddStringToObject(o, "doc", f->doc ? f->doc : "");
    if (f->template_file) cJSON_AddStringToObject(o, "template", f->template_file);
    if (f->kernel) cJSON_AddStringToObject(o, "kernel", f->kernel);
    cJSON *types = cJSON_AddArrayToObject(o, "types");
    for (int t = 0; t < WP_TYPE_COUNT; t++)
        if (f->types & WP_TBIT(t)) cJSON_AddItemToArray(types, cJSON_CreateString(wp_type_name((wp_type)t)));
    cJSON *widths = cJSON_AddArrayToObject(o, "widths");
    for (int l = 0; l < 6; l++)
        if (f->widths & (1u << l)) cJSON_AddItemToArray(widths, cJSON_CreateNumber(1 << l));
    cJSON_AddBoolToObject(o, "mask", !(f->flags & WP_F_NO_MASK));
    cJSON_AddBoolToObject(o, "tiled", (f->flags & WP_F_TILED) != 0);
    cJSON_AddBoolToObject(o, "input", !(f->flags & WP_F_NO_INPUT));
    cJSON_AddNumberToObject(o, "max_elems", (f->flags & WP_F_ARRAY) ? WP_MAX_ELEMS : 1);
    cJSON *args = cJSON_AddArrayToObject(o, "args");
    if (f->arg) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, "name", f->arg);
        cJSON_AddNumberToObject(a, "default", f->arg_default);
        cJSON_AddNumberToObject(a, "min", f->arg_min);
        cJSON_AddNumberToObject(a, "max", f->arg_max);
        cJSON_AddBoolToObject(a, "per_lane", 1);
        cJSON_AddItemToArray(args, a);
    }
    if (f->flags & WP_F_SWAP) {
        for (int i = 0; i < 2; i++) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddStringToObject(a, "name", i ? "second" : "first");
            cJSON_AddNumberToObject(a, "default", i);
            cJSON_AddNumberToObject(a, "min", 0);
            cJSON_AddNumberToObject(a, "max", WP_MAX_ELEMS - 1);
            cJSON_AddBoolToObject(a, "per_lane", 0);
            cJSON_AddItemToArray(args, a);
        }
    }
    if (f->flags & WP_F_PRED) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, "name", "pred");
        cJSON *ops = cJSON_AddArrayToObject(a, "ops");
        const char *p[] = {"nonzero", "gt", "ge", "lt", "le", "eq", "ne", "between"};
        for (size_t i = 0; i < WP_ARRAY_LEN(p); i++) cJSON_AddItemToArray(ops, cJSON_CreateString(p[i]));
        cJSON_AddItemToArray(args, a);
    }
    if (f->flags & WP_F_OP) {
        cJSON *ops = cJSON_AddArrayToObject(o, "ops");
        for (int k = 0; k < 7; k++)
            if (f->ops & WP_OPBIT(k)) cJSON_AddItemToArray(ops, cJSON_CreateString(op_names[k]));
        cJSON_AddBoolToObject(o, "expr", (f->ops & WP_OPBIT(WP_OP_EXPR)) != 0);
    }
    cJSON_AddStringToObject(o, "output", out_names[f->out]);
    cJSON *bk = cJSON_AddArrayToObject(o, "backends");
    if (f->backends & WP_BACKEND_CUDA) cJSON_AddItemToArray(bk, cJSON_CreateString("cuda"));
    if (f->backends & WP_BACKEND_EMU) cJSON_AddItemToArray(bk, cJSON_CreateString("emu"));
    if (f->min_sm) cJSON_AddNumberToObject(o, "min_sm", f->min_sm);
    return o;
}

void wp_api_families(void *appv, const wp_req *req, wp_resp *resp) {
    (void)appv, (void)req;
    int n;
    const wp_family *const *list = wp_family_list(&n);
    cJSON *o = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(o, "families");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, family_json(list[i]));
    cJSON *types = cJSON_AddArrayToObject(o, "types");
    for (int t = 0; t < WP_TYPE_COUNT; t++) cJSON_AddItemToArray(types, cJSON_CreateString(wp_type_name((wp_type)t)));
    wp_resp_json(resp, 200, o);
}
