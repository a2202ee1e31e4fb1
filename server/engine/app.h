/* app.h — the daemon's parts as handlers see them: compiler, cache, backends, limits. One wp_app is
 * made by main.c and passed to every handler; nothing else is global. */
#ifndef WP_APP_H
#define WP_APP_H

#include <stdatomic.h>

#include "backend/backend.h"
#include "batch.h"
#include "batch_exec.h"
#include "buffers.h"
#include "channels.h"
#include "compile/cache.h"
#include "compile/jit.h"
#include "http/http.h"
#include "http/metrics.h"
#include "jobs.h"
#include "kernels/spec.h"
#include "placement.h"
#include "reduce.h"
#include "regions.h"
#include "shard.h"

#define WP_VERSION "0.1.0"

/* --inline-gpu: where a small GPU job with its kernel in memory runs (wp_app_may_run_inline). */
typedef enum { WP_INLINE_IDLE = 0, WP_INLINE_NEVER, WP_INLINE_ALWAYS } wp_inline_mode;
int wp_inline_mode_parse(const char *text, wp_inline_mode *out); /* 0, or -1 when not never|idle|always */

typedef struct wp_app {
    wp_jit *jit;
    wp_cache *cache;
    wp_backend *cuda; /* NULL when no usable GPU (see cuda_reason) */
    wp_backend *emu;
    wp_backend *preferred; /* what "auto" runs on */
    char cuda_reason[256];
    char arch[16]; /* target arch: the device's, or --arch */
    char templates_dir[512];
    char web_dir[512];
    size_t max_body;
    int max_depth;
    wp_http *http;
    uint64_t start_ns;
    atomic_uint_fast64_t warp_runs, compile_requests;
    wp_jobs *jobs;            /* async jobs (jobs.c): POST /v1/jobs */
    wp_buffers *buffers;      /* device-resident buffers (buffers.c): /v1/buffers */
    wp_regions *regions;      /* shared-memory regions (regions.c): /v1/shm; NULL under --shm off */
    bool shm_remote;          /* --shm-remote: regions from peers that are not local too */
    wp_channels *channels;    /* doorbell channels in regions (channels.c): /v1/channels; NULL when off */
    wp_reduce_engine *reduce; /* data-parallel jobs (reduce.c): /v1/reduce, /v1/scan */
    uint64_t max_elements;    /* largest n of a reduce/scan job (413 beyond) */
    /* largest n a generate may ask of the emulator, in reduce, scan and buffers (413 beyond):
     * --emu-max-elements; see wp_app_emu_limit */
    uint64_t emu_max_elements;
    /* dynamic batching (batch.h, batch_exec.h): --batch-window-us, --batch-max; NULL: every job alone */
    wp_batcher *batcher;
    wp_batch_mem *batch_mem;    /* device memory of batched launches */
    struct wp_bgbuild *bgbuild; /* kernels built off the request path (bgbuild.h): a batch's _batch entry */
    wp_metrics *metrics;        /* latency histograms, process and build metrics (metrics.c): /metrics */
    const wp_users *users;      /* the tokens table (http/users.h): /metrics' counts by user */

    /* Prewarm (prewarm.c): the background --prewarm run (NULL when none) that GET /v1/ready reports,
     * and how many threads a {"specs":[...]} batch compiles on. */
    struct wp_prewarm *prewarm;
    int compile_threads;
    /* devices, placement and sharding: */
    wp_inline_mode inline_gpu;           /* --inline-gpu: when small GPU jobs may run on the HTTP thread */
    int runner_wait;                     /* --runner-wait: how the batcher's runners wait (WP_WAIT_*, buffer.h) */
    int streams_per_device;              /* --streams-per-device */
    wp_backend *devices[WP_MAX_DEVICES]; /* what jobs run on (placement.h): the GPUs (devices[0] is cuda), */
    int n_devices;                       /* or the emulator's --emu-devices (devices[0] is emu) */
    atomic_uint placement_rr;            /* placement's round robin among equally loaded devices */
} wp_app;

/* A kernel ready to run: the cache entry (held), its function on the chosen backend, where it came
 * from and what each step cost. */
typedef struct {
    wp_kernel *kernel;
    void *fn;
    wp_source source;
    char key_text[640];
    char hash[65];
    double key_us, cache_us, compile_ms, load_us;
} wp_ready_kernel;

/* key -> cache (memory, disk or NVRTC) -> backend load (none when b is NULL). Release with
 * wp_app_kernel_put. */
int wp_app_kernel_get(wp_app *app, const wp_spec *s, wp_backend *b, wp_ready_kernel *out, wp_err *err);
void wp_app_kernel_put(wp_app *app, wp_ready_kernel *rk);
/* The kernel's key alone (a job on emu that compiles nothing): key_text (n bytes) and hash (hex, "" when
 * there is no compiler to hash it); returns the microseconds it took. */
double wp_app_kernel_key(wp_app *app, const wp_spec *s, char *key_text, size_t n, char hash[65]);
/* From the memory cache only, loaded on b whatever thread asks: returns 1 (nothing held) when the
 * kernel is not in memory. */
int wp_app_kernel_memory(wp_app *app, const wp_spec *s, wp_backend *b, wp_ready_kernel *out, wp_err *err);
/* The same, from the memory cache only: returns 1 (nothing held) when the kernel is not there. */
int wp_app_kernel_peek(wp_app *app, const wp_spec *s, wp_backend *b, wp_ready_kernel *out, wp_err *err);
/* Whether a job on b may run on an HTTP thread (WP_ROUTE_TRY_INLINE): emu's may; a GPU's as
 * --inline-gpu says: idle (the default) while the request asking is the only one in flight
 * (wp_http_active) and b has no job running and a stream free (no buffer copy holds them all), so the
 * thread waits for one small job at most and only when nothing else is on the device (under load every
 * GPU job goes to a worker); always; never. Asked once per request, by the handler, before any upload;
 * wp_app_kernel_peek itself refuses a GPU job only under never. Any thread. */
bool wp_app_may_run_inline(const wp_app *app, const wp_backend *b);
/* Whether a job on b run on its HTTP thread (no_wait) has no one to batch with: a GPU's under
 * --inline-gpu idle runs there only as the one request in flight, so its batch is itself
 * (wp_batcher_run_alone); the emulator's may run there beside others. Any thread. */
bool wp_app_inline_alone(const wp_app *app, const wp_backend *b, bool no_wait);
/* Whether a GPU job on the HTTP thread would be deferred to a worker whatever its body says (a daemon
 * with GPUs, --inline-gpu never or other requests in flight): a handler called with may_defer asks
 * first and defers before it parses, so a busy HTTP thread parses each such job once, not twice. Any
 * thread. */
bool wp_app_defers_gpu_jobs(const wp_app *app);
/* Whether a small GPU job on the HTTP thread may be handed to the batcher's runners instead of a worker
 * (batch_exec.h: the HTTP thread parks the request and goes on serving; a runner's batch completes it):
 * a daemon with GPUs and batching, whose batcher has runners. Then wp_app_defers_gpu_jobs is false: the
 * HTTP thread parses each job, to hand it over. Any thread. */
bool wp_app_hands_gpu_jobs(const wp_app *app);

/* Picks the backend a request asked for ("backend": "auto", "cuda", "emu", or absent) and, among the
 * devices, the one it pins ("device": N) or the least loaded (placement.h). */
int wp_app_backend(wp_app *app, const cJSON *req, const wp_family *f, wp_backend **out, wp_err *err);
/* The same from its parts: want NULL = "auto"; pinned -1 = none; f NULL = no family checks. */
int wp_app_pick(wp_app *app, const char *want, int pinned, const wp_family *f, wp_backend **out, wp_err *err);

/* 413 "too_many_elements" naming field and --emu-max-elements when be is the emulator and n is past
 * app->emu_max_elements (emu_limit.c). Any thread. */
int wp_app_emu_limit(const wp_app *app, const wp_backend *be, uint64_t n, const char *field, wp_err *err);

/* wp_app_kernel_get without a backend load, taking a prebuilt artifact on a miss (kernel.c). */
int wp_app_kernel_get_prebuilt(wp_app *app, const wp_spec *s, wp_artifact *prebuilt, wp_ready_kernel *out, wp_err *err);

#endif
