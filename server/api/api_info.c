/* api_info.c — the read-only endpoints: /v1/health, /v1/ready, /v1/info, /v1/families, /metrics,
 * /v1/whoami, and the playground's static files at /. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "engine/prewarm.h"
#include "jsonval.h"
#include "kernels/data.h"
#include "kernels/stats.h"

void wp_api_health(void *appv, const wp_req *req, wp_resp *resp) {
    (void)appv, (void)req;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", "ok");
    wp_resp_json(resp, 200, o);
}

/* {"name", "role", "quotas": {buffer_bytes, shm_bytes, jobs, channels, rate: a count, or null for none}} */
void wp_api_whoami(void *appv, const wp_req *req, wp_resp *resp) {
    (void)appv;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", wp_user_name(req->user));
    cJSON_AddStringToObject(o, "role", wp_role_name(wp_user_role(req->user)));
    const wp_quota *q = wp_user_quota(req->user);
    const char *const names[] = {"buffer_bytes", "shm_bytes", "jobs", "channels", "rate"};
    const uint64_t values[] = {q->buffer_bytes, q->shm_bytes, q->jobs, q->channels, q->rate};
    cJSON *quotas = cJSON_AddObjectToObject(o, "quotas");
    for (int i = 0; i < 5; i++) {
        if (values[i])
            cJSON_AddItemToObject(quotas, names[i], wp_json_int_raw((long long)values[i]));
        else
            cJSON_AddNullToObject(quotas, names[i]);
    }
    wp_resp_json(resp, 200, o);
}

void wp_api_ready(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    (void)req;
    cJSON *o = cJSON_CreateObject();
    bool ready = wp_placement_ready(app); /* while at least one device is usable */
    cJSON_AddStringToObject(o, "status", ready ? "ready" : "unavailable");
    cJSON_AddStringToObject(o, "backend", wp_backend_name(app->preferred));
    /* 503 while no device is usable, or while --prewarm is still warming (503 "warming", prewarm.h). */
    int status = ready ? 200 : 503;
    if (ready && app->prewarm) status = wp_prewarm_ready_json(app->prewarm, o);
    if (!ready)
        snprintf(resp->retry_after, sizeof resp->retry_after, "%d", 60);
    else if (status == 503)
        snprintf(resp->retry_after, sizeof resp->retry_after, "%d", 1); /* warming */
    wp_resp_json(resp, status, o);
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
    cJSON_AddItemToObject(o, "devices", wp_placement_json(app)); /* every device jobs run on (placement.h) */
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
    wp_jobs_stats js;
    wp_jobs_stats_get(app->jobs, &js);
    cJSON_AddNumberToObject(l, "max_jobs", js.max_jobs);
    cJSON_AddNumberToObject(l, "job_workers", js.workers);
    cJSON_AddNumberToObject(l, "job_ttl_s", js.ttl_s);
    wp_buffers_stats bs;
    wp_buffers_stats_get(app->buffers, &bs);
    cJSON_AddNumberToObject(l, "buffer_quota", (double)bs.quota);
    cJSON_AddNumberToObject(l, "buffer_ttl_s", bs.ttl_s);
    cJSON_AddNumberToObject(l, "buffer_max_ttl_s", bs.max_ttl_s);
    cJSON_AddNumberToObject(l, "max_elements", (double)app->max_elements);
    cJSON_AddNumberToObject(l, "emu_max_elements", (double)app->emu_max_elements);
    cJSON_AddBoolToObject(l, "shm", app->regions != NULL); /* --shm on|off */
    if (app->regions) {
        wp_regions_stats rs;
        wp_regions_stats_get(app->regions, &rs);
        cJSON_AddNumberToObject(l, "shm_max_bytes", (double)rs.max_bytes);
        cJSON_AddBoolToObject(l, "shm_remote", app->shm_remote);
    }
    cJSON_AddNumberToObject(o, "uptime_s", wp_ms_since(app->start_ns) / 1000.0);
    wp_resp_json(resp, 200, o);
}

static const char *const out_names[] = {"value", "bool", "mask", "mask_pred"};
static const char *const op_names[] = {"sum", "prod", "min", "max", "and", "or", "xor"};

/* A family's statistics and norms (kernels/stats.h): more names for "op", and which take "ddof". */
static void stats_json(cJSON *o, cJSON *ops) {
    cJSON *st = cJSON_AddObjectToObject(o, "stats");
    cJSON *names = cJSON_AddArrayToObject(st, "ops"), *with_ddof = cJSON_AddArrayToObject(st, "ddof_ops");
    for (int k = WP_STAT_NONE + 1; k < WP_STAT_KINDS; k++) {
        cJSON_AddItemToArray(ops, cJSON_CreateString(wp_stat_name(k)));
        cJSON_AddItemToArray(names, cJSON_CreateString(wp_stat_name(k)));
        if (wp_stat_takes_ddof(k)) cJSON_AddItemToArray(with_ddof, cJSON_CreateString(wp_stat_name(k)));
    }
    cJSON *ddof = cJSON_AddArrayToObject(st, "ddof");
    cJSON_AddItemToArray(ddof, cJSON_CreateNumber(0));
    cJSON_AddItemToArray(ddof, cJSON_CreateNumber(1));
}

/* The schema of a data-parallel family (kernels/data.h): what /v1/reduce or /v1/scan take for it. */
static void data_family_json(cJSON *o, const wp_family *f) {
    static const char *const outs[] = {
        [WP_DATA_VALUE] = "value",     [WP_DATA_GROUPS] = "groups", [WP_DATA_EACH] = "each",
        [WP_DATA_ARG] = "value_index", [WP_DATA_RUNS] = "runs",     [WP_DATA_COUNTS] = "counts"};
    cJSON *d = cJSON_AddObjectToObject(o, "data");
    cJSON_AddStringToObject(d, "endpoint",
                            (f->flags & WP_F_NO_INPUT)               ? "generate input"
                            : (f->flags & (WP_F_SCAN | WP_F_RADIUS)) ? "/v1/scan"
                                                                     : "/v1/reduce");
    cJSON_AddStringToObject(d, "result", outs[f->data_out]);
    cJSON *st = cJSON_AddArrayToObject(d, "strategies");
    for (int k = 1; k < WP_STRAT_COUNT; k++)
        if (f->strategies & WP_STRATBIT(k)) cJSON_AddItemToArray(st, cJSON_CreateString(wp_strategy_name(k)));
    cJSON_AddStringToObject(d, "strategy_default", wp_strategy_name(f->strategy_default));
    cJSON_AddNumberToObject(d, "block_default", f->block_default);
    cJSON_AddBoolToObject(d, "block_by_size", f->block_for != NULL); /* no block named: picked per job by n */
    cJSON *blocks = cJSON_AddArrayToObject(d, "blocks");
    for (int b = 32; b <= 1024; b *= 2) cJSON_AddItemToArray(blocks, cJSON_CreateNumber(b));
    cJSON_AddBoolToObject(d, "width_groups", (f->flags & WP_F_WIDTH_GROUP) != 0);
    cJSON_AddBoolToObject(d, "block_groups", (f->flags & WP_F_BLOCK_GROUP) != 0);
    if (f->flags & WP_F_BLOCK_GROUP) { /* the group: any block 1..1024 (CUB's BlockReduce/BlockScan) */
        cJSON_AddNumberToObject(d, "block_min", 1);
        cJSON_AddNumberToObject(d, "block_max", WP_GROUP_BLOCK_MAX);
    }
    cJSON_AddBoolToObject(d, "segments", (f->flags & WP_F_SEGMENTS) != 0);
    cJSON_AddBoolToObject(d, "scan", (f->flags & WP_F_SCAN) != 0);        /* exclusive/inclusive, init */
    cJSON_AddBoolToObject(d, "accumulate", (f->flags & WP_F_ACCUM) != 0); /* f16/bf16: "f32" or "native" */
    /* "map" (transform-reduce, over x and y: a second input), and "op": "dot" where there is an op */
    cJSON_AddBoolToObject(d, "map", (f->flags & WP_F_MAP) != 0);
    cJSON_AddBoolToObject(d, "keys", (f->flags & WP_F_KEYS) != 0); /* reduce_by_key: "keys", an integer array */
    if (f->flags & WP_F_KEYS) {
        cJSON *kt = cJSON_AddArrayToObject(d, "key_types");
        for (int t = 0; t < WP_TYPE_COUNT; t++)
            if (wp_type_is_int((wp_type)t)) cJSON_AddItemToArray(kt, cJSON_CreateString(wp_type_name((wp_type)t)));
    }
    if (f->flags & WP_F_RADIUS) {
        cJSON_AddNumberToObject(d, "radius_min", 1);
        cJSON_AddNumberToObject(d, "radius_max", WP_STENCIL_MAX_RADIUS);
    }
    if (f->flags & WP_F_BINS) { /* histogram: "bins" and "range": [lo, hi] */
        cJSON_AddNumberToObject(d, "bins_min", 1);
        cJSON_AddNumberToObject(d, "bins_max", WP_HIST_BINS_MAX);
        cJSON_AddNumberToObject(d, "bins_smem_max", WP_HIST_SMEM_BINS);
        cJSON_AddBoolToObject(d, "range", 1);
    }
}

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
    for (int w = 1; w <= WP_W_ANY_MAX && (f->widths & WP_W_ANY); w++) /* every integer 1..32: logical warps */
        cJSON_AddItemToArray(widths, cJSON_CreateNumber(w));
    for (int l = 0; (1 << l) <= WP_WAVE_MAX && !(f->widths & WP_W_ANY); l++)
        if (f->widths & (1u << l)) cJSON_AddItemToArray(widths, cJSON_CreateNumber(1 << l));
    cJSON_AddBoolToObject(o, "wave", (f->flags & WP_F_WAVE) != 0); /* width is an AMD wave size */
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
        if (f->flags & WP_F_STATS) stats_json(o, ops);
    }
    cJSON_AddStringToObject(o, "output", out_names[f->out]);
    cJSON *bk = cJSON_AddArrayToObject(o, "backends");
    if (f->backends & WP_BACKEND_CUDA) cJSON_AddItemToArray(bk, cJSON_CreateString("cuda"));
    if (f->backends & WP_BACKEND_EMU) cJSON_AddItemToArray(bk, cJSON_CreateString("emu"));
    if (f->min_sm) cJSON_AddNumberToObject(o, "min_sm", f->min_sm);
    if (f->flags & WP_F_DATA) data_family_json(o, f);
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
