/* test_jit.c — NVRTC through wp_jit: the sweep of jit_sweep.h over its quick set (each family's first
 * two types at width 32) compiles to sm_90 cubins, the rest of it in the plain tree (jit_sweep.c,
 * make test); every spec's key is checked here: keys are equal for equal specs and differ when any input differs
 * (spec fields, template text, included headers); broken templates fail with compile_failed and
 * the log; a real artifact survives the disk store; the same program compiles through bare NVRTC. Prints
 * the disk-hit time (wp_jit_compile against bare NVRTC: bench/compile/bench_core.c). Needs NVRTC, not a GPU. */
#include <dirent.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compile/cache.h"
#include "compile/jit.h"
#include "jit_sweep.h"
#include "kernels/data.h"
#include "kernels/spec.h"
#include "t.h"
#include "util/sha256.h"

static char cuda_include[512];

/* ---- keys ---- */

/* Threads asking for every spec's key at once, three rounds each (the key memo's slots are read,
 * replaced and collide under its lock): every key must be the one computed alone. */
typedef struct {
    wp_jit *jit;
    const wp_spec *specs;
    const uint8_t (*keys)[32];
    int n, wrong;
} key_worker_arg;
static void *key_worker(void *p) {
    key_worker_arg *a = p;
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < a->n; i++) {
            const int k = (i * 7 + round * 13) % a->n; /* each thread and round in its own order */
            uint8_t key[32];
            if (wp_jit_key(a->jit, &a->specs[k], key, NULL, 0, NULL) || memcmp(key, a->keys[k], 32)) a->wrong++;
        }
    return NULL;
}

static void test_keys(wp_jit *jit, const wp_spec *specs, int n) {
    T_CASE("keys: distinct kernels, distinct keys; an i32 and a u32 sum, one kernel");
    uint8_t(*keys)[32] = calloc((size_t)n, 32);
    char(*texts)[256] = calloc((size_t)n, 256);
    int clash = 0, shared = 0;
    for (int i = 0; i < n; i++) {
        char want[256];
        wp_err err = {0};
        CHECK(wp_jit_key(jit, &specs[i], keys[i], texts[i], 256, &err) == 0);
        wp_spec_key_text(&specs[i], want, sizeof want);
        CHECK(strcmp(texts[i], want) == 0);
        for (int j = 0; j < i; j++) {
            const bool same = memcmp(keys[i], keys[j], 32) == 0;
            clash += same != (strcmp(texts[i], texts[j]) == 0); /* the key text names the kernel */
            if (same && specs[i].type != specs[j].type) {
                shared++;
                CHECKF((specs[i].family->flags & WP_F_DATA) &&
                           wp_data_kernel_type(&specs[i]) == wp_data_kernel_type(&specs[j]) &&
                           specs[i].op.kind != WP_OP_MIN && specs[i].op.kind != WP_OP_MAX,
                       "%s and a %s spec share a kernel", texts[i], wp_type_name(specs[j].type));
            }
        }
    }
    CHECK(clash == 0);
    CHECKF(shared > 0, "no i32/u32 pair shared a kernel among %d specs", n);
    free(texts);

    T_CASE("keys: equal specs, equal keys");
    for (int i = 0; i < n; i++) {
        wp_spec copy;
        uint8_t again[32];
        CHECK(wp_spec_copy(&copy, &specs[i]) == 0);
        CHECK(wp_jit_key(jit, &copy, again, NULL, 0, NULL) == 0 && memcmp(again, keys[i], 32) == 0);
        wp_spec_free(&copy);
    }

    T_CASE("keys: from 4 threads at once, each the key computed alone (the key memo)");
    pthread_t th[4];
    key_worker_arg args[4];
    for (int t = 0; t < 4; t++) {
        args[t] = (key_worker_arg){.jit = jit, .specs = specs, .keys = (const uint8_t(*)[32])keys, .n = n};
        CHECK(pthread_create(&th[t], NULL, key_worker, &args[t]) == 0);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        CHECKF(args[t].wrong == 0, "thread %d: %d keys differ from the ones computed alone", t, args[t].wrong);
    }
    free(keys);

    /* An operator of ~250 characters: its key's inputs (the key text, the functor and the name
     * expression each carry it) pass a memo slot's size, so they are hashed field by field. */
    T_CASE("keys: a long expression's key is stable, and differs from a one-character change");
    char op[300] = "(a*1+b*2)";
    for (int i = 3; strlen(op) < 240; i++) {
        char next[300];
        snprintf(next, sizeof next, "max(%.250s,a*%d)", op, i); /* op stays under 240 here */
        snprintf(op, sizeof op, "%s", next);
    }
    wp_spec longs[2];
    uint8_t lk1[32], lk2[32], lk3[32];
    const wp_family *wr = wp_family_find("warp_allreduce");
    CHECK(wr && make_spec(wr, WP_I32, 32, 0xffffffffu, op, ARCH, &longs[0]) == 0);
    op[strlen(op) - 2] = op[strlen(op) - 2] == '4' ? '5' : '4'; /* the last constant, one digit changed */
    CHECK(wr && make_spec(wr, WP_I32, 32, 0xffffffffu, op, ARCH, &longs[1]) == 0);
    CHECK(wp_jit_key(jit, &longs[0], lk1, NULL, 0, NULL) == 0 && wp_jit_key(jit, &longs[0], lk2, NULL, 0, NULL) == 0);
    CHECK(memcmp(lk1, lk2, 32) == 0);
    CHECK(wp_jit_key(jit, &longs[1], lk3, NULL, 0, NULL) == 0 && memcmp(lk1, lk3, 32) != 0);
    wp_spec_free(&longs[0]);
    wp_spec_free(&longs[1]);

    T_CASE("keys: each field changes the key");
    const wp_family *ar = wp_family_find("warp_allreduce");
    if (!ar) {
        CHECKF(0, "no warp_allreduce family");
        return;
    }
    wp_spec base, other;
    uint8_t kb[32], ko[32];
    CHECK(make_spec(ar, WP_F32, 16, 0xffffffffu, "max", ARCH, &base) == 0);
    wp_jit_key(jit, &base, kb, NULL, 0, NULL);
    struct {
        const char *what;
        const wp_family *f;
        wp_type t;
        int w;
        uint32_t m;
        const char *op, *arch;
    } vary[] = {
        {"family", wp_family_find("redux"), WP_I32, 16, 0xffffffffu, "max", ARCH},
        {"type", ar, WP_F64, 16, 0xffffffffu, "max", ARCH},
        {"width", ar, WP_F32, 8, 0xffffffffu, "max", ARCH},
        {"mask", ar, WP_F32, 16, 0x0000ffffu, "max", ARCH},
        {"op", ar, WP_F32, 16, 0xffffffffu, "min", ARCH},
        {"expression", ar, WP_F32, 16, 0xffffffffu, "a + b * 2", ARCH},
        {"arch", ar, WP_F32, 16, 0xffffffffu, "max", "sm_80"},
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(vary); i++) {
        T_CASE(vary[i].what);
        if (!vary[i].f || make_spec(vary[i].f, vary[i].t, vary[i].w, vary[i].m, vary[i].op, vary[i].arch, &other)) {
            CHECKF(0, "cannot make the varied spec");
            continue;
        }
        CHECK(wp_jit_key(jit, &other, ko, NULL, 0, NULL) == 0 && memcmp(kb, ko, 32) != 0);
        wp_spec_free(&other);
    }
    CHECK(make_spec(ar, WP_F32, 16, 0xffffffffu, "a+b*2", ARCH, &other) == 0);
    uint8_t k1[32], k2[32];
    wp_jit_key(jit, &other, k1, NULL, 0, NULL);
    wp_spec_free(&other);
    CHECK(make_spec(ar, WP_F32, 16, 0xffffffffu, "a + b * 2", ARCH, &other) == 0);
    wp_jit_key(jit, &other, k2, NULL, 0, NULL);
    T_CASE("keys: an expression's spacing does not matter");
    CHECK(memcmp(k1, k2, 32) == 0);
    wp_spec_free(&other);
    wp_spec_free(&base);
}

/* ---- template edits change the keys they should ---- */

static void copy_file(const char *from, const char *to, const char *append) {
    size_t n;
    char *text = wp_read_file(from, &n);
    FILE *f = fopen(to, "wb");
    if (text && f) fwrite(text, 1, n, f);
    if (f && append) fputs(append, f);
    if (f) fclose(f);
    free(text);
}

/* Copies templates/ and kernels/wp_abi.h under root (root/templates, root/kernels), editing one file. */
static void copy_tree(const char *root, const char *edit_name, const char *append, bool abi_beside) {
    char path[1024], to[1024];
    snprintf(path, sizeof path, "%s/templates", root);
    mkdir(root, 0700);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/kernels", root);
    mkdir(path, 0700);
    DIR *d = opendir(WP_DEFAULT_TEMPLATES);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", WP_DEFAULT_TEMPLATES, de->d_name);
        snprintf(to, sizeof to, "%s/templates/%s", root, de->d_name);
        copy_file(path, to, edit_name && strcmp(edit_name, de->d_name) == 0 ? append : NULL);
    }
    if (d) closedir(d);
    snprintf(path, sizeof path, "%s/../kernels/wp_abi.h", WP_DEFAULT_TEMPLATES);
    snprintf(to, sizeof to, abi_beside ? "%s/templates/wp_abi.h" : "%s/kernels/wp_abi.h", root);
    copy_file(path, to, edit_name && strcmp(edit_name, "wp_abi.h") == 0 ? append : NULL);
}

static wp_jit *open_tree(const char *root) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/templates", root);
    wp_err err = {0};
    wp_jit *j = wp_jit_open(dir, cuda_include, &err);
    if (!j) fprintf(stderr, "open %s: %s\n", dir, err.msg);
    return j;
}

static void key_for(wp_jit *j, const char *family, uint8_t key[32]) {
    const wp_family *f = wp_family_find(family);
    wp_spec s;
    memset(key, 0, 32);
    if (!f || make_spec(f, (f->types & WP_TBIT(WP_I32)) ? WP_I32 : WP_U32, 32, 0xffffffffu, "sum", ARCH, &s)) return;
    wp_jit_key(j, &s, key, NULL, 0, NULL);
    wp_spec_free(&s);
}

static void rm_rf(const char *dir) {
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static void test_template_edits(wp_jit *jit, const char *root) {
    uint8_t shfl0[32], vote0[32], shfl1[32], vote1[32];
    key_for(jit, "shfl", shfl0);
    key_for(jit, "vote_all", vote0);
    char dir[1024];

    T_CASE("keys: a copy of the templates elsewhere gives the same keys");
    snprintf(dir, sizeof dir, "%s/same", root);
    copy_tree(dir, NULL, NULL, false);
    wp_jit *j = open_tree(dir);
    CHECK(j != NULL);
    if (j) {
        key_for(j, "shfl", shfl1);
        CHECK(memcmp(shfl0, shfl1, 32) == 0);
        wp_jit_close(j);
    }

    T_CASE("keys: installed layout (wp_abi.h beside the templates)");
    snprintf(dir, sizeof dir, "%s/installed", root);
    copy_tree(dir, NULL, NULL, true);
    j = open_tree(dir);
    CHECK(j != NULL);
    if (j) {
        key_for(j, "shfl", shfl1);
        CHECK(memcmp(shfl0, shfl1, 32) == 0);
        wp_jit_close(j);
    }

    T_CASE("keys: editing one template changes only its families");
    snprintf(dir, sizeof dir, "%s/edit_shfl", root);
    copy_tree(dir, "shfl.cu", "\n// edited\n", false);
    j = open_tree(dir);
    if (j) {
        key_for(j, "shfl", shfl1);
        key_for(j, "vote_all", vote1);
        CHECK(memcmp(shfl0, shfl1, 32) != 0 && memcmp(vote0, vote1, 32) == 0);
        wp_jit_close(j);
    }

    const char *headers[] = {"wp_common.cuh", "wp_abi.h"};
    for (size_t i = 0; i < WP_ARRAY_LEN(headers); i++) {
        T_CASE("keys: editing a shared header changes every family");
        snprintf(dir, sizeof dir, "%s/edit_%zu", root, i);
        copy_tree(dir, headers[i], "\n// edited\n", false);
        j = open_tree(dir);
        if (j) {
            key_for(j, "shfl", shfl1);
            key_for(j, "vote_all", vote1);
            CHECKF(memcmp(shfl0, shfl1, 32) != 0 && memcmp(vote0, vote1, 32) != 0, "%s", headers[i]);
            wp_jit_close(j);
        }
    }

    T_CASE("a template that does not compile: 500 compile_failed with the log");
    snprintf(dir, sizeof dir, "%s/broken", root);
    copy_tree(dir, "vote.cu", "\nthis is not C++;\n", false);
    j = open_tree(dir);
    if (j) {
        wp_spec s;
        CHECK(make_spec(wp_family_find("vote_any"), WP_I32, 32, 0xffffffffu, "sum", ARCH, &s) == 0);
        wp_artifact a;
        wp_err err = {0};
        char *log = NULL;
        CHECK(wp_jit_compile(j, &s, &a, &log, &err) == -1);
        CHECK(err.status == 500 && err.code && strcmp(err.code, "compile_failed") == 0);
        CHECK(strstr(err.msg, "vote_any") != NULL && strstr(err.msg, "error") != NULL);
        CHECK(log && strstr(log, "error") && strstr(log, "vote.cu"));
        CHECK(a.cubin == NULL && a.log == NULL);
        free(log);
        wp_spec_free(&s);
        wp_jit_close(j);
    }

    T_CASE("no templates dir / no wp_abi.h");
    wp_err err = {0};
    CHECK(wp_jit_open("/nonexistent/templates", cuda_include, &err) == NULL && err.status == 500);
    snprintf(dir, sizeof dir, "%s/noabi/templates", root);
    mkdir(dir, 0700);
    *strrchr(dir, '/') = 0;
    mkdir(dir, 0700);
    snprintf(dir, sizeof dir, "%s/noabi/templates", root);
    CHECK(wp_jit_open(dir, cuda_include, &err) == NULL && err.status == 500);

    T_CASE("a family whose template is missing");
    snprintf(dir, sizeof dir, "%s/missing", root);
    copy_tree(dir, NULL, NULL, false);
    snprintf(dir, sizeof dir, "%s/missing/templates/match.cu", root);
    unlink(dir);
    snprintf(dir, sizeof dir, "%s/missing", root);
    j = open_tree(dir);
    if (j) {
        wp_spec s;
        uint8_t key[32];
        CHECK(make_spec(wp_family_find("match_any"), WP_I32, 32, 0xffffffffu, "sum", ARCH, &s) == 0);
        CHECK(wp_jit_key(j, &s, key, NULL, 0, &err) == -1 && strcmp(err.code, "template_missing") == 0);
        wp_spec_free(&s);
        wp_jit_close(j);
    }
}

/* ---- the same program through bare NVRTC, and a real artifact through the disk store ---- */

typedef struct {
    wp_jit *jit;
    const wp_spec *spec;
} build_ctx;

static int build_nvrtc(void *ctx, wp_artifact *out, wp_err *err) {
    build_ctx *b = ctx;
    return wp_jit_compile(b->jit, b->spec, out, NULL, err);
}

static double bare_nvrtc_ms(const char *source, int nh, const char **texts, const char **names, const char *expr) {
    char inc[600];
    snprintf(inc, sizeof inc, "-I%s", cuda_include);
    const char *opts[] = {"-arch=" ARCH, "-std=c++17", "--fmad=false", "-default-device", inc, "-Xptxas=-v"};
    uint64_t t0 = wp_now_ns();
    nvrtcProgram p;
    nvrtcCreateProgram(&p, source, "shfl.cu", nh, texts, names);
    nvrtcAddNameExpression(p, expr);
    nvrtcResult r = nvrtcCompileProgram(p, (int)WP_ARRAY_LEN(opts), opts);
    size_t n = 0;
    nvrtcGetCUBINSize(p, &n);
    char *cubin = malloc(n ? n : 1);
    nvrtcGetCUBIN(p, cubin);
    const char *lowered;
    nvrtcGetLoweredName(p, expr, &lowered);
    double ms = wp_ms_since(t0);
    free(cubin);
    nvrtcDestroyProgram(&p);
    return r == NVRTC_SUCCESS && n ? ms : -1;
}

static void test_overhead(wp_jit *jit) {
    T_CASE("wp_jit_compile and bare NVRTC on the same program");
    /* The same program by hand: shfl.cu with the headers, same options. */
    const char *names[16], *texts[16];
    char *owned[16];
    int nh = 0;
    const char *files[] = {"wp_common.cuh", "wp_warp.cuh", "wp_ops.cuh", "wp_resident.cuh", "../kernels/wp_abi.h"};
    for (size_t i = 0; i < WP_ARRAY_LEN(files); i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/%s", WP_DEFAULT_TEMPLATES, files[i]);
        owned[nh] = wp_read_file(path, NULL);
        if (!owned[nh]) continue;
        texts[nh] = owned[nh];
        names[nh] = strrchr(files[i], '/') ? strrchr(files[i], '/') + 1 : files[i];
        nh++;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/shfl.cu", WP_DEFAULT_TEMPLATES);
    char *source = wp_read_file(path, NULL);
    wp_spec s;
    if (!source || make_spec(wp_family_find("shfl_xor"), WP_I32, 32, 0xffffffffu, "sum", ARCH, &s)) {
        CHECKF(0, "cannot set up the overhead test");
        free(source);
        for (int i = 0; i < nh; i++) free(owned[i]);
        return;
    }
    char expr[256], prelude[16];
    wp_spec_name_expr(&s, expr, sizeof expr, prelude, sizeof prelude);

    /* The same program compiles both ways; what wp_jit_compile costs over bare NVRTC is measured by
     * bench/compile/bench_core.c (c), not asserted here. */
    wp_artifact a;
    wp_err cerr = {0};
    CHECK(bare_nvrtc_ms(source, nh, texts, names, expr) > 0);
    int rc = wp_jit_compile(jit, &s, &a, NULL, &cerr);
    CHECKF(rc == 0, "%s", cerr.msg);
    if (rc == 0) wp_artifact_free(&a);
    free(source);
    for (int i = 0; i < nh; i++) free(owned[i]);

    T_CASE("a real artifact through the disk store");
    char root[] = "/tmp/wp_test_jit_cache_XXXXXX";
    if (!mkdtemp(root)) return;
    build_ctx ctx = {jit, &s};
    uint8_t key[32];
    wp_jit_key(jit, &s, key, NULL, 0, NULL);
    wp_cache *c = wp_cache_open(root, 1 << 20, NULL);
    wp_source src;
    wp_err err = {0};
    wp_kernel *k = wp_cache_get(c, key, build_nvrtc, &ctx, &src, &err);
    CHECK(k && src == WP_SRC_COMPILE);
    wp_artifact first = {0};
    if (k) {
        const wp_artifact *a = wp_kernel_artifact(k);
        first.cubin_len = a->cubin_len;
        first.cubin = malloc(a->cubin_len);
        memcpy(first.cubin, a->cubin, a->cubin_len);
        first.lowered = strdup(a->lowered);
        first.regs = a->regs;
        wp_kernel_release(c, k);
    }
    wp_cache_close(c);
    double total_us = 0;
    enum { LOADS = 20 };
    for (int r = 0; r < LOADS; r++) {
        c = wp_cache_open(root, 1 << 20, NULL);
        uint64_t t0 = wp_now_ns();
        k = wp_cache_get(c, key, build_nvrtc, &ctx, &src, &err);
        total_us += wp_us_since(t0);
        const wp_artifact *a = k ? wp_kernel_artifact(k) : NULL;
        CHECK(a && src == WP_SRC_DISK && a->cubin_len == first.cubin_len &&
              memcmp(a->cubin, first.cubin, a->cubin_len) == 0 && strcmp(a->lowered, first.lowered) == 0 &&
              a->regs == first.regs && a->ptx && a->log);
        wp_kernel_release(c, k);
        wp_cache_close(c);
    }
    printf("disk hit of a real artifact (%zu-byte cubin): %.1f us mean over %d\n", first.cubin_len, total_us / LOADS,
           LOADS);
    wp_artifact_free(&first);
    wp_spec_free(&s);
    rm_rf(root);
}

/* ---- many specs in one program (prewarm.c) ---- */

/* wp_jit_set_parallel(1): four threads compiling at once take turns (never two programs at once);
 * wp_jit_compiling counts them. */
typedef struct {
    wp_jit *jit;
    wp_spec spec;
    int rc;
} slot_job;
static void *slot_compile(void *arg) {
    slot_job *sj = arg;
    wp_artifact a;
    wp_err err = {0};
    sj->rc = wp_jit_compile(sj->jit, &sj->spec, &a, NULL, &err);
    if (sj->rc == 0) wp_artifact_free(&a);
    return NULL;
}
static void test_slots(wp_jit *jit) {
    T_CASE("compile slots: at most --compile-threads programs at once");
    const wp_family *shfl = wp_family_find("shfl_xor");
    static const wp_type types[4] = {WP_I32, WP_U32, WP_F32, WP_U64};
    slot_job jobs[4];
    pthread_t th[4];
    int now = -1, most = -1;
    wp_jit_compiling(jit, &now, &most);
    CHECK(now == 0);
    wp_jit_set_parallel(jit, 1);
    for (int i = 0; i < 4; i++) {
        jobs[i] = (slot_job){.jit = jit};
        CHECK(make_spec(shfl, types[i], 16, 0xffffffffu, NULL, ARCH, &jobs[i].spec) == 0);
    }
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, slot_compile, &jobs[i]);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) CHECK(jobs[i].rc == 0);
    wp_jit_compiling(jit, &now, &most);
    CHECKF(now == 0 && most == 1, "now %d, most at once %d", now, most);
    wp_jit_set_parallel(jit, 0);
    for (int i = 0; i < 4; i++) wp_spec_free(&jobs[i].spec);
}

static void test_group(wp_jit *jit) {
    T_CASE("group: specs that share a template and options share a program");
    const wp_family *shfl_xor = wp_family_find("shfl_xor"), *reduce = wp_family_find("device_reduce");
    const wp_family *allreduce = wp_family_find("warp_allreduce");
    wp_spec s[5];
    CHECK(make_spec(shfl_xor, WP_I32, 32, 0xffffffffu, NULL, ARCH, &s[0]) == 0);
    CHECK(make_spec(shfl_xor, WP_U32, 32, 0xffffffffu, NULL, ARCH, &s[1]) == 0);
    CHECK(make_spec(shfl_xor, WP_F32, 8, 0xffffffffu, NULL, ARCH, &s[2]) == 0);
    CHECK(make_spec(reduce, WP_I32, 32, 0xffffffffu, "sum", ARCH, &s[3]) == 0);
    CHECK(make_spec(allreduce, WP_I32, 32, 0xffffffffu, "a+b*2", ARCH, &s[4]) == 0);
    uint64_t g = wp_jit_group_id(jit, &s[0]);
    CHECK(g != 0 && wp_jit_group_id(jit, &s[1]) == g && wp_jit_group_id(jit, &s[2]) == g);
    CHECK(wp_jit_group_id(jit, &s[3]) != g && wp_jit_group_id(jit, &s[3]) != 0);
    CHECK(wp_jit_group_id(jit, &s[4]) == 0); /* an expression brings a prelude: alone */

    const wp_spec *three[3] = {&s[0], &s[1], &s[2]};
    wp_artifact group[3], alone;
    wp_err err = {0};
    CHECKF(wp_jit_compile_group(jit, three, 3, group, &err) == 0, "%s", err.msg);
    for (int i = 0; i < 3; i++) {
        CHECKF(wp_jit_compile(jit, three[i], &alone, NULL, &err) == 0, "%s", err.msg);
        CHECK(group[i].lowered && alone.lowered && strcmp(group[i].lowered, alone.lowered) == 0);
        CHECKF(group[i].regs == alone.regs && group[i].spills == alone.spills, "regs %d/%d spills %d/%d", group[i].regs,
               alone.regs, group[i].spills, alone.spills);
        CHECK(group[i].cubin_len > alone.cubin_len); /* it holds all three kernels */
        CHECK(group[i].source && alone.source && strcmp(group[i].source, alone.source) == 0);
        CHECK(group[i].ptx && strstr(group[i].ptx, alone.lowered) != NULL && group[i].compile_ms > 0);
        wp_artifact_free(&alone);
    }
    for (int i = 0; i < 3; i++) wp_artifact_free(&group[i]);

    T_CASE("group: specs that cannot share a program are refused, nothing left allocated");
    const wp_spec *mixed[2] = {&s[0], &s[3]};
    wp_artifact two[2];
    CHECK(wp_jit_compile_group(jit, mixed, 2, two, &err) == -1 && strcmp(err.code, "bad_group") == 0);
    CHECK(two[0].cubin == NULL && two[1].cubin == NULL);
    const wp_spec *expr[1] = {&s[4]};
    CHECK(wp_jit_compile_group(jit, expr, 1, two, &err) == -1);
    for (int i = 0; i < 5; i++) wp_spec_free(&s[i]);
}

/* Every warp family's resident build (wp_spec.resident: -DWP_RESIDENT, templates/wp_resident.cuh)
 * compiles, with a key of its own ("/resident" before the arch) and a kernel of the same name as the
 * plain build's: CI compiles the resident loop of every template, which only the GPU runs. */
static void test_resident_builds(wp_jit *jit) {
    T_CASE("resident builds");
    int nf, built = 0;
    const wp_family *const *fams = wp_family_list(&nf);
    for (int fi = 0; fi < nf; fi++) {
        const wp_family *f = fams[fi];
        if (!f->template_file || (f->flags & WP_F_DATA)) continue;
        wp_spec s;
        int t = 0;
        while (t < 32 && !(f->types >> t & 1u)) t++; /* its first type */
        if (t == 32 || make_spec(f, (wp_type)t, 32, 0xffffffffu, "sum", ARCH, &s)) continue;
        wp_spec rs = s;
        rs.resident = true;
        char plain_key[WP_SPEC_KEY_MAX], key[WP_SPEC_KEY_MAX];
        CHECK(wp_spec_key_text(&s, plain_key, sizeof plain_key) > 0 && wp_spec_key_text(&rs, key, sizeof key) > 0);
        CHECKF(strstr(key, "/resident/" ARCH) && strcmp(key, plain_key), "%s", key);
        wp_artifact a = {0}, p = {0};
        wp_err err = {0};
        const int rc = wp_jit_compile(jit, &rs, &a, NULL, &err), prc = wp_jit_compile(jit, &s, &p, NULL, &err);
        CHECKF(rc == 0 && prc == 0, "%s: %s", key, err.msg);
        uint8_t jk[32], pjk[32];
        char kt[WP_SPEC_KEY_MAX];
        CHECK(wp_jit_key(jit, &rs, jk, kt, sizeof kt, &err) == 0 && wp_jit_key(jit, &s, pjk, kt, sizeof kt, &err) == 0);
        CHECKF(memcmp(jk, pjk, sizeof jk) != 0, "%s: the same cache key as the plain build", key);
        if (rc == 0 && prc == 0) {
            CHECKF(a.lowered && p.lowered && !strcmp(a.lowered, p.lowered), "%s: %s", key, a.lowered);
            built++;
        }
        if (rc == 0) wp_artifact_free(&a);
        if (prc == 0) wp_artifact_free(&p);
        wp_spec_free(&s);
    }
    CHECKF(built >= 10, "%d warp families built", built);
}

/* The batched data kernels that serve as residents (WP_F_RESIDENT: device_reduce, argmin, argmax) compile
 * in their resident build, keyed ".../batch/resident", with no spills; the first also in its plain
 * batched build, to the same kernel name (the resident is looked up by it). */
static void test_data_resident_builds(wp_jit *jit) {
    T_CASE("data resident builds");
    static const char *const specs[] = {
        "{\"family\":\"device_reduce\",\"type\":\"f32\",\"op\":\"sum\"}",
        "{\"family\":\"device_reduce\",\"type\":\"i64\",\"op\":\"sum\",\"strategy\":\"atomic\"}",
        "{\"family\":\"argmax\",\"type\":\"i32\"}",
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(specs); i++) {
        cJSON *o = cJSON_Parse(specs[i]);
        wp_spec s;
        wp_err err = {0};
        const int prc = wp_spec_from_json(o, ARCH, &s, &err);
        cJSON_Delete(o);
        CHECKF(prc == 0, "%s: %s", specs[i], err.msg);
        if (prc) continue;
        CHECK(s.family->flags & WP_F_RESIDENT);
        s.data.batched = true;
        wp_spec rs = s;
        rs.resident = true;
        char key[WP_SPEC_KEY_MAX];
        CHECKF(wp_spec_key_text(&rs, key, sizeof key) > 0 && strstr(key, "/batch/resident"), "%s", key);
        wp_artifact a = {0}, p = {0};
        const int rc = wp_jit_compile(jit, &rs, &a, NULL, &err);
        CHECKF(rc == 0 && a.spills == 0, "%s: rc %d, spills %d: %s", key, rc, a.spills, err.msg);
        if (rc == 0 && i == 0) {
            const int rcp = wp_jit_compile(jit, &s, &p, NULL, &err);
            CHECKF(rcp == 0 && a.lowered && p.lowered && !strcmp(a.lowered, p.lowered), "%s: %s", key, err.msg);
            if (rcp == 0) wp_artifact_free(&p);
        }
        if (rc == 0) wp_artifact_free(&a);
        wp_spec_free(&s);
    }
}

int main(void) {
    snprintf(cuda_include, sizeof cuda_include, "%s/include", WP_DEFAULT_CUDA_HOME);
    wp_err err = {0};
    wp_jit *jit = wp_jit_open(WP_DEFAULT_TEMPLATES, cuda_include, &err);
    T_CASE("open");
    CHECKF(jit != NULL, "%s", err.msg);
    if (!jit) return t_done("jit");
    int major, minor;
    wp_jit_version(jit, &major, &minor);
    CHECK(major >= 11);
    CHECK(strstr(wp_jit_options_text(jit), "--fmad=false") != NULL);
    printf("NVRTC %d.%d, options: %s\n", major, minor, wp_jit_options_text(jit));

    /* make check (WARPD_TEST_QUICK=1): the quick set alone; make test: every spec's key, and the quick set
     * compiled here (the rest in the plain tree: jit_sweep.c) */
    static wp_spec specs[MAX_SPECS];
    static bool quick[MAX_SPECS];
    const char *q = getenv("WARPD_TEST_QUICK");
    int n = sweep_collect(specs, quick, q && !strcmp(q, "1"));
    test_keys(jit, specs, n);
    char root[] = "/tmp/wp_test_jit_XXXXXX";
    if (mkdtemp(root)) {
        test_template_edits(jit, root);
        rm_rf(root);
    }
    test_overhead(jit);
    test_resident_builds(jit);
    test_data_resident_builds(jit);
    test_group(jit);
    test_slots(jit);
    sweep_run(jit, specs, quick, n, true);
    for (int i = 0; i < n; i++) wp_spec_free(&specs[i]);
    wp_jit_close(jit);
    return t_done("jit");
}
