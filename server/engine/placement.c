/* placement.c — picks the device for a job (placement.h) from app->devices: the buffer's, the pinned
 * one, or the least-loaded usable one, by the jobs each backend counts as running
 * (wp_backend_running). Owns nothing but the round-robin counter in the app. */
#include "placement.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "util/json.h"

static int ordinal_of(const wp_app *app, const wp_backend *b) {
    for (int i = 0; i < app->n_devices; i++)
        if (app->devices[i] == b) return i;
    return -1;
}

bool wp_placement_has(const wp_app *app, const wp_backend *b) { return ordinal_of(app, b) >= 0; }

wp_backend *wp_placement_pick(wp_app *app, const wp_buf *buf, int pinned, wp_err *err) {
    char why[200];
    if (buf) {
        wp_backend *b = wp_buf_backend(buf);
        int at = ordinal_of(app, b);
        if (pinned >= 0 && at >= 0 && pinned != at) {
            WP_FAIL(err, 400, "device_mismatch", "device", "the buffer lives on device %d, not %d", at, pinned);
            return NULL;
        }
        return b;
    }
    if (pinned >= 0) {
        if (pinned >= app->n_devices) {
            WP_FAIL(err, 400, "bad_device", "device", "no device %d: this server has %d (0..%d)", pinned,
                    app->n_devices, app->n_devices - 1);
            return NULL;
        }
        wp_backend *b = app->devices[pinned];
        if (!wp_backend_usable(b, why, sizeof why)) {
            WP_FAIL(err, 503, "device_lost", "device", "device %d is lost until warpd restarts: %s", pinned, why);
            return NULL;
        }
        return b;
    }
    if (app->n_devices == 1) { /* the only one: no rotation to take (a line every request would write) */
        if (wp_backend_usable(app->devices[0], NULL, 0)) return app->devices[0];
        WP_FAIL(err, 503, "no_device", "", "every device is lost until warpd restarts");
        return NULL;
    }
    /* least loaded, starting the scan at a rotating device so ties spread */
    unsigned start = app->n_devices ? (unsigned)atomic_fetch_add(&app->placement_rr, 1) % (unsigned)app->n_devices : 0;
    wp_backend *best = NULL;
    int best_load = 0;
    for (int k = 0; k < app->n_devices; k++) {
        wp_backend *b = app->devices[(start + (unsigned)k) % (unsigned)app->n_devices];
        if (!wp_backend_usable(b, NULL, 0)) continue;
        int load = wp_backend_running(b);
        if (!best || load < best_load) best = b, best_load = load;
    }
    if (!best) WP_FAIL(err, 503, "no_device", "", "every device is lost until warpd restarts");
    return best;
}

int wp_placement_pin(const cJSON *body, int *pinned, wp_err *err) {
    *pinned = -1;
    const cJSON *v = body ? wp_json_get(body, "device") : NULL;
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != floor(v->valuedouble) || v->valuedouble > 1e6)
        return WP_FAIL(err, 400, "bad_device", "device", "device must be a device ordinal (0, 1, ...)");
    *pinned = (int)v->valuedouble;
    return 0;
}

int wp_placement_pin_text(const char *text, int *pinned, wp_err *err) {
    *pinned = -1;
    if (!text) return 0;
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (!*text || *end || v < 0 || v > 1000000)
        return WP_FAIL(err, 400, "bad_device", "device", "device must be a device ordinal (0, 1, ...)");
    *pinned = (int)v;
    return 0;
}

static int add_shard(wp_app *app, long ord, wp_backend **devs, int *n, wp_err *err) {
    char why[200];
    if (ord < 0 || ord >= app->n_devices)
        return WP_FAIL(err, 400, "bad_shard", "shard", "no device %ld: this server has %d", ord, app->n_devices);
    for (int i = 0; i < *n; i++)
        if (devs[i] == app->devices[ord])
            return WP_FAIL(err, 400, "bad_shard", "shard", "device %ld is listed twice", ord);
    if (!wp_backend_usable(app->devices[ord], why, sizeof why))
        return WP_FAIL(err, 503, "device_lost", "shard", "device %ld is lost until warpd restarts: %s", ord, why);
    devs[(*n)++] = app->devices[ord];
    return 0;
}

int wp_placement_shards(wp_app *app, const cJSON *v, const char *t, wp_backend **devs, int *n, wp_err *err) {
    *n = 0;
    const char *all = v && cJSON_IsString(v) ? v->valuestring : t;
    if (all && !strcmp(all, "all")) {
        for (int i = 0; i < app->n_devices; i++)
            if (wp_backend_usable(app->devices[i], NULL, 0)) devs[(*n)++] = app->devices[i];
        return *n ? 0 : WP_FAIL(err, 503, "no_device", "shard", "every device is lost until warpd restarts");
    }
    if (v && cJSON_IsArray(v) && cJSON_GetArraySize(v) >= 1) {
        for (const cJSON *x = v->child; x; x = x->next) {
            if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble))
                return WP_FAIL(err, 400, "bad_shard", "shard", "shard lists device ordinals, e.g. [0, 1]");
            /* checked before the cast: a double past long's range (1e95) made the cast undefined */
            if (x->valuedouble < 0 || x->valuedouble >= (double)app->n_devices)
                return WP_FAIL(err, 400, "bad_shard", "shard", "no device %.0f: this server has %d", x->valuedouble,
                               app->n_devices);
            if (add_shard(app, (long)x->valuedouble, devs, n, err)) return -1;
        }
        return 0;
    }
    if (!v && t && *t) {
        for (const char *p = t; *p;) {
            char *end = NULL;
            long ord = strtol(p, &end, 10);
            if (end == p || (*end && *end != ','))
                return WP_FAIL(err, 400, "bad_shard", "shard", "?shard= takes all or ordinals like 0,1");
            if (add_shard(app, ord, devs, n, err)) return -1;
            p = *end ? end + 1 : end;
        }
        return 0;
    }
    return WP_FAIL(err, 400, "bad_shard", "shard", "shard must be \"all\" or a list of device ordinals");
}

bool wp_placement_ready(wp_app *app) {
    for (int i = 0; i < app->n_devices; i++)
        if (wp_backend_usable(app->devices[i], NULL, 0)) return true;
    return false;
}

cJSON *wp_placement_json(wp_app *app) {
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; list && i < app->n_devices; i++) {
        wp_backend *b = app->devices[i];
        wp_device_info di;
        wp_backend_info(b, &di);
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "ordinal", i);
        cJSON_AddStringToObject(d, "backend", wp_backend_name(b));
        cJSON_AddStringToObject(d, "name", di.name);
        if (di.sm) {
            char sm[16];
            snprintf(sm, sizeof sm, "sm_%d", di.sm);
            cJSON_AddStringToObject(d, "sm", sm);
        }
        cJSON_AddNumberToObject(d, "memory_total", (double)di.mem_total);
        cJSON_AddNumberToObject(d, "memory_free", (double)di.mem_free);
        cJSON_AddNumberToObject(d, "streams", wp_backend_streams(b));
        cJSON_AddNumberToObject(d, "jobs_running", wp_backend_running(b));
        char why[200];
        bool ok = wp_backend_usable(b, why, sizeof why);
        cJSON_AddBoolToObject(d, "usable", ok);
        if (!ok) cJSON_AddStringToObject(d, "lost_reason", why);
        cJSON_AddItemToArray(list, d);
    }
    return list;
}
