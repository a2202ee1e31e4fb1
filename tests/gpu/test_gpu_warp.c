/* test_gpu_warp.c — every warp-primitive family on the GPU against the emulator, bit for bit.
 *
 * For each family the device supports × width × type × member mask (full + 3 random, fixed seed) ×
 * operator, one kernel is compiled through the cache (several threads: NVRTC dominates) and launched
 * over random inputs (n = 32, 64, 45; all lanes active or random ones; per-lane or uniform arguments;
 * NaN, -0, infinities and repeated values among floats; 1 and 3 elements for array families; random
 * predicates for vote families). Every element the emulator marks defined must match bit for bit, as
 * must src[] of the shuffles and match_all's predicate; a lane that never called must stay unwritten.
 * A case is one launch. Without a CUDA device it says SKIPPED and passes.
 *
 *   test_gpu_warp [--threads N] [--family NAME] [--dry-run]
 * --dry-run compiles every kernel and runs only the emulator (for a machine without a GPU). */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "compile/cache.h"
#include "compile/jit.h"
#include "gpu_harness.h"
#include "kernels/spec.h"

#define MASKS_PER_KERNEL 4      /* full + 3 random */
#define DETAILS_PER_KERNEL 3    /* mismatch lines kept per kernel */
#define DETAILS_PRINTED 12      /* ... and printed in all */
#define CACHE_BYTES (64u << 20) /* small enough that eviction (and unload) happens during the run */
#define SEED 0x5eed2026u
#define POISON 0xbadc0ffee0ddf00dull /* what a slot nobody wrote holds (backend_cuda.c pre-fills the same) */

/* One launch shape. */
typedef struct {
    int n;
    bool random_active;
} shape;
static const shape shapes[] = {{32, false}, {64, true}, {45, false}, {45, true}};

typedef struct {
    const wp_family *family;
    wp_type type;
    int width;
    uint32_t mask;
    const char *op; /* NULL unless WP_F_OP */
    unsigned seed;
    /* results, written by the one worker that runs this kernel */
    int cases, passed, failed;
    long lanes, mismatches;
    double compile_ms;
    char error[320];
    int n_details;
    char details[DETAILS_PER_KERNEL][480];
} kernel_case;

typedef struct {
    wp_jit *jit;
    wp_cache *cache;
    wp_backend *cuda, *emu; /* cuda NULL in --dry-run */
    char arch[16];
    kernel_case *kernels;
    int n_kernels;
    atomic_int done;
} run_ctx;

/* ---- deterministic randomness (gpu_rng: splitmix64) ---- */
static int rng_range(uint64_t *s, int lo, int hi) { /* inclusive */
    return lo + (int)(gpu_rng(s) % (uint64_t)((int64_t)hi - lo + 1));
}

/* Values that break naive emulators: NaNs with payloads and sign, a signalling NaN, ±0, ±inf, the
 * smallest subnormal; for integers 0, -1, the minimum and maximum. */
static uint64_t special_value(wp_type t, int k) {
    static const uint64_t f32[] = {0x7fc00000, 0xffc00001, 0x7f800001, 0x80000000, 0, 0x7f800000, 0xff800000, 1};
    static const uint64_t f64[] = {0x7ff8000000000000ull,
                                   0xfff8000000000001ull,
                                   0x7ff0000000000001ull,
                                   0x8000000000000000ull,
                                   0,
                                   0x7ff0000000000000ull,
                                   0xfff0000000000000ull,
                                   1};
    static const uint64_t f16[] = {0x7e00, 0xfe01, 0x7c01, 0x8000, 0, 0x7c00, 0xfc00, 1};
    static const uint64_t bf16[] = {0x7fc0, 0xffc1, 0x7f81, 0x8000, 0, 0x7f80, 0xff80, 1};
    k &= 7;
    uint64_t all = wp_type_bitmask(t), sign = (all >> 1) + 1;
    switch (t) {
    case WP_F32:
        return f32[k];
    case WP_F64:
        return f64[k];
    case WP_F16:
        return f16[k];
    case WP_BF16:
        return bf16[k];
    default: {
        const uint64_t ints[] = {0, all, sign, sign - 1, 1, 2, all - 1, sign + 1};
        return ints[k];
    }
    }
}

/* A random value of type t: random bits, one of a few values repeated across lanes (match and eq
 * need equal values), a small integer, or a special value. */
static uint64_t random_value(uint64_t *s, wp_type t, const uint64_t pool[4]) {
    uint64_t r = gpu_rng(s);
    switch (r % 8) {
    case 0:
    case 1:
    case 2:
        return gpu_rng(s) & wp_type_bitmask(t);
    case 3:
    case 4:
    case 5:
        return pool[(r >> 8) & 3];
    case 6:
        return wp_value_from_double(t, (double)((int)((r >> 8) % 17) - 8));
    default:
        return special_value(t, (int)(r >> 8));
    }
}

static bool is_shuffle(const wp_family *f) { return strncmp(f->name, "shfl", 4) == 0; }

/* ---- the kernel list ---- */

static const char *const ops_with_expr[] = {"sum", "max", "a * 3 - b"};
static const char *const ops_builtin[] = {"sum", "max", "min", "and", "xor"};

/* Whether a spec is valid (the family's row decides which ops suit which types). */
static bool spec_fill(wp_spec *s, const kernel_case *k, const char *arch, wp_err *err) {
    memset(s, 0, sizeof *s);
    s->family = k->family;
    s->type = k->type;
    s->width = k->width;
    s->mask = k->mask;
    snprintf(s->arch, sizeof s->arch, "%s", arch);
    if (k->family->flags & WP_F_OP) {
        if (wp_op_parse(k->op, k->type, "op", &s->op, err)) return false;
    } else {
        s->op.kind = WP_OP_SUM;
    }
    if (wp_spec_validate(s, err)) {
        wp_spec_free(s);
        return false;
    }
    return true;
}

static int kernels_list(run_ctx *ctx, int sm, const char *only) {
    int count = 0, cap = 4096;
    ctx->kernels = calloc((size_t)cap, sizeof *ctx->kernels);
    int n_families;
    const wp_family *const *families = wp_family_list(&n_families);
    for (int fi = 0; fi < n_families; fi++) {
        const wp_family *f = families[fi];
        if (only && strcmp(only, f->name)) continue;
        if (!(f->backends & WP_BACKEND_CUDA) || !f->emulate) continue;
        if (f->min_sm > sm) {
            printf("  %-16s skipped: needs sm_%d, the device is sm_%d\n", f->name, f->min_sm, sm);
            continue;
        }
        const char *const *ops = NULL;
        int n_ops = 1;
        if (f->flags & WP_F_OP) {
            bool expr = f->ops & WP_OPBIT(WP_OP_EXPR);
            ops = expr ? ops_with_expr : ops_builtin;
            n_ops = expr ? (int)WP_ARRAY_LEN(ops_with_expr) : (int)WP_ARRAY_LEN(ops_builtin);
        }
        for (int w = 0; w < 6; w++) {
            if (!(f->widths & (1u << w))) continue;
            for (int t = 0; t < WP_TYPE_COUNT; t++) {
                if (!(f->types & WP_TBIT(t))) continue;
                uint64_t mask_seed = SEED ^ ((uint64_t)fi << 40) ^ ((uint64_t)w << 32) ^ (uint64_t)t;
                uint32_t masks[MASKS_PER_KERNEL] = {0xffffffffu};
                uint32_t a = (uint32_t)gpu_rng(&mask_seed), b = (uint32_t)gpu_rng(&mask_seed);
                uint32_t c = (uint32_t)gpu_rng(&mask_seed), d = (uint32_t)gpu_rng(&mask_seed);
                masks[1] = a ? a : 1;           /* about half the lanes */
                masks[2] = b | c;               /* dense */
                masks[3] = (c & d) ? c & d : 2; /* sparse */
                int n_masks = (f->flags & WP_F_NO_MASK) ? 1 : MASKS_PER_KERNEL;
                for (int m = 0; m < n_masks; m++)
                    for (int o = 0; o < n_ops; o++) {
                        kernel_case k = {.family = f,
                                         .type = (wp_type)t,
                                         .width = 1 << w,
                                         .mask = masks[m],
                                         .op = ops ? ops[o] : NULL};
                        wp_spec s;
                        wp_err err = {0};
                        if (!spec_fill(&s, &k, ctx->arch, &err)) continue; /* e.g. xor on floats */
                        wp_spec_free(&s);
                        if (count == cap) {
                            cap *= 2;
                            kernel_case *grown = realloc(ctx->kernels, (size_t)cap * sizeof *grown);
                            if (!grown) return -1;
                            ctx->kernels = grown;
                        }
                        k.seed = SEED + (unsigned)count * 7919u;
                        ctx->kernels[count++] = k;
                    }
            }
        }
    }
    ctx->n_kernels = count;
    return 0;
}

/* ---- one kernel ---- */

typedef struct {
    wp_jit *jit;
    const wp_spec *spec;
} build_ctx;

static int build(void *p, wp_artifact *out, wp_err *err) {
    build_ctx *b = p;
    return wp_jit_compile(b->jit, b->spec, out, NULL, err);
}

static void kernel_fail(kernel_case *k, const char *what, const wp_err *err) {
    if (!k->error[0]) snprintf(k->error, sizeof k->error, "%s: %s", what, err->msg);
    k->cases++;
    k->failed++;
}

static void add_detail(kernel_case *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_detail(kernel_case *k, const char *fmt, ...) {
    if (k->n_details >= DETAILS_PER_KERNEL) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->details[k->n_details++], sizeof k->details[0], fmt, ap);
    va_end(ap);
}

/* Bit-exact comparison of one launch; returns the number of mismatches. */
static long compare(kernel_case *k, const wp_spec *s, const wp_warp_job *job, const wp_warp_result *emu,
                    const wp_warp_result *gpu, const char *label) {
    const wp_family *f = s->family;
    const int elems = job->elems;
    const int out_elems = f->out == WP_OUT_VALUE ? elems : 1; /* mask and bool results use slot [0] */
    const bool check_src = is_shuffle(f) || f->out == WP_OUT_MASK_PRED;
    long bad = 0;
    for (int t = 0; t < job->n; t++) {
        for (int e = 0; e < out_elems; e++) {
            size_t i = (size_t)t * elems + e;
            wp_why why = (wp_why)emu->why[i];
            if (why == WP_WHY_DEFINED) {
                k->lanes++;
                if (gpu->out[i] != emu->out[i]) {
                    bad++;
                    add_detail(k, "%s lane %d elem %d: gpu 0x%llx, emu 0x%llx (in 0x%llx, arg %d, active %d)", label, t,
                               e, (unsigned long long)gpu->out[i], (unsigned long long)emu->out[i],
                               (unsigned long long)job->in[i], job->arg[t], job->active[t]);
                }
            } else if ((why == WP_WHY_INACTIVE || why == WP_WHY_NOT_MEMBER) && gpu->out[i] != POISON) {
                bad++;
                add_detail(k, "%s lane %d elem %d: %s, yet the kernel wrote 0x%llx", label, t, e, wp_why_name(why),
                           (unsigned long long)gpu->out[i]);
            }
        }
        if (check_src && emu->why[(size_t)t * elems] == WP_WHY_DEFINED && gpu->src[t] != emu->src[t]) {
            bad++;
            add_detail(k, "%s lane %d: src gpu %d, emu %d (arg %d)", label, t, gpu->src[t], emu->src[t], job->arg[t]);
        }
    }
    return bad;
}

/* s's kernel from the cache (compiled on a miss), loaded on cuda when there is one: the entry to
 * release, or NULL with *what saying which step failed. */
static wp_kernel *kernel_for(run_ctx *ctx, kernel_case *k, const wp_spec *s, char *key_text, size_t n, void **fn,
                             const char **what, wp_err *err) {
    uint8_t key[32];
    *fn = NULL;
    if (wp_jit_key(ctx->jit, s, key, key_text, n, err)) return *what = "key", NULL;
    build_ctx bctx = {ctx->jit, s};
    wp_source src;
    wp_kernel *entry = wp_cache_get(ctx->cache, key, build, &bctx, &src, err);
    if (!entry) return *what = "compile", NULL;
    if (src == WP_SRC_COMPILE) k->compile_ms += wp_kernel_artifact(entry)->compile_ms;
    if (ctx->cuda && wp_kernel_function(entry, ctx->cuda, wp_backend_load, wp_backend_unload, fn, err)) {
        wp_kernel_release(ctx->cache, entry);
        return *what = "load", NULL;
    }
    return entry;
}

static void run_kernel(run_ctx *ctx, kernel_case *k) {
    wp_spec s;
    wp_err err = {0};
    if (!spec_fill(&s, k, ctx->arch, &err)) return kernel_fail(k, "spec", &err);
    char key_text[256], rkey_text[256];
    const char *what = "";
    void *fn = NULL, *rfn = NULL;
    wp_kernel *entry = kernel_for(ctx, k, &s, key_text, sizeof key_text, &fn, &what, &err), *rentry = NULL;
    /* the untimed runs of one warp: the spec's resident build, as the daemon runs them alone */
    wp_spec rs = s;
    rs.resident = true;
    if (entry && ctx->cuda) rentry = kernel_for(ctx, k, &rs, rkey_text, sizeof rkey_text, &rfn, &what, &err);
    if (!entry || (ctx->cuda && !rentry)) {
        if (entry) wp_kernel_release(ctx->cache, entry);
        wp_spec_free(&s);
        return kernel_fail(k, what, &err);
    }

    enum { MAX_N = 64, MAX_E = 3 }; /* the largest shape and element count below */
    uint64_t input[MAX_N * MAX_E], out_emu[MAX_N * MAX_E], out_gpu[MAX_N * MAX_E];
    int32_t arg[MAX_N], src_emu[MAX_N], src_gpu[MAX_N];
    uint8_t active[MAX_N], why_emu[MAX_N * MAX_E], why_gpu[MAX_N * MAX_E];
    const wp_family *f = k->family;
    const int elem_counts[] = {1, 3};
    const int n_elem_counts = (f->flags & WP_F_ARRAY) ? 2 : 1;
    uint64_t rng = k->seed;

    for (int ei = 0; ei < n_elem_counts; ei++)
        for (size_t si = 0; si < WP_ARRAY_LEN(shapes); si++) {
            const int n = shapes[si].n, elems = elem_counts[ei];
            uint64_t pool[4];
            for (int i = 0; i < 4; i++)
                pool[i] =
                    (i & 1) ? special_value(k->type, (int)gpu_rng(&rng)) : gpu_rng(&rng) & wp_type_bitmask(k->type);
            for (int i = 0; i < n * elems; i++) input[i] = random_value(&rng, k->type, pool);
            /* Arguments: half the cases one value for the whole warp (the usual call), half per lane. */
            bool uniform = gpu_rng(&rng) & 1;
            int lo = f->arg_min, hi = f->arg_max;
            if (f->arg && (int64_t)hi - lo > 200 && (gpu_rng(&rng) % 4)) lo = -70, hi = 70; /* mostly near */
            int32_t first_arg = f->arg ? rng_range(&rng, lo, hi) : 0;
            for (int t = 0; t < n; t++) {
                arg[t] = !f->arg ? 0 : uniform ? first_arg : rng_range(&rng, lo, hi);
                active[t] = shapes[si].random_active ? (gpu_rng(&rng) % 5 != 0) : 1;
            }
            wp_warp_job job = {.n = n, .elems = elems, .in = input, .arg = arg, .active = active};
            if (f->flags & WP_F_PRED) {
                job.pred_kind = rng_range(&rng, WP_PRED_NONZERO, WP_PRED_BETWEEN);
                job.pred_a = random_value(&rng, k->type, pool);
                job.pred_b = random_value(&rng, k->type, pool);
                if (job.pred_kind == WP_PRED_BETWEEN && wp_value_cmp(k->type, job.pred_a, job.pred_b) == 1) {
                    uint64_t lower = job.pred_b;
                    job.pred_b = job.pred_a;
                    job.pred_a = lower;
                }
            }
            if (f->flags & WP_F_SWAP) {
                job.first = rng_range(&rng, 0, elems - 1);
                job.second = rng_range(&rng, 0, elems - 1);
            }
            for (int i = 0; i < n * elems; i++) out_emu[i] = out_gpu[i] = POISON;
            memset(why_emu, 0xff, sizeof why_emu);
            for (int t = 0; t < n; t++) src_emu[t] = src_gpu[t] = -1;
            wp_warp_result emu = {.out = out_emu, .src = src_emu, .why = why_emu};
            wp_warp_result gpu = {.out = out_gpu, .src = src_gpu, .why = why_gpu};

            char label[320];
            snprintf(label, sizeof label, "%.200s n=%d elems=%d%s pred=%d first=%d second=%d", key_text, n, elems,
                     shapes[si].random_active ? " some-active" : "", job.pred_kind, job.first, job.second);
            k->cases++;
            if (wp_backend_run_warp(ctx->emu, NULL, &s, &job, &emu, NULL, &err)) {
                k->failed++;
                add_detail(k, "%s: emu failed: %s", label, err.msg);
                continue;
            }
            if (!ctx->cuda) {
                k->passed++;
                continue;
            }
            wp_run_timing timing = {0}; /* timed (untimed unset) */
            if (wp_backend_run_warp(ctx->cuda, fn, &s, &job, &gpu, &timing, &err)) {
                k->failed++;
                add_detail(k, "%s: cuda failed: %s", label, err.msg);
                continue;
            }
            long bad = compare(k, &s, &job, &emu, &gpu, label);
            /* untimed, as a request without "profile" runs: one warp goes to the resident kernel */
            if (!bad && n <= WP_RESIDENT_LANES) {
                for (int i = 0; i < n * elems; i++) out_gpu[i] = POISON;
                for (int t = 0; t < n; t++) src_gpu[t] = -1;
                timing = (wp_run_timing){.untimed = true};
                strncat(label, " untimed", sizeof label - strlen(label) - 1);
                if (wp_backend_run_warp(ctx->cuda, rfn, &rs, &job, &gpu, &timing, &err)) {
                    k->failed++;
                    add_detail(k, "%s: cuda failed: %s", label, err.msg);
                    continue;
                }
                bad = compare(k, &s, &job, &emu, &gpu, label);
            }
            k->mismatches += bad;
            if (bad)
                k->failed++;
            else
                k->passed++;
        }
    wp_kernel_release(ctx->cache, entry);
    if (rentry) wp_kernel_release(ctx->cache, rentry);
    wp_spec_free(&s);
}

static void each_kernel(void *p, int i) {
    run_ctx *ctx = p;
    run_kernel(ctx, &ctx->kernels[i]);
    int done = atomic_fetch_add(&ctx->done, 1) + 1;
    if (done % 500 == 0) fprintf(stderr, "  ... %d/%d kernels\n", done, ctx->n_kernels);
}

/* ---- report ---- */

typedef struct {
    const char *name;
    int kernels, cases, failed;
    long lanes, mismatches;
    double compile_ms;
} family_sum;

static void report(const run_ctx *ctx, double wall_s, int *passed, int *failed) {
    family_sum sums[64];
    int n_sums = 0;
    *passed = *failed = 0;
    double compile_ms = 0;
    int compiles = 0;
    for (int i = 0; i < ctx->n_kernels; i++) {
        const kernel_case *k = &ctx->kernels[i];
        int j = 0;
        while (j < n_sums && strcmp(sums[j].name, k->family->name)) j++;
        if (j == n_sums) {
            if (n_sums == (int)WP_ARRAY_LEN(sums)) continue;
            sums[n_sums++] = (family_sum){.name = k->family->name};
        }
        sums[j].kernels++;
        sums[j].cases += k->cases;
        sums[j].failed += k->failed;
        sums[j].lanes += k->lanes;
        sums[j].mismatches += k->mismatches;
        sums[j].compile_ms += k->compile_ms;
        if (k->compile_ms > 0) {
            compile_ms += k->compile_ms;
            compiles++;
        }
        *passed += k->passed;
        *failed += k->failed;
    }
    int printed = 0;
    for (int i = 0; i < ctx->n_kernels && printed < DETAILS_PRINTED; i++) {
        const kernel_case *k = &ctx->kernels[i];
        if (k->error[0]) {
            printf("FAIL %s\n", k->error);
            printed++;
        }
        for (int d = 0; d < k->n_details && printed < DETAILS_PRINTED; d++, printed++)
            printf("FAIL %s\n", k->details[d]);
    }
    printf("\n%-16s %8s %8s %12s %10s %8s\n", "family", "kernels", "cases", "lanes", "mismatch", "failed");
    for (int j = 0; j < n_sums; j++)
        printf("%-16s %8d %8d %12ld %10ld %8d\n", sums[j].name, sums[j].kernels, sums[j].cases, sums[j].lanes,
               sums[j].mismatches, sums[j].failed);
    printf("%d kernels (%d compiled, %.0f ms NVRTC in all, %.1f ms each), %.1f s wall\n", ctx->n_kernels, compiles,
           compile_ms, compiles ? compile_ms / compiles : 0.0, wall_s);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    gpu_args args;
    if (!gpu_args_parse(argc, argv, GPU_ARG_THREADS | GPU_ARG_FAMILY | GPU_ARG_DRY_RUN, &args)) return 2;
    const int threads = gpu_threads(args.threads);
    const char *only = args.family;
    const bool dry_run = args.dry_run;

    run_ctx ctx = {0};
    wp_err err = {0};
    int sm = 90;
    if (!dry_run) {
        ctx.cuda = wp_backend_cuda_open(0, &err);
        if (!ctx.cuda) {
            printf("SKIPPED: no CUDA device (%s)\n", err.msg);
            printf("gpu_warp: 0 passed, 0 failed\n");
            return 0;
        }
        wp_device_info info;
        wp_backend_info(ctx.cuda, &info);
        sm = info.sm;
        printf("device: %s, sm_%d, %d SMs, driver %d\n", info.name, info.sm, info.sms, info.driver_version);
    } else {
        printf("dry run: compiling for sm_%d, emulator only\n", sm);
    }
    snprintf(ctx.arch, sizeof ctx.arch, "sm_%d", sm);
    ctx.emu = wp_backend_emu_open();
    ctx.jit = wp_jit_open(WP_DEFAULT_TEMPLATES, WP_DEFAULT_CUDA_HOME "/include", &err);
    if (ctx.jit) ctx.cache = wp_cache_open(NULL, CACHE_BYTES, &err);
    int rc = 1;
    if (!ctx.emu || !ctx.jit || !ctx.cache) {
        printf("FAIL setup: %s\n", ctx.emu ? err.msg : "wp_backend_emu_open failed");
        printf("gpu_warp: 0 passed, 1 failed\n");
        goto out;
    }
    if (kernels_list(&ctx, sm, only)) {
        printf("FAIL: out of memory listing kernels\ngpu_warp: 0 passed, 1 failed\n");
        goto out;
    }
    printf("%d kernels on %d threads\n", ctx.n_kernels, threads);

    uint64_t t0 = wp_now_ns();
    gpu_for_each(threads, ctx.n_kernels, each_kernel, &ctx);

    int passed, failed;
    report(&ctx, wp_ms_since(t0) / 1000.0, &passed, &failed);
    if (ctx.cuda) { /* the untimed runs of one warp: some answered by the resident kernel */
        wp_device_info di;
        wp_backend_info(ctx.cuda, &di);
        printf("resident kernel: %llu runs, %llu launches\n", (unsigned long long)di.resident_runs,
               (unsigned long long)di.resident_launches);
        if (di.resident_runs == 0 && ctx.n_kernels > 0) {
            printf("FAIL no untimed run went to the resident kernel\n");
            failed++;
        }
    }
    printf("gpu_warp: %d passed, %d failed\n", passed, failed);
    rc = failed ? 1 : 0;
out:
    free(ctx.kernels);
    if (ctx.cache) wp_cache_close(ctx.cache); /* unloads the cuda modules: before the backend closes */
    wp_jit_close(ctx.jit);
    wp_backend_close(ctx.emu);
    wp_backend_close(ctx.cuda);
    return rc;
}
