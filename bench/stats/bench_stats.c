/* bench_stats.c — device_reduce's statistics and norms (mean, var, std, norm2, count_nonzero,
 * and norm1, norminf) against device_reduce's own sum, f32 resident on the GPU, n = 2^24, 2^26, 2^28,
 * 2^30 (--max-log2 N lowers the top). Each op runs through the engine (server/engine/reduce.c, its
 * kernels from templates/ by NVRTC) as R launches back to back, timed together (kernel_us per launch);
 * the median of TRIALS such runs is kept. Prints GB/s (bytes read / time) and the ratio to sum's at the
 * same n, the goal being >= 0.9. Says SKIPPED without a GPU.
 *   bench_stats [--max-log2 N] [--min-log2 N] [--trials T] [--ops mean,var,...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/lib/reduce_entry.h"
#include "engine/app.h"
#include "engine/reduce.h"
#include "kernels/stats.h"

#define TRIALS 7

static wp_app *app; /* the engine of bench/lib/reduce_entry.c */

static int spec_for(const char *op, wp_spec *s, wp_err *err) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "family", "device_reduce");
    cJSON_AddStringToObject(o, "type", "f32");
    cJSON_AddStringToObject(o, "op", op);
    int rc = wp_spec_from_json(o, app->arch, s, err);
    cJSON_Delete(o);
    return rc;
}

static int fill(wp_buf *buf, uint64_t n, wp_err *err) {
    wp_spec s = {.family = wp_family_find("generate"), .type = WP_F32, .width = 32, .mask = 0xffffffffu};
    snprintf(s.arch, sizeof s.arch, "%s", app->arch);
    if (wp_spec_validate(&s, err)) return -1;
    wp_reduce_job job = {.spec = &s, .n = n, .gen_kind = WP_GEN_RANDOM, .seed = 21, .out = buf};
    wp_reduce_result r;
    int rc = wp_reduce_run(app, app->cuda, &job, &r, err);
    wp_reduce_result_free(&r);
    return rc;
}

/* Whether name is an item of the comma list. */
static int listed(const char *list, const char *name) {
    const size_t len = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, len) && (p[len] == ',' || p[len] == 0)) return 1;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median microseconds per launch of op over n elements, or -1 (the error printed). */
static double time_op(const char *op, wp_buf *in, uint64_t n, int trials, double *value) {
    wp_spec s;
    wp_err err = {0};
    if (spec_for(op, &s, &err)) {
        printf("%s: %s\n", op, err.msg);
        return -1;
    }
    const int repeat = n >= (1ull << 28) ? 10 : 40;
    double us[32];
    int got = 0;
    for (int t = -1; t < trials && t < 32; t++) { /* t = -1: the compile and a warm-up */
        wp_reduce_job job = {.spec = &s, .in = in, .n = n, .repeat = t < 0 ? 1 : repeat};
        wp_reduce_result r = {0};
        if (wp_reduce_run(app, app->cuda, &job, &r, &err)) {
            printf("%s: %s\n", op, err.msg);
            wp_spec_free(&s);
            return -1;
        }
        if (t < 0 && value) /* the answer of one launch (repeats would add twice into nothing: all recompute) */
            *value = s.data.stat ? wp_value_to_double(wp_stat_value_type(s.data.stat, WP_F32),
                                                      wp_stat_finish(s.data.stat, WP_F32, r.stat_acc, 0))
                                 : wp_value_to_double(WP_F32, r.value);
        if (t >= 0) us[got++] = r.kernel_us;
        wp_reduce_result_free(&r);
    }
    wp_spec_free(&s);
    qsort(us, (size_t)got, sizeof us[0], cmp_double);
    return us[got / 2];
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int max_log2 = 30, min_log2 = 24, trials = TRIALS;
    const char *only = NULL; /* --ops: a comma list of the ops to time (sum always) */
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--max-log2")) max_log2 = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--min-log2")) min_log2 = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--trials")) trials = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--ops")) only = argv[i + 1];
    }
    int rc;
    if (!(app = wpb_start(&rc))) return rc;
    wp_err err = {0};
    printf("device: %s; f32 resident, median of %d runs of back-to-back launches\n", wpb_device(), trials);
    static const char *const ops[] = {"mean", "var", "std", "norm2", "count_nonzero", "norm1", "norminf"};
    printf("%-14s %6s %10s %9s %7s %s\n", "op", "n", "us", "GB/s", "x sum", "value");
    int below = 0;
    for (int lg = min_log2; lg <= max_log2; lg += 2) {
        const uint64_t n = 1ull << lg;
        wp_buf *in = wp_buf_alloc(app->cuda, (size_t)n * 4, &err);
        if (!in || fill(in, n, &err)) {
            printf("2^%d: %s\n", lg, err.msg);
            wp_buf_free(in);
            break;
        }
        double v, sum_us = time_op("sum", in, n, trials, &v);
        if (sum_us > 0)
            printf("%-14s   2^%-2d %10.1f %9.1f %7.2f %.9g\n", "sum", lg, sum_us, n * 4 / sum_us / 1e3, 1.0, v);
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
            if (only && !listed(only, ops[k])) continue;
            double us = time_op(ops[k], in, n, trials, &v);
            if (us <= 0 || sum_us <= 0) continue;
            const double ratio = sum_us / us;
            const bool goal = k < 5; /* the five with a target */
            if (goal && ratio < 0.9) below++;
            printf("%-14s   2^%-2d %10.1f %9.1f %7.2f %.9g%s\n", ops[k], lg, us, n * 4 / us / 1e3, ratio, v,
                   goal && ratio < 0.9 ? "  (below 0.9)" : "");
        }
        wp_buf_free(in);
    }
    printf("%d of the goal's ops below 0.9x sum\n", below);
    wpb_close();
    return 0;
}
