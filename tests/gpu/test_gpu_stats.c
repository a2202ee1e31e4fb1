/* test_gpu_stats.c — device_reduce's statistics and norms (op mean, var, std, norm1, norm2, norminf,
 * count_nonzero: kernels/stats.h, templates/stats.cuh) on the GPU against the emulator, bit for bit.
 *
 * For each accumulator (mean stands for var and std: one kernel, one accumulator) × type, with the
 * default strategy and no block named (each size takes the block it picks: 256, 1024 or 512), and for
 * f32 and f64 also shfl_xor and smem at block 256, the engine runs the kernel on cuda and on emu over
 * the same data, n in {0, 1, 3, 33, 1025, 65537, 999983, 4194309} (f32 and f64 moments and norm2 also
 * 16777259: thousands of blocks, several tiles a thread, a partial vector). The data is hard on purpose:
 * a large offset with small noise, mixed magnitudes, zeros and -0, for f64 norm2 values past the square's
 * overflow and underflow. The 32-byte accumulators must match bit for bit (no NaN or infinity in the
 * data: their payloads are the hardware's). A case is one (kernel, n). Without a CUDA device it says
 * SKIPPED and passes.
 *
 *   test_gpu_stats [--threads N] [--dry-run]     (--dry-run: compile every kernel, run only the emulator) */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/app.h"
#include "engine/reduce.h"
#include "kernels/stats.h"

#define MAX_THREADS 16
#define HUGE_N 16777259ull

static const uint64_t sizes[] = {0, 1, 3, 33, 1025, 65537, 999983, 4194309};
static const int stats[] = {WP_STAT_MEAN, WP_STAT_NORM1, WP_STAT_NORM2, WP_STAT_NORMINF, WP_STAT_COUNT_NONZERO};

typedef struct {
    wp_type type;
    int stat, strategy, block; /* block 0: picked by size */
    int passed, failed;
    char error[300];
} scase;

typedef struct {
    wp_app *app;
    bool dry_run;
    scase cases[128];
    int n_cases;
    atomic_int next;
} ctx_t;

static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Element i: an offset with noise, a sprinkle of mixed magnitudes, zeros and -0 (integers: a range). */
static uint64_t hard_elem(uint64_t *s, wp_type t, int stat) {
    uint64_t r = rng_next(s);
    double u = (double)(r >> 11) * 0x1p-53;
    if (r % 8 == 0) return r % 16 == 0 ? 0 : wp_value_from_double(t, -0.0);
    if (wp_type_is_int(t)) {
        int64_t v = (int64_t)(r % 2000001) - 1000000;
        return wp_value_from_double(t, wp_type_is_signed(t) ? (double)v : (double)(r % 4000000));
    }
    double v = (t == WP_F16 ? 100.0 : t == WP_BF16 ? 1000.0 : 1e6) + (u - 0.5);
    if (r % 8 == 1) v = (r & 1 ? 1 : -1) * pow(10.0, (double)(r % 13) - 6); /* mixed magnitudes */
    if (t == WP_F64 && stat == WP_STAT_NORM2 && r % 64 == 2) v = r & 4 ? 1e200 : 1e-200;
    return wp_value_from_double(t, v);
}

static int run_on(wp_app *app, wp_backend *b, const wp_spec *s, const uint8_t *host, uint64_t n, wp_reduce_result *r,
                  wp_err *err) {
    size_t bytes = (size_t)n * wp_type_size(s->type);
    wp_buf *in = wp_buf_alloc(b, bytes ? bytes : 16, err);
    int rc = in && !wp_buf_write(in, 0, host, bytes, err) ? 0 : -1;
    wp_reduce_job job = {.spec = s, .in = in, .n = n, .compile_on_emu = true};
    if (rc == 0) rc = wp_reduce_run(app, b, &job, r, err);
    wp_buf_free(in);
    return rc;
}

static void run_case(ctx_t *ctx, scase *k) {
    wp_app *app = ctx->app;
    wp_spec s = {.family = wp_family_find("device_reduce"), .type = k->type, .width = 32, .mask = 0xffffffffu};
    wp_err err = {0};
    s.data = (wp_data_spec){.strategy = k->strategy, .block = k->block, .stat = k->stat};
    snprintf(s.arch, sizeof s.arch, "%s", app->arch);
    if (wp_op_parse("sum", k->type, "op", &s.op, &err) || wp_spec_validate(&s, &err)) {
        snprintf(k->error, sizeof k->error, "spec: %s", err.msg);
        k->failed++;
        return;
    }
    const bool huge = (k->type == WP_F32 || k->type == WP_F64) && k->block == 0 &&
                      (k->stat == WP_STAT_MEAN || k->stat == WP_STAT_NORM2);
    const int n_sizes = (int)WP_ARRAY_LEN(sizes) + huge;
    uint64_t seed = 0x5747a75ull ^ ((uint64_t)(k - ctx->cases) * 0x9e3779b97f4a7c15ull);
    for (int si = 0; si < n_sizes; si++) {
        const uint64_t n = si < (int)WP_ARRAY_LEN(sizes) ? sizes[si] : HUGE_N;
        if (k->block && n > 999983) continue; /* the fixed-block shapes: the small and middle sizes */
        uint8_t *host = malloc((size_t)n * wp_type_size(k->type) + 16);
        if (!host) break;
        for (uint64_t i = 0; i < n; i++) wp_data_store(k->type, host, i, hard_elem(&seed, k->type, k->stat));
        wp_reduce_result re = {0}, rc = {0};
        if (run_on(app, app->emu, &s, host, n, &re, &err)) {
            snprintf(k->error, sizeof k->error, "n=%llu emu: %s", (unsigned long long)n, err.msg);
            k->failed++;
        } else if (ctx->dry_run) {
            k->passed++;
        } else if (run_on(app, app->cuda, &s, host, n, &rc, &err)) {
            snprintf(k->error, sizeof k->error, "n=%llu cuda: %s", (unsigned long long)n, err.msg);
            k->failed++;
        } else if (re.grid != rc.grid || re.block != rc.block || memcmp(re.stat_acc, rc.stat_acc, WP_STAT_ACC_BYTES)) {
            uint64_t e[4], c[4];
            memcpy(e, re.stat_acc, sizeof e);
            memcpy(c, rc.stat_acc, sizeof c);
            snprintf(k->error, sizeof k->error,
                     "n=%llu grid %u/%u block %u/%u: emu %016llx %016llx %016llx %016llx, cuda %016llx %016llx "
                     "%016llx %016llx",
                     (unsigned long long)n, re.grid, rc.grid, re.block, rc.block, (unsigned long long)e[0],
                     (unsigned long long)e[1], (unsigned long long)e[2], (unsigned long long)e[3],
                     (unsigned long long)c[0], (unsigned long long)c[1], (unsigned long long)c[2],
                     (unsigned long long)c[3]);
            k->failed++;
        } else {
            k->passed++;
        }
        free(host);
    }
    wp_spec_free(&s);
}

static void *worker(void *arg) {
    ctx_t *ctx = arg;
    for (int i; (i = atomic_fetch_add(&ctx->next, 1)) < ctx->n_cases;) run_case(ctx, &ctx->cases[i]);
    return NULL;
}

static void list_cases(ctx_t *ctx) {
    for (int t = 0; t < WP_TYPE_COUNT; t++)
        for (size_t si = 0; si < WP_ARRAY_LEN(stats); si++) {
            ctx->cases[ctx->n_cases++] =
                (scase){.type = (wp_type)t, .stat = stats[si], .strategy = WP_STRAT_SHFL_DOWN, .block = 0};
            if (t != WP_F32 && t != WP_F64) continue;
            ctx->cases[ctx->n_cases++] =
                (scase){.type = (wp_type)t, .stat = stats[si], .strategy = WP_STRAT_SHFL_XOR, .block = 256};
            ctx->cases[ctx->n_cases++] =
                (scase){.type = (wp_type)t, .stat = stats[si], .strategy = WP_STRAT_SMEM, .block = 256};
        }
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    static ctx_t ctx;
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--dry-run")) {
            ctx.dry_run = true;
        } else {
            fprintf(stderr, "usage: %s [--threads N] [--dry-run]\n", argv[0]);
            return 2;
        }
    }
    threads = threads < 1 ? 1 : threads > MAX_THREADS ? MAX_THREADS : threads;
    static wp_app app;
    ctx.app = &app;
    wp_err err = {0};
    int sm = 90;
    if (!ctx.dry_run) {
        app.cuda = wp_backend_cuda_open(0, &err);
        if (!app.cuda) {
            printf("SKIPPED: no CUDA device (%s)\n", err.msg);
            printf("gpu_stats: 0 passed, 0 failed\n");
            return 0;
        }
        wp_device_info info;
        wp_backend_info(app.cuda, &info);
        sm = info.sm;
        printf("device: %s, sm_%d\n", info.name, info.sm);
    }
    snprintf(app.arch, sizeof app.arch, "sm_%d", sm);
    app.emu = wp_backend_emu_open();
    app.preferred = app.cuda ? app.cuda : app.emu;
    app.max_elements = 1ull << 30;
    app.reduce = wp_reduce_engine_open();
    app.jit = wp_jit_open(WP_DEFAULT_TEMPLATES, WP_DEFAULT_CUDA_HOME "/include", &err);
    if (app.jit) app.cache = wp_cache_open(NULL, 512u << 20, &err);
    int passed = 0, failed = 0;
    if (!app.emu || !app.jit || !app.cache || !app.reduce) {
        printf("FAIL setup: %s\n", err.msg);
        failed = 1;
    } else {
        list_cases(&ctx);
        printf("%d kernels on %d threads\n", ctx.n_cases, threads);
        pthread_t tid[MAX_THREADS];
        int started = 0;
        for (int i = 0; i < threads; i++) started += pthread_create(&tid[started], NULL, worker, &ctx) == 0;
        worker(&ctx);
        for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
        for (int i = 0; i < ctx.n_cases; i++) {
            const scase *k = &ctx.cases[i];
            passed += k->passed;
            failed += k->failed;
            if (k->failed)
                printf("FAIL %s %s %s b%d: %s\n", wp_stat_name(k->stat), wp_type_name(k->type),
                       wp_strategy_name(k->strategy), k->block, k->error);
        }
    }
    printf("gpu_stats: %d passed, %d failed\n", passed, failed);
    wp_reduce_engine_close(app.reduce);
    wp_cache_close(app.cache);
    wp_jit_close(app.jit);
    wp_backend_close(app.emu);
    if (app.cuda) wp_backend_close(app.cuda);
    return failed ? 1 : 0;
}
