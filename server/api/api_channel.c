/* api_channel.c — /v1/channels: doorbell channels (engine/channels.h) opened in a region (POST), listed
 * and described (GET) and closed (DELETE); and wp_api_channel_serve, which runs a channel's request as
 * POST /v1/reduce or /v1/scan would run. A channel is opened only by a request that passed the door's
 * checks (token, Host, Origin) and the regions' own (a local peer unless --shm-remote; --shm on): its
 * requests carry that request's authority, and come from whoever may write the client's object. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "util/json.h"

#define CHANNELS_PATH "/v1/channels/"

/* Channels need regions and a limit above 0. */
static int channels_allowed(const wp_app *app, const wp_req *req, wp_err *err) {
    if (wp_api_shm_allowed(app, req, "", err)) return -1;
    if (!app->channels)
        return WP_FAIL(err, 403, "channels_disabled", "", "channels are off on this daemon (--channels-max 0)");
    return 0;
}

static cJSON *channel_json(const wp_channel_info *c) {
    cJSON *o = cJSON_CreateObject();
    char location[64];
    snprintf(location, sizeof location, CHANNELS_PATH "%s", c->id);
    wp_json_str_k(o, "id", c->id);
    wp_json_str_k(o, "owner", c->owner);
    cJSON *shm = wp_json_obj_k(o, "shm");
    wp_json_str_k(shm, "id", c->shm);
    wp_json_num_k(shm, "offset", (double)c->offset);
    wp_json_num_k(o, "bytes", (double)c->bytes);
    cJSON *layout = wp_json_obj_k(o, "layout");
    wp_json_num_k(layout, "request_offset", WP_CHANNEL_HEADER);
    wp_json_num_k(layout, "request_bytes", c->request_bytes);
    wp_json_num_k(layout, "answer_offset", (double)WP_CHANNEL_HEADER + c->request_bytes);
    wp_json_num_k(layout, "answer_bytes", c->answer_bytes);
    wp_json_num_k(o, "spin_us", c->spin_us);
    wp_json_num_k(o, "ttl_s", c->ttl_s);
    wp_json_num_k(o, "requests", (double)c->requests);
    wp_json_bool_k(o, "sleeping", c->sleeping);
    wp_json_num_k(o, "created", c->created);
    wp_json_num_k(o, "last_used", c->last_used);
    cJSON_AddStringToObject(o, "location", location);
    return o;
}

static const char *const add_fields[] = {"shm", "bytes", "spin_us", "ttl_s", NULL};

/* An optional whole-number field in [lo, hi] into *v (left as it is when absent). */
static int opt_u32(const cJSON *body, const char *name, long long lo, long long hi, uint32_t *v, wp_err *err) {
    const cJSON *f = wp_json_get(body, name);
    long long x = 0;
    if (f && wp_json_int(f, name, lo, hi, &x, err)) return -1;
    if (f) *v = (uint32_t)x;
    return 0;
}

static int parse_add(wp_app *app, const wp_req *req, const cJSON *body, wp_channel_args *a, wp_err *err) {
    if (wp_json_only(body, "", add_fields, err)) return -1;
    const cJSON *shm = wp_json_get(body, "shm");
    if (!shm)
        return WP_FAIL(err, 400, "missing_field", "shm",
                       "shm ({\"id\", \"offset\"}: the channel's region) is required");
    if (wp_json_get(shm, "count"))
        return WP_FAIL(err, 400, "unknown_field", "shm.count",
                       "a channel takes shm.id and shm.offset; its size is bytes");
    long long bytes = 0;
    const cJSON *b = wp_json_get(body, "bytes");
    if (b && wp_json_int(b, "bytes", WP_CHANNEL_MIN_BYTES, 1LL << 40, &bytes, err)) return -1;
    a->bytes = (uint64_t)bytes;
    a->spin_us = WP_CHANNEL_SPIN_DEFAULT_US;
    a->ttl_s = WP_CHANNEL_TTL_DEFAULT_S;
    if (opt_u32(body, "spin_us", 0, WP_CHANNEL_SPIN_MAX_US, &a->spin_us, err) ||
        opt_u32(body, "ttl_s", 1, WP_CHANNEL_TTL_MAX_S, &a->ttl_s, err))
        return -1;
    a->user = req->user;
    a->region = wp_api_shm_hold(app, req, shm, "shm", &a->offset, err);
    return a->region ? 0 : -1;
}

void wp_api_channels_add(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    wp_channel_args a = {0};
    wp_channel_info info;
    cJSON *body = NULL;
    if (channels_allowed(app, req, &err) || !(body = wp_api_parse_body(app, req, &err)) ||
        parse_add(app, req, body, &a, &err) || wp_channels_add(app->channels, &a, &info, &err)) {
        cJSON_Delete(body);
        wp_resp_error(resp, &err);
        return;
    }
    cJSON_Delete(body);
    snprintf(resp->location, sizeof resp->location, CHANNELS_PATH "%s", info.id);
    wp_resp_json(resp, 201, channel_json(&info));
}

void wp_api_channels_list(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    wp_channel_info *v = NULL;
    size_t n = 0;
    if (channels_allowed(app, req, &err) || wp_channels_list(app->channels, req->user, &v, &n, &err)) {
        wp_resp_error(resp, &err);
        return;
    }
    wp_channels_stats st;
    wp_channels_stats_get(app->channels, &st);
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "channels");
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(arr, channel_json(&v[i]));
    free(v);
    wp_json_num_k(o, "count", (double)n);
    wp_json_num_k(o, "requests", (double)st.requests);
    wp_json_num_k(o, "closed", (double)st.closed);
    wp_json_num_k(o, "truncated", (double)st.truncated);
    wp_resp_json(resp, 200, o);
}

static const char *channel_id(const wp_req *req, wp_err *err) {
    const char *id = req->path + strlen(CHANNELS_PATH);
    if (!*id || strchr(id, '/')) {
        WP_FAIL(err, 404, "unknown_channel", "id", "no channel at %.80s", req->path);
        return NULL;
    }
    return id;
}

void wp_api_channel_get(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    wp_channel_info info;
    const char *id = NULL;
    if (channels_allowed(app, req, &err) || !(id = channel_id(req, &err)) ||
        wp_channels_info(app->channels, req->user, id, &info, &err)) {
        wp_resp_error(resp, &err);
        return;
    }
    wp_resp_json(resp, 200, channel_json(&info));
}

void wp_api_channel_delete(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    wp_channel_info info;
    const char *id = NULL;
    if (channels_allowed(app, req, &err) || !(id = channel_id(req, &err)) ||
        wp_channels_remove(app->channels, req->user, id, &info, &err)) {
        wp_resp_error(resp, &err);
        return;
    }
    cJSON *o = channel_json(&info);
    wp_json_bool_k(o, "deleted", true);
    wp_resp_json(resp, 200, o);
}

void wp_api_channel_serve(void *appv, const wp_user *user, unsigned route, const char *body, size_t len, wp_resp *out) {
    const bool scan = route == WP_CHANNEL_SCAN;
    wp_req req = {.method = "POST",
                  .path = scan ? "/v1/scan" : "/v1/reduce",
                  .content_type = "application/json",
                  .accept = "application/json",
                  .body = len ? body : NULL,
                  .body_len = len,
                  .t_start_ns = wp_now_ns(),
                  .may_defer = true, /* as on an HTTP thread: a cached kernel answers at once */
                  .peer_local = true,
                  .user = user};
    *out = (wp_resp){0};
    if (!wp_users_current(((wp_app *)appv)->users, user)) { /* removed by a reload since it opened the channel */
        wp_err e;
        WP_FAIL(&e, 401, "unauthorized", "", "the channel's owner %s is no longer a user of this daemon",
                wp_user_name(user));
        wp_resp_error(out, &e);
        return;
    }
    (scan ? wp_api_scan : wp_api_reduce)(appv, &req, out);
    if (out->defer) { /* what a worker would do next, here: this thread is the channel's own */
        free(out->body);
        *out = (wp_resp){0};
        req.may_defer = false;
        (scan ? wp_api_scan : wp_api_reduce)(appv, &req, out);
    }
    if (!out->status) out->status = 500;
}
