/* test_stats.c — device_reduce's statistics and norms (kernels/stats.h) on the emulator, through the
 * engine: every statistic × type × tree strategy on n = 0, 1, 3, 33, 1025, 65537 against a reference
 * written here (long double, two passes), within the bound docs/api.md states for the answer's type;
 * shfl_down and shfl_xor (one combining order) bit for bit; data where naive f32 sums fail (an offset
 * of 1e6, mixed magnitudes); the host combine of two halves (what a sharded buffer does); the empty,
 * ddof, NaN, -0 and f64 overflow/underflow rules; the spec (key, kernel name, refusals). Bit-exactness
 * against the GPU is tests/gpu/test_gpu_stats.c's job. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/app.h"
#include "engine/reduce.h"
#include "kernels/stats.h"
#include "t.h"

static const uint64_t sizes[] = {0, 1, 3, 33, 1025, 65537};
static const int all_stats[] = {WP_STAT_MEAN,  WP_STAT_VAR,     WP_STAT_STD,          WP_STAT_NORM1,
                                WP_STAT_NORM2, WP_STAT_NORMINF, WP_STAT_COUNT_NONZERO};
static wp_app app; /* emu only */

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int spec_of(const char *json, wp_spec *s, wp_err *err) {
    cJSON *o = cJSON_Parse(json);
    int rc = wp_spec_from_json(o, "sm_90", s, err);
    cJSON_Delete(o);
    return rc;
}

/* The answer (as a double) of stat over host data through the engine on emu; acc gets the accumulator. */
static double run_stat(wp_type t, int stat, int strategy, const void *host, uint64_t n, int ddof, uint8_t *acc) {
    char json[160];
    snprintf(json, sizeof json, "{\"family\":\"device_reduce\",\"type\":\"%s\",\"op\":\"%s\",\"strategy\":\"%s\"}",
             wp_type_name(t), wp_stat_name(stat), wp_strategy_name(strategy));
    wp_spec s;
    wp_err err = {0};
    if (spec_of(json, &s, &err)) {
        CHECKF(0, "%s: %s", json, err.msg);
        return NAN;
    }
    size_t bytes = (size_t)n * wp_type_size(t);
    wp_buf *in = wp_buf_alloc(app.emu, bytes ? bytes : 1, &err);
    CHECK(in && !wp_buf_write(in, 0, host, bytes, &err));
    wp_reduce_job job = {.spec = &s, .in = in, .n = n};
    wp_reduce_result r = {0};
    double v = NAN;
    if (wp_reduce_run(&app, app.emu, &job, &r, &err) == 0) {
        CHECK(r.has_value && r.deterministic);
        if (acc) memcpy(acc, r.stat_acc, WP_STAT_ACC_BYTES);
        v = wp_value_to_double(wp_stat_value_type(stat, t), wp_stat_finish(stat, t, r.stat_acc, ddof));
    } else {
        CHECKF(0, "%s: %s", json, err.msg);
    }
    wp_reduce_result_free(&r);
    wp_buf_free(in);
    wp_spec_free(&s);
    return v;
}

/* An independent reference: long double, two passes, numpy's rules. */
static double ref_stat(wp_type t, int stat, const void *host, uint64_t n, int ddof) {
    long double sum = 0, abs_sum = 0, sq = 0, big = 0, cnt = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t bits = wp_data_load(t, host, i);
        long double x = wp_value_to_double(t, bits);
        sum += x, abs_sum += fabsl(x), sq += x * x;
        if (fabsl(x) > big) big = fabsl(x);
        cnt += wp_type_is_float(t) ? x != 0 || isnan(x) : bits != 0;
    }
    long double mean = sum / (long double)n, m2 = 0;
    for (uint64_t i = 0; i < n; i++) {
        long double d = (long double)wp_value_to_double(t, wp_data_load(t, host, i)) - mean;
        m2 += d * d;
    }
    switch (stat) {
    case WP_STAT_MEAN:
        return n ? (double)mean : NAN;
    case WP_STAT_VAR:
        return (long double)n - ddof > 0 ? (double)(m2 / ((long double)n - ddof)) : NAN;
    case WP_STAT_STD:
        return (long double)n - ddof > 0 ? (double)sqrtl(m2 / ((long double)n - ddof)) : NAN;
    case WP_STAT_NORM1:
        return (double)abs_sum;
    case WP_STAT_NORM2:
        return (double)sqrtl(sq);
    case WP_STAT_NORMINF:
        return (double)big;
    default:
        return (double)cnt;
    }
}

/* docs/api.md's bound: 2^-22 relative for f32 answers, 2^-40 for f64 ones (integers included), one ulp
 * of f16 (2^-10) and bf16 (2^-7) for theirs; count_nonzero exact. */
static bool within(wp_type t, int stat, double got, double ref) {
    if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got);
    if (stat == WP_STAT_COUNT_NONZERO) return got == ref;
    wp_type vt = wp_stat_value_type(stat, t);
    if (vt == WP_F16 && fabs(ref) > 65504) return isinf(got); /* past the answer type's range, as numpy's */
    double rel = vt == WP_F32 ? 0x1p-22 : vt == WP_F16 ? 0x1p-10 : vt == WP_BF16 ? 0x1p-7 : 0x1p-40;
    return fabs(got - ref) <= rel * fabs(ref) + (stat == WP_STAT_MEAN || stat == WP_STAT_VAR ? 1e-300 : 0);
}

static uint64_t elem(uint64_t *s, wp_type t) {
    uint64_t r = rng(s);
    if (r % 9 == 0) return 0;
    if (wp_type_is_int(t))
        return wp_value_from_double(t, wp_type_is_signed(t) ? (double)((int64_t)(r % 200001) - 100000)
                                                            : (double)(r % 200001));
    double u = (double)(r >> 11) * 0x1p-53;
    double offset = t == WP_F16 ? 50 : t == WP_BF16 ? 200 : 1e4;
    return wp_value_from_double(t, offset + (u - 0.5) * 8);
}

static void test_every_stat_type_strategy(void) {
    T_CASE("every statistic x type x strategy against the reference");
    uint64_t seed = 7;
    static const int strategies[] = {WP_STRAT_SHFL_DOWN, WP_STRAT_SHFL_XOR, WP_STRAT_SMEM};
    uint8_t *host = malloc(65537 * 8);
    for (int t = 0; t < WP_TYPE_COUNT; t++)
        for (size_t si = 0; si < WP_ARRAY_LEN(sizes); si++) {
            uint64_t n = sizes[si];
            for (uint64_t i = 0; i < n; i++) wp_data_store((wp_type)t, host, i, elem(&seed, (wp_type)t));
            for (size_t k = 0; k < WP_ARRAY_LEN(all_stats); k++) {
                int stat = all_stats[k], ddof = stat == WP_STAT_STD || (stat == WP_STAT_VAR && n % 2);
                uint8_t acc[3][WP_STAT_ACC_BYTES];
                double ref = ref_stat((wp_type)t, stat, host, n, ddof);
                for (int st = 0; st < 3; st++) {
                    double got = run_stat((wp_type)t, stat, strategies[st], host, n, ddof, acc[st]);
                    CHECKF(within((wp_type)t, stat, got, ref), "%s %s %s n=%llu ddof=%d: %.17g, reference %.17g",
                           wp_stat_name(stat), wp_type_name((wp_type)t), wp_strategy_name(strategies[st]),
                           (unsigned long long)n, ddof, got, ref);
                }
                CHECKF(!memcmp(acc[0], acc[1], WP_STAT_ACC_BYTES), "shfl_down and shfl_xor differ: %s %s n=%llu",
                       wp_stat_name(stat), wp_type_name((wp_type)t), (unsigned long long)n);
            }
        }
    free(host);
}

static void test_hard_data(void) {
    T_CASE("offset and mixed magnitudes, f32");
    enum { N = 40001 };
    float *x = malloc(N * sizeof *x);
    uint64_t seed = 11;
    float naive = 0, naive_sq = 0;
    for (int i = 0; i < N; i++) {
        double u = (double)(rng(&seed) >> 11) * 0x1p-53;
        x[i] = (float)(1e6 + (u - 0.5) * 4);
        naive += x[i], naive_sq += x[i] * x[i];
    }
    double ref = ref_stat(WP_F32, WP_STAT_VAR, x, N, 1);
    double naive_var = ((double)naive_sq - (double)naive * naive / N) / (N - 1);
    CHECKF(fabs(naive_var - ref) > 0.5 * ref, "naive f32 is not wrong here (%g vs %g): a weak test", naive_var, ref);
    for (size_t k = 0; k < WP_ARRAY_LEN(all_stats); k++) {
        int stat = all_stats[k];
        double got = run_stat(WP_F32, stat, WP_STRAT_SHFL_DOWN, x, N, 1, NULL);
        double r = ref_stat(WP_F32, stat, x, N, 1);
        CHECKF(within(WP_F32, stat, got, r), "offset %s: %.9g, reference %.9g", wp_stat_name(stat), got, r);
    }
    for (int i = 0; i < N; i++) {
        uint64_t r = rng(&seed);
        x[i] = (float)((r & 1 ? 1 : -1) * pow(10.0, (double)(r % 25) - 12));
    }
    for (size_t k = 0; k < WP_ARRAY_LEN(all_stats); k++) {
        int stat = all_stats[k];
        double got = run_stat(WP_F32, stat, WP_STRAT_SHFL_DOWN, x, N, 0, NULL);
        double r = ref_stat(WP_F32, stat, x, N, 0);
        CHECKF(within(WP_F32, stat, got, r), "mixed %s: %.9g, reference %.9g", wp_stat_name(stat), got, r);
    }
    free(x);
}

static void test_halves_combine(void) {
    T_CASE("two parts' accumulators combined on the host (a sharded buffer)");
    enum { N = 30011 };
    double *x = malloc(N * sizeof *x);
    uint64_t seed = 3;
    for (int i = 0; i < N; i++) x[i] = 1e9 + (double)(rng(&seed) >> 11) * 0x1p-53;
    for (size_t k = 0; k < WP_ARRAY_LEN(all_stats); k++) {
        int stat = all_stats[k], sacc = wp_stat_acc(stat);
        uint8_t a[WP_STAT_ACC_BYTES], b[WP_STAT_ACC_BYTES], empty[WP_STAT_ACC_BYTES] = {0}, a0[WP_STAT_ACC_BYTES];
        run_stat(WP_F64, stat, WP_STRAT_SHFL_DOWN, x, 12345, 0, a);
        run_stat(WP_F64, stat, WP_STRAT_SHFL_DOWN, x + 12345, N - 12345, 0, b);
        memcpy(a0, a, sizeof a);
        wp_stat_combine(sacc, a, empty);
        CHECK(!memcmp(a, a0, sizeof a)); /* an empty part changes nothing */
        wp_stat_combine(sacc, a, b);
        double got = wp_value_to_double(wp_stat_value_type(stat, WP_F64), wp_stat_finish(stat, WP_F64, a, 0));
        double r = ref_stat(WP_F64, stat, x, N, 0);
        CHECKF(within(WP_F64, stat, got, r), "%s: %.17g, reference %.17g", wp_stat_name(stat), got, r);
        memcpy(a, empty, sizeof a);
        wp_stat_combine(sacc, a, b);
        CHECK(!memcmp(a, b, sizeof a)); /* into an empty one: the other part itself */
    }
    free(x);
}

static void test_rules(void) {
    T_CASE("empty, ddof, NaN, -0, f64 scaling");
    uint8_t zero[WP_STAT_ACC_BYTES] = {0};
    CHECK(isnan(wp_value_to_double(WP_F32, wp_stat_finish(WP_STAT_MEAN, WP_F32, zero, 0))));
    CHECK(isnan(wp_value_to_double(WP_F64, wp_stat_finish(WP_STAT_VAR, WP_F64, zero, 0))));
    CHECK(wp_stat_finish(WP_STAT_NORM2, WP_F32, zero, 0) == 0 &&
          wp_stat_finish(WP_STAT_COUNT_NONZERO, WP_F32, zero, 0) == 0);
    float one[1] = {5};
    CHECK(isnan(run_stat(WP_F32, WP_STAT_VAR, WP_STRAT_SHFL_DOWN, one, 1, 1, NULL))); /* ddof >= n */
    CHECK(run_stat(WP_F32, WP_STAT_STD, WP_STRAT_SHFL_DOWN, one, 1, 0, NULL) == 0);
    double big[3] = {1e300, -1e300, 1}, tiny[3] = {3e-300, 4e-300, 0}, both[2] = {1e-300, 1};
    CHECK(fabs(run_stat(WP_F64, WP_STAT_NORM2, WP_STRAT_SHFL_DOWN, big, 3, 0, NULL) - 1.4142135623730951e300) <= 1e285);
    CHECK(fabs(run_stat(WP_F64, WP_STAT_NORM2, WP_STRAT_SHFL_DOWN, tiny, 3, 0, NULL) - 5e-300) <= 1e-314);
    CHECK(run_stat(WP_F64, WP_STAT_NORM2, WP_STRAT_SHFL_DOWN, both, 2, 0, NULL) == 1);
    uint16_t halves[4] = {0x8000, 0x0000, 0x7e00, 0x3c00}; /* -0, +0, NaN, 1 */
    CHECK(run_stat(WP_F16, WP_STAT_COUNT_NONZERO, WP_STRAT_SHFL_DOWN, halves, 4, 0, NULL) == 2);
    CHECK(isnan(run_stat(WP_F16, WP_STAT_NORMINF, WP_STRAT_SHFL_DOWN, halves, 4, 0, NULL)));
    int32_t ints[3] = {-7, 0, 3};
    CHECK(run_stat(WP_I32, WP_STAT_NORMINF, WP_STRAT_SHFL_DOWN, ints, 3, 0, NULL) == 7);
    CHECK(wp_stat_value_type(WP_STAT_MEAN, WP_I32) == WP_F64 && wp_stat_value_type(WP_STAT_VAR, WP_BF16) == WP_BF16);
    CHECK(wp_stat_value_type(WP_STAT_COUNT_NONZERO, WP_F32) == WP_U64);
}

static void test_spec(void) {
    T_CASE("the spec: key, kernel name, refusals");
    wp_spec s;
    wp_err err = {0};
    char key[WP_SPEC_KEY_MAX], name[WP_SPEC_NAME_MAX], prelude[64];
    CHECK(spec_of("{\"family\":\"device_reduce\",\"type\":\"i32\",\"op\":\"std\"}", &s, &err) == 0);
    CHECK(s.data.stat == WP_STAT_STD && !strcmp(s.op.text, "std"));
    CHECK(wp_spec_key_text(&s, key, sizeof key) > 0 &&
          !strcmp(key, "device_reduce/i32/op=moments/shfl_down/b256/sm_90"));
    CHECK(wp_spec_name_expr(&s, name, sizeof name, prelude, sizeof prelude) == 0);
    CHECKF(!strncmp(name, "wp_device_stats<int, int, 32, 256, 4, 1,", 40), "%s", name); /* signed: no u32 twin */
    wp_spec_free(&s);
    CHECK(
        spec_of("{\"family\":\"device_reduce\",\"type\":\"f32\",\"op\":\"norm2\",\"strategy\":\"atomic\"}", &s, &err));
    CHECK(!strcmp(err.field, "strategy"));
    CHECK(spec_of("{\"family\":\"warp_reduce\",\"type\":\"f32\",\"op\":\"mean\"}", &s, &err) &&
          !strcmp(err.field, "op"));
    CHECK(spec_of("{\"family\":\"device_scan\",\"type\":\"f32\",\"op\":\"var\"}", &s, &err) &&
          !strcmp(err.field, "op"));
    CHECK(wp_stat_parse("variance") == WP_STAT_NONE && wp_stat_parse("count_nonzero") == WP_STAT_COUNT_NONZERO);
}

int main(void) {
    app.emu = wp_backend_emu_open();
    app.preferred = app.emu;
    app.max_elements = 1ull << 30;
    app.emu_max_elements = 1ull << 30;
    app.reduce = wp_reduce_engine_open();
    snprintf(app.arch, sizeof app.arch, "sm_90");
    test_spec();
    test_rules();
    test_every_stat_type_strategy();
    test_hard_data();
    test_halves_combine();
    wp_reduce_engine_close(app.reduce);
    wp_backend_close(app.emu);
    return t_done("stats");
}
