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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/app.h"
#include "engine/reduce.h"
#include "gpu_harness.h"
#include "kernels/stats.h"

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
} ctx_t;

/* Element i: an offset with noise, a sprinkle of mixed magnitudes, zeros and -0 (integers: a range). */
static uint64_t hard_elem(uint64_t *s, wp_type t, int stat) {
    uint64_t r = gpu_rng(s);
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
    wp_buf *in = gpu_buf_from_host(b, host, (size_t)n * wp_type_size(s->type), err);
    wp_reduce_job job = {.spec = s, .in = in, .n = n, .compile_on_emu = true};
    int rc = in ? wp_reduce_run(app, b, &job, r, err) : -1;
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

static void each_case(void *arg, int i) {
    ctx_t *ctx = arg;
    run_case(ctx, &ctx->cases[i]);
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
    gpu_args args;
    if (!gpu_args_parse(argc, argv, GPU_ARG_THREADS | GPU_ARG_DRY_RUN, &args)) return 2;
    const int threads = args.threads;
    ctx.dry_run = args.dry_run;
    static wp_app app;
    ctx.app = &app;
    int rc;
    if (!gpu_app_open(&app, "gpu_stats", ctx.dry_run, &rc)) return rc;
    list_cases(&ctx);
    printf("%d kernels on %d threads\n", ctx.n_cases, gpu_threads(threads));
    gpu_for_each(threads, ctx.n_cases, each_case, &ctx);
    int passed = 0, failed = 0;
    for (int i = 0; i < ctx.n_cases; i++) {
        const scase *k = &ctx.cases[i];
        passed += k->passed;
        failed += k->failed;
        if (k->failed)
            printf("FAIL %s %s %s b%d: %s\n", wp_stat_name(k->stat), wp_type_name(k->type),
                   wp_strategy_name(k->strategy), k->block, k->error);
    }
    printf("gpu_stats: %d passed, %d failed\n", passed, failed);
    gpu_app_close(&app);
    return failed ? 1 : 0;
}
