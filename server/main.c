/* main.c — warpd's entry: start-up (compiler, cache, backends, HTTP), signals, shut-down.
 * The only file with process-wide state: the wp_app it builds and hands to every handler. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "engine/bgbuild.h"
#include "engine/prewarm.h"
#include "flags.h"
#include "http/access.h"
#include "http/http_loop.h"
#include "http/listen.h"
#include "http/reqlog.h"
#include "util/log.h"

static int open_gpus(const wp_options *o, wp_app *app, wp_err *err) {
    int want[WP_MAX_DEVICES], n = 0;
    const char *list = o->devices ? o->devices : o->device_given ? NULL : "all";
    if (!list) {
        want[n++] = o->device;
    } else if (!strcmp(list, "all")) {
        int count = wp_backend_cuda_count(err);
        if (count < 0) return -1;
        for (int i = 0; i < count && n < WP_MAX_DEVICES; i++) want[n++] = i;
        if (!n) return WP_FAIL(err, 503, "cuda_unavailable", "", "the driver sees no CUDA device");
    } else {
        for (const char *p = list; *p;) {
            char *end = NULL;
            long v = strtol(p, &end, 10);
            if (end == p || v < 0 || v > 64 || n >= WP_MAX_DEVICES || (*end && *end != ','))
                return WP_FAIL(err, 400, "bad_devices", "", "--devices needs all or a list like 0,2 (got %s)", list);
            want[n++] = (int)v;
            p = *end ? end + 1 : end;
        }
    }
    bool all = list && !strcmp(list, "all");
    for (int i = 0; i < n; i++) {
        wp_backend *b = wp_backend_cuda_open_streams(want[i], o->streams_per_device, err);
        wp_backend_cuda_set_wait(b, o->gpu_wait_yield);
        wp_backend_cuda_set_zero_copy(b, !o->no_zero_copy);
        wp_backend_cuda_set_resident(b, o->resident_us);
        if (!b && all) { /* every visible GPU: one that will not open (busy, exclusive) is left out */
            wp_log(WP_LOG_WARN, "GPU %d left out: %s", want[i], err->msg);
            continue;
        }
        if (!b) { /* a GPU named on the command line must open */
            for (int k = 0; k < app->n_devices; k++) wp_backend_close(app->devices[k]);
            app->n_devices = 0;
            return -1;
        }
        int sm = wp_backend_facts(b)->sm, sm0 = app->n_devices ? wp_backend_facts(app->devices[0])->sm : sm;
        if (sm != sm0) { /* one arch for all: the cache compiles each kernel once, for device 0's */
            wp_backend_close(b);
            if (all) {
                wp_log(WP_LOG_WARN, "GPU %d left out: sm_%d, where the first GPU served is sm_%d", want[i], sm, sm0);
                continue;
            }
            for (int k = 0; k < app->n_devices; k++) wp_backend_close(app->devices[k]);
            app->n_devices = 0;
            return WP_FAIL(err, 503, "cuda_unavailable", "", "--devices: GPU %d is sm_%d, GPU %d sm_%d: serve one arch",
                           want[i], sm, want[0], sm0);
        }
        app->devices[app->n_devices++] = b;
    }
    if (!app->n_devices) return -1; /* err: the last GPU's reason */
    app->cuda = app->devices[0];
    return 0;
}

/* Without a GPU: the emulator as --emu-devices devices; device 0 is app->emu itself. */
static void open_emu_devices(const wp_options *o, wp_app *app) {
    app->devices[app->n_devices++] = app->emu;
    for (int i = 1; i < o->emu_devices; i++) {
        wp_backend *b = wp_backend_emu_open_device(i);
        if (b) app->devices[app->n_devices++] = b;
    }
}

static void default_cache_dir(char *buf, size_t n) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        snprintf(buf, n, "%s/warpd", xdg);
    else
        snprintf(buf, n, "%s/.cache/warpd", home && *home ? home : "/tmp");
}

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Templates/web next to an installed binary: <prefix>/share/warpd/... */
static void find_share(const char *sub, const char *fallback, char *buf, size_t n) {
    snprintf(buf, n, "%s", fallback);
    if (is_dir(fallback)) return;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return;
    exe[len] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    char cand[PATH_MAX + 64];
    snprintf(cand, sizeof cand, "%s/../share/warpd/%s", exe, sub);
    if (is_dir(cand) && strlen(cand) < n) memcpy(buf, cand, strlen(cand) + 1);
}

static const wp_route routes[] = {
    {"GET", "/v1/health", wp_api_health, WP_ROUTE_INLINE, NULL},
    {"GET", "/v1/ready", wp_api_ready, WP_ROUTE_INLINE, NULL},
    {"GET", "/v1/info", wp_api_info, WP_ROUTE_INLINE, NULL},
    {"GET", "/v1/whoami", wp_api_whoami, WP_ROUTE_INLINE, NULL},
    {"GET", "/v1/families", wp_api_families, WP_ROUTE_INLINE, NULL},
    {"GET", "/v1/openapi.json", wp_api_openapi, WP_ROUTE_INLINE, NULL},
    {"GET", "/metrics", wp_api_metrics, WP_ROUTE_INLINE, NULL},
    {"POST", "/v1/jobs", wp_api_jobs_submit, WP_ROUTE_INLINE, NULL},
    {"GET", "/v1/jobs", wp_api_jobs_list, WP_ROUTE_INLINE, NULL},
    {"GET", "/v1/jobs/", wp_api_job_get, WP_ROUTE_INLINE | WP_ROUTE_PREFIX, NULL},
    {"DELETE", "/v1/jobs/", wp_api_job_delete, WP_ROUTE_INLINE | WP_ROUTE_PREFIX, NULL},
    {"PUT", "/v1/buffers", wp_api_buffers_put, WP_ROUTE_WORK, &wp_api_buffers_stream},
    {"GET", "/v1/buffers", wp_api_buffers_list, WP_ROUTE_INLINE, NULL},
    {"GET", "/v1/buffers/", wp_api_buffer_get, WP_ROUTE_WORK | WP_ROUTE_PREFIX, NULL},
    {"DELETE", "/v1/buffers/", wp_api_buffer_delete, WP_ROUTE_WORK | WP_ROUTE_PREFIX, NULL},
    {"GET", "/v1/cache", wp_api_cache_list, WP_ROUTE_WORK, NULL},
    {"DELETE", "/v1/cache", wp_api_cache_prune, WP_ROUTE_WORK, NULL},
    {"GET", "/v1/cache/", wp_api_cache_get, WP_ROUTE_WORK | WP_ROUTE_PREFIX, NULL},
    {"DELETE", "/v1/cache/", wp_api_cache_delete, WP_ROUTE_WORK | WP_ROUTE_PREFIX, NULL},
    {"POST", "/v1/compile", wp_api_compile, WP_ROUTE_WORK, NULL},
    {"POST", "/v1/warp", wp_api_warp, WP_ROUTE_WORK | WP_ROUTE_TRY_INLINE, NULL},
    {"POST", "/v1/reduce", wp_api_reduce, WP_ROUTE_WORK | WP_ROUTE_TRY_INLINE, &wp_api_reduce_stream},
    {"POST", "/v1/scan", wp_api_scan, WP_ROUTE_WORK | WP_ROUTE_TRY_INLINE, &wp_api_scan_stream},
    {"POST", "/v1/shm", wp_api_shm_add, WP_ROUTE_WORK, NULL},
    {"GET", "/v1/shm", wp_api_shm_list, WP_ROUTE_INLINE, NULL},
    {"GET", "/v1/shm/", wp_api_shm_get, WP_ROUTE_INLINE | WP_ROUTE_PREFIX, NULL},
    {"DELETE", "/v1/shm/", wp_api_shm_delete, WP_ROUTE_WORK | WP_ROUTE_PREFIX, NULL},
    {"POST", "/v1/channels", wp_api_channels_add, WP_ROUTE_WORK, NULL},
    {"GET", "/v1/channels", wp_api_channels_list, WP_ROUTE_INLINE, NULL},
    {"GET", "/v1/channels/", wp_api_channel_get, WP_ROUTE_INLINE | WP_ROUTE_PREFIX, NULL},
    {"DELETE", "/v1/channels/", wp_api_channel_delete, WP_ROUTE_WORK | WP_ROUTE_PREFIX, NULL},
    {"GET", "/", wp_api_static, WP_ROUTE_INLINE | WP_ROUTE_PREFIX, NULL},
    {NULL, NULL, NULL, 0, NULL},
};

static void set_app_limits(wp_app *app, const wp_options *o) {
    app->start_ns = wp_now_ns();
    app->max_body = o->max_body;
    app->max_depth = o->max_depth;
    app->max_elements = o->max_elements;
    app->emu_max_elements = o->emu_max_elements;
    app->inline_gpu = o->inline_gpu;
    app->runner_wait = o->runner_wait;
    app->streams_per_device = o->streams_per_device;
}

/* Signals are taken by sigwait in serve_until_signal, in the main thread only: blocked here, before
 * any other thread starts (threads inherit the mask). */
static void block_signals(sigset_t *sigs) {
    sigemptyset(sigs);
    sigaddset(sigs, SIGINT);
    sigaddset(sigs, SIGTERM);
    sigaddset(sigs, SIGHUP); /* reopens the access log (log rotation), reads the tokens again */
    pthread_sigmask(SIG_BLOCK, sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void find_app_dirs(wp_app *app, const wp_options *o) {
    if (o->templates)
        snprintf(app->templates_dir, sizeof app->templates_dir, "%s", o->templates);
    else
        find_share("templates", WP_DEFAULT_TEMPLATES, app->templates_dir, sizeof app->templates_dir);
    if (o->web)
        snprintf(app->web_dir, sizeof app->web_dir, "%s", o->web);
    else
        find_share("web", WP_DEFAULT_WEB, app->web_dir, sizeof app->web_dir);
}

/* --prewarm --exit only compiles: the target arch is --arch, else the device's, asked without
 * creating a context (most of CUDA's start-up). Returns 0, else the exit status. */
static int choose_prewarm_arch(const wp_options *o, wp_app *app, wp_err *err) {
    int sm = 0;
    if (o->arch)
        snprintf(app->arch, sizeof app->arch, "%s", o->arch);
    else if (strcmp(o->backend, "emu") &&
             wp_backend_cuda_sm(o->devices && strcmp(o->devices, "all") ? atoi(o->devices) : o->device, &sm, err) == 0)
        snprintf(app->arch, sizeof app->arch, "sm_%d", sm);
    else if (!strcmp(o->backend, "cuda")) {
        fprintf(stderr, "warpd: --backend cuda, but CUDA is not usable: %s\n", err->msg);
        return 1;
    } else
        snprintf(app->arch, sizeof app->arch, "sm_90");
    return 0;
}

/* Serving: the GPUs' arch; without one, --arch (default sm_90). */
static void choose_arch(const wp_options *o, wp_app *app) {
    if (app->cuda) {
        wp_device_info di;
        wp_backend_info(app->cuda, &di);
        snprintf(app->arch, sizeof app->arch, "sm_%d", di.sm);
        if (o->arch && strcmp(o->arch, app->arch))
            wp_log(WP_LOG_WARN, "--arch %s ignored: the device is %s", o->arch, app->arch);
    } else {
        snprintf(app->arch, sizeof app->arch, "%s", o->arch ? o->arch : "sm_90");
    }
}

/* The emulator always; the GPUs unless --backend emu or --prewarm --exit; the emulator's devices when
 * no GPU opened; then the target arch. Returns 0, else the exit status. */
static int open_backends(const wp_options *o, wp_app *app, wp_err *err) {
    app->emu = wp_backend_emu_open();
    if (o->exit_after_prewarm) {
        if (choose_prewarm_arch(o, app, err)) return 1;
    } else if (strcmp(o->backend, "emu")) {
        if (open_gpus(o, app, err)) {
            snprintf(app->cuda_reason, sizeof app->cuda_reason, "%s", err->msg);
            if (!strcmp(o->backend, "cuda")) {
                fprintf(stderr, "warpd: --backend cuda, but CUDA is not usable: %s\n", err->msg);
                return 1;
            }
            wp_log(WP_LOG_WARN, "no usable GPU (%s); serving on the emulator", err->msg);
        }
    } else {
        snprintf(app->cuda_reason, sizeof app->cuda_reason, "disabled by --backend emu");
    }
    app->preferred = app->cuda ? app->cuda : app->emu;
    if (!app->cuda && !o->exit_after_prewarm) open_emu_devices(o, app);
    for (int i = 0; i < app->n_devices; i++) wp_backend_set_index(app->devices[i], i); /* the API's numbers */
    if (!o->exit_after_prewarm) choose_arch(o, app); /* --prewarm --exit: chosen above */
    return 0;
}

/* NVRTC (jit.c) and the kernel cache; cache_dir gets the directory's path. Returns 0, else the exit
 * status. */
static int open_compiler_and_cache(const wp_options *o, wp_app *app, char *cache_dir, size_t cache_dir_size,
                                   wp_err *err) {
    char cuda_inc[600];
    const char *cuda_home = getenv("CUDA_HOME");
    snprintf(cuda_inc, sizeof cuda_inc, "%s/include", cuda_home && *cuda_home ? cuda_home : WP_DEFAULT_CUDA_HOME);
    app->jit = wp_jit_open(app->templates_dir, cuda_inc, err);
    if (!app->jit) {
        fprintf(stderr, "warpd: cannot start the compiler: %s\n", err->msg);
        return 1;
    }
    wp_jit_set_parallel(app->jit, o->compile_threads);
    if (o->cache_dir)
        snprintf(cache_dir, cache_dir_size, "%s", o->cache_dir);
    else
        default_cache_dir(cache_dir, cache_dir_size);
    app->cache = wp_cache_open(o->no_disk ? NULL : cache_dir, o->cache_mb << 20, err);
    if (!app->cache) {
        fprintf(stderr, "warpd: cannot open the cache at %s: %s\n", cache_dir, err->msg);
        return 1;
    }
    wp_cache_set_disk_max(app->cache, o->cache_disk_max);
    return 0;
}

static void close_backends(wp_app *app) {
    for (int i = 0; i < app->n_devices; i++)
        if (app->devices[i] != app->emu) wp_backend_close(app->devices[i]);
    wp_backend_close(app->emu);
}

/* --prewarm FILE --exit: compile every spec into the cache directory, close, and give the exit status. */
static int prewarm_and_exit(wp_app *app, cJSON *prewarm_doc, int compile_threads) {
    int rc = wp_prewarm_run_and_exit(app, prewarm_doc, compile_threads);
    cJSON_Delete(prewarm_doc);
    wp_cache_close(app->cache);
    wp_jit_close(app->jit);
    close_backends(app);
    return rc;
}

/* Shared-memory regions (--shm, regions.h), registered with the first GPU when there is one. */
static int open_regions(const wp_options *o, wp_app *app, wp_err *err) {
    app->shm_remote = o->shm_remote;
    if (o->shm_off) return 0;
    uint64_t max = o->shm_max;
    if (!max) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        max = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 4 : FALLBACK_BUFFER_QUOTA;
    }
    wp_regions_config rc = {.prefix = o->shm_prefix, .max_bytes = max, .dma = app->cuda};
    if (!(app->regions = wp_regions_open(&rc, err))) {
        fprintf(stderr, "warpd: cannot open the shared-memory regions: %s\n", err->msg);
        return -1;
    }
    if (!o->channels_max) return 0;
    wp_channels_config cc = {
        .max_channels = (unsigned)o->channels_max, .max_body = o->max_body, .serve = wp_api_channel_serve, .ctx = app};
    if (!(app->channels = wp_channels_open(&cc, err))) {
        fprintf(stderr, "warpd: cannot open the channels: %s\n", err->msg);
        return -1;
    }
    return 0;
}

/* The engine behind the routes: buffers, the reduce engine, the batcher and its memory, the background
 * builder, async jobs. Returns 0, else the exit status. */
static int start_engine(const wp_options *o, wp_app *app, wp_err *err) {
    /* Buffers live on the preferred backend's memory; jobs run any POST work route. */
    uint64_t quota = o->buffer_quota;
    if (!quota) {
        wp_device_info di;
        wp_backend_info(app->preferred, &di);
        quota = di.mem_total ? di.mem_total / 2 : FALLBACK_BUFFER_QUOTA;
        uint64_t avail = wp_mem_available(); /* emu: buffers are host memory; leave the host 3/4 of what is free */
        if (app->preferred == app->emu && avail && avail / 4 < quota) quota = avail / 4;
    }
    wp_buffers_config bc = {.quota = quota, .ttl_s = o->buffer_ttl_s, .max_ttl_s = MAX_BUFFER_TTL_S};
    app->buffers = wp_buffers_open(&bc, err);
    if (open_regions(o, app, err)) return 1;
    app->reduce = wp_reduce_engine_open();
    /* a runner per stream of each GPU: handed jobs' batches (batch.h) fill every stream; none without a GPU */
    const int runners = app->cuda ? o->streams_per_device * app->n_devices : 0;
    wp_batch_config bcfg = {
        .window_us = o->batch_window_us, .max = o->batch_max, .concurrency = o->streams_per_device, .runners = runners};
    app->batcher = wp_batcher_open(&bcfg);
    app->batch_mem = wp_batch_mem_open();
    if (!(app->bgbuild = wp_bgbuild_open(app)))
        WP_FAIL(err, 500, "internal", "", "cannot start the background builder");
    wp_jobs_config jc = {.max_jobs = o->max_jobs, .workers = o->job_workers, .ttl_s = o->job_ttl_s};
    if (app->buffers) app->jobs = wp_jobs_open(&jc, routes, app, err);
    if (!app->buffers || !app->jobs || !app->reduce || !app->batcher || !app->batch_mem || !app->bgbuild) {
        fprintf(stderr, "warpd: cannot start jobs and buffers: %s\n", err->msg);
        return 1;
    }
    return 0;
}

/* Request ids, the access log and the latency histograms (reqlog.c, metrics.c). NULL after saying why. */
static wp_reqlog *open_request_log(const wp_options *o, wp_app *app, wp_err *err) {
    app->metrics = wp_metrics_open(routes);
    wp_reqlog *reqlog = app->metrics ? wp_reqlog_open(o->access_log, app->metrics, err) : NULL;
    if (!reqlog) fprintf(stderr, "warpd: %s\n", app->metrics ? err->msg : "out of memory for the metrics");
    return reqlog;
}

/* --tls-cert and --tls-key, both or neither: their PEM text, for the caller to free. Returns 0, else the
 * exit status. */
static int read_tls_files(const wp_options *o, char **tls_cert, char **tls_key, wp_err *err) {
    if (!o->tls_cert != !o->tls_key) {
        fprintf(stderr, "warpd: --tls-cert and --tls-key go together (got only %s)\n",
                o->tls_cert ? "--tls-cert" : "--tls-key");
        return 2;
    }
    *tls_cert = o->tls_cert ? wp_listen_read_pem("--tls-cert", o->tls_cert, "CERTIFICATE", err) : NULL;
    *tls_key = *tls_cert ? wp_listen_read_pem("--tls-key", o->tls_key, "PRIVATE KEY", err) : NULL;
    if (o->tls_cert && !*tls_key) {
        fprintf(stderr, "warpd: %s\n", err->msg);
        return 2;
    }
    return 0;
}

/* The HTTP server on --listen (TCP, TLS or a Unix socket). Returns 0, else the exit status. */
static int start_http(const wp_options *o, wp_app *app, wp_reqlog *reqlog, const char *tls_cert, const char *tls_key,
                      wp_err *err) {
    wp_http_config hc = {.host = o->host,
                         .port = o->port,
                         .threads = o->threads,
                         .pool = o->listen_pool,
                         .workers = o->workers,
                         .max_body = o->max_body,
                         .max_queue = o->max_queue,
                         .conn_memory = o->conn_memory,
                         .busy_poll_us = o->busy_poll_us,
                         .access = o->access,
                         .tls_cert_pem = tls_cert,
                         .tls_key_pem = tls_key,
                         .unix_path = o->unix_path,
                         .socket_mode = o->socket_mode,
                         .max_connections = o->max_connections,
                         .header_timeout_s = o->header_timeout_s,
                         .idle_timeout_s = o->idle_timeout_s,
                         .reqlog = reqlog};
    app->http = wp_http_start(&hc, routes, app, err);
    if (!app->http && !strncmp(err->msg, "cannot listen on ", 17)) { /* it names the address already */
        fprintf(stderr, "warpd: %s\n", err->msg);
        return 1;
    }
    if (!app->http && o->unix_path) {
        fprintf(stderr, "warpd: cannot listen on unix:%s: %s\n", o->unix_path, err->msg);
        return 1;
    }
    if (!app->http) {
        fprintf(stderr, "warpd: cannot listen on %s:%d: %s\n", o->host, o->port, err->msg);
        return 1;
    }
    return 0;
}

static void print_banner(const wp_options *o, const wp_app *app, const char *cache_dir) {
    int maj, min;
    wp_jit_version(app->jit, &maj, &min);
    char where[PATH_MAX + 160];
    if (o->unix_path)
        snprintf(where, sizeof where, "unix:%s", o->unix_path);
    else
        snprintf(where, sizeof where, "%s://%s%s%s:%d", o->tls_cert ? "https" : "http", strchr(o->host, ':') ? "[" : "",
                 o->host, strchr(o->host, ':') ? "]" : "", wp_http_port(app->http));
    printf("warpd %s listening on %s%s  backend=%s arch=%s nvrtc=%d.%d cache=%s\n", WP_VERSION, where,
           o->unix_path && o->tls_cert ? " (https)" : "", wp_backend_name(app->preferred), app->arch, maj, min,
           o->no_disk ? "(memory only)" : cache_dir);
    fflush(stdout);
}

/* Until SIGINT or SIGTERM; SIGHUP reopens the access log (log rotation) and reads the tokens file again
 * (a file that no longer parses is refused with its line, and the old table stays). */
static void serve_until_signal(const sigset_t *sigs, wp_access *access, wp_reqlog *reqlog, wp_err *err) {
    int sig = 0;
    while (sigwait(sigs, &sig) == 0 && sig == SIGHUP) {
        if (wp_reqlog_reopen(reqlog, err)) wp_log(WP_LOG_ERROR, "%s", err->msg);
        if (wp_access_reload(access, err))
            wp_log(WP_LOG_ERROR, "%s; the users before it stay", err->msg);
        else if (wp_access_has_token(access))
            wp_log(WP_LOG_INFO, "SIGHUP: the tokens read again");
    }
    wp_log(WP_LOG_INFO, "signal %d, stopping", sig);
}

/* Each part closes after what still uses it. */
static void teardown(wp_app *app, wp_access *access, wp_reqlog *reqlog) {
    wp_channels_stop(app->channels); /* before HTTP: a channel's request asks the server how busy it is */
    wp_http_stop(app->http);
    wp_prewarm_stop(app->prewarm);    /* before the cache closes: it compiles into it */
    wp_jobs_close(app->jobs);         /* after HTTP: nothing submits any more */
    wp_channels_close(app->channels); /* stopped above; nothing opens one now */
    wp_access_free(access);           /* after HTTP, jobs and channels: nothing checks requests or runs as a user */
    wp_bgbuild_close(app->bgbuild);   /* after HTTP and jobs (nothing asks), before the cache and backends */
    app->bgbuild = NULL;
    wp_buffers_close(app->buffers);      /* after jobs: nothing holds a buffer any more */
    wp_regions_close(app->regions);      /* likewise a region; before the backends (registrations) */
    wp_reduce_engine_close(app->reduce); /* its scratch lives on the backends */
    wp_batcher_close(app->batcher);      /* after HTTP and jobs: no job is in a batch */
    wp_batch_mem_close(app->batch_mem);  /* its buffers live on the backends */
    wp_cache_close(app->cache);
    wp_reqlog_close(reqlog); /* after HTTP and jobs: nothing logs or measures any more */
    wp_metrics_close(app->metrics);
    wp_jit_close(app->jit);
    close_backends(app);
}

int main(int argc, char **argv) {
    static wp_access *access; /* static: still reachable (no leak report) when start-up fails below */
    static wp_reqlog *reqlog; /* the same */
    static wp_app app;        /* the one app; handlers get a pointer */
    wp_options o;
    wp_options_defaults(&o);
    o.access = access = wp_access_new();
    if (!o.access || wp_options_parse(argc, argv, &o)) return 2;
    if (o.exit_after_prewarm) wp_prewarm_exec_tuned(argv); /* prewarm.c: returns when it does not exec */
    int rc = wp_options_finish(&o);
    if (rc) return rc;
    set_app_limits(&app, &o);
    app.users = wp_access_users(access);
    wp_err err = {0};
    sigset_t sigs;
    block_signals(&sigs);
    find_app_dirs(&app, &o);
    char cache_dir[PATH_MAX];
    if ((rc = open_backends(&o, &app, &err)) ||
        (rc = open_compiler_and_cache(&o, &app, cache_dir, sizeof cache_dir, &err)))
        return rc;

    /* --prewarm FILE (prewarm.c): with --exit, fill the cache directory and leave; otherwise it runs
     * in the background from just before the HTTP server starts. */
    app.compile_threads = o.compile_threads;
    cJSON *prewarm_doc = o.prewarm ? wp_prewarm_load(o.prewarm, &err) : NULL;
    if (o.prewarm && !prewarm_doc) {
        fprintf(stderr, "warpd: --prewarm %s: %s (%s)\n", o.prewarm, err.msg, err.field);
        return 2;
    }
    if (o.exit_after_prewarm) return prewarm_and_exit(&app, prewarm_doc, o.compile_threads);

    if ((rc = start_engine(&o, &app, &err))) return rc;
    if (!(reqlog = open_request_log(&o, &app, &err))) return 1;
    char *tls_cert = NULL, *tls_key = NULL;
    if ((rc = read_tls_files(&o, &tls_cert, &tls_key, &err))) return rc;
    if (prewarm_doc && !(app.prewarm = wp_prewarm_start(&app, prewarm_doc, o.compile_threads, &err))) {
        fprintf(stderr, "warpd: cannot start the prewarm: %s\n", err.msg);
        return 1;
    }
    wp_options_threads_for(&o, wp_batcher_runners(app.batcher));
    rc = start_http(&o, &app, reqlog, tls_cert, tls_key, &err);
    if (tls_key) explicit_bzero(tls_key, strlen(tls_key)); /* http_start.c keeps its own copy */
    free(tls_key);
    free(tls_cert);
    if (rc) return rc;
    print_banner(&o, &app, cache_dir);

    serve_until_signal(&sigs, access, reqlog, &err);
    teardown(&app, access, reqlog);
    return 0;
}
