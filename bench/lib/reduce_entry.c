/* reduce_entry.c — the benchmarks' way into the engine (reduce_entry.h): one cuda backend, the NVRTC
 * compiler, a memory-only cache and a reduce engine, kept in one struct for the program. */
#include "reduce_entry.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/app.h"
#include "engine/bykey.h"
#include "engine/reduce.h"
#include "kernels/hist.h"

static wp_app bench_app; /* the benchmark program's one engine (a program, not the daemon) */
static char device_name[160];
static bool use_graph;                   /* wpb_set_graph */
static unsigned long long overlap_below; /* WARPD_PDL: 0 never (1 here), BYTES: under that size, unset: always (0) */
static int env_block;                    /* WARPD_BLOCK: the block of wpb_run (unset: the family's default) */

int wpb_open(char *why, unsigned long why_len) {
    wp_err err = {0};
    wp_app *app = &bench_app;
    const char *pdl = getenv("WARPD_PDL");
    overlap_below = pdl ? strtoull(pdl, NULL, 10) : 0;
    if (pdl && overlap_below == 0) overlap_below = 1; /* never */
    const char *blk = getenv("WARPD_BLOCK");
    env_block = blk ? atoi(blk) : 0;
    app->cuda = wp_backend_cuda_open(0, &err);
    if (!app->cuda) {
        snprintf(why, why_len, "%s", err.msg);
        return -1;
    }
    wp_device_info di;
    wp_backend_info(app->cuda, &di);
    snprintf(app->arch, sizeof app->arch, "sm_%d", di.sm);
    snprintf(device_name, sizeof device_name, "%s (sm_%d, %d SMs)", di.name, di.sm, di.sms);
    app->emu = wp_backend_emu_open();
    app->preferred = app->cuda;
    app->max_elements = 1ull << 40;
    app->reduce = wp_reduce_engine_open();
    app->jit = wp_jit_open(WP_DEFAULT_TEMPLATES, WP_DEFAULT_CUDA_HOME "/include", &err);
    if (app->jit) app->cache = wp_cache_open(NULL, 256u << 20, &err);
    if (!app->jit || !app->cache || !app->reduce) {
        snprintf(why, why_len, "%s", err.msg);
        return -2;
    }
    return 0;
}

void wpb_close(void) {
    wp_app *app = &bench_app;
    wp_reduce_engine_close(app->reduce);
    wp_cache_close(app->cache);
    wp_jit_close(app->jit);
    wp_backend_close(app->cuda);
    wp_backend_close(app->emu);
    memset(app, 0, sizeof *app);
}

const char *wpb_device(void) { return device_name; }
wp_app *wpb_app(void) { return &bench_app; }

wp_app *wpb_start(int *exit_code) {
    char why[400];
    int rc = wpb_open(why, sizeof why);
    if (rc == 0) return &bench_app;
    printf(rc == -1 ? "SKIPPED: no CUDA device (%s)\n" : "FAIL setup: %s\n", why);
    wpb_close();
    *exit_code = rc == -1 ? 0 : 1;
    return NULL;
}
void wpb_set_graph(int on) { use_graph = on != 0; }
int wpb_overlap(void) { return overlap_below != 1; }

void *wpb_alloc(unsigned long long bytes, unsigned long long *dev) {
    wp_buf *b = wp_buf_alloc(bench_app.cuda, (size_t)bytes, NULL);
    if (b) *dev = wp_buf_addr(b);
    return b;
}

void wpb_free(void *buf) { wp_buf_free(buf); }

static int spec_for(const char *family, const char *type, const char *op, int block, wp_spec *s, wp_err *err) {
    memset(s, 0, sizeof *s);
    s->family = wp_family_find(family);
    int t = wp_type_parse(type);
    if (!s->family || t < 0) return WP_FAIL(err, 400, "bad_spec", "", "unknown family %s or type %s", family, type);
    s->type = (wp_type)t;
    s->width = 32;
    s->mask = 0xffffffffu;
    s->data.block = block;
    snprintf(s->arch, sizeof s->arch, "%s", bench_app.arch);
    if ((s->family->flags & WP_F_OP) && wp_op_parse(op, s->type, "op", &s->op, err)) return -1;
    return wp_spec_validate(s, err);
}

int wpb_generate(void *buf, const char *type, unsigned long long n, unsigned long long seed) {
    wp_spec s;
    wp_err err = {0};
    if (spec_for("generate", type, NULL, 0, &s, &err)) return -1;
    wp_reduce_job job = {.spec = &s, .n = n, .gen_kind = WP_GEN_RANDOM, .seed = seed, .out = buf};
    wp_reduce_result r;
    int rc = wp_reduce_run(&bench_app, bench_app.cuda, &job, &r, &err);
    if (rc) fprintf(stderr, "generate: %s\n", err.msg);
    wp_reduce_result_free(&r);
    return rc;
}

int wpb_run(const char *family, const char *type, const char *op, void *in, unsigned long long n, void *out, int repeat,
            double *kernel_us, unsigned long long *value, char *why, unsigned long why_len) {
    return wpb_run_block(family, type, op, env_block, in, n, out, repeat, kernel_us, value, why, why_len);
}

int wpb_run_block(const char *family, const char *type, const char *op, int block, void *in, unsigned long long n,
                  void *out, int repeat, double *kernel_us, unsigned long long *value, char *why,
                  unsigned long why_len) {
    wp_spec s;
    wp_err err = {0};
    int rc = spec_for(family, type, op, block, &s, &err);
    wp_reduce_job job = {
        .spec = &s, .in = in, .n = n, .out = out, .repeat = repeat, .graph = use_graph, .overlap_below = overlap_below};
    wp_reduce_result r = {0};
    if (rc == 0) rc = wp_reduce_run(&bench_app, bench_app.cuda, &job, &r, &err);
    if (rc == 0) {
        *kernel_us = r.kernel_us;
        if (value) *value = r.value;
    } else {
        snprintf(why, why_len, "%s", err.msg);
    }
    wp_reduce_result_free(&r);
    wp_spec_free(&s);
    return rc;
}

int wpb_run_bykey(const char *type, const char *key_type, const char *op, int block, void *keys, void *in,
                  unsigned long long n, void *out_keys, void *out_values, int repeat, double *kernel_us,
                  unsigned long long *runs, char *why, unsigned long why_len) {
    wp_spec s;
    wp_err err = {0};
    const int kt = wp_type_parse(key_type);
    int rc = spec_for("reduce_by_key", type, op, block ? block : env_block, &s, &err); /* keys i32 */
    if (rc == 0) {
        s.data.keys = kt < 0 ? WP_F32 : (wp_type)kt; /* an unknown name: refused as not an integer type */
        rc = wp_spec_validate(&s, &err);
    }
    wp_bykey_job job = {
        .spec = &s, .keys = keys, .in = in, .n = n, .out_keys = out_keys, .out_values = out_values, .repeat = repeat};
    wp_bykey_result r = {0};
    if (rc == 0) rc = wp_bykey_run(&bench_app, bench_app.cuda, &job, &r, &err);
    if (rc == 0) {
        *kernel_us = r.kernel_us;
        *runs = r.runs;
    } else {
        snprintf(why, why_len, "%s", err.msg);
    }
    wp_spec_free(&s);
    return rc;
}

int wpb_histogram(const char *type, unsigned bins, double lo, double hi, const char *strategy, void *in,
                  unsigned long long n, int repeat, double *kernel_us, unsigned long long *counts, const char **binning,
                  char *why, unsigned long why_len) {
    wp_spec s;
    wp_err err = {0};
    wp_hist h;
    wp_buf *edges = NULL;
    wp_reduce_result r = {0};
    int rc = spec_for("histogram", type, NULL, 0, &s, &err);
    if (rc == 0) rc = wp_hist_setup(s.type, bins, lo, hi, &h, &err);
    if (rc == 0) {
        s.data.strategy = strategy                    ? wp_strategy_parse(strategy)
                          : bins <= WP_HIST_SMEM_BINS ? WP_STRAT_SMEM
                                                      : WP_STRAT_ATOMIC;
        rc = wp_spec_validate(&s, &err);
    }
    double *e = rc == 0 ? malloc((size_t)(bins + 1) * sizeof *e) : NULL;
    if (rc == 0 && !e) rc = WP_FAIL(&err, 500, "out_of_memory", "", "out of memory");
    for (unsigned i = 0; rc == 0 && i <= bins; i++) e[i] = wp_hist_edge(&h, i);
    if (rc == 0 && !(edges = wp_buf_alloc(bench_app.cuda, (size_t)(bins + 1) * sizeof *e, &err))) rc = -1;
    if (rc == 0) rc = wp_buf_write(edges, 0, e, (size_t)(bins + 1) * sizeof *e, &err);
    wp_reduce_job job = {.spec = &s,
                         .in = in,
                         .n = n,
                         .groups = bins,
                         .offsets = edges,
                         .has_weights = true,
                         .repeat = repeat,
                         .overlap_below = overlap_below};
    if (rc == 0) {
        wp_hist_weights(&h, job.weights);
        rc = wp_reduce_run(&bench_app, bench_app.cuda, &job, &r, &err);
    }
    if (rc == 0 && counts && repeat <= 1) rc = wp_buf_read(r.out, 0, counts, (size_t)bins * sizeof *counts, &err);
    if (rc == 0) {
        *kernel_us = r.kernel_us;
        if (binning) *binning = h.mode == WP_HIST_FAST ? "fast" : "search";
    } else {
        snprintf(why, why_len, "%s", err.msg);
    }
    wp_reduce_result_free(&r);
    wp_buf_free(edges);
    free(e);
    wp_spec_free(&s);
    return rc;
}
