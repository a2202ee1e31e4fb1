/* test_reduce.c — the data-parallel families on the emulator, through the engine (server/engine/reduce.c):
 * every family × strategy × type × operator (the builtins the type allows and an expression) on
 * n = 0, 1, 31, 32, 33, 1023, 1025, and each family's default on a prime near 10^6.
 *
 * The references here are independent of kernels/: a sequential fold or scan in the type (integers:
 * exact, since every builtin is associative and commutative there) or in double (floats: within a
 * bound of n * eps * sum|x|, or exactly for min/max). On top: strategies that share a combining
 * order (shfl_down, shfl_xor and redux; gmem and smem) must agree bit for bit, argmin/argmax and the
 * NaN rules of min/max are exact, empty input gives the identity, and the errors the engine owns.
 * Bit-exactness against the GPU is tests/gpu/test_gpu_reduce.c's job. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/app.h"
#include "engine/reduce.h"
#include "t.h"

#define PRIME_N 999983
static const uint64_t sizes[] = {0, 1, 31, 32, 33, 1023, 1025};
static const char *const ops[] = {"sum", "prod", "min", "max", "and", "or", "xor", "max(a, b)"};

static wp_app app; /* emu only: no compiler, no cache (keys come from the spec text) */

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Values that keep products finite: integers -3..3 (wrapping is exact anyway), floats in [0.95, 1.05)
 * for prod (a thousand of them stay well inside f16's range) and [-4, 4) otherwise. */
static uint64_t value_for(uint64_t *s, wp_type t, const char *op) {
    uint64_t r = rng(s);
    if (wp_type_is_int(t))
        return wp_value_from_double(t, wp_type_is_signed(t) ? (double)((int)(r % 7) - 3) : (double)(r % 2000));
    double u = (double)(r >> 11) * 0x1p-53;
    return wp_value_from_double(t, strcmp(op, "prod") ? u * 8.0 - 4.0 : u * 0.1 + 0.95);
}

static bool make_spec(const char *family, wp_type t, const char *op, int strategy, int width, int block, bool native,
                      bool exclusive, int radius, wp_spec *s) {
    memset(s, 0, sizeof *s);
    s->family = wp_family_find(family);
    s->type = t;
    s->width = width;
    s->mask = 0xffffffffu;
    s->data = (wp_data_spec){
        .strategy = strategy, .block = block, .native = native, .exclusive = exclusive, .radius = radius};
    snprintf(s->arch, sizeof s->arch, "sm_90");
    wp_err err = {0};
    if (!s->family) return false;
    if ((s->family->flags & WP_F_OP) && wp_op_parse(op, t, "op", &s->op, &err)) return false;
    if (wp_spec_validate(s, &err)) {
        wp_spec_free(s);
        return false;
    }
    return true;
}

typedef struct {
    uint8_t *data;
    uint64_t n;
    wp_buf *in;
} input;

static void input_make(input *in, wp_type t, const char *op, uint64_t n, uint64_t seed) {
    in->n = n;
    in->data = malloc((size_t)n * wp_type_size(t) + 8);
    for (uint64_t i = 0; i < n; i++) wp_data_store(t, in->data, i, value_for(&seed, t, op));
    in->in = wp_buf_alloc(app.emu, (size_t)n * wp_type_size(t), NULL);
    wp_buf_write(in->in, 0, in->data, (size_t)n * wp_type_size(t), NULL);
}
static void input_free(input *in) {
    free(in->data);
    wp_buf_free(in->in);
}

/* ---- references ---- */

static bool op_is_minmax(const wp_spec *s) {
    return s->op.kind == WP_OP_MIN || s->op.kind == WP_OP_MAX || s->op.kind == WP_OP_EXPR;
}
static uint64_t ref_op(const wp_spec *s, uint64_t a, uint64_t b) {
    return wp_op_apply(&s->op, wp_type_is_int(s->type) ? s->type : WP_F64, a, b);
}
static uint64_t ref_elem(const wp_spec *s, const uint8_t *d, uint64_t i) {
    uint64_t x = wp_data_load(s->type, d, i);
    return wp_type_is_int(s->type) ? x : wp_f64_bits(wp_value_to_double(s->type, x));
}

/* got (type t bits) against ref (exact type bits for integers, f64 bits for floats); sum_abs bounds
 * the rounding of a sum or product of `terms` values. */
static bool close_to(const wp_spec *s, uint64_t got, uint64_t ref, double sum_abs, uint64_t terms) {
    wp_type t = s->type;
    if (wp_type_is_int(t)) return (got & wp_type_bitmask(t)) == (ref & wp_type_bitmask(t));
    double g = wp_value_to_double(t, got), r = wp_bits_f64(ref);
    if (isnan(g) || isnan(r)) return isnan(g) && isnan(r);
    if (op_is_minmax(s)) return g == r;
    bool half = t == WP_F16 || t == WP_BF16;
    double eps = t == WP_F64 ? 0x1p-52 : (half && s->data.native) ? (t == WP_F16 ? 0x1p-10 : 0x1p-7) : 0x1p-23;
    double tol =
        (double)(terms + 2) * eps * (sum_abs + fabs(r)) + (half ? fabs(r) * (t == WP_F16 ? 0x1p-10 : 0x1p-7) : 0);
    if (s->op.kind == WP_OP_PROD) tol = fabs(r) * (double)(terms + 2) * eps * 4 + (half ? fabs(r) * 0x1p-6 : 0);
    return fabs(g - r) <= tol + 1e-300;
}

static double abs_of(const wp_spec *s, const uint8_t *d, uint64_t i) {
    return fabs(wp_value_to_double(s->type, wp_data_load(s->type, d, i)));
}

/* ---- one run, checked ---- */

static int run(const wp_spec *s, const input *in, const wp_buf *offsets, uint64_t groups, bool has_init, uint64_t init,
               wp_reduce_result *r, wp_err *err) {
    wp_reduce_job job = {
        .spec = s, .in = in->in, .n = in->n, .offsets = offsets, .groups = groups, .has_init = has_init, .init = init};
    return wp_reduce_run(&app, app.emu, &job, r, err);
}

static uint8_t *out_bytes(const wp_reduce_result *r, wp_type t) {
    size_t len = (size_t)r->out_count * wp_type_size(t);
    uint8_t *p = malloc(len + 8);
    wp_buf_read(r->out, 0, p, len, NULL);
    return p;
}

static int check_value(const wp_spec *s, const input *in, const wp_reduce_result *r) {
    if (!in->n) {
        uint64_t ident;
        bool has = wp_op_identity(&s->op, wp_data_acc_type(s), &ident);
        return r->has_value == has && (!has || r->acc_value == ident);
    }
    uint64_t ref = ref_elem(s, in->data, 0);
    double sum_abs = abs_of(s, in->data, 0);
    for (uint64_t i = 1; i < in->n; i++)
        ref = ref_op(s, ref, ref_elem(s, in->data, i)), sum_abs += abs_of(s, in->data, i);
    return r->has_value && close_to(s, r->value, ref, sum_abs, in->n);
}

/* Per group (warp/block groups or segments): each result against its group's fold. */
static int check_groups(const wp_spec *s, const input *in, const uint64_t *offsets, const wp_reduce_result *r) {
    uint8_t *out = out_bytes(r, s->type);
    uint64_t group = (s->family->flags & WP_F_WIDTH_GROUP) ? (uint64_t)s->width : (uint64_t)s->data.block;
    int ok = 1;
    for (uint64_t g = 0; g < r->out_count && ok; g++) {
        uint64_t from = offsets ? offsets[g] : g * group,
                 to = offsets ? offsets[g + 1] : (from + group < in->n ? from + group : in->n);
        uint64_t got = wp_data_load(s->type, out, g), ident = 0;
        if (from == to) {
            ok = !wp_op_identity(&s->op, wp_data_acc_type(s), &ident) ||
                 got == wp_data_from_acc(s->type, wp_data_acc_type(s), ident);
            continue;
        }
        uint64_t ref = ref_elem(s, in->data, from);
        double sum_abs = abs_of(s, in->data, from);
        for (uint64_t i = from + 1; i < to; i++)
            ref = ref_op(s, ref, ref_elem(s, in->data, i)), sum_abs += abs_of(s, in->data, i);
        ok = close_to(s, got, ref, sum_abs, to - from);
        if (!ok)
            fprintf(stderr, "  group %llu of %s: got 0x%llx\n", (unsigned long long)g, s->family->name,
                    (unsigned long long)got);
    }
    free(out);
    return ok;
}

static int check_scan(const wp_spec *s, const input *in, bool has_init, uint64_t init, const wp_reduce_result *r) {
    uint8_t *out = out_bytes(r, s->type);
    uint64_t group = (s->family->flags & WP_F_WIDTH_GROUP)   ? (uint64_t)s->width
                     : (s->family->flags & WP_F_BLOCK_GROUP) ? (uint64_t)s->data.block
                                                             : (in->n ? in->n : 1);
    uint64_t init_ref = wp_type_is_int(s->type) ? init : wp_f64_bits(wp_value_to_double(s->type, init)), acc = 0,
             ident = 0;
    wp_op_identity(&s->op, wp_type_is_int(s->type) ? s->type : WP_F64, &ident);
    double sum_abs = 0;
    int ok = r->out_count == in->n;
    for (uint64_t i = 0; i < in->n && ok; i++) {
        bool first = i % group == 0;
        uint64_t x = ref_elem(s, in->data, i), ref;
        if (first) sum_abs = has_init ? fabs(wp_value_to_double(s->type, init)) : 0;
        if (s->data.exclusive) {
            ref = first ? (has_init ? init_ref : ident) : acc;
            acc = first ? (has_init ? ref_op(s, init_ref, x) : x) : ref_op(s, acc, x);
        } else {
            acc = first ? (has_init ? ref_op(s, init_ref, x) : x) : ref_op(s, acc, x);
            ref = acc;
        }
        ok = close_to(s, wp_data_load(s->type, out, i), ref, sum_abs + abs_of(s, in->data, i), i % group + 1);
        sum_abs += abs_of(s, in->data, i);
        if (!ok) fprintf(stderr, "  element %llu of %s\n", (unsigned long long)i, s->family->name);
    }
    free(out);
    return ok;
}

/* ---- the matrix ---- */

static void matrix_family(const char *family, const int *widths, int n_widths, const int *blocks, int n_blocks) {
    const wp_family *f = wp_family_find(family);
    char name[96];
    snprintf(name, sizeof name, "%s matrix", family);
    T_CASE(name);
    int n_ops = (f->flags & WP_F_OP) ? (int)WP_ARRAY_LEN(ops) : 1;
    for (int st = 1; st < WP_STRAT_COUNT; st++) {
        if (!(f->strategies & WP_STRATBIT(st))) continue;
        for (int t = 0; t < WP_TYPE_COUNT; t++)
            for (int o = 0; o < n_ops; o++)
                for (int wi = 0; wi < n_widths; wi++)
                    for (int bi = 0; bi < n_blocks; bi++)
                        for (int variant = 0; variant < 3; variant++) {
                            bool half = t == WP_F16 || t == WP_BF16, scan = f->flags & WP_F_SCAN;
                            bool native = variant == 1 && half, exclusive = scan && variant == 2;
                            if (variant == 1 && !half) continue;
                            if (variant == 2 && !scan) continue;
                            wp_spec s;
                            if (!make_spec(family, (wp_type)t, ops[o], st, widths[wi], blocks[bi], native, exclusive, 1,
                                           &s))
                                continue;
                            for (size_t si = 0; si < WP_ARRAY_LEN(sizes); si++) {
                                input in;
                                input_make(&in, (wp_type)t, ops[o], sizes[si], sizes[si] * 31 + (uint64_t)t);
                                bool has_init = scan && (si & 1), ok = true;
                                uint64_t init = value_for(&(uint64_t){si}, (wp_type)t, ops[o]);
                                if (exclusive && s.op.kind == WP_OP_EXPR) has_init = true; /* no identity */
                                wp_reduce_result r;
                                wp_err err = {0};
                                if (run(&s, &in, NULL, 0, has_init, init, &r, &err)) {
                                    ok = false;
                                    fprintf(stderr, "  %s: %s\n", family, err.msg);
                                } else if (f->data_out == WP_DATA_VALUE) {
                                    ok = check_value(&s, &in, &r);
                                } else if (f->data_out == WP_DATA_GROUPS) {
                                    ok = check_groups(&s, &in, NULL, &r);
                                } else {
                                    ok = check_scan(&s, &in, has_init, init, &r);
                                }
                                CHECKF(ok, "%s/%s op=%s %s w%d b%d%s%s n=%llu", family, wp_type_name((wp_type)t),
                                       ops[o], wp_strategy_name(st), widths[wi], blocks[bi], native ? " native" : "",
                                       exclusive ? " exclusive" : "", (unsigned long long)sizes[si]);
                                wp_reduce_result_free(&r);
                                input_free(&in);
                            }
                            wp_spec_free(&s);
                        }
    }
}

/* Strategies with one combining order give the same bits: shfl_down = shfl_xor (= redux), gmem = smem. */
static void test_same_order(void) {
    T_CASE("strategies sharing an order agree bit for bit");
    static const struct {
        const char *family;
        int a, b;
    } pairs[] = {{"device_reduce", WP_STRAT_SHFL_DOWN, WP_STRAT_SHFL_XOR},
                 {"device_reduce", WP_STRAT_GMEM, WP_STRAT_SMEM},
                 {"block_reduce", WP_STRAT_SHFL_DOWN, WP_STRAT_SHFL_XOR},
                 {"block_reduce", WP_STRAT_GMEM, WP_STRAT_SMEM},
                 {"warp_reduce", WP_STRAT_SHFL_DOWN, WP_STRAT_SMEM},
                 {"segmented_reduce", WP_STRAT_SHFL_DOWN, WP_STRAT_SHFL_XOR}};
    for (size_t i = 0; i < WP_ARRAY_LEN(pairs); i++)
        for (wp_type t = WP_F32; t <= WP_BF16; t++) {
            wp_spec sa, sb;
            if (!make_spec(pairs[i].family, t, "a - b", pairs[i].a, 16, 256, false, false, 1, &sa)) continue;
            if (!make_spec(pairs[i].family, t, "a - b", pairs[i].b, 16, 256, false, false, 1, &sb)) {
                wp_spec_free(&sa);
                continue;
            }
            input in;
            input_make(&in, t, "sum", 70001, 99 + (uint64_t)t);
            uint64_t offsets[4] = {0, 1000, 1000, 70001};
            wp_buf *ob = wp_buf_alloc(app.emu, sizeof offsets, NULL);
            wp_buf_write(ob, 0, offsets, sizeof offsets, NULL);
            wp_reduce_result ra, rb;
            bool seg = sa.family->flags & WP_F_SEGMENTS;
            int rc = run(&sa, &in, seg ? ob : NULL, seg ? 3 : 0, false, 0, &ra, NULL) |
                     run(&sb, &in, seg ? ob : NULL, seg ? 3 : 0, false, 0, &rb, NULL);
            bool same = rc == 0 && ra.value == rb.value && ra.out_count == rb.out_count;
            if (same && ra.out) {
                uint8_t *a = out_bytes(&ra, t), *b = out_bytes(&rb, t);
                same = !memcmp(a, b, (size_t)ra.out_count * wp_type_size(t));
                free(a);
                free(b);
            }
            CHECKF(same, "%s %s vs %s on %s", pairs[i].family, wp_strategy_name(pairs[i].a),
                   wp_strategy_name(pairs[i].b), wp_type_name(t));
            wp_reduce_result_free(&ra);
            wp_reduce_result_free(&rb);
            wp_buf_free(ob);
            input_free(&in);
            wp_spec_free(&sa);
            wp_spec_free(&sb);
        }
}

static void test_segmented(void) {
    T_CASE("segmented_reduce");
    for (wp_type t = 0; t < WP_TYPE_COUNT; t++)
        for (int o = 0; o < (int)WP_ARRAY_LEN(ops); o++) {
            wp_spec s;
            if (!make_spec("segmented_reduce", t, ops[o], 0, 32, 256, false, false, 1, &s)) continue;
            input in;
            input_make(&in, t, ops[o], 1025, 5 + (uint64_t)o);
            uint64_t offsets[] = {0, 0, 1, 33, 33, 100, 1025};
            uint64_t groups = WP_ARRAY_LEN(offsets) - 1;
            wp_buf *ob = wp_buf_alloc(app.emu, sizeof offsets, NULL);
            wp_buf_write(ob, 0, offsets, sizeof offsets, NULL);
            wp_reduce_result r;
            bool ok = run(&s, &in, ob, groups, false, 0, &r, NULL) == 0 && r.out_count == groups &&
                      check_groups(&s, &in, offsets, &r);
            CHECKF(ok, "segmented %s op=%s", wp_type_name(t), ops[o]);
            wp_reduce_result_free(&r);
            wp_buf_free(ob);
            input_free(&in);
            wp_spec_free(&s);
        }
}

static void test_arg(void) {
    T_CASE("argmin/argmax: value and first index, NaN only when all are NaN");
    for (int fam = 0; fam < 2; fam++)
        for (wp_type t = 0; t < WP_TYPE_COUNT; t++)
            for (size_t si = 1; si < WP_ARRAY_LEN(sizes); si++) {
                bool max = fam == 1;
                wp_spec s;
                if (!make_spec(max ? "argmax" : "argmin", t, NULL, 0, 32, 256, false, false, 1, &s)) continue;
                input in;
                input_make(&in, t, "sum", sizes[si], 17 * si + (uint64_t)t);
                if (wp_type_is_float(t) && in.n > 3) { /* a NaN first, ties later */
                    wp_data_store(t, in.data, 0, wp_value_from_double(t, NAN));
                    wp_data_store(t, in.data, in.n - 1, wp_data_load(t, in.data, in.n / 2));
                    wp_buf_write(in.in, 0, in.data, (size_t)in.n * wp_type_size(t), NULL);
                }
                uint64_t best = 0;
                for (uint64_t i = 1; i < in.n; i++) {
                    double x = wp_value_to_double(t, wp_data_load(t, in.data, i)),
                           b = wp_value_to_double(t, wp_data_load(t, in.data, best));
                    int c = wp_value_cmp(t, wp_data_load(t, in.data, i), wp_data_load(t, in.data, best));
                    if ((isnan(b) && !isnan(x)) || (!isnan(x) && !isnan(b) && (max ? c > 0 : c < 0))) best = i;
                }
                wp_reduce_result r;
                bool ok = run(&s, &in, NULL, 0, false, 0, &r, NULL) == 0 && r.has_value && r.index == (int64_t)best &&
                          r.value == wp_data_load(t, in.data, best);
                CHECKF(ok, "%s %s n=%llu: index %lld, want %llu", s.family->name, wp_type_name(t),
                       (unsigned long long)in.n, (long long)r.index, (unsigned long long)best);
                input_free(&in);
                wp_spec_free(&s);
            }
}

/* min/max follow fminf/fmaxf (kernels/expr.h): a NaN is skipped unless every value is NaN. The atomic
 * strategy starts from the identity, so all-NaN gives the identity there (-inf for max). */
static void test_nan_minmax(void) {
    T_CASE("min/max skip NaN, all-NaN gives NaN");
    for (int all = 0; all < 2; all++)
        for (int strat = 1; strat < WP_STRAT_COUNT; strat++) {
            wp_spec s;
            if (!make_spec("device_reduce", WP_F32, "max", strat, 32, 256, false, false, 1, &s)) continue;
            input in;
            input_make(&in, WP_F32, "sum", 5000, 3);
            for (uint64_t i = 0; i < in.n; i++)
                if (all || i % 3 == 0) wp_data_store(WP_F32, in.data, i, wp_value_from_double(WP_F32, NAN));
            wp_data_store(WP_F32, in.data, 4001, wp_value_from_double(WP_F32, all ? NAN : 100.0));
            wp_buf_write(in.in, 0, in.data, in.n * 4, NULL);
            wp_reduce_result r;
            bool ok = run(&s, &in, NULL, 0, false, 0, &r, NULL) == 0;
            double v = wp_value_to_double(WP_F32, r.value);
            double want_all = strat == WP_STRAT_ATOMIC ? -INFINITY : NAN;
            CHECKF(ok && (all ? (isnan(want_all) ? isnan(v) : v == want_all) : v == 100.0), "max %s all_nan=%d: %g",
                   wp_strategy_name(strat), all, v);
            input_free(&in);
            wp_spec_free(&s);
        }
}

static void test_stencil_generate(void) {
    T_CASE("stencil");
    for (wp_type t = WP_F32; t <= WP_BF16; t++)
        for (int radius = 1; radius <= WP_STENCIL_MAX_RADIUS; radius++) {
            wp_spec s;
            if (!make_spec("stencil", t, NULL, 0, 32, 256, false, false, radius, &s)) continue;
            input in;
            input_make(&in, t, "sum", 1025, (uint64_t)radius);
            wp_reduce_result r;
            bool ok = run(&s, &in, NULL, 0, false, 0, &r, NULL) == 0 && r.out_count == in.n;
            uint8_t *out = ok ? out_bytes(&r, t) : NULL;
            for (uint64_t i = 0; ok && i < in.n; i++) {
                double want = 0, got = wp_value_to_double(t, wp_data_load(t, out, i));
                if (i >= (uint64_t)radius && i + (uint64_t)radius < in.n)
                    for (int k = -radius; k <= radius; k++)
                        want += wp_value_to_double(t, wp_data_load(t, in.data, i + (uint64_t)k));
                want /= 2 * radius + 1;
                ok = fabs(got - want) <= (t == WP_F32 || t == WP_F64 ? 1e-5 : 0.03) * (1 + fabs(want));
            }
            CHECKF(ok, "stencil %s r%d", wp_type_name(t), radius);
            free(out);
            wp_reduce_result_free(&r);
            input_free(&in);
            wp_spec_free(&s);
        }
    T_CASE("generate");
    for (wp_type t = 0; t < WP_TYPE_COUNT; t++) {
        wp_spec s;
        if (!make_spec("generate", t, NULL, 0, 32, 256, false, false, 1, &s)) continue;
        for (int kind = 0; kind < 3; kind++) {
            wp_reduce_job job = {
                .spec = &s, .n = 3000, .gen_kind = kind, .seed = 11, .constant = wp_value_from_double(t, 7)};
            wp_reduce_result r;
            bool ok = wp_reduce_run(&app, app.emu, &job, &r, NULL) == 0 && r.out_count == 3000;
            uint8_t *out = ok ? out_bytes(&r, t) : NULL;
            for (uint64_t i = 0; ok && i < 3000; i++) {
                double v = wp_value_to_double(t, wp_data_load(t, out, i));
                ok = kind == WP_GEN_IOTA ? wp_data_load(t, out, i) == wp_generate_value(t, kind, 11, 0, i) &&
                                               (i > 256 || v == (double)i)
                     : kind == WP_GEN_RANDOM ? (wp_type_is_int(t) ? v >= 0 && v < 1000 : v >= 0 && v <= 1)
                                             : v == 7;
            }
            CHECKF(ok, "generate %s kind %d", wp_type_name(t), kind);
            free(out);
            wp_reduce_result_free(&r);
        }
        wp_spec_free(&s);
    }
}

/* Each family's default on a prime near 10^6, against the references. */
static void test_prime(void) {
    T_CASE("n = 999983");
    static const char *const families[] = {"device_reduce", "device_scan", "warp_reduce",
                                           "block_reduce",  "warp_scan",   "block_scan"};
    static const wp_type types[] = {WP_I32, WP_U64, WP_F32, WP_F64, WP_F16};
    for (size_t fi = 0; fi < WP_ARRAY_LEN(families); fi++)
        for (size_t ti = 0; ti < WP_ARRAY_LEN(types); ti++) {
            wp_spec s;
            if (!make_spec(families[fi], types[ti], "sum", 0, 16, 256, false, false, 1, &s)) continue;
            input in;
            input_make(&in, types[ti], "sum", PRIME_N, 1234 + ti);
            wp_reduce_result r;
            bool ok = run(&s, &in, NULL, 0, false, 0, &r, NULL) == 0;
            if (ok)
                ok = s.family->data_out == WP_DATA_VALUE    ? check_value(&s, &in, &r)
                     : s.family->data_out == WP_DATA_GROUPS ? check_groups(&s, &in, NULL, &r)
                                                            : check_scan(&s, &in, false, 0, &r);
            CHECKF(ok, "%s %s n=%d", families[fi], wp_type_name(types[ti]), PRIME_N);
            wp_reduce_result_free(&r);
            input_free(&in);
            wp_spec_free(&s);
        }
}

static void test_errors(void) {
    T_CASE("errors");
    wp_spec s;
    wp_err err = {0};
    CHECK(!make_spec("device_reduce", WP_F32, "sum", WP_STRAT_REDUX, 32, 256, false, false, 1, &s));
    CHECK(!make_spec("device_reduce", WP_I32, "a + b", WP_STRAT_ATOMIC, 32, 256, false, false, 1, &s));
    CHECK(!make_spec("device_scan", WP_I32, "sum", WP_STRAT_GMEM, 32, 256, false, false, 1, &s));
    CHECK(!make_spec("device_reduce", WP_I32, "sum", 0, 32, 48, false, false, 1, &s)); /* block not a power of two */
    CHECK(!make_spec("stencil", WP_I32, NULL, 0, 32, 256, false, false, 1, &s));       /* floats only */
    CHECK(make_spec("device_scan", WP_I32, "a - b", 0, 32, 256, false, true, 1, &s));
    input in;
    input_make(&in, WP_I32, "sum", 10, 1);
    wp_reduce_result r;
    CHECK(run(&s, &in, NULL, 0, false, 0, &r, &err) == -1 && err.status == 400 && !strcmp(err.code, "init_required"));
    CHECK(run(&s, &in, NULL, 0, true, 5, &r, &err) == 0); /* with an init it runs */
    wp_reduce_result_free(&r);
    wp_spec_free(&s);
    /* a buffer too small for n */
    CHECK(make_spec("device_reduce", WP_I32, "sum", 0, 32, 256, false, false, 1, &s));
    in.n = 11;
    CHECK(run(&s, &in, NULL, 0, false, 0, &r, &err) == -1 && err.status == 400);
    in.n = 10;
    input_free(&in);
    wp_spec_free(&s);
    /* key text carries strategy and block */
    CHECK(make_spec("device_reduce", WP_F16, "max", WP_STRAT_SMEM, 32, 128, true, false, 1, &s));
    char key[256];
    CHECK(wp_spec_key_text(&s, key, sizeof key) > 0 &&
          !strcmp(key, "device_reduce/f16/op=max/smem/b128/acc=native/sm_90"));
    wp_spec_free(&s);
}

/* docs/semantics.md's device_reduce order, written out here independently of kernels/reduce.c: tiles
 * of 4·BLOCK vectors, block b taking tiles b, b + G, ..; thread t the vectors t + u·BLOCK of a tile;
 * shfl_down block combine (tree per warp, tree over warps); the last block folding partials t,
 * t + BLOCK, ... The emulator (on several CPU threads for inputs this big) must give the same bits,
 * f32 sum, for grids of one tile per block, of several (n = 2^22 + 7 at block 32 gives G = 2048) and
 * a partial last vector. */
static float tree_f32(float *v, int valid) {
    int p = 1;
    while (p < valid) p *= 2;
    for (int o = p / 2; o >= 1; o /= 2)
        for (int i = 0; i < o; i++)
            if (i + o < valid) v[i] = v[i] + v[i + o];
    return v[0];
}
static float block_combine_f32(float *v, int block, int valid) {
    if (block <= 32) return tree_f32(v, valid);
    float w[32];
    int warps = (valid + 31) / 32;
    for (int k = 0; k < warps; k++) w[k] = tree_f32(v + 32 * k, valid - 32 * k < 32 ? valid - 32 * k : 32);
    return tree_f32(w, warps);
}
static float order_ref_f32(const float *x, uint64_t n, unsigned block) {
    const uint64_t V = 4, nvec = n / V, nv = (n + V - 1) / V, tile = 4ull * block, tiles = (nv + tile - 1) / tile;
    uint64_t g = tiles;
    if (g > 1024) {
        g /= 16;
        g = g < 1024 ? 1024 : g > 4096 ? 4096 : g;
    }
    float *part = calloc(g, sizeof *part), *v = calloc(block, sizeof *v);
    for (uint64_t b = 0; b < g; b++) {
        for (unsigned t = 0; t < block; t++) {
            bool has = false;
            float acc = 0;
            for (uint64_t base = b * tile + t; base < nvec; base += g * tile)
                for (uint64_t k = base; k < base + tile && k < nvec; k += block)
                    for (uint64_t i = k * V; i < k * V + V; i++) acc = has ? acc + x[i] : x[i], has = true;
            if ((nvec % tile) % block == t && (nvec / tile) % g == b)
                for (uint64_t i = nvec * V; i < n; i++) acc = has ? acc + x[i] : x[i], has = true;
            v[t] = acc;
        }
        uint64_t left = nv - b * tile;
        part[b] = block_combine_f32(v, (int)block, left < block ? (int)left : (int)block);
    }
    float r = part[0];
    if (g > 1) {
        for (unsigned t = 0; t < block && t < g; t++) {
            v[t] = part[t];
            for (uint64_t i = t + block; i < g; i += block) v[t] = v[t] + part[i];
        }
        r = block_combine_f32(v, (int)block, g < block ? (int)g : (int)block);
    }
    free(part);
    free(v);
    return r;
}

/* One f32 sum on emu: the spec names `block` (0: none, the family picks), the result must report
 * want_block and equal the documented order at want_block bit for bit. */
static void order_case(uint64_t n, int block, unsigned want_block, uint64_t seed) {
    wp_spec s;
    CHECK(make_spec("device_reduce", WP_F32, "sum", WP_STRAT_SHFL_DOWN, 32, block, false, false, 1, &s));
    input in;
    input_make(&in, WP_F32, "sum", n, seed);
    wp_reduce_result r;
    bool ok = run(&s, &in, NULL, 0, false, 0, &r, NULL) == 0;
    float want = order_ref_f32((const float *)in.data, in.n, want_block);
    uint32_t want_bits;
    memcpy(&want_bits, &want, 4);
    CHECKF(ok && r.block == want_block, "n=%llu: block %u, want %u", (unsigned long long)n, r.block, want_block);
    CHECKF(ok && r.value == want_bits, "n=%llu block %u: emu 0x%llx, documented order 0x%x", (unsigned long long)n,
           want_block, (unsigned long long)r.value, want_bits);
    input_free(&in);
    wp_spec_free(&s);
}

static void test_device_reduce_order(void) {
    T_CASE("device_reduce follows the documented order (f32 sum, bit for bit)");
    static const struct {
        uint64_t n;
        unsigned block;
    } cases[] = {{1000003, 256}, {(1u << 22) + 7, 32}, {(1u << 22) + 6, 64}, {4097, 256}, {5, 256}};
    for (size_t k = 0; k < WP_ARRAY_LEN(cases); k++)
        order_case(cases[k].n, (int)cases[k].block, cases[k].block, 11 + k);
}

/* With no block in the request, device_reduce takes its block from the input's size (docs/semantics.md:
 * 256 to 16 KiB, 1024 to 64 KiB, 256 to 1 MiB, 1024 to 16 MiB, 512 above; restated here, not taken from
 * kernels/data.c), reports it, and combines in that block's documented order; a named block is kept. */
static void test_device_reduce_block_auto(void) {
    T_CASE("device_reduce picks its block by size when none is named");
    static const struct {
        uint64_t n;
        unsigned block;
    } cases[] = {{5, 256},      {4096, 256},    {4097, 1024},       {16384, 1024},         {16385, 256},
                 {262144, 256}, {262145, 1024}, {(1u << 22), 1024}, {(1u << 22) + 1, 512}, {(1u << 22) + 4099, 512}};
    for (size_t k = 0; k < WP_ARRAY_LEN(cases); k++) order_case(cases[k].n, 0, cases[k].block, 40 + k);
    /* bytes, not elements: 2049 f64 are 16392 bytes (block 1024); a named block stays */
    wp_spec s;
    CHECK(make_spec("device_reduce", WP_F64, "max", WP_STRAT_AUTO, 32, 0, false, false, 1, &s));
    input in;
    input_make(&in, WP_F64, "max", 2049, 7);
    wp_reduce_result r;
    CHECK(run(&s, &in, NULL, 0, false, 0, &r, NULL) == 0 && r.block == 1024);
    wp_spec_free(&s);
    CHECK(make_spec("device_reduce", WP_F64, "max", WP_STRAT_AUTO, 32, 128, false, false, 1, &s));
    CHECK(run(&s, &in, NULL, 0, false, 0, &r, NULL) == 0 && r.block == 128);
    wp_spec_free(&s);
    input_free(&in);
}

int main(void) {
    app.emu = wp_backend_emu_open();
    app.preferred = app.emu;
    app.max_elements = 1ull << 30;
    snprintf(app.arch, sizeof app.arch, "sm_90");
    static const int w32[] = {32}, widths[] = {1, 4, 32}, b256[] = {256}, blocks[] = {32, 256, 1024};
    matrix_family("device_reduce", w32, 1, b256, 1);
    matrix_family("device_scan", w32, 1, b256, 1);
    matrix_family("warp_reduce", widths, 3, b256, 1);
    matrix_family("warp_scan", widths, 3, b256, 1);
    matrix_family("block_reduce", w32, 1, blocks, 3);
    matrix_family("block_scan", w32, 1, blocks, 3);
    test_same_order();
    test_device_reduce_order();
    test_device_reduce_block_auto();
    test_segmented();
    test_arg();
    test_nan_minmax();
    test_stencil_generate();
    test_prime();
    test_errors();
    wp_backend_close(app.emu);
    return t_done("reduce");
}
