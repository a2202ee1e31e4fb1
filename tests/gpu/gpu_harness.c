/* gpu_harness.c — the GPU test programs' shared harness (gpu_harness.h): the engine on cuda and emu, the
 * worker pool, seeded data, uploads and the float tolerance. */
#include "gpu_harness.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/reduce.h"

bool gpu_args_parse(int argc, char **argv, unsigned accepted, gpu_args *a) {
    static const struct {
        unsigned flag;
        const char *name, *value;
    } flags[] = {{GPU_ARG_THREADS, "--threads", "N"},
                 {GPU_ARG_FAMILY, "--family", "NAME"},
                 {GPU_ARG_QUICK, "--quick", NULL},
                 {GPU_ARG_DRY_RUN, "--dry-run", NULL},
                 {GPU_ARG_COUNT, "--count", NULL}};
    *a = (gpu_args){0};
    for (int i = 1; i < argc; i++) {
        size_t f = 0;
        while (f < WP_ARRAY_LEN(flags) &&
               (!(accepted & flags[f].flag) || strcmp(argv[i], flags[f].name) || (flags[f].value && i + 1 >= argc)))
            f++;
        if (f == WP_ARRAY_LEN(flags)) {
            fprintf(stderr, "usage: %s", argv[0]);
            for (f = 0; f < WP_ARRAY_LEN(flags); f++)
                if (accepted & flags[f].flag)
                    fprintf(stderr, " [%s%s%s]", flags[f].name, flags[f].value ? " " : "",
                            flags[f].value ? flags[f].value : "");
            fprintf(stderr, "\n");
            return false;
        }
        switch (flags[f].flag) {
        case GPU_ARG_THREADS:
            a->threads = atoi(argv[++i]);
            break;
        case GPU_ARG_FAMILY:
            a->family = argv[++i];
            break;
        case GPU_ARG_QUICK:
            a->quick = true;
            break;
        case GPU_ARG_DRY_RUN:
            a->dry_run = true;
            break;
        default:
            a->count = true;
            break;
        }
    }
    return true;
}

bool gpu_app_open(wp_app *app, const char *suite, bool dry_run, int *exit_code) {
    wp_err err = {0};
    int sm = GPU_DRY_RUN_SM;
    if (!dry_run) {
        app->cuda = wp_backend_cuda_open(0, &err);
        if (!app->cuda) {
            printf("SKIPPED: no CUDA device (%s)\n%s: 0 passed, 0 failed\n", err.msg, suite);
            *exit_code = 0;
            return false;
        }
        wp_device_info info;
        wp_backend_info(app->cuda, &info);
        sm = info.sm;
        printf("device: %s, sm_%d, %d SMs\n", info.name, info.sm, info.sms);
    } else {
        printf("dry run: compiling for sm_%d, emulator only\n", sm);
    }
    snprintf(app->arch, sizeof app->arch, "sm_%d", sm);
    app->emu = wp_backend_emu_open();
    app->preferred = app->cuda ? app->cuda : app->emu;
    app->max_elements = 1ull << 30;
    app->reduce = wp_reduce_engine_open();
    app->jit = wp_jit_open(WP_DEFAULT_TEMPLATES, WP_DEFAULT_CUDA_HOME "/include", &err);
    if (app->jit) app->cache = wp_cache_open(NULL, GPU_CACHE_BYTES, &err);
    if (!app->emu || !app->jit || !app->cache || !app->reduce) {
        printf("FAIL setup: %s\n%s: 0 passed, 1 failed\n", err.msg, suite);
        gpu_app_close(app);
        *exit_code = 1;
        return false;
    }
    return true;
}

void gpu_app_close(wp_app *app) {
    wp_reduce_engine_close(app->reduce);
    wp_cache_close(app->cache);
    wp_jit_close(app->jit);
    wp_backend_close(app->cuda);
    wp_backend_close(app->emu);
    app->reduce = NULL, app->cache = NULL, app->jit = NULL, app->cuda = NULL, app->emu = NULL;
}

int gpu_app_sm(const wp_app *app) { return atoi(app->arch + 3); }

typedef struct {
    void (*each)(void *ctx, int i);
    void *ctx;
    int n;
    atomic_int next;
} pool;

static void *pool_worker(void *arg) {
    pool *p = arg;
    for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->n;) p->each(p->ctx, i);
    return NULL;
}

int gpu_threads(int threads) {
    if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return threads < 1 ? 1 : threads > GPU_MAX_THREADS ? GPU_MAX_THREADS : threads;
}

void gpu_for_each(int threads, int n, void (*each)(void *ctx, int i), void *ctx) {
    pool p = {.each = each, .ctx = ctx, .n = n};
    pthread_t tids[GPU_MAX_THREADS];
    int started = 0;
    for (int i = 0; i < gpu_threads(threads); i++)
        if (pthread_create(&tids[started], NULL, pool_worker, &p) == 0) started++;
    if (started == 0) pool_worker(&p);
    for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
}

uint64_t gpu_rng(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t gpu_random_elem(uint64_t *state, wp_type t) {
    uint64_t r = gpu_rng(state);
    if (wp_type_is_int(t))
        return wp_type_is_signed(t) ? wp_value_from_double(t, (double)((int)(r % 2001) - 1000)) : r % 2001;
    return wp_value_from_double(t, (double)(r >> 40) * 0x1p-24 * 8.0 - 4.0);
}

bool gpu_close_enough(wp_type t, uint64_t a, uint64_t b) {
    double x = wp_value_to_double(t, a), y = wp_value_to_double(t, b);
    if (isnan(x) || isnan(y) || isinf(x) || isinf(y)) return isnan(x) == isnan(y) && (isnan(x) || x == y);
    return fabs(x - y) <= GPU_REL_TOL * fmax(fabs(y), 1e-3);
}

int64_t gpu_first_difference(wp_type t, const uint8_t *emu, const uint8_t *cuda, uint64_t count, bool deterministic) {
    for (uint64_t i = 0; i < count; i++) {
        uint64_t e = wp_data_load(t, emu, i), c = wp_data_load(t, cuda, i);
        if (e != c && (deterministic || !gpu_close_enough(t, c, e))) return (int64_t)i;
    }
    return -1;
}

void gpu_vmismatch(atomic_int *printed, const char *what, uint64_t n, const char *fmt, va_list ap) {
    if (atomic_fetch_add(printed, 1) >= GPU_DETAILS_PRINTED) return;
    char msg[300];
    vsnprintf(msg, sizeof msg, fmt, ap);
    printf("  mismatch %s n=%llu: %s\n", what, (unsigned long long)n, msg);
}

void gpu_mismatch(atomic_int *printed, const char *what, uint64_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    gpu_vmismatch(printed, what, n, fmt, ap);
    va_end(ap);
}

wp_buf *gpu_buf_from_host(wp_backend *b, const void *host, size_t bytes, wp_err *err) {
    wp_buf *buf = wp_buf_alloc(b, bytes ? bytes : 16, err);
    if (buf && bytes && wp_buf_write(buf, 0, host, bytes, err)) {
        wp_buf_free(buf);
        return NULL;
    }
    return buf;
}
