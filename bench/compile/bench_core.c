/* bench_core.c — what the core path costs, on whatever backend is here (cuda, else emu):
 *  (a) memory-cache hit: parsed spec -> function ready (wp_jit_key + wp_cache_get + wp_kernel_function);
 *  (b) disk hit in a fresh cache object (cold memory): get + load, over distinct keys;
 *  (c) cold compile through wp_jit_compile vs bare NVRTC calls on exactly the same source and options;
 *  (d) cuda only: one warp launch round trip (upload + launch + download).
 * Prints numbers, never pass/fail.
 *
 *   bench_core [--hits N] [--disk-keys N] [--compiles N] [--launches N] */
#include <dirent.h>
#include <ftw.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "compile/cache.h"
#include "compile/jit.h"
#include "kernels/spec.h"

#define CACHE_BYTES (256u << 20)
#define POPULATE_THREADS 8
#define MAX_HEADERS 64
#define MAX_OPTIONS 16

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
/* Sorts v in place; q in 0..1. */
static double quantile(double *v, int n, double q) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int i = (int)(q * (n - 1) + 0.5);
    return v[i];
}

static void row(const char *what, double median, double p99, const char *unit, int n) {
    if (p99 >= 0)
        printf("%-46s %10.3f %10.3f  %-3s %7d\n", what, median, p99, unit, n);
    else
        printf("%-46s %10.3f %10s  %-3s %7d\n", what, median, "-", unit, n);
}

/* ---- specs ---- */

static bool spec_make(wp_spec *s, const wp_family *f, wp_type t, int width, uint32_t mask, const char *arch) {
    wp_err err = {0};
    memset(s, 0, sizeof *s);
    s->family = f;
    s->type = t;
    s->width = width;
    s->mask = (f->flags & WP_F_NO_MASK) ? 0xffffffffu : mask;
    snprintf(s->arch, sizeof s->arch, "%s", arch);
    if ((f->flags & WP_F_OP) && wp_op_parse("sum", t, "op", &s->op, &err)) return false;
    if (wp_spec_validate(s, &err)) {
        wp_spec_free(s);
        return false;
    }
    return true;
}

/* n distinct valid specs, cycling over families, types and widths with varying masks. */
static int specs_make(wp_spec *out, int n, const char *arch, int sm) {
    int n_families, count = 0;
    const wp_family *const *families = wp_family_list(&n_families);
    for (uint32_t round = 0; count < n && round < 64; round++)
        for (int w = 0; w < 6 && count < n; w++)
            for (int t = 0; t < WP_TYPE_COUNT && count < n; t++)
                for (int fi = 0; fi < n_families && count < n; fi++) {
                    const wp_family *f = families[fi];
                    if (f->min_sm > sm || !(f->widths & (1u << w)) || !(f->types & WP_TBIT(t))) continue;
                    if (!f->template_file) continue;    /* emulator only: nothing to compile */
                    if (f->flags & WP_F_DATA) continue; /* data-parallel: bench_reduce measures those */
                    if ((f->flags & WP_F_NO_MASK) && round) continue;
                    uint32_t mask = round ? 0xffffffffu ^ (round * 0x9e3779b9u) : 0xffffffffu;
                    if (spec_make(&out[count], f, (wp_type)t, 1 << w, mask, arch)) count++;
                }
    return count;
}

typedef struct {
    wp_jit *jit;
    const wp_spec *spec;
} build_ctx;
static int build(void *p, wp_artifact *out, wp_err *err) {
    build_ctx *b = p;
    return wp_jit_compile(b->jit, b->spec, out, NULL, err);
}
static int build_refused(void *p, wp_artifact *out, wp_err *err) {
    (void)p, (void)out;
    return WP_FAIL(err, 500, "bench", "", "a disk hit was expected, the cache asked for a build");
}

/* ---- (b) populating a disk cache with several threads ---- */

typedef struct {
    wp_jit *jit;
    wp_cache *cache;
    wp_spec *specs;
    uint8_t (*keys)[32];
    int n;
    atomic_int next, failures;
} populate_ctx;

static void *populate_worker(void *p) {
    populate_ctx *c = p;
    for (int i; (i = atomic_fetch_add(&c->next, 1)) < c->n;) {
        wp_err err = {0};
        build_ctx b = {c->jit, &c->specs[i]};
        wp_source src;
        wp_kernel *k = wp_cache_get(c->cache, c->keys[i], build, &b, &src, &err);
        if (!k) {
            if (atomic_fetch_add(&c->failures, 1) == 0) fprintf(stderr, "populate: %s\n", err.msg);
            continue;
        }
        wp_kernel_release(c->cache, k);
    }
    return NULL;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* ---- (c) bare NVRTC: the same program jit.c builds, without warpd around it ---- */

typedef struct {
    char *names[MAX_HEADERS], *texts[MAX_HEADERS];
    int n;
    char dir[1024];
} header_set;

static int read_headers(header_set *h, const char *dir) {
    snprintf(h->dir, sizeof h->dir, "%s", dir);
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *de;
    while ((de = readdir(d)) && h->n < MAX_HEADERS - 1) {
        size_t len = strlen(de->d_name);
        if (len < 4 || strcmp(de->d_name + len - 4, ".cuh")) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if ((h->texts[h->n] = wp_read_file(path, NULL))) h->names[h->n++] = strdup(de->d_name);
    }
    closedir(d);
    char path[2048];
    snprintf(path, sizeof path, "%s/../kernels/wp_abi.h", dir);
    if ((h->texts[h->n] = wp_read_file(path, NULL))) h->names[h->n++] = strdup("wp_abi.h");
    return 0;
}

static void free_headers(header_set *h) {
    for (int i = 0; i < h->n; i++) {
        free(h->names[i]);
        free(h->texts[i]);
    }
}

/* Compiles spec s with plain NVRTC calls; returns ms, or -1. cubin/len get the result (malloc'd). */
static double bare_compile(const header_set *h, const wp_jit *j, const wp_spec *s, char **cubin, size_t *len) {
    uint64_t t0 = wp_now_ns();
    char name_expr[512], prelude[4096], path[2048];
    if (wp_spec_name_expr(s, name_expr, sizeof name_expr, prelude, sizeof prelude)) return -1;
    snprintf(path, sizeof path, "%s/%s", h->dir, s->family->template_file);
    char *tmpl = wp_read_file(path, NULL);
    if (!tmpl) return -1;
    size_t n = strlen(prelude) + strlen(tmpl) + 300;
    char *source = malloc(n);
    snprintf(source, n, "%s\n#line 1 \"%s\"\n%s", prelude, s->family->template_file, tmpl);
    free(tmpl);

    char opts_text[4400], arch[32];
    snprintf(opts_text, sizeof opts_text, "%s", wp_jit_options_text(j));
    snprintf(arch, sizeof arch, "-arch=%s", s->arch);
    const char *opts[MAX_OPTIONS];
    int n_opts = 0;
    opts[n_opts++] = arch;
    for (char *save = NULL, *tok = strtok_r(opts_text, " ", &save); tok && n_opts < MAX_OPTIONS - 1;
         tok = strtok_r(NULL, " ", &save))
        opts[n_opts++] = tok;
    if (s->type == WP_F16 || s->type == WP_BF16) opts[n_opts++] = "-DWP_NEED_FP16";

    nvrtcProgram prog;
    const char *lowered;
    double ms = -1;
    if (nvrtcCreateProgram(&prog, source, s->family->template_file, h->n, (const char *const *)h->texts,
                           (const char *const *)h->names) == NVRTC_SUCCESS) {
        if (nvrtcAddNameExpression(prog, name_expr) == NVRTC_SUCCESS &&
            nvrtcCompileProgram(prog, n_opts, opts) == NVRTC_SUCCESS &&
            nvrtcGetLoweredName(prog, name_expr, &lowered) == NVRTC_SUCCESS &&
            nvrtcGetCUBINSize(prog, len) == NVRTC_SUCCESS && (*cubin = malloc(*len)) &&
            nvrtcGetCUBIN(prog, *cubin) == NVRTC_SUCCESS)
            ms = wp_ms_since(t0);
        nvrtcDestroyProgram(&prog);
    }
    free(source);
    return ms;
}

int main(int argc, char **argv) {
    int hits = 100000, disk_keys = 200, compiles = 30, launches = 20000;
    for (int i = 1; i + 1 < argc; i += 2) {
        int v = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--hits"))
            hits = v;
        else if (!strcmp(argv[i], "--disk-keys"))
            disk_keys = v;
        else if (!strcmp(argv[i], "--compiles"))
            compiles = v;
        else if (!strcmp(argv[i], "--launches"))
            launches = v;
    }
    if (hits < 1) hits = 1;
    if (disk_keys < 1) disk_keys = 1;
    if (compiles < 1) compiles = 1;
    if (launches < 1) launches = 1;
    setvbuf(stdout, NULL, _IOLBF, 0);

    wp_err err = {0};
    wp_backend *cuda = wp_backend_cuda_open(0, &err);
    char cuda_reason[256];
    snprintf(cuda_reason, sizeof cuda_reason, "%s", cuda ? "" : err.msg);
    wp_backend *emu = wp_backend_emu_open();
    wp_backend *be = cuda ? cuda : emu;
    wp_device_info info;
    wp_backend_info(be, &info);
    int sm = cuda ? info.sm : 90;
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d", sm);
    wp_jit *jit = wp_jit_open(WP_DEFAULT_TEMPLATES, WP_DEFAULT_CUDA_HOME "/include", &err);
    if (!jit || !emu) {
        fprintf(stderr, "bench_core: %s\n", jit ? "no emu backend" : err.msg);
        return 1;
    }
    int major, minor;
    wp_jit_version(jit, &major, &minor);
    printf("bench_core: backend %s (%s%s%s), NVRTC %d.%d, target %s\n", wp_backend_name(be), info.name,
           cuda ? "" : "; cuda: ", cuda_reason, major, minor, arch);
    printf("%-46s %10s %10s  %-3s %7s\n", "measure", "median", "p99", "", "n");

    /* (a) memory hit */
    {
        wp_cache *cache = wp_cache_open(NULL, CACHE_BYTES, &err);
        wp_spec s;
        const wp_family *f = wp_family_find("warp_allreduce");
        if (!cache || !f || !spec_make(&s, f, WP_F32, 32, 0xffffffffu, arch)) {
            fprintf(stderr, "(a) setup failed: %s\n", err.msg);
            return 1;
        }
        double *us = malloc((size_t)hits * sizeof *us);
        build_ctx b = {jit, &s};
        int failures = 0;
        for (int i = -1; i < hits; i++) { /* i = -1: the compile and load, not counted */
            uint64_t t0 = wp_now_ns();
            uint8_t key[32];
            wp_source src;
            void *fn;
            wp_kernel *k = NULL;
            if (wp_jit_key(jit, &s, key, NULL, 0, &err) || !(k = wp_cache_get(cache, key, build, &b, &src, &err)) ||
                wp_kernel_function(k, be, wp_backend_load, wp_backend_unload, &fn, &err))
                failures++;
            double t = wp_us_since(t0);
            if (k) wp_kernel_release(cache, k);
            if (i >= 0) us[i] = t;
        }
        if (failures) fprintf(stderr, "(a) %d failures: %s\n", failures, err.msg);
        double p99 = quantile(us, hits, 0.99);
        row("memory hit: key + get + function", quantile(us, hits, 0.5), p99, "us", hits);
        free(us);
        wp_spec_free(&s);
        wp_cache_close(cache);
    }

    /* (b) disk hit in a fresh cache object */
    wp_spec *specs = calloc((size_t)(disk_keys > compiles ? disk_keys : compiles), sizeof *specs);
    int n_specs = specs_make(specs, disk_keys > compiles ? disk_keys : compiles, arch, sm);
    {
        char dir[] = "/tmp/warpd-bench-XXXXXX";
        uint8_t(*keys)[32] = calloc((size_t)n_specs, 32);
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 1;
        }
        int n = n_specs < disk_keys ? n_specs : disk_keys;
        for (int i = 0; i < n; i++) wp_jit_key(jit, &specs[i], keys[i], NULL, 0, &err);
        wp_cache *warm = wp_cache_open(dir, CACHE_BYTES, &err);
        populate_ctx pc = {.jit = jit, .cache = warm, .specs = specs, .keys = keys, .n = n};
        uint64_t t0 = wp_now_ns();
        pthread_t tids[POPULATE_THREADS];
        for (int i = 0; i < POPULATE_THREADS; i++) pthread_create(&tids[i], NULL, populate_worker, &pc);
        for (int i = 0; i < POPULATE_THREADS; i++) pthread_join(tids[i], NULL);
        double populate_s = wp_ms_since(t0) / 1000;
        wp_cache_close(warm);

        wp_cache *cold = wp_cache_open(dir, CACHE_BYTES, &err);
        double *get_ms = malloc((size_t)n * sizeof *get_ms), *all_ms = malloc((size_t)n * sizeof *all_ms);
        int misses = 0, ok = 0;
        for (int i = 0; i < n; i++) {
            wp_source src = WP_SRC_COMPILE;
            void *fn;
            t0 = wp_now_ns();
            wp_kernel *k = wp_cache_get(cold, keys[i], build_refused, NULL, &src, &err);
            double got = wp_ms_since(t0);
            if (!k || src != WP_SRC_DISK) {
                misses++;
                if (k) wp_kernel_release(cold, k);
                continue;
            }
            int rc = wp_kernel_function(k, be, wp_backend_load, wp_backend_unload, &fn, &err);
            double all = wp_ms_since(t0);
            wp_kernel_release(cold, k);
            if (rc) {
                misses++;
                continue;
            }
            get_ms[ok] = got;
            all_ms[ok++] = all;
        }
        wp_cache_close(cold);
        row("disk hit, fresh cache: get + load", quantile(all_ms, ok, 0.5), quantile(all_ms, ok, 0.99), "ms", ok);
        row("  of which get (read + verify)", quantile(get_ms, ok, 0.5), quantile(get_ms, ok, 0.99), "ms", ok);
        if (misses || pc.failures)
            printf("  (%d keys not served from disk, %d builds failed)\n", misses, (int)pc.failures);
        printf("  (populating %d keys with %d threads took %.1f s)\n", n, POPULATE_THREADS, populate_s);
        free(get_ms);
        free(all_ms);
        free(keys);
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }

    /* (c) cold compile: wp_jit_compile vs bare NVRTC, alternating */
    {
        header_set h = {0};
        read_headers(&h, WP_DEFAULT_TEMPLATES);
        int n = n_specs < compiles ? n_specs : compiles;
        double *jit_ms = malloc((size_t)n * sizeof *jit_ms), *bare_ms = malloc((size_t)n * sizeof *bare_ms);
        int ok = 0, same = 0;
        /* Pairs alternate which goes first, so neither gains from running second on the same input. */
        double *first_ms = malloc((size_t)n * sizeof *first_ms), *second_ms = malloc((size_t)n * sizeof *second_ms);
        for (int i = 0; i < n; i++) {
            wp_artifact a = {0};
            char *cubin = NULL;
            size_t len = 0;
            double jm = -1, bm = -1;
            for (int step = 0; step < 2; step++) {
                if ((step == 0) == (i % 2 == 0)) {
                    uint64_t t0 = wp_now_ns();
                    if (wp_jit_compile(jit, &specs[i], &a, NULL, &err) == 0)
                        jm = wp_ms_since(t0);
                    else
                        fprintf(stderr, "(c) %s\n", err.msg);
                } else {
                    bm = bare_compile(&h, jit, &specs[i], &cubin, &len);
                }
            }
            if (jm >= 0 && bm >= 0) {
                first_ms[ok] = i % 2 == 0 ? jm : bm;
                second_ms[ok] = i % 2 == 0 ? bm : jm;
                jit_ms[ok] = jm;
                bare_ms[ok++] = bm;
                same += len == a.cubin_len && memcmp(cubin, a.cubin, len) == 0;
            }
            free(cubin);
            wp_artifact_free(&a);
        }
        double first_median = quantile(first_ms, ok, 0.5), second_median = quantile(second_ms, ok, 0.5);
        free(first_ms);
        free(second_ms);
        double jm = quantile(jit_ms, ok, 0.5), bm = quantile(bare_ms, ok, 0.5);
        row("cold compile: wp_jit_compile", jm, quantile(jit_ms, ok, 0.99), "ms", ok);
        row("cold compile: bare NVRTC, same source/options", bm, quantile(bare_ms, ok, 0.99), "ms", ok);
        printf("  ratio jit / bare: %.3f; identical cubins: %d of %d\n", bm > 0 ? jm / bm : 0.0, same, ok);
        printf("  (first compile of each pair %.3f ms, second %.3f ms: the order effect)\n", first_median,
               second_median);
        free(jit_ms);
        free(bare_ms);
        free_headers(&h);
    }
    for (int i = 0; i < n_specs; i++) wp_spec_free(&specs[i]);
    free(specs);

    /* (d) one warp launch round trip on the GPU */
    if (cuda) {
        wp_cache *cache = wp_cache_open(NULL, CACHE_BYTES, &err);
        wp_spec s;
        spec_make(&s, wp_family_find("shfl_xor"), WP_I32, 32, 0xffffffffu, arch);
        build_ctx b = {jit, &s};
        uint8_t key[32];
        wp_source src;
        void *fn = NULL;
        wp_kernel *k = NULL;
        if (wp_jit_key(jit, &s, key, NULL, 0, &err) || !(k = wp_cache_get(cache, key, build, &b, &src, &err)) ||
            wp_kernel_function(k, cuda, wp_backend_load, wp_backend_unload, &fn, &err)) {
            fprintf(stderr, "(d) setup failed: %s\n", err.msg);
        } else {
            enum { N = 32 };
            uint64_t in[N], out[N];
            int32_t arg[N], srcl[N];
            uint8_t active[N], why[N];
            for (int i = 0; i < N; i++) {
                in[i] = (uint64_t)i * 3;
                arg[i] = 1;
                active[i] = 1;
            }
            wp_warp_job job = {.n = N, .elems = 1, .in = in, .arg = arg, .active = active};
            wp_warp_result res = {.out = out, .src = srcl, .why = why};
            double *rt = malloc((size_t)launches * sizeof *rt), *up = malloc((size_t)launches * sizeof *up);
            double *kern = malloc((size_t)launches * sizeof *kern), *down = malloc((size_t)launches * sizeof *down);
            int failures = 0;
            for (int i = -100; i < launches; i++) { /* 100 warm-up launches */
                wp_run_timing t = {0};              /* timed: the steps are what this measures */
                uint64_t t0 = wp_now_ns();
                if (wp_backend_run_warp(cuda, fn, &s, &job, &res, &t, &err)) failures++;
                double us = wp_us_since(t0);
                if (i < 0) continue;
                rt[i] = us;
                up[i] = t.upload_us;
                kern[i] = t.kernel_us;
                down[i] = t.download_us;
            }
            if (failures) fprintf(stderr, "(d) %d failures: %s\n", failures, err.msg);
            row("warp round trip: upload + launch + download", quantile(rt, launches, 0.5),
                quantile(rt, launches, 0.99), "us", launches);
            row("  upload (host timed)", quantile(up, launches, 0.5), quantile(up, launches, 0.99), "us", launches);
            row("  kernel (events)", quantile(kern, launches, 0.5), quantile(kern, launches, 0.99), "us", launches);
            row("  download (host timed)", quantile(down, launches, 0.5), quantile(down, launches, 0.99), "us",
                launches);
            free(rt);
            free(up);
            free(kern);
            free(down);
        }
        if (k) wp_kernel_release(cache, k);
        wp_cache_close(cache);
        wp_spec_free(&s);
    } else {
        printf("%-46s %10s\n", "warp round trip (cuda only)", "skipped");
    }

    wp_jit_close(jit);
    wp_backend_close(emu);
    wp_backend_close(cuda);
    return 0;
}
