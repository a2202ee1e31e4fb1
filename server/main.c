/* main.c — warpd's entry: flags, start-up (compiler, cache, backends, HTTP), signals, shut-down.
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

#include "access.h"
#include "app.h"
#include "bgbuild.h"
#include "http_loop.h"
#include "listen.h"
#include "log.h"
#include "prewarm.h"
#include "reqlog.h"

#define DEFAULT_PORT 8080
#define DEFAULT_CACHE_MB 256
#define DEFAULT_MAX_BODY (64u << 20)
#define DEFAULT_MAX_DEPTH 64
#define MIN_DEFAULT_THREADS 4 /* --threads by default: half the CPUs, within these */
#define MAX_DEFAULT_THREADS 16
#define DEFAULT_MAX_QUEUE 1024
#define DEFAULT_MAX_JOBS 256
#define DEFAULT_JOB_WORKERS 2
#define DEFAULT_JOB_TTL_S 600
#define DEFAULT_BUFFER_TTL_S 3600
#define MAX_BUFFER_TTL_S (7 * 24 * 3600)
#define FALLBACK_BUFFER_QUOTA (1ull << 30) /* when the device reports no memory size */
#define DEFAULT_MAX_ELEMENTS (1ull << 30)  /* largest n of /v1/reduce and /v1/scan */
#define DEFAULT_CONN_MEMORY (64u << 10)    /* libmicrohttpd's per-connection memory (http.c says why) */
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
    /* devices (issue 9) */
    int streams_per_device;
    wp_inline_mode inline_gpu;
    bool gpu_wait_yield; /* --gpu-wait yield */
    bool no_zero_copy;   /* --zero-copy off */
    const char *devices; /* --devices: "all" or "0,2,..."; NULL: --device's, else all */
    bool device_given;
    int emu_devices;
} options;

static void usage(FILE *f) {
    fprintf(f,
            "usage: warpd [options]\n"
            "  --listen HOST:PORT   address to serve on (default 127.0.0.1:%d; only loopback unless told)\n"
            "  --backend B          auto | cuda | emu (default auto: cuda when a GPU is usable)\n"
            "  --device N           CUDA device ordinal (default 0)\n"
            "  --arch sm_XY         target when there is no GPU (default sm_90; with a GPU, the device's)\n"
            "                       (--prewarm --exit: the target whenever it is given)\n"
            "  --cache-dir DIR      disk cache (default $XDG_CACHE_HOME/warpd or ~/.cache/warpd)\n"
            "  --no-disk-cache      keep compiled kernels in memory only\n"
            "  --cache-mem MB       memory cache cap (default %d MB)\n"
            "  --cache-disk-max BYTES  disk cache cap (default 2G; suffixes K M G T, binary; 0: none): past it\n"
            "                       the least recently used files are removed\n"
            "  --templates DIR      CUDA templates (default %s)\n"
            "  --web DIR            playground files served at / (default %s)\n"
            "  --threads N          HTTP threads (default half the CPUs, %d..%d); on host:port each has its own\n"
            "                       listening socket (SO_REUSEPORT), so the kernel spreads connections evenly\n"
            "  --listen-pool        one listening socket for all HTTP threads instead (libmicrohttpd's pool)\n"
            "  --busy-poll-us N     after its last event an HTTP thread keeps polling its connections this\n"
            "                       long before it sleeps (default %d; 0: at once): a client's next request\n"
            "                       then finds it awake, where waking it is much of a small request's round\n"
            "                       trip. Costs CPU only while requests come closer together than that (not\n"
            "                       with --listen-pool or a Unix socket with several threads)\n"
            "  --workers N          threads that run requests off the HTTP threads: compiles, GPU jobs, large\n"
            "                       ones (default 4 per CPU, 16..256: a job waiting in a batch holds one)\n"
            "  --compile-threads N  NVRTC compiles at once, and the threads (--exit: processes) of a prewarm\n"
            "                       (default: number of CPUs, at least 2)\n"
            "  --max-body BYTES     request body limit (default %u = 64 MiB; larger gets 413)\n"
            "  --conn-memory BYTES  per-connection HTTP memory: headers and the read buffer bodies arrive\n"
            "                       through (default %u = 64 KiB; larger reads large uploads in fewer,\n"
            "                       larger pieces, but is cleared between the requests of a connection)\n"
            "  --max-depth N        JSON nesting limit (default %d)\n"
            "  --max-queue N        requests waiting for a worker before 503 (default %d)\n"
            "  --max-jobs N         async jobs queued or running before POST /v1/jobs answers 503 (default %d)\n"
            "  --job-workers N      threads that run async jobs (default %d)\n"
            "  --job-ttl S          seconds a finished job's result is kept (default %d)\n"
            "  --buffer-ttl S       seconds a buffer lives after its last use, unless ?ttl= says (default %d;\n"
            "                       at most %d)\n"
            "  --buffer-quota BYTES bytes all buffers may hold (default: half the device's memory; on emu at\n"
            "                       most a quarter of the host's available memory, MemAvailable)\n"
            "  --max-elements N     largest n of a /v1/reduce or /v1/scan job (default %llu; larger gets 413)\n"
            "  --allow-host HOST    also answer requests whose Host is HOST (a name or address, with a port or\n"
            "                       not; repeatable; * is any). Always: the listen host, localhost, 127.0.0.1,\n"
            "                       [::1]; any other Host gets 403 bad_host (DNS rebinding protection)\n"
            "  --allow-origin URL   let web pages from this origin (https://app.example) change things, with\n"
            "                       CORS (repeatable). Other sites' POST/PUT/DELETE get 403 bad_origin\n"
            "  --token-file FILE    require Authorization: Bearer <the file's first line> everywhere but\n"
            "                       /v1/health, /v1/ready and the playground's files (or set WARPD_TOKEN)\n"
            "  --metrics-public     serve /metrics without the token\n"
            "  --insecure           listen beyond loopback without a token (refused otherwise)\n"
            "  --emu-max-elements N largest generate.n on the CPU emulator, in reduce, scan and buffers\n"
            "                       (default %llu; larger gets 413 too_many_elements)\n"
            "  --batch-window-us US how long the first of concurrent small jobs with one kernel waits to gather\n"
            "                       more into one launch (default 0: batch only what is already waiting)\n"
            "  --batch-max N        jobs in one batch (default %d; 1 disables batching)\n"
            "  --listen unix:PATH   serve on a Unix socket file instead; its permissions are the access control\n"
            "  --socket-mode OCTAL  the socket file's mode (default 600: only this user may connect)\n"
            "  --tls-cert FILE      serve HTTPS with this PEM certificate (chain) ...\n"
            "  --tls-key FILE       ... and this PEM private key (both or neither)\n"
            "  --max-connections N  open connections; beyond, the oldest idle ones are closed (default: from\n"
            "                       RLIMIT_NOFILE, raised to its hard limit, less an eighth kept for files)\n"
            "  --header-timeout S   seconds a new connection has to send complete headers (default 10)\n"
            "  --idle-timeout S     seconds a connection may stay silent (keep-alive, slow uploads) (default 60)\n"
            "  --access-log FILE|-  one JSON line per request (time, id, trace id, method, route, path, status,\n"
            "                       bytes, duration, backend, cache, key), appended to FILE (reopened on SIGHUP)\n"
            "                       or written to stdout\n"
            "  --log-level L        error | warn | info | debug: the daemon's messages on stderr (default info;\n"
            "                       debug also prints every request's log line)\n"
            "  --prewarm FILE       compile the specs of FILE ({\"specs\":[...]}, as POST /v1/compile takes) at\n"
            "                       start, in the background; GET /v1/ready answers 503 \"warming\" until done\n"
            "  --exit               with --prewarm: compile in the foreground into the cache directory (on\n"
            "                       --workers processes) and exit (0 when every spec compiled), without serving\n"
            "                       or a CUDA context (the target: --arch, else the device's)\n"
            "  --streams-per-device N  CUDA streams per device, each with its own scratch and staging: that\n"
            "                       many jobs run on a device at once (default %d; 1 = one job at a time)\n"
            "  --inline-gpu MODE    where a small GPU job whose kernel is in memory runs: idle (default) on\n"
            "                       the HTTP thread while it is the only request in flight and its device\n"
            "                       has no job running (at low load the worker hand-off is most of a\n"
            "                       request's time), else on a worker, batched with others; never:\n"
            "                       always on a worker (an HTTP thread never waits for a device); always:\n"
            "                       on the HTTP thread (the engine before issue 9, for measuring)\n"
            "  --gpu-wait spin|yield  how a job waits for its device: spin (default: the driver's wait,\n"
            "                       lowest latency) or yield (poll and give the CPU to other threads\n"
            "                       between polls: for machines whose cores the HTTP side needs)\n"
            "  --zero-copy on|off   on (default): a small untimed GPU job's kernel works on its data in\n"
            "                       page-locked host memory mapped into the device, with no copy either\n"
            "                       way; off: always copied in and out (as a profiled job is)\n"
            "  --devices all|0,2,.. the GPUs to serve on, one context each (default all visible; --device N\n"
            "                       alone means just N). Jobs go to the least-loaded one unless they pin\n"
            "                       \"device\": N or run over a buffer (then where it lives)\n"
            "  --emu-devices N      with --backend emu: the emulator presents N devices (default 1), so\n"
            "                       placement is testable without GPUs\n"
            "  --version, --help\n",
            DEFAULT_PORT, DEFAULT_CACHE_MB, WP_DEFAULT_TEMPLATES, WP_DEFAULT_WEB, MIN_DEFAULT_THREADS,
            MAX_DEFAULT_THREADS, WP_BUSY_POLL_DEFAULT_US, DEFAULT_MAX_BODY, DEFAULT_CONN_MEMORY, DEFAULT_MAX_DEPTH,
            DEFAULT_MAX_QUEUE, DEFAULT_MAX_JOBS, DEFAULT_JOB_WORKERS, DEFAULT_JOB_TTL_S, DEFAULT_BUFFER_TTL_S,
            MAX_BUFFER_TTL_S, DEFAULT_MAX_ELEMENTS, DEFAULT_EMU_MAX_ELEMENTS, WP_BATCH_MAX_DEFAULT, DEFAULT_STREAMS);
}

static int parse_num(const char *flag, const char *v, long long lo, long long hi, long long *out) {
    char *end = NULL;
    errno = 0;
    long long x = v ? strtoll(v, &end, 10) : 0;
    if (!v || errno || *end || x < lo || x > hi) {
        fprintf(stderr, "warpd: %s needs a number in %lld..%lld\n", flag, lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

/* A byte count with an optional binary suffix: 512M, 2G, 1.5G, 4096. */
static int parse_bytes(const char *flag, const char *v, unsigned long long *out) {
    char *end = NULL;
    errno = 0;
    double x = v ? strtod(v, &end) : -1;
    const char *units = "KMGT";
    const char *u = end && *end ? strchr(units, *end) : NULL;
    double mult = u ? (double)(1ull << (10 * (u - units + 1))) : 1;
    const char *rest = u ? end + 1 : end;
    if (rest && (!strcmp(rest, "iB") || !strcmp(rest, "B"))) rest += strlen(rest);
    if (!v || errno || end == v || (rest && *rest) || x < 0 || x * mult > 1e18) {
        fprintf(stderr, "warpd: %s needs a byte count like 4096, 512M or 2G\n", flag);
        return -1;
    }
    *out = (unsigned long long)(x * mult);
    return 0;
}

static int parse_listen(const char *flag, const char *v, options *o) {
    (void)flag;
    if (v && !strncmp(v, "unix:", 5)) return o->unix_path = v + 5, 0; /* checked when it is bound */
    o->unix_path = NULL;
    const char *colon = v ? strrchr(v, ':') : NULL;
    if (!colon || colon == v || (size_t)(colon - v) >= sizeof o->host) {
        fprintf(stderr, "warpd: --listen needs HOST:PORT\n");
        return -1;
    }
    long long port;
    if (parse_num("--listen port", colon + 1, 0, 65535, &port)) return -1;
    const char *h = v;
    size_t hl = (size_t)(colon - v);
    if (h[0] == '[' && hl > 2 && h[hl - 1] == ']') h++, hl -= 2; /* [::1]:8080 */
    memcpy(o->host, h, hl);
    o->host[hl] = 0;
    o->port = (int)port;
    return 0;
}

static int parse_device(const char *flag, const char *v, options *o) {
    long long n;
    if (parse_num(flag, v, 0, 64, &n)) return -1;
    o->device = (int)n;
    o->device_given = true;
    return 0;
}

static int parse_inline_gpu(const char *flag, const char *v, options *o) {
    (void)flag;
    if (wp_inline_mode_parse(v, &o->inline_gpu)) {
        fprintf(stderr, "warpd: --inline-gpu must be never, idle or always\n");
        return -1;
    }
    return 0;
}

/* A flag that takes one of two words: *second says whether v is the second. */
static int parse_either(const char *flag, const char *v, const char *first, const char *second, bool *is_second) {
    if (strcmp(v, first) && strcmp(v, second)) {
        fprintf(stderr, "warpd: %s must be %s or %s\n", flag, first, second);
        return -1;
    }
    *is_second = !strcmp(v, second);
    return 0;
}
static int parse_gpu_wait(const char *flag, const char *v, options *o) {
    return parse_either(flag, v, "spin", "yield", &o->gpu_wait_yield);
}
static int parse_zero_copy(const char *flag, const char *v, options *o) {
    return parse_either(flag, v, "on", "off", &o->no_zero_copy);
}

/* --log-level takes effect at once (log.c), so later start-up messages follow it. */
static int parse_log_level(const char *flag, const char *v, options *o) {
    (void)flag, (void)o;
    wp_log_level level;
    if (wp_log_level_parse(v, &level)) {
        fprintf(stderr, "warpd: --log-level must be error, warn, info or debug\n");
        return -1;
    }
    wp_log_set_level(level);
    return 0;
}

static int parse_socket_mode(const char *flag, const char *v, options *o) {
    (void)flag;
    char *end = NULL;
    long mode = v ? strtol(v, &end, 8) : -1;
    if (!v || !*v || *end || mode < 0 || mode > 0777) {
        fprintf(stderr, "warpd: --socket-mode needs an octal mode such as 600 or 660\n");
        return -1;
    }
    o->socket_mode = (unsigned)mode;
    return 0;
}

static int print_help(const char *flag, const char *v, options *o) {
    (void)flag, (void)v, (void)o;
    usage(stdout);
    exit(0);
}

static int print_version(const char *flag, const char *v, options *o) {
    (void)flag, (void)v, (void)o;
    printf("warpd %s\n", WP_VERSION);
    exit(0);
}

/* How a flag's value is read and where it goes. */
typedef enum {
    OPT_SWITCH,   /* no value: sets a bool */
    OPT_ACTION,   /* no value: calls handle (--help, --version) */
    OPT_STRING,   /* the value as given, a const char * */
    OPT_INT,      /* a number in min..max (parse_num), stored as int */
    OPT_UNSIGNED, /* ... as unsigned */
    OPT_SIZE,     /* ... as size_t */
    OPT_ULL,      /* ... as unsigned long long */
    OPT_SECONDS,  /* ... as double */
    OPT_BYTES,    /* a byte count with an optional suffix (parse_bytes), as unsigned long long */
    OPT_CUSTOM,   /* handle reads the value */
} opt_kind;

typedef struct {
    const char *name;
    opt_kind kind;
    size_t offset; /* of the field in options */
    long long min, max;
    int (*handle)(const char *flag, const char *value, options *o); /* OPT_ACTION, OPT_CUSTOM */
} opt_spec;

/* One row per kind. OPT_AT is the field's offset, checked at compile time to be a T (pointers to
 * distinct types do not compare, and -Werror makes that an error). */
#define OPT_AT(T, field) (offsetof(options, field) + 0 * sizeof(&((options *)0)->field == (T *)0))
/* clang-format off */
#define F_SWITCH(name, field)           {name, OPT_SWITCH, OPT_AT(bool, field), 0, 0, NULL}
#define F_ACTION(name, fn)              {name, OPT_ACTION, 0, 0, 0, fn}
#define F_STRING(name, field)           {name, OPT_STRING, OPT_AT(const char *, field), 0, 0, NULL}
#define F_INT(name, field, lo, hi)      {name, OPT_INT, OPT_AT(int, field), lo, hi, NULL}
#define F_UNSIGNED(name, field, lo, hi) {name, OPT_UNSIGNED, OPT_AT(unsigned, field), lo, hi, NULL}
#define F_SIZE(name, field, lo, hi)     {name, OPT_SIZE, OPT_AT(size_t, field), lo, hi, NULL}
#define F_ULL(name, field, lo, hi)      {name, OPT_ULL, OPT_AT(unsigned long long, field), lo, hi, NULL}
#define F_SECONDS(name, field, lo, hi)  {name, OPT_SECONDS, OPT_AT(double, field), lo, hi, NULL}
#define F_BYTES(name, field)            {name, OPT_BYTES, OPT_AT(unsigned long long, field), 0, 0, NULL}
#define F_CUSTOM(name, fn)              {name, OPT_CUSTOM, 0, 0, 0, fn}
/* clang-format on */

/* Every flag but the access ones (--allow-host, --token-file, ...: wp_access_parse_flag in access.c).
 * Limits here are the ones --help and the error messages state. */
static const opt_spec flag_table[] = {
    F_ACTION("--help", print_help),
    F_ACTION("-h", print_help),
    F_ACTION("--version", print_version),
    F_SWITCH("--no-disk-cache", no_disk),
    F_SWITCH("--listen-pool", listen_pool),
    F_SWITCH("--exit", exit_after_prewarm),
    F_STRING("--prewarm", prewarm),
    F_CUSTOM("--inline-gpu", parse_inline_gpu),
    F_CUSTOM("--gpu-wait", parse_gpu_wait),
    F_CUSTOM("--zero-copy", parse_zero_copy),
    F_STRING("--devices", devices),
    F_INT("--emu-devices", emu_devices, 1, WP_MAX_DEVICES),
    F_INT("--streams-per-device", streams_per_device, 1, 64),
    F_CUSTOM("--listen", parse_listen),
    F_STRING("--backend", backend),
    F_STRING("--arch", arch),
    F_STRING("--cache-dir", cache_dir),
    F_STRING("--templates", templates),
    F_STRING("--web", web),
    F_CUSTOM("--device", parse_device),
    F_SIZE("--cache-mem", cache_mb, 1, 1 << 20),
    F_INT("--threads", threads, 1, 256),
    F_INT("--workers", workers, 1, 256),
    F_INT("--compile-threads", compile_threads, 1, 256),
    F_SIZE("--max-body", max_body, 1024, 1LL << 40),
    F_SIZE("--conn-memory", conn_memory, 16 << 10, 1LL << 30),
    F_INT("--busy-poll-us", busy_poll_us, 0, WP_BUSY_POLL_MAX_US),
    F_INT("--max-depth", max_depth, 4, 1000),
    F_INT("--max-queue", max_queue, 1, 1 << 20),
    F_INT("--max-jobs", max_jobs, 1, 1 << 20),
    F_INT("--job-workers", job_workers, 1, 256),
    F_SECONDS("--job-ttl", job_ttl_s, 0, 365LL * 24 * 3600),
    F_SECONDS("--buffer-ttl", buffer_ttl_s, 1, MAX_BUFFER_TTL_S),
    F_ULL("--max-elements", max_elements, 1, 1LL << 40),
    F_ULL("--emu-max-elements", emu_max_elements, 1, 1LL << 40),
    F_INT("--batch-window-us", batch_window_us, 0, WP_BATCH_WINDOW_MAX_US),
    F_INT("--batch-max", batch_max, 1, WP_BATCH_MAX_LIMIT),
    F_STRING("--access-log", access_log),
    F_CUSTOM("--log-level", parse_log_level),
    F_BYTES("--cache-disk-max", cache_disk_max),
    F_ULL("--buffer-quota", buffer_quota, 0, 1LL << 50),
    /* transport */
    F_STRING("--tls-cert", tls_cert),
    F_STRING("--tls-key", tls_key),
    F_CUSTOM("--socket-mode", parse_socket_mode),
    F_UNSIGNED("--max-connections", max_connections, 1, 1 << 20),
    F_UNSIGNED("--header-timeout", header_timeout_s, 1, 3600),
    F_UNSIGNED("--idle-timeout", idle_timeout_s, 1, 24 * 3600),
};

/* Reads v (NULL when the flag is last) into the option s names. Returns 0, else -1 after saying why. */
static int set_option(const opt_spec *s, const char *v, options *o) {
    char *field = (char *)o + s->offset;
    long long n;
    switch (s->kind) {
    case OPT_SWITCH:
        *(bool *)field = true;
        return 0;
    case OPT_STRING:
        *(const char **)field = v;
        return 0;
    case OPT_BYTES:
        return parse_bytes(s->name, v, (unsigned long long *)field);
    case OPT_ACTION:
    case OPT_CUSTOM:
        return s->handle(s->name, v, o);
    default:
        break;
    }
    if (parse_num(s->name, v, s->min, s->max, &n)) return -1;
    if (s->kind == OPT_INT) *(int *)field = (int)n;
    if (s->kind == OPT_UNSIGNED) *(unsigned *)field = (unsigned)n;
    if (s->kind == OPT_SIZE) *(size_t *)field = (size_t)n;
    if (s->kind == OPT_ULL) *(unsigned long long *)field = (unsigned long long)n;
    if (s->kind == OPT_SECONDS) *(double *)field = (double)n;
    return 0;
}

/* One flag a with the argument after it, v (NULL when a is last). Returns how many arguments it took,
 * 1 or 2, else -1 after saying why. */
static int parse_flag(const char *a, const char *v, options *o) {
    for (const opt_spec *s = flag_table; s < flag_table + WP_ARRAY_LEN(flag_table); s++) {
        if (strcmp(a, s->name)) continue;
        if (set_option(s, v, o)) return -1;
        return s->kind == OPT_SWITCH || s->kind == OPT_ACTION ? 1 : 2;
    }
    wp_err access_err;
    int n = wp_access_parse_flag(o->access, a, v, &access_err);
    if (n < 0) fprintf(stderr, "warpd: %s\n", access_err.msg);
    if (n == 0) fprintf(stderr, "warpd: unknown option %s (see --help)\n", a);
    return n > 0 ? n : -1;
}

/* --devices: all, or a list of distinct GPU numbers like 0,2. */
static int check_devices(const char *devices) {
    if (!strcmp(devices, "all")) return 0;
    bool seen[65] = {false};
    const char *p = devices;
    do {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 64 || seen[v] || (*end && *end != ',')) {
            fprintf(stderr, "warpd: --devices needs all or a list of distinct GPU numbers like 0,2 (got %s)\n",
                    devices);
            return -1;
        }
        seen[v] = true;
        p = *end ? end + 1 : end;
    } while (*p);
    return 0;
}

/* What one flag alone cannot check: the backend's name, --devices, --exit's needs, --arch's form. */
static int check_options(const options *o) {
    if (o->backend && strcmp(o->backend, "auto") && strcmp(o->backend, "cuda") && strcmp(o->backend, "emu")) {
        fprintf(stderr, "warpd: --backend must be auto, cuda or emu\n");
        return -1;
    }
    if (o->devices && check_devices(o->devices)) return -1;
    if (o->exit_after_prewarm && (!o->prewarm || o->no_disk)) {
        fprintf(stderr, "warpd: --exit needs --prewarm FILE and a disk cache (it fills the cache directory)\n");
        return -1;
    }
    if (o->arch && (strncmp(o->arch, "sm_", 3) || strlen(o->arch) < 5 || strlen(o->arch) > 8 ||
                    strspn(o->arch + 3, "0123456789") < 2)) {
        fprintf(stderr, "warpd: --arch must look like sm_90\n");
        return -1;
    }
    return 0;
}

/* Returns 0, else -1 after saying why (main exits 2). --help and --version exit here. */
static int parse_args(int argc, char **argv, options *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int used = parse_flag(a, i + 1 < argc ? argv[i + 1] : NULL, o);
        if (used < 0) return -1;
        i += used - 1;
        if (i >= argc) {
            fprintf(stderr, "warpd: %s needs a value\n", a);
            return -1;
        }
    }
    return check_options(o);
}

/* The GPUs of --devices (or --device, or all): one cuda backend each, in app->devices; app->cuda is
 * the first. Returns 0 when at least one opened; else -1 with the reason in err. */
static int open_gpus(const options *o, wp_app *app, wp_err *err) {
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
static void open_emu_devices(const options *o, wp_app *app) {
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
    {"GET", "/", wp_api_static, WP_ROUTE_INLINE | WP_ROUTE_PREFIX, NULL},
    {NULL, NULL, NULL, 0, NULL},
};

static void set_default_options(options *o) {
    *o = (options){.host = "127.0.0.1",
                   .port = DEFAULT_PORT,
                   .backend = "auto",
                   .cache_mb = DEFAULT_CACHE_MB,
                   .max_body = DEFAULT_MAX_BODY,
                   .conn_memory = DEFAULT_CONN_MEMORY,
                   .busy_poll_us = WP_BUSY_POLL_DEFAULT_US,
                   .max_depth = DEFAULT_MAX_DEPTH,
                   .max_queue = DEFAULT_MAX_QUEUE,
                   .max_jobs = DEFAULT_MAX_JOBS,
                   .job_workers = DEFAULT_JOB_WORKERS,
                   .job_ttl_s = DEFAULT_JOB_TTL_S,
                   .buffer_ttl_s = DEFAULT_BUFFER_TTL_S,
                   .max_elements = DEFAULT_MAX_ELEMENTS,
                   .emu_max_elements = DEFAULT_EMU_MAX_ELEMENTS,
                   .batch_max = WP_BATCH_MAX_DEFAULT,
                   .cache_disk_max = DEFAULT_CACHE_DISK_MAX,
                   .streams_per_device = DEFAULT_STREAMS,
                   .emu_devices = 1};
}

/* After the flags: the access rules made whole (a token, or loopback only), and the defaults that
 * depend on the CPUs. Returns 0, else the exit status. */
static int finish_options(options *o) {
    wp_err access_err = {0};
    wp_access_set_listen(o->access, o->host);
    if (o->unix_path) wp_access_set_unix(o->access, true); /* file permissions are the access control */
    if (wp_access_finish(o->access, getenv("WARPD_TOKEN"), &access_err)) {
        fprintf(stderr, "warpd: %s\n", access_err.msg);
        return 2;
    }
    if (*wp_access_warning(o->access)) fprintf(stderr, "warpd: warning: %s\n", wp_access_warning(o->access));
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 2) cpus = 2;
    if (!o->workers) o->workers = cpus * 4 < 16 ? 16 : cpus * 4 > 256 ? 256 : (int)cpus * 4;
    /* H100 machine, 16 CPUs: 8 HTTP threads served 60k small reduces a second against 4's 54k */
    if (!o->threads)
        o->threads = cpus / 2 < MIN_DEFAULT_THREADS   ? MIN_DEFAULT_THREADS
                     : cpus / 2 > MAX_DEFAULT_THREADS ? MAX_DEFAULT_THREADS
                                                      : (int)cpus / 2;
    if (!o->compile_threads) o->compile_threads = cpus > 256 ? 256 : (int)cpus;
    return 0;
}

static void set_app_limits(wp_app *app, const options *o) {
    app->start_ns = wp_now_ns();
    app->max_body = o->max_body;
    app->max_depth = o->max_depth;
    app->max_elements = o->max_elements;
    app->emu_max_elements = o->emu_max_elements;
    app->inline_gpu = o->inline_gpu;
    app->streams_per_device = o->streams_per_device;
}

/* Signals are taken by sigwait in serve_until_signal, in the main thread only: blocked here, before
 * any other thread starts (threads inherit the mask). */
static void block_signals(sigset_t *sigs) {
    sigemptyset(sigs);
    sigaddset(sigs, SIGINT);
    sigaddset(sigs, SIGTERM);
    sigaddset(sigs, SIGHUP); /* reopens the access log (log rotation) */
    pthread_sigmask(SIG_BLOCK, sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static void find_app_dirs(wp_app *app, const options *o) {
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
static int choose_prewarm_arch(const options *o, wp_app *app, wp_err *err) {
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
static void choose_arch(const options *o, wp_app *app) {
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
static int open_backends(const options *o, wp_app *app, wp_err *err) {
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
static int open_compiler_and_cache(const options *o, wp_app *app, char *cache_dir, size_t cache_dir_size, wp_err *err) {
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

/* The engine behind the routes: buffers, the reduce engine, the batcher and its memory, the background
 * builder, async jobs. Returns 0, else the exit status. */
static int start_engine(const options *o, wp_app *app, wp_err *err) {
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
    app->reduce = wp_reduce_engine_open();
    wp_batch_config bcfg = {.window_us = o->batch_window_us, .max = o->batch_max, .concurrency = o->streams_per_device};
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
static wp_reqlog *open_request_log(const options *o, wp_app *app, wp_err *err) {
    app->metrics = wp_metrics_open(routes);
    wp_reqlog *reqlog = app->metrics ? wp_reqlog_open(o->access_log, app->metrics, err) : NULL;
    if (!reqlog) fprintf(stderr, "warpd: %s\n", app->metrics ? err->msg : "out of memory for the metrics");
    return reqlog;
}

/* --tls-cert and --tls-key, both or neither: their PEM text, for the caller to free. Returns 0, else the
 * exit status. */
static int read_tls_files(const options *o, char **tls_cert, char **tls_key, wp_err *err) {
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
static int start_http(const options *o, wp_app *app, wp_reqlog *reqlog, const char *tls_cert, const char *tls_key,
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

static void print_banner(const options *o, const wp_app *app, const char *cache_dir) {
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

/* Until SIGINT or SIGTERM; SIGHUP reopens the access log (log rotation). */
static void serve_until_signal(const sigset_t *sigs, wp_reqlog *reqlog, wp_err *err) {
    int sig = 0;
    while (sigwait(sigs, &sig) == 0 && sig == SIGHUP)
        if (wp_reqlog_reopen(reqlog, err)) wp_log(WP_LOG_ERROR, "%s", err->msg);
    wp_log(WP_LOG_INFO, "signal %d, stopping", sig);
}

/* Each part closes after what still uses it. */
static void teardown(wp_app *app, wp_access *access, wp_reqlog *reqlog) {
    wp_http_stop(app->http);
    wp_access_free(access);         /* after HTTP: nothing checks requests any more */
    wp_prewarm_stop(app->prewarm);  /* before the cache closes: it compiles into it */
    wp_jobs_close(app->jobs);       /* after HTTP: nothing submits any more */
    wp_bgbuild_close(app->bgbuild); /* after HTTP and jobs (nothing asks), before the cache and backends */
    app->bgbuild = NULL;
    wp_buffers_close(app->buffers);      /* after jobs: nothing holds a buffer any more */
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
    options o;
    set_default_options(&o);
    o.access = access = wp_access_new();
    if (!o.access || parse_args(argc, argv, &o)) return 2;
    if (o.exit_after_prewarm) wp_prewarm_exec_tuned(argv); /* prewarm.c: returns when it does not exec */
    int rc = finish_options(&o);
    if (rc) return rc;
    set_app_limits(&app, &o);
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
    rc = start_http(&o, &app, reqlog, tls_cert, tls_key, &err);
    if (tls_key) explicit_bzero(tls_key, strlen(tls_key)); /* http.c keeps its own copy */
    free(tls_key);
    free(tls_cert);
    if (rc) return rc;
    print_banner(&o, &app, cache_dir);

    serve_until_signal(&sigs, reqlog, &err);
    teardown(&app, access, reqlog);
    return 0;
}
