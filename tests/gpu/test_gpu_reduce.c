/* test_gpu_reduce.c — every data-parallel family (kernels/data.h) on the GPU against the emulator.
 *
 * For each family × allowed strategy × type × operator (the builtins the type allows and the
 * non-associative, non-commutative expression "a - b", which catches any change of operand order)
 * × a few shapes (widths, blocks, exclusive/inclusive, init, accumulate native, radius), one kernel is
 * compiled through the cache and run by the engine (server/engine/reduce.c) on cuda and on emu over the same
 * random data, n in {0, 1, 31, 32, 33, 1023, 1025, 4097, 65537, 999983} (device_scan also 4194309, blocks
 * 32, 256, 512 and 1024; device_reduce also 4194309, and 16777259 for sum and max; its default strategy
 * with sum, max and "a - b" also with no block named, so each size takes the block it picks: 256, 512 or
 * 1024, the same on both backends). Results must match bit for
 * bit — floats too, since the emulator follows the kernel's combining order — except for the atomic
 * strategy on floats, whose order is not fixed: there a relative error of 1e-2 passes. Each device
 * reduce/scan is also run again on cuda as REPEAT launches back to back (programmatic dependent launch:
 * each waits for the one before; device_reduce as a CUDA graph), which must give the same bits. A case is
 * one (kernel, n). Without a CUDA device it says SKIPPED and passes.
 *
 *   test_gpu_reduce [--threads N] [--family NAME] [--quick] [--dry-run]
 * --dry-run compiles every kernel and runs only the emulator (for a machine without a GPU);
 * --quick uses fewer sizes and shapes. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/app.h"
#include "engine/reduce.h"
#include "gpu_harness.h"

#define SEED 0x5eedda7aull
#define REPEAT 3 /* launches back to back in the second cuda run (atomic: 1, it adds into its result) */

static const uint64_t sizes_full[] = {0, 1, 31, 32, 33, 1023, 1025, 4097, 65537, 999983};
static const uint64_t sizes_quick[] = {0, 1, 33, 1025, 65537};
/* device_scan also runs over thousands of tiles (block 32: 8193), so the look-back walks back through
 * several windows and folds stashed aggregates; device_reduce over a full grid (1024 blocks) whose
 * threads fold several rounds of vectors, then a remainder and a partial vector. */
#define SCAN_BIG_N 4194309ull
/* device_reduce: more tiles than WP_REDUCE_GRID_WAVE blocks take at block 32 and 128 (grids of 1024 to
 * 4096 blocks with several tiles each, kernels/data.c), remainder and partial vector included */
#define REDUCE_HUGE_N 16777259ull
static const char *const ops_all[] = {"sum", "prod", "min", "max", "and", "or", "xor", "a - b"};
/* device_reduce with no block named (each size takes the block it picks) for these operators: the
 * block changes the order of every operator alike, so sum, max and the order-sensitive "a - b" stand for
 * all (the others keep block 256: fewer kernels to compile, test-gpu inside the device's 10 minutes). */
static bool auto_block_op(const char *op) { return !strcmp(op, "sum") || !strcmp(op, "max") || !strcmp(op, "a - b"); }

typedef struct {
    const wp_family *family;
    wp_type type;
    const char *op;
    int strategy, width, block, radius;
    bool exclusive, native, has_init;
    /* results */
    int passed, failed;
    char error[400];
} kcase;

typedef struct {
    wp_app *app;
    bool dry_run, quick, count_only;
    kcase *cases;
    int n_cases;
    atomic_int done, details;
    uint64_t t0; /* when the workers started (progress lines) */
} run_ctx;

static bool spec_fill(const kcase *k, const char *arch, wp_spec *s, wp_err *err) {
    memset(s, 0, sizeof *s);
    s->family = k->family;
    s->type = k->type;
    s->width = k->width;
    s->mask = 0xffffffffu;
    s->data = (wp_data_spec){.strategy = k->strategy,
                             .block = k->block,
                             .native = k->native,
                             .exclusive = k->exclusive,
                             .radius = k->radius};
    snprintf(s->arch, sizeof s->arch, "%s", arch);
    if ((k->family->flags & WP_F_OP) && wp_op_parse(k->op, k->type, "op", &s->op, err)) return false;
    if (wp_spec_validate(s, err)) {
        wp_spec_free(s);
        return false;
    }
    return true;
}

/* ---- the list of kernels ---- */

static int add_case(run_ctx *ctx, int *cap, kcase k) {
    wp_spec s;
    wp_err err = {0};
    if (!spec_fill(&k, ctx->app->arch, &s, &err)) return 0; /* not a valid combination */
    wp_spec_free(&s);
    if (ctx->n_cases == *cap) {
        *cap *= 2;
        kcase *grown = realloc(ctx->cases, (size_t)*cap * sizeof *grown);
        if (!grown) return -1;
        ctx->cases = grown;
    }
    ctx->cases[ctx->n_cases++] = k;
    return 0;
}

static int list_cases(run_ctx *ctx, const char *only, int sm) {
    int cap = 1024, n_families;
    ctx->cases = malloc((size_t)cap * sizeof *ctx->cases);
    if (!ctx->cases) return -1;
    const wp_family *const *families = wp_family_list(&n_families);
    static const int widths_full[] = {1, 8, 32}, widths_quick[] = {8};
    static const int blocks_full[] = {32, 128, 1024}, blocks_quick[] = {128};
    for (int fi = 0; fi < n_families; fi++) {
        const wp_family *f = families[fi];
        if (!(f->flags & WP_F_DATA) || (only && strcmp(only, f->name))) continue;
        if (f->flags & WP_F_KEYS) continue; /* reduce_by_key: test_gpu_bykey.c */
        if (f->flags & WP_F_BINS) continue; /* histogram: bins and a range to give, test_gpu_hist.c */
        const int *widths = (f->flags & WP_F_WIDTH_GROUP) ? (ctx->quick ? widths_quick : widths_full) : (int[]){32};
        int n_widths = (f->flags & WP_F_WIDTH_GROUP) ? (ctx->quick ? 1 : 3) : 1;
        /* device_scan: one warp, staged tiles up to 32 KiB (256, 512) and direct loads (1024) */
        static const int blocks_scan[] = {32, 256, 512, 1024};
        const bool dscan = !strcmp(f->name, "device_scan") && !ctx->quick;
        const int *blocks = (f->flags & WP_F_BLOCK_GROUP) ? (ctx->quick ? blocks_quick : blocks_full)
                            : dscan                       ? blocks_scan
                                                          : (int[]){256};
        int n_blocks = (f->flags & WP_F_BLOCK_GROUP) ? (ctx->quick ? 1 : 3) : dscan ? 4 : 1;
        int n_ops = (f->flags & WP_F_OP) ? (int)WP_ARRAY_LEN(ops_all) : 1;
        for (int st = 1; st < WP_STRAT_COUNT; st++) {
            if (!(f->strategies & WP_STRATBIT(st))) continue;
            if (st == WP_STRAT_REDUX && sm < 80) continue;
            for (int t = 0; t < WP_TYPE_COUNT; t++) {
                if (!(f->types & WP_TBIT(t))) continue;
                for (int o = 0; o < n_ops; o++)
                    for (int wi = 0; wi < n_widths; wi++)
                        for (int bi = 0; bi < n_blocks; bi++)
                            for (int variant = 0; variant < 4; variant++) {
                                kcase k = {.family = f,
                                           .type = (wp_type)t,
                                           .op = ops_all[o],
                                           .strategy = st,
                                           .width = widths[wi],
                                           .block = blocks[bi],
                                           .radius = 1};
                                bool half = t == WP_F16 || t == WP_BF16;
                                if (f->flags & WP_F_SCAN) { /* inclusive, exclusive, each with an init */
                                    k.exclusive = variant & 1;
                                    k.has_init = variant & 2;
                                } else if (f->flags & WP_F_RADIUS) {
                                    k.radius = variant + 1;
                                } else if (variant == 1 && half && (f->flags & WP_F_ACCUM)) {
                                    k.native = true;
                                } else if (variant == 0 && !strcmp(f->name, "device_reduce") &&
                                           st == f->strategy_default && auto_block_op(ops_all[o])) {
                                    k.block = 0; /* no block named: picked by size (256, 512, 1024) */
                                } else if (variant >= 2 && !strcmp(f->name, "device_reduce") && !ctx->quick) {
                                    k.block = variant == 2 ? 64 : 32; /* other grid shapes (up to 4096 blocks) */
                                } else if (variant) {
                                    continue;
                                }
                                if ((f->flags & WP_F_SCAN) && half && variant == 1 && (f->flags & WP_F_ACCUM))
                                    k.native = true;
                                if (k.exclusive && !k.has_init && !strcmp(k.op, "a - b"))
                                    continue; /* an expression has no identity: 400 init_required */
                                if (add_case(ctx, &cap, k)) return -1;
                            }
            }
        }
    }
    return 0;
}

/* ---- one case ---- */

static void note(run_ctx *ctx, kcase *k, uint64_t n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void note(run_ctx *ctx, kcase *k, uint64_t n, const char *fmt, ...) {
    k->failed++;
    char what[200];
    snprintf(what, sizeof what, "%s/%s op=%s %s w%d b%d%s%s%s r%d", k->family->name, wp_type_name(k->type), k->op,
             wp_strategy_name(k->strategy), k->width, k->block, k->exclusive ? " exclusive" : "",
             k->has_init ? " init" : "", k->native ? " native" : "", k->radius);
    va_list ap;
    va_start(ap, fmt);
    gpu_vmismatch(&ctx->details, what, n, fmt, ap);
    va_end(ap);
}

/* Runs the job on a backend; the input and offsets are copied there first. */
static int run_on(wp_app *app, wp_backend *b, const wp_spec *s, const kcase *k, const uint8_t *host, uint64_t n,
                  const uint64_t *offsets, uint64_t groups, uint64_t init, bool compile, int repeat,
                  wp_reduce_result *r, wp_err *err) {
    size_t bytes = (size_t)n * wp_type_size(s->type);
    wp_buf *in = gpu_buf_from_host(b, host, bytes, err), *offs = NULL;
    int rc = in ? 0 : -1;
    if (rc == 0 && offsets) rc = (offs = gpu_buf_from_host(b, offsets, (size_t)(groups + 1) * 8, err)) ? 0 : -1;
    wp_reduce_job job = {.spec = s,
                         .in = in,
                         .n = n,
                         .offsets = offs,
                         .groups = groups,
                         .has_init = k->has_init,
                         .init = init,
                         .gen_kind = WP_GEN_RANDOM,
                         .seed = n + 7,
                         .compile_on_emu = compile,
                         .repeat = repeat,
                         .graph = repeat > 1};
    if (rc == 0) rc = wp_reduce_run(app, b, &job, r, err);
    wp_buf_free(in);
    wp_buf_free(offs);
    return rc;
}

/* The bytes a result holds: the value (and index), or the output array on the host. */
static uint8_t *result_bytes(const wp_spec *s, const wp_reduce_result *r, size_t *len, wp_err *err) {
    const wp_family *f = s->family;
    if (f->data_out == WP_DATA_VALUE || f->data_out == WP_DATA_ARG) {
        uint8_t *p = calloc(1, 24);
        if (!p) return NULL;
        memcpy(p, &r->value, 8);
        memcpy(p + 8, &r->index, 8);
        p[16] = r->has_value;
        *len = 17;
        return p;
    }
    *len = (size_t)r->out_count * wp_type_size(s->type);
    uint8_t *p = malloc(*len + 1);
    if (p && wp_buf_read(r->out, 0, p, *len, err)) {
        free(p);
        return NULL;
    }
    return p;
}

static void run_case(run_ctx *ctx, kcase *k) {
    wp_app *app = ctx->app;
    wp_spec s;
    wp_err err = {0};
    if (!spec_fill(k, app->arch, &s, &err)) {
        snprintf(k->error, sizeof k->error, "spec: %s", err.msg);
        k->failed++;
        return;
    }
    const uint64_t *sizes = ctx->quick ? sizes_quick : sizes_full;
    int n_sizes = ctx->quick ? (int)WP_ARRAY_LEN(sizes_quick) : (int)WP_ARRAY_LEN(sizes_full);
    uint64_t seed = SEED ^ (uint64_t)(k - ctx->cases) * 0x9e3779b97f4a7c15ull;
    size_t esize = wp_type_size(k->type);
    const bool dr = !strcmp(k->family->name, "device_reduce");
    /* the 16M size only for sum and max: the order it checks does not depend on the operator */
    const bool huge = dr && (!strcmp(k->op, "sum") || !strcmp(k->op, "max"));
    const int big = ctx->quick ? 0 : huge ? 2 : (dr || !strcmp(k->family->name, "device_scan"));
    for (int si = 0; si < n_sizes + big; si++) {
        uint64_t n = si < n_sizes ? sizes[si] : si == n_sizes ? SCAN_BIG_N : REDUCE_HUGE_N;
        uint8_t *host = malloc((size_t)n * esize + 8);
        uint64_t groups = 0, *offsets = NULL;
        if (!host) break;
        for (uint64_t i = 0; i < n; i++) wp_data_store(k->type, host, i, gpu_random_elem(&seed, k->type));
        if (k->family->flags & WP_F_SEGMENTS) { /* random segment lengths 0..80, empty ones included */
            offsets = malloc((size_t)(n + 2) * 8);
            if (!offsets) break;
            offsets[0] = 0;
            while (offsets[groups] < n) {
                uint64_t len = gpu_rng(&seed) % 81;
                offsets[groups + 1] = offsets[groups] + len > n ? n : offsets[groups] + len;
                groups++;
            }
        }
        uint64_t init = gpu_random_elem(&seed, k->type);
        wp_reduce_result re = {0}, rc = {0}, rc2 = {0};
        size_t le = 0, lc = 0, lc2 = 0;
        uint8_t *be = NULL, *bc = NULL, *bc2 = NULL;
        if (run_on(app, app->emu, &s, k, host, n, offsets, groups, init, ctx->dry_run && si == 0, 1, &re, &err) ||
            !(be = result_bytes(&s, &re, &le, &err))) {
            note(ctx, k, n, "emu: %s", err.msg);
        } else if (ctx->dry_run) {
            k->passed++;
        } else if (run_on(app, app->cuda, &s, k, host, n, offsets, groups, init, false, 1, &rc, &err) ||
                   !(bc = result_bytes(&s, &rc, &lc, &err))) {
            note(ctx, k, n, "cuda: %s", err.msg);
        } else if (le != lc) {
            note(ctx, k, n, "result sizes differ: emu %zu bytes, cuda %zu", le, lc);
        } else if (re.block != rc.block || re.grid != rc.grid) {
            note(ctx, k, n, "launch shapes differ: emu %u x %u, cuda %u x %u", re.grid, re.block, rc.grid, rc.block);
        } else if (!rc.deterministic && (k->type == WP_F16 || k->type == WP_BF16) && k->native) {
            k->passed++;                /* a 16-bit accumulator in any order: rounding swamps any tolerance; it ran */
        } else if (!rc.deterministic) { /* atomic on floats: any order; compare values */
            bool ok = true;
            if (s.family->data_out == WP_DATA_VALUE)
                ok = re.has_value == rc.has_value && gpu_close_enough(k->type, rc.value, re.value);
            else
                ok = gpu_first_difference(k->type, be, bc, rc.out_count, false) < 0;
            if (ok)
                k->passed++;
            else
                note(ctx, k, n, "atomic result off by more than %g", GPU_REL_TOL);
        } else if (memcmp(be, bc, le)) {
            uint64_t at = 0;
            size_t step = s.family->data_out == WP_DATA_VALUE || s.family->data_out == WP_DATA_ARG ? 1 : esize;
            while (at * step < le && !memcmp(be + at * step, bc + at * step, step)) at++;
            uint64_t ev = step == 1 ? re.value : wp_data_load(k->type, be, at),
                     cv = step == 1 ? rc.value : wp_data_load(k->type, bc, at);
            note(ctx, k, n, "first difference at element %llu: emu 0x%llx, cuda 0x%llx (index emu %lld cuda %lld)",
                 (unsigned long long)at, (unsigned long long)ev, (unsigned long long)cv, (long long)re.index,
                 (long long)rc.index);
        } else if (!strncmp(k->family->name, "device_", 7) && n > 1000 &&
                   (run_on(app, app->cuda, &s, k, host, n, offsets, groups, init, false,
                           k->strategy == WP_STRAT_ATOMIC ? 1 : REPEAT, &rc2, &err) ||
                    !(bc2 = result_bytes(&s, &rc2, &lc2, &err)) || lc2 != lc || memcmp(bc, bc2, lc))) {
            note(ctx, k, n, "a second cuda run gave other bits%s%s", err.msg[0] ? ": " : "", err.msg);
        } else {
            k->passed++;
        }
        wp_reduce_result_free(&re);
        wp_reduce_result_free(&rc);
        wp_reduce_result_free(&rc2);
        free(be);
        free(bc);
        free(bc2);
        free(host);
        free(offsets);
        memset(&err, 0, sizeof err);
    }
    wp_spec_free(&s);
}

static void each_case(void *arg, int i) {
    run_ctx *ctx = arg;
    const int step = ctx->n_cases >= 10 ? ctx->n_cases / 10 : 1;
    run_case(ctx, &ctx->cases[i]);
    /* a progress line each tenth, so a slow or stuck run shows how far it got */
    int done = atomic_fetch_add(&ctx->done, 1) + 1;
    if (done % step == 0) printf("  progress %d/%d kernels, %.1f s\n", done, ctx->n_cases, wp_ms_since(ctx->t0) / 1000);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    gpu_args args;
    if (!gpu_args_parse(argc, argv, GPU_ARG_THREADS | GPU_ARG_FAMILY | GPU_ARG_QUICK | GPU_ARG_DRY_RUN | GPU_ARG_COUNT,
                        &args))
        return 2;
    const int threads = args.threads;
    const char *only = args.family;
    run_ctx ctx = {.dry_run = args.dry_run, .quick = args.quick, .count_only = args.count};
    static wp_app app;
    ctx.app = &app;
    int rc;
    if (!gpu_app_open(&app, "gpu_reduce", ctx.dry_run, &rc)) return rc;
    rc = 1;
    const int sm = gpu_app_sm(&app);
    if (list_cases(&ctx, only, sm)) {
        printf("FAIL: out of memory listing kernels\ngpu_reduce: 0 passed, 1 failed\n");
        goto out;
    }
    printf("%d kernels on %d threads, %d sizes each\n", ctx.n_cases, gpu_threads(threads),
           ctx.quick ? (int)WP_ARRAY_LEN(sizes_quick) : (int)WP_ARRAY_LEN(sizes_full));
    if (ctx.count_only) {
        printf("gpu_reduce: 0 passed, 0 failed\n");
        rc = 0;
        goto out;
    }
    uint64_t t0 = ctx.t0 = wp_now_ns();
    gpu_for_each(threads, ctx.n_cases, each_case, &ctx);

    /* per family: kernels, cases passed/failed */
    int n_families, passed = 0, failed = 0, errors = 0;
    const wp_family *const *families = wp_family_list(&n_families);
    for (int fi = 0; fi < n_families; fi++) {
        int kernels = 0, p = 0, fl = 0;
        for (int i = 0; i < ctx.n_cases; i++)
            if (ctx.cases[i].family == families[fi]) kernels++, p += ctx.cases[i].passed, fl += ctx.cases[i].failed;
        if (kernels) printf("  %-18s %5d kernels %7d passed %5d failed\n", families[fi]->name, kernels, p, fl);
        passed += p, failed += fl;
    }
    for (int i = 0; i < ctx.n_cases; i++)
        if (ctx.cases[i].error[0] && errors++ < GPU_DETAILS_PRINTED) printf("  error: %s\n", ctx.cases[i].error);
    printf("%.1f s\n", wp_ms_since(t0) / 1000);
    printf("gpu_reduce: %d passed, %d failed\n", passed, failed);
    rc = failed ? 1 : 0;
out:
    free(ctx.cases);
    gpu_app_close(&app);
    return rc;
}
