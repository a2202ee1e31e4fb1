/* test_bykey.c — reduce_by_key on the emulator, through the engine (server/engine/bykey.c): every key
 * type × value type × operator the type allows (and an expression), on n from 0 to past several tiles
 * at blocks 32 and 256, with runs of 1, 1..7, about 1000 and one run over everything.
 *
 * The reference is a sequential walk: a run is a maximal stretch of equal keys (bits), its value the
 * left fold of its elements in the accumulator type. The operators and values are chosen so that any
 * order gives the same bits (integers: builtins wrap exactly; floats: small whole numbers, whose sums
 * stay exact, and min/max), so the kernel's order (kernels/bykey.c) must match it exactly. Also:
 * keys compare by their bits (a key coming back is a new run), and the errors the engine owns. The
 * order itself against the GPU is tests/gpu/test_gpu_bykey.c's job. */
#include <stdlib.h>
#include <string.h>

#include "engine/app.h"
#include "engine/bykey.h"
#include "t.h"

static wp_app app; /* emu only: no compiler, no cache */

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static bool make_spec(wp_type t, wp_type keys, const char *op, int block, wp_spec *s) {
    memset(s, 0, sizeof *s);
    s->family = wp_family_find("reduce_by_key");
    s->type = t;
    s->width = 32;
    s->mask = 0xffffffffu;
    s->data = (wp_data_spec){.block = block, .keys = keys};
    snprintf(s->arch, sizeof s->arch, "sm_90");
    wp_err err = {0};
    if (!s->family || wp_op_parse(op, t, "op", &s->op, &err)) return false;
    if (wp_spec_validate(s, &err)) {
        wp_spec_free(s);
        return false;
    }
    return true;
}

/* Keys with runs of about `len` (0: random 1..7; -1: one run), values small whole numbers. */
static void fill(wp_type kt, wp_type t, uint64_t n, int len, uint64_t seed, void *keys, void *vals) {
    uint64_t s = seed, key = rng(&s), left = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (len >= 0 && left == 0) {
            key = rng(&s) % 5 == 0 ? key + 1 : rng(&s); /* sometimes a neighbouring key */
            left = len > 0 ? (uint64_t)len - 1 + rng(&s) % 3 : 1 + rng(&s) % 7;
        }
        if (left) left--;
        wp_data_store(kt, keys, i, key & wp_type_bitmask(kt));
        const int64_t v =
            wp_type_is_signed(t) || wp_type_is_float(t) ? (int64_t)(rng(&s) % 9) - 4 : (int64_t)(rng(&s) % 9);
        wp_data_store(t, vals, i, wp_value_from_double(t, (double)v));
    }
}

/* The sequential reference: runs, their keys and values (bits of t). */
static uint64_t reference(const wp_spec *s, uint64_t n, const void *keys, const void *vals, void *rk, void *rv) {
    const wp_type kt = s->data.keys, t = s->type, acc = wp_data_acc_type(s);
    uint64_t runs = 0, r = 0;
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t k = wp_data_load(kt, keys, i), x = wp_data_to_acc(t, acc, wp_data_load(t, vals, i));
        if (i == 0 || k != wp_data_load(kt, keys, i - 1)) {
            if (i) wp_data_store(t, rv, runs - 1, wp_data_from_acc(t, acc, r));
            wp_data_store(kt, rk, runs++, k);
            r = x;
        } else {
            r = wp_op_apply(&s->op, acc, r, x);
        }
    }
    if (n) wp_data_store(t, rv, runs - 1, wp_data_from_acc(t, acc, r));
    return runs;
}

static void run_case(wp_type t, wp_type kt, const char *op, int block, uint64_t n, int len) {
    wp_spec s;
    if (!make_spec(t, kt, op, block, &s)) {
        CHECKF(0, "spec %s/%s/%s", wp_type_name(t), wp_type_name(kt), op);
        return;
    }
    const size_t vb = wp_type_size(t), kb = wp_type_size(kt), cap = (size_t)(n ? n : 1);
    wp_err err = {0};
    wp_buf *keys = wp_buf_alloc(app.emu, cap * kb, &err), *vals = wp_buf_alloc(app.emu, cap * vb, &err);
    wp_buf *ok = wp_buf_alloc(app.emu, cap * kb, &err), *ov = wp_buf_alloc(app.emu, cap * vb, &err);
    void *rk = calloc(cap, kb), *rv = calloc(cap, vb);
    fill(kt, t, n, len, n * 31 + (uint64_t)len, wp_buf_host(keys), wp_buf_host(vals));
    const uint64_t want = reference(&s, n, wp_buf_host(keys), wp_buf_host(vals), rk, rv);
    wp_bykey_result res;
    const wp_bykey_job job = {.spec = &s, .keys = keys, .in = vals, .n = n, .out_keys = ok, .out_values = ov};
    const int rc = wp_bykey_run(&app, app.emu, &job, &res, &err);
    const bool same = rc == 0 && res.runs == want && !memcmp(wp_buf_host(ok), rk, (size_t)want * kb) &&
                      !memcmp(wp_buf_host(ov), rv, (size_t)want * vb);
    CHECKF(same, "%s keys %s op %s block %d n %llu len %d: rc %d runs %llu want %llu (%s)", wp_type_name(t),
           wp_type_name(kt), op, block, (unsigned long long)n, len, rc, (unsigned long long)res.runs,
           (unsigned long long)want, err.msg);
    free(rk);
    free(rv);
    wp_buf_free(keys);
    wp_buf_free(vals);
    wp_buf_free(ok);
    wp_buf_free(ov);
    wp_spec_free(&s);
}

static void test_matrix(void) {
    T_CASE("matrix");
    static const wp_type keys[] = {WP_I32, WP_U32, WP_I64, WP_U64};
    static const char *const int_ops[] = {"sum", "prod", "min", "max", "and", "or", "xor", "max(a, b)"};
    static const char *const float_ops[] = {"sum", "min", "max", "max(a, b)"};
    for (int t = 0; t < WP_TYPE_COUNT; t++) {
        const bool integer = wp_type_is_int((wp_type)t);
        const int n_ops = integer ? 8 : 4;
        for (int o = 0; o < n_ops; o++) {
            const wp_type kt = keys[(t + o) % 4];
            const char *op = integer ? int_ops[o] : float_ops[o];
            run_case((wp_type)t, kt, op, 32, 0, 0);
            run_case((wp_type)t, kt, op, 32, 1, 0);
            run_case((wp_type)t, kt, op, 32, 513, 0); /* one element past a tile of 512 */
            run_case((wp_type)t, kt, op, 32, 3001, 1);
            run_case((wp_type)t, kt, op, 256, 9000, 1000);
            run_case((wp_type)t, kt, op, 32, 2600, -1); /* one run over five tiles */
        }
    }
    /* a long run across many tiles, and runs of one */
    run_case(WP_F32, WP_I32, "sum", 32, 40000, 5000);
    run_case(WP_I64, WP_U64, "sum", 256, 20000, 1);
}

/* Keys compare by bits: a key that comes back starts a new run; -1 and 0xffffffff are both "all ones". */
static void test_runs_by_bits(void) {
    T_CASE("runs by bits");
    wp_spec s;
    CHECK(make_spec(WP_I32, WP_I32, "sum", 32, &s));
    const int32_t k[] = {5, 5, -1, -1, 5, 7, 7, 7};
    const int32_t v[] = {1, 2, 3, 4, 5, 6, 7, 8};
    wp_err err = {0};
    wp_buf *keys = wp_buf_alloc(app.emu, sizeof k, &err), *vals = wp_buf_alloc(app.emu, sizeof v, &err);
    wp_buf *ok = wp_buf_alloc(app.emu, sizeof k, &err), *ov = wp_buf_alloc(app.emu, sizeof v, &err);
    memcpy(wp_buf_host(keys), k, sizeof k);
    memcpy(wp_buf_host(vals), v, sizeof v);
    wp_bykey_result res;
    const wp_bykey_job job = {.spec = &s, .keys = keys, .in = vals, .n = 8, .out_keys = ok, .out_values = ov};
    CHECK(wp_bykey_run(&app, app.emu, &job, &res, &err) == 0 && res.runs == 4);
    const int32_t *rk = wp_buf_host(ok), *rv = wp_buf_host(ov);
    CHECK(rk[0] == 5 && rk[1] == -1 && rk[2] == 5 && rk[3] == 7);
    CHECK(rv[0] == 3 && rv[1] == 7 && rv[2] == 5 && rv[3] == 21);
    /* errors the engine owns: an output too small, a missing input */
    wp_bykey_job small = job;
    small.n = 9;
    CHECK(wp_bykey_run(&app, app.emu, &small, &res, &err) == -1 && err.status == 400);
    wp_bykey_job none = job;
    none.keys = NULL;
    CHECK(wp_bykey_run(&app, app.emu, &none, &res, &err) == -1 && err.status == 400 && !strcmp(err.field, "keys"));
    wp_buf_free(keys);
    wp_buf_free(vals);
    wp_buf_free(ok);
    wp_buf_free(ov);
    wp_spec_free(&s);
}

int main(void) {
    app.emu = wp_backend_emu_open();
    app.preferred = app.emu;
    app.max_elements = 1ull << 30;
    snprintf(app.arch, sizeof app.arch, "sm_90");
    test_matrix();
    test_runs_by_bits();
    wp_backend_close(app.emu);
    return t_done("bykey");
}
