/* test_gpu_map.c — transform-reduce ("map") on the GPU against the emulator, bit for bit.
 *
 * For every family that takes a map (WP_F_MAP) × type × map (x*x, abs(x), x > 0 ? 1 : 0, and over a
 * second input x*y and the order-sensitive x*y - x) × op (sum; device_reduce also max; argmin/argmax
 * have none) — the group families over i32, f32 and bf16 with x*x and x*y - x — one
 * kernel is compiled through the cache and run by the engine on cuda and on emu over the same random
 * data, both inputs, n in {0, 1, 33, 1025, 65537, 999983} (device_reduce and device_scan also 4194309;
 * device_reduce's dot also 16777259: a full grid, remainders and partial vectors of both inputs). The
 * results must match bit for bit (floats too: the map runs in the element type, then the kernel's
 * fixed order). Kernels are compiled and run on 8 threads. Without a CUDA device it says SKIPPED and passes.
 *
 *   test_gpu_map [--dry-run] [--family NAME]
 * --dry-run compiles every kernel and runs only the emulator (a machine without a GPU). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/app.h"
#include "engine/reduce.h"
#include "gpu_harness.h"

#define SEED 0x3a9f00d5ull

static const char *const maps[] = {"x*x", "abs(x)", "x > 0 ? 1 : 0", "x*y", "x*y - x"};
static const char *const ops[] = {"sum", "max"};
static const uint64_t sizes[] = {0, 1, 33, 1025, 65537, 999983};
#define BIG_N 4194309ull
#define HUGE_N 16777259ull

#define THREADS 8

typedef struct {
    const wp_family *family;
    wp_type type;
    const char *op, *map;
} item;

typedef struct {
    wp_app app;
    bool dry_run;
    item *items;
    int n_items;
    atomic_int passed, failed, details;
} ctx_t;

static bool spec_make(ctx_t *c, const wp_family *f, wp_type t, const char *op, const char *map, wp_spec *s) {
    wp_err err = {0};
    memset(s, 0, sizeof *s);
    *s = (wp_spec){.family = f, .type = t, .width = (f->flags & WP_F_WIDTH_GROUP) ? 8 : 32, .mask = 0xffffffffu};
    snprintf(s->arch, sizeof s->arch, "%s", c->app.arch);
    if ((f->flags & WP_F_OP) && wp_op_parse(op, t, "op", &s->op, &err)) return false;
    if (wp_map_parse(map, t, true, "map", &s->data.map, &err)) {
        wp_spec_free(s);
        return false;
    }
    s->data.map_y = wp_map_uses_y(&s->data.map);
    if (wp_spec_validate(s, &err)) {
        wp_spec_free(s);
        return false;
    }
    return true;
}

static void fail(ctx_t *c, const wp_spec *s, uint64_t n, const char *msg) {
    atomic_fetch_add(&c->failed, 1);
    char what[240];
    snprintf(what, sizeof what, "%s/%s op=%.40s map=%.120s", s->family->name, wp_type_name(s->type), s->op.text,
             s->data.map.text);
    gpu_mismatch(&c->details, what, n, "%s", msg);
}

/* The job on backend b over host x (and y); the result's bytes into out (value and index, or the array). */
static int run_on(ctx_t *c, wp_backend *b, const wp_spec *s, const uint8_t *x, const uint8_t *y, uint64_t n,
                  const uint64_t *offsets, uint64_t groups, bool compile, uint8_t **out, size_t *len, wp_err *err) {
    size_t bytes = (size_t)n * wp_type_size(s->type);
    wp_buf *in = gpu_buf_from_host(b, x, bytes, err), *in2 = NULL, *offs = NULL;
    int rc = in ? 0 : -1;
    if (rc == 0 && s->data.map_y) rc = (in2 = gpu_buf_from_host(b, y, bytes, err)) ? 0 : -1;
    if (rc == 0 && offsets) rc = (offs = gpu_buf_from_host(b, offsets, (size_t)(groups + 1) * 8, err)) ? 0 : -1;
    wp_reduce_job job = {
        .spec = s, .in = in, .in2 = in2, .n = n, .offsets = offs, .groups = groups, .compile_on_emu = compile};
    wp_reduce_result r = {0};
    if (rc == 0) rc = wp_reduce_run(&c->app, b, &job, &r, err);
    if (rc == 0) {
        const bool one = s->family->data_out == WP_DATA_VALUE || s->family->data_out == WP_DATA_ARG;
        *len = one ? 17 : (size_t)r.out_count * wp_type_size(s->type);
        *out = calloc(1, *len + 24);
        if (!*out) rc = -1;
        if (rc == 0 && one) {
            memcpy(*out, &r.value, 8);
            memcpy(*out + 8, &r.index, 8);
            (*out)[16] = r.has_value;
        } else if (rc == 0) {
            rc = wp_buf_read(r.out, 0, *out, *len, err);
        }
        wp_reduce_result_free(&r);
    }
    wp_buf_free(in);
    wp_buf_free(in2);
    wp_buf_free(offs);
    return rc;
}

static void run_kernel(ctx_t *c, const wp_spec *s, uint64_t *seed) {
    const bool dr = !strcmp(s->family->name, "device_reduce"), ds = !strcmp(s->family->name, "device_scan");
    const int extra = (dr || ds) + (dr && s->data.map_y && !strcmp(s->op.text, "sum"));
    const size_t esize = wp_type_size(s->type);
    for (int si = 0; si < (int)WP_ARRAY_LEN(sizes) + extra; si++) {
        uint64_t n = si < (int)WP_ARRAY_LEN(sizes) ? sizes[si] : si == (int)WP_ARRAY_LEN(sizes) ? BIG_N : HUGE_N;
        uint8_t *x = malloc((size_t)n * esize + 8), *y = malloc((size_t)n * esize + 8);
        uint64_t *offsets = NULL, groups = 0;
        if (!x || !y) {
            free(x);
            free(y);
            fail(c, s, n, "out of memory");
            return;
        }
        for (uint64_t i = 0; i < n; i++) {
            wp_data_store(s->type, x, i, gpu_random_elem(seed, s->type));
            wp_data_store(s->type, y, i, gpu_random_elem(seed, s->type));
        }
        if ((s->family->flags & WP_F_SEGMENTS) && (offsets = malloc((size_t)(n + 2) * 8))) {
            offsets[0] = 0; /* lengths 0..80, empty segments included */
            for (; offsets[groups] < n; groups++) {
                uint64_t len = gpu_rng(seed) % 81;
                offsets[groups + 1] = offsets[groups] + len > n ? n : offsets[groups] + len;
            }
        }
        uint8_t *re = NULL, *rc = NULL;
        size_t le = 0, lc = 0;
        wp_err err = {0};
        char what[300];
        if (run_on(c, c->app.emu, s, x, y, n, offsets, groups, c->dry_run && si == 0, &re, &le, &err)) {
            snprintf(what, sizeof what, "emu: %s", err.msg);
            fail(c, s, n, what);
        } else if (c->dry_run) {
            atomic_fetch_add(&c->passed, 1);
        } else if (run_on(c, c->app.cuda, s, x, y, n, offsets, groups, false, &rc, &lc, &err)) {
            snprintf(what, sizeof what, "cuda: %s", err.msg);
            fail(c, s, n, what);
        } else if (le != lc || memcmp(re, rc, le)) {
            fail(c, s, n, "cuda and emu differ");
        } else {
            atomic_fetch_add(&c->passed, 1);
        }
        free(re);
        free(rc);
        free(x);
        free(y);
        free(offsets);
    }
}

static void each_item(void *arg, int i) {
    ctx_t *c = arg;
    const item *it = &c->items[i];
    uint64_t seed = SEED ^ (uint64_t)i * 0x9e3779b97f4a7c15ull;
    wp_spec s;
    if (!spec_make(c, it->family, it->type, it->op, it->map, &s)) return; /* not for this type */
    run_kernel(c, &s, &seed);
    wp_spec_free(&s);
}

/* device_reduce and device_scan: every type and map (device_reduce: sum and max); the other families:
 * i32, f32, bf16 with x*x and x*y - x (their load paths; the arithmetic is the same map functor). */
static int list_items(ctx_t *c, const char *only) {
    static const wp_type types[] = {WP_I32, WP_U32, WP_I64, WP_F32, WP_F64, WP_F16, WP_BF16};
    int n_families;
    const wp_family *const *families = wp_family_list(&n_families);
    c->items = calloc(1024, sizeof *c->items);
    if (!c->items) return -1;
    for (int fi = 0; fi < n_families; fi++) {
        const wp_family *f = families[fi];
        if (!(f->flags & WP_F_MAP) || (only && strcmp(only, f->name))) continue;
        const bool device = !strcmp(f->name, "device_reduce") || !strcmp(f->name, "device_scan");
        for (size_t ti = 0; ti < WP_ARRAY_LEN(types); ti++)
            for (size_t mi = 0; mi < WP_ARRAY_LEN(maps); mi++)
                for (size_t oi = 0; oi < WP_ARRAY_LEN(ops); oi++) {
                    wp_type t = types[ti];
                    if (!device && (mi % 4 != 0 || (t != WP_I32 && t != WP_F32 && t != WP_BF16))) continue;
                    if (oi > 0 && strcmp(f->name, "device_reduce")) continue;
                    if (c->n_items < 1024) c->items[c->n_items++] = (item){f, t, ops[oi], maps[mi]};
                }
    }
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    static ctx_t c;
    gpu_args args;
    if (!gpu_args_parse(argc, argv, GPU_ARG_DRY_RUN | GPU_ARG_FAMILY, &args)) return 2;
    const char *only = args.family;
    c.dry_run = args.dry_run;
    int rc;
    if (!gpu_app_open(&c.app, "gpu-map", c.dry_run, &rc)) return rc;
    uint64_t t0 = wp_now_ns();
    if (list_items(&c, only)) {
        printf("FAIL: out of memory\ngpu-map: 0 passed, 1 failed\n");
        gpu_app_close(&c.app);
        return 1;
    }
    gpu_for_each(THREADS, c.n_items, each_item, &c);
    printf("%d kernels, %.1f s\n", c.n_items, wp_ms_since(t0) / 1000);
    printf("gpu-map: %d passed, %d failed\n", atomic_load(&c.passed), atomic_load(&c.failed));
    free(c.items);
    gpu_app_close(&c.app);
    return atomic_load(&c.failed) ? 1 : 0;
}
