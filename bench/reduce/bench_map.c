/* bench_map.c — transform-reduce on the GPU: device_reduce's sum against the map x*x with
 * op sum over the same f32 buffer, 2^24..2^30 elements (GB/s of input read, and the ratio, which the
 * target wants >= 0.9), and the dot product of two 2^28 f32 arrays (TB/s of both inputs read; >= 2.5).
 * Each number is the median of RUNS timings of REPEAT launches replayed as one CUDA graph, through the
 * engine (server/engine/reduce.c) as /v1/reduce runs them; the inputs are generated on the device.
 * Without a GPU it says SKIPPED.
 *
 *   bench_map [--max-log2 N]   (default 30; 2^30 f32 is 4 GiB) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/lib/reduce_entry.h"
#include "engine/app.h"
#include "engine/reduce.h"

#define RUNS 7
#define REPEAT 20
#define DOT_N (1ull << 28)

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static bool make_spec(wp_app *app, const char *family, const char *op, const char *map, wp_spec *s, wp_err *err) {
    memset(s, 0, sizeof *s);
    *s = (wp_spec){.family = wp_family_find(family), .type = WP_F32, .width = 32, .mask = 0xffffffffu};
    snprintf(s->arch, sizeof s->arch, "%s", app->arch);
    if (op && wp_op_parse(op, WP_F32, "op", &s->op, err)) return false;
    if (map && wp_map_parse(map, WP_F32, true, "map", &s->data.map, err)) return false;
    s->data.map_y = map && wp_map_uses_y(&s->data.map);
    return wp_spec_validate(s, err) == 0;
}

/* n f32 random values into a new device buffer (the generate family). */
static wp_buf *generated(wp_app *app, uint64_t n, uint64_t seed, wp_err *err) {
    wp_spec s;
    if (!make_spec(app, "generate", NULL, NULL, &s, err)) return NULL;
    wp_buf *out = wp_buf_alloc(app->cuda, (size_t)n * 4, err);
    wp_reduce_job job = {.spec = &s, .n = n, .gen_kind = WP_GEN_RANDOM, .seed = seed, .out = out};
    wp_reduce_result r;
    if (out && wp_reduce_run(app, app->cuda, &job, &r, err)) {
        wp_buf_free(out);
        out = NULL;
    }
    wp_spec_free(&s);
    return out;
}

/* Median microseconds per launch of the spec over in (and in2); -1 on error. */
static double time_us(wp_app *app, const wp_spec *s, const wp_buf *in, const wp_buf *in2, uint64_t n, wp_err *err) {
    double t[RUNS];
    wp_reduce_job job = {.spec = s, .in = in, .in2 = in2, .n = n, .repeat = REPEAT, .graph = true};
    wp_reduce_result r;
    if (wp_reduce_run(app, app->cuda, &job, &r, err)) return -1; /* compile and warm up */
    for (int i = 0; i < RUNS; i++) {
        if (wp_reduce_run(app, app->cuda, &job, &r, err)) return -1;
        t[i] = r.kernel_us;
    }
    qsort(t, RUNS, sizeof t[0], cmp_double);
    return t[RUNS / 2];
}

int main(int argc, char **argv) {
    int max_log2 = 30;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--max-log2") && i + 1 < argc) max_log2 = atoi(argv[++i]);
    int rc;
    wp_app *app = wpb_start(&rc);
    if (!app) return rc;
    wp_err err = {0};
    wp_spec sum, sq, dot;
    if (!make_spec(app, "device_reduce", "sum", NULL, &sum, &err) ||
        !make_spec(app, "device_reduce", "sum", "x*x", &sq, &err) ||
        !make_spec(app, "device_reduce", "sum", "x*y", &dot, &err)) {
        printf("FAIL setup: %s\n", err.msg);
        return 1;
    }
    printf("device: %s; median of %d runs of %d launches (CUDA graph)\n", wpb_device(), RUNS, REPEAT);
    printf("%-8s %12s %16s %8s\n", "n (f32)", "sum GB/s", "map x*x GB/s", "ratio");
    rc = 0;
    for (int l = 24; l <= max_log2 && rc == 0; l++) {
        uint64_t n = 1ull << l;
        wp_buf *x = generated(app, n, 1, &err);
        double ts = x ? time_us(app, &sum, x, NULL, n, &err) : -1;
        double tm = ts > 0 ? time_us(app, &sq, x, NULL, n, &err) : -1;
        if (tm <= 0) {
            printf("2^%d: %s\n", l, err.msg);
            rc = 1;
        } else {
            printf("2^%-6d %12.0f %16.0f %8.3f\n", l, n * 4 / ts / 1e3, n * 4 / tm / 1e3, ts / tm);
        }
        wp_buf_free(x);
    }
    wp_buf *a = generated(app, DOT_N, 2, &err), *b = a ? generated(app, DOT_N, 3, &err) : NULL;
    double td = b ? time_us(app, &dot, a, b, DOT_N, &err) : -1;
    if (td > 0)
        printf("dot 2^28 f32: %.1f us, %.3f TB/s read (two arrays, %llu bytes)\n", td, DOT_N * 8 / td / 1e6,
               (unsigned long long)(DOT_N * 8));
    else
        printf("dot 2^28: %s\n", err.msg), rc = 1;
    wp_buf_free(a);
    wp_buf_free(b);
    wp_spec_free(&sum);
    wp_spec_free(&sq);
    wp_spec_free(&dot);
    wpb_close();
    return rc;
}
