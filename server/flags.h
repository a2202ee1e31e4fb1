/* flags.h — warpd's command line: every flag's default, its parsing and checks (flags.c), and --help.
 * main.c alone calls these, on the main thread, before any other thread starts. */
#ifndef WP_FLAGS_H
#define WP_FLAGS_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/app.h"
#include "http/access.h"

#define DEFAULT_PORT 8080
#define DEFAULT_CACHE_MB 256
#define DEFAULT_MAX_BODY (64u << 20)
#define DEFAULT_MAX_DEPTH 64
#define MIN_DEFAULT_THREADS 4 /* --threads by default (wp_options_threads_for): within these */
#define MAX_DEFAULT_THREADS 16
#define DEFAULT_MAX_QUEUE 1024
#define DEFAULT_MAX_JOBS 256
#define DEFAULT_JOB_WORKERS 2
#define DEFAULT_JOB_TTL_S 600
#define DEFAULT_BUFFER_TTL_S 3600
#define MAX_BUFFER_TTL_S (7 * 24 * 3600)
#define FALLBACK_BUFFER_QUOTA (1ull << 30) /* when the device reports no memory size */
#define DEFAULT_MAX_ELEMENTS (1ull << 30)  /* largest n of /v1/reduce and /v1/scan */
#define DEFAULT_CONN_MEMORY (64u << 10)    /* libmicrohttpd's per-connection memory (http_start.c says why) */
/* largest generate.n on the CPU emulator: more is host memory and minutes of CPU */
#define DEFAULT_EMU_MAX_ELEMENTS (1ull << 28)
#define DEFAULT_STREAMS 4 /* --streams-per-device */

/* Cache control and prewarm (cache_disk.c, prewarm.c). */
#define DEFAULT_CACHE_DISK_MAX (2ull << 30) /* bytes of the disk cache before LRU eviction */

typedef struct {
    char host[128];
    int port;
    const char *backend, *arch, *cache_dir, *templates, *web;
    bool no_disk, listen_pool;
    size_t cache_mb, max_body, conn_memory;
    int busy_poll_us;
    int max_depth, threads, workers, compile_threads, max_queue, device;
    int max_jobs, job_workers;
    double job_ttl_s, buffer_ttl_s;
    unsigned long long buffer_quota; /* 0: half the device's memory */
    unsigned long long max_elements; /* n limit of /v1/reduce and /v1/scan */
    wp_access *access;               /* --allow-host, --allow-origin, --token-file, ... (access.h) */
    /* largest generate.n on emu (reduce, scan, buffers) */
    unsigned long long emu_max_elements;
    int batch_window_us, batch_max; /* dynamic batching (batch.h) */
    /* Transport: TLS, a Unix socket, connection limits (http.h). */
    const char *unix_path, *tls_cert, *tls_key;
    unsigned socket_mode, max_connections, header_timeout_s, idle_timeout_s;
    const char *access_log; /* NULL, "-" or a file */

    /* cache control and prewarm */
    unsigned long long cache_disk_max; /* disk cache cap in bytes, 0: none */
    const char *prewarm;               /* --prewarm FILE */
    bool exit_after_prewarm;           /* --exit */
    /* devices, placement and sharding */
    int streams_per_device;
    wp_inline_mode inline_gpu;
    bool gpu_wait_yield; /* --gpu-wait yield */
    int runner_wait;     /* --runner-wait: WP_WAIT_SPIN, WP_WAIT_YIELD (default) or WP_WAIT_SLEEP (buffer.h) */
    bool no_zero_copy;   /* --zero-copy off */
    int resident_us;     /* --resident-us: a resident warp kernel's wait for its next job; 0: none */
    /* shared-memory regions (engine/regions.h) */
    bool shm_off, shm_remote;   /* --shm off, --shm-remote */
    const char *shm_prefix;     /* --shm-prefix */
    unsigned long long shm_max; /* --shm-max; 0: a quarter of the host's memory */
    int channels_max;           /* --channels-max: doorbell channels open at once; 0: none */
    const char *devices;        /* --devices: "all" or "0,2,..."; NULL: --device's, else all */
    bool device_given;
    int emu_devices;
} wp_options;

/* The defaults (o->access is left NULL: the caller makes it with wp_access_new). */
void wp_options_defaults(wp_options *o);
/* Reads argv into o. Returns 0, else -1 after saying why on stderr (main exits 2). --help and
 * --version print and exit here. */
int wp_options_parse(int argc, char **argv, wp_options *o);
/* After the flags: the access rules made whole (a token, or loopback only), and the defaults that
 * depend on the CPUs. Returns 0, else the exit status after saying why. */
int wp_options_finish(wp_options *o);
/* Once the backends are open: --threads when it was not given. Every CPU on the emulator, whose jobs run
 * on the HTTP threads (H200 host, 16 CPUs: 16 threads took the emulator's tiny reduce from 310k to 406k
 * req/s against 8); beside a GPU, what the batcher's runners (runners: one a stream of each device, 0
 * when it batches nothing) and an eighth of the CPUs for workers and the rest leave, but at least half
 * the CPUs (16 CPUs, 4 runners: 10 threads took cuda's tiny reduce from 286k-293k to 325k-334k req/s
 * and its warp from 247k-249k to 287k-305k against 8; more devices are not measured: half, as before). */
void wp_options_threads_for(wp_options *o, int runners);

#endif
