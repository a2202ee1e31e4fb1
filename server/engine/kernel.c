/* kernel.c — from a spec to a function ready to run: cache key, cache lookup (memory, disk, or one
 * NVRTC compile), and the backend's load, each step timed. */
#include <cjson/cJSON.h>
#include <string.h>

#include "app.h"
#include "batch.h"
#include "placement.h"
#include "util/json.h"
#include "util/sha256.h"

typedef struct {
    wp_jit *jit;
    const wp_spec *spec;
    wp_metrics *metrics;
    wp_artifact *prebuilt; /* compiled already (a group, prewarm.c): taken instead of compiling */
} build_ctx;

static int build_with_nvrtc(void *ctx, wp_artifact *out, wp_err *err) {
    build_ctx *b = ctx;
    if (b->prebuilt && b->prebuilt->cubin) {
        *out = *b->prebuilt;
        memset(b->prebuilt, 0, sizeof *b->prebuilt);
        return 0;
    }
    uint64_t t0 = wp_now_ns();
    int rc = wp_jit_compile(b->jit, b->spec, out, NULL, err);
    wp_metrics_observe_compile(b->metrics, (double)(wp_now_ns() - t0) / 1e9);
    return rc;
}

static int kernel_get(wp_app *app, const wp_spec *s, wp_backend *b, bool memory_only, wp_artifact *prebuilt,
                      wp_ready_kernel *out, wp_err *err) {
    memset(out, 0, sizeof *out);
    uint64_t t0 = wp_now_ns();
    uint8_t key[32];
    if (wp_jit_key(app->jit, s, key, out->key_text, sizeof out->key_text, err)) return -1;
    wp_hex(key, 32, out->hash);
    uint64_t t1 = wp_now_ns();
    out->key_us = (double)(t1 - t0) / 1e3;
    build_ctx ctx = {app->jit, s, app->metrics, prebuilt};
    if (memory_only) {
        out->kernel = wp_cache_peek(app->cache, key);
        if (!out->kernel) return 1;
        out->source = WP_SRC_MEMORY;
    } else {
        out->kernel = wp_cache_get_named(app->cache, key, out->key_text, build_with_nvrtc, &ctx, &out->source, err);
        if (!out->kernel) return -1;
    }
    uint64_t t2 = wp_now_ns();
    out->cache_us = (double)(t2 - t1) / 1e3;
    if (out->source == WP_SRC_COMPILE) out->compile_ms = wp_kernel_artifact(out->kernel)->compile_ms;
    if (b && wp_kernel_function(out->kernel, b, wp_backend_load, wp_backend_unload, &out->fn, err)) {
        wp_kernel_release(app->cache, out->kernel);
        out->kernel = NULL;
        return -1;
    }
    out->load_us = wp_us_since(t2);
    return 0;
}

double wp_app_kernel_key(wp_app *app, const wp_spec *s, char *key_text, size_t n, char hash[65]) {
    uint8_t key[32];
    wp_err err = {0};
    const uint64_t t0 = wp_now_ns();
    if (app && app->jit && wp_jit_key(app->jit, s, key, key_text, n, &err) == 0)
        wp_hex(key, 32, hash);
    else
        wp_spec_key_text(s, key_text, n);
    return wp_us_since(t0);
}

int wp_app_kernel_get(wp_app *app, const wp_spec *s, wp_backend *b, wp_ready_kernel *out, wp_err *err) {
    return kernel_get(app, s, b, false, NULL, out, err);
}

int wp_app_kernel_get_prebuilt(wp_app *app, const wp_spec *s, wp_artifact *prebuilt, wp_ready_kernel *out,
                               wp_err *err) {
    return kernel_get(app, s, NULL, false, prebuilt, out, err);
}

int wp_app_kernel_memory(wp_app *app, const wp_spec *s, wp_backend *b, wp_ready_kernel *out, wp_err *err) {
    return kernel_get(app, s, b, true, NULL, out, err);
}

int wp_app_kernel_peek(wp_app *app, const wp_spec *s, wp_backend *b, wp_ready_kernel *out, wp_err *err) {
    /* On the HTTP thread a GPU job goes to a worker unless --inline-gpu lets it stay. Whether the device is
     * idle (WP_INLINE_IDLE) the handler asked once, at its start (wp_app_may_run_inline): asked again
     * here it could change its mind after the job's upload. */
    if (b && !wp_backend_on_host(b) && app->inline_gpu == WP_INLINE_NEVER) {
        memset(out, 0, sizeof *out);
        return 1;
    }
    return kernel_get(app, s, b, true, NULL, out, err);
}

bool wp_app_may_run_inline(const wp_app *app, const wp_backend *b) {
    if (wp_backend_on_host(b) || app->inline_gpu == WP_INLINE_ALWAYS) return true;
    /* idle: only while this is the one request in flight (with others about, the batcher packs them and an
     * HTTP thread waiting for a device would hold theirs up: on the H100 idle without this check gave 46k
     * req/s at 256 connections against 67k for never) and the device has nothing running */
    return app->inline_gpu == WP_INLINE_IDLE && wp_http_active(app->http) <= 1 && wp_backend_running(b) == 0 &&
           wp_backend_lane_free((wp_backend *)b);
}

bool wp_app_inline_alone(const wp_app *app, const wp_backend *b, bool no_wait) {
    return no_wait && !wp_backend_on_host(b) && app->inline_gpu == WP_INLINE_IDLE;
}

bool wp_app_hands_gpu_jobs(const wp_app *app) {
    return app->cuda && app->batcher && wp_batcher_runners(app->batcher) > 0;
}

bool wp_app_defers_gpu_jobs(const wp_app *app) {
    return app->cuda && !wp_app_hands_gpu_jobs(app) &&
           (app->inline_gpu == WP_INLINE_NEVER || (app->inline_gpu == WP_INLINE_IDLE && wp_http_active(app->http) > 1));
}

int wp_inline_mode_parse(const char *text, wp_inline_mode *out) {
    static const char *const names[] = {
        [WP_INLINE_IDLE] = "idle", [WP_INLINE_NEVER] = "never", [WP_INLINE_ALWAYS] = "always"};
    for (int i = 0; text && i < (int)WP_ARRAY_LEN(names); i++)
        if (!strcmp(text, names[i])) {
            *out = (wp_inline_mode)i;
            return 0;
        }
    return -1;
}

void wp_app_kernel_put(wp_app *app, wp_ready_kernel *rk) {
    if (rk->kernel) wp_kernel_release(app->cache, rk->kernel);
    rk->kernel = NULL;
}

/* A device of the serving backend for a job: the pinned one or the least loaded (placement.h). Under
 * "auto" with every GPU lost, the emulator (the daemon keeps serving). */
static int pick_device(wp_app *app, const char *want, int pinned, wp_backend **out, wp_err *err) {
    wp_err perr = {0};
    *out = wp_placement_pick(app, NULL, pinned, &perr);
    if (*out) return 0;
    if (app->cuda && pinned < 0 && !strcmp(want, "auto")) { /* every GPU lost: auto serves on the emulator */
        *out = app->emu;
        return 0;
    }
    if (app->cuda && pinned < 0 && perr.code && !strcmp(perr.code, "no_device"))
        return WP_FAIL(err, 503, "cuda_unavailable", "backend", "the CUDA device is lost until warpd restarts: %s",
                       perr.msg);
    *err = perr;
    return -1;
}

int wp_app_pick(wp_app *app, const char *want, int pinned, const wp_family *f, wp_backend **out, wp_err *err) {
    if (!want) want = "auto";
    wp_backend *pick = NULL;
    if (!strcmp(want, "auto")) {
        if (pick_device(app, want, pinned, &pick, err)) return -1;
    } else if (!strcmp(want, "emu")) {
        if (app->cuda && pinned >= 0)
            return WP_FAIL(err, 400, "bad_device", "device",
                           "device pins one of this server's GPUs; backend emu is not one of them");
        if (app->cuda)
            pick = app->emu;
        else if (pick_device(app, want, pinned, &pick, err))
            return -1;
    } else if (!strcmp(want, "cuda")) {
        if (!app->cuda)
            return WP_FAIL(err, 409, "backend_unavailable", "backend", "the cuda backend is not available: %s",
                           app->cuda_reason);
        if (pick_device(app, want, pinned, &pick, err)) return -1;
    } else {
        return WP_FAIL(err, 400, "bad_value", "backend", "backend must be \"auto\", \"cuda\" or \"emu\"");
    }
    /* A family the GPU cannot run (emulator-only, or too new for the device) runs on emu under auto. */
    if (f && !wp_backend_on_host(pick)) {
        const wp_device_info di = *wp_backend_facts(pick);
        bool can = (f->backends & WP_BACKEND_CUDA) && di.sm >= f->min_sm;
        if (!can) {
            if (!strcmp(want, "cuda") && !(f->backends & WP_BACKEND_CUDA))
                return WP_FAIL(err, 409, "backend_unsupported", "backend",
                               "family %s runs on the emulator only (use backend auto or emu)", f->name);
            if (!strcmp(want, "cuda"))
                return WP_FAIL(err, 409, "backend_unsupported", "backend",
                               "family %s does not run on cuda here (needs sm_%d, device is sm_%d)", f->name, f->min_sm,
                               di.sm);
            pick = app->emu;
        }
    }
    if (f && wp_backend_on_host(pick) && !(f->backends & WP_BACKEND_EMU))
        return WP_FAIL(err, 409, "backend_unsupported", "backend", "family %s does not run on the emulator", f->name);
    *out = pick;
    return 0;
}

int wp_app_backend(wp_app *app, const cJSON *req, const wp_family *f, wp_backend **out, wp_err *err) {
    const cJSON *b = wp_json_get(req, "backend");
    if (b && !cJSON_IsString(b)) return WP_FAIL(err, 400, "wrong_type", "backend", "backend must be a string");
    int pinned;
    if (wp_placement_pin(req, &pinned, err)) return -1;
    return wp_app_pick(app, b ? b->valuestring : "auto", pinned, f, out, err);
}
