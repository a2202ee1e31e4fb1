/* api_metrics.c — GET /metrics in the Prometheus text format 0.0.4: requests, cache, compiles, queue,
 * jobs, buffers; then what metrics.c owns (histograms, build info, devices, process). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "api.h"
#include "engine/bgbuild.h"
#include "util/histo.h"

/* Histograms, build info, the devices (every GPU served, none on emu) and the process. */
static void write_registry(wp_app *app, FILE *f) {
    wp_metrics_build b = {.version = WP_VERSION};
    int maj = 0, min = 0;
    wp_jit_version(app->jit, &maj, &min);
    snprintf(b.nvrtc, sizeof b.nvrtc, "%d.%d", maj, min);
    wp_metrics_device dev[WP_MAX_DEVICES];
    int ndev = 0;
    for (int i = 0; i < app->n_devices && ndev < WP_MAX_DEVICES; i++) {
        wp_backend *be = app->devices[i];
        if (!be || wp_backend_on_host(be)) continue; /* GPUs only: the emulator's "memory" is the host's */
        wp_device_info di;
        wp_backend_info(be, &di);
        if (!ndev)
            snprintf(b.driver, sizeof b.driver, "%d.%d", di.driver_version / 1000, di.driver_version % 1000 / 10);
        dev[ndev++] =
            (wp_metrics_device){wp_backend_index(be), wp_backend_facts(be)->name, di.mem_total,        di.mem_free,
                                di.zero_copy_runs,    di.resident_runs,           di.resident_launches};
    }
    wp_metrics_write(app->metrics, f, &b, dev, ndev);
}

/* One counter with a label: HELP, TYPE, then a sample per value (n of them). */
static void labeled_counter(FILE *f, const char *name, const char *help, const char *label, const char *const *values,
                            const unsigned long long *counts, int n) {
    fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
    for (int i = 0; i < n; i++) fprintf(f, "%s{%s=\"%s\"} %llu\n", name, label, values[i], counts[i]);
}

/* One counter or gauge without labels; f is the section's output. */
#define C(name, help, v)                                                                                               \
    fprintf(f, "# HELP " name " " help "\n# TYPE " name " counter\n" name " %llu\n", (unsigned long long)(v))
#define G(name, help, v)                                                                                               \
    fprintf(f, "# HELP " name " " help "\n# TYPE " name " gauge\n" name " %llu\n", (unsigned long long)(v))

/* Requests, responses, the work queue and the transport (http.c, conn_guard.h). */
static void write_http(FILE *f, const wp_http_stats *hs) {
    C("warpd_http_requests_total", "HTTP requests received.", hs->requests);
    static const char *const classes[] = {"2xx", "4xx", "5xx"};
    const unsigned long long by_class[] = {hs->responses_2xx, hs->responses_4xx, hs->responses_5xx};
    labeled_counter(f, "warpd_http_responses_total", "HTTP responses by status class.", "class", classes, by_class, 3);
    C("warpd_http_rejected_busy_total", "Requests refused with 503 because the work queue was full.",
      hs->rejected_busy);
    C("warpd_http_answered_inline_total", "Requests that could defer to a worker but were answered on the HTTP thread.",
      hs->answered_inline);
    C("warpd_http_deferred_total", "Requests that could be answered on the HTTP thread but went to a worker.",
      hs->deferred);
    C("warpd_http_handed_total",
      "Requests whose GPU job the HTTP thread handed to the batcher's runners, serving other connections meanwhile.",
      hs->handed);
    C("warpd_http_streamed_bodies_total", "Raw bodies streamed to the device as they arrived.", hs->streamed);
    C("warpd_http_streamed_bytes_total", "Bytes of raw bodies streamed to the device.", hs->streamed_bytes);
    G("warpd_queue_depth", "Requests waiting for a worker.", hs->queue_depth);
    G("warpd_workers_busy", "Workers running a request.", hs->workers_busy);
    G("warpd_http_connections", "Open HTTP connections.", hs->connections);
    G("warpd_http_max_connections", "Open connections before the oldest idle ones are closed.", hs->max_connections);
    static const char *const reasons[] = {"header_timeout", "peer_gone", "evicted", "peer_limit"};
    const unsigned long long by_reason[] = {hs->closed_header_timeout, hs->closed_peer_gone, hs->closed_evicted,
                                            hs->closed_peer_limit};
    labeled_counter(f, "warpd_http_connections_closed_total",
                    "Connections the server closed: headers not complete in time, the peer gone, idle and making "
                    "room, or past one peer's share.",
                    "reason", reasons, by_reason, 4);
}

/* The kernel cache, memory and disk (cache.c, cache_disk.c, api_cache.c). */
static void write_cache(FILE *f, const wp_cache_stats *cs) {
    static const char *const tiers[] = {"memory", "disk"};
    const unsigned long long hits[] = {cs->hits_memory, cs->hits_disk};
    labeled_counter(f, "warpd_cache_hits_total", "Kernel cache hits by tier.", "tier", tiers, hits, 2);
    C("warpd_cache_misses_total", "Kernel cache misses.", cs->misses);
    C("warpd_compiles_total", "NVRTC compiles.", cs->compiles);
    C("warpd_compile_failures_total", "NVRTC compiles that failed.", cs->compile_failures);
    C("warpd_cache_evictions_total", "Entries evicted from the memory cache.", cs->evictions);
    C("warpd_cache_corrupt_files_total", "Disk cache files found corrupt and removed.", cs->corrupt_files);
    C("warpd_cache_stale_tmp_removed_total", "Temp files of crashed cache writers removed at start.",
      cs->stale_tmp_removed);
    G("warpd_cache_entries", "Entries in the memory cache.", cs->entries);
    G("warpd_cache_bytes", "Bytes in the memory cache.", cs->bytes);
    G("warpd_cache_disk_entries", "Files in the disk cache, as this process last counted them.", cs->disk_entries);
    G("warpd_cache_disk_bytes", "Bytes of the disk cache's files, as this process last counted them.", cs->disk_bytes);
    G("warpd_cache_disk_max_bytes", "The disk cache cap (--cache-disk-max; 0: none).", cs->disk_cap_bytes);
    C("warpd_cache_disk_evictions_total", "Disk cache files removed to stay under --cache-disk-max.",
      cs->disk_evictions);
    const unsigned long long removed[] = {cs->removed, cs->disk_removed};
    labeled_counter(f, "warpd_cache_removed_total", "Cache entries removed by DELETE /v1/cache, by tier.", "tier",
                    tiers, removed, 2);
}

/* Async jobs (jobs.c), device-resident buffers (buffers.c), shared-memory regions (regions.c) and doorbell
 * channels (channels.c). */
static void write_jobs_buffers(FILE *f, wp_app *app) {
    wp_jobs_stats js;
    wp_jobs_stats_get(app->jobs, &js);
    G("warpd_jobs_queue_depth", "Async jobs waiting for a job worker.", js.queued);
    fprintf(f, "# HELP warpd_jobs Async jobs held, by state.\n# TYPE warpd_jobs gauge\n");
    const struct {
        const char *state;
        int n;
    } by_state[] = {{"queued", js.queued},
                    {"running", js.running},
                    {"done", js.done},
                    {"failed", js.failed},
                    {"cancelled", js.cancelled}};
    for (size_t i = 0; i < WP_ARRAY_LEN(by_state); i++)
        fprintf(f, "warpd_jobs{state=\"%s\"} %d\n", by_state[i].state, by_state[i].n);
    C("warpd_jobs_submitted_total", "Async jobs accepted.", js.submitted);
    C("warpd_jobs_rejected_total", "Async jobs refused with 503 because --max-jobs were queued or running.",
      js.rejected_full);
    C("warpd_jobs_expired_total", "Finished jobs forgotten after --job-ttl.", js.expired);
    wp_buffers_stats bs;
    wp_buffers_stats_get(app->buffers, &bs);
    G("warpd_buffers", "Device-resident buffers held.", bs.buffers);
    G("warpd_buffer_bytes", "Bytes of device-resident buffers in use (being filled or in use by a job included).",
      bs.bytes);
    G("warpd_buffer_quota_bytes", "The buffer quota (--buffer-quota).", bs.quota);
    C("warpd_buffers_expired_total", "Buffers freed after their TTL.", bs.expired);
    C("warpd_buffers_rejected_quota_total", "Buffer uploads refused with 507 (quota).", bs.rejected_quota);
    if (!app->regions) return;
    wp_regions_stats rs;
    wp_regions_stats_get(app->regions, &rs);
    G("warpd_shm_regions", "Shared-memory regions registered (POST /v1/shm).", rs.regions);
    G("warpd_shm_mapped_bytes", "Bytes of shared-memory regions mapped (deleted ones still in use included).",
      rs.bytes);
    G("warpd_shm_max_bytes", "The regions' cap (--shm-max).", rs.max_bytes);
    C("warpd_shm_registered_total", "Regions registered since start.", rs.added);
    C("warpd_shm_rejected_quota_total", "Regions refused with 413 (--shm-max).", rs.refused_quota);
    C("warpd_shm_truncated_total", "Region copies refused with 409 because the object was truncated under them.",
      rs.truncated);
    if (!app->channels) return;
    wp_channels_stats cs;
    wp_channels_stats_get(app->channels, &cs);
    G("warpd_channels", "Doorbell channels open (POST /v1/channels).", cs.open);
    C("warpd_channels_opened_total", "Doorbell channels opened since start.", cs.opened);
    C("warpd_channel_requests_total", "Requests served through doorbell channels.", cs.requests);
    C("warpd_channels_truncated_total", "Channels closed because their region's object was truncated under them.",
      cs.truncated);
}

/* Dynamic batching (batch.h), compiles running, background builds (bgbuild.h). */
static void write_engine(FILE *f, wp_app *app) {
    if (app->batcher) {
        wp_batch_stats bst;
        wp_batcher_stats(app->batcher, &bst);
        C("warpd_batches_total", "Batches run (one backend call each; a job that ran alone is a batch of 1).",
          bst.batches);
        C("warpd_batched_jobs_total", "Jobs run in those batches.", bst.jobs);
        fprintf(f, "# HELP warpd_batch_size Jobs per batch.\n# TYPE warpd_batch_size histogram\n");
        for (int i = 0; i < WP_BATCH_BUCKETS; i++)
            fprintf(f, "warpd_batch_size_bucket{le=\"%d\"} %llu\n", wp_batch_bucket_le[i],
                    (unsigned long long)bst.le[i]);
        fprintf(f, "warpd_batch_size_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)bst.le[WP_BATCH_BUCKETS]);
        fprintf(f, "warpd_batch_size_sum %llu\nwarpd_batch_size_count %llu\n", (unsigned long long)bst.jobs,
                (unsigned long long)bst.batches);
        G("warpd_batch_waiting", "Jobs queued for a batch now.", bst.waiting);
        char window_s[40]; /* Prometheus names carry base units: seconds, not microseconds */
        wp_histo_format_float(bst.window_us / 1e6, window_s, sizeof window_s);
        fprintf(f,
                "# HELP warpd_batch_window_seconds --batch-window-us, in seconds.\n"
                "# TYPE warpd_batch_window_seconds gauge\nwarpd_batch_window_seconds %s\n",
                window_s);
        G("warpd_batch_max", "--batch-max.", bst.max);
    }
    if (app->jit) {
        int now, most;
        wp_jit_compiling(app->jit, &now, &most);
        G("warpd_compiles_running", "NVRTC programs compiling now (at most --compile-threads).", now);
    }
    if (app->bgbuild) {
        wp_bgbuild_stats bg;
        wp_bgbuild_stats_get(app->bgbuild, &bg);
        static const char *const outcomes[] = {"built", "failed", "dropped"};
        const unsigned long long by_outcome[] = {bg.built, bg.failed, bg.dropped};
        labeled_counter(f, "warpd_background_builds_total",
                        "Kernels a batch asked to be built off the request path, by outcome.", "outcome", outcomes,
                        by_outcome, 3);
        G("warpd_background_builds_queued", "Background builds waiting or running now.", bg.queued);
    }
}

/* Requests and refusals (4xx) by user (users.h): users are few, as in a lab. Names are [a-z0-9_-]. */
static void user_requests(void *ctx, const char *name, uint64_t requests, uint64_t refused) {
    (void)refused;
    fprintf(ctx, "warpd_user_requests_total{user=\"%s\"} %llu\n", name, (unsigned long long)requests);
}

static void user_refused(void *ctx, const char *name, uint64_t requests, uint64_t refused) {
    (void)requests;
    fprintf(ctx, "warpd_user_refused_total{user=\"%s\"} %llu\n", name, (unsigned long long)refused);
}

static void write_users(FILE *f, const wp_app *app) {
    fprintf(f, "# HELP warpd_user_requests_total HTTP requests answered, by user.\n"
               "# TYPE warpd_user_requests_total counter\n");
    wp_users_each(app->users, user_requests, f);
    fprintf(f, "# HELP warpd_user_refused_total HTTP requests answered 4xx, by user.\n"
               "# TYPE warpd_user_refused_total counter\n");
    wp_users_each(app->users, user_refused, f);
}

void wp_api_metrics(void *appv, const wp_req *req, wp_resp *resp) {
    wp_app *app = appv;
    (void)req;
    wp_cache_stats cs;
    wp_cache_stats_get(app->cache, &cs);
    wp_http_stats hs = {0};
    if (app->http) wp_http_stats_get(app->http, &hs);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        wp_err e;
        WP_FAIL(&e, 500, "no_memory", "", "out of memory");
        wp_resp_error(resp, &e);
        return;
    }
    write_http(f, &hs);
    write_users(f, app);
    write_cache(f, &cs);
    C("warpd_warp_runs_total", "Warp primitive runs.", atomic_load(&app->warp_runs));
    write_jobs_buffers(f, app);
    write_engine(f, app);
    write_registry(app, f);
    fclose(f);
    resp->status = 200;
    resp->body = buf;
    resp->body_len = len;
    resp->content_type = WP_METRICS_CONTENT_TYPE;
}
#undef C
#undef G
