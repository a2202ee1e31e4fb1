/* test_gpu_bykey.c — reduce_by_key (templates/bykey.cu) on the GPU against the emulator
 * (kernels/bykey.c), bit for bit: floats too, since the emulator follows the kernel's combining order.
 *
 * Kernels: value types f32 f64 f16 bf16 i32 u64 × operators sum, max and the expression "a - b"
 * (neither associative nor commutative: any change of operand order shows), xor for the integers; keys
 * i32, u32, i64 or u64 in turn; block 256, and f32 sum also at 32, 512 and 1024. Each runs on n in
 * {1, 33, 4097, 65537, 999983} (f32 also 4194309) with runs of 1, of 1..7, of about 1000, and one run
 * over everything, random values (floats not whole, so the order matters). A case passes when the runs'
 * count, keys and values are the same bits on cuda and emu, when a second cuda run of REPEAT launches
 * back to back (epoch-stamped tile status) gives them again, and for integer sums when they equal a
 * plain sequential reference. Without a CUDA device it says SKIPPED and passes.
 *   test_gpu_bykey [--quick] [--dry-run]   (--dry-run: a second emulator stands in for the GPU) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/app.h"
#include "engine/bykey.h"
#include "gpu_harness.h"

#define REPEAT 3
#define DETAILS_PRINTED 12

static int passed, failed, printed;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
    failed++;
    if (printed++ >= DETAILS_PRINTED) return;
    va_list ap;
    va_start(ap, fmt);
    printf("  mismatch: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

/* Keys in runs of about len (0: 1..7; -1: one run); values random in [-4, 4) (integers -100..100, or 0..200). */
static void fill(wp_type kt, wp_type t, uint64_t n, int len, uint64_t seed, uint8_t *keys, uint8_t *vals) {
    uint64_t s = seed, key = gpu_rng(&s), left = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (len >= 0 && left == 0) {
            key = gpu_rng(&s);
            left = len > 0 ? (uint64_t)len - 1 + gpu_rng(&s) % 3 : 1 + gpu_rng(&s) % 7;
        }
        if (left) left--;
        wp_data_store(kt, keys, i, key & wp_type_bitmask(kt));
        const uint64_t r = gpu_rng(&s);
        const double v = wp_type_is_float(t)    ? (double)(r >> 11) * 0x1p-53 * 8.0 - 4.0
                         : wp_type_is_signed(t) ? (double)(int)(r % 201) - 100
                                                : (double)(r % 201);
        wp_data_store(t, vals, i, wp_value_from_double(t, v));
    }
}

typedef struct {
    wp_buf *keys, *vals, *ok, *ov;
} bufs;

static int bufs_make(wp_backend *b, uint64_t n, size_t kb, size_t vb, const uint8_t *keys, const uint8_t *vals, bufs *o,
                     wp_err *err) {
    memset(o, 0, sizeof *o);
    if (!(o->keys = gpu_buf_from_host(b, keys, n * kb, err)) || !(o->vals = gpu_buf_from_host(b, vals, n * vb, err)) ||
        !(o->ok = wp_buf_alloc(b, n * kb, err)) || !(o->ov = wp_buf_alloc(b, n * vb, err)))
        return -1;
    return 0;
}
static void bufs_free(bufs *o) {
    wp_buf_free(o->keys);
    wp_buf_free(o->vals);
    wp_buf_free(o->ok);
    wp_buf_free(o->ov);
}

/* Runs the job on b (repeat launches), reads the runs back into rk/rv; the count, or -1. */
static int64_t run_on(wp_app *app, wp_backend *b, const wp_spec *s, uint64_t n, const uint8_t *keys,
                      const uint8_t *vals, int repeat, uint8_t *rk, uint8_t *rv, wp_err *err) {
    const size_t kb = wp_type_size(s->data.keys), vb = wp_type_size(s->type);
    bufs o;
    int64_t runs = -1;
    wp_bykey_result res;
    if (bufs_make(b, n, kb, vb, keys, vals, &o, err) == 0) {
        const wp_bykey_job job = {
            .spec = s, .keys = o.keys, .in = o.vals, .n = n, .out_keys = o.ok, .out_values = o.ov, .repeat = repeat};
        if (wp_bykey_run(app, b, &job, &res, err) == 0 && wp_buf_read(o.ok, 0, rk, res.runs * kb, err) == 0 &&
            wp_buf_read(o.ov, 0, rv, res.runs * vb, err) == 0)
            runs = (int64_t)res.runs;
    }
    bufs_free(&o);
    return runs;
}

/* Integer sums: the sequential reference. */
static bool plain_sum_ok(const wp_spec *s, uint64_t n, const uint8_t *keys, const uint8_t *vals, int64_t runs,
                         const uint8_t *rk, const uint8_t *rv) {
    const wp_type kt = s->data.keys, t = s->type;
    int64_t r = -1;
    uint64_t acc = 0;
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t k = wp_data_load(kt, keys, i);
        if (i == 0 || k != wp_data_load(kt, keys, i - 1)) {
            if (r >= 0 && (wp_data_load(t, rv, (uint64_t)r) != (acc & wp_type_bitmask(t)))) return false;
            if (++r >= runs || wp_data_load(kt, rk, (uint64_t)r) != k) return false;
            acc = 0;
        }
        acc += wp_data_load(t, vals, i);
    }
    return r + 1 == runs && (n == 0 || wp_data_load(t, rv, (uint64_t)r) == (acc & wp_type_bitmask(t)));
}

static void run_kernel(wp_app *app, wp_type t, wp_type kt, const char *op, int block, bool big) {
    wp_spec s = {.family = wp_family_find("reduce_by_key"), .type = t, .width = 32, .mask = 0xffffffffu};
    s.data = (wp_data_spec){.block = block, .keys = kt};
    snprintf(s.arch, sizeof s.arch, "%s", app->arch);
    wp_err err = {0};
    if (wp_op_parse(op, t, "op", &s.op, &err) || wp_spec_validate(&s, &err)) {
        fail("%s/%s/%s: spec: %s", wp_type_name(t), wp_type_name(kt), op, err.msg);
        return;
    }
    static const uint64_t sizes[] = {1, 33, 4097, 65537, 999983, 4194309};
    static const int lens[] = {1, 0, 1000, -1};
    const size_t kb = wp_type_size(kt), vb = wp_type_size(t), cap = 4194309;
    uint8_t *keys = malloc(cap * kb), *vals = malloc(cap * vb), *buf = malloc(6 * cap * 8);
    uint8_t *ck = buf, *cv = buf + cap * 8, *ek = buf + 2 * cap * 8, *ev = buf + 3 * cap * 8;
    uint8_t *rk = buf + 4 * cap * 8, *rv = buf + 5 * cap * 8;
    for (size_t si = 0; keys && vals && buf && si < (big ? 6u : 5u); si++)
        for (size_t li = 0; li < 4; li++) {
            const uint64_t n = sizes[si];
            fill(kt, t, n, lens[li], n * 131 + li, keys, vals);
            const int64_t c = run_on(app, app->cuda, &s, n, keys, vals, 1, ck, cv, &err);
            const int64_t e = run_on(app, app->emu, &s, n, keys, vals, 1, ek, ev, &err);
            const int64_t r = run_on(app, app->cuda, &s, n, keys, vals, REPEAT, rk, rv, &err);
            const char *what = c < 0 || e < 0 || r < 0                                            ? err.msg
                               : c != e || c != r                                                 ? "runs differ"
                               : memcmp(ck, ek, (size_t)c * kb) || memcmp(ck, rk, (size_t)c * kb) ? "keys differ"
                               : memcmp(cv, ev, (size_t)c * vb) ? "values differ from emu"
                               : memcmp(cv, rv, (size_t)c * vb) ? "values differ between cuda runs"
                               : wp_type_is_int(t) && !strcmp(op, "sum") && !plain_sum_ok(&s, n, keys, vals, c, ck, cv)
                                   ? "integer sums differ from the plain reference"
                                   : NULL;
            if (what)
                fail("%s keys %s op %s block %d n %llu runs~%d: %s", wp_type_name(t), wp_type_name(kt), op, block,
                     (unsigned long long)n, lens[li], what);
            else
                passed++;
        }
    free(keys);
    free(vals);
    free(buf);
    wp_spec_free(&s);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    gpu_args args;
    if (!gpu_args_parse(argc, argv, GPU_ARG_QUICK | GPU_ARG_DRY_RUN, &args)) return 2;
    const bool quick = args.quick, dry = args.dry_run;
    static wp_app app;
    int rc;
    if (!gpu_app_open(&app, "gpu_bykey", dry, &rc)) return rc;
    if (dry) app.cuda = wp_backend_emu_open(); /* --dry-run: every kernel compiled, emu against emu */
    static const wp_type types[] = {WP_F32, WP_F64, WP_F16, WP_BF16, WP_I32, WP_U64};
    static const wp_type keys[] = {WP_I32, WP_U32, WP_I64, WP_U64};
    static const char *const ops[] = {"sum", "max", "a - b", "xor"};
    int k = 0;
    for (size_t ti = 0; ti < (quick ? 1u : WP_ARRAY_LEN(types)); ti++)
        for (int oi = 0; oi < (wp_type_is_int(types[ti]) ? 4 : 3); oi++)
            run_kernel(&app, types[ti], keys[k++ % 4], ops[oi], 256, types[ti] == WP_F32);
    for (int bi = 0; !quick && bi < 3; bi++) run_kernel(&app, WP_F32, WP_I32, "sum", (int[]){32, 512, 1024}[bi], false);
    printf("gpu_bykey: %d passed, %d failed\n", passed, failed);
    gpu_app_close(&app);
    return failed ? 1 : 0;
}
