/* jit_sweep.h — the sweep of every family × allowed type × two widths × operator through NVRTC, which
 * test_jit.c (the quick set, in the sanitized tree) and jit_sweep.c (the rest, in the plain tree)
 * share: the specs, and a pool of threads that compiles them, those that can share a program in one
 * (wp_jit_compile_group, as prewarm builds them), each checked on its own (an ELF cubin, its entry in
 * the PTX for sm_90, registers and spills read). Header-only: every function is static. */
#ifndef WP_JIT_SWEEP_H
#define WP_JIT_SWEEP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "compile/jit.h"
#include "kernels/spec.h"
#include "t.h"
#include "util/common.h"

#define ARCH "sm_90"
#define MAX_SPECS 1024
#define COMPILE_THREADS 2

static int make_spec(const wp_family *f, wp_type t, int width, uint32_t mask, const char *op, const char *arch,
                     wp_spec *s) {
    memset(s, 0, sizeof *s);
    s->family = f;
    s->type = t;
    s->width = width;
    s->mask = mask;
    snprintf(s->arch, sizeof s->arch, "%s", arch);
    wp_err err = {0};
    if ((f->flags & WP_F_OP) && wp_op_parse(op, t, "op", &s->op, &err)) return -1;
    if (wp_spec_validate(s, &err)) {
        wp_spec_free(s);
        return -1;
    }
    return 0;
}

/* ---- every family × type × width × op ---- */

/* The sweep's units of work: specs that can share an NVRTC program (wp_jit_group_id, as prewarm
 * builds them) compile together, at most UNIT_MAX at a time; the others (an expression) alone. Each
 * spec's artifact is then checked on its own. */
#define UNIT_MAX 16
typedef struct {
    int first, n; /* indexes into the pool's order */
} compile_unit;

typedef struct {
    wp_jit *jit;
    wp_spec *specs;
    int n, n_units;
    int order[MAX_SPECS];
    compile_unit units[MAX_SPECS];
    atomic_int next, failed;
    pthread_mutex_t mu;
} compile_pool;

static int larger_first(const void *a, const void *b) {
    const compile_unit *x = a, *y = b;
    return x->n != y->n ? y->n - x->n : x->first - y->first;
}

/* Cuts the specs into units: each spec with the later ones of its group (UNIT_MAX at most), or alone;
 * the largest first, so that the two threads finish together. */
static void plan_units(compile_pool *pool) {
    uint64_t ids[MAX_SPECS];
    bool taken[MAX_SPECS] = {0};
    for (int i = 0; i < pool->n; i++) ids[i] = wp_jit_group_id(pool->jit, &pool->specs[i]);
    int k = 0;
    for (int i = 0; i < pool->n; i++) {
        if (taken[i]) continue;
        compile_unit *u = &pool->units[pool->n_units++];
        u->first = k;
        u->n = 0;
        for (int j = i; j < pool->n && u->n < (ids[i] ? UNIT_MAX : 1); j++)
            if (!taken[j] && (j == i || (ids[i] && ids[j] == ids[i]))) {
                taken[j] = true;
                pool->order[k++] = j;
                u->n++;
            }
    }
    qsort(pool->units, (size_t)pool->n_units, sizeof *pool->units, larger_first);
}

static bool artifact_ok(const wp_artifact *a) {
    bool ok = a->cubin_len > 4 &&
              memcmp(a->cubin,
                     "\x7f"
                     "ELF",
                     4) == 0 &&
              a->lowered && a->lowered[0] && a->regs >= 0 && a->spills >= 0 && a->log && a->compile_ms > 0;
    if (ok) { /* the PTX holds the entry we will look up, for the target we asked */
        char entry[600];
        snprintf(entry, sizeof entry, ".entry %s(", a->lowered);
        ok = a->ptx && strstr(a->ptx, entry) && strstr(a->ptx, ".target " ARCH);
    }
    return ok;
}

/* One spec's check: its artifact (from its group's program or its own), or why it has none. */
static void check_spec(compile_pool *pool, const wp_spec *s, int rc, const wp_err *err, const char *log,
                       const wp_artifact *a) {
    char key_text[256];
    wp_spec_key_text(s, key_text, sizeof key_text);
    bool ok = rc == 0 && log == NULL && artifact_ok(a);
    pthread_mutex_lock(&pool->mu);
    CHECKF(ok, "%s: rc %d %s %s\n%s", key_text, rc, err->code ? err->code : "", err->msg, log ? log : "");
    pthread_mutex_unlock(&pool->mu);
    if (!ok) atomic_fetch_add(&pool->failed, 1);
}

/* A spec alone through wp_jit_compile, checked. */
static void compile_alone(compile_pool *pool, const wp_spec *s) {
    wp_artifact a;
    wp_err err = {0};
    char *log = NULL;
    int rc = wp_jit_compile(pool->jit, s, &a, &log, &err);
    check_spec(pool, s, rc, &err, log, &a);
    free(log);
    if (rc == 0) wp_artifact_free(&a);
}

/* A unit: one program for the group (each spec checked in it), or, when that fails, as prewarm does,
 * each spec alone, so that a failure names its spec. */
static void compile_unit_run(compile_pool *pool, const compile_unit *u) {
    const wp_spec *group[UNIT_MAX];
    wp_artifact arts[UNIT_MAX];
    wp_err err = {0};
    for (int i = 0; i < u->n; i++) group[i] = &pool->specs[pool->order[u->first + i]];
    if (u->n == 1 || wp_jit_compile_group(pool->jit, group, u->n, arts, &err)) {
        for (int i = 0; i < u->n; i++) compile_alone(pool, group[i]);
        return;
    }
    for (int i = 0; i < u->n; i++) {
        check_spec(pool, group[i], 0, &err, NULL, &arts[i]);
        wp_artifact_free(&arts[i]);
    }
}

static void *compile_worker(void *arg) {
    compile_pool *pool = arg;
    for (int i; (i = atomic_fetch_add(&pool->next, 1)) < pool->n_units;) compile_unit_run(pool, &pool->units[i]);
    return NULL;
}

/* Every family x allowed type x two widths (32 and the largest below it) x operator (sum, max and
 * an expression, where the family takes one), into specs; quick[i] marks the quick set: each family's
 * first two types (i32, u32) at width 32, a fifth of them. quick_only: the quick set alone. */
static int sweep_collect(wp_spec *specs, bool *quick, bool quick_only) {
    int nf, n = 0;
    const wp_family *const *fams = wp_family_list(&nf);
    static const char *const ops[] = {"sum", "max", "a + b * 2"};
    static const wp_op_kind op_kinds[] = {WP_OP_SUM, WP_OP_MAX, WP_OP_EXPR};
    for (int fi = 0; fi < nf; fi++) {
        const wp_family *f = fams[fi];
        if (!f->template_file) continue; /* emulator-only families compile nothing */
        int small = 0;                   /* the largest allowed width below 32 */
        for (int w = 16; w >= 1 && !small; w /= 2)
            if (f->widths & (1u << __builtin_ctz((unsigned)w))) small = w;
        int widths[2] = {32, small}, types_taken = 0;
        for (int t = 0; t < WP_TYPE_COUNT; t++) {
            if (!(f->types & WP_TBIT(t))) continue;
            if ((f->flags & WP_F_KEYS) && t != WP_F32) continue; /* reduce_by_key: f32 (test_gpu_bykey: all) */
            const bool quick_type = types_taken++ < 2;
            if (quick_only && !quick_type) break;
            for (int wi = 0; wi < (quick_only ? 1 : 2); wi++) {
                if (!widths[wi] || !(f->widths & (1u << __builtin_ctz((unsigned)widths[wi])))) continue;
                for (int oi = 0; oi < (f->flags & WP_F_OP ? 3 : 1); oi++) {
                    if ((f->flags & WP_F_OP) && !(f->ops & WP_OPBIT(op_kinds[oi]))) continue;
                    if (n >= MAX_SPECS) return n;
                    if (make_spec(f, (wp_type)t, widths[wi], 0xffffffffu, ops[oi], ARCH, &specs[n]) == 0)
                        quick[n++] = quick_type && widths[wi] == 32;
                    else
                        CHECKF(0, "spec %s/%s/w%d/%s did not validate", f->name, wp_type_name(t), widths[wi], ops[oi]);
                }
            }
        }
    }
    return n;
}

/* Compiles the specs whose quick flag is `which` on COMPILE_THREADS threads, each checked. */
static void sweep_run(wp_jit *jit, const wp_spec *specs, const bool *quick, int n, bool which) {
    T_CASE("every family x type x width x op compiles");
    static compile_pool pool;
    static wp_spec picked[MAX_SPECS];
    pool = (compile_pool){.jit = jit, .specs = picked};
    for (int i = 0; i < n; i++)
        if (quick[i] == which) picked[pool.n++] = specs[i]; /* a shallow copy: specs keeps them */
    plan_units(&pool);
    pthread_mutex_init(&pool.mu, NULL);
    pthread_t th[COMPILE_THREADS];
    uint64_t t0 = wp_now_ns();
    for (int i = 0; i < COMPILE_THREADS; i++) pthread_create(&th[i], NULL, compile_worker, &pool);
    for (int i = 0; i < COMPILE_THREADS; i++) pthread_join(th[i], NULL);
    double wall = wp_ms_since(t0);
    pthread_mutex_destroy(&pool.mu);
    printf("compiled %d specs (%s) as %d programs in %.1f s on %d threads, %d failed\n", pool.n,
           which ? "the quick set" : "beyond the quick set", pool.n_units, wall / 1e3, COMPILE_THREADS,
           atomic_load(&pool.failed));
    CHECK(pool.n > 50);
}

#endif
