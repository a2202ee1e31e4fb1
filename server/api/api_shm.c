/* api_shm.c — /v1/shm: shared-memory regions (engine/regions.h) registered (POST), listed and described
 * (GET) and removed (DELETE); and wp_api_shm_allowed, the check every use of a region passes (a region
 * as the input or output of /v1/reduce, /v1/scan and PUT /v1/buffers). Regions come only from local
 * peers (a Unix socket or loopback) unless --shm-remote, and from nobody under --shm off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "util/json.h"

#define SHM_PATH "/v1/shm/"
#define MAX_JSON_INT 9007199254740992LL /* 2^53: what a JSON number holds exactly */

int wp_api_shm_allowed(const wp_app *app, const wp_req *req, const char *field, wp_err *err) {
    if (!app->regions)
        return WP_FAIL(err, 403, "shm_disabled", field, "shared-memory regions are off on this daemon (--shm off)");
    if (!req->peer_local && !app->shm_remote)
        return WP_FAIL(err, 403, "shm_remote", field,
                       "shared-memory regions are taken from local peers only (a Unix socket or loopback; "
                       "--shm-remote allows others)");
    return 0;
}

static cJSON *region_json(const wp_region_info *r) {
    cJSON *o = cJSON_CreateObject();
    char location[64];
    snprintf(location, sizeof location, SHM_PATH "%s", r->id);
    wp_json_str_k(o, "id", r->id);
    wp_json_str_k(o, "owner", r->owner);
    wp_json_str_k(o, "name", r->name);
    wp_json_num_k(o, "offset", (double)r->offset);
    wp_json_num_k(o, "bytes", (double)r->bytes);
    wp_json_num_k(o, "object_bytes", (double)r->object_bytes);
    wp_json_bool_k(o, "registered", r->registered);
    wp_json_bool_k(o, "read_only", r->read_only);
    wp_json_num_k(o, "users", r->users);
    wp_json_num_k(o, "created", r->created);
    cJSON_AddStringToObject(o, "location", location);
    return o;
}

static const char *const add_fields[] = {"name", "offset", "bytes", NULL};

static int parse_add(const cJSON *body, const char **name, uint64_t *offset, int64_t *bytes, wp_err *err) {
    if (wp_json_only(body, "", add_fields, err)) return -1;
    const cJSON *n = wp_json_get(body, "name");
    if (!n)
        return WP_FAIL(err, 400, "missing_field", "name", "name (the shared-memory object, /warpd-...) is required");
    if (!cJSON_IsString(n)) return WP_FAIL(err, 400, "wrong_type", "name", "name must be a string");
    long long v = 0;
    const cJSON *o = wp_json_get(body, "offset");
    if (o && wp_json_int(o, "offset", 0, MAX_JSON_INT, &v, err)) return -1;
    *offset = (uint64_t)v;
    const cJSON *b = wp_json_get(body, "bytes");
    v = -1;
    if (b && wp_json_int(b, "bytes", 1, MAX_JSON_INT, &v, err)) return -1;
    *bytes = v;
    *name = n->valuestring;
    return 0;
}

void wp_api_shm_add(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    const char *name = NULL;
    uint64_t offset = 0;
    int64_t bytes = -1;
    wp_region_info info;
    cJSON *body = NULL;
    if (wp_api_shm_allowed(app, req, "", &err) || !(body = wp_api_parse_body(app, req, &err)) ||
        parse_add(body, &name, &offset, &bytes, &err) ||
        wp_regions_add(app->regions, req->user, name, offset, bytes, &info, &err)) {
        cJSON_Delete(body);
        wp_resp_error(resp, &err);
        return;
    }
    cJSON_Delete(body);
    snprintf(resp->location, sizeof resp->location, SHM_PATH "%s", info.id);
    wp_resp_json(resp, 201, region_json(&info));
}

void wp_api_shm_list(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    wp_region_info *v = NULL;
    size_t n = 0;
    if (wp_api_shm_allowed(app, req, "", &err) || wp_regions_list(app->regions, req->user, &v, &n, &err)) {
        wp_resp_error(resp, &err);
        return;
    }
    wp_regions_stats st;
    wp_regions_stats_get(app->regions, &st);
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "regions");
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(arr, region_json(&v[i]));
    free(v);
    wp_json_num_k(o, "count", (double)n);
    wp_json_num_k(o, "bytes_mapped", (double)st.bytes);
    wp_json_num_k(o, "max_bytes", (double)st.max_bytes);
    wp_resp_json(resp, 200, o);
}

static const char *region_id(const wp_req *req, wp_err *err) {
    const char *id = req->path + strlen(SHM_PATH);
    if (!*id || strchr(id, '/')) {
        WP_FAIL(err, 404, "unknown_shm", "id", "no region at %.80s", req->path);
        return NULL;
    }
    return id;
}

void wp_api_shm_get(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    wp_region_info info;
    const char *id = NULL;
    if (wp_api_shm_allowed(app, req, "", &err) || !(id = region_id(req, &err)) ||
        wp_regions_info(app->regions, req->user, id, &info, &err)) {
        wp_resp_error(resp, &err);
        return;
    }
    wp_resp_json(resp, 200, region_json(&info));
}

void wp_api_shm_delete(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    wp_region_info info;
    bool pending = false;
    const char *id = NULL;
    if (wp_api_shm_allowed(app, req, "", &err) || !(id = region_id(req, &err)) ||
        wp_regions_remove(app->regions, req->user, id, &info, &pending, &err)) {
        wp_resp_error(resp, &err);
        return;
    }
    cJSON *o = region_json(&info);
    wp_json_bool_k(o, "deleted", true);
    wp_json_bool_k(o, "pending", pending);
    wp_resp_json(resp, 200, o);
}

/* ---- a region in a job: the "shm" input and the "output":{"shm":...} result ---- */

static const char *const use_fields[] = {"id", "offset", "count", NULL};

/* The object {"id", "offset", ...} named `field` ("shm", "output.shm"; its keys' errors name field.key):
 * the held region and offset. */
wp_region *wp_api_shm_hold(wp_app *app, const wp_req *req, const cJSON *at, const char *field, uint64_t *offset,
                           wp_err *err) {
    char prefix[48];
    snprintf(prefix, sizeof prefix, "%.40s.", field);
    if (wp_api_shm_allowed(app, req, field, err)) return NULL;
    if (!cJSON_IsObject(at)) {
        WP_FAIL(err, 400, "wrong_type", field, "%s must be an object {\"id\", \"offset\", ...}", field);
        return NULL;
    }
    if (wp_json_only(at, prefix, use_fields, err)) return NULL;
    const cJSON *id = wp_json_get(at, "id");
    char id_field[64], off_field[64];
    snprintf(id_field, sizeof id_field, "%sid", prefix);
    snprintf(off_field, sizeof off_field, "%soffset", prefix);
    if (!cJSON_IsString(id)) {
        WP_FAIL(err, 400, id ? "wrong_type" : "missing_field", id_field, "%s (a region's id) must be a string",
                id_field);
        return NULL;
    }
    long long v = 0;
    const cJSON *o = wp_json_get(at, "offset");
    if (o && wp_json_int(o, off_field, 0, MAX_JSON_INT, &v, err)) return NULL;
    *offset = (uint64_t)v;
    return wp_regions_hold(app->regions, req->user, id->valuestring, id_field, err);
}

wp_region *wp_api_shm_input(wp_app *app, const wp_req *req, const cJSON *shm, wp_type t, uint64_t *offset,
                            uint64_t *count, wp_err *err) {
    wp_region *g = wp_api_shm_hold(app, req, shm, "shm", offset, err);
    if (!g) return NULL;
    wp_region_info r;
    wp_region_describe(g, &r);
    const uint64_t esize = wp_type_size(t);
    long long v = -1;
    const cJSON *c = wp_json_get(shm, "count");
    if (c && wp_json_int(c, "shm.count", 0, MAX_JSON_INT, &v, err)) return wp_region_put(g), NULL;
    if (*offset % esize)
        WP_FAIL(err, 400, "out_of_range", "shm.offset", "shm.offset %llu is not a multiple of the %s size (%llu)",
                (unsigned long long)*offset, wp_type_name(t), (unsigned long long)esize);
    else if (*offset > r.bytes)
        WP_FAIL(err, 400, "out_of_range", "shm.offset", "shm.offset %llu lies past the region's %llu bytes",
                (unsigned long long)*offset, (unsigned long long)r.bytes);
    else if (v >= 0 && (uint64_t)v > (r.bytes - *offset) / esize)
        WP_FAIL(err, 400, "out_of_range", "shm.count",
                "%lld %s elements from offset %llu lie past the region's %llu bytes", v, wp_type_name(t),
                (unsigned long long)*offset, (unsigned long long)r.bytes);
    if (err->status) return wp_region_put(g), NULL;
    *count = v >= 0 ? (uint64_t)v : (r.bytes - *offset) / esize;
    return g;
}

wp_region *wp_api_shm_output(wp_app *app, const wp_req *req, const cJSON *shm, uint64_t bytes, uint64_t *offset,
                             wp_err *err) {
    if (wp_json_get(shm, "count")) {
        WP_FAIL(err, 400, "unknown_field", "output.shm.count",
                "an output region takes id and offset; the count is the result's");
        return NULL;
    }
    wp_region *g = wp_api_shm_hold(app, req, shm, "output.shm", offset, err);
    if (!g) return NULL;
    wp_region_info r;
    wp_region_describe(g, &r);
    if (*offset > r.bytes || bytes > r.bytes - *offset) {
        WP_FAIL(err, 400, "out_of_range", "output.shm.offset",
                "the result's %llu bytes from offset %llu do not fit the region's %llu bytes",
                (unsigned long long)bytes, (unsigned long long)*offset, (unsigned long long)r.bytes);
        wp_region_put(g);
        return NULL;
    }
    return g;
}

cJSON *wp_api_shm_written(const wp_region *g, uint64_t offset, uint64_t count, uint64_t bytes) {
    wp_region_info r;
    wp_region_describe(g, &r);
    cJSON *o = cJSON_CreateObject(), *s = wp_json_obj_k(o, "shm");
    wp_json_str_k(s, "id", r.id);
    wp_json_num_k(s, "offset", (double)offset);
    wp_json_num_k(s, "count", (double)count);
    wp_json_num_k(s, "bytes", (double)bytes);
    return o;
}
