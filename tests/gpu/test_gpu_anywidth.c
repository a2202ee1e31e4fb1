/* test_gpu_anywidth.c — warp_reduce and warp_scan at every width 1..32 (CUB's logical warps at any width) on
 * the GPU against the emulator, bit for bit (docs/semantics.md, "Logical warps of any width").
 *
 * Kernels: for each width 1..32, warp_reduce on its default strategy (shfl_down) for i32 sum, f32 sum,
 * f32 and f64 "a - b" (neither associative nor commutative: any change of operand order or tree shape
 * shows) and f16 sum; smem, gmem and atomic for i32 sum and f32 "a - b" (atomic: f32 sum, which needs an
 * identity, compared within 1e-2 since its order is not fixed); redux for i32 sum; warp_scan on shfl_up
 * and smem for i32 sum and f32 "a - b", inclusive and exclusive, with and without init (an expression's
 * exclusive scan always with one), and f64 / f16 sum on shfl_up. Each runs on cuda and on emu over the
 * same random data at n in {0, 1, W - 1, 1000, 65537, 1000003}: short last groups, several rows and warps,
 * many blocks. Also block_reduce (shfl_down, shfl_xor, smem, gmem on f32 "a - b"; atomic and redux on i32
 * sum) and block_scan (shfl_up and smem: f32 "a - b" inclusive, i32 sum exclusive) at blocks 1, 3, 7, 8,
 * 31, 33, 63, 100, 255, 1000: groups that are not a power of two of at least 32, in a block rounded up to
 * a whole warp. A case is one (kernel, n). Without a CUDA device it says SKIPPED and passes.
 *
 *   test_gpu_anywidth [--threads N] [--quick] [--dry-run]
 * --dry-run compiles every kernel and runs only the emulator (a machine without a GPU); --quick keeps
 * widths 3, 7, 8, 31, blocks 7 and 100, and fewer sizes. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/app.h"
#include "engine/reduce.h"
#include "gpu_harness.h"

#define MAX_KERNELS 2048

typedef struct {
    const char *family, *op;
    wp_type type;
    int strategy, width, block; /* block: block_reduce/block_scan's group (0: the family's default) */
    bool exclusive, has_init;
    int passed, failed;
} kcase;

typedef struct {
    wp_app *app;
    bool dry_run, quick;
    kcase cases[MAX_KERNELS];
    int n_cases;
    atomic_int details;
} run_ctx;

static bool spec_fill(const kcase *k, const char *arch, wp_spec *s) {
    memset(s, 0, sizeof *s);
    s->family = wp_family_find(k->family);
    s->type = k->type;
    s->width = k->width;
    s->mask = 0xffffffffu;
    s->data = (wp_data_spec){.strategy = k->strategy, .exclusive = k->exclusive, .block = k->block};
    snprintf(s->arch, sizeof s->arch, "%s", arch);
    wp_err err = {0};
    if (!s->family || wp_op_parse(k->op, k->type, "op", &s->op, &err)) return false;
    if (wp_spec_validate(s, &err)) {
        wp_spec_free(s);
        return false;
    }
    return true;
}

static void add(run_ctx *ctx, const char *family, wp_type t, const char *op, int strategy, int width, bool excl,
                bool init) {
    if (ctx->n_cases < MAX_KERNELS)
        ctx->cases[ctx->n_cases++] = (kcase){.family = family,
                                             .op = op,
                                             .type = t,
                                             .strategy = strategy,
                                             .width = width,
                                             .exclusive = excl,
                                             .has_init = init};
}

static void list_cases(run_ctx *ctx, int sm) {
    for (int w = 1; w <= 32; w++) {
        if (ctx->quick && w != 3 && w != 7 && w != 8 && w != 31) continue;
        const char *r = "warp_reduce", *s = "warp_scan";
        add(ctx, r, WP_I32, "sum", WP_STRAT_SHFL_DOWN, w, false, false);
        add(ctx, r, WP_F32, "sum", WP_STRAT_SHFL_DOWN, w, false, false);
        add(ctx, r, WP_F32, "a - b", WP_STRAT_SHFL_DOWN, w, false, false);
        add(ctx, r, WP_F64, "a - b", WP_STRAT_SHFL_DOWN, w, false, false);
        add(ctx, r, WP_F16, "sum", WP_STRAT_SHFL_DOWN, w, false, false);
        static const int mem_strats[] = {WP_STRAT_GMEM, WP_STRAT_SMEM},
                         scan_strats[] = {WP_STRAT_SHFL_UP, WP_STRAT_SMEM};
        for (int i = 0; i < 2; i++) {
            add(ctx, r, WP_I32, "sum", mem_strats[i], w, false, false);
            add(ctx, r, WP_F32, "a - b", mem_strats[i], w, false, false);
        }
        add(ctx, r, WP_I32, "sum", WP_STRAT_ATOMIC, w, false, false);
        add(ctx, r, WP_F32, "sum", WP_STRAT_ATOMIC, w, false, false);
        if (sm >= 80) add(ctx, r, WP_I32, "sum", WP_STRAT_REDUX, w, false, false);
        for (int i = 0; i < 2; i++)
            for (int v = 0; v < 4; v++) { /* inclusive, exclusive, each with an init (an expression: always) */
                add(ctx, s, WP_I32, "sum", scan_strats[i], w, v & 1, v & 2);
                if (v != 1) add(ctx, s, WP_F32, "a - b", scan_strats[i], w, v & 1, v != 0);
            }
        add(ctx, s, WP_F64, "sum", WP_STRAT_SHFL_UP, w, false, false);
        add(ctx, s, WP_F16, "sum", WP_STRAT_SHFL_UP, w, true, true);
    }
    /* block_reduce / block_scan at block sizes that are not powers of two of at least 32 (the group) */
    static const int blocks_full[] = {1, 3, 7, 8, 31, 33, 63, 100, 255, 1000}, blocks_quick[] = {7, 100};
    const int *blocks = ctx->quick ? blocks_quick : blocks_full;
    const int n_blocks = ctx->quick ? 2 : 10;
    static const int reduce_strats[] = {WP_STRAT_SHFL_DOWN, WP_STRAT_SHFL_XOR, WP_STRAT_SMEM, WP_STRAT_GMEM};
    for (int b = 0; b < n_blocks; b++) {
        for (int i = 0; i < 4; i++) {
            add(ctx, "block_reduce", WP_F32, "a - b", reduce_strats[i], 32, false, false);
            ctx->cases[ctx->n_cases - 1].block = blocks[b];
        }
        add(ctx, "block_reduce", WP_I32, "sum", WP_STRAT_ATOMIC, 32, false, false);
        ctx->cases[ctx->n_cases - 1].block = blocks[b];
        if (sm >= 80) {
            add(ctx, "block_reduce", WP_I32, "sum", WP_STRAT_REDUX, 32, false, false);
            ctx->cases[ctx->n_cases - 1].block = blocks[b];
        }
        for (int st = 0; st < 2; st++) {
            add(ctx, "block_scan", WP_F32, "a - b", st ? WP_STRAT_SMEM : WP_STRAT_SHFL_UP, 32, false, st != 0);
            ctx->cases[ctx->n_cases - 1].block = blocks[b];
            add(ctx, "block_scan", WP_I32, "sum", st ? WP_STRAT_SMEM : WP_STRAT_SHFL_UP, 32, true, st != 0);
            ctx->cases[ctx->n_cases - 1].block = blocks[b];
        }
    }
}

static void note(run_ctx *ctx, kcase *k, uint64_t n, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void note(run_ctx *ctx, kcase *k, uint64_t n, const char *fmt, ...) {
    k->failed++;
    char what[200];
    snprintf(what, sizeof what, "%s/%s op=%s %s w%d b%d%s%s", k->family, wp_type_name(k->type), k->op,
             wp_strategy_name(k->strategy), k->width, k->block, k->exclusive ? " exclusive" : "",
             k->has_init ? " init" : "");
    va_list ap;
    va_start(ap, fmt);
    gpu_vmismatch(&ctx->details, what, n, fmt, ap);
    va_end(ap);
}

/* The job on backend b over host's n elements; *out gets the output array (malloc'd), *len its bytes. */
static int run_on(wp_app *app, wp_backend *b, const wp_spec *s, const kcase *k, const uint8_t *host, uint64_t n,
                  uint64_t init, bool compile, uint8_t **out, size_t *len, bool *deterministic, wp_err *err) {
    wp_buf *in = gpu_buf_from_host(b, host, (size_t)n * wp_type_size(s->type), err);
    int rc = in ? 0 : -1;
    wp_reduce_job job = {.spec = s, .in = in, .n = n, .has_init = k->has_init, .init = init, .compile_on_emu = compile};
    wp_reduce_result r = {0};
    if (rc == 0) rc = wp_reduce_run(app, b, &job, &r, err);
    if (rc == 0) {
        *len = (size_t)r.out_count * wp_type_size(s->type);
        *deterministic = r.deterministic;
        *out = malloc(*len + 1);
        if (!*out || (*len && wp_buf_read(r.out, 0, *out, *len, err))) rc = -1;
    }
    wp_reduce_result_free(&r);
    wp_buf_free(in);
    return rc;
}

static void compare(run_ctx *ctx, kcase *k, uint64_t n, const uint8_t *be, size_t le, const uint8_t *bc, size_t lc,
                    bool deterministic) {
    if (le != lc) return note(ctx, k, n, "result sizes differ: emu %zu bytes, cuda %zu", le, lc);
    int64_t i = gpu_first_difference(k->type, be, bc, le / wp_type_size(k->type), deterministic);
    if (i >= 0)
        return note(ctx, k, n, "first difference at element %lld: emu 0x%llx, cuda 0x%llx", (long long)i,
                    (unsigned long long)wp_data_load(k->type, be, (uint64_t)i),
                    (unsigned long long)wp_data_load(k->type, bc, (uint64_t)i));
    k->passed++;
}

static void run_case(run_ctx *ctx, kcase *k) {
    wp_app *app = ctx->app;
    wp_spec s;
    if (!spec_fill(k, app->arch, &s)) {
        note(ctx, k, 0, "the spec does not validate");
        return;
    }
    const uint64_t group = (uint64_t)(k->block ? k->block : k->width); /* a group short of one element */
    const uint64_t sizes[] = {0, 1, group - 1, 1000, 65537, 1000003};
    const int n_sizes = ctx->quick ? 4 : 6;
    uint64_t seed = 0x5eedda7aull ^ (uint64_t)(k - ctx->cases) * 0x9e3779b97f4a7c15ull;
    for (int si = 0; si < n_sizes; si++) {
        uint64_t n = sizes[si];
        uint8_t *host = malloc((size_t)n * 8 + 8), *be = NULL, *bc = NULL;
        if (!host) break;
        for (uint64_t i = 0; i < n; i++) wp_data_store(k->type, host, i, gpu_random_elem(&seed, k->type));
        uint64_t init = gpu_random_elem(&seed, k->type);
        size_t le = 0, lc = 0;
        bool det_e = true, det_c = true;
        wp_err err = {0};
        if (run_on(app, app->emu, &s, k, host, n, init, ctx->dry_run && si == 0, &be, &le, &det_e, &err))
            note(ctx, k, n, "emu: %s", err.msg);
        else if (ctx->dry_run)
            k->passed++;
        else if (run_on(app, app->cuda, &s, k, host, n, init, false, &bc, &lc, &det_c, &err))
            note(ctx, k, n, "cuda: %s", err.msg);
        else
            compare(ctx, k, n, be, le, bc, lc, det_c);
        free(be);
        free(bc);
        free(host);
    }
    wp_spec_free(&s);
}

static void each_case(void *arg, int i) {
    run_ctx *ctx = arg;
    run_case(ctx, &ctx->cases[i]);
}

static int report(run_ctx *ctx, uint64_t t0) {
    int passed = 0, failed = 0;
    const char *fams[] = {"warp_reduce", "warp_scan", "block_reduce", "block_scan"};
    for (int f = 0; f < 4; f++) {
        int kernels = 0, p = 0, fl = 0;
        for (int i = 0; i < ctx->n_cases; i++)
            if (!strcmp(ctx->cases[i].family, fams[f]))
                kernels++, p += ctx->cases[i].passed, fl += ctx->cases[i].failed;
        printf("  %-12s %4d kernels %6d passed %4d failed\n", fams[f], kernels, p, fl);
        passed += p, failed += fl;
    }
    printf("%.1f s\n", wp_ms_since(t0) / 1000);
    printf("gpu_anywidth: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    static run_ctx ctx;
    gpu_args args;
    if (!gpu_args_parse(argc, argv, GPU_ARG_THREADS | GPU_ARG_QUICK | GPU_ARG_DRY_RUN, &args)) return 2;
    const int threads = args.threads;
    ctx.dry_run = args.dry_run, ctx.quick = args.quick;
    static wp_app app;
    ctx.app = &app;
    int rc;
    if (!gpu_app_open(&app, "gpu_anywidth", ctx.dry_run, &rc)) return rc;
    list_cases(&ctx, gpu_app_sm(&app));
    printf("%d kernels on %d threads\n", ctx.n_cases, gpu_threads(threads));
    uint64_t t0 = wp_now_ns();
    gpu_for_each(threads, ctx.n_cases, each_case, &ctx);
    rc = report(&ctx, t0);
    gpu_app_close(&app);
    return rc;
}
