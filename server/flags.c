/* flags.c — warpd's flags: the table (one row per flag, what it sets and its bounds), --help's text,
 * the value parsers and the checks across flags. Owns: nothing past the wp_options it fills. */
#include "flags.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/batch.h"
#include "engine/channels.h"
#include "engine/prewarm.h"
#include "http/http_loop.h"
#include "util/log.h"

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
            "  --threads N          HTTP threads (default every CPU on the emulator; beside a GPU the CPUs less\n"
            "                       the runners, a stream of each device, and an eighth, at least half;\n"
            "                       %d..%d); on host:port each has its own listening socket (SO_REUSEPORT),\n"
            "                       so the kernel spreads connections evenly\n"
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
            "                       /v1/health, /v1/ready and the playground's files (or set WARPD_TOKEN): one\n"
            "                       admin user named default\n"
            "  --tokens FILE        named users: NAME ROLE SHA256 [key=value ...] a line, ROLE read, run or\n"
            "                       admin, SHA256 the hex SHA-256 of the user's token, keys buffer_bytes,\n"
            "                       shm_bytes, jobs, channels, rate (quotas). Read again on SIGHUP\n"
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
            "                       on the HTTP thread (the engine before batching, for measuring)\n"
            "  --gpu-wait spin|yield  how a job waits for its device: spin (default: the driver's wait,\n"
            "                       lowest latency) or yield (poll and give the CPU to other threads\n"
            "                       between polls: for machines whose cores the HTTP side needs)\n"
            "  --runner-wait spin|yield|sleep  how the batcher's runners (small GPU jobs handed over by the\n"
            "                       HTTP threads) wait for a batch: yield (default: poll, giving the CPU\n"
            "                       to others between polls), spin (as --gpu-wait), sleep (the driver's\n"
            "                       blocking wait: no CPU while the device works, a wake-up after)\n"
            "  --zero-copy on|off   on (default): a small untimed GPU job's kernel works on its data in\n"
            "                       page-locked host memory mapped into the device, with no copy either\n"
            "                       way; off: always copied in and out (as a profiled job is)\n"
            "  --resident-us N      an untimed /v1/warp job of one whole warp (32 active lanes), or a small\n"
            "                       reduce of one block (device_reduce, argmin, argmax), run alone on a GPU\n"
            "                       goes to a resident of its kernel: one warp or block that stays on the\n"
            "                       device, waiting N µs for the next job, which then costs a trip over\n"
            "                       the bus, not a launch (default 500; 0: none)\n"
            "  --devices all|0,2,.. the GPUs to serve on, one context each (default all visible; --device N\n"
            "                       alone means just N). Jobs go to the least-loaded one unless they pin\n"
            "                       \"device\": N or run over a buffer (then where it lives)\n"
            "  --emu-devices N      with --backend emu: the emulator presents N devices (default 1), so\n"
            "                       placement is testable without GPUs\n"
            "  --shm on|off         on (default): clients on this machine may register shared-memory regions\n"
            "                       (POST /v1/shm) and reduce, scan or fill buffers from them with no copy\n"
            "                       through HTTP; off: /v1/shm and every \"shm\" field answer 403\n"
            "  --shm-prefix P       a region's name must begin with P (default /warpd)\n"
            "  --shm-max BYTES      bytes all regions may map at once (default: a quarter of the host's\n"
            "                       memory); more gets 413 shm_quota\n"
            "  --shm-remote         take regions from peers that are not local too (default: a Unix socket or\n"
            "                       loopback only)\n"
            "  --channels-max N     doorbell channels open at once (POST /v1/channels: a local client's calls\n"
            "                       through its own region instead of a socket; default %d, 0: none)\n"
            "  --version, --help\n",
            DEFAULT_PORT, DEFAULT_CACHE_MB, WP_DEFAULT_TEMPLATES, WP_DEFAULT_WEB, MIN_DEFAULT_THREADS,
            MAX_DEFAULT_THREADS, WP_BUSY_POLL_DEFAULT_US, DEFAULT_MAX_BODY, DEFAULT_CONN_MEMORY, DEFAULT_MAX_DEPTH,
            DEFAULT_MAX_QUEUE, DEFAULT_MAX_JOBS, DEFAULT_JOB_WORKERS, DEFAULT_JOB_TTL_S, DEFAULT_BUFFER_TTL_S,
            MAX_BUFFER_TTL_S, DEFAULT_MAX_ELEMENTS, DEFAULT_EMU_MAX_ELEMENTS, WP_BATCH_MAX_DEFAULT, DEFAULT_STREAMS,
            WP_CHANNELS_DEFAULT_MAX);
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

static int parse_listen(const char *flag, const char *v, wp_options *o) {
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

static int parse_device(const char *flag, const char *v, wp_options *o) {
    long long n;
    if (parse_num(flag, v, 0, 64, &n)) return -1;
    o->device = (int)n;
    o->device_given = true;
    return 0;
}

static int parse_inline_gpu(const char *flag, const char *v, wp_options *o) {
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
static int parse_gpu_wait(const char *flag, const char *v, wp_options *o) {
    return parse_either(flag, v, "spin", "yield", &o->gpu_wait_yield);
}
static int parse_runner_wait(const char *flag, const char *v, wp_options *o) {
    static const char *const names[] = {[WP_WAIT_SPIN] = "spin", [WP_WAIT_YIELD] = "yield", [WP_WAIT_SLEEP] = "sleep"};
    for (int i = WP_WAIT_SPIN; i < (int)WP_ARRAY_LEN(names); i++)
        if (!strcmp(v, names[i])) {
            o->runner_wait = i;
            return 0;
        }
    fprintf(stderr, "warpd: %s must be spin, yield or sleep\n", flag);
    return -1;
}
static int parse_zero_copy(const char *flag, const char *v, wp_options *o) {
    return parse_either(flag, v, "on", "off", &o->no_zero_copy);
}
static int parse_shm(const char *flag, const char *v, wp_options *o) {
    return parse_either(flag, v, "on", "off", &o->shm_off);
}
static int parse_shm_prefix(const char *flag, const char *v, wp_options *o) {
    if (strlen(v) < 2 || strlen(v) > 60 || v[0] != '/' || strchr(v + 1, '/') || strstr(v, "..")) {
        fprintf(stderr, "warpd: %s must be \"/\" and 1..59 characters, with no other \"/\" and no \"..\" (got %s)\n",
                flag, v);
        return -1;
    }
    o->shm_prefix = v;
    return 0;
}

/* --log-level takes effect at once (log.c), so later start-up messages follow it. */
static int parse_log_level(const char *flag, const char *v, wp_options *o) {
    (void)flag, (void)o;
    wp_log_level level;
    if (wp_log_level_parse(v, &level)) {
        fprintf(stderr, "warpd: --log-level must be error, warn, info or debug\n");
        return -1;
    }
    wp_log_set_level(level);
    return 0;
}

static int parse_socket_mode(const char *flag, const char *v, wp_options *o) {
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

static int print_help(const char *flag, const char *v, wp_options *o) {
    (void)flag, (void)v, (void)o;
    usage(stdout);
    exit(0);
}

static int print_version(const char *flag, const char *v, wp_options *o) {
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
    size_t offset; /* of the field in wp_options */
    long long min, max;
    int (*handle)(const char *flag, const char *value, wp_options *o); /* OPT_ACTION, OPT_CUSTOM */
} opt_spec;

/* One row per kind. OPT_AT is the field's offset, checked at compile time to be a T (pointers to
 * distinct types do not compare, and -Werror makes that an error). */
#define OPT_AT(T, field) (offsetof(wp_options, field) + 0 * sizeof(&((wp_options *)0)->field == (T *)0))
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
    F_CUSTOM("--runner-wait", parse_runner_wait),
    F_CUSTOM("--zero-copy", parse_zero_copy),
    F_CUSTOM("--shm", parse_shm),
    F_CUSTOM("--shm-prefix", parse_shm_prefix),
    F_BYTES("--shm-max", shm_max),
    F_SWITCH("--shm-remote", shm_remote),
    F_INT("--channels-max", channels_max, 0, 1024),
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
    F_INT("--resident-us", resident_us, 0, WP_RESIDENT_MAX_US),
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
static int set_option(const opt_spec *s, const char *v, wp_options *o) {
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
static int parse_flag(const char *a, const char *v, wp_options *o) {
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
static int check_options(const wp_options *o) {
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

int wp_options_parse(int argc, char **argv, wp_options *o) {
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

void wp_options_defaults(wp_options *o) {
    *o = (wp_options){.host = "127.0.0.1",
                      .port = DEFAULT_PORT,
                      .backend = "auto",
                      .cache_mb = DEFAULT_CACHE_MB,
                      .max_body = DEFAULT_MAX_BODY,
                      .conn_memory = DEFAULT_CONN_MEMORY,
                      .busy_poll_us = WP_BUSY_POLL_DEFAULT_US,
                      .resident_us = WP_RESIDENT_DEFAULT_US,
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
                      .runner_wait = WP_WAIT_YIELD,
                      .emu_devices = 1,
                      .shm_prefix = "/warpd",
                      .channels_max = WP_CHANNELS_DEFAULT_MAX};
}

/* Once the backends are open: --threads when it was not given (flags.h). */
void wp_options_threads_for(wp_options *o, int runners) {
    if (o->threads) return;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (runners > 0) { /* the runners', and an eighth for workers and the rest; at least half, as before */
        const long left = cpus - runners - cpus / 8;
        cpus = left > cpus / 2 ? left : cpus / 2;
    }
    o->threads = cpus < MIN_DEFAULT_THREADS   ? MIN_DEFAULT_THREADS
                 : cpus > MAX_DEFAULT_THREADS ? MAX_DEFAULT_THREADS
                                              : (int)cpus;
}

/* After the flags: the access rules made whole (a token, or loopback only), and the defaults that
 * depend on the CPUs. Returns 0, else the exit status. */
int wp_options_finish(wp_options *o) {
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
    if (!o->compile_threads) o->compile_threads = cpus > 256 ? 256 : (int)cpus;
    return 0;
}
