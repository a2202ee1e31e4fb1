/* api_cache.c — the HTTP face of cache control:
 *   GET    /v1/cache          every entry of both tiers, most recently used first, with the totals
 *   GET    /v1/cache/{hash}   one entry (404 unknown_hash)
 *   DELETE /v1/cache/{hash}   removes one entry (?tier=memory|disk|all, default all); 404 unknown_hash,
 *                             400 bad_hash when the hash is not 64 hex digits
 *   DELETE /v1/cache          prunes every entry, or with ?older_than=SECONDS (or 90s, 15m, 1h, 2d)
 *                             those not used for that long; ?tier= as above
 * An entry in use by a running job stays alive for that job; the next request reloads or recompiles
 * (cache.h). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "util/sha256.h"

#define CACHE_PATH "/v1/cache/"
#define MAX_OLDER_THAN_S (100.0 * 365 * 24 * 3600)

/* RFC 3339 UTC with milliseconds, or null for 0 (unknown). */
static cJSON *time_json(double t) {
    if (t <= 0) return cJSON_CreateNull();
    time_t secs = (time_t)t;
    struct tm tm;
    gmtime_r(&secs, &tm);
    char buf[80];
    int ms = (int)((t - (double)secs) * 1000.0);
    if (ms > 999) ms = 999;
    snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
    return cJSON_CreateString(buf);
}

static const char *tier_name(unsigned tiers) {
    return tiers == WP_TIER_ALL ? "both" : tiers == WP_TIER_MEMORY ? "memory" : "disk";
}

static cJSON *entry_json(const wp_cache_entry *e) {
    cJSON *o = cJSON_CreateObject();
    char hash[65];
    wp_hex(e->key, 32, hash);
    cJSON_AddStringToObject(o, "hash", hash);
    if (e->key_text[0])
        cJSON_AddStringToObject(o, "key", e->key_text);
    else
        cJSON_AddNullToObject(o, "key");
    cJSON_AddNumberToObject(o, "bytes", (double)(e->disk_bytes ? e->disk_bytes : e->memory_bytes));
    cJSON_AddNumberToObject(o, "memory_bytes", (double)e->memory_bytes);
    cJSON_AddNumberToObject(o, "disk_bytes", (double)e->disk_bytes);
    cJSON_AddItemToObject(o, "created", time_json(e->created));
    cJSON_AddItemToObject(o, "last_used", time_json(e->last_used));
    cJSON_AddNumberToObject(o, "hits", (double)e->hits);
    cJSON_AddStringToObject(o, "tier", tier_name(e->tiers));
    return o;
}

static cJSON *totals_json(wp_app *app) {
    wp_cache_stats st;
    wp_cache_stats_get(app->cache, &st);
    const char *dir = wp_cache_dir(app->cache);
    cJSON *o = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(o, "memory");
    cJSON_AddNumberToObject(m, "entries", (double)st.entries);
    cJSON_AddNumberToObject(m, "bytes", (double)st.bytes);
    cJSON_AddNumberToObject(m, "cap_bytes", (double)st.cap_bytes);
    cJSON *d = cJSON_AddObjectToObject(o, "disk");
    if (dir)
        cJSON_AddStringToObject(d, "dir", dir);
    else
        cJSON_AddNullToObject(d, "dir");
    cJSON_AddNumberToObject(d, "entries", (double)st.disk_entries);
    cJSON_AddNumberToObject(d, "bytes", (double)st.disk_bytes);
    cJSON_AddNumberToObject(d, "cap_bytes", (double)st.disk_cap_bytes);
    cJSON_AddNumberToObject(d, "evictions", (double)st.disk_evictions);
    return o;
}

/* ?tier=memory|disk|all (default all). */
static int tier_arg(const wp_req *req, unsigned *tiers, wp_err *err) {
    const char *t = wp_req_query(req, "tier");
    *tiers = WP_TIER_ALL;
    if (!t || !strcmp(t, "all")) return 0;
    if (!strcmp(t, "memory"))
        *tiers = WP_TIER_MEMORY;
    else if (!strcmp(t, "disk"))
        *tiers = WP_TIER_DISK;
    else
        return WP_FAIL(err, 400, "bad_value", "tier", "tier must be memory, disk or all");
    return 0;
}

/* The {hash} of /v1/cache/{hash}: 64 hex digits (either case). */
static int hash_arg(const wp_req *req, uint8_t key[32], char hex[65], wp_err *err) {
    const char *h = req->path + strlen(CACHE_PATH);
    size_t n = strlen(h);
    bool ok = n == 64;
    for (size_t i = 0; ok && i < n; i++) ok = isxdigit((unsigned char)h[i]);
    if (!ok) return WP_FAIL(err, 400, "bad_hash", "hash", "the hash must be 64 hex digits (a cache entry's \"hash\")");
    for (int i = 0; i < 32; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        key[i] = (uint8_t)v;
    }
    wp_hex(key, 32, hex);
    return 0;
}

/* "3600", "90s", "15m", "1h", "2d" (fractions allowed) -> seconds > 0. */
static int duration_arg(const char *v, double *secs, wp_err *err) {
    char *end = NULL;
    double x = v && *v && !isspace((unsigned char)*v) ? strtod(v, &end) : NAN;
    double unit = 1;
    if (end && *end) {
        unit = !strcmp(end, "s")   ? 1
               : !strcmp(end, "m") ? 60
               : !strcmp(end, "h") ? 3600
               : !strcmp(end, "d") ? 86400
                                   : 0;
    }
    if (!end || unit == 0 || !isfinite(x) || x <= 0 || x * unit > MAX_OLDER_THAN_S)
        return WP_FAIL(err, 400, "bad_value", "older_than",
                       "older_than must be a positive number of seconds, or a duration like 90s, 15m, 1h, 2d");
    *secs = x * unit;
    return 0;
}

void wp_api_cache_list(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    (void)req;
    wp_err err = {0};
    wp_cache_entry *v = NULL;
    size_t n = 0;
    if (wp_cache_list(app->cache, &v, &n, &err)) {
        wp_resp_error(resp, &err);
        return;
    }
    cJSON *o = totals_json(app);
    cJSON_AddNumberToObject(o, "count", (double)n);
    cJSON *arr = cJSON_AddArrayToObject(o, "entries");
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(arr, entry_json(&v[i]));
    free(v);
    wp_resp_json(resp, 200, o);
}

void wp_api_cache_get(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    uint8_t key[32];
    char hex[65];
    wp_cache_entry *v = NULL;
    size_t n = 0;
    if (hash_arg(req, key, hex, &err) || wp_cache_list(app->cache, &v, &n, &err)) {
        wp_resp_error(resp, &err);
        return;
    }
    size_t i = 0;
    while (i < n && memcmp(v[i].key, key, 32) != 0) i++;
    if (i < n)
        wp_resp_json(resp, 200, entry_json(&v[i]));
    else
        wp_resp_error(resp, (WP_FAIL(&err, 404, "unknown_hash", "hash", "no cache entry %s", hex), &err));
    free(v);
}

void wp_api_cache_delete(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    uint8_t key[32];
    char hex[65];
    unsigned tiers;
    if (hash_arg(req, key, hex, &err) || tier_arg(req, &tiers, &err)) {
        wp_resp_error(resp, &err);
        return;
    }
    unsigned removed = wp_cache_remove(app->cache, key, tiers);
    if (!removed) {
        WP_FAIL(&err, 404, "unknown_hash", "hash", "no cache entry %s%s", hex,
                tiers == WP_TIER_ALL      ? ""
                : tiers == WP_TIER_MEMORY ? " in memory"
                                          : " on disk");
        wp_resp_error(resp, &err);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "hash", hex);
    cJSON_AddBoolToObject(o, "deleted", 1);
    cJSON_AddStringToObject(o, "tier", tier_name(removed));
    wp_resp_json(resp, 200, o);
}

void wp_api_cache_prune(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    wp_err err = {0};
    unsigned tiers;
    double older_than = 0;
    const char *ot = wp_req_query(req, "older_than");
    if (tier_arg(req, &tiers, &err) || (ot && duration_arg(ot, &older_than, &err))) {
        wp_resp_error(resp, &err);
        return;
    }
    wp_cache_pruned pr;
    wp_cache_prune(app->cache, older_than, tiers, &pr);
    cJSON *o = cJSON_CreateObject();
    if (ot)
        cJSON_AddNumberToObject(o, "older_than_s", older_than);
    else
        cJSON_AddNullToObject(o, "older_than_s");
    cJSON *r = cJSON_AddObjectToObject(o, "removed");
    cJSON_AddNumberToObject(r, "memory", (double)pr.memory_entries);
    cJSON_AddNumberToObject(r, "disk", (double)pr.disk_entries);
    cJSON *b = cJSON_AddObjectToObject(o, "bytes_freed");
    cJSON_AddNumberToObject(b, "memory", (double)pr.memory_bytes);
    cJSON_AddNumberToObject(b, "disk", (double)pr.disk_bytes);
    wp_resp_json(resp, 200, o);
}
