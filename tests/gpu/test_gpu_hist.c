/* test_gpu_hist.c — the histogram family on the GPU against the emulator and a plain search of numpy's
 * edges (kernels/hist.c), count for count.
 *
 * For every type × range × bins (1 .. 2^20: strategy smem up to 12288 bins, atomic past it, and atomic
 * forced on small bin counts too) × the fast binning and a forced edge search, the engine
 * (server/engine/reduce.c) runs the kernel on cuda and the emulator on emu over the same adversarial
 * values (tests/unit/hist_values.h: every edge and its neighbours one raw bit step away, -0.0, NaN,
 * +-inf, denormals, extremes) plus random ones, at sizes that take the vector loop, its tail and the
 * element loop; and three large inputs (2^24 + 3 values; --quick: 2^22 + 3). Every count must
 * be the emulator's and the reference's; the counts against numpy itself are the API cases' and
 * tests/api/gen/make_hist_cases.py --live's (bench/gpu/hist.sh runs it on a cuda daemon).
 * Without a CUDA device it says SKIPPED and passes; --dry-run compiles each kernel and checks emu only.
 *   test_gpu_hist [--dry-run] [--quick] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/hist_values.h"
#include "engine/app.h"
#include "engine/reduce.h"
#include "gpu_harness.h"

static int passed, failed;

static void fail(const char *what, const wp_hist *h, const char *msg) {
    if (failed++ < 20)
        printf("FAIL %s: %s [%.17g, %.17g] %llu bins (%s): %s\n", what, wp_type_name(h->type), h->lo, h->hi,
               (unsigned long long)h->bins, h->mode == WP_HIST_FAST ? "fast" : "search", msg);
}

/* Runs the histogram of n packed values (host) on b; counts (bins) back on the host. */
static int run_on(wp_app *app, wp_backend *b, const wp_spec *s, const wp_hist *h, int force_search, const void *host,
                  uint64_t n, bool compile, uint64_t *counts, wp_err *err) {
    const size_t esize = wp_type_size(h->type), bytes = (size_t)n * esize + 16;
    wp_buf *in = wp_buf_alloc(b, bytes, err), *edges = wp_buf_alloc(b, (size_t)(h->bins + 1) * sizeof(double), err);
    double *e = malloc((size_t)(h->bins + 1) * sizeof *e);
    int rc = in && edges && e ? 0 : -1;
    for (uint64_t i = 0; rc == 0 && i <= h->bins; i++) e[i] = wp_hist_edge(h, i);
    if (rc == 0) rc = wp_buf_write(in, 0, host, (size_t)n * esize, err);
    if (rc == 0) rc = wp_buf_write(edges, 0, e, (size_t)(h->bins + 1) * sizeof *e, err);
    wp_reduce_job job = {.spec = s, .in = in, .n = n, .groups = h->bins, .offsets = edges, .compile_on_emu = compile};
    wp_hist_weights(h, job.weights);
    if (force_search) job.weights[WP_HIST_W_MODE] = WP_HIST_SEARCH;
    job.has_weights = true;
    wp_reduce_result r = {0};
    if (rc == 0) rc = wp_reduce_run(app, b, &job, &r, err);
    if (rc == 0) rc = wp_buf_read(r.out, 0, counts, (size_t)h->bins * sizeof *counts, err);
    wp_reduce_result_free(&r);
    wp_buf_free(in);
    wp_buf_free(edges);
    free(e);
    return rc;
}

static void one(wp_app *app, wp_type t, double lo, double hi, uint64_t bins, int strategy, uint64_t n_random,
                bool dry) {
    wp_hist h;
    wp_err err = {0};
    if (wp_hist_setup(t, bins, lo, hi, &h, &err)) return; /* edges repeat in this type: a 400 */
    wp_spec s = {.family = wp_family_find("histogram"), .type = t, .width = 32, .mask = 0xffffffffu};
    s.data.strategy = strategy;
    snprintf(s.arch, sizeof s.arch, "%s", app->arch);
    if (wp_spec_validate(&s, &err)) return fail("spec", &h, err.msg);
    const uint64_t cap = 2 * (bins < 256 ? bins + 1 : 257) * 3 + 64 + n_random;
    uint64_t *vals = malloc(cap * 8), *ref = calloc(bins, 8), *c_emu = calloc(bins, 8), *c_gpu = calloc(bins, 8);
    void *packed = malloc(cap * 8);
    if (!vals || !ref || !c_emu || !c_gpu || !packed) goto out;
    const uint64_t n = hv_fill(&h, vals, cap, n_random, bins * 31 + (uint64_t)t);
    hv_pack(t, vals, n, packed);
    for (uint64_t i = 0; i < n; i++) {
        const int64_t b = wp_hist_bin_ref(&h, vals[i]);
        if (b >= 0) ref[b]++;
    }
    for (int force = 0; force < 2; force++) {
        if (force && h.mode == WP_HIST_SEARCH) break;
        if (run_on(app, app->emu, &s, &h, force, packed, n, dry, c_emu, &err)) {
            fail("emu run", &h, err.msg);
            continue;
        }
        bool ok = !memcmp(c_emu, ref, bins * 8);
        if (!ok) fail(force ? "emu (search) vs reference" : "emu vs reference", &h, "counts differ");
        if (!dry) {
            if (run_on(app, app->cuda, &s, &h, force, packed, n, false, c_gpu, &err)) {
                fail("cuda run", &h, err.msg);
                continue;
            }
            if (memcmp(c_gpu, c_emu, bins * 8))
                ok = false, fail(force ? "cuda (search) vs emu" : "cuda vs emu", &h, "counts differ");
        }
        ok ? passed++ : 0;
    }
out:
    free(vals);
    free(ref);
    free(c_emu);
    free(c_gpu);
    free(packed);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    gpu_args args;
    if (!gpu_args_parse(argc, argv, GPU_ARG_DRY_RUN | GPU_ARG_QUICK, &args)) return 2;
    const bool dry = args.dry_run, quick = args.quick;
    static wp_app app;
    int rc;
    if (!gpu_app_open(&app, "gpu_hist", dry, &rc)) return rc;
    static const double ranges[][2] = {{0, 1},    {-1, 1},       {0.1, 0.7},   {-3.3, 7.7}, {0, 1e-38},
                                       {1, 1.01}, {-1e30, 1e30}, {0.3, 100.9}, {7, 13},     {-65000, 65000}};
    static const uint64_t bins_list[] = {1, 3, 7, 256, 1000, 4096, 12288, 12289, 65536, 1u << 20};
    const uint64_t n_random = quick ? 5000 : 70001; /* vectors, a tail, and values past 2^16 per block */
    for (int t = 0; t < WP_TYPE_COUNT; t++)
        for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++)
            for (size_t b = 0; b < sizeof bins_list / sizeof bins_list[0]; b++) {
                if (quick && (r % 3 || b % 2)) continue;
                double lo = ranges[r][0], hi = ranges[r][1];
                if (wp_type_is_int((wp_type)t)) lo = floor(lo * 1000), hi = ceil(hi * 1000) + 17;
                if (!wp_type_is_signed((wp_type)t) && wp_type_is_int((wp_type)t) && lo < 0) lo = 0;
                const uint64_t bins = bins_list[b];
                if (bins <= WP_HIST_SMEM_BINS) one(&app, (wp_type)t, lo, hi, bins, WP_STRAT_SMEM, n_random, dry);
                if (bins <= 4096 || bins > WP_HIST_SMEM_BINS)
                    one(&app, (wp_type)t, lo, hi, bins, WP_STRAT_ATOMIC, n_random, dry);
            }
    const uint64_t large = (quick ? 1u << 22 : 1u << 24) + 3; /* many blocks, each many vectors */
    one(&app, WP_F32, -3.3, 7.7, 256, WP_STRAT_SMEM, large, dry);
    one(&app, WP_F32, 0, 1, 65536, WP_STRAT_ATOMIC, large, dry);
    one(&app, WP_F16, -2, 3, 1000, WP_STRAT_SMEM, large, dry);
    printf("gpu_hist: %d passed, %d failed\n", passed, failed);
    gpu_app_close(&app);
    return failed ? 1 : 0;
}
