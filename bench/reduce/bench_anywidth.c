/* bench_anywidth.c — warp_reduce and warp_scan at widths 7, 8, 31 and 32 (CUB's logical warps
 * at any width; the number: width-7 warp_reduce within 10 % of width 8 per element), f32 sum over
 * 2^24 and 2^28 resident elements, through the engine on the cuda backend (device 0), default strategy
 * and block. Each point: one untimed call (compile, warm-up), then ROUNDS rounds of REPEAT launches back
 * to back (the engine's repeat: kernel time per launch from CUDA events), the widths alternating
 * within each round; the median round is kept. Prints time per launch, picoseconds per element, GB/s
 * (bytes read + written) and each width's time per element against its power-of-two neighbour (7 : 8,
 * 31 : 32). Without a GPU it says SKIPPED.
 *   bench_anywidth [--max-log2 N] [--rounds R]   (defaults 28, 7) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/lib/reduce_entry.h"
#include "engine/app.h"
#include "engine/reduce.h"

#define MAX_ROUNDS 15
static const int widths[] = {7, 8, 31, 32};
#define N_WIDTHS 4

static int spec_for(wp_app *app, const char *family, int width, wp_spec *s, wp_err *err) {
    memset(s, 0, sizeof *s);
    s->family = wp_family_find(family);
    s->type = WP_F32;
    s->width = width;
    s->mask = 0xffffffffu;
    snprintf(s->arch, sizeof s->arch, "%s", app->arch);
    if (!s->family) return WP_FAIL(err, 400, "bad_spec", "family", "unknown family %s", family);
    if (s->family->flags & WP_F_OP && wp_op_parse("sum", s->type, "op", &s->op, err)) return -1;
    return wp_spec_validate(s, err);
}

/* Runs the spec over n elements of in, `repeat` launches back to back; the kernel time per launch. */
static double run(wp_app *app, const wp_spec *s, wp_buf *in, uint64_t n, wp_buf *out, int repeat) {
    wp_err err = {0};
    wp_reduce_job job = {.spec = s, .in = in, .n = n, .out = out, .repeat = repeat, .gen_kind = WP_GEN_RANDOM};
    wp_reduce_result r = {0};
    double us = -1;
    if (wp_reduce_run(app, app->cuda, &job, &r, &err) == 0)
        us = r.kernel_us;
    else
        fprintf(stderr, "%s w%d n=%llu: %s\n", s->family->name, s->width, (unsigned long long)n, err.msg);
    wp_reduce_result_free(&r);
    return us;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One family at one n: every width, ROUNDS rounds, medians into us[]. */
static void bench_point(wp_app *app, const char *family, int log2n, int rounds, wp_buf *in, wp_buf *out,
                        double us[N_WIDTHS]) {
    const uint64_t n = 1ull << log2n;
    const int repeat = log2n >= 28 ? 10 : 50;
    wp_spec specs[N_WIDTHS];
    double t[N_WIDTHS][MAX_ROUNDS];
    wp_err err = {0};
    for (int w = 0; w < N_WIDTHS; w++) {
        us[w] = -1;
        if (spec_for(app, family, widths[w], &specs[w], &err)) {
            fprintf(stderr, "%s w%d: %s\n", family, widths[w], err.msg);
            return;
        }
        run(app, &specs[w], in, n, out, 1); /* compile, warm-up */
    }
    for (int r = 0; r < rounds; r++)
        for (int w = 0; w < N_WIDTHS; w++) t[w][r] = run(app, &specs[w], in, n, out, repeat);
    for (int w = 0; w < N_WIDTHS; w++) {
        qsort(t[w], (size_t)rounds, sizeof t[w][0], cmp_double);
        us[w] = t[w][rounds / 2];
        wp_spec_free(&specs[w]);
    }
}

static void print_point(const char *family, int log2n, const double us[N_WIDTHS]) {
    const double n = (double)(1ull << log2n);
    for (int w = 0; w < N_WIDTHS; w++) {
        const bool scan = strstr(family, "scan") != NULL;
        const double out_elems = scan ? n : (n + widths[w] - 1) / widths[w];
        const double bytes = 4.0 * (n + out_elems);
        const double ps = us[w] * 1e6 / n;
        printf("%-11s 2^%-3d w%-3d %10.1f us %8.2f ps/elem %8.0f GB/s", family, log2n, widths[w], us[w], ps,
               us[w] > 0 ? bytes / (us[w] * 1e3) : 0.0);
        if (w % 2 == 0 && us[w + 1] > 0) /* 7 against 8, 31 against 32: time per element */
            printf("   w%d/w%d per element %.3f", widths[w], widths[w + 1], us[w] / us[w + 1]);
        printf("\n");
    }
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int max_log2 = 28, rounds = 7;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-log2") && i + 1 < argc)
            max_log2 = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--max-log2 N] [--rounds R]\n", argv[0]);
            return 2;
        }
    }
    rounds = rounds < 1 ? 1 : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
    int rc;
    wp_app *app = wpb_start(&rc);
    if (!app) return rc;
    wp_err err = {0};
    const uint64_t n_max = 1ull << max_log2;
    wp_buf *in = wp_buf_alloc(app->cuda, n_max * 4, &err);
    wp_buf *out = in ? wp_buf_alloc(app->cuda, n_max * 4, &err) : NULL;
    wp_spec gen;
    rc = 1;
    if (!out || spec_for(app, "generate", 32, &gen, &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        goto done;
    }
    wp_reduce_job g = {.spec = &gen, .n = n_max, .gen_kind = WP_GEN_RANDOM, .seed = 1, .out = in};
    wp_reduce_result gr = {0};
    if (wp_reduce_run(app, app->cuda, &g, &gr, &err)) {
        fprintf(stderr, "generate: %s\n", err.msg);
        goto done;
    }
    wp_reduce_result_free(&gr);
    printf("device: %s; f32 sum, default strategy and block, median of %d rounds\n", wpb_device(), rounds);
    static const char *const fams[] = {"warp_reduce", "warp_scan"};
    for (int f = 0; f < 2; f++)
        for (int log2n = 24; log2n <= max_log2; log2n += 4) {
            double us[N_WIDTHS];
            bench_point(app, fams[f], log2n, rounds, in, out, us);
            print_point(fams[f], log2n, us);
        }
    rc = 0;
done:
    wp_buf_free(out);
    wp_buf_free(in);
    wpb_close();
    return rc;
}
