/* test_map.c — transform-reduce ("map") without a GPU: the map grammar (x and y, errors naming
 * "map"), its canonical text and functor, the spec (key, name expression, "op": "dot", which families
 * take it), the emulator (every map family over (x, y) with a map gives the bits it gives without one
 * over the values mapped first), and NVRTC compiles of device_reduce with a map over two inputs (the plain
 * and the batched entry) without spills. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "compile/jit.h"
#include "kernels/data.h"
#include "kernels/expr.h"
#include "kernels/spec.h"
#include "t.h"

static int map_msg(const char *text, wp_type t, bool has_y, char *msg, size_t n) {
    wp_op m;
    wp_err err = {0};
    int rc = wp_map_parse(text, t, has_y, "map", &m, &err);
    if (rc == 0) {
        snprintf(msg, n, "%s", m.text);
        wp_op_free(&m);
        return 0;
    }
    CHECK(err.status == 400 && !strcmp(err.code, "bad_map") && !strcmp(err.field, "map"));
    snprintf(msg, n, "%s", err.msg);
    return -1;
}

static void test_parse(void) {
    T_CASE("parse");
    static const struct {
        const char *in, *canon;
        wp_type t;
        bool has_y;
    } ok[] = {
        {"x*x", "(x * x)", WP_F32, false},
        {"abs(x)", "abs(x)", WP_F32, false},
        {"x > 0 ? 1 : 0", "((x > 0) ? 1 : 0)", WP_I32, false},
        {"x*y", "(x * y)", WP_F64, true},
        {"min(x, y) - max(x, 2.5)", "(min(x, y) - max(x, 2.5))", WP_F32, true},
        {"(x >> 3) & 0xff", "((x >> 3) & 255)", WP_U32, false},
        {"1", "1", WP_I64, false},
    };
    char msg[600];
    for (size_t i = 0; i < WP_ARRAY_LEN(ok); i++) {
        CHECKF(map_msg(ok[i].in, ok[i].t, ok[i].has_y, msg, sizeof msg) == 0 && !strcmp(msg, ok[i].canon), "%s -> %s",
               ok[i].in, msg);
        /* the canonical text parses again to itself */
        char again[600];
        CHECK(map_msg(msg, ok[i].t, true, again, sizeof again) == 0 && !strcmp(again, msg));
    }
    CHECK(map_msg("z*x", WP_F32, true, msg, sizeof msg) == -1 && strstr(msg, "'z'") && strstr(msg, "position 0"));
    CHECK(map_msg("a*b", WP_F32, true, msg, sizeof msg) == -1 && strstr(msg, "'a'"));
    CHECK(map_msg("x*y", WP_F32, false, msg, sizeof msg) == -1 && strstr(msg, "second input"));
    CHECK(map_msg("sum", WP_F32, true, msg, sizeof msg) == -1);
    CHECK(map_msg("", WP_F32, true, msg, sizeof msg) == -1 && strstr(msg, "empty map"));
    CHECK(map_msg("x % 2", WP_F32, true, msg, sizeof msg) == -1 && strstr(msg, "position 2"));
    CHECK(map_msg("x * 0.5", WP_I32, true, msg, sizeof msg) == -1);
    char longer[WP_EXPR_MAX_LEN + 8];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    CHECK(map_msg(longer, WP_F32, true, msg, sizeof msg) == -1);
    /* an operator keeps a and b, and refuses x */
    wp_op op;
    wp_err err = {0};
    CHECK(wp_op_parse("x + b", WP_F32, "op", &op, &err) == -1 && !strcmp(err.code, "bad_op"));
}

static void test_eval_and_cxx(void) {
    T_CASE("eval and cxx");
    wp_op sq, ab, pos, prod;
    wp_err err = {0};
    CHECK(wp_map_parse("x*x", WP_F16, false, "map", &sq, &err) == 0);
    CHECK(wp_map_parse("abs(x)", WP_I32, false, "map", &ab, &err) == 0);
    CHECK(wp_map_parse("x > 0 ? 1 : 0", WP_F32, false, "map", &pos, &err) == 0);
    CHECK(wp_map_parse("x*y", WP_I64, true, "map", &prod, &err) == 0);
    CHECK(!wp_map_uses_y(&sq) && !wp_map_uses_y(&pos) && wp_map_uses_y(&prod));
    /* in the element type: 300 * 300 overflows f16 to +inf; abs(INT_MIN) wraps to INT_MIN */
    CHECK(wp_op_apply(&sq, WP_F16, wp_value_from_double(WP_F16, 300), 0) == 0x7c00);
    CHECK(wp_op_apply(&sq, WP_F16, wp_value_from_double(WP_F16, 3), 0) == wp_value_from_double(WP_F16, 9));
    CHECK(wp_op_apply(&ab, WP_I32, 0x80000000u, 0) == 0x80000000u);
    CHECK(wp_op_apply(&pos, WP_F32, wp_f32_bits(-0.5f), 0) == wp_f32_bits(0.0f));
    CHECK(wp_op_apply(&pos, WP_F32, wp_f32_bits(2.0f), 0) == wp_f32_bits(1.0f));
    CHECK(wp_op_apply(&prod, WP_I64, 7, (uint64_t)-6) == (uint64_t)-42);
    char def[4096];
    CHECK(wp_map_cxx(&prod, def, sizeof def) == 0 && strstr(def, "struct wp_map_expr") &&
          strstr(def, "uses_y = true") && strstr(def, "wp_mul(a, b)"));
    CHECK(wp_map_cxx(&sq, def, sizeof def) == 0 && strstr(def, "uses_y = false"));
    CHECK(wp_map_cxx(&sq, def, 16) == -1);
    wp_op copy;
    CHECK(wp_op_copy(&copy, &prod) == 0 && wp_map_uses_y(&copy) && !strcmp(copy.text, "(x * y)"));
    wp_op_free(&copy);
    wp_op_free(&sq);
    wp_op_free(&ab);
    wp_op_free(&pos);
    wp_op_free(&prod);
}

static int spec_json(const char *json, wp_spec *s, wp_err *err) {
    cJSON *o = cJSON_Parse(json);
    int rc = wp_spec_from_json(o, "sm_90", s, err);
    cJSON_Delete(o);
    return rc;
}

static void test_spec(void) {
    T_CASE("spec");
    wp_spec s, copy;
    wp_err err = {0};
    char key[WP_SPEC_KEY_MAX], name[WP_SPEC_NAME_MAX], prelude[WP_SPEC_PRELUDE_MAX];
    CHECK(spec_json("{\"family\":\"device_reduce\",\"type\":\"f32\",\"op\":\"sum\",\"map\":\"x*x\"}", &s, &err) == 0);
    CHECK(wp_spec_key_text(&s, key, sizeof key) > 0 && strstr(key, "/op=sum/map=(x * x)/"));
    CHECK(wp_spec_name_expr(&s, name, sizeof name, prelude, sizeof prelude) == 0 &&
          strstr(name, "wp_mapped<wp_op_sum<float>, wp_map_expr>") && strstr(prelude, "struct wp_map_expr"));
    CHECK(!s.data.map_y);
    CHECK(wp_spec_copy(&copy, &s) == 0 && copy.data.map.expr && copy.data.map.expr != s.data.map.expr);
    wp_spec_free(&copy);
    wp_spec_free(&s);
    /* a map keeps the signed kernel (no i32 -> u32 sharing): x > 0 differs between them */
    CHECK(spec_json("{\"family\":\"device_reduce\",\"type\":\"i32\",\"map\":\"x > 0 ? 1 : 0\"}", &s, &err) == 0);
    CHECK(wp_data_kernel_type(&s) == WP_I32);
    wp_spec_free(&s);
    CHECK(spec_json("{\"family\":\"device_reduce\",\"type\":\"f64\",\"op\":\"dot\"}", &s, &err) == 0);
    CHECK(s.op.kind == WP_OP_SUM && s.data.map_y && !strcmp(s.data.map.text, "(x * y)"));
    wp_spec_free(&s);
    /* an operator expression and a map side by side in the prelude */
    CHECK(spec_json("{\"family\":\"device_scan\",\"type\":\"i32\",\"op\":\"a - b\",\"map\":\"x*y\"}", &s, &err) == 0);
    CHECK(wp_spec_name_expr(&s, name, sizeof name, prelude, sizeof prelude) == 0 &&
          strstr(name, "wp_mapped<wp_op_expr, wp_map_expr>") && strstr(prelude, "struct wp_op_expr") &&
          strstr(prelude, "struct wp_map_expr"));
    wp_spec_free(&s);
    CHECK(spec_json("{\"family\":\"argmax\",\"type\":\"f32\",\"map\":\"abs(x)\"}", &s, &err) == 0);
    wp_spec_free(&s);
    CHECK(spec_json("{\"family\":\"device_reduce\",\"op\":\"dot\",\"map\":\"x\"}", &s, &err) == -1 &&
          !strcmp(err.field, "map"));
    CHECK(spec_json("{\"family\":\"stencil\",\"type\":\"f32\",\"map\":\"x\"}", &s, &err) == -1 &&
          !strcmp(err.code, "unknown_field") && !strcmp(err.field, "map"));
    CHECK(spec_json("{\"family\":\"device_reduce\",\"map\":7}", &s, &err) == -1 && !strcmp(err.code, "wrong_type"));
    CHECK(spec_json("{\"family\":\"warp_allreduce\",\"op\":\"dot\"}", &s, &err) == -1 && !strcmp(err.field, "op"));
    int n;
    const wp_family *const *fams = wp_family_list(&n);
    int with_map = 0;
    for (int i = 0; i < n; i++) with_map += (fams[i]->flags & WP_F_MAP) != 0;
    CHECK(with_map == 9 && (wp_family_find("device_scan")->flags & WP_F_MAP) &&
          !(wp_family_find("stencil")->flags & WP_F_MAP));
}

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    return z ^ (z >> 31);
}

/* The family's emulator over (x, y) with map m, against it without a map over z = m(x, y): same bytes. */
static void check_emu(const char *family, wp_type t, const char *map, uint64_t n) {
    char json[256];
    snprintf(json, sizeof json, "{\"family\":\"%s\",\"type\":\"%s\",\"map\":\"%s\",\"width\":%d}", family,
             wp_type_name(t), map, !strcmp(family, "warp_reduce") || !strcmp(family, "warp_scan") ? 4 : 32);
    wp_spec s, plain;
    wp_err err = {0};
    if (spec_json(json, &s, &err)) {
        CHECKF(0, "%s: %s", json, err.msg);
        return;
    }
    CHECK(wp_spec_copy(&plain, &s) == 0);
    wp_op_free(&plain.data.map);
    plain.data.map_y = false;
    const size_t es = wp_type_size(t);
    uint8_t *x = malloc(n * es + 8), *y = malloc(n * es + 8), *z = malloc(n * es + 8);
    uint64_t *offsets = malloc((n + 2) * 8), groups = 0, seed = n * 31 + (uint64_t)t;
    for (uint64_t i = 0; i < n; i++) {
        double a = (double)(int)(rng(&seed) % 2001) / 16 - 60, b = (double)(int)(rng(&seed) % 2001) / 16 - 60;
        wp_data_store(t, x, i, wp_value_from_double(t, wp_type_is_int(t) ? (double)(int64_t)a : a));
        wp_data_store(t, y, i, wp_value_from_double(t, wp_type_is_int(t) ? (double)(int64_t)b : b));
        wp_data_store(t, z, i, wp_op_apply(&s.data.map, t, wp_data_load(t, x, i), wp_data_load(t, y, i)));
    }
    for (offsets[0] = 0; offsets[groups] < n; groups++) {
        uint64_t len = rng(&seed) % 70;
        offsets[groups + 1] = offsets[groups] + len > n ? n : offsets[groups] + len;
    }
    wp_data_plan plan;
    s.family->plan(&s, n, groups, &plan);
    uint8_t *out_m = calloc(1, plan.out_bytes + 32), *out_p = calloc(1, plan.out_bytes + 32);
    wp_data_params pm = {.in = (uintptr_t)x,
                         .in2 = (uintptr_t)y,
                         .out = (uintptr_t)out_m,
                         .aux = (uintptr_t)offsets,
                         .n = n,
                         .groups = plan.groups};
    uint64_t ident = 0;
    if ((s.family->flags & WP_F_OP) && wp_op_identity(&s.op, wp_data_acc_type(&s), &ident)) pm.init = ident;
    wp_data_params pp = pm;
    pp.in = (uintptr_t)z;
    pp.in2 = 0;
    pp.out = (uintptr_t)out_p;
    if (plan.grid) {
        s.family->data_emulate(&s, &pm, &plan);
        plain.family->data_emulate(&plain, &pp, &plan);
    }
    CHECKF(!memcmp(out_m, out_p, plan.out_bytes + 16), "%s n=%llu", json, (unsigned long long)n);
    free(out_m);
    free(out_p);
    free(x);
    free(y);
    free(z);
    free(offsets);
    wp_spec_free(&plain);
    wp_spec_free(&s);
}

static void test_emu(void) {
    T_CASE("emulator");
    static const char *const fams[] = {"device_reduce", "device_scan", "warp_reduce", "warp_scan",       "block_reduce",
                                       "block_scan",    "argmin",      "argmax",      "segmented_reduce"};
    static const wp_type types[] = {WP_I32, WP_U64, WP_F32, WP_F64, WP_F16, WP_BF16};
    static const uint64_t sizes[] = {0, 1, 37, 5000};
    for (size_t f = 0; f < WP_ARRAY_LEN(fams); f++)
        for (size_t t = 0; t < WP_ARRAY_LEN(types); t++)
            for (size_t i = 0; i < WP_ARRAY_LEN(sizes); i++) {
                check_emu(fams[f], types[t], "x*y - x", sizes[i]);
                check_emu(fams[f], types[t], "abs(x)", sizes[i]);
            }
}

/* NVRTC (no GPU): device_reduce with a map over two inputs, alone and batched (the entry only a batch of
 * GPU jobs reaches), compiles without spills: the two-input launch bounds leave room for both inputs'
 * vectors in flight. */
static void test_compile(void) {
    T_CASE("nvrtc");
    wp_err err = {0};
    wp_jit *j = wp_jit_open(WP_DEFAULT_TEMPLATES, WP_DEFAULT_CUDA_HOME "/include", &err);
    CHECKF(j != NULL, "%s", err.msg);
    if (!j) return;
    static const char *const specs[] = {
        "{\"family\":\"device_reduce\",\"type\":\"f32\",\"op\":\"dot\"}",
    };
    for (size_t i = 0; i < WP_ARRAY_LEN(specs) + 1; i++) {
        wp_spec s;
        CHECK(spec_json(specs[i < WP_ARRAY_LEN(specs) ? i : 0], &s, &err) == 0);
        s.data.block = 256;
        s.data.batched = i == WP_ARRAY_LEN(specs); /* device_reduce_batch with the dot map */
        wp_artifact a = {0};
        char *log = NULL;
        int rc = wp_jit_compile(j, &s, &a, &log, &err);
        CHECKF(rc == 0 && a.spills == 0, "%s batched=%d: rc %d, spills %d: %s", specs[0], s.data.batched, rc, a.spills,
               rc ? err.msg : "");
        free(log);
        wp_artifact_free(&a);
        wp_spec_free(&s);
    }
    wp_jit_close(j);
}

int main(void) {
    test_parse();
    test_eval_and_cxx();
    test_spec();
    test_emu();
    test_compile();
    return t_done("map");
}
