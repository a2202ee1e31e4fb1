/* bench_prewarm.c — which way compiles a prewarm set fastest with NVRTC: one program per spec (what
 * warpd does), the same with NVRTC's automatic precompiled headers (-pch, --pch-dir; NVRTC 12.4+), or
 * one program per template holding many name expressions (chunks of K specs that share a template
 * and options). Each way runs the whole set (default prewarm/default.json) cold on N threads (default:
 * the CPUs), from the same template texts and options as server/compile/jit.c, and prints its wall time.
 *   bench_prewarm [SET.json [THREADS]]   (WP_CUDA_INCLUDE overrides $CUDA_HOME/include) */
#include <dirent.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/spec.h"
#include "util/common.h"

#define MAX_HEADERS 64
#define MAX_PROGRAMS 4096
#define MAX_NAMES 64

static const char *header_names[MAX_HEADERS], *header_texts[MAX_HEADERS];
static int n_headers;
static char include_opt[600];

typedef struct {
    const char *tmpl;
    char *names[MAX_NAMES];
    int n;
    bool fp16;
} program;

static program programs[MAX_PROGRAMS];
static int n_programs;
static atomic_int next_program, failures;
static const char *pch_dir; /* NULL: no precompiled headers */

static void load_headers(const char *dir) {
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".cuh") || n_headers >= MAX_HEADERS - 1) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        header_names[n_headers] = strdup(e->d_name);
        header_texts[n_headers++] = wp_read_file(path, NULL);
    }
    if (d) closedir(d);
    header_names[n_headers] = "wp_abi.h";
    header_texts[n_headers++] = wp_read_file("kernels/wp_abi.h", NULL);
}

static void compile_program(const program *p) {
    char path[1024];
    snprintf(path, sizeof path, "templates/%s", p->tmpl);
    char *src = wp_read_file(path, NULL);
    nvrtcProgram prog;
    char pch_opt[600];
    const char *opts[12] = {"-arch=sm_90", "-std=c++17", "--fmad=false", "-default-device", include_opt, "-Xptxas=-v"};
    int n_opts = 6;
    if (p->fp16) opts[n_opts++] = "-DWP_NEED_FP16";
    if (pch_dir) {
        snprintf(pch_opt, sizeof pch_opt, "--pch-dir=%s", pch_dir);
        opts[n_opts++] = "-pch";
        opts[n_opts++] = pch_opt;
    }
    nvrtcResult r = src ? nvrtcCreateProgram(&prog, src, p->tmpl, n_headers, header_texts, header_names)
                        : NVRTC_ERROR_INVALID_INPUT;
    for (int i = 0; r == NVRTC_SUCCESS && i < p->n; i++) r = nvrtcAddNameExpression(prog, p->names[i]);
    if (r == NVRTC_SUCCESS) r = nvrtcCompileProgram(prog, n_opts, opts);
    size_t cubin = 0;
    if (r == NVRTC_SUCCESS) r = nvrtcGetCUBINSize(prog, &cubin);
    for (int i = 0; r == NVRTC_SUCCESS && i < p->n; i++) {
        const char *lowered;
        r = nvrtcGetLoweredName(prog, p->names[i], &lowered);
    }
    if (r != NVRTC_SUCCESS || cubin == 0) atomic_fetch_add(&failures, 1);
    if (src) nvrtcDestroyProgram(&prog);
    free(src);
}

static void *worker(void *arg) {
    (void)arg;
    for (int i; (i = atomic_fetch_add(&next_program, 1)) < n_programs;) compile_program(&programs[i]);
    return NULL;
}

/* Groups the set's specs into programs of at most `chunk` name expressions (same template, same
 * options, no expression prelude). Returns the number of specs, or -1. */
static int plan(const cJSON *specs, int chunk) {
    for (int i = 0; i < n_programs; i++)
        for (int k = 0; k < programs[i].n; k++) free(programs[i].names[k]);
    n_programs = 0;
    int n = 0;
    for (const cJSON *s = specs->child; s; s = s->next, n++) {
        wp_spec spec;
        wp_err err = {0};
        char name[512], prelude[4096];
        if (wp_spec_from_json(s, "sm_90", &spec, &err)) {
            fprintf(stderr, "spec %d: %s\n", n, err.msg);
            return -1;
        }
        wp_spec_name_expr(&spec, name, sizeof name, prelude, sizeof prelude);
        bool fp16 = spec.type == WP_F16 || spec.type == WP_BF16;
        const char *tmpl = spec.family->template_file;
        wp_spec_free(&spec);
        if (!tmpl) continue;
        program *p = NULL;
        for (int i = n_programs - 1; i >= 0 && !p && !prelude[0]; i--)
            if (programs[i].tmpl == tmpl && programs[i].fp16 == fp16 && programs[i].n < chunk) p = &programs[i];
        if (!p) {
            if (n_programs == MAX_PROGRAMS) return -1;
            p = &programs[n_programs++];
            *p = (program){.tmpl = tmpl, .fp16 = fp16};
        }
        p->names[p->n++] = strdup(name);
    }
    return n;
}

static double run(int threads) {
    atomic_store(&next_program, 0);
    atomic_store(&failures, 0);
    pthread_t tid[256];
    uint64_t t0 = wp_now_ns();
    int started = 0;
    while (started < threads && pthread_create(&tid[started], NULL, worker, NULL) == 0) started++;
    for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
    return wp_ms_since(t0) / 1e3;
}

int main(int argc, char **argv) {
    const char *set = argc > 1 ? argv[1] : "prewarm/default.json";
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = argc > 2 ? atoi(argv[2]) : (int)(cpus > 0 ? cpus : 2);
    if (threads < 1 || threads > 256) threads = 2;
    const char *inc = getenv("WP_CUDA_INCLUDE"), *home = getenv("CUDA_HOME");
    snprintf(include_opt, sizeof include_opt, "-I%s", inc ? inc : "");
    if (!inc) snprintf(include_opt, sizeof include_opt, "-I%s/include", home && *home ? home : WP_DEFAULT_CUDA_HOME);
    char *text = wp_read_file(set, NULL);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    const cJSON *specs = cJSON_GetObjectItemCaseSensitive(doc, "specs");
    free(text);
    if (!cJSON_IsArray(specs)) {
        fprintf(stderr, "usage: bench_prewarm [SET.json [THREADS]] (no specs in %s)\n", set);
        return 2;
    }
    load_headers("templates");
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    printf("prewarm set %s on %d threads, NVRTC %d.%d, cold each time\n", set, threads, major, minor);
    static const struct {
        const char *name;
        int chunk;
        bool pch;
    } ways[] = {{"one program per spec (warpd today)", 1, false},
                {"one program per spec, -pch", 1, true},
                {"name expressions, chunks of 2", 2, false},
                {"name expressions, chunks of 4", 4, false},
                {"name expressions, chunks of 8", 8, false},
                {"name expressions, one program per template", MAX_NAMES, false}};
    char dir[] = "/tmp/warpd-pch-XXXXXX";
    for (size_t w = 0; w < WP_ARRAY_LEN(ways); w++) {
        int n = plan(specs, ways[w].chunk);
        if (n < 0) return 1;
        pch_dir = NULL;
        if (ways[w].pch && mkdtemp(dir)) pch_dir = dir;
        double secs = run(threads);
        printf("  %-46s %4d programs  %6.2f s  (%d failed)\n", ways[w].name, n_programs, secs, atomic_load(&failures));
        fflush(stdout);
        if (pch_dir) {
            char cmd[128];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", pch_dir);
            if (system(cmd)) fprintf(stderr, "could not remove %s\n", pch_dir);
            memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
        }
    }
    plan(specs, 0);
    cJSON_Delete(doc);
    return 0;
}
